//! `agent-deck-watchdog demo`: the daemon against a simulated fleet, so a
//! newcomer sees what it does in one command, without agent-deck. It sits
//! above the daemon and the command line it drives, so nothing below imports
//! it.
//!
//! The fleet and its crash are `agent-deck-sim`'s [`scenario`], reached
//! through a two-line wrapper script in a fresh temp directory; this file
//! runs the scenario: it starts the daemon, plays the crash, waits for the
//! five outcomes (a revive, a busy conductor left alone, an auth hold
//! escalated, a usage limit resumed at its reset, a full context cleared
//! and re-briefed) and prints the timeline from the daemon's own records,
//! which stay in the temp dir.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use agent_deck_sim as sim;
use agent_deck_sim::scenario::{self, fleet, BUSY, CRASHER, FULL, LIMITED, WORKER};

use crate::config::{Config, Env};
use crate::daemon;
use crate::daemon::RunFlags;
use crate::decide::outcomes::{RestartAction, Severity};
use crate::decide::restart::liveness::LivenessReason;
use crate::error::{Error, Result};
use crate::ops::history::{self, timeline::Record};
use crate::records::audit::{Detail, RestartRecord};
use crate::sys::clock::unix_now;
use crate::sys::shutdown::Shutdown;

const DEADLINE: Duration = Duration::from_secs(40);

/// conductor-limit's usage limit resets this long after the demo starts:
/// long enough to see it wait, short enough for the minute.
const RESETS_IN_S: u64 = 8;

fn err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::runtime(format!("demo: {what}: {e}"))
}

/// Lays out the temp directory and returns the daemon's configuration.
fn prepare(dir: &Path, resets_at: u64) -> Result<(Config, PathBuf, PathBuf)> {
    let exe = std::env::current_exe().map_err(|e| err("cannot find this program", e))?;
    let (state, calls) = (dir.join("sim-state.json"), dir.join("sim-calls.log"));
    let hooks = dir.join("hooks");
    for d in [&hooks, &dir.join("home"), &dir.join("bin")] {
        std::fs::create_dir_all(d).map_err(|e| err("cannot create the demo directory", e))?;
    }
    sim::transact(&state, |s| *s = fleet(resets_at))
        .map_err(|e| err("cannot write the simulated fleet", e))?;
    let wrapper = dir.join("bin/agent-deck");
    let script = format!(
        "#!/bin/sh\n{}='{}' {}='{}' exec '{}' {} \"$@\"\n",
        sim::STATE_ENV,
        state.display(),
        sim::LOG_ENV,
        calls.display(),
        exe.display(),
        sim::ENTRY
    );
    std::fs::write(&wrapper, script)
        .and_then(|()| std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)))
        .map_err(|e| err("cannot write the simulated agent-deck", e))?;
    let path = |p: &Path| p.display().to_string();
    let env: Env = [
        ("HOME", path(&dir.join("home"))),
        ("AGENT_DECK_ROOT", path(&dir.join("agent-deck"))),
        ("AGENT_DECK_BIN", path(&wrapper)),
        ("AGENT_DECK_HOOKS_DIR", path(&hooks)),
        ("SAFETY_POLL_INTERVAL_S", "1".into()),
        ("LIVENESS_CONFIRM_GAP_S", "0.5".into()),
        ("LIVENESS_SKIP_ESCALATE_AFTER", "2".into()),
        ("MIN_GLOBAL_RESTART_INTERVAL_S", "1".into()),
        ("POST_RESTART_COOLDOWN_S", "2".into()),
        ("RESTART_VERIFY_S", "1".into()),
        ("START_VERIFY_S", "2".into()),
        // A resume 1 s after the reset, not 120 s; the re-brief and the
        // reset's resume 1 s apart, not 30 s.
        ("RESUME_GRACE_S", "1".into()),
        ("RESUME_STAGGER_S", "1".into()),
        ("RESUME_VERIFY_S", "2".into()),
        // The simulated fleet has no panes: a pane watch would list the
        // operator's own tmux server.
        ("PANE_WATCH", "off".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let cfg = Config::from_env(&env)?;
    Ok((cfg, state, calls))
}

/// Writes a hook file the way agent-deck does: a dot-temp file renamed in.
fn write_hook(hooks: &Path, id: &str) -> std::io::Result<()> {
    let tmp = hooks.join(format!(".{id}.json.tmp-demo"));
    let ts = unix_now() as u64;
    std::fs::write(
        &tmp,
        format!(r#"{{"status":"dead","event":"SessionEnd","ts":{ts}}}"#),
    )?;
    std::fs::rename(&tmp, hooks.join(format!("{id}.json")))
}

/// The scenario's five outcomes are all on record.
fn finished(cfg: &Config) -> bool {
    let (all, _) = history::load(&cfg.watchdog_dir);
    let revived = all.iter().any(|r| {
        matches!(r, Record::Restart(r) if r.id == CRASHER && r.action == RestartAction::Restarted)
    });
    let busy_skips = all
        .iter()
        .filter(|r| {
            matches!(r, Record::Liveness(l) if l.id == BUSY && l.reason == LivenessReason::PaneActive)
        })
        .count();
    let held = all
        .iter()
        .any(|r| matches!(r, Record::Escalation(e) if e.severity == Severity::AuthHold));
    let verified = |id: &str| {
        all.iter().any(|r| {
            matches!(r, Record::Restart(r) if r.id == id && r.action == RestartAction::ResumeVerified)
        })
    };
    revived && busy_skips >= 2 && held && verified(LIMITED) && verified(FULL)
}

pub(crate) fn run() -> Result<()> {
    let dir = std::env::temp_dir().join(format!(
        "agent-deck-watchdog-demo-{}-{}",
        std::process::id(),
        unix_now() as u64
    ));
    std::fs::create_dir_all(&dir).map_err(|e| err("cannot create the demo directory", e))?;
    let resets_at = unix_now() as u64 + RESETS_IN_S;
    let (cfg, state, calls) = prepare(&dir, resets_at)?;
    println!(
        "agent-deck-watchdog demo: a simulated agent-deck fleet of six sessions
  conductor-ops    running, will crash in a moment
  conductor-busy   shows an error banner, but its pane keeps moving
  conductor-auth   in error and auth-held (its login expired)
  worker-1         in error, but not a critical session
  conductor-limit  idle at its usage limit; its last response names the reset, {RESETS_IN_S}s away
  conductor-full   its context window is full: each turn ends on \"Context limit reached\"\n"
    );
    let shutdown = Shutdown::new().map_err(|e| err("cannot create the shutdown token", e))?;
    let stop = shutdown.clone();
    let (daemon_cfg, flags) = (cfg.clone(), RunFlags::default());
    let daemon = std::thread::Builder::new()
        .name("demo-daemon".into())
        .spawn(move || daemon::run_with(&daemon_cfg, flags, stop, &AtomicBool::new(false)))
        .map_err(|e| err("cannot start the daemon thread", e))?;
    let started = unix_now();
    std::thread::sleep(Duration::from_millis(1500));
    sim::transact(&state, scenario::crash).map_err(|e| err("cannot crash conductor-ops", e))?;
    let crashed_at = unix_now();
    write_hook(&cfg.hooks_dir, CRASHER).map_err(|e| err("cannot write the hook file", e))?;
    let deadline = Instant::now() + DEADLINE;
    while !finished(&cfg) && Instant::now() < deadline && !daemon.is_finished() {
        std::thread::sleep(Duration::from_millis(200));
    }
    // What the daemon records as it stops (checks cut short) is no part of the story.
    let stopped = unix_now();
    shutdown.trigger();
    daemon
        .join()
        .map_err(|_| err("the daemon thread", "panicked"))??;
    let grace = cfg.resume_grace.as_secs_f64();
    let played = [
        (
            crashed_at,
            "conductor-ops crashes: status error, hook file renamed into the hooks dir".into(),
        ),
        (
            resets_at as f64,
            format!(
                "conductor-limit's usage limit resets, at the time its rejection names \
                 (a resume waits RESUME_GRACE_S more: {grace}s here)"
            ),
        ),
    ];
    print_timeline(&cfg, (started, stopped), played, &calls);
    let (kept, all) = (cfg.watchdog_dir.display(), dir.display());
    println!("\nrecords: {kept}\n(the demo's files, simulated fleet included, are in {all})");
    if finished(&cfg) {
        Ok(())
    } else {
        Err(Error::runtime(
            "demo: the scenario did not complete within 40s; see the records above",
        ))
    }
}

/// One record as a timeline line, its times in seconds since `started`;
/// `None` for a `skipped-alive` restart record, which the liveness line
/// written with it already says.
fn describe(r: &Record, started: f64) -> Option<String> {
    Some(match r {
        Record::Liveness(r) => {
            let reads: Vec<&str> = r.reads.iter().map(|x| x.status.as_str()).collect();
            let (title, reads, decision) = (&r.title, reads.join(" → "), &r.decision);
            let pane = match (r.pane.first.is_empty(), r.pane.changed) {
                (true, _) => "",
                (false, true) => ", pane moving",
                (false, false) => ", pane unchanged",
            };
            format!(
                "{title}: liveness check (status {reads}{pane}) → {decision} ({})",
                r.reason
            )
        }
        Record::Restart(r) => match &r.action {
            RestartAction::SkippedAlive => return None,
            RestartAction::Restart => {
                format!("{}: restarting it (session restart --json)", r.title)
            }
            RestartAction::Restarted => match &r.detail {
                Detail::Restarted { final_status: s } => {
                    format!("{}: back up, status {s}", r.title)
                }
                _ => format!("{}: back up, status ", r.title),
            },
            RestartAction::StallDetected => match &r.detail {
                Detail::Stall(d) => match &d.remedy {
                    Some(remedy) => format!(
                        "{}: stalled: {} ({}) → {remedy}",
                        r.title, d.kind, d.evidence
                    ),
                    None => format!(
                        "{}: stalled: {} (seen in its {}) → resume at +{:.1}s (from {})",
                        r.title,
                        d.kind,
                        d.evidence,
                        d.resume_at - started,
                        d.resume_from
                    ),
                },
                _ => format!("{}: stalled", r.title),
            },
            RestartAction::ClearSent => format!("{}: /clear sent (session send)", r.title),
            // The message after a `/clear` is the re-brief (SPEC §15).
            RestartAction::ResumeSent if cleared(r) => {
                format!("{}: re-brief sent (session send)", r.title)
            }
            RestartAction::ResumeSent => {
                format!("{}: resume message sent (session send)", r.title)
            }
            RestartAction::ResumeVerified if cleared(r) => format!(
                "{}: verified: a new turn, in a new conversation (claude_session_id changed)",
                r.title
            ),
            RestartAction::ResumeVerified => {
                format!("{}: verified: a new turn started", r.title)
            }
            other => format!("{}: {other} {}", r.title, r.reason.as_deref().unwrap_or("")),
        },
        Record::Escalation(e) => format!("ESCALATION [{}] {}", e.severity, e.message),
    })
}

/// Whether `r` is a step of a full context's `/clear` remedy.
fn cleared(r: &RestartRecord) -> bool {
    matches!(&r.detail, Detail::Stall(d) if d.remedy.as_deref().is_some_and(|m| m.starts_with("/clear")))
}

/// The timeline of what the demo `played` and what the daemon recorded
/// between `started` and `stopped`.
fn print_timeline(
    cfg: &Config,
    (started, stopped): (f64, f64),
    played: [(f64, String); 2],
    calls: &Path,
) {
    let (all, _) = history::load(&cfg.watchdog_dir);
    let mut events = Vec::from(played);
    let recorded = all.iter().filter(|r| r.ts() <= stopped);
    events.extend(recorded.filter_map(|r| Some((r.ts(), describe(r, started)?))));
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    println!("timeline (seconds since start):");
    for (ts, line) in events {
        println!("  +{:5.1}s  {line}", ts - started);
    }
    let log = std::fs::read_to_string(calls).unwrap_or_default();
    let worker_restarts = log
        .lines()
        .filter(|l| l.contains("\"restart\"") && l.contains(WORKER))
        .count();
    let total = log.lines().count();
    println!("\nworker-1 was in error the whole time and was restarted {worker_restarts} times: it is not critical.");
    println!("the watchdog made {total} calls to the (simulated) agent-deck CLI.");
}
