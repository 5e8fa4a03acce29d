//! Black-box tests of auto-restart: the built binary against the simulated
//! agent-deck, one promise of SPEC §4–§5 per test.

use std::fs;
use std::time::{Duration, Instant};

use agent_deck_sim::NEWEST;
use agent_deck_watchdog::harness::Detail;
use serde_json::json;

use crate::support::files::write_hook;
use crate::support::fixtures::{auth_held, conductor, crash_looping, never_started, CONDUCTOR};
use crate::support::wait_until;
use crate::support::watchdog::{assert_ok, Wd};

const SECS_10: Duration = Duration::from_secs(10);

/// A conductor dies and its hook file is renamed into the spool: the daemon
/// `wd` (safety poll far off) restarts it within a second. Returns the
/// daemon's stderr.
fn hook_rename_restarts_within_a_second(wd: &Wd) -> String {
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let mut d = wd.spawn(&[]);
    wd.wait_until_quiet();
    wd.set_status("error");
    let written = Instant::now();
    write_hook(&wd.hooks, CONDUCTOR, "dead");
    d.wait_for(SECS_10, "no restart", || wd.restart_calls() == 1);
    let took = written.elapsed();
    assert!(took < Duration::from_secs(1), "restart took {took:?}");
    let call = &wd.sim.calls_with(&["session", "restart"])[0];
    assert_eq!(
        call,
        &["-p", "default", "session", "restart", CONDUCTOR, "--json"]
    );
    assert!(d.alive());
    d.stderr()
}

#[test]
fn id_with_hyphen_reaches_restart_through_inotify_within_a_second() {
    hook_rename_restarts_within_a_second(&Wd::new().env("SAFETY_POLL_INTERVAL_S", "30"));
}

#[test]
fn without_kernel_notifications_a_hook_rename_still_restarts_within_a_second() {
    // WATCH_BACKEND=scan stands in for an inotify that cannot be armed
    // (max_user_instances or max_user_watches used up): thread A scans.
    let wd = Wd::new()
        .env("SAFETY_POLL_INTERVAL_S", "30")
        .env("WATCH_BACKEND", "scan");
    let stderr = hook_rename_restarts_within_a_second(&wd);
    assert!(stderr.contains("WATCH_BACKEND=scan"), "{stderr}");
}

#[test]
fn without_kernel_notifications_a_sandbox_hook_and_a_late_hooks_dir_are_still_seen() {
    let wd = Wd::new()
        .env("SAFETY_POLL_INTERVAL_S", "30")
        .env("WATCH_BACKEND", "scan");
    fs::remove_dir(&wd.hooks).unwrap();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let mut d = wd.spawn(&[]);
    wd.wait_until_quiet();
    let sandbox = wd.hooks.join("sandbox").join(CONDUCTOR);
    fs::create_dir_all(&sandbox).unwrap();
    wd.wait_until_quiet();
    wd.set_status("error");
    write_hook(&sandbox, CONDUCTOR, "dead");
    d.wait_for(
        Duration::from_secs(3),
        "no restart from the sandbox hook",
        || wd.restart_calls() == 1,
    );
    assert!(d.alive());
}

#[test]
fn hooks_dir_created_after_start_and_recreated_while_running() {
    let wd = Wd::new().env("SAFETY_POLL_INTERVAL_S", "30");
    fs::remove_dir(&wd.hooks).unwrap();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let d = wd.spawn(&[]);
    wd.wait_for_first_tick();
    fs::create_dir(&wd.hooks).unwrap();
    // The watcher re-arms on its own; keep writing until a hook is seen.
    let shows = || wd.sim.calls_with(&["session", "show", CONDUCTOR]).len();
    d.wait_for(SECS_10, "hook in a late-created dir was never seen", || {
        write_hook(&wd.hooks, CONDUCTOR, "dead");
        shows() >= 1
    });
    fs::remove_dir_all(&wd.hooks).unwrap();
    fs::create_dir(&wd.hooks).unwrap();
    let before = shows();
    d.wait_for(SECS_10, "hook in a re-created dir was never seen", || {
        write_hook(&wd.hooks, CONDUCTOR, "dead");
        std::thread::sleep(Duration::from_millis(100));
        shows() > before
    });
}

#[test]
fn sandbox_hook_triggers_but_generation_and_dot_files_do_not() {
    let wd = Wd::new().env("SAFETY_POLL_INTERVAL_S", "30");
    let sandboxed = "a1b2c3d4-1755890000";
    wd.sessions(vec![
        conductor(CONDUCTOR, "conductor-ops", "running"),
        conductor(sandboxed, "conductor-box", "running"),
    ]);
    let d = wd.spawn(&[]);
    wd.wait_until_quiet();
    let shows = |id: &str| wd.sim.calls_with(&["session", "show", id]).len();
    // Ignored names.
    fs::write(wd.hooks.join(format!("{CONDUCTOR}.generation.json")), "{}").unwrap();
    fs::write(wd.hooks.join(format!(".{CONDUCTOR}.json")), "{}").unwrap();
    fs::write(wd.hooks.join(format!("{CONDUCTOR}.lock")), "").unwrap();
    fs::write(wd.hooks.join(format!("{CONDUCTOR}.sid")), "").unwrap();
    // Sandboxed session, directory created after start.
    let dir = wd.hooks.join("sandbox").join(sandboxed);
    fs::create_dir_all(&dir).unwrap();
    d.wait_for(SECS_10, "sandbox hook not seen", || {
        write_hook(&dir, sandboxed, "dead");
        std::thread::sleep(Duration::from_millis(100));
        shows(sandboxed) >= 1
    });
    assert_eq!(
        shows(CONDUCTOR),
        0,
        "an ignored file name triggered a status check"
    );
}

#[test]
fn hook_flood_keeps_the_daemon_up_and_memory_flat() {
    let wd = Wd::new()
        .env("SAFETY_POLL_INTERVAL_S", "30")
        .env("EVENT_QUEUE_MAXSIZE", "10");
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let mut d = wd.spawn(&[]);
    wd.wait_until_quiet();
    let rss_before = d.rss_kib();
    let flood_started = Instant::now();
    for i in 0..20_000u32 {
        write_hook(&wd.hooks, &format!("{:08x}-1755890000", i), "running");
    }
    let flood_took = flood_started.elapsed();
    wd.set_status("error");
    write_hook(&wd.hooks, CONDUCTOR, "dead");
    d.wait_for(
        Duration::from_secs(20),
        "the real conductor was not restarted after the flood",
        || wd.restart_calls() >= 1,
    );
    assert!(d.alive(), "daemon died in the flood");
    assert!(
        d.stderr().contains("dropped the oldest event"),
        "overflow was not logged"
    );
    let rss_after = d.rss_kib();
    assert!(
        rss_after < rss_before + 8 * 1024,
        "rss grew from {rss_before} KiB to {rss_after} KiB"
    );
    // Unknown ids refresh the session list, and overflow rescans poll, each at
    // most about once a second: about two calls a second of flood.
    let lists = wd.sim.calls_with(&["list", "--all"]).len();
    let secs = flood_took.as_secs_f64().ceil() as usize + 2;
    eprintln!(
        "flood of {:.1}s: {lists} list --all calls",
        flood_took.as_secs_f64()
    );
    assert!(
        lists <= 2 * secs + 2,
        "{lists} list --all calls for a {secs}s flood of unknown ids"
    );
}

#[test]
fn non_critical_and_stopped_sessions_are_never_restarted() {
    let wd = Wd::new();
    wd.sessions(vec![
        json!({"id": "a0b1c2d3-1755899999", "title": "worker-1", "group": "srv", "profile": "default", "status": "error"}),
        json!({"id": "b0b1c2d3-1755899999", "title": "conductor-off", "group": "conductor", "profile": "default", "status": "stopped"}),
        json!({"id": "c0b1c2d3-1755899999", "title": "starting", "group": "conductor", "profile": "default", "status": "starting"}),
    ]);
    let out = wd.run(&["--once"]);
    assert_ok(&out);
    assert_eq!(wd.restart_calls(), 0);
    assert!(wd.sim.calls_with(&["session", "start"]).is_empty());
}

#[test]
fn a_hook_for_a_session_the_cache_does_not_know_refreshes_it_and_restarts_the_session() {
    let wd = Wd::new().env("SAFETY_POLL_INTERVAL_S", "30");
    wd.sessions(vec![]);
    let mut d = wd.spawn(&[]);
    wd.wait_until_quiet();
    // A conductor that did not exist at the first poll, and is dead already.
    let late = "d0b1c2d3-1755899999";
    wd.sessions(vec![conductor(late, "conductor-late", "error")]);
    write_hook(&wd.hooks, late, "dead");
    d.wait_for(
        SECS_10,
        "no restart long before the next safety poll",
        || wd.restart_calls() == 1,
    );
    let call = &wd.sim.calls_with(&["session", "restart"])[0];
    assert!(call.contains(&late.to_string()), "{call:?}");
    assert!(d.alive());
}

#[test]
fn sighup_rereads_the_opt_in_markers() {
    let wd = Wd::new().env("SAFETY_POLL_INTERVAL_S", "30");
    let worker = "a0b1c2d3-1755899999";
    wd.sessions(vec![
        json!({"id": worker, "title": "worker-1", "group": "srv",
                            "profile": "default", "status": "running", "pane": "p"}),
    ]);
    let mut d = wd.spawn(&[]);
    wd.wait_until_quiet();
    // Opted in while the daemon runs, with no safety poll due for 30 s.
    fs::write(wd.watchdog_dir().join("autorestart").join(worker), "").unwrap();
    wd.set_status("error");
    crate::support::kill(d.pid(), libc::SIGHUP);
    assert!(
        wait_until(SECS_10, || d.stderr().contains("SIGHUP: re-reading")),
        "{}",
        d.stderr()
    );
    write_hook(&wd.hooks, worker, "dead");
    d.wait_for(SECS_10, "the opted-in worker was not restarted", || {
        wd.restart_calls() == 1
    });
    assert!(d.alive());
}

#[test]
fn marker_opt_in_restarts_a_worker_and_traversal_ids_never_touch_the_filesystem() {
    let wd = Wd::new();
    let worker = "a0b1c2d3-1755899999";
    let sneaky = "../escape";
    wd.sessions(vec![
        json!({"id": worker, "title": "worker-1", "group": "srv", "profile": "default", "status": "error", "pane": "p", "claude_session_id": "c1a0de00-1"}),
        json!({"id": sneaky, "title": "worker-2", "group": "srv", "profile": "default", "status": "error", "pane": "p", "claude_session_id": "c1a0de00-2"}),
    ]);
    fs::create_dir_all(wd.watchdog_dir().join("autorestart")).unwrap();
    fs::write(wd.watchdog_dir().join("autorestart").join(worker), "").unwrap();
    // What autorestart/../escape would resolve to.
    fs::write(wd.watchdog_dir().join("escape"), "").unwrap();
    let out = wd.run(&["--once"]);
    assert_ok(&out);
    let restarts = wd.sim.calls_with(&["session", "restart"]);
    assert_eq!(restarts.len(), 1);
    assert!(restarts[0].contains(&worker.to_string()));
}

#[test]
fn exactly_rate_limit_max_restarts_then_one_rate_limit_escalation() {
    let wd = Wd::new().env("RATE_LIMIT_MAX", "3");
    let c = crash_looping(CONDUCTOR, "conductor-ops");
    wd.sessions(vec![c]);
    let d = wd.spawn(&[]);
    wd.wait_for_escalations(&d, "rate-limit", 1);
    // Several more ticks: nothing more may happen.
    wd.wait_for_more_ticks(5);
    assert_eq!(wd.restart_calls(), 3);
    assert_eq!(wd.escalations_of("rate-limit"), 1);
    let held = wd.restarts_with("skipped");
    assert_eq!(
        held.len(),
        1,
        "a held session is recorded once, not every tick: {held:?}"
    );
    assert_eq!(held[0].reason.as_deref(), Some("budget_spent"));
    // Two failures in a row escalate restart-failed; "already running" is a failure.
    assert_eq!(wd.escalations_of("restart-failed"), 1);
    let failed = wd.restarts_with("restart-failed").len();
    assert_eq!(failed, 3);
    let e = &wd.escalations_with("rate-limit")[0];
    assert_eq!(e.sid.as_deref(), Some(CONDUCTOR));
    assert!(e.message.contains("keeps crashing"));
    let raw = fs::read_to_string(wd.watchdog_dir().join("escalations.log")).unwrap();
    let ts = raw.split("\"ts\":").nth(1).unwrap();
    let ts = &ts[..ts.find([',', '}']).unwrap()];
    assert!(ts.contains('.'), "ts is written as a float: {ts}");
}

#[test]
fn moving_pane_is_left_alone_and_keeps_its_budget() {
    let wd = Wd::new()
        .env("RATE_LIMIT_MAX", "1")
        .env("LIVENESS_SKIP_ESCALATE_AFTER", "3");
    let mut c = conductor(CONDUCTOR, "conductor-ops", "error");
    c["pane_moving"] = json!(true);
    wd.sessions(vec![c]);
    let d = wd.spawn(&[]);
    d.wait_for(SECS_10, "too few pane_active records", || {
        wd.liveness_with("pane_active").len() >= 4
    });
    assert_eq!(wd.restart_calls(), 0);
    assert_eq!(wd.escalations_of("liveness-mismatch"), 1);
    assert_eq!(
        wd.escalations_of("rate-limit"),
        0,
        "skips must not spend the budget"
    );
    let rec = wd.liveness_with("pane_active").into_iter().next().unwrap();
    assert_eq!(rec.decision, "skip");
    assert!(rec.pane.changed);
    assert_eq!(rec.pane.first.len(), 16);
    let text = fs::read_to_string(wd.watchdog_dir().join("liveness.log")).unwrap();
    assert!(
        !text.contains("frozen pane") && !text.contains("tick "),
        "pane text leaked into liveness.log"
    );
    // The pane stops moving: the one slot is still there.
    wd.sim
        .update_state(|s| s["sessions"][0]["pane_moving"] = json!(false));
    d.wait_for(SECS_10, "no restart once the pane stopped", || {
        wd.restart_calls() == 1
    });
}

#[test]
fn auth_hold_is_not_restarted_and_escalates_once() {
    let wd = Wd::new();
    let mut c = conductor(CONDUCTOR, "conductor-ops", "error");
    c["substate"] = json!("auth-401");
    c["auth_hold"] = json!({"boot_attempts": 1, "evidence": "API Error: 401 SECRET-EVIDENCE", "reason": "auth_death",
                             "remedy": "log in again", "ts": 1755891300});
    wd.sessions(vec![c]);
    let d = wd.spawn(&[]);
    d.wait_for(SECS_10, "too few auth_hold records", || {
        wd.liveness_with("auth_hold").len() >= 3
    });
    assert_eq!(wd.restart_calls(), 0);
    assert_eq!(wd.escalations_of("auth-hold"), 1);
    let rec = wd.liveness_with("auth_hold").into_iter().next().unwrap();
    assert_eq!(rec.auth_hold_reason.as_deref(), Some("auth_death"));
    for f in ["liveness.log", "restart.log", "escalations.log"] {
        let text = fs::read_to_string(wd.watchdog_dir().join(f)).unwrap_or_default();
        assert!(
            !text.contains("SECRET-EVIDENCE"),
            "auth-hold evidence leaked into {f}"
        );
    }
    assert!(!d.stderr().contains("SECRET-EVIDENCE"));
}

#[test]
fn cli_refusal_is_recorded_and_never_falls_back_to_start() {
    let wd = Wd::new();
    let mut c = conductor(CONDUCTOR, "conductor-ops", "error");
    c["on_restart"] = json!("skipped");
    wd.sessions(vec![c]);
    let out = wd.run(&["--once"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(wd.restart_calls(), 1);
    assert!(wd.sim.calls_with(&["session", "start"]).is_empty());
    let refused = wd.restarts_with("cli-refused");
    assert_eq!(refused.len(), 1);
    assert!(refused[0].reason.as_deref().unwrap().contains("freshness"));
}

/// The simulator's freshness window in these tests, short so its end is
/// seen in seconds; agent-deck's is 60 s.
const WINDOW_S: f64 = 5.0;

/// A daemon whose safety poll is far off (so every retry comes from its
/// schedule) and whose burst guard trips on the third restart call within a
/// minute, over conductors `ids` that died just after a start: agent-deck's
/// stored status still says `running` (no notify-daemon has written it), so
/// its freshness guard refuses their restarts for [`WINDOW_S`].
fn freshly_dead(ids: &[&str]) -> Wd {
    let wd = Wd::new()
        .env("SAFETY_POLL_INTERVAL_S", "30")
        .env("CASCADE_THRESHOLD", "3")
        .env("CASCADE_WINDOW_S", "60");
    let now = crate::support::now();
    wd.sessions(
        ids.iter()
            .map(|id| {
                let mut c = conductor(id, &format!("conductor-{id}"), "error");
                c["stored_status"] = json!("running");
                c["last_started"] = json!(now);
                c
            })
            .collect(),
    );
    wd.sim.update_state(|s| {
        s["status_writer"] = json!(false);
        s["freshness_window_s"] = json!(WINDOW_S);
    });
    wd
}

#[test]
fn conductors_refused_by_the_freshness_guard_are_restarted_once_its_window_passed_with_no_cascade()
{
    let ids = [CONDUCTOR, "a0b1c2d3-1755899999"];
    let wd = freshly_dead(&ids);
    let started = Instant::now();
    let mut d = wd.spawn(&[]);
    assert!(
        wait_until(Duration::from_secs(20), || wd
            .restarts_with("restarted")
            .len()
            == 2),
        "not restarted: {:?}\nstderr:\n{}",
        wd.restarts(),
        d.stderr()
    );
    assert!(
        started.elapsed() >= Duration::from_secs_f64(WINDOW_S - 0.5),
        "restarted before the window ended"
    );
    for id in ids {
        let calls = wd.sim.calls_with(&["session", "restart", id]);
        assert_eq!(
            calls.len(),
            3,
            "{id}: refused, retried 3 s later, then at the window's end"
        );
        let refused: Vec<_> = wd
            .restarts_with("cli-refused")
            .into_iter()
            .filter(|r| r.id == id)
            .collect();
        assert_eq!(refused.len(), 1, "{id}: one cli-refused record per run");
        assert!(refused[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("freshness window"));
        assert_eq!(wd.sim.session_state(id).unwrap()["restarts"], 1);
    }
    assert!(wd.sim.calls_with(&["session", "start"]).is_empty());
    assert_eq!(
        wd.escalations_of("cascade"),
        0,
        "six refused or real calls, no burst"
    );
    assert_eq!(wd.escalations_of("cascade-detected"), 0);
    assert!(wd.restarts_with("restart-failed").is_empty());
    assert!(d.alive());
}

#[test]
fn a_conductor_that_recovered_before_its_retry_is_not_restarted() {
    let wd = freshly_dead(&[CONDUCTOR]);
    let started = Instant::now();
    let mut d = wd.spawn(&[]);
    d.wait_for(SECS_10, "never refused", || {
        wd.restarts_with("cli-refused").len() == 1
    });
    wd.set_status("running");
    let shows = wd.sim.calls_with(&["session", "show"]).len();
    d.wait_for(SECS_10, "the retry never looked at it", || {
        wd.sim.calls_with(&["session", "show"]).len() > shows
    });
    // Past the window's end too: no retry is left.
    let end = Duration::from_secs_f64(WINDOW_S + 2.0);
    std::thread::sleep(end.saturating_sub(started.elapsed()));
    wd.wait_until_quiet();
    assert_eq!(wd.restart_calls(), 1, "{:?}", wd.restarts());
    let restarts = wd.sim.session_state(CONDUCTOR).unwrap()["restarts"].as_u64();
    assert_eq!(restarts.unwrap_or(0), 0);
    assert!(d.alive());
}

#[test]
fn successful_restart_is_recorded_and_sends_the_continuity_message() {
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "error")]);
    let out = wd.run(&["--once"]);
    assert_ok(&out);
    let actions: Vec<_> = wd.restarts().into_iter().map(|r| r.action).collect();
    assert_eq!(actions, ["restart", "restarted"]);
    let r = &wd.restarts()[1];
    assert_eq!(
        (r.id.as_str(), r.title.as_str(), r.profile.as_str()),
        (CONDUCTOR, "conductor-ops", "default")
    );
    assert!(!r.dry_run);
    let sends = wd
        .sim
        .calls_with(&["session", "send", CONDUCTOR, "--no-wait"]);
    assert_eq!(sends.len(), 1, "{sends:?}");
    let sent = wd.sim.session_state(CONDUCTOR).unwrap()["sent"].clone();
    assert!(!sent[0].as_str().unwrap().contains("{timestamp}"), "{sent}");
    assert!(
        sent[0]
            .as_str()
            .unwrap()
            .contains("restarted automatically"),
        "{sent}"
    );
    let live = &wd.liveness()[0];
    assert_eq!(
        (live.decision.as_str(), live.reason.as_str()),
        ("restart", "confirmed_dead")
    );
    assert_eq!(live.reads.len(), 2);
}

/// From 1.16.29 agent-deck types a recovery turn into a conductor it finds
/// restarted: the continuity message waits until the conductor has read at
/// rest for 6 s, so it never lands in the composer beside that turn.
#[test]
fn on_a_release_with_a_recovery_turn_the_continuity_message_waits_for_quiet() {
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "error")]);
    wd.sim.update_state(|s| s["version"] = json!("1.16.30"));
    let d = wd.spawn(&[]);
    d.wait_for(SECS_10, "never restarted", || {
        !wd.restarts_with("restarted").is_empty()
    });
    // The restarted conductor reads running: agent-deck's turn goes on.
    let sends = || wd.sim.calls_with(&["session", "send", CONDUCTOR]).len();
    assert!(
        !wait_until(Duration::from_secs(3), || sends() > 0),
        "{}",
        d.stderr()
    );
    wd.sim
        .update_state(|s| s["sessions"][0]["status"] = json!("idle"));
    let quiet_from = Instant::now();
    d.wait_for(Duration::from_secs(15), "never sent", || sends() == 1);
    let waited = quiet_from.elapsed();
    assert!(
        waited >= Duration::from_secs(5),
        "sent {waited:?} into the quiet"
    );
    // Said once the call has returned, which the simulator logs at its start.
    let said = format!("continuity message sent to {CONDUCTOR}");
    d.wait_for(SECS_10, "never said sent", || d.stderr().contains(&said));
}

/// Two conductors die in turn while every `session send` takes 8 s (the
/// simulator's `delay_s.send`; a Claude conductor's took 11.6–11.9 s on
/// 1.14.0). The second's restart call does not wait for the first's
/// continuity message, and a SIGTERM with one message in flight and one
/// queued still exits at once, dropping the queued one with a line.
#[test]
fn a_slow_continuity_message_does_not_hold_up_the_next_conductors_restart() {
    let other = "a0b1c2d3-1755899999";
    let wd = Wd::new().env("SUBPROCESS_TIMEOUT_S", "30");
    wd.sessions(vec![
        conductor(CONDUCTOR, "conductor-ops", "running"),
        conductor(other, "conductor-two", "running"),
    ]);
    wd.sim.update_state(|s| s["delay_s"] = json!({"send": 8}));
    let mut d = wd.spawn(&[]);
    wd.wait_for_more_ticks(2);
    wd.set_status("error");
    let first = ["session", "send", CONDUCTOR];
    wd.wait_for_call(&d, &first, SECS_10, "no continuity message");
    let died = Instant::now();
    wd.sim
        .update_state(|s| s["sessions"][1]["status"] = json!("error"));
    let second = ["session", "restart", other];
    wd.wait_for_call(&d, &second, SECS_10, "no second restart");
    let took = died.elapsed();
    assert!(
        took < Duration::from_secs(4),
        "second restart after {took:?}"
    );
    d.wait_for(SECS_10, "the second restart never worked", || {
        wd.restarts_with("restarted").len() == 2
    });
    let (code, took) = d.signal_and_wait(libc::SIGTERM, SECS_10);
    let stderr = d.stderr();
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    assert!(took < Duration::from_millis(1500), "exit took {took:?}");
    let dropped = format!("continuity message to {other} dropped: shutting down");
    assert!(stderr.contains(&dropped), "{stderr}");
}

/// Needs the simulator's `"on_send": "typed"` (exit 1, `DELIVERY_FAILED`
/// with `"delivery":"typed"`, the message recorded in `sent`).
#[test]
fn a_continuity_message_typed_into_a_non_claude_pane_is_no_failure_and_not_resent() {
    let wd = Wd::new();
    let mut c = conductor(CONDUCTOR, "conductor-ops", "running");
    c["tool"] = json!("shell");
    c["on_send"] = json!("typed");
    wd.sessions(vec![c]);
    let d = wd.spawn(&[]);
    wd.wait_for_more_ticks(2);
    wd.set_status("error");
    d.wait_for(SECS_10, "no restart", || {
        !wd.restarts_with("restarted").is_empty()
    });
    d.wait_for(SECS_10, "the typed delivery was not logged", || {
        d.stderr().contains("continuity message typed")
    });
    wd.wait_for_more_ticks(5);
    let sends = wd.sim.calls_with(&["session", "send", CONDUCTOR]);
    assert_eq!(sends.len(), 1, "{sends:?}");
    let stderr = d.stderr();
    assert!(!stderr.contains("continuity message to"), "{stderr}");
}

#[test]
fn a_never_started_conductor_is_not_revived_and_its_hold_is_recorded_once() {
    let wd = Wd::new();
    wd.sessions(vec![never_started(CONDUCTOR, "conductor-ops")]);
    let d = wd.spawn(&[]);
    d.wait_for(SECS_10, "no record", || !wd.restarts().is_empty());
    wd.wait_for_more_ticks(10);
    assert_eq!(wd.restart_calls(), 0, "stderr:\n{}", d.stderr());
    assert!(wd.sim.calls_with(&["session", "start"]).is_empty());
    assert!(wd.liveness().is_empty(), "no liveness confirmation");
    assert!(wd.escalations().is_empty(), "no escalation");
    let records = wd.restarts();
    assert_eq!(records.len(), 1, "one record per episode: {records:?}");
    assert_eq!(records[0].action, "skipped");
    assert_eq!(records[0].reason.as_deref(), Some("never_started"));
    assert_eq!(
        wd.sim.calls_with(&["session", "show"]).len(),
        1,
        "one show per episode, not one per tick"
    );
    let v = wd.status_json();
    let last = &v["sessions"][0]["last_record"];
    assert_eq!(
        (last["action"].as_str(), last["reason"].as_str()),
        (Some("skipped"), Some("never_started")),
        "{v}"
    );
    // Someone starts it; once it has run, a death is revived as usual.
    wd.set_status("running");
    wd.wait_for_more_ticks(2);
    wd.set_status("error");
    d.wait_for(SECS_10, "no restart once it had run", || {
        wd.restart_calls() == 1
    });
}

#[test]
fn a_conductor_an_earlier_run_saw_live_is_revived_after_the_watchdog_restarts() {
    let wd = Wd::new();
    let mut c = never_started(CONDUCTOR, "conductor-ops");
    c["status"] = json!("waiting");
    wd.sessions(vec![c]);
    assert_ok(&wd.run(&["--once"]));
    wd.set_status("error");
    assert_ok(&wd.run(&["--once"]));
    assert_eq!(wd.restart_calls(), 1, "{:?}", wd.restarts());
}

#[test]
fn a_conductor_with_a_hook_file_is_revived_though_show_has_no_claude_session_id() {
    let wd = Wd::new();
    wd.sessions(vec![never_started(CONDUCTOR, "conductor-ops")]);
    write_hook(&wd.hooks, CONDUCTOR, "dead");
    assert_ok(&wd.run(&["--once"]));
    assert_eq!(wd.restart_calls(), 1, "{:?}", wd.restarts());
}

#[test]
fn never_started_conductors_are_no_cascade() {
    let wd = Wd::new();
    let ids: Vec<String> = (0..6).map(|i| format!("3f9c2a1{i}-1755891234")).collect();
    wd.sessions(
        ids.iter()
            .map(|id| never_started(id, &format!("conductor-{id}")))
            .collect(),
    );
    assert_ok(&wd.run(&["--once"]));
    assert_eq!(wd.escalations_of("cascade-detected"), 0);
    assert_eq!(wd.restart_calls(), 0);
    let held = wd.restarts_with("skipped");
    assert_eq!(held.len(), 6, "{held:?}");
    assert!(held
        .iter()
        .all(|r| r.reason.as_deref() == Some("never_started")));
}

/// Writes `<hooks>/<id>.json` saying `dead`, stamped `ts`.
fn dead_hook_at(wd: &Wd, id: &str, ts: u64) {
    let body = format!(r#"{{"status":"dead","event":"SessionEnd","ts":{ts}}}"#);
    let tmp = wd.hooks.join(format!(".{id}.json.tmp-x"));
    fs::write(&tmp, body).unwrap();
    fs::rename(&tmp, wd.hooks.join(format!("{id}.json"))).unwrap();
}

/// agent-deck keeps reading a restarted Claude conductor `error` while the
/// `dead` hook of its old pane is under 120 s old (a restart leaves the hook
/// file in place). The simulator's `no_effect` restart stands in for that:
/// the restart is carried out and the status still reads `error`.
#[test]
fn a_stale_dead_hook_causes_no_start_fallback_and_no_second_restart() {
    let wd = Wd::new();
    wd.sessions(vec![crash_looping(CONDUCTOR, "conductor-ops")]);
    dead_hook_at(&wd, CONDUCTOR, crate::support::now() as u64 - 5);
    let d = wd.spawn(&[]);
    d.wait_for(SECS_10, "no restart", || {
        !wd.restarts_with("restarted").is_empty()
    });
    wd.wait_for_more_ticks(10);
    assert_eq!(wd.restart_calls(), 1, "stderr:\n{}", d.stderr());
    assert!(wd.sim.calls_with(&["session", "start"]).is_empty());
    assert!(wd.restarts_with("restart-failed").is_empty());
    let restarted = &wd.restarts_with("restarted")[0];
    assert_eq!(restarted.detail, back_as("error"));
    let held = wd.restarts_with("skipped");
    assert_eq!(held.len(), 1, "once per episode: {held:?}");
    assert_eq!(held[0].reason.as_deref(), Some("stale_dead_hook"));
    assert!(
        d.stderr().contains("from before the restart"),
        "{}",
        d.stderr()
    );
    // The new agent dies too: its hook is newer than the restart.
    dead_hook_at(&wd, CONDUCTOR, crate::support::now() as u64);
    d.wait_for(SECS_10, "a new death was not handled", || {
        wd.restart_calls() == 2
    });
}

#[test]
fn rate_limited_boot_backs_off_and_gives_the_slot_back() {
    let wd = Wd::new()
        .env("RATE_LIMIT_MAX", "1")
        .env("API_429_BACKOFF_S", "0.5");
    let mut c = conductor(CONDUCTOR, "conductor-ops", "error");
    c["on_restart"] = json!("no_effect");
    c["on_start"] = json!("fail");
    c["transcript"] = json!("API Error: 429 {\"type\":\"rate_limit_error\"} (429)");
    wd.sessions(vec![c]);
    let d = wd.spawn(&[]);
    d.wait_for(SECS_10, "too few rate-limited records", || {
        wd.restarts_with("rate-limited").len() >= 2
    });
    // With a budget of one, a second attempt proves the slot came back.
    assert!(wd.restart_calls() >= 2);
    assert_eq!(wd.escalations_of("rate-limit"), 0);
    assert_eq!(wd.escalations_of("restart-failed"), 0);
    let rec = wd.restarts_with("rate-limited").into_iter().next().unwrap();
    assert_eq!(rec.detail, Detail::RateLimited { backoff_s: 0.5 });
}

#[test]
fn once_dry_run_makes_no_mutating_call_and_runs_no_escalate_sh() {
    let wd = Wd::new().env("RATE_LIMIT_MAX", "1");
    let out_file = wd.escalate_script("");
    let held = auth_held("b1b2c3d4-1755890000", "conductor-held");
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "error"), held]);
    let out = wd.run(&["--once", "--dry-run"]);
    assert_ok(&out);
    for argv in wd.sim.calls() {
        let mutating = ["restart", "start", "send", "remove"]
            .iter()
            .any(|m| argv.contains(&m.to_string()));
        assert!(!mutating, "dry-run ran {argv:?}");
    }
    assert!(!out_file.exists(), "escalate.sh ran in dry-run");
    let recs = wd.restarts();
    assert!(
        recs.iter().any(|r| r.action == "restart" && r.dry_run),
        "{recs:?}"
    );
    assert_eq!(
        wd.escalations_of("auth-hold"),
        1,
        "the decision is still recorded"
    );
}

#[test]
fn escalate_sh_runs_with_severity_and_message_and_no_secrets() {
    let wd = Wd::new().env("TELEGRAM_BOT_TOKEN", "123:SECRET-BOT-TOKEN");
    // A hook that hands its work to a background job must not lose it.
    let late = wd.home.path().join("late.out");
    let out = wd.home.path().join("escalate.out");
    let out_file = wd.escalate_script(&format!(
        "echo \"token=$TELEGRAM_BOT_TOKEN\" >> '{out}'\n(sleep 0.3; echo late > '{late}') &\n",
        out = out.display(),
        late = late.display()
    ));
    let mut c = conductor(CONDUCTOR, "conductor-ops", "error");
    c["auth_hold"] = json!({"reason": "auth_banner_live", "remedy": "r", "evidence": "e", "boot_attempts": 1, "ts": 1});
    wd.sessions(vec![c]);
    let out = wd.run(&["--once"]);
    assert_eq!(out.status.code(), Some(0));
    let text = fs::read_to_string(&out_file).expect("escalate.sh did not run");
    assert!(
        text.starts_with("auth-hold|conductor-ops (3f9c2a1b-1755891234) is held"),
        "{text}"
    );
    assert!(
        text.contains("token=\n"),
        "the bot token reached escalate.sh: {text}"
    );
    assert!(
        wait_until(SECS_10, || late.exists()),
        "escalate.sh's background job was killed"
    );
}

#[test]
fn healthy_tick_costs_one_call_plus_one_per_profile() {
    let wd = Wd::new();
    let mut sessions = Vec::new();
    for (i, profile) in ["default", "default", "work", "work", "work"]
        .iter()
        .enumerate()
    {
        sessions.push(
            json!({"id": format!("{i:08x}-1755890000"), "title": format!("conductor-{i}"),
                             "group": "conductor", "profile": profile, "status": "running"}),
        );
    }
    sessions.push(json!({"id": "ffffffff-1755890000", "title": "worker", "group": "srv", "profile": "other", "status": "error"}));
    wd.sessions(sessions);
    let out = wd.run(&["--once"]);
    assert_eq!(out.status.code(), Some(0));
    let calls = wd.sim.calls();
    // `version` is read once at start, before the tick; the tick is the rest.
    assert_eq!(calls[0], ["version"], "{calls:?}");
    let calls = &calls[1..];
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(calls[0], ["list", "--all", "--json"]);
    assert!(calls[1..]
        .iter()
        .all(|c| c[0] == "-p" && c[2..] == ["list", "--json"]));
}

#[test]
fn missing_hanging_garbage_and_null_cli_are_survived() {
    let wd = Wd::new().env("AGENT_DECK_BIN", "/nonexistent/agent-deck");
    let out = wd.run(&["--once"]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("could not start") && !err.contains("panicked"),
        "{err}"
    );

    for mode in ["garbage", "null", "empty", "exit1", "crash"] {
        let wd = Wd::new();
        wd.sim.set_state(&json!({"profiles_exist": true, "sessions": [conductor(CONDUCTOR, "conductor-ops", "error")],
                                  "faults": {"list_all": {"mode": mode}, "list": {"mode": mode}}}));
        let out = wd.run(&["--once"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{mode}: {err}");
        assert!(!err.contains("panicked"), "{mode}: {err}");
        assert_eq!(wd.restart_calls(), 0, "{mode}");
    }

    let wd = Wd::new().env("SUBPROCESS_TIMEOUT_S", "0.5");
    wd.sim.set_state(&json!({"profiles_exist": true, "sessions": [conductor(CONDUCTOR, "conductor-ops", "error")],
                              "faults": {"list_all": {"mode": "hang", "seconds": 60}}}));
    let start = Instant::now();
    let out = wd.run(&["--once"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        start.elapsed() < SECS_10,
        "--once took {:?}",
        start.elapsed()
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("timed out"));
    assert!(
        wait_until(Duration::from_secs(3), || wd.sim.processes().is_empty()),
        "a hung agent-deck outlived its timeout"
    );
}

#[test]
fn a_hook_saying_running_or_waiting_costs_no_cli_call() {
    let wd = Wd::new().env("SAFETY_POLL_INTERVAL_S", "30");
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let d = wd.spawn(&[]);
    wd.wait_until_quiet();
    let shows = || wd.sim.calls_with(&["session", "show", CONDUCTOR]).len();
    for status in ["running", "waiting", "running"] {
        write_hook(&wd.hooks, CONDUCTOR, status);
        wd.wait_until_quiet();
    }
    assert_eq!(
        shows(),
        0,
        "an agent reporting itself alive was checked anyway"
    );
    write_hook(&wd.hooks, CONDUCTOR, "dead");
    d.wait_for(SECS_10, "the dead hook woke no check", || shows() == 1);
}

#[test]
fn empty_continuity_message_sends_nothing() {
    let wd = Wd::new().env("CONTINUITY_MESSAGE", "");
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "error")]);
    let out = wd.run(&["--once"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(wd.restarts_with("restarted").len(), 1);
    assert!(wd.sim.calls_with(&["session", "send"]).is_empty());
}

#[test]
fn a_hanging_escalate_sh_is_killed_and_reaped() {
    let wd = Wd::new().env("SUBPROCESS_TIMEOUT_S", "0.5");
    let out_file = wd.escalate_script("exec sleep 60 # escalate-hang-marker\n");
    let c = auth_held(CONDUCTOR, "conductor-ops");
    wd.sessions(vec![c]);
    let start = Instant::now();
    let out = wd.run(&["--once"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        start.elapsed() < SECS_10,
        "--once waited {:?} for a hanging escalate.sh",
        start.elapsed()
    );
    assert!(out_file.exists());
    assert!(String::from_utf8_lossy(&out.stderr).contains("timed out"));
}

#[test]
fn a_failed_restart_call_falls_back_to_session_start() {
    let wd = Wd::new();
    let mut c = conductor(CONDUCTOR, "conductor-ops", "error");
    c["on_restart"] = json!("fail");
    c["tmux_alive"] = json!(false);
    wd.sessions(vec![c]);
    assert_ok(&wd.run(&["--once"]));
    assert_eq!(wd.sim.calls_with(&["session", "start"]).len(), 1);
    let back = wd.restarts_with("restarted");
    assert_eq!(back.len(), 1, "{:?}", wd.restarts());
    assert_eq!(back[0].detail, back_as("running"));
    assert!(wd.restarts_with("restart-failed").is_empty());
}

/// The start fallback works, then every `session show` fails: the restart
/// is recorded `restart-unverified` ("status unreadable after start"), not
/// a failure with a status never seen, and the next tick, which reads it
/// running, records it `restarted`.
#[test]
fn a_start_whose_status_no_read_could_give_is_settled_by_the_next_read_not_failed() {
    let wd = Wd::new().env("START_VERIFY_S", "0.5");
    let mut c = conductor(CONDUCTOR, "conductor-ops", "error");
    c["on_restart"] = json!("no_effect");
    c["on_start"] = json!("ok");
    wd.sessions(vec![c]);
    wd.sim
        .update_state(|s| s["delay_s"] = json!({"start": 1.0}));
    let d = wd.spawn(&[]);
    wd.wait_for_call(&d, &["session", "start"], SECS_10, "no start fallback");
    wd.sim
        .update_state(|s| s["faults"] = json!({"show": {"mode": "exit1"}}));
    d.wait_for(SECS_10, "never settled", || {
        !wd.restarts_with("restarted").is_empty()
    });
    let acts: Vec<_> = wd.restarts().into_iter().map(|r| r.action).collect();
    assert_eq!(acts, ["restart", "restart-unverified", "restarted"]);
    let unverified = &wd.restarts_with("restart-unverified")[0];
    let why = unverified.reason.as_deref().unwrap_or_default();
    assert!(why.ends_with("; status unreadable after start"), "{why}");
    let back = &wd.restarts_with("restarted")[0];
    assert_eq!(back.detail, back_as("running"));
    assert!(wd.escalations().is_empty());
}

#[test]
fn the_cli_json_error_message_reaches_the_record() {
    let wd = Wd::new();
    let mut c = conductor(CONDUCTOR, "conductor-ops", "error");
    c["on_restart"] = json!("fail");
    c["on_start"] = json!("fail");
    wd.sessions(vec![c]);
    assert_ok(&wd.run(&["--once"]));
    let failed = wd.restarts_with("restart-failed");
    assert_eq!(failed.len(), 1);
    // The simulator prints it as {"code","error","success":false} on stdout, stderr empty.
    let reason = failed[0].reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains("exited 1: failed to restart session: simulated"),
        "{reason}"
    );
    // SPEC §5.5: a failed restart call is followed by the start fallback.
    assert_eq!(wd.sim.calls_with(&["session", "start"]).len(), 1);
}

/// The pane text a spawn that died at once leaves in agent-deck's answer
/// (#2099): it must never reach a log, a record or an escalation.
const DYING: &str = "No conversation found to continue";

/// A conductor in error whose `session restart` fails; from 1.16.10 its
/// answer says the spawn failed for `reason` (`came_up`: an unverified
/// spawn that is up all the same).
fn spawn_failing(reason: &str, came_up: bool) -> serde_json::Value {
    let mut c = conductor(CONDUCTOR, "conductor-ops", "error");
    c["on_restart"] = json!("fail");
    c["spawn_failure"] = json!({"reason": reason, "dying_output": format!("{DYING}\n"),
                                "elapsed_ms": 980, "came_up": came_up});
    c
}

/// Nothing under the watchdog's directory, nor its stderr, holds pane text.
fn no_pane_text_anywhere(wd: &Wd, stderr: &str) {
    assert!(!stderr.contains(DYING), "pane text in the log:\n{stderr}");
    for entry in fs::read_dir(wd.watchdog_dir()).unwrap() {
        let path = entry.unwrap().path();
        let text = fs::read(&path).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&text).contains(DYING),
            "pane text in {}",
            path.display()
        );
    }
}

#[test]
fn a_spawn_that_died_fast_escalates_once_at_once_and_is_held_until_seen_healthy() {
    let wd = Wd::new();
    let mut c = spawn_failing("spawn_died_fast", false);
    c["on_start"] = json!("ok");
    wd.sessions(vec![c]);
    wd.release(Some(NEWEST));
    let d = wd.spawn(&[]);
    wd.wait_for_escalations(&d, "restart-failed", 1);
    wd.wait_for_more_ticks(5);
    assert_eq!(wd.restart_calls(), 1, "held: {:?}", wd.restarts());
    assert!(
        wd.sim.calls_with(&["session", "start"]).is_empty(),
        "no start fallback"
    );
    assert_eq!(wd.escalations_of("restart-failed"), 1);
    let e = &wd.escalations_with("restart-failed")[0];
    assert!(
        e.message.contains("spawn_died_fast") && e.message.contains("980"),
        "{}",
        e.message
    );
    let failed = wd.restarts_with("restart-failed");
    assert_eq!(failed.len(), 1, "{failed:?}");
    let Detail::SpawnFailed(spawn) = &failed[0].detail else {
        panic!("no spawn failure: {failed:?}");
    };
    assert_eq!(spawn.spawn_reason, "spawn_died_fast");
    assert_eq!(spawn.elapsed_ms, Some(980));
    let digest = spawn.dying_output_digest.clone().unwrap_or_default();
    assert!(
        digest.len() == 16 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
        "{digest}"
    );
    let held = wd.restarts_with("skipped");
    assert_eq!(held.len(), 1, "one record per episode: {held:?}");
    assert_eq!(held[0].reason.as_deref(), Some("spawn_died_fast"));
    no_pane_text_anywhere(&wd, &d.stderr());
    // The hold survives the watchdog's own restart.
    drop(d);
    let polls = || wd.sim.calls_with(&["list", "--all"]).len();
    let before = polls();
    let d = wd.spawn(&[]);
    d.wait_for(
        Duration::from_secs(20),
        "the restarted watchdog does not poll",
        || polls() >= before + 5,
    );
    assert_eq!(wd.restart_calls(), 1, "stderr:\n{}", d.stderr());
    assert_eq!(wd.escalations_of("restart-failed"), 1);
    // A human brings it back: seen healthy, the hold is over.
    wd.sim.update_state(|s| {
        s["sessions"][0]["status"] = json!("running");
        s["sessions"][0]["tmux_alive"] = json!(true);
        s["sessions"][0]["on_restart"] = json!("ok");
    });
    wd.wait_for_more_ticks(3);
    wd.set_status("error");
    d.wait_for(SECS_10, "not revived after it was seen healthy", || {
        wd.restart_calls() == 2
    });
    no_pane_text_anywhere(&wd, &d.stderr());
}

#[test]
fn an_unverified_spawn_that_came_up_counts_no_failure() {
    let wd = Wd::new();
    wd.sessions(vec![spawn_failing("spawn_unverified", true)]);
    wd.release(Some(NEWEST));
    assert_ok(&wd.run(&["--once"]));
    assert_eq!(wd.restart_calls(), 1);
    assert!(wd.sim.calls_with(&["session", "start"]).is_empty());
    let back = wd.restarts_with("restarted");
    assert_eq!(back.len(), 1, "{:?}", wd.restarts());
    assert_eq!(back[0].detail, back_as("running"));
    assert!(wd.restarts_with("restart-failed").is_empty());
    assert!(wd.escalations().is_empty());
}

#[test]
fn an_unverified_spawn_still_in_error_falls_back_to_session_start_with_json() {
    let wd = Wd::new();
    let mut c = spawn_failing("spawn_unverified", false);
    c["tmux_alive"] = json!(false);
    wd.sessions(vec![c]);
    wd.release(Some(NEWEST));
    assert_ok(&wd.run(&["--once"]));
    let starts = wd.sim.calls_with(&["session", "start"]);
    assert_eq!(
        starts,
        [["-p", "default", "session", "start", CONDUCTOR, "--json"]]
    );
    let back = wd.restarts_with("restarted");
    assert_eq!(back.len(), 1, "{:?}", wd.restarts());
    assert!(wd.restarts_with("restart-failed").is_empty());
}

#[test]
fn a_missing_tmux_session_falls_back_to_session_start() {
    let wd = Wd::new();
    wd.sessions(vec![spawn_failing("tmux_session_missing", false)]);
    wd.release(Some(NEWEST));
    assert_ok(&wd.run(&["--once"]));
    assert_eq!(wd.sim.calls_with(&["session", "start"]).len(), 1);
    let back = wd.restarts_with("restarted");
    assert_eq!(back.len(), 1, "{:?}", wd.restarts());
    assert_eq!(back[0].detail, back_as("running"));
    assert!(wd.escalations().is_empty());
}

#[test]
fn a_spawn_reason_this_release_does_not_know_is_a_failed_call_and_recorded() {
    let wd = Wd::new();
    let mut c = spawn_failing("tmux_start_failed", false);
    c["on_start"] = json!("fail");
    wd.sessions(vec![c]);
    wd.release(Some(NEWEST));
    assert_ok(&wd.run(&["--once"]));
    assert_eq!(wd.sim.calls_with(&["session", "start"]).len(), 1);
    let failed = wd.restarts_with("restart-failed");
    assert_eq!(failed.len(), 1, "{:?}", wd.restarts());
    let Detail::SpawnFailed(spawn) = &failed[0].detail else {
        panic!("no spawn failure: {failed:?}");
    };
    assert_eq!(spawn.spawn_reason, "tmux_start_failed");
    assert!(spawn.dying_output_digest.is_some());
    assert!(wd.escalations().is_empty(), "one failure is no alert");
    assert!(wd.restarts_with("skipped").is_empty(), "no hold");
    // A second failure in a row escalates, as any failed call does.
    assert_ok(&wd.run(&["--once"]));
    assert_eq!(wd.restart_calls(), 2);
    assert_eq!(wd.escalations_of("restart-failed"), 1);
    let out = wd.run(&["--once"]);
    assert_ok(&out);
    no_pane_text_anywhere(&wd, &String::from_utf8_lossy(&out.stderr));
}

#[test]
fn at_1_14_0_a_failed_restart_falls_back_and_escalates_on_the_second_failure_as_before() {
    let wd = Wd::new();
    let mut c = spawn_failing("spawn_died_fast", false);
    c["on_start"] = json!("fail");
    wd.sessions(vec![c]);
    assert_ok(&wd.run(&["--once"]));
    assert_eq!(wd.sim.calls_with(&["session", "start"]).len(), 1);
    let failed = wd.restarts_with("restart-failed");
    assert_eq!(failed.len(), 1, "{:?}", wd.restarts());
    let reason = failed[0].reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains("exited 1: failed to restart session: simulated"),
        "{reason}"
    );
    assert_eq!(failed[0].detail, Detail::Plain {}, "no spawn keys");
    assert!(wd.escalations().is_empty());
    assert_ok(&wd.run(&["--once"]));
    assert_eq!(wd.restart_calls(), 2, "not held");
    assert_eq!(wd.escalations_of("restart-failed"), 1);
}

/// The detail of a `restarted` record that came back `status`.
fn back_as(status: &str) -> Detail {
    Detail::Restarted {
        final_status: status.into(),
    }
}
