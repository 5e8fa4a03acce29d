//! A conductor fleet revived after its tmux server died, then the watchdog
//! restarted, stopped and SIGKILLed under systemd: no agent dies with it,
//! nothing is restarted twice, and its restart budget is kept across its
//! own restarts (the `STATUS=` line the new process sends counts them).
//!
//! On the real agent-deck (`AGENT_DECK_BIN`, `deck.rs`) three conductors
//! run the fake Claude, `tmux kill-server` is run as the user on
//! agent-deck's server, and the tmux server our restart started must be in
//! a scope of agent-deck's (`app.slice/agentdeck-tmux-…scope`), not in the
//! watchdog's service, so that it outlives the watchdog; `status --json`
//! shows each conductor's cooldown kept as well.
//!
//! On the simulator the agents are the pane host's children (`sim
//! pane-host`, started in the box as the user, outside the unit), and
//! `tmux kill-server` is the simulator's `tmux_server: "down"`: a
//! simulated `session restart` starts no process, so the tmux server's
//! scope is shown only with the real agent-deck.
//!
//! Also here, on the simulator: a restart the watchdog's own restart cut
//! short while it was being verified.

use std::collections::BTreeMap;
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::deck::{self, RealDeck};
use crate::install::{Deck, Installed, CONDUCTOR, UNIT};
use crate::sdbox::SdBox;
use crate::support::fixtures;
use crate::support::sim::{self, PANE_HOST_DEADLINE};
use crate::support::{kill, wait_until, BIN};

/// The fleet: two critical conductors with a tmux session each (below the
/// cascade threshold, so each is revived on its own).
const FLEET: [(&str, &str, &str); 2] = [
    (
        "a1b2c3d4-1765000001",
        "conductor-a",
        "agentdeck_conductor-a_0badf00d",
    ),
    (
        "b2c3d4e5-1765000002",
        "conductor-b",
        "agentdeck_conductor-b_0badf00e",
    ),
];

/// Intervals shrunk so a revive takes seconds; the cooldown stays long, so
/// a second restart of a revived conductor would be a bug, not a retry.
const FAST: [(&str, &str); 6] = [
    ("SAFETY_POLL_INTERVAL_S", "0.5"),
    ("LIVENESS_CONFIRM_GAP_S", "0.2"),
    ("MIN_GLOBAL_RESTART_INTERVAL_S", "1"),
    ("RESTART_VERIFY_S", "0.5"),
    ("START_VERIFY_S", "0.5"),
    ("POST_RESTART_COOLDOWN_S", "300"),
];

const LIMIT: Duration = Duration::from_secs(40);

/// `sim pane-host` in the box: on drop its stdin closes and it is waited
/// for (killed past the deadline).
struct PaneHost(Child);

impl Drop for PaneHost {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let done = wait_until(PANE_HOST_DEADLINE, || {
            matches!(self.0.try_wait(), Ok(Some(_)))
        });
        if !done {
            kill(self.0.id() as i32, libc::SIGKILL);
            let _ = self.0.wait();
        }
    }
}

/// What the watchdog is put through once the fleet is revived.
const OPS: [&str; 3] = ["restart", "stop", "SIGKILL"];

#[test]
#[ignore = "needs root and systemd-nspawn (see main.rs)"]
fn a_fleet_revived_after_kill_server_outlives_restart_stop_and_sigkill_of_the_watchdog() {
    match deck::named() {
        Some(_) => on_the_real_agent_deck(),
        None => on_the_simulator(),
    }
}

fn on_the_simulator() {
    let unit = Installed::prepare_sim(&FAST, None);
    let sessions: Vec<_> = FLEET
        .iter()
        .map(|(id, title, tmux)| {
            let mut c = fixtures::conductor(id, title, "running");
            c["tmux_session"] = json!(tmux);
            c
        })
        .collect();
    unit.sim()
        .set_state(&json!({"profiles_exist": true, "sessions": sessions}));
    let home = unit.sdbox.home();
    let _host = PaneHost(unit.sdbox.spawn_user(&format!(
        "{}={home}/sim/state.json {}={home}/sim/calls.log exec '{BIN}' {} pane-host",
        sim::STATE_ENV,
        sim::LOG_ENV,
        sim::SIM_ENTRY
    )));
    let first = unit.sim().wait_for_panes(&FLEET.map(|f| f.2));
    let out = unit.readme_steps();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    unit.wait_active(LIMIT);

    // tmux kill-server: every pane gone, every conductor reads `error`.
    unit.sim()
        .update_state(|s| s["tmux_server"] = json!("down"));
    let mut panes = BTreeMap::new();
    let revived = wait_until(LIMIT, || {
        panes = unit.sim().panes();
        let running = FLEET.iter().all(|(id, ..)| {
            unit.sim()
                .session_state(id)
                .is_some_and(|s| s["status"] == "running")
        });
        let fresh = panes
            .values()
            .all(|pid| !first.values().any(|old| old == pid));
        running && panes.len() == FLEET.len() && fresh
    });
    assert!(revived, "the fleet was not revived: {}", unit.sim().state());
    let restarts = unit.sim().calls_with(&["session", "restart"]);
    assert_eq!(
        restarts.len(),
        FLEET.len(),
        "one restart each: {restarts:?}"
    );
    // Each revive over, not just agent-deck reading it running: a restart
    // still being verified when the watchdog stops loses its budget slot
    // (the defect pinned below).
    wait_records(&unit, &FLEET.map(|f| f.0), "restarted");
    let budget = format!("; {} restarts in the window", FLEET.len());
    wait_status(&unit, &budget);

    for op in OPS {
        put_through(&unit, op, || {
            assert_alive(&unit, &panes, "while the watchdog is stopped")
        });
        // The new process read its budget back: its STATUS= counts the revive.
        wait_status(&unit, &budget);
        assert_alive(&unit, &panes, &format!("after {op} of the watchdog"));
        let again = unit.sim().calls_with(&["session", "restart"]);
        assert_eq!(
            again.len(),
            FLEET.len(),
            "restarted again after {op}: {again:?}"
        );
    }
}

/// `op` done to the watchdog (`stop` then `start`, with `stopped` run in
/// between); waits until a new main process is active.
fn put_through(unit: &Installed, op: &str, stopped: impl Fn()) {
    let before = unit.num("MainPID");
    match op {
        "SIGKILL" => unit.signal_main("KILL"),
        _ => {
            unit.sdbox.user_ok(&format!("systemctl --user {op} {UNIT}"));
        }
    }
    if op == "stop" {
        assert_eq!(unit.prop("ActiveState"), "inactive", "{}", unit.status());
        stopped();
        unit.sdbox
            .user_ok(&format!("systemctl --user start {UNIT}"));
    }
    let back = wait_until(LIMIT, || {
        let pid = unit.num("MainPID");
        pid != 0 && pid != before && unit.prop("ActiveState") == "active"
    });
    assert!(back, "not back after {op}:\n{}", unit.status());
}

/// Settings for a restart whose verification lasts: the restart call
/// answers success, the conductor still reads `error`.
const VERIFYING: [(&str, &str); 5] = [
    ("SAFETY_POLL_INTERVAL_S", "0.5"),
    ("LIVENESS_CONFIRM_GAP_S", "0.2"),
    ("MIN_GLOBAL_RESTART_INTERVAL_S", "1"),
    ("RESTART_VERIFY_S", "30"),
    ("POST_RESTART_COOLDOWN_S", "300"),
];

/// A restart the watchdog's own restart cut short while it verified it was
/// made all the same (agent-deck took the call): it stays in the budget
/// across the watchdog's restart, as every restart made does.
#[test]
#[ignore = "needs root and systemd-nspawn (see main.rs)"]
fn a_restart_cut_short_by_the_watchdog_s_own_restart_stays_in_its_budget() {
    let unit = Installed::prepare_sim(&VERIFYING, None);
    let (id, title, _) = FLEET[0];
    let crash_looping = fixtures::crash_looping(id, title);
    unit.sim()
        .set_state(&json!({"profiles_exist": true, "sessions": [crash_looping]}));
    let unit = unit.installed();
    unit.wait_active(LIMIT);
    let called = wait_until(LIMIT, || {
        !unit.sim().calls_with(&["session", "restart"]).is_empty()
    });
    assert!(called, "no restart:\n{}", unit.status());
    wait_status(&unit, "; 1 restarts in the window");
    put_through(&unit, "restart", || ());
    wait_records(&unit, &[id], "restart-interrupted");
    wait_status(&unit, "; 1 restarts in the window");
    let restarts = unit.sim().calls_with(&["session", "restart"]);
    assert_eq!(restarts.len(), 1, "restarted again: {restarts:?}");
}

/// Settings on the real agent-deck: [`FAST`]'s, with agent-deck's own
/// pace for the checks after a restart (its `session restart` takes
/// seconds).
const REAL: [(&str, &str); 4] = [
    ("SAFETY_POLL_INTERVAL_S", "1"),
    ("LIVENESS_CONFIRM_GAP_S", "0.5"),
    ("MIN_GLOBAL_RESTART_INTERVAL_S", "1"),
    ("POST_RESTART_COOLDOWN_S", "300"),
];

/// The conductors launched beside the first (three: below the cascade
/// threshold, so each is revived on its own).
const MORE: [&str; 2] = ["conductor-b", "conductor-c"];

/// How long the revive of the fleet may take on the real agent-deck.
const REVIVE_LIMIT: Duration = Duration::from_secs(90);

fn on_the_real_agent_deck() {
    let unit = Installed::prepare(&REAL, None);
    let Deck::Real(real) = &unit.deck else {
        unreachable!("AGENT_DECK_BIN is set")
    };
    let sdbox = &unit.sdbox;
    for title in MORE {
        real.launch(sdbox, title);
    }
    let launched = Instant::now();
    let ids = real.ids(sdbox);
    assert_eq!(
        ids.len(),
        1 + MORE.len(),
        "the fleet: {ids:?} ({CONDUCTOR} first)"
    );
    let out = unit.readme_steps();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    unit.wait_active(LIMIT);
    // Past agent-deck's freshness guard, which refuses to restart a session
    // started within the minute: conductors that have run a while.
    std::thread::sleep(deck::FRESHNESS.saturating_sub(launched.elapsed()));
    let first = real.panes(sdbox);
    assert_eq!(first.len(), ids.len(), "one pane each: {first:?}");

    let kill_at = Instant::now();
    let killed = real.tmux(sdbox, "kill-server");
    assert!(killed.status.success(), "tmux kill-server: {killed:?}");
    let mut panes = Vec::new();
    let revived = wait_until(REVIVE_LIMIT, || {
        panes = real.panes(sdbox);
        let fresh = panes.iter().all(|p| !first.contains(p));
        panes.len() == ids.len()
            && fresh
            && ids.iter().all(|id| deck::healthy(&real.status(sdbox, id)))
    });
    let restarts = real.calls_with(&["session", "restart"]);
    assert!(
        revived,
        "the fleet was not revived: panes {panes:?}, restarts {restarts:?}\n{}",
        unit.status()
    );
    for id in &ids {
        let mine = restarts.iter().filter(|c| c.contains(id.as_str())).count();
        assert_eq!(mine, 1, "{id}: one restart each: {restarts:?}");
    }
    // Our restart started the new server: in a scope of agent-deck's, not
    // in the watchdog's service, whose stop would take it along.
    let server = real.tmux_server(sdbox).expect("the revived tmux server");
    let cgroup = deck::cgroup(sdbox, server);
    assert!(
        cgroup.contains("/app.slice/agentdeck-tmux-")
            && cgroup.ends_with(".scope")
            && !cgroup.contains(UNIT),
        "the tmux server (pid {server}) is in {cgroup:?}"
    );
    eprintln!(
        "revived in {:?}: panes {panes:?}; tmux server {server} in {cgroup}",
        kill_at.elapsed()
    );
    let named: Vec<&str> = ids.iter().map(String::as_str).collect();
    wait_records(&unit, &named, "restarted");
    let sent = wait_sent(real, &ids);
    let budget = format!("; {} restarts in the window", ids.len());
    wait_status(&unit, &budget);
    assert_kept(&unit, &ids);

    for op in OPS {
        let alive = |when: &str| real_alive(sdbox, real, server, &panes, when);
        put_through(&unit, op, || alive("while the watchdog is stopped"));
        wait_status(&unit, &budget);
        alive(&format!("after {op} of the watchdog"));
        assert_eq!(
            real.calls_with(&["session", "restart"]),
            restarts,
            "restarted again after {op}"
        );
        let started = real.calls_with(&["session", "start"]);
        assert!(started.is_empty(), "started after {op}: {started:?}");
        assert_eq!(
            real.calls_with(&["session", "send"]),
            sent,
            "sent again after {op}"
        );
        assert_kept(&unit, &ids);
    }
}

/// Waits until each of `ids` got its one continuity message after our
/// restart; the `session send` calls.
fn wait_sent(real: &RealDeck, ids: &[String]) -> Vec<String> {
    let mut sent = Vec::new();
    let each = wait_until(LIMIT, || {
        sent = real.calls_with(&["session", "send"]);
        ids.iter()
            .all(|id| sent.iter().any(|c| c.contains(id.as_str())))
    });
    assert!(each, "a continuity message missing: {sent:?}");
    assert_eq!(sent.len(), ids.len(), "one message each: {sent:?}");
    sent
}

/// `status --json` as the user shows each of `ids` with its one restart in
/// the window and its cooldown still running.
fn assert_kept(unit: &Installed, ids: &[String]) {
    let text = unit.sdbox.user_ok(
        "set -a; . ~/.config/agent-deck-watchdog.env; set +a; \
         ~/.cargo/bin/agent-deck-watchdog status --json",
    );
    let report: Value = serde_json::from_str(&text).expect("status --json");
    for id in ids {
        let view = report["sessions"]
            .as_array()
            .and_then(|s| s.iter().find(|v| v["id"] == id.as_str()))
            .unwrap_or_else(|| panic!("{id} not in status: {report}"));
        let cooldown = view["cooldown_remaining_s"].as_f64().unwrap_or(0.0);
        assert!(
            view["restarts_in_window"] == 1 && cooldown > 0.0,
            "{id}: budget or cooldown lost: {view}"
        );
    }
}

/// The revived tmux server and every agent pane still live, unchanged.
fn real_alive(sdbox: &SdBox, real: &RealDeck, server: u32, panes: &[(String, u32)], when: &str) {
    assert_eq!(
        real.tmux_server(sdbox),
        Some(server),
        "the tmux server changed {when}"
    );
    assert_eq!(real.panes(sdbox), panes, "the agents changed {when}");
    for (name, pid) in panes {
        assert!(deck::alive(sdbox, *pid), "{name} (pid {pid}) died {when}");
    }
}

/// Waits until `restart.log` holds an `action` record for each of `ids`.
fn wait_records(unit: &Installed, ids: &[&str], action: &str) {
    let path = unit.sdbox.host_path(&format!(
        "{}/.agent-deck/watchdog/restart.log",
        unit.sdbox.home()
    ));
    let mut text = String::new();
    let each = wait_until(LIMIT, || {
        text = std::fs::read_to_string(&path).unwrap_or_default();
        let records: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        ids.iter().all(|id| {
            records
                .iter()
                .any(|r| r["id"] == *id && r["action"] == action)
        })
    });
    assert!(each, "no {action} record for each of {ids:?}:\n{text}");
}

/// Waits until `systemctl --user status` shows a `STATUS=` with `needle`.
fn wait_status(unit: &Installed, needle: &str) {
    let mut status = String::new();
    let shown = wait_until(LIMIT, || {
        status = unit.status();
        status
            .lines()
            .any(|l| l.trim_start().starts_with("Status:") && l.contains(needle))
    });
    if !shown {
        let records = unit.sdbox.user_sh("cat ~/.agent-deck/watchdog/restart.log");
        panic!(
            "no STATUS= with {needle:?}:\n{status}\nrestart.log:\n{}\njournal:\n{}",
            String::from_utf8_lossy(&records.stdout),
            unit.messages().join("\n")
        );
    }
}

/// Every pane of `panes` is still the pane host's, and its process lives.
fn assert_alive(unit: &Installed, panes: &BTreeMap<String, i32>, when: &str) {
    assert_eq!(&unit.sim().panes(), panes, "the agents changed {when}");
    for (name, pid) in panes {
        let alive = unit
            .sdbox
            .user_sh(&format!("kill -0 {pid}"))
            .status
            .success();
        assert!(alive, "{name} (pid {pid}) died {when}");
    }
}
