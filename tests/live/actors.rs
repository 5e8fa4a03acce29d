//! agent-deck's own actors beside the watchdog (#38 item 2), stood in for
//! by the CLI calls they make on the real agent-deck 1.14.0: a `session
//! restart` of an idle conductor from outside (1.16.33's upgrade restart,
//! an operator), and the conductor bridge's `session show` then `session
//! start` racing a death. Each runs four rounds on one critical Claude
//! conductor under a watchdog whose pane watch is armed, prints every
//! round's timeline (the watchdog's calls and records naming the conductor,
//! seconds from the outside call, and its stderr lines of the round), and
//! fails naming each broken invariant with its round.
//!
//! On 1.14.0 `session restart` of a Claude session whose Claude session id
//! is known and whose tmux session exists is `tmux respawn-pane -k` on the
//! same pane (`Instance.restart`, internal/session/instance.go): the pane
//! watch sees the old pane process exit and the same name under a new pid.

use std::fs;
use std::time::Duration;

use serde_json::Value;

use crate::sandbox::{is_healthy, Agent, Sandbox, Tool};
use crate::support::watchdog::Daemon;
use crate::support::{kill, now, wait_until};

const ROUNDS: usize = 4;
/// The bridge leaves a conductor alone in these statuses (1.14.0's
/// conductor bridge, issue #38).
const LEFT_ALONE: [&str; 5] = ["waiting", "running", "idle", "active", "starting"];

/// A critical conductor running `tool` at rest at its prompt, watched by
/// a daemon with `settings` whose pane watch is armed; `None` (said) where
/// the watch cannot arm.
fn watched_conductor(
    sb: &Sandbox,
    tool: Tool,
    settings: &[(&str, &str)],
) -> Option<(Agent, Daemon)> {
    let a = sb.add("conductor-ops", "conductor", tool, None);
    // A custom tool idles as the pane watch tests' conductors do.
    let mode = match tool {
        Tool::Claude => "chat",
        Tool::Custom => "quiet",
    };
    a.set_mode(mode);
    sb.start(&a);
    let d = sb.spawn_watchdog(settings);
    let armed = wait_until(Duration::from_secs(20), || {
        d.stderr()
            .contains("the pane watch covers every critical session")
    });
    if !armed {
        eprintln!("the pane watch did not arm here: {}", d.stderr());
        return None;
    }
    Some((a, d))
}

/// Back healthy with one more boot than `before`, and then two safety polls
/// with nothing more, so anything the watchdog makes of it is on record.
fn back_and_quiet(sb: &Sandbox, a: &Agent, d: &Daemon, before: u32) -> bool {
    let back = wait_until(Duration::from_secs(45), || {
        a.boots() > before && is_healthy(&sb.status(a))
    });
    sb.wait_for_polls(d, 2, Duration::from_secs(30));
    back
}

/// The round's timeline: the watchdog's calls and records naming `a`
/// (seconds from `t0`), and its stderr lines from byte `from` on.
fn timeline(sb: &Sandbox, a: &Agent, d: &Daemon, t0: f64, from: usize) -> String {
    let mut out = String::new();
    let rel = |ts: f64| format!("{:+8.3}s", ts - t0);
    for call in sb.watchdog_calls() {
        let (ts, argv) = call.split_once(' ').unwrap_or_default();
        let ts: f64 = ts.parse().unwrap_or_default();
        if ts >= t0 - 1.0 && argv.contains(&a.id) {
            out += &format!("  call   {} {argv}\n", rel(ts));
        }
    }
    for file in ["restart.log", "liveness.log"] {
        let text = fs::read_to_string(sb.watchdog_dir().join(file)).unwrap_or_default();
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
            let ts = v["ts"].as_f64().unwrap_or_default();
            if ts >= t0 - 1.0 && v["id"] == a.id.as_str() {
                out += &format!("  record {} {file} {line}\n", rel(ts));
            }
        }
    }
    let err = d.stderr();
    for line in err.get(from..).unwrap_or_default().lines() {
        if line.contains(&a.id) || line.contains("pane watch") {
            out += &format!("  stderr {line}\n");
        }
    }
    out
}

/// Pids of the agents running for `a`: the fake's outermost processes in
/// its project dir (a wrapper shell and the fake under it are one agent).
pub(crate) fn agents(sb: &Sandbox, a: &Agent) -> Vec<i32> {
    let fake = sb.dir.path().join("bin/fake-agent").display().to_string();
    let ours = |pid: i32| {
        let cmd = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cwd = fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
        String::from_utf8_lossy(&cmd).contains(&fake) && cwd == a.dir
    };
    let parent = |pid: i32| {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
        after.split_whitespace().nth(1)?.parse::<i32>().ok()
    };
    (fs::read_dir("/proc").into_iter().flatten().flatten())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| ours(pid) && !parent(pid).is_some_and(ours))
        .collect()
}

/// The watchdog's calls (all of them) breaking the never-list: `add`, a
/// `start` of `a`, `--force`.
fn never(sb: &Sandbox, a: &Agent) -> Vec<String> {
    let mut bad = sb.watchdog_calls_with(&["add"]);
    bad.extend(sb.session_calls(a, "start"));
    bad.extend(sb.watchdog_calls_with(&["--force"]));
    bad
}

/// Fails naming every broken invariant, after printing every timeline.
fn verdict(broken: &[String], d: &Daemon) {
    assert!(
        broken.is_empty(),
        "broken:\n{}\nstderr:\n{}",
        broken.join("\n"),
        d.stderr()
    );
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_restart_from_outside_is_nobody_s_crash_four_rounds() {
    restarts_from_outside(Tool::Claude);
}

/// A custom tool with no resume flag is restarted by 1.14.0's fallback:
/// its tmux session killed, then a new one under a new name.
#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_restart_from_outside_through_a_new_tmux_session_is_nobody_s_crash() {
    restarts_from_outside(Tool::Custom);
}

/// Four rounds of `session restart` from outside on an idle conductor
/// running `tool`: the watchdog never calls, records or sends for it.
fn restarts_from_outside(tool: Tool) {
    let sb = Sandbox::new();
    let Some((a, d)) = watched_conductor(&sb, tool, &[]) else {
        return;
    };
    let mut broken = Vec::new();
    let mut expected = a.boots();
    for round in 1..=ROUNDS {
        sb.age_past_freshness(&a);
        let boots = a.boots();
        if boots != expected {
            broken.push(format!(
                "round {round}: before it, {boots} boots, not {expected}"
            ));
        }
        let (from, calls) = (d.stderr().len(), sb.watchdog_calls().len());
        let pane = (sb.tmux_session(&a), sb.pane_pid(&a));
        let t0 = now();
        sb.cli_json(&["session", "restart", &a.id, "--json"]);
        a.started_now();
        expected = boots + 1;
        let back = back_and_quiet(&sb, &a, &d, boots);
        eprintln!(
            "round {round}: boots {boots} -> {}; pane {pane:?} -> {:?}\n{}",
            a.boots(),
            (sb.tmux_session(&a), sb.pane_pid(&a)),
            timeline(&sb, &a, &d, t0, from)
        );
        let new: Vec<String> = sb.watchdog_calls().split_off(calls);
        let acted: Vec<&String> = (new.iter())
            .filter(|c| {
                let argv: Vec<&str> = c.split_whitespace().skip(1).collect();
                argv.contains(&a.id.as_str())
                    && ["restart", "start", "send"]
                        .iter()
                        .any(|v| argv.contains(v))
            })
            .collect();
        if !back {
            broken.push(format!("round {round}: never back healthy"));
        }
        if !acted.is_empty() {
            broken.push(format!("round {round}: the watchdog called {acted:?}"));
        }
        if a.boots() != expected {
            broken.push(format!(
                "round {round}: {} boots, not {expected}",
                a.boots()
            ));
        }
    }
    // A retry queued behind the freshness guard would fire once it lets go.
    sb.age_past_freshness(&a);
    sb.wait_for_polls(&d, 2, Duration::from_secs(30));
    if a.boots() != expected {
        broken.push(format!(
            "after the guard: {} boots, not {expected}",
            a.boots()
        ));
    }
    let records = sb.restarts_of(&a, "restart");
    if !records.is_empty() {
        broken.push(format!("restart records: {records:?}"));
    }
    for verb in ["restart", "start", "send"] {
        let calls = sb.session_calls(&a, verb);
        if !calls.is_empty() {
            broken.push(format!("watchdog `session {verb}` calls: {calls:?}"));
        }
    }
    let running = agents(&sb, &a);
    if running.len() != 1 {
        broken.push(format!("agents running: {running:?}"));
    }
    verdict(&broken, &d);
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn the_bridge_racing_a_death_leaves_one_agent_four_rounds() {
    let sb = Sandbox::new();
    // Four deaths in five minutes are within the restart budget, so the
    // watchdog races the bridge in every round.
    let Some((a, d)) = watched_conductor(&sb, Tool::Claude, &[("RATE_LIMIT_MAX", "10")]) else {
        return;
    };
    let mut broken = Vec::new();
    for round in 1..=ROUNDS {
        sb.age_past_freshness(&a);
        let boots = a.boots();
        let (from, calls) = (d.stderr().len(), sb.watchdog_calls().len());
        let pid = sb.pane_pid(&a);
        let t0 = now();
        kill(pid, libc::SIGKILL);
        // The bridge: `session show`, and `session start` unless it reads
        // the conductor in one of the statuses it leaves alone.
        let status = sb.status(&a);
        let bridge = !LEFT_ALONE.contains(&status.as_str());
        let start = bridge.then(|| sb.cli(&["session", "start", &a.id, "--json"]));
        let started = start.as_ref().is_some_and(|o| o.status.success());
        a.started_now();
        let back = back_and_quiet(&sb, &a, &d, boots);
        let said = start.map(|o| {
            let out = String::from_utf8_lossy(&o.stdout);
            let words: Vec<&str> = out.split_whitespace().collect();
            format!("{}: {}", o.status, words.join(" "))
        });
        eprintln!(
            "round {round}: show read {status:?}; start {said:?}; boots {boots} -> {}\n{}",
            a.boots(),
            timeline(&sb, &a, &d, t0, from)
        );
        let new: Vec<String> = sb.watchdog_calls().split_off(calls);
        let restarts = (new.iter())
            .filter(|c| c.contains(&format!("session restart {}", a.id)))
            .count();
        if !back {
            broken.push(format!("round {round}: never back healthy"));
        }
        if a.boots() != boots + 1 {
            let n = a.boots() - boots;
            broken.push(format!(
                "round {round}: {n} boots (bridge start ok: {started}, watchdog restarts: {restarts})"
            ));
        }
        let running = agents(&sb, &a);
        if running.len() != 1 {
            broken.push(format!("round {round}: agents running {running:?}"));
        }
        let named = (sb.tmux_sessions().into_iter())
            .filter(|n| n.starts_with("agentdeck_conductor-ops_"))
            .count();
        if named != 1 {
            broken.push(format!("round {round}: {named} tmux sessions"));
        }
    }
    let bad = never(&sb, &a);
    if !bad.is_empty() {
        broken.push(format!("calls it must never make: {bad:?}"));
    }
    verdict(&broken, &d);
}
