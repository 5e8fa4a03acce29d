//! Black-box tests at scale: the built binary against the fake agent-deck
//! with a profile far past what a capped read of the CLI's answer could hold
//! (SPEC §4: an unreadable list is unknown; a big one must not become
//! unreadable).

mod common;
mod harness;

use std::time::{Duration, Instant};

use common::wait_until;
use harness::{conductor, Wd, CONDUCTOR};
use serde_json::{json, Value};

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
    // One poll at start; every call of the fake reads and writes 50,000 sessions.
    let wd = Wd::new()
        .env("SAFETY_POLL_INTERVAL_S", "3600")
        .env("SUBPROCESS_TIMEOUT_S", "120");
    wd.sessions(big_profile(50_000));
    let d = wd.spawn(&[]);
    let restarted = || {
        wd.restarts_with("restarted")
            .iter()
            .any(|r| r["id"] == CONDUCTOR)
    };
    assert!(
        wait_until(Duration::from_secs(120), restarted),
        "the conductor was never restarted; stderr:\n{}",
        d.stderr()
    );
    let lists = wd.fake.calls_with(&["list", "--json"]);
    assert!(lists.iter().any(|c| c.contains(&"--all".to_string())));
    assert!(lists.iter().any(|c| c[..2] == ["-p", "default"]));
    assert_eq!(
        wd.fake.calls_with(&["session", "restart"]),
        [["-p", "default", "session", "restart", CONDUCTOR, "--json"]]
    );
    let stderr = d.stderr();
    assert!(!stderr.contains("unreadable"), "{stderr}");
    eprintln!(
        "50,000 sessions: restarted {:.1}s after the test began",
        started.elapsed().as_secs_f64()
    );
}
