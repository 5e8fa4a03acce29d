//! The one digest that stands in for pane text wherever the watchdog keeps
//! what a pane showed (liveness records, a dying spawn's output): the first
//! 16 hex characters of its SHA-256. It imports nothing of the crate.

use sha2::{Digest, Sha256};

/// The first 16 hex characters of the SHA-256 of `text`.
pub(crate) fn digest(text: &str) -> String {
    let hash = Sha256::digest(text.as_bytes());
    hash.iter().take(8).map(|b| format!("{b:02x}")).collect()
}
