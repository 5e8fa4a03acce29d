//! Checksums and signatures: the task file's SHA-256 and the HMAC-SHA256
//! that vouches for a `.partial` file (`task sign` prints it for the writing
//! side). Pure except for [`file_sha256`] and [`read_key`], which read a file
//! without blocking and up to a bound (a task file 16 MiB, a key 1 MiB).

use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::sys::fs::{read_bounded, ReadError, SMALL_FILE_MAX, TASK_FILE_MAX};

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The SHA-256 of a task file; the error names the path and why it cannot
/// be read (missing, a FIFO or device, over 16 MiB: with its size).
pub(crate) fn file_sha256(path: &Path) -> Result<String, ReadError> {
    read_bounded(path, TASK_FILE_MAX).map(|b| sha256_hex(&b))
}

/// Hex HMAC-SHA256 of `bytes` under `key`.
pub(crate) fn sign(key: &[u8], bytes: &[u8]) -> String {
    hex(&mac(key, bytes).finalize().into_bytes())
}

/// Whether `sig_hex` is the HMAC of `bytes` (constant-time compare).
pub(crate) fn verify(key: &[u8], bytes: &[u8], sig_hex: &str) -> bool {
    // An odd length or a non-hex digit leaves a pair unparsed: no signature.
    let sig_hex = sig_hex.trim();
    let sig: Option<Vec<u8>> = (0..sig_hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(sig_hex.get(i..i + 2)?, 16).ok())
        .collect();
    sig.is_some_and(|sig| mac(key, bytes).verify_slice(&sig).is_ok())
}

fn mac(key: &[u8], bytes: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts keys of any length");
    mac.update(bytes);
    mac
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads an HMAC key file (trailing whitespace is not part of the key).
pub(crate) fn read_key(path: &Path) -> Result<Vec<u8>, ReadError> {
    Ok(read_bounded(path, SMALL_FILE_MAX)?
        .trim_ascii_end()
        .to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_sign_and_verify() {
        let sig = sign(b"key", b"partial work");
        assert_eq!(sig.len(), 64);
        assert!(verify(b"key", b"partial work", &format!("{sig}\n")));
        assert!(!verify(b"key", b"partial work!", &sig));
        assert!(!verify(b"other", b"partial work", &sig));
        assert!(!verify(b"key", b"partial work", "zz"));
        assert!(!verify(b"key", b"partial work", ""));
    }

    #[test]
    fn a_fifo_task_file_or_key_is_unreadable_not_a_hang() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("task.md");
        crate::sys::fs::mkfifo(&fifo);
        assert!(file_sha256(&fifo).is_err());
        assert!(read_key(&fifo).is_err());
    }
}
