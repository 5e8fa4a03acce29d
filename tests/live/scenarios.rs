//! The watchdog's promises against the real CLI, one scenario a test: the
//! fault injected the way the world does it (a killed tmux session, a hook
//! written by agent-deck's own hook handler, a deleted project dir), the
//! outcome read from the watchdog's records, the CLI and tmux.

use std::fs;
use std::time::{Duration, Instant};

use crate::sandbox::{is_healthy, Sandbox, StatusWriter, Tool};
use crate::support::wait_until;

/// Long enough for a poll, a liveness confirmation and a restart.
const RECOVERY: Duration = Duration::from_secs(40);

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_killed_conductor_without_a_hook_is_restarted_once_with_a_new_tmux_session() {
    let sb = Sandbox::new();
    let a = sb.launch("conductor-ops", "conductor", Tool::Custom, None);
    let before = sb.tmux_session(&a);
    let d = sb.spawn_watchdog(&[]);
    sb.age_past_freshness(&a);
    sb.kill_tmux_session(&a);
    let back = wait_until(RECOVERY, || !sb.restarts_of(&a, "restarted").is_empty());
    assert!(back, "never restarted; stderr:\n{}", d.stderr());
    assert!(is_healthy(&sb.status(&a)), "{}", sb.show(&a));
    let after = sb.tmux_session(&a);
    assert_ne!(
        after, before,
        "a custom-tool restart makes a new tmux session"
    );
    assert!(sb.tmux_sessions().contains(&after));
    assert_eq!(a.boots(), 2, "{}", a.fake_log());
    assert_eq!(
        sb.restarts_of(&a, "restart").len(),
        1,
        "{:?}",
        sb.restarts()
    );
    sb.wait_for_polls(&d, 2, RECOVERY);
    assert_eq!(
        sb.session_calls(&a, "restart").len(),
        1,
        "restarted once only"
    );
    assert!(
        sb.session_calls(&a, "start").is_empty(),
        "no start fallback"
    );
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_watchdog_started_inside_another_tmux_server_revives_a_killed_conductor_and_leaves_that_server_alone(
) {
    let sb = Sandbox::on_default_socket();
    let other = sb.other_tmux_server();
    let a = sb.launch("conductor-ops", "conductor", Tool::Custom, None);
    let client = other.client_env();
    let settings: Vec<(&str, &str)> = client.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let d = sb.spawn_watchdog(&settings);
    sb.age_past_freshness(&a);
    sb.kill_tmux_session(&a);
    let back = wait_until(RECOVERY, || !sb.restarts_of(&a, "restarted").is_empty());
    assert!(back, "never restarted; stderr:\n{}", d.stderr());
    assert!(is_healthy(&sb.status(&a)), "{}", sb.show(&a));
    assert_eq!(
        other.sessions(),
        ["bystander"],
        "the other server is untouched"
    );
    assert!(
        d.stderr()
            .contains("not handing TMUX, TMUX_PANE to agent-deck"),
        "{}",
        d.stderr()
    );
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_claude_conductors_session_end_hook_restarts_it_inside_one_poll_keeping_its_names() {
    let sb = Sandbox::new();
    let a = sb.launch("conductor-claude", "conductor", Tool::Claude, None);
    let hook = sb.hooks_dir().join(format!("{}.json", a.id));
    assert!(
        wait_until(Duration::from_secs(10), || hook.exists()),
        "the fake's SessionStart hook never arrived"
    );
    let (tmux_before, sid_before) = (
        sb.tmux_session(&a),
        sb.show(&a)["claude_session_id"].clone(),
    );
    assert_ne!(sid_before, "", "{}", sb.show(&a));
    let poll_s = 30.0;
    let d = sb.spawn_watchdog(&[("SAFETY_POLL_INTERVAL_S", "30")]);
    sb.wait_for_polls(&d, 1, RECOVERY);
    sb.age_past_freshness(&a);
    let hooked = Instant::now();
    sb.hook(&a, "SessionEnd");
    let back = wait_until(RECOVERY, || !sb.restarts_of(&a, "restarted").is_empty());
    assert!(back, "never restarted; stderr:\n{}", d.stderr());
    let took = hooked.elapsed().as_secs_f64();
    assert!(
        took < poll_s / 2.0,
        "the hook took {took:.1}s to act on, a poll is {poll_s}s; stderr:\n{}",
        d.stderr()
    );
    assert!(
        wait_until(RECOVERY, || is_healthy(&sb.status(&a))),
        "{}",
        sb.show(&a)
    );
    assert_eq!(
        sb.tmux_session(&a),
        tmux_before,
        "a Claude restart keeps its tmux session"
    );
    assert_eq!(sb.show(&a)["claude_session_id"], sid_before);
    assert_eq!(a.boots(), 2, "{}", a.fake_log());
    assert!(
        sb.session_calls(&a, "start").is_empty(),
        "no start fallback"
    );
    assert_eq!(sb.session_calls(&a, "restart").len(), 1);
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_stopped_critical_session_is_never_touched() {
    let sb = Sandbox::new();
    let a = sb.launch("conductor-resting", "conductor", Tool::Custom, None);
    sb.stop(&a);
    let stopped = wait_until(Duration::from_secs(10), || sb.status(&a) == "stopped");
    assert!(stopped, "{}", sb.show(&a));
    let d = sb.spawn_watchdog(&[("SAFETY_POLL_INTERVAL_S", "1")]);
    sb.wait_for_polls(&d, 4, RECOVERY);
    assert_eq!(sb.status(&a), "stopped");
    assert!(
        sb.restarts().iter().all(|r| r.id != a.id),
        "{:?}",
        sb.restarts()
    );
    for verb in ["restart", "start", "send"] {
        assert!(sb.session_calls(&a, verb).is_empty(), "a {verb} call");
    }
    assert_eq!(a.boots(), 1);
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_pane_still_moving_under_an_error_status_is_left_alone_and_escalated_once() {
    let sb = Sandbox::new();
    let a = sb.add("conductor-busy", "conductor", Tool::Claude, None);
    a.set_mode("clock");
    sb.start(&a);
    let d = sb.spawn_watchdog(&[("SAFETY_POLL_INTERVAL_S", "1")]);
    sb.wait_for_polls(&d, 1, RECOVERY);
    // A dead hook makes a live Claude pane read `error` for 120 s.
    sb.hook(&a, "SessionEnd");
    assert_eq!(sb.status(&a), "error", "{}", sb.show(&a));
    let mismatch = || {
        sb.escalations()
            .iter()
            .filter(|e| {
                e.severity == "liveness-mismatch" && e.sid.as_deref() == Some(a.id.as_str())
            })
            .count()
    };
    assert!(
        wait_until(Duration::from_secs(60), || mismatch() >= 1),
        "no liveness-mismatch; liveness: {:?}\nstderr:\n{}",
        sb.liveness(),
        d.stderr()
    );
    sb.wait_for_polls(&d, 4, RECOVERY);
    let skips = sb.liveness();
    let skips: Vec<_> = skips.iter().filter(|l| l.id == a.id).collect();
    assert!(skips.len() >= 3, "{skips:?}");
    assert!(
        skips.iter().all(|l| l.reason.as_str() == "pane_active"),
        "{skips:?}"
    );
    assert_eq!(mismatch(), 1, "one liveness-mismatch per episode");
    assert!(
        sb.session_calls(&a, "restart").is_empty(),
        "a live pane was restarted"
    );
    assert_eq!(a.boots(), 1);
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn without_a_status_writer_the_freshness_guard_is_a_cli_refusal_then_a_restart() {
    let sb = Sandbox::with(StatusWriter::None);
    let a = sb.launch("conductor-fresh", "conductor", Tool::Custom, None);
    let started = Instant::now();
    let d = sb.spawn_watchdog(&[("SAFETY_POLL_INTERVAL_S", "1")]);
    // The watchdog sees it run before it dies (a session it never saw
    // alive, with no hook and no Claude id, would be held as never started):
    // the second poll begins after the first whole tick.
    sb.wait_for_polls(&d, 2, RECOVERY);
    sb.kill_tmux_session(&a);
    let refused = wait_until(RECOVERY, || !sb.restarts_of(&a, "cli-refused").is_empty());
    assert!(
        refused,
        "no cli-refused; {:?}\nstderr:\n{}",
        sb.restarts(),
        d.stderr()
    );
    assert!(started.elapsed() < Duration::from_secs(60));
    let back = wait_until(Duration::from_secs(100), || {
        !sb.restarts_of(&a, "restarted").is_empty()
    });
    assert!(
        back,
        "never restarted after the window; {:?}",
        sb.restarts()
    );
    assert!(
        started.elapsed() >= Duration::from_secs(55),
        "restarted inside the guard's window"
    );
    assert!(
        sb.session_calls(&a, "start").is_empty(),
        "a refusal fell back to start"
    );
    assert!(
        sb.restarts_of(&a, "restart-failed").is_empty(),
        "{:?}",
        sb.restarts()
    );
    assert!(sb.escalations().is_empty(), "{:?}", sb.escalations());
    assert_eq!(a.boots(), 2);
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_401_banner_holds_the_session_with_one_escalation_and_no_restart() {
    let sb = Sandbox::new();
    let a = sb.add("conductor-login", "conductor", Tool::Claude, None);
    a.set_mode("banner");
    sb.start_only(&a);
    let seen = wait_until(RECOVERY, || {
        let show = sb.show(&a);
        show["substate"] == "auth-401" || show.get("auth_hold").is_some()
    });
    assert!(seen, "the banner never showed: {}", sb.show(&a));
    // The agent exits on the 401, as Claude does.
    sb.kill_tmux_session(&a);
    let d = sb.spawn_watchdog(&[("SAFETY_POLL_INTERVAL_S", "1")]);
    let held = wait_until(RECOVERY, || {
        sb.liveness()
            .iter()
            .any(|l| l.id == a.id && l.reason.as_str() == "auth_hold")
    });
    assert!(
        held,
        "no auth_hold skip; {}\nstderr:\n{}",
        sb.show(&a),
        d.stderr()
    );
    sb.wait_for_polls(&d, 4, RECOVERY);
    let alerts: Vec<_> = sb
        .escalations()
        .into_iter()
        .filter(|e| e.sid.as_deref() == Some(a.id.as_str()))
        .collect();
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(alerts[0].severity, "auth-hold");
    assert!(
        sb.session_calls(&a, "restart").is_empty(),
        "an auth-held session was restarted"
    );
    assert_eq!(a.boots(), 1);
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_restart_that_cannot_work_falls_back_to_start_then_escalates_restart_failed() {
    let sb = Sandbox::new();
    let a = sb.launch("conductor-gone", "conductor", Tool::Custom, None);
    let d = sb.spawn_watchdog(&[("SAFETY_POLL_INTERVAL_S", "1")]);
    sb.wait_for_polls(&d, 1, RECOVERY);
    sb.age_past_freshness(&a);
    fs::remove_dir_all(&a.dir).expect("delete the project dir");
    sb.kill_tmux_session(&a);
    let failed = wait_until(Duration::from_secs(90), || {
        sb.escalations()
            .iter()
            .any(|e| e.severity == "restart-failed" && e.sid.as_deref() == Some(a.id.as_str()))
    });
    assert!(
        failed,
        "no restart-failed; {:?}\nstderr:\n{}",
        sb.restarts(),
        d.stderr()
    );
    assert!(
        sb.restarts_of(&a, "restart-failed").len() >= 2,
        "{:?}",
        sb.restarts()
    );
    assert!(
        !sb.session_calls(&a, "start").is_empty(),
        "no start fallback; {:?}\nstderr:\n{}",
        sb.restarts(),
        d.stderr()
    );
    sb.wait_for_polls(&d, 3, RECOVERY);
    let max: usize = 3; // RATE_LIMIT_MAX's default
    let restarts = sb.session_calls(&a, "restart").len();
    assert!(restarts <= max, "{restarts} restarts, the budget is {max}");
    let failures = sb
        .escalations()
        .iter()
        .filter(|e| e.severity == "restart-failed")
        .count();
    assert_eq!(failures, 1, "{:?}", sb.escalations());
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_conductor_in_another_profile_is_restarted_with_its_profile_first() {
    let sb = Sandbox::new();
    let a = sb.launch("conductor-work", "conductor", Tool::Custom, Some("work"));
    let profiles_dir = sb.home.join(".local/share/agent-deck/profiles");
    let profiles = || {
        let mut names: Vec<String> = fs::read_dir(&profiles_dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let before = profiles();
    let d = sb.spawn_watchdog(&[]);
    sb.age_past_freshness(&a);
    sb.kill_tmux_session(&a);
    let back = wait_until(RECOVERY, || !sb.restarts_of(&a, "restarted").is_empty());
    assert!(back, "never restarted; stderr:\n{}", d.stderr());
    assert!(is_healthy(&sb.status(&a)));
    let calls = sb.session_calls(&a, "restart");
    assert_eq!(calls.len(), 1);
    let argv: Vec<&str> = calls[0].split_whitespace().skip(1).collect();
    assert_eq!(&argv[..4], ["-p", "work", "session", "restart"], "{argv:?}");
    assert_eq!(profiles(), before, "a stray profile appeared");
    let row = sb.list_row(&a);
    assert_eq!(row["profile"], "work", "{row}");
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_dry_run_over_a_dead_conductor_changes_nothing_in_tmux_or_the_fleet() {
    let sb = Sandbox::new();
    // Claude-family, so its Claude id says it ran: the dry run goes all the
    // way to "would restart".
    let dead = sb.launch("conductor-dead", "conductor", Tool::Claude, None);
    let alive = sb.launch("conductor-alive", "conductor", Tool::Custom, None);
    sb.kill_tmux_session(&dead);
    assert!(wait_until(RECOVERY, || sb.status(&dead) == "error"));
    let rows = |sb: &Sandbox| [sb.list_row(&dead), sb.list_row(&alive)];
    let (tmux_before, rows_before) = (sb.tmux_sessions(), rows(&sb));
    let out = sb.run_watchdog(&["--once", "--dry-run", "--verbose"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(sb.tmux_sessions(), tmux_before);
    assert_eq!(rows(&sb), rows_before);
    let mutating = ["restart", "start", "send", "stop"];
    for verb in mutating {
        assert!(
            sb.watchdog_calls_with(&["session", verb]).is_empty(),
            "a {verb} call"
        );
    }
    assert!(sb.watchdog_calls_with(&["remove"]).is_empty());
    let records = sb.restarts();
    assert!(
        records
            .iter()
            .any(|r| r.id == dead.id && r.action == "restart" && r.dry_run),
        "{records:?}"
    );
    assert_eq!(dead.boots(), 1);
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_conductor_that_was_added_but_never_started_is_not_revived() {
    let sb = Sandbox::new();
    let a = sb.add("conductor-new", "conductor", Tool::Custom, None);
    assert!(
        wait_until(RECOVERY, || sb.status(&a) == "error"),
        "{}",
        sb.show(&a)
    );
    let d = sb.spawn_watchdog(&[("SAFETY_POLL_INTERVAL_S", "1")]);
    sb.wait_for_polls(&d, 5, RECOVERY);
    assert!(
        sb.session_calls(&a, "restart").is_empty(),
        "a never-started session was revived"
    );
    assert!(sb.session_calls(&a, "start").is_empty());
    let held: Vec<_> = sb
        .restarts()
        .into_iter()
        .filter(|r| r.id == a.id && r.reason.as_deref() == Some("never_started"))
        .collect();
    assert_eq!(held.len(), 1, "one record per episode: {:?}", sb.restarts());
    assert_eq!(held[0].action, "skipped");
    assert_eq!(a.boots(), 0);
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn the_version_read_at_start_gates_the_pane_sample_and_is_in_daemon_status() {
    let sb = Sandbox::new();
    let a = sb.launch("conductor-ops", "conductor", Tool::Custom, None);
    // Seen running once, so its death is no never-started session.
    let seen = sb.run_watchdog(&["--once"], &[]);
    assert_eq!(seen.status.code(), Some(0), "{seen:?}");
    sb.kill_tmux_session(&a);
    assert!(
        wait_until(RECOVERY, || sb.status(&a) == "error"),
        "{}",
        sb.show(&a)
    );
    let out = sb.run_watchdog(&["--once", "--dry-run"], &[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = fs::read_to_string(sb.watchdog_dir().join("daemon-status.json"))
        .expect("daemon-status.json");
    let status: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let real = sb.cli(&["version"]);
    let named = String::from_utf8_lossy(&real.stdout);
    let version = status["agent_deck_version"].as_str().expect("a version");
    assert!(
        named.contains(&format!("v{version}")),
        "{named} / {version}"
    );
    assert_eq!(sb.watchdog_calls_with(&["version"]).len(), 2, "one a run");
    let samples = sb.watchdog_calls_with(&["output", "--pane"]);
    assert!(!samples.is_empty(), "the dry run sampled the dead pane");
    // 1.14.0 has no --primary: it would exit 2 like NOT_FOUND.
    assert!(
        samples.iter().all(|c| !c.contains("--primary")),
        "{samples:?}"
    );
}
