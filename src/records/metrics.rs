//! The daemon's counters and last tick, written after each tick as two
//! files: `daemon-status.json`, one typed record that `status`, `doctor` and
//! `drill` read back, and `metrics.prom`, the same counters in the Prometheus
//! text format for node_exporter's textfile collector, never parsed back.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::fleet::deck::CallStats;
use crate::records::audit::{ESCALATIONS_LOG, LIVENESS_LOG, RESTART_LOG};
use crate::records::failed_writes::FailedWrites;
use crate::records::instance_lock::Holder;
use crate::records::writer::Tally;
use crate::sys::fs::{read_bounded, replace_unsynced, PRIVATE_FILE, PUBLIC_FILE, SMALL_FILE_MAX};
use crate::triggers::pane_share::WatchStatus;

pub(crate) const DAEMON_STATUS_FILE: &str = "daemon-status.json";
pub(crate) const METRICS_FILE: &str = "metrics.prom";
const PREFIX: &str = "agent_deck_watchdog";

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

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// One family of the file: HELP and TYPE lines, then samples.
struct Family<'a> {
    out: &'a mut String,
    kind: &'static str,
    name: &'static str,
}

impl<'a> Family<'a> {
    fn new(out: &'a mut String, kind: &'static str, name: &'static str) -> Family<'a> {
        Family { out, kind, name }
    }

    /// Writes the HELP and TYPE lines.
    fn help(self, help: &str) -> Family<'a> {
        let (kind, name) = (self.kind, self.name);
        let _ = writeln!(self.out, "# HELP {PREFIX}_{name} {help}");
        let _ = writeln!(self.out, "# TYPE {PREFIX}_{name} {kind}");
        self
    }

    /// One sample per entry of `values`, labelled `label="<key>"`.
    fn by<K: AsRef<str>>(self, label: &str, values: &BTreeMap<K, u64>) {
        let name = self.name;
        for (k, v) in values {
            let k = escape(k.as_ref());
            let _ = writeln!(self.out, "{PREFIX}_{name}{{{label}=\"{k}\"}} {v}");
        }
    }

    /// The family's one, unlabelled sample.
    fn value(self, v: f64) {
        let _ = writeln!(self.out, "{PREFIX}_{} {v}", self.name);
    }
}

/// The kinds of stall, each a sample of `stalled_sessions` even at 0.
const STALL_KINDS: [&str; 5] = [
    "usage-limit",
    "api-overload",
    "connection-lost",
    "model-unavailable",
    "context-exhausted",
];

pub(crate) fn render(s: &DaemonStatus) -> String {
    let (t, cli) = (&s.tally, &s.cli);
    let sessions = BTreeMap::from([
        ("seen", s.sessions_seen as u64),
        ("critical", s.sessions_critical as u64),
        ("errored", s.sessions_errored as u64),
    ]);
    let mut out = String::new();
    Family::new(&mut out, "counter", "restarts_total")
        .help("restart.log records since start, by action.")
        .by("result", &t.restart_actions);
    let resumes: BTreeMap<&str, u64> = [
        ("sent", "resume-sent"),
        ("verified", "resume-verified"),
        ("failed", "resume-failed"),
        ("by-itself", "resumed-by-itself"),
    ]
    .into_iter()
    .map(|(outcome, action)| (outcome, t.restart_actions.get(action).copied().unwrap_or(0)))
    .collect();
    Family::new(&mut out, "counter", "resumes_total")
        .help("Resumes of stalled sessions since start, by outcome (SPEC §14).")
        .by("outcome", &resumes);
    let clears: BTreeMap<&str, u64> = [
        ("exhausted", "clear-sent"),
        ("proactive", "context-cleared"),
    ]
    .into_iter()
    .map(|(trigger, action)| (trigger, t.restart_actions.get(action).copied().unwrap_or(0)))
    .collect();
    Family::new(&mut out, "counter", "context_clears_total")
        .help("/clear sent for a full context window since start, by trigger (SPEC §15).")
        .by("trigger", &clears);
    Family::new(&mut out, "counter", "liveness_decisions_total")
        .help("Liveness decisions since start, by reason.")
        .by("reason", &t.liveness_reasons);
    Family::new(&mut out, "counter", "escalations_total")
        .help("Escalations since start, by severity.")
        .by("severity", &t.escalations);
    let lost: BTreeMap<&str, u64> = [RESTART_LOG, LIVENESS_LOG, ESCALATIONS_LOG]
        .into_iter()
        .map(|f| (f, t.records_lost.get(f).copied().unwrap_or(0)))
        .collect();
    Family::new(&mut out, "counter", "records_lost_total")
        .help("Records that could not be written since start (a full disk, an unwritable file), by file.")
        .by("file", &lost);
    Family::new(&mut out, "counter", "cli_calls_total")
        .help("agent-deck CLI calls since start, by command.")
        .by("command", &cli.calls);
    Family::new(&mut out, "counter", "cli_failures_total")
        .help("Failed agent-deck CLI calls since start, by command.")
        .by("command", &cli.failures);
    Family::new(&mut out, "counter", "cli_failures_by_design_total")
        .help("agent-deck CLI calls since start that failed by design (a pane sample of a gone tmux session, a restart answered tmux_session_missing), by command; not in cli_failures_total.")
        .by("command", &cli.failures_by_design);
    Family::new(&mut out, "counter", "queue_drops_total")
        .help("Events dropped from the full event queue.")
        .value(s.queue_drops as f64);
    Family::new(&mut out, "gauge", "tick_duration_seconds")
        .help("How long the last safety-poll tick took.")
        .value(s.tick_seconds);
    Family::new(&mut out, "gauge", "sessions")
        .help("Sessions at the last tick: seen, restart-critical, critical in error.")
        .by("kind", &sessions);
    let stalled: BTreeMap<&str, u64> = STALL_KINDS
        .iter()
        .map(|k| (*k, s.stalled.get(*k).copied().unwrap_or(0)))
        .collect();
    Family::new(&mut out, "gauge", "stalled_sessions")
        .help("Stalled sessions at the last tick, by kind (SPEC §14).")
        .by("kind", &stalled);
    Family::new(&mut out, "gauge", "breaker_open")
        .help("1 while the 429 circuit breaker holds every restart.")
        .value(f64::from(u8::from(s.breaker_open)));
    Family::new(&mut out, "gauge", "last_tick_timestamp_seconds")
        .help("Unix time of the last safety-poll tick.")
        .value(s.last_tick);
    // Prometheus' info convention: the value is 1, the release is the label;
    // no sample while the release is not known.
    let release: BTreeMap<&str, u64> = s
        .agent_deck_version
        .iter()
        .map(|v| (v.as_str(), 1))
        .collect();
    Family::new(&mut out, "gauge", "agent_deck_info")
        .help("agent-deck's release as the daemon read it last (`agent-deck version`).")
        .by("version", &release);
    Family::new(&mut out, "gauge", "pane_watch_armed")
        .help("1 while the pane watch covers every restart-critical session (the CLI poll then runs at ARMED_POLL_INTERVAL_S).")
        .value(f64::from(u8::from(s.pane_watch.armed)));
    Family::new(&mut out, "gauge", "pane_watch_covered_sessions")
        .help("Restart-critical sessions whose pane process the pane watch watches.")
        .value(s.pane_watch.covered as f64);
    out
}

/// Writes `metrics.prom` (`0644`: node_exporter may be another user) and
/// `daemon-status.json` (`0600`) atomically, unsynced: the next tick rewrites.
pub(crate) fn write(dir: &Path, s: &DaemonStatus) -> std::io::Result<()> {
    replace_unsynced(&dir.join(METRICS_FILE), render(s).as_bytes(), PUBLIC_FILE)?;
    let json = serde_json::to_vec(s).map_err(std::io::Error::other)?;
    replace_unsynced(&dir.join(DAEMON_STATUS_FILE), &json, PRIVATE_FILE)
}

/// The metrics files; a failure is said once until a write works again.
#[derive(Debug, Default)]
pub(crate) struct MetricsFiles(FailedWrites);

impl MetricsFiles {
    pub(crate) fn write(&mut self, dir: &Path, s: &DaemonStatus) {
        let meanwhile = "metrics are stale until it works";
        self.0
            .note(&dir.join(METRICS_FILE), &write(dir, s), meanwhile);
    }
}

/// Reads counters back from a rendered file (tests only: the daemon reads JSON).
#[cfg(test)]
pub(crate) fn parse(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (key, value) = l.rsplit_once(' ')?;
            Some((key.to_owned(), value.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn renders_every_family_with_help_and_type() {
        let mut s = DaemonStatus::default();
        s.tally.restart_actions.insert("restarted".into(), 2);
        s.cli.calls.insert("list-all".into(), 7);
        s.tally.records_lost.insert("restart.log".into(), 2);
        s.sessions_critical = 3;
        let text = render(&s);
        assert!(text.contains("# TYPE agent_deck_watchdog_restarts_total counter\n"));
        let m = parse(&text);
        assert_eq!(
            m["agent_deck_watchdog_restarts_total{result=\"restarted\"}"],
            2.0
        );
        assert_eq!(
            m["agent_deck_watchdog_cli_calls_total{command=\"list-all\"}"],
            7.0
        );
        assert_eq!(m["agent_deck_watchdog_sessions{kind=\"critical\"}"], 3.0);
        let lost = |f: &str| m[&format!("agent_deck_watchdog_records_lost_total{{file=\"{f}\"}}")];
        assert_eq!(lost("restart.log"), 2.0, "counted per file");
        assert_eq!(lost("liveness.log"), 0.0, "every file, even at 0");
        assert_eq!(m["agent_deck_watchdog_breaker_open"], 0.0);
        assert_eq!(m["agent_deck_watchdog_pane_watch_armed"], 0.0);
        s.pane_watch.armed = true;
        s.pane_watch.covered = 3;
        let armed = parse(&render(&s));
        assert_eq!(armed["agent_deck_watchdog_pane_watch_armed"], 1.0);
        assert_eq!(
            armed["agent_deck_watchdog_pane_watch_covered_sessions"],
            3.0
        );
        assert!(
            !text.contains("agent_deck_info{"),
            "no release read: no sample"
        );
        s.agent_deck_version = Some("1.16.26".into());
        let m = parse(&render(&s));
        assert_eq!(
            m["agent_deck_watchdog_agent_deck_info{version=\"1.16.26\"}"],
            1.0
        );
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn a_failed_write_is_said_once_until_a_write_works_again() {
        let tmp = tempfile::tempdir().unwrap();
        let gone = tmp.path().join("not-yet");
        let (mut files, s) = (MetricsFiles::default(), DaemonStatus::default());
        files.write(&gone, &s);
        assert_eq!(files.0.failed(), 1, "the first failure is said");
        files.write(&gone, &s);
        assert_eq!(files.0.failed(), 2, "and not again while it lasts");
        std::fs::create_dir(&gone).unwrap();
        files.write(&gone, &s);
        assert_eq!(files.0.failed(), 0, "a write that works ends the episode");
        assert!(gone.join(METRICS_FILE).exists());
    }
}
