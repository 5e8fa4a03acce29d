//! What a pass says it saw: the `--once` summary, the line naming the
//! sessions the daemon protects, the failures a death brings by design
//! counted apart from `failed`, and the fleet-wide `history --report`.

use std::fs;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fixtures::{conductor, CONDUCTOR};
use crate::support::wait_until;
use crate::support::watchdog::{assert_ok, Wd};

/// A conductor whose tmux session is gone: it reads `error`.
fn crashed(id: &str, title: &str) -> Value {
    let mut c = conductor(id, title, "running");
    c["tmux_alive"] = json!(false);
    c
}

#[test]
fn a_kill_and_revive_leaves_failed_at_zero_and_counts_the_pane_sample_apart() {
    let wd = Wd::new();
    wd.sessions(vec![crashed(CONDUCTOR, "conductor-ops")]);
    let d = wd.spawn(&[]);
    let back = wait_until(Duration::from_secs(10), || {
        !wd.restarts_with("restarted").is_empty()
    });
    assert!(back, "{}", d.stderr());
    // The next tick writes the counts of the revive.
    wd.wait_for_more_ticks(2);
    let status = wd.daemon_status();
    assert_eq!(status["cli"]["failures"], json!({}), "{status}");
    let by_design = &status["cli"]["failures_by_design"]["output-pane"];
    assert!(by_design.as_u64() >= Some(1), "{status}");
    let metrics = fs::read_to_string(wd.watchdog_dir().join("metrics.prom")).unwrap();
    assert!(
        metrics.contains("cli_failures_by_design_total{command=\"output-pane\"}"),
        "{metrics}"
    );
    assert!(!metrics.contains("cli_failures_total{"), "{metrics}");
    let out = wd.run(&["status"]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(" (0 failed) as of the last tick"), "{text}");
    assert!(text.contains("cli failures by design: "), "{text}");
    assert!(!text.contains("cli failures by design: 0 "), "{text}");
}

#[test]
fn the_daemon_names_the_sessions_it_protects_and_one_added_later() {
    let wd = Wd::new();
    let worker =
        crate::support::fixtures::session("77777777-1755890000", "worker-1", "", "running");
    wd.sessions(vec![
        conductor(CONDUCTOR, "conductor-ops", "running"),
        conductor("5e5e5e5e-1755890000", "conductor-two", "running"),
        worker.clone(),
    ]);
    let d = wd.spawn(&[]);
    let first = "watching 2 restart-critical sessions: conductor-ops, conductor-two";
    let said = wait_until(Duration::from_secs(10), || d.stderr().contains(first));
    assert!(said, "{}", d.stderr());
    wd.sessions(vec![
        conductor(CONDUCTOR, "conductor-ops", "running"),
        conductor("5e5e5e5e-1755890000", "conductor-two", "running"),
        conductor("9a9a9a9a-1755890000", "conductor-new", "running"),
        worker,
    ]);
    let joined = "watching 3 restart-critical sessions; joined: conductor-new";
    let said = wait_until(Duration::from_secs(10), || d.stderr().contains(joined));
    assert!(said, "{}", d.stderr());
    assert_eq!(
        d.stderr().matches("restart-critical session").count(),
        2,
        "{}",
        d.stderr()
    );
}

/// The fleet of the summary tests: one restart-critical session of each
/// kind the summary tells apart, and one worker.
fn mixed_fleet() -> Vec<Value> {
    use crate::support::fixtures::{auth_held, never_started, session};
    let mut stopped = conductor("50505050-1755890000", "conductor-off", "stopped");
    stopped["tmux_alive"] = json!(false);
    vec![
        conductor("11111111-1755890000", "conductor-ok", "running"),
        crashed("22222222-1755890000", "conductor-dead"),
        never_started("33333333-1755890000", "conductor-new"),
        auth_held("44444444-1755890000", "conductor-login"),
        stopped,
        session("77777777-1755890000", "worker-1", "", "waiting"),
    ]
}

/// `--once` (with `args`) on [`mixed_fleet`]: its stdout.
fn once(args: &[&str]) -> (Wd, String) {
    let wd = Wd::new();
    wd.sessions(mixed_fleet());
    let mut all = vec!["--once"];
    all.extend_from_slice(args);
    let out = wd.run(&all);
    assert_ok(&out);
    let text = String::from_utf8(out.stdout).expect("UTF-8 stdout");
    (wd, text)
}

/// The summary line of the session titled `title`.
fn line_of<'a>(text: &'a str, title: &str) -> &'a str {
    let l = text
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{title} ")));
    l.unwrap_or_else(|| panic!("no line for {title}:\n{text}"))
}

#[test]
fn the_once_summary_names_each_critical_session_with_what_the_pass_did() {
    let (wd, text) = once(&[]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0], "pass summary: 6 sessions listed, 5 restart-critical",
        "{text}"
    );
    let ok = line_of(&text, "conductor-ok");
    assert!(
        ok.contains("11111111-1755890000  default  running  title conductor-*  healthy"),
        "{ok}"
    );
    assert!(
        line_of(&text, "conductor-dead").ends_with(" restarted"),
        "{text}"
    );
    assert!(
        line_of(&text, "conductor-new").ends_with("held: never_started"),
        "{text}"
    );
    assert!(
        line_of(&text, "conductor-login").ends_with("held: auth_hold"),
        "{text}"
    );
    assert!(
        line_of(&text, "conductor-off").ends_with("left alone: stopped"),
        "{text}"
    );
    assert_eq!(
        lines.last(),
        Some(&"  1 other session not restart-critical (--verbose lists them)"),
        "{text}"
    );
    assert_eq!(wd.restart_calls(), 1);
}

#[test]
fn in_dry_run_the_summary_says_what_it_would_do_and_json_is_one_object() {
    let (wd, text) = once(&["--dry-run", "--json"]);
    assert_eq!(text.lines().count(), 1, "{text}");
    let v: Value = serde_json::from_str(&text).expect("one JSON object");
    assert_eq!(v["dry_run"], true);
    assert_eq!(v["sessions_listed"], 6);
    assert_eq!(v["sessions_critical"], 5);
    let did: Vec<(String, String, Option<String>)> = v["critical"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["title"].as_str().unwrap().to_owned(),
                c["action"].as_str().unwrap().to_owned(),
                c["reason"].as_str().map(str::to_owned),
            )
        })
        .collect();
    let want =
        |t: &str, a: &str, r: Option<&str>| (t.to_owned(), a.to_owned(), r.map(str::to_owned));
    assert_eq!(
        did,
        vec![
            want("conductor-ok", "healthy", None),
            want("conductor-dead", "would-restart", None),
            want("conductor-new", "held", Some("never_started")),
            want("conductor-login", "held", Some("auth_hold")),
            want("conductor-off", "stopped", None),
        ]
    );
    assert_eq!(v["critical"][1]["status"], "error");
    assert_eq!(v["critical"][1]["profile"], "default");
    assert_eq!(v["critical"][1]["critical_because"], "title conductor-*");
    assert!(v.get("others").is_none());
    assert_eq!(wd.restart_calls(), 0, "dry-run restarts nothing");
    let (_, plain) = once(&["--dry-run"]);
    assert!(
        plain.starts_with("pass summary (dry-run): 6 sessions listed"),
        "{plain}"
    );
    assert!(
        line_of(&plain, "conductor-dead").ends_with(" would restart"),
        "{plain}"
    );
}

#[test]
fn verbose_adds_the_other_sessions_with_their_status() {
    let (_, text) = once(&["--verbose"]);
    assert!(
        text.contains("  other: worker-1  77777777-1755890000  default  waiting\n"),
        "{text}"
    );
    assert!(!text.contains("--verbose lists them"), "{text}");
    let (_, json) = once(&["--verbose", "--json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["others"][0]["title"], "worker-1");
    assert_eq!(v["others"][0]["status"], "waiting");
}

#[test]
fn json_without_once_is_a_usage_error_naming_the_flag() {
    let wd = Wd::new();
    let out = wd.run(&["--json"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--json needs --once"), "{err}");
}
