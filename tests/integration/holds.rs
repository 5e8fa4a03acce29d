//! Black-box tests of the critical sessions in `error` that a restart
//! cannot help, against the simulated agent-deck: a plan's usage limit and
//! Codex's login banner (substates of 1.16.11), and a stop that reads
//! `error` on agent-deck before 1.16.23 (#2453).

use std::time::Duration;

use agent_deck_watchdog::harness::Detail;
use serde_json::{json, Value};

use crate::support::fixtures::{conductor, CONDUCTOR};
use crate::support::watchdog::{Daemon, Wd};

/// A Codex conductor in `error` with `substate` (and `substate_detail`).
fn codex(substate: &str, detail: &str) -> Value {
    let mut c = conductor(CONDUCTOR, "conductor-codex", "error");
    c["tool"] = json!("codex");
    c["substate"] = json!(substate);
    c["substate_detail"] = json!(detail);
    c
}

#[test]
fn codex_at_its_login_banner_is_an_auth_hold_told_once_and_never_restarted() {
    for version in [None, Some("1.16.26")] {
        let wd = Wd::new().env("POST_RESTART_COOLDOWN_S", "0.1");
        let mut c = codex("", "");
        c["status"] = json!("running");
        wd.sessions(vec![c]);
        wd.release(version);
        let d = wd.spawn(&[]);
        wd.wait_for_more_ticks(2);
        wd.sim.update_state(|s| {
            s["sessions"][0]["status"] = json!("error");
            s["sessions"][0]["substate"] = json!("auth-401");
        });
        d.wait_for(Duration::from_secs(20), &format!("{version:?}"), || {
            wd.liveness_with("auth_hold").len() >= 3
        });
        assert_eq!(wd.restart_calls(), 0, "{version:?}");
        assert_eq!(
            wd.escalations_of("auth-hold"),
            1,
            "{version:?}: once per episode"
        );
        let rec = &wd.liveness_with("auth_hold")[0];
        assert_eq!(rec.auth_hold_reason.as_deref(), Some("auth-401"));
    }
}

/// `at` (Unix seconds) as the Codex banner prints it in the local zone.
fn banner_time(at: f64) -> String {
    let zoned = jiff::Timestamp::from_second(at as i64)
        .unwrap()
        .to_zoned_datetime(jiff::tz::TimeZone::system());
    zoned
        .strftime("try again at %b %-dth, %Y %-I:%M %p")
        .to_string()
}

#[test]
fn a_usage_limit_is_rate_limited_and_backed_off_until_its_retry_time() {
    let later = crate::support::now() + 7200.0;
    let wd = Wd::new().env("API_429_BACKOFF_S", "1");
    wd.sessions(vec![codex("usage-limit", &banner_time(later))]);
    wd.release(Some("1.16.26"));
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(10), "never rate-limited", || {
        !wd.restarts_with("rate-limited").is_empty()
    });
    wd.wait_for_more_ticks(15);
    let limited = wd.restarts_with("rate-limited");
    assert_eq!(limited.len(), 1, "one record per limit");
    let Detail::RateLimited { backoff_s: backoff } = limited[0].detail else {
        panic!("no backoff: {limited:?}");
    };
    assert!(
        (7080.0..=7200.0).contains(&backoff),
        "backed off {backoff}s, not API_429_BACKOFF_S"
    );
    assert!(limited[0]
        .reason
        .as_deref()
        .unwrap()
        .contains("try again at"));
    assert_eq!(wd.restart_calls(), 0, "no restart before the retry time");
    assert_eq!(wd.restarts_with("skipped").len(), 1);
}

#[test]
fn a_usage_limit_without_a_retry_time_backs_off_api_429_backoff_s_then_is_restarted() {
    // 1.14.0 prints no `substate_detail`, whatever the session holds.
    let wd = Wd::new().env("API_429_BACKOFF_S", "1.5");
    wd.sessions(vec![codex(
        "usage-limit",
        "try again at Oct 10th, 2026 8:03 AM",
    )]);
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(10), "never rate-limited", || {
        !wd.restarts_with("rate-limited").is_empty()
    });
    let limited = &wd.restarts_with("rate-limited")[0];
    assert_eq!(limited.detail, Detail::RateLimited { backoff_s: 1.5 });
    assert_eq!(wd.restart_calls(), 0);
    d.wait_for(
        Duration::from_secs(10),
        "the 429 path restarts it after the backoff",
        || wd.restart_calls() >= 1,
    );
    let first = wd
        .sim
        .call_log()
        .into_iter()
        .find(|c| c.argv.iter().any(|a| a == "restart"));
    assert!(first.unwrap().ts >= limited.ts + 1.5);
    assert_eq!(wd.restarts_with("rate-limited").len(), 1);
}

/// A daemon that saw the conductor `stopped` at agent-deck `version`, and
/// the conductor now reading `error`.
fn stopped_then_error(version: &str) -> (Wd, Daemon) {
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "stopped")]);
    wd.release(Some(version));
    let d = wd.spawn(&[]);
    wd.wait_for_more_ticks(3);
    wd.set_status("error");
    (wd, d)
}

#[test]
fn a_stop_that_flips_to_error_below_1_16_23_stays_a_stop_until_started_by_hand() {
    // notify-daemon's flip, half a second after the stop (#2453).
    let (wd, d) = stopped_then_error("1.14.0");
    d.wait_for(Duration::from_secs(10), "never held", || {
        !wd.restarts_with("skipped").is_empty()
    });
    wd.wait_for_more_ticks(10);
    let held = wd.restarts_with("skipped");
    assert_eq!(held.len(), 1, "once per episode");
    assert_eq!(held[0].reason.as_deref(), Some("stopped_before"));
    assert_eq!(wd.restart_calls(), 0);
    // A human starts it; then it crashes: that is a death.
    wd.set_status("running");
    wd.wait_for_more_ticks(3);
    wd.set_status("error");
    d.wait_for(
        Duration::from_secs(10),
        "no restart once started by hand",
        || wd.restart_calls() >= 1,
    );
    assert_eq!(wd.restarts_with("skipped").len(), 1);
}

#[test]
fn from_1_16_23_an_error_after_a_stop_is_a_death() {
    // 1.16.23 fixed the flip (#2453): an `error` after `stopped` is the
    // session dying after a human started it between two reads.
    let (wd, d) = stopped_then_error("1.16.26");
    d.wait_for(Duration::from_secs(10), "no restart", || {
        wd.restart_calls() >= 1
    });
    assert!(wd.restarts_with("skipped").is_empty());
}

#[test]
fn the_stop_flag_survives_a_watchdog_restart() {
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "stopped")]);
    let mut d = wd.spawn(&[]);
    wd.wait_for_more_ticks(3);
    d.signal_and_wait(libc::SIGTERM, Duration::from_secs(5));
    wd.set_status("error");
    let out = wd.run(&["--once"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(wd.restart_calls(), 0);
    assert_eq!(
        wd.restarts_with("skipped")[0].reason.as_deref(),
        Some("stopped_before")
    );
}
