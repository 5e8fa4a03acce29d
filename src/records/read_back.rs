//! Record files read back into typed records: streamed line by line, a line
//! that does not parse skipped, so memory follows the records kept, not the
//! file.

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::records::rotation;

/// The records of `path` alone.
#[cfg(test)]
pub(crate) fn read_lines<T: DeserializeOwned>(path: &Path) -> Vec<T> {
    let mut out = Vec::new();
    rotation::each_line(path, |line| out.extend(serde_json::from_slice(line).ok()));
    out
}

/// The newest record of each session a record file (with `<path>.1`)
/// holds, of the sessions `keep` names by id.
pub(crate) fn newest_by_id<T: DeserializeOwned>(
    path: &Path,
    keep: impl Fn(&str) -> bool,
) -> BTreeMap<String, T> {
    #[derive(Deserialize)]
    struct Line<T> {
        id: String,
        #[serde(flatten)]
        record: T,
    }
    let mut newest = BTreeMap::new();
    rotation::each_line_with_rotated(path, |line| {
        if let Ok(l) = serde_json::from_slice::<Line<T>>(line) {
            if keep(&l.id) {
                newest.insert(l.id, l.record);
            }
        }
    });
    newest
}

#[cfg(test)]
/// Every record a record file still holds: those of `<path>.1` (the rotated
/// file), then those of `path`, oldest first.
pub(crate) fn read_with_rotated<T: DeserializeOwned>(path: &Path) -> Vec<T> {
    let mut out = Vec::new();
    rotation::each_line_with_rotated(path, |line| out.extend(serde_json::from_slice(line).ok()));
    out
}
