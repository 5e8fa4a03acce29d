//! `agent-deck-watchdog status [--json]`: what the daemon knows and will do
//! next, read from its files without disturbing it.
//!
//! Sources: the instance lock (is a daemon running, which pid), `state.json`
//! (per-session budget, cooldown, backoff, skips; breaker; cascade; patrols),
//! `metrics.prom` (CLI calls and failures, queue drops, as of the last tick),
//! the task registry, and the record files: each session's newest
//! `restart.log` record, looked for in `restart.log.1` and then `restart.log`
//! (history survives a rotation), and the bytes each record file and its
//! rotated `.1` hold. Read-only: it takes no lock a daemon would wait on, and
//! streams the record files rather than loading them.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::{json, Value};

use crate::config::Config;
use crate::decide::book::State;
use crate::decide::limits::Limits;
use crate::error::{Error, Result};
use crate::records::audit::{ESCALATIONS_LOG, LIVENESS_LOG, RESTART_LOG};
use crate::records::instance_lock;
use crate::records::metrics::{self, METRICS_FILE};
use crate::records::rotation::{each_line_with_rotated, rotated_path};
use crate::records::state_file::STATE_FILE;
use crate::sys::clock::{Clock, SystemClock};
use crate::sys::fs::{read_bounded, read_text, STATE_FILE_MAX};
use crate::tasks::registry::RegistryFile;

/// The fields of a `restart.log` line that `status` shows.
#[derive(Debug, Deserialize)]
struct LastRecord {
    ts: f64,
    id: String,
    action: String,
    #[serde(default)]
    reason: Option<String>,
}

/// The newest `restart.log` record of each of `ids`, across the rotation.
fn last_records(dir: &std::path::Path, ids: &BTreeSet<&str>) -> BTreeMap<String, Value> {
    let mut last = BTreeMap::new();
    each_line_with_rotated(&dir.join(RESTART_LOG), |line| {
        let Ok(r) = serde_json::from_slice::<LastRecord>(line) else {
            return;
        };
        if ids.contains(r.id.as_str()) {
            last.insert(
                r.id,
                json!({"ts": r.ts, "action": r.action, "reason": r.reason}),
            );
        }
    });
    last
}

/// The bytes each record file and its `.1` hold, and the rotation bound.
fn record_files(cfg: &Config) -> Value {
    let size = |p: &std::path::Path| std::fs::symlink_metadata(p).map_or(0, |m| m.len());
    let files: Vec<Value> = [RESTART_LOG, LIVENESS_LOG, ESCALATIONS_LOG]
        .iter()
        .map(|name| {
            let path = cfg.watchdog_dir.join(name);
            json!({"name": name, "bytes": size(&path), "rotated_bytes": size(&rotated_path(&path))})
        })
        .collect();
    json!({"max_bytes": cfg.record_max_bytes, "files": files})
}

/// Everything `status` reports, as JSON.
pub fn collect(cfg: &Config, now: f64) -> Value {
    let dir = &cfg.watchdog_dir;
    let lim = Limits::from_config(cfg);
    let holder = instance_lock::holder(dir);
    let state: Option<State> = read_bounded(&dir.join(STATE_FILE), STATE_FILE_MAX)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let state_readable = state.is_some();
    let state = state.unwrap_or_default();
    let remaining = |until: f64| ((until - now).max(0.0) * 10.0).round() / 10.0;
    let ids = state.sessions.keys().map(String::as_str).collect();
    let mut last = last_records(dir, &ids);
    let sessions: Vec<Value> = state
        .sessions
        .iter()
        .map(|(id, b)| {
            let used = b
                .restarts
                .iter()
                .filter(|t| now - **t < lim.rate_window)
                .count();
            json!({
                "id": id,
                "title": b.title,
                "last_status": b.last_status,
                "status_since": b.status_since,
                "restarts_in_window": used,
                "budget_left": lim.rate_max.saturating_sub(used),
                "cooldown_remaining_s": remaining(b.cooldown_until),
                "backoff_remaining_s": remaining(b.backoff_until),
                "liveness_skips": b.liveness_skips,
                "consecutive_failures": b.consecutive_failures,
                "last_record": last.remove(id),
            })
        })
        .collect();
    let counters = read_text(&dir.join(METRICS_FILE), STATE_FILE_MAX)
        .map(|t| metrics::parse(&t))
        .unwrap_or_default();
    let by_label = |family: &str| -> BTreeMap<String, f64> {
        let prefix = format!("agent_deck_watchdog_{family}{{");
        counters
            .iter()
            .filter_map(|(k, v)| {
                let label = k.strip_prefix(&prefix)?.split('"').nth(1)?;
                Some((label.to_owned(), *v))
            })
            .collect()
    };
    let tasks: BTreeMap<String, usize> = RegistryFile::new(&cfg.task_timers_file)
        .peek()
        .map(|reg| {
            reg.tasks.iter().fold(BTreeMap::new(), |mut m, t| {
                *m.entry(t.status.as_str().to_owned()).or_default() += 1;
                m
            })
        })
        .unwrap_or_default();
    json!({
        "daemon": {"running": holder.is_some(), "pid": holder},
        "state_file": {"path": dir.join(STATE_FILE), "readable": state_readable},
        "limits": {"rate_limit_max": lim.rate_max, "rate_limit_window_s": lim.rate_window},
        "sessions": sessions,
        "breaker": {
            "open": state.breaker_open_until > now,
            "remaining_s": remaining(state.breaker_open_until),
            "recent_429s": state.breaker_hits.len(),
        },
        "cascade": {
            "active": state.cascade.is_some(),
            "settle_remaining_s": state.cascade.as_ref().map_or(0.0, |c| remaining(c.settle_until)),
            "size": state.cascade.as_ref().map(|c| c.size),
            "burst_pause_remaining_s": remaining(state.cascade_pause_until),
        },
        "patrols": {
            "waiting_children_watched": state.waiting.len(),
            "poller_restarts": state.poller_restarted,
        },
        "queue_drops": counters.get("agent_deck_watchdog_queue_drops_total").copied().unwrap_or(0.0),
        "cli": {"calls": by_label("cli_calls_total"), "failures": by_label("cli_failures_total")},
        "tasks": tasks,
        "records": record_files(cfg),
    })
}

fn table(v: &Value) -> String {
    let mut out = String::new();
    let daemon = &v["daemon"];
    out.push_str(&match daemon["pid"].as_u64() {
        Some(pid) => format!("daemon: running (pid {pid})\n"),
        None => "daemon: not running\n".to_owned(),
    });
    let f = |x: &Value| x.as_f64().unwrap_or(0.0);
    out.push_str(&format!(
        "{:<22} {:<20} {:<9} {:>8} {:>6} {:>9} {:>9} {:>6}\n",
        "SESSION", "TITLE", "STATUS", "RESTARTS", "LEFT", "COOLDOWN", "BACKOFF", "SKIPS"
    ));
    for s in v["sessions"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "{:<22} {:<20} {:<9} {:>8} {:>6} {:>8.0}s {:>8.0}s {:>6}\n",
            s["id"].as_str().unwrap_or(""),
            s["title"].as_str().unwrap_or(""),
            s["last_status"].as_str().unwrap_or("-"),
            s["restarts_in_window"],
            s["budget_left"],
            f(&s["cooldown_remaining_s"]),
            f(&s["backoff_remaining_s"]),
            s["liveness_skips"],
        ));
    }
    let b = &v["breaker"];
    out.push_str(&format!(
        "breaker: {} ({} recent 429s)\n",
        if b["open"] == true {
            format!("OPEN, {:.0}s left", f(&b["remaining_s"]))
        } else {
            "closed".into()
        },
        b["recent_429s"]
    ));
    let c = &v["cascade"];
    out.push_str(&format!(
        "cascade: {}\n",
        if c["active"] == true {
            format!(
                "active ({} in error), settle {:.0}s left",
                c["size"],
                f(&c["settle_remaining_s"])
            )
        } else {
            "none".into()
        }
    ));
    out.push_str(&format!("queue drops: {}\n", v["queue_drops"]));
    let sum = |m: &Value| m.as_object().map_or(0.0, |o| o.values().map(f).sum());
    out.push_str(&format!(
        "cli calls: {} ({} failed) as of the last tick\n",
        sum(&v["cli"]["calls"]),
        sum(&v["cli"]["failures"])
    ));
    out.push_str(&format!(
        "patrols: {} waiting children watched, {} poller restarts remembered\n",
        v["patrols"]["waiting_children_watched"],
        v["patrols"]["poller_restarts"]
            .as_object()
            .map_or(0, |o| o.len())
    ));
    let tasks = v["tasks"].as_object().map(|o| {
        o.iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    });
    out.push_str(&format!("records: {}\n", records_line(&v["records"])));
    out.push_str(&format!(
        "tasks: {}\n",
        tasks
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| "none".into())
    ));
    out
}

/// `restart.log 1.2 MiB (+ 16.0 MiB in .1), …; rotated at 16.0 MiB`.
fn records_line(r: &Value) -> String {
    let files: Vec<String> = r["files"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            let rotated = f["rotated_bytes"].as_u64().unwrap_or(0);
            format!(
                "{} {}{}",
                f["name"].as_str().unwrap_or(""),
                mib(f["bytes"].as_u64().unwrap_or(0)),
                if rotated > 0 {
                    format!(" (+ {} in .1)", mib(rotated))
                } else {
                    String::new()
                }
            )
        })
        .collect();
    format!(
        "{}; rotated at {}",
        files.join(", "),
        mib(r["max_bytes"].as_u64().unwrap_or(0))
    )
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

/// Prints the status.
pub fn run(cfg: &Config, json: bool) -> Result<()> {
    let v = collect(cfg, SystemClock.now());
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| Error::runtime(e.to_string()))?
        );
    } else {
        print!("{}", table(&v));
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
        let v = collect(&cfg, 10.0);
        let last = |id: &str| {
            v["sessions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["id"] == id)
                .unwrap()["last_record"]
                .clone()
        };
        assert_eq!(last("a-1")["action"], "restarted");
        assert_eq!(last("a-1")["ts"], 2.0);
        assert_eq!(last("b-2")["action"], "restarted");
        let files = &v["records"]["files"];
        assert_eq!(files[0]["name"], RESTART_LOG);
        assert!(files[0]["rotated_bytes"].as_u64().unwrap() > 0);
        assert_eq!(v["records"]["max_bytes"], 16_777_216);
        assert!(table(&v).contains("records: restart.log 0.0 MiB (+ 0.0 MiB in .1)"));
    }
}
