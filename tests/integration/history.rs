//! Black-box tests of `history` (SPEC §7): the real binary reading record
//! files written straight into the watchdog dir. `--json` parses back into
//! the typed records, `--report` shows secrets only as set or unset and never
//! pane text, bad input gets a clear message and exit code, and a FIFO in
//! place of a record file cannot hang it.

use std::fs;
use std::time::Duration;

use crate::support::contract::{stderr, stdout};
use crate::support::files::mkfifo;
use crate::support::fixtures::CONDUCTOR;
use crate::support::output_within;
use crate::support::watchdog::{assert_ok, Wd};
use agent_deck_watchdog::harness::{EscalationRecord, LivenessRecord, RestartRecord};
use serde_json::{json, Value};

const AUTH_HELD: &str = "9a8b7c6d-1755891400";
const TOKEN: &str = "secret-token-123";
/// A marker that stands for pane text: it must never be printed.
const PANE_TEXT: &str = "PANE-TEXT-do-not-print";

fn liveness(ts: f64, id: &str, title: &str) -> Value {
    json!({
        "ts": ts, "id": id, "title": title, "profile": "default", "gap_s": 2.0,
        "reads": [{"ts": ts - 2.1, "status": "error", "substate": "crashed"},
                  {"ts": ts - 0.05, "status": "error"}],
        "pane": {"first": "a1b2c3d4e5f6a7b8", "second": "c3d4e5f6a7b8c9d0",
                 "sampled": true, "changed": true, "empty": false},
        "decision": "skip", "reason": "pane_active", "consecutive_skips": 1,
        "dry_run": false,
    })
}

fn restart(ts: f64, id: &str, title: &str, action: &str) -> Value {
    json!({"ts": ts, "id": id, "title": title, "profile": "default",
           "action": action, "dry_run": false})
}

fn escalation(ts: f64, severity: &str, sid: Option<&str>) -> Value {
    json!({"ts": ts, "severity": severity, "message": format!("{severity} alert"),
           "sid": sid, "telegram": false})
}

/// Writes `records` as JSON lines to `name` in the watchdog dir.
fn write(wd: &Wd, name: &str, records: &[Value]) {
    let dir = wd.watchdog_dir();
    fs::create_dir_all(&dir).expect("watchdog dir");
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    fs::write(dir.join(name), text).expect("write records");
}

/// An hour of a conductor's life spread over all three files and their
/// rotations; the records in the order `history` must show them.
fn an_hour(wd: &Wd) -> Vec<Value> {
    let t = crate::support::now() - 3600.0;
    let rotated_restart = restart(t, CONDUCTOR, "conductor-ops", "restart");
    let rotated_liveness = liveness(t + 10.0, CONDUCTOR, "conductor-ops");
    let alive = liveness(t + 600.0, CONDUCTOR, "conductor-ops");
    let held = restart(t + 700.0, AUTH_HELD, "conductor-auth", "skipped-alive");
    let alert = escalation(t + 701.0, "auth-hold", Some(AUTH_HELD));
    let restarted = restart(t + 1200.0, CONDUCTOR, "conductor-ops", "restarted");
    let cascade = escalation(t + 1800.0, "cascade-detected", None);
    write(wd, "restart.log.1", std::slice::from_ref(&rotated_restart));
    write(wd, "restart.log", &[held.clone(), restarted.clone()]);
    write(
        wd,
        "liveness.log.1",
        std::slice::from_ref(&rotated_liveness),
    );
    write(wd, "liveness.log", std::slice::from_ref(&alive));
    write(wd, "escalations.log", &[alert.clone(), cascade.clone()]);
    vec![
        rotated_restart,
        rotated_liveness,
        alive,
        held,
        alert,
        restarted,
        cascade,
    ]
}

#[test]
fn json_parses_back_into_the_typed_records_oldest_first_rotated_files_included() {
    let wd = Wd::new();
    let want = an_hour(&wd);
    let out = wd.run(&["history", "--json"]);
    assert_ok(&out);
    let lines: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), want.len(), "{lines:#?}");
    for (line, written) in lines.iter().zip(&want) {
        let v: Value = serde_json::from_str(line).expect("a JSON line");
        let log = v["log"].as_str().expect("a log key").to_owned();
        match log.as_str() {
            "restart" => assert_eq!(
                serde_json::from_value::<RestartRecord>(v).unwrap(),
                serde_json::from_value::<RestartRecord>(written.clone()).unwrap()
            ),
            "liveness" => assert_eq!(
                serde_json::from_value::<LivenessRecord>(v).unwrap(),
                serde_json::from_value::<LivenessRecord>(written.clone()).unwrap()
            ),
            "escalations" => assert_eq!(
                serde_json::from_value::<EscalationRecord>(v).unwrap(),
                serde_json::from_value::<EscalationRecord>(written.clone()).unwrap()
            ),
            other => panic!("unexpected log {other:?} in {line}"),
        }
    }
}

#[test]
fn readable_timeline_is_one_line_per_decision_for_one_session() {
    let wd = Wd::new();
    an_hour(&wd);
    let out = wd.run(&["history", CONDUCTOR]);
    assert_ok(&out);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines
        .iter()
        .all(|l| l.contains("conductor-ops (3f9c2a1b-1755891234)")));
    assert!(lines[0].ends_with("action: restart"), "{text}");
    assert!(
        lines[1].contains("liveness: skip pane_active (status error/crashed→error"),
        "{text}"
    );
    assert!(lines[3].ends_with("action: restarted"), "{text}");
    let all = wd.run(&["history"]);
    assert_eq!(stdout(&all).lines().count(), 7);
    assert!(stdout(&all).contains("  fleet  escalation: cascade-detected"));
}

#[test]
fn a_title_with_a_newline_stays_on_one_escaped_line() {
    let wd = Wd::new();
    let forged = "conductor-ops\n2026-01-01 00:00:00 UTC  forged\x1b[2J";
    write(
        &wd,
        "restart.log",
        &[restart(crate::support::now(), CONDUCTOR, forged, "restart")],
    );
    let out = wd.run(&["history"]);
    assert_ok(&out);
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("conductor-ops\\n2026-01-01") && text.contains("\\u{1b}[2J"));
    assert!(!text.trim_end().chars().any(char::is_control), "{text:?}");
}

#[test]
fn report_shows_secrets_only_as_set_or_unset_and_never_pane_text() {
    let wd = Wd::new()
        .env("TELEGRAM_BOT_TOKEN", TOKEN)
        .env("TELEGRAM_ESCALATION_CHAT_ID", "42");
    an_hour(&wd);
    let mut with_stray_key = liveness(crate::support::now() - 60.0, CONDUCTOR, "conductor-ops");
    with_stray_key["pane_text"] = json!(PANE_TEXT);
    with_stray_key["pane"]["changed"] = json!(false);
    with_stray_key["reason"] = json!("confirmed_dead");
    with_stray_key["decision"] = json!("restart");
    let mut lines = fs::read_to_string(wd.watchdog_dir().join("liveness.log")).unwrap();
    lines.push_str(&format!("{with_stray_key}\n"));
    fs::write(wd.watchdog_dir().join("liveness.log"), lines).unwrap();

    let out = wd.run(&["history", CONDUCTOR, "--report"]);
    assert_ok(&out);
    let report = stdout(&out);
    for want in [
        "```text",
        "agent-deck-watchdog history report",
        &format!("version    {}", env!("CARGO_PKG_VERSION")),
        &format!(
            "platform   {}/{}",
            std::env::consts::OS,
            std::env::consts::ARCH
        ),
        "session    3f9c2a1b-1755891234",
        "(set, not shown)",
        "RATE_LIMIT_MAX",
        "  title      conductor-ops",
        "  profile    default",
        "restart confirmed_dead",
        "error/crashed",
        "first a1b2c3d4e5f6a7b8, second c3d4e5f6a7b8c9d0",
        "    gap      2.0s",
        "timeline, the last 24h (5 entries, oldest first)",
    ] {
        assert!(report.contains(want), "{want:?} missing from\n{report}");
    }
    let token_line = report
        .lines()
        .find(|l| l.contains("TELEGRAM_BOT_TOKEN"))
        .expect("the token setting is listed");
    assert!(token_line.contains("(set, not shown)"), "{token_line}");
    assert!(report.trim_end().ends_with("```"), "{report}");
    for args in [
        &["history", CONDUCTOR, "--report"][..],
        &["history", CONDUCTOR],
        &["history", "--json"],
        &["--print-config"],
    ] {
        let out = wd.run(args);
        assert_ok(&out);
        for (stream, text) in [("stdout", stdout(&out)), ("stderr", stderr(&out))] {
            assert!(!text.contains(TOKEN), "{args:?} {stream} shows the token");
            assert!(
                !text.contains(PANE_TEXT),
                "{args:?} {stream} shows pane text"
            );
        }
    }
}

#[test]
fn report_without_an_id_covers_every_session_with_records_worst_first() {
    let wd = Wd::new().env("TELEGRAM_BOT_TOKEN", TOKEN);
    let t = crate::support::now() - 600.0;
    let old = t - 3.0 * 86400.0;
    write(
        &wd,
        "restart.log",
        &[
            restart(old, "0ld0ld00-1755890000", "conductor-old", "restart"),
            restart(t, AUTH_HELD, "conductor-auth", "skipped"),
            restart(t + 1.0, CONDUCTOR, "conductor-ops", "restart"),
            restart(t + 2.0, CONDUCTOR, "conductor-ops", "restarted"),
            restart(t + 60.0, CONDUCTOR, "conductor-ops", "restart"),
        ],
    );
    write(
        &wd,
        "escalations.log",
        &[
            escalation(t + 90.0, "restart-failed", Some(CONDUCTOR)),
            escalation(t + 95.0, "cascade-detected", None),
        ],
    );
    let out = wd.run(&["history", "--report"]);
    assert_ok(&out);
    let report = stdout(&out);
    let ops = report
        .find("session conductor-ops (3f9c2a1b-1755891234): 2 restarts, 0 holds, 1 escalation");
    let auth = report
        .find("session conductor-auth (9a8b7c6d-1755891400): 0 restarts, 1 hold, 0 escalations");
    assert!(ops.is_some() && auth.is_some(), "{report}");
    assert!(ops < auth, "worst first:\n{report}");
    assert!(
        !report.contains("conductor-old"),
        "outside the window:\n{report}"
    );
    for want in [
        "agent-deck-watchdog fleet report",
        "sessions   2 with records, the last 24h",
        "  last seen by the watchdog",
        "  timeline, the last 24h (4 entries, oldest first)",
        "about no one session (cascades, the breaker): 0 restarts, 0 holds, 1 escalation",
        "totals: 2 sessions, 2 restarts, 1 hold, 2 escalations, the last 24h",
        "(set, not shown)",
    ] {
        assert!(report.contains(want), "{want:?} missing from\n{report}");
    }
    assert!(!report.contains(TOKEN));
    assert!(report.trim_end().ends_with("```"), "{report}");
    // The old sessions come back with a longer window.
    let all = stdout(&wd.run(&["history", "--report", "--since", "all"]));
    assert!(all.contains("totals: 3 sessions, 3 restarts"), "{all}");
}

#[test]
fn bad_since_is_exit_2_naming_the_flag_and_the_value() {
    let wd = Wd::new();
    for bad in ["yesterday", "-6h", "0", "6w"] {
        let out = wd.run(&["history", "--since", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.starts_with("agent-deck-watchdog: --since") && err.contains(&format!("{bad:?}")),
            "{err}"
        );
        assert!(stdout(&out).is_empty());
    }
}

#[test]
fn since_widens_and_narrows_the_window() {
    let wd = Wd::new();
    let old = restart(
        crate::support::now() - 3.0 * 86_400.0,
        CONDUCTOR,
        "conductor-ops",
        "restart",
    );
    let recent = restart(
        crate::support::now() - 600.0,
        CONDUCTOR,
        "conductor-ops",
        "restarted",
    );
    write(&wd, "restart.log", &[old, recent]);
    let count = |args: &[&str]| {
        let out = wd.run(args);
        assert_ok(&out);
        stdout(&out).lines().count()
    };
    assert_eq!(count(&["history"]), 1);
    assert_eq!(count(&["history", "--since", "5m"]), 0);
    assert_eq!(count(&["history", "--since", "2h"]), 1);
    assert_eq!(count(&["history", "--since=4d"]), 2);
    assert_eq!(count(&["history", "--since", "all"]), 2);
    assert_eq!(count(&["history", "--since", "345600"]), 2);
}

#[test]
fn unknown_id_is_exit_1_and_an_empty_window_exit_0_with_a_note() {
    let wd = Wd::new();
    an_hour(&wd);
    let out = wd.run(&["history", "0000dead-1700000000"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
    assert!(
        stderr(&out).contains("no record mentions session \"0000dead-1700000000\""),
        "{}",
        stderr(&out)
    );
    let out = wd.run(&["history", AUTH_HELD, "--since", "10m"]);
    assert_ok(&out);
    assert!(stdout(&out).is_empty());
    assert!(
        stderr(&out).contains("no records for session 9a8b7c6d-1755891400 in the last 10m"),
        "{}",
        stderr(&out)
    );
    // No records at all is an empty timeline, not an error.
    let empty = Wd::new();
    let out = empty.run(&["history"]);
    assert_ok(&out);
    assert!(stdout(&out).is_empty());
}

#[test]
fn garbled_lines_are_skipped_with_one_summary_line_per_file() {
    let wd = Wd::new();
    an_hour(&wd);
    let path = wd.watchdog_dir().join("restart.log");
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(b"not json\n{\"ts\":\"soon\"}\n\xff\xfe\n{\"ts\": 1");
    fs::write(&path, bytes).unwrap();
    let out = wd.run(&["history"]);
    assert_ok(&out);
    assert_eq!(stdout(&out).lines().count(), 7);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("skipped 4 unreadable lines in restart.log"),
        "{err}"
    );
}

#[test]
fn a_fifo_named_restart_log_does_not_hang_history_and_the_other_files_are_shown() {
    let wd = Wd::new();
    an_hour(&wd);
    let fifo = wd.watchdog_dir().join("restart.log");
    fs::remove_file(&fifo).unwrap();
    mkfifo(&fifo);
    fs::create_dir(wd.watchdog_dir().join("escalations.log.1")).unwrap();
    // A hang on the FIFO fails here.
    let out = output_within(wd.command(&["history"]), Duration::from_secs(10));
    assert_ok(&out);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "cannot read {}: it is a FIFO, not a regular file",
            fifo.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("escalations.log.1: it is a directory"),
        "{err}"
    );
    // restart.log.1, both liveness files and escalations.log are still shown.
    assert_eq!(stdout(&out).lines().count(), 5, "{}", stdout(&out));
}
