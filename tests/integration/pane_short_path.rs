//! SPEC §5.3's short path, black-box: a conductor whose pane process the
//! kernel saw exit is restarted with one `session show` between the death
//! and the `session restart` call, and a liveness record that says so
//! (`proof: "process_exited"`, `gap_s: 0`, the pane not sampled); a stopped
//! one is left alone; with `PANE_WATCH=off` the two samples stay. The
//! simulator's pane host plays the tmux server, a `tmux` script first on
//! `PATH` answers the watch's listing, and the safety poll is slow (30 s),
//! so only the watch can see the death in time.

use std::fs;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fixtures::conductor;
use crate::support::sim::{write_tmux_script, PaneHost};
use crate::support::watchdog::{Daemon, Wd};
use crate::support::{kill, wait_until};

const ID: &str = "c0ffee00-1755891234";
const NAME: &str = "agentdeck_conductor-ops_c0ffee00";

/// A watchdog with the simulator as tmux first on `PATH`, the pane listing
/// fast and the safety poll slow; one running Claude conductor in tmux
/// session [`NAME`].
fn installed(watch: &str) -> Wd {
    let wd = Wd::new()
        .env("PANE_WATCH", watch)
        .env("PANE_LIST_INTERVAL_S", "0.2")
        .env("SAFETY_POLL_INTERVAL_S", "30")
        .env("ARMED_POLL_INTERVAL_S", "30");
    let bin = wd.home.path().join("bin");
    write_tmux_script(&bin);
    let path = format!("{}:{}", bin.display(), wd.env_value("PATH").unwrap());
    let wd = wd.env("PATH", &path);
    let mut c = conductor(ID, "conductor-ops", "running");
    c["tmux_session"] = json!(NAME);
    wd.sessions(vec![c]);
    wd
}

/// The pane host, the conductor's pane pid, and the daemon after its
/// first poll.
fn started(wd: &Wd) -> (PaneHost, i32, Daemon) {
    let host = wd.sim.pane_host();
    let pid = wd.sim.wait_for_panes(&[NAME])[NAME];
    let d = wd.spawn(&[]);
    wd.wait_for_first_tick();
    (host, pid, d)
}

/// The agent-deck calls (not tmux's) logged from `from` on.
fn deck_calls(wd: &Wd, from: usize) -> Vec<Vec<String>> {
    let calls = wd.sim.calls().into_iter().skip(from);
    calls.filter(|c| !c.iter().any(|a| a == "tmux")).collect()
}

#[test]
fn a_killed_pane_is_restarted_from_two_shows_a_settle_apart_with_the_kernel_s_proof_recorded() {
    let wd = installed("auto");
    let (_host, pid, d) = started(&wd);
    if !wd.pane_watch_armed(&d) {
        return;
    }
    let from = wd.sim.calls().len();
    kill(pid, 9);
    d.wait_for(Duration::from_secs(10), "never restarted", || {
        wd.restart_calls() >= 1
    });
    let calls = deck_calls(&wd, from);
    let restart = calls
        .iter()
        .position(|c| c.iter().any(|a| a == "restart"))
        .unwrap();
    // Two shows a settle apart (an `error` agent-deck reads for the instant
    // its own restart takes is no confirmation, #38), no pane sample.
    let before = &calls[..restart];
    assert_eq!(before.len(), 2, "two calls before the restart: {before:?}");
    assert!(
        before.iter().all(|c| c.iter().any(|a| a == "show")),
        "{before:?}"
    );
    assert!(
        wait_until(Duration::from_secs(10), || !wd.liveness().is_empty()),
        "no liveness record"
    );
    let rec = &wd.liveness()[0];
    assert_eq!(
        (rec.reason.as_str(), rec.decision.as_str(), rec.gap_s),
        ("confirmed_dead", "restart", 0.05)
    );
    assert_eq!(rec.reads.len(), 2);
    assert!(!rec.pane.sampled);
    let line = fs::read_to_string(wd.watchdog_dir().join("liveness.log")).unwrap();
    assert!(line.contains(r#""proof":"process_exited""#), "{line}");
    assert!(
        !deck_calls(&wd, from)
            .iter()
            .any(|c| c.iter().any(|a| a == "--pane")),
        "no pane sample"
    );
}

#[test]
fn a_stopped_session_whose_pane_went_is_never_restarted() {
    let wd = installed("auto");
    let (_host, _pid, d) = started(&wd);
    if !wd.pane_watch_armed(&d) {
        return;
    }
    let from = wd.sim.calls().len();
    // As `session stop` leaves it: stopped, its tmux session gone (the host
    // then kills the pane's process).
    wd.sim.update_state(|st| {
        let s = &mut st["sessions"][0];
        s["status"] = json!("stopped");
        s["tmux_alive"] = json!(false);
    });
    let looked = wait_until(Duration::from_secs(10), || {
        deck_calls(&wd, from)
            .iter()
            .any(|c| c.iter().any(|a| a == "show"))
    });
    assert!(
        looked,
        "the death was never looked at; stderr:\n{}",
        d.stderr()
    );
    // Give a wrong restart time to happen: the watch, the consumer and the
    // restart worker all run within milliseconds of the show.
    assert!(!wait_until(Duration::from_secs(1), || wd.restart_calls() > 0));
    assert!(wd.restarts().is_empty(), "{:?}", wd.restarts());
    assert!(wd.liveness().is_empty());
}

#[test]
fn with_pane_watch_off_a_killed_pane_keeps_the_two_samples() {
    let wd = installed("off").env("SAFETY_POLL_INTERVAL_S", "0.2");
    let (_host, pid, d) = started(&wd);
    kill(pid, 9);
    d.wait_for(Duration::from_secs(10), "never confirmed", || {
        !wd.liveness().is_empty()
    });
    let rec = &wd.liveness()[0];
    assert_eq!(rec.reads.len(), 2, "{rec:?}");
    assert!(rec.gap_s > 0.0);
    let line = fs::read_to_string(wd.watchdog_dir().join("liveness.log")).unwrap();
    assert!(!line.contains("proof"), "{line}");
    assert!(!wd
        .sim
        .calls()
        .iter()
        .any(|c| c.iter().any(|a| a == "list-panes")));
}

/// The tmux sessions restarts spawned and the simulated store did not save.
fn unsaved_tmux(wd: &Wd) -> Vec<String> {
    let names = wd.sim.state()["unsaved_tmux"].as_array().cloned();
    let names = names.unwrap_or_default().into_iter();
    names
        .filter_map(|n| n.as_str().map(str::to_owned))
        .collect()
}

/// The `tmux kill-session` calls, by the name they gave.
fn kills(wd: &Wd) -> Vec<String> {
    let calls = wd.sim.calls_with(&["kill-session"]).into_iter();
    calls.filter_map(|c| c.last().cloned()).collect()
}

/// The conductor killed while its restart's save finds the store locked:
/// the restart record, and the tmux session it left unsaved.
fn left_unsaved(wd: &Wd, d: &Daemon, pid: i32) -> String {
    // The store is locked as the restart saves: its tmux session is
    // spawned and runs, the store keeps the old name. Reads go on, as they
    // do under another process's write transaction (measured on 1.14.0).
    wd.sim
        .update_state(|s| s["sessions"][0]["on_restart"] = json!("unsaved"));
    kill(pid, 9);
    d.wait_for(Duration::from_secs(15), "no restart-unsaved record", || {
        wd.restarts_with("restart-unsaved").len() == 1
    });
    let rec = &wd.restarts_with("restart-unsaved")[0];
    let reason = rec.reason.clone().unwrap_or_default();
    let unsaved = unsaved_tmux(wd);
    assert_eq!(unsaved.len(), 1, "{unsaved:?}");
    assert!(
        reason.contains("database is locked") && reason.contains(&unsaved[0]),
        "{reason}"
    );
    unsaved[0].clone()
}

#[test]
fn a_restart_the_locked_store_did_not_save_is_never_followed_by_a_second_agent() {
    let wd = installed("auto");
    let (_host, pid, d) = started(&wd);
    if !wd.pane_watch_armed(&d) {
        return;
    }
    let first = left_unsaved(&wd, &d, pid);
    wd.wait_for_escalations(&d, "store-locked", 1);
    // The store still takes no write: the one try at ending the unsaved
    // session leaves another, and then it is held.
    d.wait_for(Duration::from_secs(10), "a held tick", || {
        wd.restarts_with("skipped")
            .iter()
            .any(|r| r.reason.as_deref() == Some("unsaved_agent"))
    });
    assert!(
        wd.sim.calls_with(&["session", "start"]).is_empty(),
        "no start: {}",
        d.stderr()
    );
    assert_eq!(kills(&wd), [format!("={first}")], "{}", d.stderr());
    let left = unsaved_tmux(&wd);
    assert!(left.len() == 1 && left[0] != first, "one agent: {left:?}");
    assert_eq!(wd.restarts_with("unsaved-ended").len(), 1);
    assert_eq!(wd.restart_calls(), 2, "{}", d.stderr());
    assert!(!wait_until(Duration::from_secs(2), || wd.restart_calls() > 2));
    assert_eq!(wd.escalations_of("store-locked"), 1);
    assert_eq!(wd.escalations_of("restart-failed"), 0);
}

#[test]
fn a_restart_the_locked_store_did_not_save_is_finished_once_the_store_takes_writes_again() {
    let wd = installed("auto")
        .env("SAFETY_POLL_INTERVAL_S", "0.5")
        .env("POST_RESTART_COOLDOWN_S", "3");
    let (_host, pid, d) = started(&wd);
    if !wd.pane_watch_armed(&d) {
        return;
    }
    let unsaved = left_unsaved(&wd, &d, pid);
    // The lock is gone: the next restart saves.
    wd.sim
        .update_state(|s| s["sessions"][0]["on_restart"] = Value::Null);
    d.wait_for(Duration::from_secs(15), "never ended", || {
        wd.restarts_with("restarted").len() == 1
    });
    let ended = wd.restarts_with("unsaved-ended");
    assert_eq!(ended.len(), 1, "{}", d.stderr());
    let reason = ended[0].reason.clone().unwrap_or_default();
    assert!(reason.contains(&unsaved), "{reason}");
    // That one tmux session, by its exact name, and nothing else.
    assert_eq!(kills(&wd), [format!("={unsaved}")]);
    assert!(unsaved_tmux(&wd).is_empty());
    assert_eq!(wd.restart_calls(), 2, "{}", d.stderr());
    assert!(wd.sim.calls_with(&["session", "start"]).is_empty());
    let row = wd.sim.session_state(ID).unwrap();
    assert_eq!(row["status"], "running", "{row}");
    assert!(d
        .stderr()
        .contains(&format!("ended tmux session {unsaved}")));
    assert_eq!(wd.escalations_of("store-locked"), 1);
    assert_eq!(wd.escalations_of("restart-failed"), 0);
}
