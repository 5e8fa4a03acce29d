//! Black-box tests of the patrols (SPEC §6) against the simulated agent-deck.

use std::fs;
use std::time::Duration;

use agent_deck_watchdog::harness::Detail;
use serde_json::{json, Value};

use crate::support::files::write_script;
use crate::support::fixtures::{conductor, telegram_conductor, Poller, CONDUCTOR};
use crate::support::wait_until;
use crate::support::watchdog::{assert_ok, Wd};

const KID: &str = "a0b1c2d3-1755899999";

fn patrol_env(wd: Wd) -> Wd {
    wd.env("POLLER_CHECK_INTERVAL_S", "0.2")
        .env("WAITING_PATROL_THRESHOLD_S", "0.4")
}

#[test]
fn deaf_conductor_is_restarted_once_within_the_dedup_window() {
    let wd = patrol_env(Wd::new());
    telegram_conductor(&wd);
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(10), "no restart", || {
        wd.restart_calls() >= 1
    });
    // Many more checks run; the dedup window (an hour) holds.
    wd.wait_for_more_ticks(12);
    assert_eq!(wd.restart_calls(), 1);
    let rec = wd.restarts_with("poller-restart");
    assert_eq!(rec.len(), 1);
    assert_eq!(rec[0].id, CONDUCTOR);
}

#[test]
fn live_poller_means_no_restart() {
    let wd = patrol_env(Wd::new());
    let state_dir = telegram_conductor(&wd);
    let _poller = Poller::start(&wd.home.path().join("bin"), &state_dir);
    let d = wd.spawn(&[]);
    wd.wait_for_more_ticks(8);
    assert_eq!(wd.restart_calls(), 0, "stderr:\n{}", d.stderr());
}

#[test]
fn refused_poller_restart_is_not_a_success() {
    let wd = patrol_env(Wd::new());
    telegram_conductor(&wd);
    wd.sim
        .update_state(|s| s["sessions"][0]["on_restart"] = json!("skipped"));
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(10), "fewer than two restarts", || {
        wd.restart_calls() >= 2
    });
    let actions: Vec<_> = wd.restarts().into_iter().map(|r| r.action).collect();
    assert!(
        actions.iter().all(|a| *a == "poller-refused"),
        "{actions:?}"
    );
}

fn child(id: &str, parent: Option<&str>, pane_moving: bool) -> Value {
    let mut v = json!({"id": id, "title": format!("worker-{id}"), "group": "srv", "profile": "work",
                       "status": "waiting", "pane": "Do you want to proceed?", "pane_moving": pane_moving});
    if let Some(p) = parent {
        v["parent_session_id"] = json!(p);
    }
    v
}

#[test]
fn frozen_waiting_child_is_nudged_once_and_others_never() {
    let wd = patrol_env(Wd::new());
    let moving = "b0b1c2d3-1755899999";
    let orphan = "c0b1c2d3-1755899999";
    wd.sessions(vec![
        conductor(CONDUCTOR, "conductor-ops", "running"),
        child(KID, Some(CONDUCTOR), false),
        child(moving, Some(CONDUCTOR), true),
        child(orphan, None, false),
    ]);
    let d = wd.spawn(&[]);
    let what = "the frozen child was never nudged";
    wd.wait_for_call(&d, &["send", KID], Duration::from_secs(10), what);
    wd.wait_for_more_ticks(15);
    let sends = wd.sim.calls_with(&["session", "send"]);
    assert_eq!(sends.len(), 1, "{sends:?}");
    assert_eq!(
        sends[0],
        [
            "-p",
            "work",
            "session",
            "send",
            KID,
            "report status?",
            "--no-wait",
            "--json"
        ]
    );
    assert!(
        wd.sim.calls_with(&["output", orphan]).is_empty(),
        "a waiting session without a parent was sampled"
    );
    assert_eq!(wd.restarts_with("nudge").len(), 1);
}

#[test]
fn a_child_at_an_open_menu_is_never_nudged_while_a_plain_waiting_one_is() {
    for version in [None, Some("1.16.26")] {
        let wd = patrol_env(Wd::new());
        let menu = "d0b1c2d3-1755899999";
        let mut at_menu = child(menu, Some(CONDUCTOR), false);
        at_menu["substate"] = json!("interactive-menu");
        at_menu["pane"] = json!("Do you want to proceed?\n❯ 1. Yes\n  2. No\nEsc to cancel");
        wd.sessions(vec![
            conductor(CONDUCTOR, "conductor-ops", "running"),
            child(KID, Some(CONDUCTOR), false),
            at_menu,
        ]);
        wd.release(version);
        let d = wd.spawn(&[]);
        let what = format!("{version:?}: the plain waiting child was never nudged");
        wd.wait_for_call(&d, &["send", KID], Duration::from_secs(10), &what);
        wd.wait_for_more_ticks(10);
        assert!(
            wd.sim.calls_with(&["send", menu]).is_empty(),
            "{version:?}: typed into an open menu"
        );
        assert!(
            wd.sim.calls_with(&["output", menu]).is_empty(),
            "{version:?}"
        );
        assert_eq!(wd.restarts_with("nudge").len(), 1, "{version:?}");
    }
}

/// Needs the simulator's `"on_send": "typed"` (exit 1, `DELIVERY_FAILED`
/// with `"delivery":"typed"`, the message recorded in `sent`).
#[test]
fn a_nudge_typed_into_a_non_claude_pane_is_recorded_as_a_nudge_not_a_failure() {
    let wd = patrol_env(Wd::new());
    let mut kid = child(KID, Some(CONDUCTOR), false);
    kid["tool"] = json!("shell");
    kid["on_send"] = json!("typed");
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running"), kid]);
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(10), "no restart record", || {
        !wd.restarts().is_empty()
    });
    wd.wait_for_more_ticks(8);
    let records = wd.restarts();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].action, "nudge");
    assert_eq!(records[0].reason.as_deref(), Some("typed"));
    assert_eq!(
        wd.sim.calls_with(&["session", "send"]).len(),
        1,
        "not retried"
    );
    let sent = wd.sim.state()["sessions"][1]["sent"].clone();
    assert_eq!(sent, json!(["report status?"]));
}

#[test]
fn stale_cleanup_is_off_by_default_and_removes_once_when_on() {
    let stuck = |id: &str, title: &str, group: &str| {
        json!({"id": id, "title": title, "group": group, "profile": "default", "status": "error",
               "pane": "p", "on_restart": "no_effect", "on_start": "already_running"})
    };
    let watcher = "d0b1c2d3-1755899999";
    let one_off = "e0b1c2d3-1755899999";
    let fleet = || {
        vec![
            stuck(watcher, "meeting-watcher", "misc"),
            stuck(CONDUCTOR, "conductor-ops", "conductor"),
            stuck(one_off, "helper", "conductor"),
        ]
    };
    // Off by default.
    let wd = Wd::new();
    wd.sessions(fleet());
    let d = wd.spawn(&[]);
    wd.wait_for_more_ticks(10);
    assert!(wd.sim.calls_with(&["remove"]).is_empty());
    drop(d);
    // On: the watcher and the one-off in group conductor go, once each; the
    // escalation-critical conductor stays.
    let wd = Wd::new().env("STALE_ERROR_CLEANUP_S", "0.3");
    wd.sessions(fleet());
    let d = wd.spawn(&[]);
    assert!(
        wait_until(Duration::from_secs(10), || wd
            .sim
            .calls_with(&["remove"])
            .len()
            >= 2),
        "{}",
        d.stderr()
    );
    wd.wait_for_more_ticks(10);
    let mut removes = wd.sim.calls_with(&["remove"]);
    removes.sort();
    let remove = |id: &str| {
        vec![
            "-p".to_string(),
            "default".into(),
            "remove".into(),
            id.into(),
        ]
    };
    assert_eq!(removes, vec![remove(watcher), remove(one_off)]);
    let rec = wd
        .restarts_with("stale-removed")
        .into_iter()
        .next()
        .unwrap();
    let Detail::Stale { stuck_for_s } = rec.detail else {
        panic!("no time in error: {rec:?}");
    };
    assert!(stuck_for_s >= 0.3);
    drop(d);
    // Never in dry-run.
    let wd = Wd::new().env("STALE_ERROR_CLEANUP_S", "0.3");
    wd.sessions(fleet());
    let _d = wd.spawn(&["--dry-run"]);
    wd.wait_for_more_ticks(10);
    assert!(wd.sim.calls_with(&["remove"]).is_empty());
    let rec = wd.restarts_with("stale-removed");
    assert_eq!(rec.len(), 2, "each dry-run decision is recorded once");
    assert!(rec.iter().all(|r| r.dry_run));
}

#[test]
fn tick_with_patrols_costs_one_plus_p_plus_one_sample_per_waiting_child() {
    let wd = Wd::new();
    wd.sessions(vec![
        conductor(CONDUCTOR, "conductor-ops", "running"),
        json!({"id": "f1b1c2d3-1755899999", "title": "conductor-b", "group": "conductor", "profile": "default", "status": "idle"}),
        child(KID, Some(CONDUCTOR), false),
        json!({"id": "f2b1c2d3-1755899999", "title": "busy", "group": "srv", "profile": "work",
               "status": "running", "parent_session_id": CONDUCTOR}),
    ]);
    let out = wd.run(&["--once"]);
    assert_eq!(out.status.code(), Some(0));
    let calls = wd.sim.calls();
    // `version` once at start (not part of the tick), then list --all,
    // -p default list, -p work list, one pane sample of the waiting child,
    // and the first look at the idle conductor (SPEC §15: a turn's end).
    assert_eq!(calls[0], ["version"], "{calls:#?}");
    assert_eq!(calls.len(), 6, "{calls:#?}");
    assert_eq!(wd.sim.calls_with(&["output", KID, "--pane"]).len(), 1);
    let first_look = ["output", "f1b1c2d3-1755899999", "--pane"];
    assert_eq!(wd.sim.calls_with(&first_look).len(), 1);
}

#[test]
fn prompt_resume_runs_claude_once_then_starts_again() {
    let config_dir = "/srv/claude-personal";
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("claude.log");
    write_script(
        &bin.path().join("claude"),
        &format!(
            "#!/bin/sh\necho \"$*|CLAUDE_CONFIG_DIR=$CLAUDE_CONFIG_DIR|TSD=${{TELEGRAM_STATE_DIR-unset}}\" >> '{}'\n",
            log.display()
        ),
    );
    let wd = Wd::new();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        wd.env_value("PATH").unwrap_or_default()
    );
    let wd = wd
        .env("PATH", &path)
        .env("PROMPT_RESUME_PROFILES", &format!("personal={config_dir}"))
        .env("TELEGRAM_STATE_DIR", "/tmp/should-not-leak");
    let mut c = conductor(CONDUCTOR, "conductor-ops", "error");
    c["profile"] = json!("personal");
    c["on_restart"] = json!("no_effect");
    c["transcript"] = json!("... Deferred tool marker reached ...");
    c["claude_session_id"] = json!("5d0e9c1a-uuid");
    // Its tmux session is gone, so a start is not refused as "already running".
    c["tmux_alive"] = json!(false);
    wd.sim.set_state(&json!({"profiles_exist": true, "sessions": [c], "faults": {"start": {"mode": "exit1", "count": 1}}}));
    let out = wd.run(&["--once"]);
    assert_ok(&out);
    let claude = fs::read_to_string(&log).expect("claude never ran");
    assert_eq!(claude.lines().count(), 1, "{claude}");
    assert!(claude.starts_with("--resume 5d0e9c1a-uuid -p "), "{claude}");
    assert!(
        claude.contains(&format!("CLAUDE_CONFIG_DIR={config_dir}")) && claude.contains("TSD=unset"),
        "{claude}"
    );
    assert_eq!(wd.sim.calls_with(&["session", "start"]).len(), 2);
    let actions: Vec<_> = wd.restarts().into_iter().map(|r| r.action).collect();
    assert_eq!(actions, ["restart", "prompt-resume-attempt", "restarted"]);
}

#[test]
fn dry_run_patrols_decide_and_record_but_send_and_restart_nothing() {
    let wd = patrol_env(Wd::new());
    telegram_conductor(&wd);
    wd.sim.update_state(|s| {
        s["sessions"]
            .as_array_mut()
            .unwrap()
            .push(child(KID, Some(CONDUCTOR), false));
    });
    let d = wd.spawn(&["--dry-run"]);
    d.wait_for(
        Duration::from_secs(10),
        "no nudge or no poller-restart record",
        || !wd.restarts_with("nudge").is_empty() && !wd.restarts_with("poller-restart").is_empty(),
    );
    wd.wait_for_more_ticks(5);
    assert_eq!(wd.restart_calls(), 0);
    assert!(wd.sim.calls_with(&["session", "send"]).is_empty());
    assert_eq!(wd.restarts_with("poller-restart").len(), 1);
    assert_eq!(wd.restarts_with("nudge").len(), 1);
    assert!(wd.restarts().iter().all(|r| r.dry_run));
}
