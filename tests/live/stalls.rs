//! Live tests of the stall handling (SPEC §14) on the real agent-deck: a
//! Claude conductor whose last turn the API rejected at the usage limit is
//! read `usage-limit` by agent-deck itself, and the watchdog resumes it once,
//! after the reset its rejection names, through `session send`, which
//! never types over an operator's draft.

use std::fs;
use std::time::Duration;

use agent_deck_watchdog::harness::RestartRecord;

use crate::sandbox::{Agent, Sandbox, Tool};
use crate::support::wait_until;
use crate::support::watchdog::{stall, Daemon};

/// The transcript agent-deck reads for `a`'s Claude conversation `sid`.
pub(crate) fn transcript(sb: &Sandbox, a: &Agent, sid: &str) -> std::path::PathBuf {
    let encoded: String = (a.dir.display().to_string().chars())
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    sb.home
        .join(".claude/projects")
        .join(encoded)
        .join(format!("{sid}.jsonl"))
}

/// Waits up to `limit` for `a`'s stall to be resumed and verified, checks
/// it took one resume, one `session send`, no restart and no new boot, and
/// gives its `stall-detected` record.
fn resumed_once(sb: &Sandbox, a: &Agent, d: &Daemon, limit: Duration) -> RestartRecord {
    let verified = wait_until(limit, || !sb.restarts_of(a, "resume-verified").is_empty());
    assert!(
        verified,
        "never resumed and verified; stderr:\n{}",
        d.stderr()
    );
    let sent = sb.restarts_of(a, "resume-sent");
    assert_eq!(sent.len(), 1, "one resume: {sent:?}");
    assert_eq!(sb.session_calls(a, "send").len(), 1);
    assert!(sb.session_calls(a, "restart").is_empty(), "never a restart");
    assert_eq!(a.boots(), 1, "{}", a.fake_log());
    sb.restarts_of(a, "stall-detected").remove(0)
}

/// The next whole UTC minute at least 30 s ahead: Unix seconds, and as
/// Claude's rejection prints it (`resets 10:32am (UTC)`).
pub(crate) fn reset_ahead() -> (f64, String) {
    let now = crate::support::now();
    let at = ((now + 30.0) / 60.0).ceil() * 60.0;
    let (h, m) = ((at as u64 / 3600) % 24, (at as u64 / 60) % 60);
    let half = if h < 12 { "am" } else { "pm" };
    let h12 = if h % 12 == 0 { 12 } else { h % 12 };
    (at, format!("resets {h12}:{m:02}{half} (UTC)"))
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_conductor_at_its_usage_limit_is_resumed_once_after_the_reset() {
    let sb = Sandbox::new();
    let a = sb.add("conductor-limit", "conductor", Tool::Claude, None);
    a.set_mode("chat");
    sb.start(&a);
    let sid = sb.show(&a)["claude_session_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!sid.is_empty(), "{}", sb.show(&a));
    let (reset, banner) = reset_ahead();
    let path = transcript(&sb, &a, &sid);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let stamp = jiff::Timestamp::now().to_string();
    let record = serde_json::json!({
        "type": "assistant", "sessionId": sid, "timestamp": stamp,
        "isApiErrorMessage": true, "apiErrorStatus": 429, "error": "rate_limit",
        "message": {"role": "assistant", "content": [
            {"type": "text", "text": format!("You've hit your session limit · {banner}")}
        ]}
    });
    fs::write(&path, format!("{record}\n")).unwrap();
    let limited = wait_until(Duration::from_secs(20), || {
        sb.show(&a)["substate"] == "usage-limit"
    });
    assert!(limited, "agent-deck never read the limit: {}", sb.show(&a));
    let d = sb.spawn_watchdog(&[
        ("RESUME_GRACE_S", "0"),
        ("RESUME_VERIFY_S", "60"),
        ("SAFETY_POLL_INTERVAL_S", "1"),
    ]);
    let detected = resumed_once(&sb, &a, &d, Duration::from_secs(150));
    assert_eq!(stall(&detected).resume_from, "banner");
    assert_eq!(stall(&detected).resume_at, reset, "{detected:?}");
    let sent = &sb.restarts_of(&a, "resume-sent")[0];
    assert!(sent.ts >= reset, "sent before the reset: {sent:?}");
    assert_ne!(sb.show(&a)["substate"], "usage-limit", "{}", sb.show(&a));
}

/// A chat conductor watched by a daemon (`RESUME_DWELL_S` 3), in a turn
/// that has just been typed the line that ends it on an overload; its
/// pane's tmux target.
fn overloaded(title: &str) -> (Sandbox, Agent, Daemon, String) {
    let sb = Sandbox::new();
    let a = sb.add(title, "conductor", Tool::Claude, None);
    a.set_mode("chat");
    sb.start(&a);
    let d = sb.spawn_watchdog(&[
        ("RESUME_DWELL_S", "3"),
        ("RESUME_VERIFY_S", "30"),
        ("SAFETY_POLL_INTERVAL_S", "0.5"),
    ]);
    sb.hook(&a, "UserPromptSubmit");
    let running = wait_until(Duration::from_secs(20), || sb.status(&a) == "running");
    assert!(running, "{}", sb.show(&a));
    sb.wait_for_polls(&d, 3, Duration::from_secs(20));
    let target = format!("={}:", sb.tmux_session(&a));
    let typed = sb.tmux(&["send-keys", "-t", &target, "overload", "Enter"]);
    assert!(typed.status.success(), "{typed:?}");
    (sb, a, d, target)
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_turn_that_ended_on_an_overload_is_resumed_once_after_the_dwell() {
    let (sb, a, d, _) = overloaded("conductor-busy");
    sb.hook(&a, "Stop");
    let detected = resumed_once(&sb, &a, &d, Duration::from_secs(90));
    assert_eq!(stall(&detected).kind, "api-overload", "{detected:?}");
    assert_eq!(stall(&detected).evidence, "pane");
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_resume_never_types_over_an_operators_draft() {
    let (sb, a, d, target) = overloaded("conductor-draft");
    let pane = || {
        let out = sb.tmux(&["capture-pane", "-p", "-t", &target]);
        String::from_utf8_lossy(&out.stdout).trim_end().to_owned()
    };
    let at_prompt = wait_until(Duration::from_secs(10), || {
        let p = pane();
        p.contains("API Error: 529") && p.ends_with('❯')
    });
    assert!(at_prompt, "{}", pane());
    sb.hook(&a, "Stop");
    let draft = "half-typed plan for the release";
    let typed = sb.tmux(&["send-keys", "-t", &target, "-l", draft]);
    assert!(typed.status.success(), "{typed:?}");
    resumed_once(&sb, &a, &d, Duration::from_secs(90));
    // The empty lines are the Enters of agent-deck's own delivery check,
    // which presses Enter while the fake shows no sign of work.
    let said = fs::read_to_string(a.dir.join("said.log")).unwrap_or_default();
    let said: Vec<&str> = said.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(said.len(), 2, "{said:?}");
    assert_eq!(said[0], "overload");
    assert!(
        said[1].starts_with("[agent-deck-watchdog] continue: ") && !said[1].contains(draft),
        "the resume went alone: {said:?}"
    );
    let restored = wait_until(Duration::from_secs(10), || {
        pane().lines().last() == Some(&format!("❯ {draft}"))
    });
    assert!(restored, "the draft is back in the composer:\n{}", pane());
}
