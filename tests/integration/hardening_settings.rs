//! Black-box tests of the hardening of settings, clocks, text from outside and
//! stale cleanup (SPEC §6.3, §11): bounded settings refused with the value as
//! given, no lossy non-UTF-8 paths, no spinning on a tiny `WATCHDOG_USEC`, no
//! forged log lines, clipped records, a state from a clock running ahead, and
//! a one-off in group `conductor` removed by the stale cleanup.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::files::write_script;
use crate::support::fixtures::{conductor, crash_looping, CONDUCTOR};
use crate::support::sim::shell_command;
use crate::support::wait_until;
use crate::support::watchdog::Wd;

/// Runs `--print-config` with `name=value` and expects exit 2 naming both,
/// exactly as given.
fn assert_refused(name: &str, value: &str) -> String {
    let out = Wd::new().env(name, value).run(&["--print-config"]);
    assert_refused_output(&out, name, value)
}

fn assert_refused_output(out: &Output, name: &str, value: &str) -> String {
    assert_eq!(out.status.code(), Some(2), "{name}={value} was accepted");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        err.starts_with("agent-deck-watchdog: ") && err.contains(name) && err.contains(value),
        "{name}={value}: {err}"
    );
    assert!(out.stdout.is_empty(), "a refused setting printed a config");
    err
}

fn config_line(wd: &Wd, name: &str) -> String {
    let out = wd.run(&["--print-config"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn event_queue_maxsize_has_an_upper_bound() {
    for value in ["4294967295", "50000000", "1000001"] {
        assert_refused("EVENT_QUEUE_MAXSIZE", value);
    }
    // The daemon itself refuses it before calling agent-deck.
    let wd = Wd::new().env("EVENT_QUEUE_MAXSIZE", "4294967295");
    let out = wd.run(&["--once"]);
    assert_refused_output(&out, "EVENT_QUEUE_MAXSIZE", "4294967295");
    assert!(wd.sim.calls().is_empty());
    let wd = Wd::new().env("EVENT_QUEUE_MAXSIZE", "1000000");
    assert!(config_line(&wd, "EVENT_QUEUE_MAXSIZE").contains("1000000"));
}

#[test]
fn every_numeric_setting_has_an_upper_bound() {
    for (name, value) in [
        ("RATE_LIMIT_MAX", "4294967295"),
        ("CASCADE_THRESHOLD", "1000000"),
        ("TASK_DAILY_REDISPATCH_CAP", "99999999"),
        ("RATE_LIMIT_WINDOW_S", "1e12"),
        ("ESCALATION_DEDUP_S", "999999999"),
        ("SUBPROCESS_TIMEOUT_S", "86400"),
        ("SAFETY_POLL_INTERVAL_S", "inf"),
        ("LIVENESS_CONFIRM_GAP_S", "1e308"),
    ] {
        assert_refused(name, value);
    }
    // The bounds leave room for every real value.
    let wd = Wd::new()
        .env("RATE_LIMIT_MAX", "1000")
        .env("RATE_LIMIT_WINDOW_S", "86400")
        .env("SUBPROCESS_TIMEOUT_S", "3600");
    assert!(config_line(&wd, "RATE_LIMIT_WINDOW_S").contains("86400s"));
}

#[test]
fn a_tiny_positive_setting_is_refused_showing_the_value_as_given() {
    for name in [
        "SAFETY_POLL_INTERVAL_S",
        "SUBPROCESS_TIMEOUT_S",
        "RATE_LIMIT_WINDOW_S",
        "POLLER_CHECK_INTERVAL_S",
        "WAITING_PATROL_THRESHOLD_S",
    ] {
        let err = assert_refused(name, "1e-10");
        assert!(!err.contains("=0 "), "{err}");
    }
}

#[test]
fn a_non_utf8_path_setting_is_exit_2_naming_the_variable() {
    for name in [
        "AGENT_DECK_ROOT",
        "AGENT_DECK_BIN",
        "AGENT_DECK_HOOKS_DIR",
        "TASK_TIMERS_FILE",
        "TASK_PARTIAL_HMAC_KEY_FILE",
        "HOME",
    ] {
        let wd = Wd::new();
        let mut bad = wd.home.path().as_os_str().as_bytes().to_vec();
        bad.extend_from_slice(b"/r\xffoot");
        let out = wd
            .command(&["--once"])
            .env(name, OsStr::from_bytes(&bad))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(name) && err.contains(r"r\xFFoot") && err.contains("UTF-8"),
            "{name}: {err}"
        );
        assert!(wd.sim.calls().is_empty(), "{name}: agent-deck was called");
        let lossy = wd.home.path().join("r\u{FFFD}oot");
        assert!(!lossy.exists(), "{name}: {} was created", lossy.display());
    }
}

#[test]
fn a_sub_second_watchdog_usec_does_not_spin_the_main_loop() {
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let (wd, sock) = wd.notify_socket(Duration::from_millis(100));
    let wd = wd
        .env("SAFETY_POLL_INTERVAL_S", "30")
        .env("WATCHDOG_USEC", "1");
    let d = wd.spawn(&[]);
    let mut buf = [0u8; 4096];
    let ready = wait_until(Duration::from_secs(10), || {
        sock.recv(&mut buf)
            .is_ok_and(|n| buf[..n].starts_with(b"READY=1"))
    });
    assert!(ready, "no READY=1; stderr:\n{}", d.stderr());
    let (start, mut pings) = (Instant::now(), 0);
    while start.elapsed() < Duration::from_secs(2) {
        if let Ok(n) = sock.recv(&mut buf) {
            pings += usize::from(buf[..n].starts_with(b"WATCHDOG=1"));
        }
    }
    // A one-second interval pinged at half of it: about four in two seconds.
    assert!(pings <= 8, "{pings} watchdog pings in two seconds");
    assert!(pings >= 2, "{pings} watchdog pings in two seconds");
    assert!(d.stderr().contains("WATCHDOG_USEC=1"), "{}", d.stderr());
}

#[test]
fn a_title_with_a_newline_cannot_forge_a_log_line() {
    let forged = "conductor-x\n<0>forged: all conductors healthy\r\u{1b}[2K";
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, forged, "error")]);
    // Under journald: every line carries its own priority, none a forged one.
    let log = wd.home.path().join("journal.log");
    let file = fs::File::create(&log).unwrap();
    let meta = file.metadata().unwrap();
    let status = wd
        .command(&["--once", "--dry-run"])
        .env("JOURNAL_STREAM", format!("{}:{}", meta.dev(), meta.ino()))
        .stdout(Stdio::null())
        .stderr(file)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let text = fs::read_to_string(&log).unwrap();
    assert!(
        text.contains(r"conductor-x\n<0>forged: all conductors healthy\r\u{1b}[2K"),
        "{text}"
    );
    for line in text.lines() {
        let prio = line
            .strip_prefix('<')
            .and_then(|r| r.split_once('>'))
            .map(|(p, _)| p);
        assert!(
            matches!(prio, Some("3" | "4" | "6" | "7")),
            "forged or unprefixed line: {line:?}"
        );
        assert!(!line.contains('\r') && !line.contains('\u{1b}'), "{line:?}");
    }
    // On a terminal: every line starts with its timestamp.
    let out = wd.run(&["--once", "--dry-run"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains(r"conductor-x\n<0>forged"), "{text}");
    for line in text.lines() {
        assert!(
            line.get(..2) == Some("20") && !line.contains("\u{1b}"),
            "forged line: {line:?}"
        );
    }
}

#[test]
fn a_huge_skipped_reason_is_clipped_in_restart_log() {
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "error")]);
    // agent-deck declines the restart with a 5 MB reason; everything else is
    // the simulator.
    let wrapper = wd.home.path().join("agent-deck");
    write_script(
        &wrapper,
        &format!(
            "#!/bin/sh\n\
             for a in \"$@\"; do\n\
               if [ \"$a\" = restart ]; then\n\
                 printf '{{\"id\":\"{CONDUCTOR}\",\"title\":\"conductor-ops\",\"reason\":\"'\n\
                 head -c 5000000 /dev/zero | tr '\\000' r\n\
                 printf '\\\\n<0>forged\",\"skipped\":true,\"success\":true}}\\n'\n\
                 exit 0\n\
               fi\n\
             done\n\
             exec {} \"$@\"\n",
            shell_command()
        ),
    );
    let wd = wd.env("AGENT_DECK_BIN", &wrapper.display().to_string());
    let out = wd.run(&["--once"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = fs::read_to_string(wd.watchdog_dir().join("restart.log")).unwrap();
    for line in text.lines() {
        assert!(line.len() < 16 * 1024, "a {} byte record", line.len());
    }
    let refused = wd.restarts_with("cli-refused");
    assert_eq!(refused.len(), 1, "{text:.2000}");
    let reason = refused[0].reason.as_deref().unwrap();
    assert!(reason.len() <= 4096, "{} bytes", reason.len());
    assert!(reason.contains("rrrr"), "{reason:.200}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in stderr.lines() {
        assert!(line.chars().count() < 400, "a {} byte log line", line.len());
    }
}

#[test]
fn a_state_from_a_clock_running_ahead_does_not_hold_restarts() {
    // state.json written while the wall clock ran a day ahead: three restarts
    // "in the future" would hold the budget spent for a day.
    let wd = Wd::new().env("RATE_LIMIT_WINDOW_S", "1");
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "error")]);
    let ahead = crate::support::now() + 86_400.0;
    fs::create_dir_all(wd.watchdog_dir()).unwrap();
    fs::write(
        wd.watchdog_dir().join("state.json"),
        json!({"sessions": {CONDUCTOR: {"restarts": [ahead, ahead + 1.0, ahead + 2.0],
                                        "cooldown_until": ahead}},
               "last_restart_at": ahead,
               "escalated": {format!("{CONDUCTOR}|rate-limit"): ahead}})
        .to_string(),
    )
    .unwrap();
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(15), "the restart was held", || {
        wd.restart_calls() >= 1
    });
}

#[test]
fn stale_cleanup_removes_a_one_off_in_group_conductor() {
    let one_off = "e0b1c2d3-1755899999";
    let fleet = || {
        let mut visual = crash_looping(one_off, "test-visual");
        visual["group"] = json!("conductor");
        vec![crash_looping(CONDUCTOR, "conductor-ops"), visual]
    };
    let wd = Wd::new().env("STALE_ERROR_CLEANUP_S", "0.3");
    wd.sessions(fleet());
    let d = wd.spawn(&[]);
    let what = "test-visual was never removed";
    wd.wait_for_call(&d, &["remove", one_off], Duration::from_secs(15), what);
    wd.wait_for_more_ticks(5);
    assert!(
        wd.sim.calls_with(&["remove", CONDUCTOR]).is_empty(),
        "an escalation-critical conductor was removed"
    );
    let removed = wd.restarts_with("stale-removed");
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0].id, one_off);
    drop(d);
    // Never in dry-run.
    let wd = Wd::new().env("STALE_ERROR_CLEANUP_S", "0.3");
    wd.sessions(fleet());
    let _d = wd.spawn(&["--dry-run"]);
    wd.wait_for_more_ticks(10);
    assert!(wd.sim.calls_with(&["remove"]).is_empty());
}

#[test]
fn a_fatal_error_under_journald_is_said_at_priority_3_and_on_a_terminal_as_before() {
    let wd = Wd::new();
    let log = wd.home.path().join("journal.log");
    let file = fs::File::create(&log).unwrap();
    let meta = file.metadata().unwrap();
    let status = wd
        .command(&["--once"])
        .env("RATE_LIMIT_MAX", "lots")
        .env("JOURNAL_STREAM", format!("{}:{}", meta.dev(), meta.ino()))
        .stdout(Stdio::null())
        .stderr(file)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(2));
    let text = fs::read_to_string(&log).unwrap();
    assert!(
        text.starts_with("<3>agent-deck-watchdog: RATE_LIMIT_MAX"),
        "{text}"
    );
    assert!(text.lines().all(|l| l.starts_with("<3>")), "{text}");
    let out = wd
        .command(&["--once"])
        .env("RATE_LIMIT_MAX", "lots")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.starts_with("agent-deck-watchdog: RATE_LIMIT_MAX"),
        "{text}"
    );
}
