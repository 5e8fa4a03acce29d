//! Black-box tests at scale: the built binary against the simulated agent-deck
//! with a profile far past what a capped read of the CLI's answer could hold
//! (SPEC §4: an unreadable list is unknown; a big one must not become
//! unreadable), and the children the session cache keeps as ids alone.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::fixtures::{conductor, CONDUCTOR};
use crate::support::watchdog::Wd;

/// `n` sessions in profile "default": the errored conductor in the middle,
/// the others idle workers, every other one a child of the conductor.
fn big_profile(n: usize) -> Vec<Value> {
    let mut sessions: Vec<Value> = (1..n)
        .map(|i| {
            let mut s = json!({
                "id": format!("{i:08x}-1755800000"),
                "title": format!("worker-{i}"),
                "group": "srv",
                "profile": "default",
                "path": format!("/srv/work/{i}"),
                "status": "idle",
            });
            if i % 2 == 0 {
                s["parent_session_id"] = json!(CONDUCTOR);
            }
            s
        })
        .collect();
    sessions.insert(n / 2, conductor(CONDUCTOR, "conductor-ops", "error"));
    sessions
}

#[test]
fn a_50k_session_profile_is_read_and_its_errored_conductor_restarted() {
    let started = Instant::now();
    // One poll at start; every call of the simulator reads and writes 50,000 sessions.
    let wd = Wd::new()
        .env("SAFETY_POLL_INTERVAL_S", "3600")
        .env("SUBPROCESS_TIMEOUT_S", "120");
    wd.sessions(big_profile(50_000));
    let d = wd.spawn(&[]);
    let restarted = || {
        wd.restarts_with("restarted")
            .iter()
            .any(|r| r.id == CONDUCTOR)
    };
    d.wait_for(
        Duration::from_secs(120),
        "the conductor was never restarted",
        restarted,
    );
    let lists = wd.sim.calls_with(&["list", "--json"]);
    assert!(lists.iter().any(|c| c.contains(&"--all".to_string())));
    assert!(lists.iter().any(|c| c[..2] == ["-p", "default"]));
    assert_eq!(
        wd.sim.calls_with(&["session", "restart"]),
        [["-p", "default", "session", "restart", CONDUCTOR, "--json"]]
    );
    let stderr = d.stderr();
    assert!(!stderr.contains("unreadable"), "{stderr}");
    eprintln!(
        "50,000 sessions: restarted {:.1}s after the test began",
        started.elapsed().as_secs_f64()
    );
}

/// `(ts, argv)` of every call the simulator logged.
fn timed_calls(wd: &Wd) -> Vec<(f64, Vec<String>)> {
    wd.sim
        .call_log()
        .into_iter()
        .map(|c| (c.ts, c.argv))
        .collect()
}

#[test]
fn a_waiting_child_keeps_its_timer_while_its_profile_is_unreadable() {
    let kid = "a0b1c2d3-1755899999";
    let wd = Wd::new().env("WAITING_PATROL_THRESHOLD_S", "1");
    wd.sessions(vec![
        json!({"id": CONDUCTOR, "title": "conductor-ops", "group": "conductor", "profile": "work",
               "status": "running"}),
        json!({"id": kid, "title": "worker-1", "group": "srv", "profile": "work",
               "parent_session_id": CONDUCTOR, "status": "waiting", "pane": "Proceed?"}),
    ]);
    let d = wd.spawn(&[]);
    let sampled = || !wd.sim.calls_with(&["output", kid]).is_empty();
    d.wait_for(Duration::from_secs(10), "never sampled", sampled);
    // The profile's live list is garbage for three times the threshold.
    wd.sim
        .update_state(|s| s["faults"] = json!({"list": {"mode": "garbage"}}));
    let fault_at = crate::support::now();
    let garbage_read_late = || {
        timed_calls(&wd).iter().any(|(ts, argv)| {
            *ts >= fault_at + 3.0
                && argv.contains(&"list".to_owned())
                && !argv.contains(&"--all".to_owned())
        })
    };
    d.wait_for(
        Duration::from_secs(15),
        "the daemon stopped reading the profile",
        garbage_read_late,
    );
    let recovered = crate::support::now();
    wd.sim.update_state(|s| s["faults"] = json!({}));
    let nudged = || !wd.sim.calls_with(&["send", kid]).is_empty();
    d.wait_for(Duration::from_secs(10), "never nudged", nudged);
    let calls = timed_calls(&wd);
    let sent = calls
        .iter()
        .find(|(_, argv)| argv.contains(&"send".to_owned()))
        .map_or(f64::MAX, |(ts, _)| *ts);
    let samples_since = calls
        .iter()
        .filter(|(ts, argv)| *ts > recovered && *ts < sent && argv.contains(&"output".to_owned()))
        .count();
    // Timed since before the outage, the pane is overdue at the first look;
    // a timer started afresh would take a second's more samples.
    assert_eq!(samples_since, 1, "stderr:\n{}", d.stderr());
    assert!(d
        .stderr()
        .contains("statuses of profile 'work' are unreadable"));
}
