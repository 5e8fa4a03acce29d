//! Checksums and signatures: the task file's SHA-256 and the HMAC-SHA256
//! that vouches for a `.partial` file (`task sign` prints it for the writing
//! side). Pure except for [`file_sha256`] and [`read_key`], which read a file.

use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub fn file_sha256(path: &Path) -> Option<String> {
    std::fs::read(path).ok().map(|b| sha256_hex(&b))
}

/// Hex HMAC-SHA256 of `bytes` under `key`.
pub fn sign(key: &[u8], bytes: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts keys of any length");
    mac.update(bytes);
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether `sig_hex` is the HMAC of `bytes` (constant-time compare).
pub fn verify(key: &[u8], bytes: &[u8], sig_hex: &str) -> bool {
    let sig_hex = sig_hex.trim();
    if !sig_hex.len().is_multiple_of(2) {
        return false;
    }
    let Some(sig) = (0..sig_hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(sig_hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()
    else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts keys of any length");
    mac.update(bytes);
    mac.verify_slice(&sig).is_ok()
}

/// Reads an HMAC key file (trailing whitespace is not part of the key).
pub fn read_key(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut key = std::fs::read(path)?;
    while key.last().is_some_and(u8::is_ascii_whitespace) {
        key.pop();
    }
    Ok(key)
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
}
