//! A year of records and tasks in fast-forward, showing that disk use stays
//! bounded: `cargo bench --bench records`.
//!
//! Records: a million `restart.log` lines (plus liveness and escalation
//! records) written through the daemon's own appender,
//! [`Records`](agent_deck_watchdog::harness::Records), with
//! `RECORD_MAX_BYTES` at its default; at the end, the bytes the record files
//! hold on disk against the bound of about twice the limit per file, and the
//! bytes that were written in all.
//!
//! Tasks: 10,000 tasks finished over a simulated year (one in five needing a
//! re-dispatch, with its log), pruned once a simulated day with
//! `TASK_RETENTION_DAYS` at its default by the functions the follow-up pass
//! runs, under the registry lock; at the end, the registry's size and the
//! logs left, against what a year would leave unpruned.
//!
//! Everything happens in a temp dir, removed at the end. Nothing is compared
//! against a threshold: the numbers are printed for the benchmark note.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Instant;

use agent_deck_watchdog::harness::Records;
use agent_deck_watchdog::harness::TaskStatus;
use agent_deck_watchdog::harness::{retention, DAY_S};
use agent_deck_watchdog::harness::{rotated_path, DEFAULT_MAX_BYTES};
use agent_deck_watchdog::harness::{
    Detail, EscalationRecord, LivenessRecord, PaneSamples, RestartAction, RestartRecord, Severity,
    StatusRead, ESCALATIONS_LOG, LIVENESS_LOG, RESTART_LOG,
};
use agent_deck_watchdog::harness::{Registry, RegistryFile, Task, TaskEvent};

const YEAR_START: f64 = 1_767_225_600.0; // 2026-01-01T00:00:00Z
const DAYS: u32 = 365;
const RESTART_LINES: u64 = 1_000_000;
const LIVENESS_LINES: u64 = 100_000;
const ESCALATION_LINES: u64 = 10_000;
const TASKS: u32 = 10_000;
const RETENTION_DAYS: f64 = 30.0;

fn main() {
    let tmp = match tempfile::tempdir() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("records bench: cannot make a temp dir: {e}");
            std::process::exit(1);
        }
    };
    println!("agent-deck-watchdog records benchmark: a year in fast-forward");
    records(&tmp.path().join("records"));
    tasks(&tmp.path().join("tasks"));
}

/// (apparent bytes, bytes allocated on disk) of a file, 0 if missing.
fn sizes(path: &Path) -> (u64, u64) {
    std::fs::metadata(path).map_or((0, 0), |m| (m.len(), m.blocks() * 512))
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

fn restart(i: u64) -> RestartRecord {
    let skipped = !i.is_multiple_of(4);
    RestartRecord {
        ts: YEAR_START + i as f64 * (f64::from(DAYS) * DAY_S / RESTART_LINES as f64),
        id: format!("{:08x}-1755891234", i % 64),
        title: format!("conductor-{}", i % 64),
        profile: "default".into(),
        action: if skipped {
            RestartAction::Skipped
        } else {
            RestartAction::Restarted
        },
        reason: skipped.then(|| "cascade_pause".into()),
        dry_run: false,
        detail: if skipped {
            Detail::Plain {}
        } else {
            Detail::Restarted {
                final_status: "running".into(),
            }
        },
    }
}

fn liveness(i: u64) -> LivenessRecord {
    let ts = YEAR_START + i as f64 * 300.0;
    LivenessRecord {
        ts,
        id: format!("{:08x}-1755891234", i % 64),
        title: format!("conductor-{}", i % 64),
        profile: "default".into(),
        gap_s: 2.0,
        reads: vec![
            StatusRead {
                ts,
                status: "error".into(),
                substate: None,
            },
            StatusRead {
                ts: ts + 2.0,
                status: "error".into(),
                substate: None,
            },
        ],
        pane: PaneSamples {
            first: "0123456789abcdef".into(),
            second: "fedcba9876543210".into(),
            sampled: true,
            changed: true,
            empty: false,
        },
        auth_hold_reason: None,
        decision: "skip".into(),
        reason: agent_deck_watchdog::harness::LivenessReason::PaneActive,
        consecutive_skips: Some(1),
        dry_run: false,
        proof: None,
    }
}

fn escalation(i: u64) -> EscalationRecord {
    EscalationRecord {
        ts: YEAR_START + i as f64 * 3000.0,
        severity: Severity::RestartFailed,
        message: format!(
            "conductor-{} failed to restart twice in a row — needs a human",
            i % 64
        ),
        sid: Some(format!("{:08x}-1755891234", i % 64)),
        telegram: true,
        dry_run: false,
    }
}

fn records(dir: &Path) {
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("records bench: cannot create {}: {e}", dir.display());
        return;
    }
    // `Records::new` rotates at the default RECORD_MAX_BYTES, like the daemon.
    let r = Records::new(dir);
    let mut written = 0u64;
    let started = Instant::now();
    for i in 0..RESTART_LINES {
        let rec = restart(i);
        written += serde_json::to_vec(&rec).map_or(0, |l| l.len() as u64 + 1);
        r.restart(&rec);
        if i.is_multiple_of(RESTART_LINES / LIVENESS_LINES) {
            let rec = liveness(i / (RESTART_LINES / LIVENESS_LINES));
            written += serde_json::to_vec(&rec).map_or(0, |l| l.len() as u64 + 1);
            r.liveness(&rec);
        }
        if i.is_multiple_of(RESTART_LINES / ESCALATION_LINES) {
            let rec = escalation(i / (RESTART_LINES / ESCALATION_LINES));
            written += serde_json::to_vec(&rec).map_or(0, |l| l.len() as u64 + 1);
            r.escalation(&rec);
        }
    }
    let took = started.elapsed().as_secs_f64();
    let lines = RESTART_LINES + LIVENESS_LINES + ESCALATION_LINES;
    println!();
    println!(
        "records: {lines} lines ({RESTART_LINES} restart, {LIVENESS_LINES} liveness, {ESCALATION_LINES} escalation) in {took:.2} s, {:.1} µs a line, {} written in all",
        took * 1e6 / lines as f64,
        mib(written)
    );
    println!(
        "  RECORD_MAX_BYTES = {} ({}); bound per record file: about 2 x = {}",
        DEFAULT_MAX_BYTES,
        mib(DEFAULT_MAX_BYTES),
        mib(2 * DEFAULT_MAX_BYTES)
    );
    let mut total = (0, 0);
    for name in [RESTART_LOG, LIVENESS_LOG, ESCALATIONS_LOG] {
        let live = sizes(&dir.join(name));
        let old = sizes(&rotated_path(&dir.join(name)));
        total = (total.0 + live.0 + old.0, total.1 + live.1 + old.1);
        println!(
            "  {name:<16} {:>9} + .1 {:>9} = {:>9} on disk",
            mib(live.0),
            mib(old.0),
            mib(live.1 + old.1)
        );
    }
    let counted: u64 = r.tally().restart_actions.values().sum();
    println!(
        "  record files at the end: {} ({} on disk) for {} written; restarts_total counter {counted}",
        mib(total.0),
        mib(total.1),
        mib(written)
    );
}

fn task(id: String, parent: Option<String>, status: TaskStatus, at: f64) -> Task {
    Task {
        task_file: format!("/home/op/work/{}.md", parent.as_deref().unwrap_or(&id)).into(),
        task_sha256: "7f".repeat(32),
        done_file: format!("/home/op/work/{id}.done").into(),
        partial_file: format!("/home/op/work/{id}.partial").into(),
        followup_s: 1200.0,
        dispatched_at: at,
        next_check_at: at + 1200.0,
        retry_count: u32::from(parent.is_some()),
        max_retry: 2,
        status,
        pid: None,
        pid_started: None,
        match_: id.clone(),
        command: vec![
            "/home/op/bin/dispatch".into(),
            "{task_id}".into(),
            "{task_file}".into(),
        ],
        events: vec![
            TaskEvent {
                ts: at,
                event: "added".into(),
                detail: None,
            },
            TaskEvent {
                ts: at + 3600.0,
                event: status.as_str().into(),
                detail: Some(format!("{id} reached {status}")),
            },
        ],
        parent_task: parent,
        id,
    }
}

/// One simulated day's tasks, all finished by the end of it: roots, and
/// for one in five a re-dispatch whose log the watchdog wrote.
fn day_of_tasks(day: u32, per_day: u32, logs: &Path) -> Vec<Task> {
    let at = YEAR_START + f64::from(day) * DAY_S;
    let mut out = Vec::new();
    for n in 0..per_day {
        let id = format!("task-{day}-{n}");
        if n.is_multiple_of(5) {
            let child = format!("{id}.2");
            let _ = std::fs::write(logs.join(format!("{child}.log")), vec![b'o'; 4096]);
            out.push(task(id.clone(), None, TaskStatus::Retried, at));
            out.push(task(child, Some(id), TaskStatus::Done, at + 1800.0));
        } else {
            out.push(task(id, None, TaskStatus::Done, at));
        }
    }
    out
}

fn tasks(dir: &Path) {
    let logs = dir.join("tasks");
    if let Err(e) = std::fs::create_dir_all(&logs) {
        eprintln!("records bench: cannot create {}: {e}", logs.display());
        return;
    }
    let registry = RegistryFile::new(&dir.join("task-timers.json"), None);
    let per_day = TASKS.div_ceil(DAYS);
    let (mut added, mut pruned, mut logs_removed) = (0usize, 0usize, 0usize);
    let mut last_pass = 0.0;
    let started = Instant::now();
    for day in 0..DAYS {
        let new = day_of_tasks(day, per_day, &logs);
        added += new.len();
        // The follow-up pass at the end of the day: prune, write, then remove logs.
        let now = YEAR_START + f64::from(day + 1) * DAY_S;
        let pass = Instant::now();
        let outcome = registry.update_then(
            |reg: &mut Registry| {
                reg.tasks.extend(new);
                let gone = retention::prune(reg, now, RETENTION_DAYS * DAY_S);
                let names = retention::logs_to_remove(&gone, &reg.tasks);
                Ok((gone.len(), names, 0usize))
            },
            |(_, names, removed)| *removed = retention::remove_logs(&logs, names),
        );
        last_pass = pass.elapsed().as_secs_f64();
        match outcome {
            Ok((n, _, removed)) => {
                pruned += n;
                logs_removed += removed;
            }
            Err(e) => {
                eprintln!("records bench: the registry pass failed: {e}");
                return;
            }
        }
    }
    let took = started.elapsed().as_secs_f64();
    let kept = registry.load().map_or(0, |r| r.tasks.len());
    let (reg_bytes, _) = sizes(&registry.path);
    let logs_left = std::fs::read_dir(&logs).map_or(0, |d| d.count());
    let log_bytes: u64 = std::fs::read_dir(&logs).map_or(0, |d| {
        d.flatten()
            .map(|e| e.metadata().map_or(0, |m| m.len()))
            .sum()
    });
    // What a year leaves without pruning: every task kept.
    let unpruned: Vec<Task> = (0..DAYS)
        .flat_map(|day| {
            let at = YEAR_START + f64::from(day) * DAY_S;
            (0..per_day).flat_map(move |n| {
                let id = format!("task-{day}-{n}");
                if n.is_multiple_of(5) {
                    vec![
                        task(id.clone(), None, TaskStatus::Retried, at),
                        task(format!("{id}.2"), Some(id), TaskStatus::Done, at + 1800.0),
                    ]
                } else {
                    vec![task(id, None, TaskStatus::Done, at)]
                }
            })
        })
        .collect();
    let unpruned_logs = unpruned.iter().filter(|t| t.parent_task.is_some()).count();
    let unpruned_bytes = serde_json::to_vec_pretty(&Registry {
        tasks: unpruned,
        ..Registry::default()
    })
    .map_or(0, |b| b.len() as u64 + 1);
    println!();
    println!(
        "tasks: {added} registry entries finished over {DAYS} simulated days ({} tasks, {per_day} a day, and a re-dispatch for one in five), pruned daily at TASK_RETENTION_DAYS = {RETENTION_DAYS:.0}, in {took:.2} s (the last daily pass {:.1} ms)",
        per_day * DAYS,
        last_pass * 1e3
    );
    println!(
        "  registry at the end: {kept} tasks, {} (unpruned: {added} tasks, {}); pruned {pruned}",
        mib(reg_bytes),
        mib(unpruned_bytes)
    );
    println!(
        "  tasks/*.log at the end: {logs_left} files, {} (unpruned: {unpruned_logs} files, {}); removed {logs_removed}",
        mib(log_bytes),
        mib(unpruned_logs as u64 * 4096)
    );
}
