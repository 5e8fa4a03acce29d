//! Black-box tests of a full context window (SPEC §15) against the
//! simulated agent-deck: a conductor whose turns end on Claude's
//! full-context error is cleared and re-briefed, or compacted and resumed,
//! through `session send`, never restarted; a remedy that cannot go on is
//! one escalation, with nothing more typed.

use std::fs;
use std::time::Duration;

use serde_json::json;

use crate::support::fixtures::{full_conductor, CONDUCTOR};
use crate::support::watchdog::{stall, Wd};

const LIMIT: Duration = Duration::from_secs(20);

/// Resumes without a stagger, each verified within 2 s; compactions
/// given 1 s.
fn quick() -> Wd {
    Wd::new()
        .env("RESUME_STAGGER_S", "0")
        .env("RESUME_VERIFY_S", "2")
        .env("CONTEXT_COMPACT_S", "1")
}

/// A conductor whose turns end on `how`; with `clear` its agent-deck
/// policy is `clear_on_compact` (no `meta.json`: the default), else its
/// `meta.json` says false.
fn full(how: &str, clear: bool) -> Wd {
    let wd = quick();
    wd.sessions(vec![full_conductor(CONDUCTOR, "conductor-ops", how)]);
    if !clear {
        let dir = wd.root.join("conductor/ops");
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("meta.json"),
            r#"{"name":"ops","clear_on_compact":false}"#,
        )
        .unwrap();
    }
    wd
}

fn sends(wd: &Wd) -> Vec<String> {
    let calls = wd.sim.calls_with(&["session", "send"]);
    calls
        .iter()
        .map(|c| c[c.iter().position(|a| a == CONDUCTOR).unwrap() + 1].clone())
        .collect()
}

fn actions(wd: &Wd) -> Vec<String> {
    wd.restarts()
        .into_iter()
        .map(|r| r.action.to_string())
        .collect()
}

#[test]
fn a_clear_on_compact_conductor_is_cleared_and_re_briefed_once_and_never_restarted() {
    let wd = full("limit", true);
    let old = wd.sim.session_state(CONDUCTOR).unwrap()["claude_session_id"].clone();
    let d = wd.spawn(&[]);
    d.wait_for(LIMIT, "no resume-verified", || {
        !wd.restarts_with("resume-verified").is_empty()
    });
    let detected = &wd.restarts_with("stall-detected")[0];
    let said = stall(detected);
    assert_eq!(said.kind, "context-exhausted");
    assert!(said.evidence.contains("Context limit reached"), "{said:?}");
    assert_eq!(
        said.remedy.as_deref(),
        Some("/clear then re-brief (clear_on_compact)")
    );
    wd.wait_for_more_ticks(5);
    let rebrief = wd.env_value("CONTEXT_REBRIEF_MESSAGE");
    let sent = sends(&wd);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0], "/clear");
    assert!(
        rebrief.is_none_or(|m| m == sent[1]) && sent[1].contains("cleared"),
        "{sent:?}"
    );
    assert_eq!(
        actions(&wd),
        [
            "stall-detected",
            "clear-sent",
            "resume-sent",
            "resume-verified"
        ]
    );
    assert_eq!(wd.restart_calls(), 0, "a full context is never restarted");
    // The new conversation is stored, so a restart would resume it.
    let new = wd.sim.session_state(CONDUCTOR).unwrap()["claude_session_id"].clone();
    assert_ne!(new, old);
    let set = wd.sim.calls_with(&["session", "set"]);
    assert_eq!(set.len(), 1, "{set:?}");
    assert_eq!(set[0].last().map(|v| json!(v)), Some(new));
    assert!(wd.escalations().is_empty(), "{:?}", wd.escalations());
}

#[test]
fn another_conductor_is_compacted_then_resumed() {
    let wd = full("prompt", false);
    let d = wd.spawn(&[]);
    d.wait_for(LIMIT, "no resume-verified", || {
        !wd.restarts_with("resume-verified").is_empty()
    });
    let said = stall(&wd.restarts_with("stall-detected")[0]).clone();
    assert_eq!(
        said.remedy.as_deref(),
        Some("/compact then resume (not clear_on_compact)")
    );
    wd.wait_for_more_ticks(3);
    let sent = sends(&wd);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0], "/compact");
    assert!(sent[1].contains("(context-exhausted)"), "{sent:?}");
    assert_eq!(
        actions(&wd),
        [
            "stall-detected",
            "compact-sent",
            "compacted",
            "resume-sent",
            "resume-verified"
        ]
    );
    assert_eq!(wd.restart_calls(), 0);
    assert!(wd.sim.calls_with(&["session", "set"]).is_empty());
    let metrics = fs::read_to_string(wd.watchdog_dir().join("metrics.prom")).unwrap();
    let line = "agent_deck_watchdog_context_clears_total{trigger=\"exhausted\"} 0\n";
    assert!(metrics.contains(line), "{metrics}");
}

#[test]
fn a_compaction_that_fails_is_one_stall_unresolved_and_nothing_more_is_typed() {
    let wd = full("limit", false);
    let mut c = full_conductor(CONDUCTOR, "conductor-ops", "limit");
    c["on_compact"] = json!("fails");
    wd.sessions(vec![c]);
    let d = wd.spawn(&[]);
    wd.wait_for_escalations(&d, "stall-unresolved", 1);
    wd.wait_for_more_ticks(8);
    assert_eq!(sends(&wd), ["/compact"]);
    assert_eq!(wd.escalations_of("stall-unresolved"), 1);
    let failed = wd.restarts_with("resume-failed");
    assert_eq!(failed.len(), 1, "{:?}", actions(&wd));
    assert_eq!(failed[0].reason.as_deref(), Some("compaction failed"));
    assert_eq!(wd.restart_calls(), 0);
}

#[test]
fn a_failed_compaction_already_on_the_pane_gets_no_compact() {
    let wd = full("compaction", false);
    let d = wd.spawn(&[]);
    wd.wait_for_escalations(&d, "stall-unresolved", 1);
    wd.wait_for_more_ticks(5);
    assert!(sends(&wd).is_empty(), "{:?}", sends(&wd));
    assert_eq!(actions(&wd), ["stall-detected", "resume-failed"]);
    let msg = &wd.escalations_with("stall-unresolved")[0].message;
    assert!(msg.contains("compaction failed"), "{msg}");
}

#[test]
fn a_compaction_still_running_past_twice_its_time_is_one_compaction_hung() {
    let wd = full("limit", false);
    let mut c = full_conductor(CONDUCTOR, "conductor-ops", "limit");
    c["on_compact"] = json!("hangs");
    wd.sessions(vec![c]);
    let d = wd.spawn(&[]);
    wd.wait_for_escalations(&d, "compaction-hung", 1);
    let sent = &wd.restarts_with("compact-sent")[0];
    let hung = &wd.restarts_with("resume-failed")[0];
    // Twice CONTEXT_COMPACT_S after the send, which its record follows.
    assert!(hung.ts >= sent.ts + 1.9, "too early: {:?}", wd.restarts());
    wd.wait_for_more_ticks(8);
    assert_eq!(sends(&wd), ["/compact"]);
    assert_eq!(
        wd.restarts_with("resume-failed").len(),
        1,
        "{:?}",
        actions(&wd)
    );
    assert_eq!(wd.escalations_of("compaction-hung"), 1);
    assert_eq!(wd.escalations_of("stall-unresolved"), 0);
    // `status` names the step; the stall is counted by its kind.
    let text = String::from_utf8_lossy(&wd.run(&["status"]).stdout).to_string();
    assert!(
        text.contains("context-exhausted, nothing more is typed (/compact then resume"),
        "{text}"
    );
    let metrics = fs::read_to_string(wd.watchdog_dir().join("metrics.prom")).unwrap();
    let line = "agent_deck_watchdog_stalled_sessions{kind=\"context-exhausted\"} 1\n";
    assert!(metrics.contains(line), "{metrics}");
}

#[test]
fn a_dry_run_says_the_remedy_and_sends_nothing() {
    let wd = full("limit", true);
    let out = wd.run(&["--once", "--dry-run"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("stalled: context-exhausted, /clear then re-brief (clear_on_compact)"),
        "{text}"
    );
    let d = wd.spawn(&["--dry-run"]);
    d.wait_for(LIMIT, "no clear-sent", || {
        !wd.restarts_with("clear-sent").is_empty()
    });
    wd.wait_for_more_ticks(5);
    assert!(sends(&wd).is_empty());
    assert!(wd.restarts_with("clear-sent")[0].dry_run);
    assert_eq!(wd.restarts_with("clear-sent").len(), 1, "said once");
}

#[test]
fn a_watchdog_restarted_mid_remedy_goes_on_without_a_second_clear() {
    let wd = full("limit", true);
    // The re-brief never starts a turn, so the remedy stays mid-way.
    let mut c = full_conductor(CONDUCTOR, "conductor-ops", "limit");
    c["on_send"] = json!("typed");
    wd.sessions(vec![c]);
    let mut d = wd.spawn(&[]);
    d.wait_for(LIMIT, "no clear-sent", || {
        !wd.restarts_with("clear-sent").is_empty()
    });
    d.signal_and_wait(libc::SIGKILL, LIMIT);
    let d = wd.spawn(&[]);
    wd.wait_for_more_ticks(6);
    assert_eq!(
        wd.restarts_with("stall-detected").len(),
        1,
        "{:?}",
        actions(&wd)
    );
    assert_eq!(sends(&wd).iter().filter(|m| *m == "/clear").count(), 1);
    drop(d);
}

#[test]
fn full_again_soon_after_a_clear_is_not_cleared_again() {
    let wd = full("limit", true);
    let d = wd.spawn(&[]);
    d.wait_for(LIMIT, "no resume-verified", || {
        !wd.restarts_with("resume-verified").is_empty()
    });
    // The conversation fills up again at once: a turn at work, then its end.
    let id = wd.sim.session_state(CONDUCTOR).unwrap()["claude_session_id"].clone();
    let mut c = full_conductor(CONDUCTOR, "conductor-ops", "prompt");
    (c["claude_session_id"], c["substate"]) = (id, json!(""));
    wd.sessions(vec![c]);
    wd.wait_for_more_ticks(2);
    wd.sim
        .update_state(|s| s["sessions"][0]["substate"] = json!("idle-at-empty-prompt"));
    wd.wait_for_escalations(&d, "stall-unresolved", 1);
    let msg = &wd.escalations_with("stall-unresolved")[0].message;
    assert!(msg.contains("full again"), "{msg}");
    assert_eq!(sends(&wd).iter().filter(|m| *m == "/clear").count(), 1);
}

#[test]
fn a_healthy_conductor_at_rest_costs_one_pane_look_and_no_last_message() {
    let wd = quick();
    wd.sessions(vec![crate::support::fixtures::conductor(
        CONDUCTOR,
        "conductor-ops",
        "waiting",
    )]);
    let _d = wd.spawn(&[]);
    wd.wait_for_more_ticks(6);
    let panes = wd.sim.calls_with(&["session", "output"]);
    assert_eq!(panes.len(), 1, "one first look: {panes:?}");
    assert!(panes[0].iter().any(|a| a == "--pane"), "{panes:?}");
    assert!(wd.restarts().is_empty());
}

/// A conductor at rest whose last turn answered, its transcript's last
/// reply holding `tokens` of claude-opus-4-5's 200k window.
fn filling(tokens: u64) -> Wd {
    let wd = quick();
    let mut c = crate::support::fixtures::conductor(CONDUCTOR, "conductor-ops", "waiting");
    c["path"] = json!("/srv/ops");
    c["pane"] = json!("❯ Check the fleet\n⏺ All well.\n❯ \n");
    let id = c["claude_session_id"].as_str().unwrap().to_owned();
    wd.sessions(vec![c]);
    let dir = wd.home.path().join(".claude/projects/-srv-ops");
    fs::create_dir_all(&dir).unwrap();
    let reply = json!({"type": "assistant", "message": {"model": "claude-opus-4-5",
        "usage": {"input_tokens": 3, "cache_creation_input_tokens": 1000,
                  "cache_read_input_tokens": tokens - 1003}, "content": []}});
    fs::write(dir.join(format!("{id}.jsonl")), format!("{reply}\n")).unwrap();
    wd
}

#[test]
fn the_proactive_clear_is_off_by_default_and_on_with_its_setting() {
    let wd = filling(180_000);
    let _d = wd.spawn(&[]);
    wd.wait_for_more_ticks(6);
    assert!(sends(&wd).is_empty(), "off by default: {:?}", sends(&wd));
    assert!(
        wd.sim.calls_with(&["session", "show"]).is_empty(),
        "and reads nothing"
    );
    drop(_d);
    let wd = filling(180_000).env("CONTEXT_CLEAR_AT_PCT", "85");
    let d = wd.spawn(&[]);
    d.wait_for(LIMIT, "no resume-verified", || {
        !wd.restarts_with("resume-verified").is_empty()
    });
    let cleared = &wd.restarts_with("context-cleared")[0];
    let evidence = &stall(cleared).evidence;
    assert!(
        evidence.contains("90%") && evidence.contains("200000") && evidence.contains("model"),
        "{evidence}"
    );
    assert!(wd.restarts_with("stall-detected").is_empty(), "no stall");
    assert_eq!(sends(&wd)[0], "/clear");
    let metrics = fs::read_to_string(wd.watchdog_dir().join("metrics.prom")).unwrap();
    let line = "agent_deck_watchdog_context_clears_total{trigger=\"proactive\"} 1\n";
    assert!(metrics.contains(line), "{metrics}");
}

#[test]
fn below_its_threshold_or_soon_after_someone_else_s_clear_nothing_is_sent() {
    let wd = filling(160_000).env("CONTEXT_CLEAR_AT_PCT", "85");
    let _d = wd.spawn(&[]);
    wd.wait_for_more_ticks(6);
    assert!(sends(&wd).is_empty(), "80% < 85%: {:?}", sends(&wd));
    drop(_d);
    // A TUI cleared it: the first look sees the wiped screen; the next turn
    // ends within the minute, its transcript still the old one.
    let wd = filling(180_000).env("CONTEXT_CLEAR_AT_PCT", "85");
    wd.sim
        .update_state(|s| s["sessions"][0]["pane"] = json!("❯ \n"));
    let _d = wd.spawn(&[]);
    wd.wait_for_more_ticks(2);
    wd.set_status("running");
    wd.sim
        .update_state(|s| s["sessions"][0]["pane"] = json!("❯ hi\n⏺ Hello.\n❯ \n"));
    wd.wait_for_more_ticks(2);
    wd.set_status("waiting");
    wd.wait_for_more_ticks(6);
    assert!(sends(&wd).is_empty(), "held off: {:?}", sends(&wd));
    assert!(
        !wd.sim.calls_with(&["session", "show"]).is_empty(),
        "it looked"
    );
}
