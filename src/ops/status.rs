//! `status [--json]`: what the daemon knows and will do next, from the pid its
//! lock file names (the lock is never probed), `state.json`,
//! `daemon-status.json` (the last tick), the task registry and the record
//! files (sizes; each session's newest `restart.log` record, `.1` included,
//! streamed). Read-only: it takes no lock a daemon would wait on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::decide::book::State;
use crate::decide::limits::Limits;
use crate::decide::stall::Stall;
use crate::error::{Error, Result};
use crate::records::audit::{ESCALATIONS_LOG, LIVENESS_LOG, RESTART_LOG};
use crate::records::instance_lock;
use crate::records::metrics::{self, CliCounts};
use crate::records::read_back;
use crate::records::rotation::rotated_path;
use crate::records::state_file::{self, STATE_FILE};
use crate::sys::clock::{Clock, SystemClock};
use crate::tasks::registry::RegistryFile;
use crate::triggers::pane_share::WatchStatus;

/// Everything `status --json` prints. Fields are in alphabetical order, the
/// order the keys have always had.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    /// agent-deck's release as the daemon read it last (`null`: unreadable,
    /// or no daemon has written its status yet).
    pub agent_deck_version: Option<String>,
    /// The daemon's last read got no answer; the version is kept from before.
    pub agent_deck_version_unconfirmed: bool,
    pub breaker: Breaker,
    pub cascade: CascadeView,
    pub cli: CliCounts,
    pub daemon: DaemonView,
    pub limits: LimitsView,
    /// The pane watch at the daemon's last tick.
    pub pane_watch: WatchStatus,
    pub patrols: PatrolStatus,
    pub queue_drops: u64,
    pub records: RecordFiles,
    pub sessions: Vec<SessionView>,
    /// The stalls in progress (SPEC §14), by session.
    pub stalls: Vec<StallView>,
    pub state_file: StateFileView,
    /// Registered tasks by status.
    pub tasks: BTreeMap<String, usize>,
}

#[derive(Debug, Serialize)]
pub(crate) struct Breaker {
    pub open: bool,
    pub recent_429s: usize,
    pub remaining_s: f64,
}

#[derive(Debug, Serialize)]
pub(crate) struct CascadeView {
    pub active: bool,
    pub burst_pause_remaining_s: f64,
    pub settle_remaining_s: f64,
    pub size: Option<usize>,
}

#[derive(Debug, Serialize)]
pub(crate) struct DaemonView {
    pub pid: Option<u32>,
    pub running: bool,
}

#[derive(Debug, Serialize)]
pub(crate) struct LimitsView {
    pub rate_limit_max: usize,
    pub rate_limit_window_s: f64,
}

#[derive(Debug, Serialize)]
pub(crate) struct PatrolStatus {
    pub poller_restarts: BTreeMap<String, f64>,
    pub waiting_children_watched: usize,
}

#[derive(Debug, Serialize)]
pub(crate) struct RecordFiles {
    pub files: Vec<RecordFile>,
    pub max_bytes: u64,
}

#[derive(Debug, Serialize)]
pub(crate) struct RecordFile {
    pub bytes: u64,
    pub name: &'static str,
    /// Records the daemon could not write there since it started.
    pub records_lost: u64,
    pub rotated_bytes: u64,
}

#[derive(Debug, Serialize)]
pub(crate) struct SessionView {
    pub backoff_remaining_s: f64,
    pub budget_left: usize,
    pub consecutive_failures: u32,
    pub cooldown_remaining_s: f64,
    pub id: String,
    pub last_record: Option<LastRecord>,
    pub last_status: Option<String>,
    pub liveness_skips: u32,
    pub restarts_in_window: usize,
    pub status_since: f64,
    pub title: String,
}

/// A stall in progress and its next resume.
#[derive(Debug, Serialize)]
pub(crate) struct StallView {
    pub id: String,
    pub title: String,
    /// The kind and what comes next, as a line.
    pub said: String,
    #[serde(flatten)]
    pub stall: Stall,
}

/// The fields of a session's newest `restart.log` line that `status` shows.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct LastRecord {
    pub action: String,
    #[serde(default)]
    pub reason: Option<String>,
    pub ts: f64,
}

#[derive(Debug, Serialize)]
pub(crate) struct StateFileView {
    pub path: PathBuf,
    pub readable: bool,
}

/// The bytes each record file and its `.1` hold, the records the daemon
/// lost there, and the rotation bound.
fn record_files(cfg: &Config, lost: &BTreeMap<String, u64>) -> RecordFiles {
    let size = |p: &Path| std::fs::symlink_metadata(p).map_or(0, |m| m.len());
    let files = [RESTART_LOG, LIVENESS_LOG, ESCALATIONS_LOG]
        .into_iter()
        .map(|name| {
            let path = cfg.watchdog_dir.join(name);
            RecordFile {
                bytes: size(&path),
                name,
                records_lost: lost.get(name).copied().unwrap_or(0),
                rotated_bytes: size(&rotated_path(&path)),
            }
        })
        .collect();
    RecordFiles {
        files,
        max_bytes: cfg.record_max_bytes,
    }
}

pub(crate) fn collect(cfg: &Config, now: f64) -> Report {
    let dir = &cfg.watchdog_dir;
    let lim = Limits::from_config(cfg);
    let holder = instance_lock::holder(dir);
    let state: Option<State> = state_file::peek(dir).ok().flatten();
    let state_readable = state.is_some();
    let state = state.unwrap_or_default();
    let remaining = |until: f64| ((until - now).max(0.0) * 10.0).round() / 10.0;
    let mut last: BTreeMap<String, LastRecord> =
        read_back::newest_by_id(&dir.join(RESTART_LOG), |id| state.sessions.contains_key(id));
    let sessions = state
        .sessions
        .iter()
        .map(|(id, b)| {
            let used = b
                .restarts
                .iter()
                .filter(|t| now - **t < lim.rate_window)
                .count();
            SessionView {
                backoff_remaining_s: remaining(b.backoff_until),
                budget_left: lim.rate_max.saturating_sub(used),
                consecutive_failures: b.consecutive_failures,
                cooldown_remaining_s: remaining(b.cooldown_until),
                id: id.clone(),
                last_record: last.remove(id),
                last_status: b.last_status.clone(),
                liveness_skips: b.liveness_skips,
                restarts_in_window: used,
                status_since: b.status_since,
                title: b.title.clone(),
            }
        })
        .collect();
    let counters = metrics::read(dir).unwrap_or_default();
    let mut tasks = BTreeMap::new();
    if let Ok(reg) = RegistryFile::new(&cfg.task_timers_file, None).peek() {
        for t in &reg.tasks {
            *tasks.entry(t.status.to_string()).or_default() += 1;
        }
    }
    let tz = jiff::tz::TimeZone::system();
    let stalls = state
        .sessions
        .iter()
        .filter_map(|(id, b)| {
            let stall = b.stall.clone()?;
            Some(StallView {
                id: id.clone(),
                title: b.title.clone(),
                said: stall.said(now, &tz),
                stall,
            })
        })
        .collect();
    let cascade = state.cascade.as_ref();
    Report {
        agent_deck_version: counters.agent_deck_version.clone(),
        agent_deck_version_unconfirmed: counters.agent_deck_version_unconfirmed,
        breaker: Breaker {
            open: state.breaker_open_until > now,
            recent_429s: state.breaker_hits.len(),
            remaining_s: remaining(state.breaker_open_until),
        },
        cascade: CascadeView {
            active: cascade.is_some(),
            burst_pause_remaining_s: remaining(state.cascade_pause_until),
            settle_remaining_s: cascade.map_or(0.0, |c| remaining(c.settle_until)),
            size: cascade.map(|c| c.size),
        },
        cli: counters.cli,
        daemon: DaemonView {
            pid: holder.as_ref().map(|h| h.pid),
            running: holder.is_some(),
        },
        limits: LimitsView {
            rate_limit_max: lim.rate_max,
            rate_limit_window_s: lim.rate_window,
        },
        pane_watch: counters.pane_watch.clone(),
        patrols: PatrolStatus {
            poller_restarts: state.poller_restarted,
            waiting_children_watched: state.waiting.len(),
        },
        queue_drops: counters.queue_drops,
        records: record_files(cfg, &counters.tally.records_lost),
        sessions,
        stalls,
        state_file: StateFileView {
            path: dir.join(STATE_FILE),
            readable: state_readable,
        },
        tasks,
    }
}

fn table(r: &Report) -> String {
    let daemon = (r.daemon.pid).map_or("not running".into(), |p| format!("running (pid {p})"));
    let version = r.agent_deck_version.as_deref().unwrap_or("unknown");
    let how = if r.agent_deck_version_unconfirmed {
        "unconfirmed: the daemon's last read got no answer, it keeps the one before"
    } else {
        "as the daemon read it last"
    };
    let mut out = format!(
        "daemon: {daemon}\nagent-deck: {version} ({how})\n\
         {:<22} {:<20} {:<9} {:>8} {:>6} {:>9} {:>9} {:>6}\n",
        "SESSION", "TITLE", "STATUS", "RESTARTS", "LEFT", "COOLDOWN", "BACKOFF", "SKIPS"
    );
    for s in &r.sessions {
        out.push_str(&format!(
            "{:<22} {:<20} {:<9} {:>8} {:>6} {:>8.0}s {:>8.0}s {:>6}\n",
            s.id,
            s.title,
            s.last_status.as_deref().unwrap_or("-"),
            s.restarts_in_window,
            s.budget_left,
            s.cooldown_remaining_s,
            s.backoff_remaining_s,
            s.liveness_skips,
        ));
    }
    let b = &r.breaker;
    let breaker = if b.open {
        format!("OPEN, {:.0}s left", b.remaining_s)
    } else {
        "closed".into()
    };
    let c = &r.cascade;
    let cascade = c.size.filter(|_| c.active).map_or("none".into(), |size| {
        format!(
            "active ({size} in error), settle {:.0}s left",
            c.settle_remaining_s
        )
    });
    let w = &r.pane_watch;
    let watch = match (&w.why_not, w.armed) {
        (_, true) => format!("armed, {} critical sessions covered", w.covered),
        (Some(why), false) => format!("not armed ({why})"),
        (None, false) => "not armed".to_owned(),
    };
    let tasks: Vec<String> = r.tasks.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let tasks = if tasks.is_empty() {
        "none".to_owned()
    } else {
        tasks.join(", ")
    };
    let sum = |counts: &BTreeMap<String, u64>| counts.values().sum::<u64>();
    let stalls: Vec<String> = (r.stalls.iter())
        .map(|s| format!("{} ({}): {}", s.title, s.id, s.said))
        .collect();
    let stalls = if stalls.is_empty() {
        "none".to_owned()
    } else {
        stalls.join("; ")
    };
    out + &format!(
        "breaker: {breaker} ({} recent 429s)\n\
         cascade: {cascade}\n\
         queue drops: {}\n\
         pane watch: {watch}\n\
         cli calls: {} ({} failed) as of the last tick\n\
         cli failures by design: {} (a pane sample of a gone tmux session, a restart answered tmux_session_missing; not counted as failed)\n\
         patrols: {} waiting children watched, {} poller restarts remembered\n\
         records: {}\n\
         stalls: {stalls}\n\
         tasks: {tasks}\n",
        b.recent_429s,
        r.queue_drops,
        sum(&r.cli.calls),
        sum(&r.cli.failures),
        sum(&r.cli.failures_by_design),
        r.patrols.waiting_children_watched,
        r.patrols.poller_restarts.len(),
        records_line(&r.records),
    )
}

/// `restart.log 1.2 MiB (+ 16.0 MiB in .1), 2 records lost, …; rotated at 16.0 MiB`.
fn records_line(r: &RecordFiles) -> String {
    let files: Vec<String> = r
        .files
        .iter()
        .map(|f| {
            let rotated =
                (f.rotated_bytes > 0).then(|| format!(" (+ {} in .1)", mib(f.rotated_bytes)));
            let lost = (f.records_lost > 0).then(|| format!(", {} records lost", f.records_lost));
            let (rotated, lost) = (rotated.unwrap_or_default(), lost.unwrap_or_default());
            format!("{} {}{rotated}{lost}", f.name, mib(f.bytes))
        })
        .collect();
    format!("{}; rotated at {}", files.join(", "), mib(r.max_bytes))
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

pub(crate) fn run(cfg: &Config, json: bool) -> Result<()> {
    let r = collect(cfg, SystemClock.now());
    if json {
        let text = serde_json::to_string_pretty(&r).map_err(|e| Error::runtime(e.to_string()))?;
        println!("{text}");
    } else {
        print!("{}", table(&r));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sessions_last_record_is_found_in_the_rotated_file_too() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = crate::config::test_config(tmp.path());
        let dir = &cfg.watchdog_dir;
        std::fs::create_dir_all(dir).unwrap();
        let mut state = State::default();
        state.sessions.entry("a-1".into()).or_default();
        state.sessions.entry("b-2".into()).or_default();
        std::fs::write(dir.join(STATE_FILE), serde_json::to_vec(&state).unwrap()).unwrap();
        let line = |ts: f64, id: &str, action: &str| {
            format!(
                "{{\"ts\":{ts},\"id\":\"{id}\",\"title\":\"t\",\"profile\":\"default\",\"action\":\"{action}\",\"dry_run\":false}}\n"
            )
        };
        let log = dir.join(RESTART_LOG);
        std::fs::write(
            rotated_path(&log),
            line(1.0, "a-1", "restart")
                + &line(2.0, "a-1", "restarted")
                + &line(3.0, "b-2", "skipped"),
        )
        .unwrap();
        std::fs::write(&log, line(4.0, "b-2", "restarted") + "torn {\n").unwrap();
        let r = collect(&cfg, 10.0);
        let last = |id: &str| {
            let s = r.sessions.iter().find(|s| s.id == id).unwrap();
            let l = s.last_record.as_ref().unwrap();
            (l.action.clone(), l.ts)
        };
        assert_eq!(last("a-1"), ("restarted".to_owned(), 2.0));
        assert_eq!(last("b-2").0, "restarted");
        assert_eq!(r.records.files[0].name, RESTART_LOG);
        assert!(r.records.files[0].rotated_bytes > 0);
        assert_eq!(r.records.max_bytes, 16_777_216);
        assert!(table(&r).contains("records: restart.log 0.0 MiB (+ 0.0 MiB in .1)"));
    }

    #[test]
    fn the_json_keeps_its_keys_and_takes_counters_from_the_daemon_status() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = crate::config::test_config(tmp.path());
        let dir = &cfg.watchdog_dir;
        std::fs::create_dir_all(dir).unwrap();
        let mut st = metrics::DaemonStatus {
            queue_drops: 4,
            agent_deck_version: Some("1.16.26".into()),
            pane_watch: WatchStatus {
                armed: false,
                covered: 0,
                why_not: Some("PANE_WATCH=off".into()),
            },
            ..Default::default()
        };
        st.cli.calls.insert("list-all".into(), 9);
        st.cli.failures.insert("restart".into(), 2);
        st.tally.records_lost.insert(LIVENESS_LOG.into(), 3);
        metrics::write(dir, &st).unwrap();
        // metrics.prom is never read back: a different one changes nothing.
        std::fs::write(dir.join(metrics::METRICS_FILE), "garbage 1\n").unwrap();
        let mut r = collect(&cfg, 10.0);
        let v = serde_json::to_value(&r).unwrap();
        let keys = |v: &serde_json::Value| -> Vec<String> {
            v.as_object().unwrap().keys().cloned().collect()
        };
        assert_eq!(
            keys(&v),
            [
                "agent_deck_version",
                "agent_deck_version_unconfirmed",
                "breaker",
                "cascade",
                "cli",
                "daemon",
                "limits",
                "pane_watch",
                "patrols",
                "queue_drops",
                "records",
                "sessions",
                "stalls",
                "state_file",
                "tasks"
            ]
        );
        assert_eq!(keys(&v["daemon"]), ["pid", "running"]);
        assert_eq!(
            keys(&v["cascade"]),
            [
                "active",
                "burst_pause_remaining_s",
                "settle_remaining_s",
                "size"
            ]
        );
        assert_eq!(v["queue_drops"], 4);
        assert_eq!(v["agent_deck_version"], "1.16.26");
        assert_eq!(keys(&v["pane_watch"]), ["armed", "covered", "why_not"]);
        assert_eq!(v["pane_watch"]["why_not"], "PANE_WATCH=off");
        assert!(table(&r).contains("pane watch: not armed (PANE_WATCH=off)\n"));
        assert_eq!(v["cli"]["calls"]["list-all"], 9);
        let files = &v["records"]["files"];
        assert_eq!(
            keys(&files[1]),
            ["bytes", "name", "records_lost", "rotated_bytes"]
        );
        assert_eq!(
            (&files[0]["records_lost"], &files[1]["records_lost"]),
            (&0.into(), &3.into())
        );
        assert!(table(&r).contains("liveness.log 0.0 MiB, 3 records lost, "));
        assert_eq!(v["daemon"]["running"], false);
        let text = table(&r);
        assert!(text.contains("queue drops: 4\n"), "{text}");
        assert!(
            text.contains("agent-deck: 1.16.26 (as the daemon read it last)\n"),
            "{text}"
        );
        assert_eq!(v["agent_deck_version_unconfirmed"], false);
        r.agent_deck_version_unconfirmed = true;
        let text = table(&r);
        let kept = "agent-deck: 1.16.26 (unconfirmed: the daemon's last read got no answer, it keeps the one before)\n";
        assert!(text.contains(kept), "{text}");
        assert!(
            text.contains("cli calls: 9 (2 failed) as of the last tick"),
            "{text}"
        );
    }
}
