//! Live tests of the full-context remedy (SPEC §15, issue #37) on the real
//! agent-deck 1.14.0: a watched conductor whose turn ends on Claude's
//! full-context error (the fake in mode `full`, as `context.rs` pinned it)
//! is cleared and re-briefed, or compacted and resumed, through `session
//! send`, and never restarted.
//!
//! What `session send` answered for each command is the watchdog's to log
//! (`resume typed into the pane of …, unconfirmed (…)` before its
//! `clear-sent`/`compact-sent`); each test prints it. Measured 2026-12-07,
//! nine runs of the one, eight of the other: `/clear` was answered
//! undelivered (exit 1, `delivery: no_evidence`) in 7 of 9 and `submitted`
//! in 2 (context.rs had 8 of 11), `/compact` `submitted` in 8 of 8; either
//! way the command was typed once and the remedy went on from the pane.
//! From `stall-detected` to `resume-verified`: about 13 s cleared, 10 s
//! compacted (a 3 s compaction), of which the command's `session send`
//! took 7 s and 5 s.

use std::fs;
use std::time::Duration;

use crate::context::{claude_session_id, conductor, error_turn, restarted_boot, said, sids};
use crate::sandbox::{Agent, Sandbox};
use crate::support::wait_until;
use crate::support::watchdog::{stall, Daemon};

/// What the watchdog types after a `/clear`, set so the fake's log can be
/// compared with it.
const REBRIEF: &str = "Your context was cleared: run your Startup Checklist.";

/// Short enough that a test takes about a minute: each look a second
/// apart. `RESUME_STAGGER_S` is left at its default: it paces a stall's
/// first send, and the message goes as soon as the command took (measured:
/// 4 s after `clear-sent` with the 30 s default).
const SETTINGS: [(&str, &str); 4] = [
    ("SAFETY_POLL_INTERVAL_S", "1"),
    ("RESUME_VERIFY_S", "30"),
    ("CONTEXT_COMPACT_S", "20"),
    ("CONTEXT_REBRIEF_MESSAGE", REBRIEF),
];

/// A watched conductor `conductor-<name>` in mode `mode`, whose turn has
/// just ended on the full-context error, and its `claude_session_id`.
fn full_and_watched(sb: &Sandbox, name: &str, mode: &str) -> (Agent, Daemon, String) {
    let (a, target) = conductor(sb, &format!("conductor-{name}"), mode);
    let d = sb.spawn_watchdog(&SETTINGS);
    sb.wait_for_polls(&d, 2, Duration::from_secs(20));
    let id = claude_session_id(sb, &a);
    error_turn(sb, &target);
    (a, d, id)
}

/// Waits for `a`'s remedy to be verified, then a few more polls so that a
/// record or call it should not have made would show; its records' actions.
fn remedied(sb: &Sandbox, a: &Agent, d: &Daemon) -> Vec<String> {
    let verified = wait_until(Duration::from_secs(90), || {
        !sb.restarts_of(a, "resume-verified").is_empty()
    });
    let actions = || -> Vec<String> {
        let all = sb.restarts().into_iter().filter(|r| r.id == a.id);
        all.map(|r| r.action.to_string()).collect()
    };
    assert!(verified, "{:?}\nstderr:\n{}", actions(), d.stderr());
    sb.wait_for_polls(d, 3, Duration::from_secs(20));
    let records = sb.restarts();
    let t0 = records.first().map_or(0.0, |r| r.ts);
    for r in records.iter().filter(|r| r.id == a.id) {
        eprintln!("+{:5.1}s {}", r.ts - t0, r.action);
    }
    let detected = &sb.restarts_of(a, "stall-detected")[0];
    assert_eq!(stall(detected).kind, "context-exhausted", "{detected:?}");
    assert!(
        (stall(detected).evidence).contains("Context limit reached"),
        "{detected:?}"
    );
    assert!(sb.session_calls(a, "restart").is_empty(), "never a restart");
    assert_eq!(a.boots(), 1, "no restart by anyone: {}", a.fake_log());
    assert!(sb.escalations().is_empty(), "{:?}", sb.escalations());
    actions()
}

/// What `session send` answered for the command the watchdog typed, by its
/// log: `delivered`, or the error it logged; printed for the measurement.
fn command_delivery(a: &Agent, d: &Daemon, command: &str) -> String {
    let err = d.stderr();
    let unconfirmed = err
        .lines()
        .find(|l| l.contains("unconfirmed") && l.contains(&a.id))
        .map(str::to_owned);
    let answer = unconfirmed.unwrap_or_else(|| "delivered".into());
    eprintln!("{command} by the watchdog: {answer}");
    answer
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_full_clear_on_compact_conductor_is_cleared_re_briefed_and_its_new_id_survives_a_restart() {
    let sb = Sandbox::new();
    let (a, d, old) = full_and_watched(&sb, "ops", "full");
    let actions = remedied(&sb, &a, &d);
    assert_eq!(
        actions,
        [
            "stall-detected",
            "clear-sent",
            "resume-sent",
            "resume-verified"
        ]
    );
    let detected = &sb.restarts_of(&a, "stall-detected")[0];
    assert_eq!(
        stall(detected).remedy.as_deref(),
        Some("/clear then re-brief (clear_on_compact)")
    );
    assert_eq!(
        said(&a),
        ["Check the sessions in your group.", "/clear", REBRIEF]
    );
    let delivery = command_delivery(&a, &d, "/clear");
    assert!(
        delivery == "delivered" || delivery.contains("no_evidence"),
        "{delivery}"
    );
    let new = sids(&a).last().cloned().unwrap_or_default();
    assert_ne!(new, old);
    assert_eq!(claude_session_id(&sb, &a), new);
    let set = sb.session_calls(&a, "set");
    assert_eq!(set.len(), 1, "{set:?}");
    assert!(
        set[0].ends_with(&format!(" claude-session-id {new}")),
        "{set:?}"
    );
    // What the `session set` is for: agent-deck 1.14.0 keeps its own
    // rebind in memory only, so without it this restart resumes the old,
    // full conversation (context.rs).
    drop(d);
    let boot = restarted_boot(&sb, &a);
    assert!(
        boot.contains(&format!("--resume {new} ")),
        "{boot}\nnew {new}"
    );
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_full_conductor_without_clear_on_compact_is_compacted_and_resumed() {
    let sb = Sandbox::new();
    // Where agent-deck 1.14.0 reads it (context.md §1.3): its conductor
    // dir under XDG data, as `conductor list` confirms.
    let meta = sb.home.join(".local/share/agent-deck/conductor/keep");
    fs::create_dir_all(&meta).expect("conductor dir");
    fs::write(
        meta.join("meta.json"),
        r#"{"name":"keep","profile":"default","clear_on_compact":false}"#,
    )
    .expect("meta.json");
    let listed = sb.cli_json(&["conductor", "list", "--json"]);
    let keep = &listed["conductors"][0];
    assert_eq!(
        (&keep["name"], &keep["clear_on_compact"]),
        (&"keep".into(), &false.into()),
        "{listed}"
    );
    let (a, d, id) = full_and_watched(&sb, "keep", "full limit compacts 3");
    let actions = remedied(&sb, &a, &d);
    assert_eq!(
        actions,
        [
            "stall-detected",
            "compact-sent",
            "compacted",
            "resume-sent",
            "resume-verified"
        ]
    );
    let detected = &sb.restarts_of(&a, "stall-detected")[0];
    assert_eq!(
        stall(detected).remedy.as_deref(),
        Some("/compact then resume (not clear_on_compact)")
    );
    let typed = said(&a);
    assert_eq!(typed.len(), 3, "{typed:?}");
    assert_eq!(
        typed[..2],
        ["Check the sessions in your group.", "/compact"]
    );
    assert!(
        typed[2].starts_with("[agent-deck-watchdog] continue: ")
            && typed[2].contains("context-exhausted"),
        "{typed:?}"
    );
    let delivery = command_delivery(&a, &d, "/compact");
    assert_eq!(delivery, "delivered");
    assert_eq!(claude_session_id(&sb, &a), id, "a compaction keeps the id");
    assert!(sb.session_calls(&a, "set").is_empty());
}
