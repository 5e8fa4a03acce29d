//! Record files read back into typed records: streamed line by line, a line
//! that does not parse skipped, so memory follows the records kept, not the
//! file.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::records::rotation;

/// The records of `path` alone.
#[cfg(test)]
pub(crate) fn read_lines<T: DeserializeOwned>(path: &Path) -> Vec<T> {
    let mut out = Vec::new();
    rotation::each_line(path, |line| out.extend(serde_json::from_slice(line).ok()));
    out
}

/// Every record a record file still holds: those of `<path>.1` (the rotated
/// file), then those of `path`, oldest first.
pub(crate) fn read_with_rotated<T: DeserializeOwned>(path: &Path) -> Vec<T> {
    let mut out = Vec::new();
    rotation::each_line_with_rotated(path, |line| out.extend(serde_json::from_slice(line).ok()));
    out
}
