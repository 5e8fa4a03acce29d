//! The pane watch end to end on the simulator: the daemon with the
//! simulator's pane host running (its children are the panes' processes)
//! and the simulator as `tmux` first on `PATH`. The safety poll runs every
//! 30 s, so a restart within a few seconds of a death was set off by the
//! watch, not the poll. Where the kernel gives no pidfd (ENOSYS or EPERM in
//! a sandbox) a test accepts that the daemon said why and polls instead.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::fixtures::conductor;
use crate::support::sim::write_tmux_script;
use crate::support::watchdog::{Daemon, Wd};
use crate::support::{kill, wait_until};

/// The safety poll while the watch is not armed, and while it is.
const SLOW_POLL_S: &str = "30";
/// How soon a death the watch saw must have been restarted: well before
/// the 30 s poll.
const SEEN_WITHIN: Duration = Duration::from_secs(8);
/// Conductor `i`: its id, and its tmux name as agent-deck gives it.
fn ids(i: usize) -> (String, String) {
    (
        format!("{i:08x}-1755890000"),
        format!("agentdeck_conductor-{i}_ab12cd3{i}"),
    )
}

/// A running Claude conductor `i` in its tmux session.
fn live(i: usize) -> Value {
    let (id, name) = ids(i);
    let mut c = conductor(&id, &format!("conductor-{i}"), "running");
    c["tmux_session"] = json!(name);
    c
}

/// A watchdog whose `tmux` is the simulator, its safety poll at 30 s, the
/// backstop listing at 0.2 s, on the fleet `sessions` (the freshness guard
/// off, so a second death soon after a restart is restarted too).
fn watched(sessions: Vec<Value>) -> Wd {
    let wd = Wd::new()
        .env("SAFETY_POLL_INTERVAL_S", SLOW_POLL_S)
        .env("PANE_LIST_INTERVAL_S", "0.2");
    let bin = wd.home.path().join("bin");
    write_tmux_script(&bin);
    let path = format!("{}:{}", bin.display(), wd.env_value("PATH").unwrap());
    let wd = wd.env("PATH", &path);
    wd.sim
        .set_state(&json!({"profiles_exist": true, "sessions": sessions,
                             "freshness_window_s": 0}));
    wd
}

/// Waits until `n` `session restart` calls were made, within `SEEN_WITHIN`
/// of `since`, and `ours` of them made and verified by the daemon.
fn restarted_soon(wd: &Wd, d: &Daemon, n: usize, ours: usize, since: Instant) {
    assert!(
        wait_until(SEEN_WITHIN, || wd.restart_calls() >= n),
        "not restarted within {SEEN_WITHIN:?}; calls {:?}\nstderr:\n{}",
        wd.sim.calls(),
        d.stderr()
    );
    assert!(since.elapsed() < SEEN_WITHIN);
    // The call is logged as it starts: wait for it to be verified.
    let verified = wait_until(SEEN_WITHIN, || wd.restarts_with("restarted").len() >= ours);
    assert!(verified, "{:?}\nstderr:\n{}", wd.restarts(), d.stderr());
}

/// The watch's line for a single death of `id` with `proof`.
fn seen(id: &str, proof: &str) -> String {
    format!("pane watch: {id} ({proof}) dead")
}

/// The daemon's log says the pane watch saw `id` die with `proof`.
fn assert_seen(d: &Daemon, id: &str, proof: &str) {
    let log = d.stderr();
    assert!(log.contains(&seen(id, proof)), "{log}");
}

/// The simulator as tmux, run by the test (the way an operator's
/// `tmux kill-session` reaches the fleet's server).
fn kill_session(wd: &Wd, name: &str) {
    let out = wd.sim.run(&[
        "tmux",
        "-L",
        "default",
        "kill-session",
        "-t",
        &format!("={name}"),
    ]);
    assert!(out.status.success(), "{out:?}");
}

fn pid_alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

/// A watched conductor 0: its daemon, pane host, names and pane pid.
struct Watched {
    // Field order is drop order: the daemon goes before the pane host.
    d: Daemon,
    _host: crate::support::sim::PaneHost,
    wd: Wd,
    id: String,
    name: String,
    pid: i32,
}

/// Conductor 0 (`session`) watched by a daemon started with `args`, its
/// pane up: `None` (after the daemon said why) when the watch cannot arm.
fn watched_one(session: Value, args: &[&str]) -> Option<Watched> {
    let wd = watched(vec![session]);
    let host = wd.sim.pane_host();
    let (id, name) = ids(0);
    let pid = wd.sim.wait_for_panes(&[&name])[&name];
    let d = wd.spawn(args);
    wd.pane_watch_armed(&d).then_some(Watched {
        d,
        _host: host,
        wd,
        id,
        name,
        pid,
    })
}

#[test]
fn a_killed_tmux_session_is_restarted_well_before_the_poll() {
    let Some(Watched {
        d,
        wd,
        id,
        name,
        pid: _,
        _host,
    }) = watched_one(live(0), &[])
    else {
        return;
    };
    let killed = Instant::now();
    kill_session(&wd, &name);
    restarted_soon(&wd, &d, 1, 1, killed);
    // tmux drops the name before the agent exits of its SIGHUP: a listing
    // between the two sees it gone first, and either proof is the truth.
    let log = d.stderr();
    let proofs = ["process_exited", "gone_from_listing"];
    assert!(proofs.iter().any(|p| log.contains(&seen(&id, p))), "{log}");
    // The restarted session gets a new pane (a restart after a death may
    // name its tmux session anew).
    let renamed = wd.sim.session_state(&id).unwrap()["tmux_session"].clone();
    wd.sim.wait_for_panes(&[renamed.as_str().unwrap()]);
    assert_eq!(wd.restarts_with("restart").len(), 1, "{:?}", wd.restarts());
}

#[test]
fn an_agent_that_exits_is_restarted_well_before_the_poll() {
    let Some(Watched {
        d,
        wd,
        id,
        name: _,
        pid,
        _host,
    }) = watched_one(live(0), &[])
    else {
        return;
    };
    let killed = Instant::now();
    kill(pid, libc::SIGKILL);
    restarted_soon(&wd, &d, 1, 1, killed);
    assert_seen(&d, &id, "process_exited");
}

#[test]
fn a_killed_tmux_server_is_one_cascade_then_serial_revives() {
    let n = 3;
    // The watch, not a poll, saw the deaths (one "died at once"), and the
    // revives start when the settle ends, not at the 30 s poll after it.
    let wd = watched((0..n).map(live).collect())
        .env("CASCADE_THRESHOLD", "3")
        .env("CASCADE_WINDOW_S", "0.1")
        .env("CASCADE_WAIT_S", "1");
    let _host = wd.sim.pane_host();
    let names: Vec<String> = (0..n).map(|i| ids(i).1).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    wd.sim.wait_for_panes(&names);
    let d = wd.spawn(&[]);
    if !wd.pane_watch_armed(&d) {
        return;
    }
    let killed = Instant::now();
    // The server dies, and with it every session agent-deck reads.
    wd.sim.update_state(|s| s["tmux_server"] = json!("down"));
    wd.wait_for_escalations(&d, "cascade-detected", 1);
    assert!(
        killed.elapsed() < Duration::from_secs(2),
        "{:?}",
        killed.elapsed()
    );
    d.wait_for(SEEN_WITHIN, "no restart", || wd.restart_calls() == n);
    assert_eq!(wd.escalations_of("cascade-detected"), 1);
    let err = d.stderr();
    assert_eq!(err.matches("panes died at once").count(), 1, "{err}");
    let detected = wd.escalations_with("cascade-detected")[0].ts;
    let times: Vec<f64> = wd
        .sim
        .call_log()
        .into_iter()
        .filter(|c| c.argv.iter().any(|a| a == "restart"))
        .map(|c| c.ts)
        .collect();
    assert!(times[0] >= detected + 1.0, "the settle wait: {times:?}");
}

#[test]
fn an_agent_that_ignores_sighup_outlives_its_session_and_the_backstop_sees_it_gone() {
    let mut stubborn = live(0);
    stubborn["ignores_sighup"] = json!(true);
    let Some(Watched {
        d,
        wd,
        id,
        name,
        pid,
        _host,
    }) = watched_one(stubborn, &[])
    else {
        return;
    };
    let killed = Instant::now();
    kill_session(&wd, &name);
    restarted_soon(&wd, &d, 1, 1, killed);
    assert_seen(&d, &id, "gone_from_listing");
    // The agent lives on: no kernel handle fired, and the watch signals nothing.
    assert_eq!(wd.sim.orphans().get(&name), Some(&pid));
    assert!(pid_alive(pid));
}

#[test]
fn a_stopped_session_whose_pane_goes_is_never_restarted() {
    let Some(Watched {
        d,
        wd,
        id,
        name: _,
        pid: _,
        _host,
    }) = watched_one(live(0), &[])
    else {
        return;
    };
    // `session stop` kills the pane too.
    wd.sim.update_state(|s| {
        s["sessions"][0]["status"] = json!("stopped");
        s["sessions"][0]["tmux_alive"] = json!(false);
    });
    wd.sim.wait_for_panes(&[]);
    let looked = wait_until(SEEN_WITHIN, || {
        d.stderr().contains(&seen(&id, "process_exited"))
            && !wd.sim.calls_with(&["session", "show", &id]).is_empty()
    });
    assert!(looked, "the watch never saw the pane go: {}", d.stderr());
    // Nothing touches it in the second after.
    let touched = wait_until(Duration::from_secs(1), || {
        wd.restart_calls() > 0 || !wd.sim.calls_with(&["session", "start"]).is_empty()
    });
    assert!(!touched, "{:?}", wd.sim.calls());
    for verb in ["restart", "start", "send"] {
        assert!(
            wd.sim.calls_with(&["session", verb]).is_empty(),
            "{verb}: {:?}",
            wd.sim.calls()
        );
    }
    assert!(wd.restarts().is_empty(), "{:?}", wd.restarts());
}

#[test]
fn a_claude_restart_re_arms_on_the_new_pid_and_a_later_death_is_still_seen() {
    let Some(Watched {
        d,
        wd,
        id,
        name,
        pid: first,
        _host,
    }) = watched_one(live(0), &[])
    else {
        return;
    };
    // Someone else restarts it: `respawn-pane -k`, same name, new pid.
    assert!(wd.sim.run(&["session", "restart", &id]).status.success());
    let reached = wait_until(Duration::from_secs(5), || {
        wd.sim.panes().get(&name).is_some_and(|p| *p != first)
    });
    assert!(reached, "no new pid: {}", wd.sim.state());
    let second = wd.sim.panes()[&name];
    // Past the start grace, so the next death reads `error`; meanwhile the
    // respawn was no death.
    let ours = wait_until(Duration::from_secs(2), || {
        wd.restart_calls() > 1 || d.stderr().contains(&format!("pane watch: {id}"))
    });
    assert!(!ours, "the respawn was taken for a death: {}", d.stderr());
    let killed = Instant::now();
    kill(second, libc::SIGKILL);
    restarted_soon(&wd, &d, 2, 1, killed);
    // The kernel handle on the new pid fired: the watch re-armed on it.
    assert_seen(&d, &id, "process_exited");
}

#[test]
fn in_dry_run_a_death_is_only_recorded_and_tmux_only_listed() {
    let Some(Watched {
        d,
        wd,
        id,
        name: _,
        pid,
        _host,
    }) = watched_one(live(0), &["--dry-run"])
    else {
        return;
    };
    kill(pid, libc::SIGKILL);
    assert!(
        wait_until(SEEN_WITHIN, || wd.restarts().iter().any(|r| r.dry_run)),
        "no dry-run record: {}",
        d.stderr()
    );
    assert_seen(&d, &id, "process_exited");
    for verb in ["restart", "start", "send", "stop"] {
        assert!(
            wd.sim.calls_with(&["session", verb]).is_empty(),
            "{verb}: {:?}",
            wd.sim.calls()
        );
    }
    let tmux: Vec<Vec<String>> = wd
        .sim
        .calls()
        .into_iter()
        .filter(|c| c.first().is_some_and(|a| a == "tmux"))
        .collect();
    assert!(!tmux.is_empty());
    assert!(
        tmux.iter()
            .all(|c| c.iter().any(|a| a == "list-panes" || a == "display")),
        "{tmux:?}"
    );
}

#[test]
fn with_pane_watch_off_tmux_is_never_run_and_the_calls_are_todays() {
    let wd = watched(vec![live(0)])
        .env("PANE_WATCH", "off")
        .env("SAFETY_POLL_INTERVAL_S", "0.2");
    let _host = wd.sim.pane_host();
    let (_, name) = ids(0);
    let pid = wd.sim.wait_for_panes(&[&name])[&name];
    let d = wd.spawn(&[]);
    wd.wait_for_first_tick();
    wd.wait_for_more_ticks(3);
    let calls = wd.sim.calls();
    assert!(
        calls
            .iter()
            .all(|c| c[0] == "version" || c[..2] == ["list", "--all"] || c[0] == "-p"),
        "{calls:?}"
    );
    // A death is found by the poll, as without the watch.
    kill(pid, libc::SIGKILL);
    d.wait_for(SEEN_WITHIN, "the poll found no death", || {
        wd.restart_calls() == 1
    });
    assert!(!d.stderr().contains("pane watch:"), "{}", d.stderr());
    assert!(
        !wd.sim.calls().iter().any(|c| c[0] == "tmux"),
        "{:?}",
        wd.sim.calls()
    );
}

#[test]
fn armed_the_status_says_so_with_the_count_and_the_poll_slows_to_the_armed_interval() {
    let wd = watched(vec![live(0), live(1)])
        .env("SAFETY_POLL_INTERVAL_S", "0.2")
        .env("ARMED_POLL_INTERVAL_S", "2");
    let _host = wd.sim.pane_host();
    wd.sim.wait_for_panes(&[&ids(0).1, &ids(1).1]);
    let d = wd.spawn(&[]);
    if !wd.pane_watch_armed(&d) {
        return;
    }
    let armed = || wd.daemon_status()["pane_watch"]["armed"] == true;
    d.wait_for(
        Duration::from_secs(6),
        "daemon-status.json never said armed",
        armed,
    );
    let st = wd.daemon_status();
    assert_eq!(st["pane_watch"]["covered"], 2, "{st}");
    assert_eq!(st["pane_watch"]["why_not"], Value::Null, "{st}");
    let v = wd.status_json();
    assert_eq!(v["pane_watch"]["armed"], true, "{v}");
    assert_eq!(v["pane_watch"]["covered"], 2, "{v}");
    // At 0.2 s a 3 s window holds about 15 polls; armed, at most 2.
    let before = wd.sim.calls_with(&["list", "--all"]).len();
    std::thread::sleep(Duration::from_secs(3));
    let polls = wd.sim.calls_with(&["list", "--all"]).len() - before;
    assert!(polls <= 2, "{polls} polls in 3 s");
}

#[test]
fn after_our_restart_renames_the_tmux_session_the_next_death_is_still_seen() {
    let wd = watched(vec![live(0)]);
    // A slow show: the watch lists the new name before the verifying show
    // hands it over, as on the real CLI, whose restart returns after the
    // new tmux session is up.
    wd.sim.update_state(|s| s["delay_s"] = json!({"show": 0.6}));
    let _host = wd.sim.pane_host();
    let (id, name) = ids(0);
    wd.sim.wait_for_panes(&[&name]);
    let d = wd.spawn(&[]);
    if !wd.pane_watch_armed(&d) {
        return;
    }
    kill_session(&wd, &name);
    restarted_soon(&wd, &d, 1, 1, Instant::now());
    let renamed = wd.sim.session_state(&id).unwrap()["tmux_session"].clone();
    let renamed = renamed.as_str().unwrap().to_owned();
    assert_ne!(renamed, name);
    let pid = wd.sim.wait_for_panes(&[&renamed])[&renamed];
    // Past the start grace, so the next death reads `error`.
    let early = wait_until(Duration::from_secs(2), || wd.restart_calls() > 1);
    assert!(!early, "{}", d.stderr());
    // The new name came with the restart's own verifying show: the watch
    // asked for no fleet look about it.
    let calls = wd.sim.call_log();
    let restart = calls
        .iter()
        .position(|c| c.argv.iter().any(|a| a == "restart"));
    let lists: Vec<_> = calls[restart.unwrap()..]
        .iter()
        .filter(|c| c.argv.iter().any(|a| a == "list"))
        .collect();
    assert!(lists.is_empty(), "{lists:?}\n{}", d.stderr());
    // The renamed pane's death is the kernel's to see. (The first, a
    // kill-session, may be seen either way: tmux drops the name before the
    // agent exits of its SIGHUP.)
    let before = d.stderr().len();
    let killed = Instant::now();
    kill(pid, libc::SIGKILL);
    restarted_soon(&wd, &d, 2, 2, killed);
    let after = d.stderr()[before..].to_owned();
    assert!(after.contains(&seen(&id, "process_exited")), "{after}");
}
