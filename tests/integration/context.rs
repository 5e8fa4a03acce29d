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
