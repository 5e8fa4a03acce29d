//! `daemon-status.json`: the daemon's counters and last tick as one typed
//! record, written with `metrics.prom` after each tick for `status` and
//! `doctor` (nothing reads `metrics.prom` back).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::fleet::deck::CallStats;
use crate::records::instance_lock::Holder;
use crate::records::writer::Tally;
use crate::sys::fs::{read_bounded, SMALL_FILE_MAX};
use crate::triggers::pane_share::WatchStatus;

pub(crate) const DAEMON_STATUS_FILE: &str = "daemon-status.json";

/// What the daemon knew at the end of its last tick.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct DaemonStatus {
    pub last_tick: f64,
    pub tick_seconds: f64,
    pub tally: Tally,
    pub cli: CliCounts,
    pub queue_drops: u64,
    pub sessions_seen: usize,
    pub sessions_critical: usize,
    pub sessions_errored: usize,
    pub breaker_open: bool,
    /// The daemon's own rate limit, which a shell running `drill` may not share.
    pub rate_limit_max: usize,
    pub rate_limit_window_s: f64,
    /// `agent-deck version` as last read; `null` when it was unreadable.
    pub agent_deck_version: Option<String>,
    /// The last read got no answer: `agent_deck_version` is kept from before.
    pub agent_deck_version_unconfirmed: bool,
    pub pane_watch: WatchStatus,
    /// Stalls in progress at the last tick, by kind (SPEC §14).
    pub stalled: BTreeMap<String, u64>,
}

/// agent-deck calls and failed calls since start, by command.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct CliCounts {
    pub calls: BTreeMap<String, u64>,
    pub failures: BTreeMap<String, u64>,
    /// Failed calls a death brings by design (not in `failures`).
    pub failures_by_design: BTreeMap<String, u64>,
}

impl From<CallStats> for CliCounts {
    fn from(s: CallStats) -> CliCounts {
        let own = |m: BTreeMap<&str, u64>| m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        CliCounts {
            calls: own(s.calls),
            failures: own(s.failures),
            failures_by_design: own(s.by_design),
        }
    }
}

/// The record of the last tick, if a daemon ever wrote a readable one.
pub(crate) fn read(dir: &Path) -> Option<DaemonStatus> {
    let bytes = read_bounded(&dir.join(DAEMON_STATUS_FILE), SMALL_FILE_MAX).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The record if `holder` wrote it: its last tick is not older than its lock
/// (a holder from an older release, which does not say, is taken at its word).
pub(crate) fn read_of(dir: &Path, holder: &Holder) -> Option<DaemonStatus> {
    read(dir).filter(|st| holder.started_at.is_none_or(|t| st.last_tick >= t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::metrics::{write, METRICS_FILE};

    #[test]
    fn both_files_are_written_together_and_the_record_reads_back() {
        let tmp = tempfile::tempdir().unwrap();
        let mut stats = CallStats::default();
        stats.calls.insert("list-all", 7);
        stats.failures.insert("restart", 1);
        let mut s = DaemonStatus {
            last_tick: 1_700_000_000.5,
            queue_drops: 3,
            cli: stats.into(),
            pane_watch: WatchStatus {
                armed: false,
                covered: 1,
                why_not: Some("1 of 2 critical sessions covered".into()),
            },
            ..DaemonStatus::default()
        };
        s.tally.restart_actions.insert("restarted".into(), 2);
        write(tmp.path(), &s).unwrap();
        assert_eq!(read(tmp.path()), Some(s));
        let prom = std::fs::read_to_string(tmp.path().join(METRICS_FILE)).unwrap();
        assert!(
            prom.contains("agent_deck_watchdog_queue_drops_total 3\n"),
            "{prom}"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = |f: &str| {
            std::fs::metadata(tmp.path().join(f))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(
            (mode(METRICS_FILE), mode(DAEMON_STATUS_FILE)),
            (0o644, 0o600)
        );
    }

    #[test]
    fn a_record_older_than_the_lock_holder_is_not_its() {
        let tmp = tempfile::tempdir().unwrap();
        let s = DaemonStatus {
            last_tick: 100.0,
            ..DaemonStatus::default()
        };
        write(tmp.path(), &s).unwrap();
        let holder = |started_at| Holder {
            pid: 1,
            dry_run: false,
            once: false,
            started_at,
        };
        assert_eq!(read_of(tmp.path(), &holder(Some(90.0))), Some(s.clone()));
        assert_eq!(read_of(tmp.path(), &holder(Some(110.0))), None);
        assert_eq!(read_of(tmp.path(), &holder(None)), Some(s));
    }

    #[test]
    fn a_missing_or_corrupt_record_reads_as_none() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(read(tmp.path()), None);
        std::fs::write(tmp.path().join(DAEMON_STATUS_FILE), b"{torn").unwrap();
        assert_eq!(read(tmp.path()), None);
    }
}
