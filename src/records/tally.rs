//! How many records of each kind were written since start, counted as they
//! are appended, so a rotation does not reset a counter; and how many of
//! each file were lost.

use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Tally {
    /// `restart.log` records by `action`.
    pub restart_actions: BTreeMap<String, u64>,
    /// `liveness.log` records by `reason`.
    pub liveness_reasons: BTreeMap<String, u64>,
    /// `escalations.log` records by `severity`.
    pub escalations: BTreeMap<String, u64>,
    /// Records that could not be written (a full disk, an unwritable
    /// file), by file name; counted in the counts above all the same.
    pub records_lost: BTreeMap<String, u64>,
}

/// One more record under `key` in one of the tally's counts; the new count.
pub(crate) fn count(counts: &mut BTreeMap<String, u64>, key: &str) -> u64 {
    let n = counts.entry(key.to_owned()).or_default();
    *n += 1;
    *n
}
