//! Black-box tests of the command line, the exit codes, the instance lock and
//! signal handling.

use std::time::Duration;

use serde_json::json;

use crate::support::fixtures::{conductor, CONDUCTOR};
use crate::support::wait_until;
use crate::support::watchdog::Wd;

#[test]
fn help_and_version_exit_zero() {
    let wd = Wd::new();
    let out = wd.run(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--dry-run"));
    let out = wd.run(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("agent-deck-watchdog "));
}

#[test]
fn unknown_flag_is_exit_2_naming_it() {
    let out = Wd::new().run(&["--once", "--frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("agent-deck-watchdog: ") && err.contains("--frobnicate"),
        "{err}"
    );
}

#[test]
fn bad_setting_is_exit_2_naming_variable_and_value() {
    for (k, v) in [
        ("RATE_LIMIT_MAX", "lots"),
        ("SAFETY_POLL_INTERVAL_S", "-5"),
        ("SUBPROCESS_TIMEOUT_S", "0"),
    ] {
        let wd = Wd::new().env(k, v);
        let out = wd.run(&["--once"]);
        assert_eq!(out.status.code(), Some(2), "{k}={v}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(k) && err.contains(v), "{err}");
        assert!(
            wd.sim.calls().is_empty(),
            "a bad setting still ran agent-deck"
        );
    }
}

#[test]
fn print_config_shows_values_and_sources_but_not_the_token() {
    let wd = Wd::new()
        .env("RATE_LIMIT_MAX", "7")
        .env("TELEGRAM_BOT_TOKEN", "123456:SECRET-TOKEN");
    let out = wd.run(&["--print-config"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("RATE_LIMIT_MAX"))
        .unwrap();
    assert!(line.contains('7') && line.contains("environment"), "{line}");
    let line = text
        .lines()
        .find(|l| l.starts_with("CASCADE_THRESHOLD"))
        .unwrap();
    assert!(line.contains('5') && line.contains("default"), "{line}");
    assert!(!text.contains("SECRET-TOKEN"));
}

#[test]
fn the_pane_watch_settings_are_printed_with_their_sources_and_bad_values_exit_2() {
    // Wd sets SAFETY_POLL_INTERVAL_S (0.2): the armed poll keeps it.
    let out = Wd::new().env("PANE_WATCH", "off").run(&["--print-config"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |name: &str| {
        let l = text.lines().find(|l| l.starts_with(name));
        l.unwrap_or_else(|| panic!("no {name}: {text}")).to_owned()
    };
    assert!(line("PANE_WATCH ").contains("off  (environment)"), "{text}");
    assert!(
        line("PANE_LIST_INTERVAL_S").contains("5s  (default)"),
        "{text}"
    );
    let armed = line("ARMED_POLL_INTERVAL_S");
    assert!(armed.contains("0.2s  (SAFETY_POLL_INTERVAL_S)"), "{armed}");
    for (name, raw) in [
        ("PANE_WATCH", "yes"),
        ("PANE_LIST_INTERVAL_S", "0"),
        ("ARMED_POLL_INTERVAL_S", "-3"),
    ] {
        let out = Wd::new().env(name, raw).run(&["--print-config"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}={raw}: {err}");
        assert!(err.contains(&format!("{name}=\"{raw}\"")), "{err}");
    }
}

#[test]
fn second_instance_exits_3_naming_the_pid() {
    let wd = Wd::new().env("SAFETY_POLL_INTERVAL_S", "30");
    wd.sessions(vec![]);
    let d = wd.spawn(&[]);
    wd.wait_for_first_tick();
    let out = wd.run(&["--once"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&d.pid().to_string()), "{err}");
}

#[test]
fn sigterm_stops_within_two_seconds_during_a_serialization_wait() {
    let wd = Wd::new().env("MIN_GLOBAL_RESTART_INTERVAL_S", "60");
    let second = "b1b2c3d4-1755890000";
    wd.sessions(vec![
        conductor(CONDUCTOR, "conductor-a", "error"),
        conductor(second, "conductor-b", "error"),
    ]);
    let mut d = wd.spawn(&[]);
    d.wait_for(
        Duration::from_secs(10),
        "never reached the serialization wait",
        || d.stderr().contains("restarts are serialized"),
    );
    let (code, took) = d.signal_and_wait(libc::SIGTERM, Duration::from_secs(5));
    assert_eq!(code, Some(0), "stderr:\n{}", d.stderr());
    assert!(took < Duration::from_secs(2), "took {took:?} to stop");
    assert_eq!(wd.restart_calls(), 1);
    assert!(
        wd.sim.processes().is_empty(),
        "an agent-deck child outlived the daemon"
    );
}

#[test]
fn sigterm_kills_a_hanging_cli_call() {
    let wd = Wd::new().env("SUBPROCESS_TIMEOUT_S", "60");
    wd.sim
        .set_state(&json!({"profiles_exist": true, "sessions": [],
                              "faults": {"list_all": {"mode": "hang", "seconds": 60}}}));
    let mut d = wd.spawn(&[]);
    assert!(wait_until(Duration::from_secs(10), || !wd
        .sim
        .processes()
        .is_empty()));
    let (code, took) = d.signal_and_wait(libc::SIGINT, Duration::from_secs(5));
    assert_eq!(code, Some(0));
    assert!(took < Duration::from_secs(2), "took {took:?} to stop");
    assert!(
        wait_until(Duration::from_secs(2), || wd.sim.processes().is_empty()),
        "the hanging agent-deck outlived the daemon"
    );
}
