//! A conductor fleet revived after its tmux server died, then the watchdog
//! restarted, stopped and SIGKILLed under systemd: no agent dies with it,
//! nothing is restarted twice, and its restart budget is kept across its
//! own restarts (the `STATUS=` line the new process sends counts them).
//!
//! With the simulator the agents are the pane host's children (`sim
//! pane-host`, started in the box as the user, outside the unit), and
//! `tmux kill-server` is the simulator's `tmux_server: "down"`: a
//! simulated `session restart` starts no process, so that a tmux server our
//! restart started outlives the watchdog is shown only with the real
//! agent-deck, which this suite does not yet drive.

use std::collections::BTreeMap;
use std::process::Child;
use std::time::Duration;

use serde_json::json;

use crate::install::{Installed, UNIT};
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

#[test]
#[ignore = "needs root and systemd-nspawn (see main.rs)"]
fn a_fleet_revived_after_kill_server_outlives_restart_stop_and_sigkill_of_the_watchdog() {
    let unit = Installed::prepare(&FAST, None);
    let sessions: Vec<_> = FLEET
        .iter()
        .map(|(id, title, tmux)| {
            let mut c = fixtures::conductor(id, title, "running");
            c["tmux_session"] = json!(tmux);
            c
        })
        .collect();
    unit.sim
        .set_state(&json!({"profiles_exist": true, "sessions": sessions}));
    let home = unit.sdbox.home();
    let _host = PaneHost(unit.sdbox.spawn_user(&format!(
        "{}={home}/sim/state.json {}={home}/sim/calls.log exec '{BIN}' {} pane-host",
        sim::STATE_ENV,
        sim::LOG_ENV,
        sim::SIM_ENTRY
    )));
    let first = unit.sim.wait_for_panes(&FLEET.map(|f| f.2));
    let out = unit.readme_steps();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    unit.wait_active(LIMIT);

    // tmux kill-server: every pane gone, every conductor reads `error`.
    unit.sim.update_state(|s| s["tmux_server"] = json!("down"));
    let mut panes = BTreeMap::new();
    let revived = wait_until(LIMIT, || {
        panes = unit.sim.panes();
        let running = FLEET.iter().all(|(id, ..)| {
            unit.sim
                .session_state(id)
                .is_some_and(|s| s["status"] == "running")
        });
        let fresh = panes
            .values()
            .all(|pid| !first.values().any(|old| old == pid));
        running && panes.len() == FLEET.len() && fresh
    });
    assert!(revived, "the fleet was not revived: {}", unit.sim.state());
    let restarts = unit.sim.calls_with(&["session", "restart"]);
    assert_eq!(
        restarts.len(),
        FLEET.len(),
        "one restart each: {restarts:?}"
    );
    let budget = format!("; {} restarts in the window", FLEET.len());
    wait_status(&unit, &budget);

    for op in ["restart", "stop", "SIGKILL"] {
        let before = unit.num("MainPID");
        match op {
            "SIGKILL" => unit.signal_main("KILL"),
            _ => {
                unit.sdbox.user_ok(&format!("systemctl --user {op} {UNIT}"));
            }
        }
        if op == "stop" {
            assert_eq!(unit.prop("ActiveState"), "inactive", "{}", unit.status());
            assert_alive(&unit, &panes, "while the watchdog is stopped");
            unit.sdbox
                .user_ok(&format!("systemctl --user start {UNIT}"));
        }
        let back = wait_until(LIMIT, || {
            let pid = unit.num("MainPID");
            pid != 0 && pid != before && unit.prop("ActiveState") == "active"
        });
        assert!(back, "not back after {op}:\n{}", unit.status());
        // The new process read its budget back: its STATUS= counts the revive.
        wait_status(&unit, &budget);
        assert_alive(&unit, &panes, &format!("after {op} of the watchdog"));
        let again = unit.sim.calls_with(&["session", "restart"]);
        assert_eq!(
            again.len(),
            FLEET.len(),
            "restarted again after {op}: {again:?}"
        );
    }
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
    assert!(shown, "no STATUS= with {needle:?}:\n{status}");
}

/// Every pane of `panes` is still the pane host's, and its process lives.
fn assert_alive(unit: &Installed, panes: &BTreeMap<String, i32>, when: &str) {
    assert_eq!(&unit.sim.panes(), panes, "the agents changed {when}");
    for (name, pid) in panes {
        let alive = unit
            .sdbox
            .user_sh(&format!("kill -0 {pid}"))
            .status
            .success();
        assert!(alive, "{name} (pid {pid}) died {when}");
    }
}
