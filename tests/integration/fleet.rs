//! Black-box tests of fleet-level safety (SPEC §5.2-§5.7): cascades, the 429
//! circuit breaker, one alert per episode, state that survives the
//! watchdog's own restart, and Telegram.

use std::fs;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::files::all_files_text;
use crate::support::fixtures::{auth_held, conductor, crash_looping, CONDUCTOR};
use crate::support::telegram::TelegramStub;
use crate::support::wait_until;
use crate::support::watchdog::{assert_ok, Wd};

/// When the simulator logged each call whose argv has all of `words`.
fn call_times(wd: &Wd, words: &[&str]) -> Vec<f64> {
    wd.sim
        .call_log()
        .into_iter()
        .filter(|c| words.iter().all(|w| c.argv.iter().any(|a| a == w)))
        .map(|c| c.ts)
        .collect()
}

/// Every boot of this session is rate-limited by the API.
fn rate_limited(c: &mut Value) {
    c["on_restart"] = json!("no_effect");
    c["on_start"] = json!("fail");
    c["transcript"] = json!("API Error: Rate limit reached");
}

fn six_conductors(edit: impl Fn(&mut Value)) -> Vec<Value> {
    (0..6)
        .map(|i| {
            let mut c = conductor(
                &format!("{i:08x}-1755890000"),
                &format!("conductor-{i}"),
                "error",
            );
            edit(&mut c);
            c
        })
        .collect()
}

#[test]
fn cascade_alerts_once_settles_then_revives_one_at_a_time() {
    let wd = Wd::new()
        .env("CASCADE_WAIT_S", "1")
        .env("CASCADE_THRESHOLD", "5")
        .env("CASCADE_WINDOW_S", "0.1");
    wd.sessions(six_conductors(|_| {}));
    wd.sim
        .update_state(|s| s["delay_s"] = json!({"restart": 0.2}));
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(20), "not all six restarted", || {
        wd.restart_calls() == 6
    });
    assert_eq!(wd.escalations_of("cascade-detected"), 1);
    let detected = wd.escalations_with("cascade-detected")[0].ts;
    let restarts = call_times(&wd, &["session", "restart"]);
    assert!(
        restarts[0] >= detected + 1.0,
        "first restart {:.2}s after the alert",
        restarts[0] - detected
    );
    // Each restart call takes 0.2 s in the simulator: starts at least that far apart never overlap.
    for pair in restarts.windows(2) {
        assert!(
            pair[1] - pair[0] >= 0.2,
            "restart calls overlap: {restarts:?}"
        );
    }
}

#[test]
fn a_cascade_s_revive_is_one_episode_that_never_trips_the_burst_guard() {
    // The burst guard's own window (10 s by default): six revives in a row
    // would be a burst, but they are the episode's, one at a time (#38).
    let wd = Wd::new()
        .env("CASCADE_WAIT_S", "1")
        .env("CASCADE_THRESHOLD", "5");
    wd.sessions(six_conductors(|_| {}));
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(20), "not all six restarted", || {
        wd.restart_calls() == 6
    });
    wd.wait_for_more_ticks(3);
    assert_eq!(wd.escalations_of("cascade-detected"), 1);
    assert_eq!(wd.escalations_of("cascade"), 0, "{:?}", wd.escalations());
    let paused = wd
        .restarts()
        .into_iter()
        .filter(|r| r.reason.as_deref() == Some("cascade_pause"));
    assert_eq!(paused.count(), 0);
}

#[test]
fn cascade_of_auth_held_sessions_alerts_once() {
    let wd = Wd::new().env("CASCADE_WAIT_S", "0.2");
    wd.sessions(six_conductors(|c| {
        c["auth_hold"] = json!({"reason": "auth_death", "remedy": "r", "evidence": "e", "boot_attempts": 1, "ts": 1});
    }));
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(20), "too few auth_hold records", || {
        wd.liveness_with("auth_hold").len() >= 18
    });
    assert_eq!(wd.restart_calls(), 0);
    assert_eq!(wd.escalations_of("cascade-detected"), 1);
    assert_eq!(wd.escalations_of("auth-hold"), 6);
}

#[test]
fn three_rate_limited_boots_open_the_breaker_once() {
    let wd = Wd::new()
        .env("CIRCUIT_BREAKER_429_THRESHOLD", "3")
        .env("CIRCUIT_BREAKER_PAUSE_S", "2")
        .env("API_429_BACKOFF_S", "60");
    let mut sessions: Vec<Value> = six_conductors(rate_limited).into_iter().take(3).collect();
    sessions.push(conductor(CONDUCTOR, "conductor-healthy-later", "running"));
    wd.sessions(sessions);
    let d = wd.spawn(&[]);
    wd.wait_for_escalations(&d, "circuit-breaker", 1);
    let opened = wd.escalations_with("circuit-breaker")[0].ts;
    // Now a fourth conductor crashes: no restart may run until the breaker closes.
    wd.sim
        .update_state(|s| s["sessions"][3]["status"] = json!("error"));
    d.wait_for(
        Duration::from_secs(20),
        "the fourth conductor was never restarted",
        || !call_times(&wd, &["restart", CONDUCTOR]).is_empty(),
    );
    let first = call_times(&wd, &["restart", CONDUCTOR])[0];
    assert!(
        first >= opened + 2.0,
        "restart {:.2}s after the breaker opened",
        first - opened
    );
    assert_eq!(wd.escalations_of("circuit-breaker"), 1);
}

#[test]
fn sigkill_after_the_budget_is_spent_keeps_the_rate_limit() {
    let wd = Wd::new()
        .env("RATE_LIMIT_MAX", "2")
        .env("RATE_LIMIT_WINDOW_S", "300");
    let c = crash_looping(CONDUCTOR, "conductor-ops");
    wd.sessions(vec![c]);
    let mut d = wd.spawn(&[]);
    wd.wait_for_escalations(&d, "rate-limit", 1);
    d.signal_and_wait(libc::SIGKILL, Duration::from_secs(5));
    assert_eq!(wd.restart_calls(), 2);
    let d2 = wd.spawn(&[]);
    wd.wait_for_more_ticks(8);
    assert_eq!(
        wd.restart_calls(),
        2,
        "the restarted watchdog forgot the budget; stderr:\n{}",
        d2.stderr()
    );
    assert_eq!(
        wd.escalations_of("rate-limit"),
        1,
        "the dedup window was forgotten too"
    );
}

#[test]
fn corrupt_state_file_is_kept_aside_and_the_daemon_starts() {
    for bad in ["{\"sessions\": {\"x\": {\"restarts\": [1", "garbage", ""] {
        let wd = Wd::new();
        fs::create_dir_all(wd.watchdog_dir()).unwrap();
        fs::write(wd.watchdog_dir().join("state.json"), bad).unwrap();
        wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "error")]);
        let out = wd.run(&["--once"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("corrupt"), "{err}");
        let kept: Vec<_> = fs::read_dir(wd.watchdog_dir())
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("state.json.corrupt-")
            })
            .collect();
        assert_eq!(kept.len(), 1);
        assert_eq!(fs::read_to_string(kept[0].path()).unwrap(), bad);
        assert_eq!(wd.restart_calls(), 1);
        let state: Value = serde_json::from_str(
            &fs::read_to_string(wd.watchdog_dir().join("state.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            state["sessions"][CONDUCTOR]["restarts"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }
}

#[test]
fn telegram_gets_conductor_alerts_only_and_never_sees_the_token_leak() {
    const TOKEN: &str = "7777777:SECRET-BOT-TOKEN-abc";
    let stub = TelegramStub::start();
    let wd = Wd::new()
        .env("RATE_LIMIT_MAX", "1")
        .env("TELEGRAM_ESCALATION_CHAT_ID", "-100123")
        .env("TELEGRAM_BOT_TOKEN", TOKEN)
        .env("TELEGRAM_API_BASE", &stub.base);
    let failing = |c: &mut Value| {
        c["on_restart"] = json!("no_effect");
        c["on_start"] = json!("already_running");
    };
    let mut c = conductor(CONDUCTOR, "conductor-ops", "error");
    failing(&mut c);
    let worker_id = "a0b1c2d3-1755899999";
    let mut w = json!({"id": worker_id, "title": "worker-1", "group": "srv", "profile": "default",
                       "status": "error", "pane": "p", "claude_session_id": "c1a0de00-1"});
    failing(&mut w);
    wd.sessions(vec![c, w]);
    fs::create_dir_all(wd.watchdog_dir().join("autorestart")).unwrap();
    fs::write(wd.watchdog_dir().join("autorestart").join(worker_id), "").unwrap();
    let d = wd.spawn(&["--verbose"]);
    wd.wait_for_escalations(&d, "rate-limit", 2);
    assert!(wait_until(Duration::from_secs(10), || !stub
        .requests()
        .is_empty()));
    wd.wait_for_more_ticks(3);
    let requests = stub.requests();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    let req = &requests[0];
    assert!(
        req.starts_with(&format!("POST /bot{TOKEN}/sendMessage")),
        "{req}"
    );
    assert!(req.contains("chat_id=-100123"), "{req}");
    assert!(
        req.contains("rate-limit") && req.contains("conductor-ops"),
        "{req}"
    );
    let sent: Vec<_> = wd
        .escalations()
        .into_iter()
        .filter(|e| e.telegram)
        .collect();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].sid.as_deref(), Some(CONDUCTOR));
    assert!(!d.stderr().contains("SECRET-BOT-TOKEN"), "token in stderr");
    for (path, text) in all_files_text(&wd.watchdog_dir()) {
        assert!(
            !text.contains("SECRET-BOT-TOKEN"),
            "token in {}",
            path.display()
        );
    }
}

#[test]
fn a_pause_that_starts_during_the_wait_skips_without_deadlock() {
    // Burst guard at three restarts, and no cascade: two die, are revived,
    // then two more die (two at once is below the threshold). The third
    // restart in the window makes the burst; the fourth, queued behind it,
    // finds the pause when its turn comes and must skip it, with the daemon
    // still working. (A cascade's own revive never trips the guard.)
    let wd = Wd::new()
        .env("CASCADE_THRESHOLD", "3")
        .env("CASCADE_WAIT_S", "0")
        .env("CASCADE_WINDOW_S", "60")
        .env("CASCADE_PAUSE_S", "60");
    let sessions: Vec<Value> = (0..4)
        .map(|i| {
            let status = if i < 2 { "error" } else { "running" };
            conductor(
                &format!("{i:08x}-1755890000"),
                &format!("conductor-{i}"),
                status,
            )
        })
        .collect();
    wd.sessions(sessions);
    let mut d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(10), "the first two not revived", || {
        wd.restart_calls() == 2
    });
    wd.sim.update_state(|s| {
        s["sessions"][2]["status"] = json!("error");
        s["sessions"][3]["status"] = json!("error");
    });
    wd.wait_for_escalations(&d, "cascade", 1);
    d.wait_for(Duration::from_secs(10), "no cascade_pause skip", || {
        d.stderr().contains("skipped after the wait: cascade_pause")
    });
    wd.wait_for_more_ticks(3);
    assert_eq!(wd.restart_calls(), 3);
    assert_eq!(wd.escalations_of("cascade-detected"), 0);
    let (code, took) = d.signal_and_wait(libc::SIGTERM, Duration::from_secs(5));
    assert_eq!(code, Some(0), "stderr:\n{}", d.stderr());
    assert!(took < Duration::from_secs(2));
}

#[test]
fn telegram_429_is_retried_after_retry_after() {
    let stub = TelegramStub::start_with_429s(1);
    let wd = Wd::new().telegram(&stub.base);
    let c = auth_held(CONDUCTOR, "conductor-ops");
    wd.sessions(vec![c]);
    let out = wd.run(&["--once"]);
    assert_ok(&out);
    let requests = stub.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert!(requests.iter().all(|r| r.contains("auth-hold")));
}

#[test]
fn dry_run_never_sends_telegram() {
    let stub = TelegramStub::start();
    let wd = Wd::new().telegram(&stub.base);
    let c = auth_held(CONDUCTOR, "conductor-ops");
    wd.sessions(vec![c]);
    let out = wd.run(&["--once", "--dry-run"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(wd.escalations_of("auth-hold"), 1);
    assert!(stub.requests().is_empty());
}

#[test]
fn sigkill_keeps_backoff_breaker_and_cooldown() {
    // Three rate-limited boots open the breaker; after SIGKILL and a new start
    // no restart runs (breaker and backoffs remembered) and no second alert goes out.
    let wd = Wd::new()
        .env("CIRCUIT_BREAKER_429_THRESHOLD", "3")
        .env("CIRCUIT_BREAKER_PAUSE_S", "300")
        .env("API_429_BACKOFF_S", "300");
    wd.sessions(six_conductors(rate_limited).into_iter().take(3).collect());
    let mut d = wd.spawn(&[]);
    wd.wait_for_escalations(&d, "circuit-breaker", 1);
    d.signal_and_wait(libc::SIGKILL, Duration::from_secs(5));
    let before = wd.restart_calls();
    let state: Value =
        serde_json::from_str(&fs::read_to_string(wd.watchdog_dir().join("state.json")).unwrap())
            .unwrap();
    assert!(state["breaker_open_until"].as_f64().unwrap() > 0.0);
    let d2 = wd.spawn(&[]);
    wd.wait_for_more_ticks(8);
    assert_eq!(wd.restart_calls(), before, "stderr:\n{}", d2.stderr());
    assert_eq!(wd.escalations_of("circuit-breaker"), 1);
    let v = wd.status_json();
    assert_eq!(v["breaker"]["open"], true);
    assert!(v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["backoff_remaining_s"].as_f64().unwrap() > 0.0));
}

/// The state the daemon saved, parsed.
fn saved_state(wd: &Wd) -> Value {
    let text = fs::read_to_string(wd.watchdog_dir().join("state.json")).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

const SECOND: &str = "4f9c2a1b-1755891235";

#[test]
fn a_fleet_that_vanishes_alerts_once_keeps_its_history_and_the_budget_holds_when_it_is_back() {
    // agent-deck up to 1.16.13 could read an empty store beside the full one
    // (#2323): `list --all` then answers `null` (or "No profiles found.").
    for (version, empty) in [(None, "null"), (Some("1.16.13"), "no profiles")] {
        let stub = TelegramStub::start();
        let wd = Wd::new()
            .telegram(&stub.base)
            .env("RATE_LIMIT_MAX", "2")
            .env("RATE_LIMIT_WINDOW_S", "300");
        let fleet = vec![
            crash_looping(CONDUCTOR, "conductor-ops"),
            conductor(SECOND, "conductor-two", "running"),
        ];
        wd.sessions(fleet.clone());
        wd.release(version);
        let d = wd.spawn(&[]);
        wd.wait_for_escalations(&d, "rate-limit", 1);
        assert_eq!(wd.restart_calls(), 2);
        wd.sim.update_state(|s| {
            s["sessions"] = json!([]);
            s["profiles_exist"] = json!(empty == "null");
        });
        wd.wait_for_escalations(&d, "fleet-vanished", 1);
        wd.wait_for_more_ticks(8);
        assert_eq!(
            wd.escalations_of("fleet-vanished"),
            1,
            "{empty}: once per episode"
        );
        let alert = &wd.escalations_with("fleet-vanished")[0];
        assert!(
            alert.sid.is_none() && alert.telegram,
            "{empty}: fleet-wide, to Telegram"
        );
        assert!(alert.message.contains("conductor-ops"), "{}", alert.message);
        assert!(wait_until(Duration::from_secs(10), || stub
            .requests()
            .iter()
            .any(|r| r.contains("fleet-vanished"))));
        let state = saved_state(&wd);
        let kept = state["sessions"][CONDUCTOR]["restarts"]
            .as_array()
            .map(Vec::len);
        assert_eq!(
            kept,
            Some(2),
            "{empty}: the rate-limit history is kept: {state}"
        );
        assert!(state["vanished"]["ids"]
            .as_array()
            .is_some_and(|a| a.len() == 2));
        // The store is back: the crash-looping conductor is still out of budget.
        wd.sim.update_state(|s| {
            s["sessions"] = json!(fleet);
            s["profiles_exist"] = json!(true);
        });
        d.wait_for(
            Duration::from_secs(10),
            &format!("{empty}: the vanished mark stays"),
            || saved_state(&wd)["vanished"].is_null(),
        );
        wd.wait_for_more_ticks(8);
        assert_eq!(wd.restart_calls(), 2, "{empty}: the old budget still holds");
        assert_eq!(wd.escalations_of("fleet-vanished"), 1);
    }
}

#[test]
fn a_locked_store_is_no_vanished_fleet_is_told_once_and_a_death_under_it_is_revived_after() {
    let wd = Wd::new();
    let fleet = vec![
        conductor(CONDUCTOR, "conductor-ops", "running"),
        conductor(SECOND, "conductor-two", "running"),
    ];
    wd.sessions(fleet);
    let d = wd.spawn(&[]);
    wd.wait_for_more_ticks(3);
    // Another process holds agent-deck's store: list --all prints null, the
    // rest fail to open it; meanwhile a conductor dies.
    let lock = json!({"mode": "locked"});
    wd.sim.update_state(|s| {
        s["faults"] =
            json!({"list_all": lock, "list": lock, "show": lock, "restart": lock, "start": lock});
        s["sessions"][0]["status"] = json!("error");
    });
    wd.wait_for_escalations(&d, "store-locked", 1);
    wd.wait_for_more_ticks(6);
    assert_eq!(wd.escalations_of("store-locked"), 1, "once per episode");
    assert_eq!(wd.escalations_of("fleet-vanished"), 0, "{}", d.stderr());
    assert_eq!(wd.restart_calls(), 0, "nothing is restarted blind");
    let err = d.stderr();
    assert!(
        err.contains("agent-deck's store is locked (")
            && err.contains("keeping the last known fleet"),
        "{err}"
    );
    assert!(!err.contains("watching 0"), "{err}");
    wd.sim.update_state(|s| s["faults"] = json!({}));
    d.wait_for(
        Duration::from_secs(15),
        "the dead conductor revived",
        || wd.restart_calls() == 1,
    );
    d.wait_for(Duration::from_secs(10), "the store said readable", || {
        d.stderr().contains("session list: readable again after")
    });
    assert_eq!(wd.escalations_of("fleet-vanished"), 0);
}

#[test]
fn a_cli_outage_is_one_line_when_it_starts_and_one_when_it_ends() {
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let d = wd.spawn(&[]);
    wd.wait_for_more_ticks(3);
    let broken = json!({"mode": "exit1"});
    wd.sim
        .update_state(|s| s["faults"] = json!({"list_all": broken, "list": broken}));
    wd.wait_for_more_ticks(10);
    wd.sim.update_state(|s| s["faults"] = json!({}));
    d.wait_for(Duration::from_secs(10), "the outage said over", || {
        let err = d.stderr();
        err.contains("statuses of profile 'default': readable again after")
            && err.contains("session list: readable again after")
    });
    let err = d.stderr();
    let count = |text: &str| err.matches(text).count();
    assert_eq!(count("session list is unreadable"), 1, "{err}");
    assert_eq!(
        count("statuses of profile 'default' are unreadable"),
        1,
        "{err}"
    );
    assert_eq!(count("session list: readable again after"), 1, "{err}");
}

#[test]
fn a_restart_a_stopped_watchdog_left_without_outcome_is_named_with_what_it_reads_now() {
    let wd = Wd::new();
    wd.sessions(vec![
        conductor(CONDUCTOR, "conductor-ops", "running"),
        conductor(SECOND, "conductor-two", "running"),
    ]);
    fs::create_dir_all(wd.watchdog_dir()).unwrap();
    let rec = |id: &str, action: &str, ts: f64| {
        json!({"ts": ts, "id": id, "title": "t", "profile": "default", "action": action})
            .to_string()
    };
    let log = [
        rec(CONDUCTOR, "restart", 1_700_000_000.0),
        rec(SECOND, "restart", 1_700_000_000.0),
        rec(SECOND, "restarted", 1_700_000_001.0),
    ];
    fs::write(wd.watchdog_dir().join("restart.log"), log.join("\n") + "\n").unwrap();
    let out = wd.run(&["--once"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let named = format!("the restart of {CONDUCTOR} (conductor-ops) at ");
    assert!(err.contains(&named), "{err}");
    assert!(
        err.contains(
            "has no outcome on record: the watchdog stopped during it; it reads running now"
        ),
        "{err}"
    );
    assert_eq!(err.matches("has no outcome on record").count(), 1, "{err}");
}

#[test]
fn removing_the_only_conductor_raises_no_alarm() {
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let d = wd.spawn(&[]);
    wd.wait_for_more_ticks(3);
    wd.sim.update_state(|s| s["sessions"] = json!([]));
    wd.wait_for_more_ticks(6);
    assert!(wd.escalations().is_empty(), "stderr:\n{}", d.stderr());
    assert!(
        saved_state(&wd)["sessions"]
            .as_object()
            .is_none_or(|m| m.is_empty()),
        "a removed conductor's state goes"
    );
}

#[test]
fn an_unknown_substate_is_accepted_and_logged_once() {
    let wd = Wd::new();
    let mut c = conductor(CONDUCTOR, "conductor-ops", "running");
    c["substate"] = json!("teleporting");
    let mut other = conductor(SECOND, "conductor-two", "waiting");
    other["substate"] = json!("teleporting");
    wd.sessions(vec![c, other]);
    let d = wd.spawn(&[]);
    wd.wait_for_more_ticks(8);
    let said = d.stderr().matches("substate 'teleporting'").count();
    assert_eq!(said, 1, "stderr:\n{}", d.stderr());
    assert_eq!(wd.restart_calls(), 0);
    assert!(wd.escalations().is_empty());
}
