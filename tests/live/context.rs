//! What the real agent-deck 1.14.0 says of a Claude session whose context
//! window is full (issue #37, SPEC §15, context.md §1.7–§1.8), with the fake
//! agent in mode `full` standing in for Claude: the statuses after the error
//! turn, `session output -q`, and what `session send` answers for `/clear`
//! and `/compact`, sent the way the watchdog sends (`--no-wait --json`).
//! These pin the CLI's behaviour, which the watchdog and the simulator
//! build on; no watchdog runs here. Measured 2026-12-07, up to eleven runs
//! each; where it differs from context.md, the test says so.

use std::fs;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fake_agent::LIMIT;
use crate::sandbox::{Agent, Sandbox, Tool};
use crate::support::wait_until;

/// A Claude conductor running the fake in mode `mode`, at rest at its
/// prompt, and its pane's tmux target.
/// Restarts `a` from outside, past agent-deck's freshness guard, and
/// returns the command line its agent booted with.
pub(crate) fn restarted_boot(sb: &Sandbox, a: &Agent) -> String {
    sb.age_past_freshness(a);
    sb.cli_json(&["session", "restart", &a.id, "--json"]);
    // 20 s was seen too short twice under load (two tests and builds).
    let booted = wait_until(Duration::from_secs(45), || a.boots() == 2);
    assert!(booted, "{}", a.fake_log());
    a.fake_log().lines().last().unwrap_or_default().to_owned()
}

pub(crate) fn conductor(sb: &Sandbox, title: &str, mode: &str) -> (Agent, String) {
    let a = sb.add(title, "conductor", Tool::Claude, None);
    a.set_mode(mode);
    sb.start(&a);
    let target = format!("={}:", sb.tmux_session(&a));
    let ready = wait_until(Duration::from_secs(20), || pane(sb, &target).ends_with('❯'));
    assert!(ready, "{}", pane(sb, &target));
    (a, target)
}

/// The visible pane, trailing blank lines dropped.
fn pane(sb: &Sandbox, target: &str) -> String {
    let out = sb.tmux(&["capture-pane", "-p", "-t", target]);
    String::from_utf8_lossy(&out.stdout).trim_end().to_owned()
}

/// Types one prompt into the composer, as a person or a heartbeat does, and
/// waits for the turn to end on the context-limit error.
pub(crate) fn error_turn(sb: &Sandbox, target: &str) -> Instant {
    let typed = sb.tmux(&[
        "send-keys",
        "-t",
        target,
        "Check the sessions in your group.",
        "Enter",
    ]);
    assert!(typed.status.success(), "{typed:?}");
    let failed = wait_until(Duration::from_secs(20), || {
        let p = pane(sb, target);
        p.contains(LIMIT) && p.ends_with('❯')
    });
    assert!(failed, "{}", pane(sb, target));
    Instant::now()
}

/// `status/substate` as `session show --json` reads them.
fn reading(sb: &Sandbox, a: &Agent) -> String {
    let v = sb.show(a);
    format!(
        "{}/{}",
        v["status"].as_str().unwrap_or("?"),
        v["substate"].as_str().unwrap_or("?")
    )
}

/// `session send <id> <message> --no-wait --json`, as the watchdog sends;
/// what it answered and how long it took go to the test's output.
fn send(sb: &Sandbox, a: &Agent, message: &str) -> Output {
    let t = Instant::now();
    let out = sb.cli(&["session", "send", &a.id, message, "--no-wait", "--json"]);
    eprintln!(
        "send {message:?}: {:?} in {:.1?}\n  stdout: {}\n  stderr: {}",
        out.status.code(),
        t.elapsed(),
        String::from_utf8_lossy(&out.stdout).trim(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    out
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// agent-deck's own log of each bind, rebind and rejected candidate of
/// `claude_session_id`.
fn id_lifecycle(sb: &Sandbox) -> Vec<Value> {
    let path = sb
        .home
        .join(".local/share/agent-deck/logs/session-id-lifecycle.jsonl");
    let text = fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The lines the fake was typed (Enters on an empty composer excluded).
pub(crate) fn said(a: &Agent) -> Vec<String> {
    let text = fs::read_to_string(a.dir.join("said.log")).unwrap_or_default();
    text.lines().map(str::to_owned).collect()
}

/// The Claude session ids the fake has used, oldest first.
pub(crate) fn sids(a: &Agent) -> Vec<String> {
    let text = fs::read_to_string(a.dir.join("sids")).unwrap_or_default();
    text.lines().map(str::to_owned).collect()
}

pub(crate) fn claude_session_id(sb: &Sandbox, a: &Agent) -> String {
    sb.show(a)["claude_session_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The JSONL of Claude session `sid` for `a`, as agent-deck resolves it.
fn transcript(sb: &Sandbox, a: &Agent, sid: &str) -> String {
    let encoded: String = (a.dir.display().to_string().chars())
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let path = sb
        .home
        .join(".claude/projects")
        .join(encoded)
        .join(format!("{sid}.jsonl"));
    fs::read_to_string(path).unwrap_or_default()
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_full_context_reads_running_at_an_empty_prompt_past_the_hook_window() {
    // context.md §1.7 has `waiting` from about +135 s. Measured here
    // (2026-12-07, three sessions over two runs, `session show` and `list
    // --json` alike, read every 5 s): `running`/`idle-at-empty-prompt` from
    // the error to +199 s, never `waiting`. From the source (analysis): past
    // the 2-minute hook window the pane reads `waiting`, but each CLI process
    // holds a first flip away from the stored `running`
    // (`debounceFlipFromRunning`), and nothing stores the flip.
    let sb = Sandbox::new();
    let (a, target) = conductor(&sb, "conductor-cx", "full");
    assert_eq!(reading(&sb, &a), "waiting/idle-at-empty-prompt");
    let ended = error_turn(&sb, &target);
    // Sampled every 10 s rather than waited on: the fact is that nothing
    // changes, and each reading is a CLI call.
    let mut seen = Vec::new();
    while ended.elapsed() < Duration::from_secs(150) {
        seen.push((ended.elapsed().as_secs(), reading(&sb, &a)));
        std::thread::sleep(Duration::from_secs(10));
    }
    seen.push((ended.elapsed().as_secs(), reading(&sb, &a)));
    assert!(
        seen.iter()
            .all(|(_, r)| r == "running/idle-at-empty-prompt"),
        "{seen:?}"
    );
    let row = sb.list_row(&a);
    assert_eq!(
        (&row["status"], &row["substate"]),
        (&"running".into(), &"idle-at-empty-prompt".into()),
        "{row}"
    );
    let out = sb.cli(&["session", "output", &a.id, "-q"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Prompt is too long\n");
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn clear_is_typed_once_and_a_rebrief_moves_the_shown_id_but_a_restart_resumes_the_old() {
    // Measured 2026-12-07: `session send … /clear --no-wait --json` took
    // about 7 s and, in eight runs of eleven, exited 1 with `delivery:
    // no_evidence` (no busy cue, a 6-byte body too short to look for, the
    // screen wiped); in three it exited 0 with `delivery: submitted`.
    // Either way `/clear` was typed once, never re-sent, and took effect.
    let sb = Sandbox::new();
    let (a, target) = conductor(&sb, "conductor-clear", "full");
    let old = claude_session_id(&sb, &a);
    assert_eq!(sids(&a), std::slice::from_ref(&old));
    error_turn(&sb, &target);
    let out = send(&sb, &a, "/clear");
    assert!(out.stderr.is_empty(), "{out:?}");
    let v = json(&out);
    match out.status.code() {
        Some(0) => {
            assert_eq!(
                (&v["success"], &v["delivery"]),
                (&true.into(), &"submitted".into()),
                "{v}"
            );
        }
        Some(1) => {
            assert_eq!(v["success"], false, "{v}");
            assert_eq!(v["submitted"], false, "{v}");
            assert_eq!(v["code"], "DELIVERY_FAILED", "{v}");
            assert_eq!(v["delivery"], "no_evidence", "{v}");
            let error = v["error"].as_str().unwrap_or_default();
            assert!(error.contains("no evidence of delivery"), "{v}");
        }
        other => panic!("exit {other:?}: {v}"),
    }
    assert_eq!(said(&a), ["Check the sessions in your group.", "/clear"]);
    let new = sids(&a).last().cloned().unwrap_or_default();
    assert_ne!(new, old);
    // The empty prompt, repeated by agent-deck's Enters on it.
    let p = pane(&sb, &target);
    assert!(
        p.lines().filter(|l| !l.is_empty()).all(|l| l.trim() == "❯"),
        "{p}"
    );
    // `session show` reports the new id at once, from the hook's
    // `SessionStart`, though agent-deck's own rebind refuses a transcript
    // with no conversation yet (context.md §1.8): the id in `show` is no
    // proof the rebind was stored.
    assert_eq!(claude_session_id(&sb, &a), new);
    assert_eq!(reading(&sb, &a), "waiting/idle-at-empty-prompt");
    let rejected = id_lifecycle(&sb).into_iter().any(|e| {
        e["action"] == "reject"
            && e["candidate"] == new.as_str()
            && e["reason"] == "candidate_has_no_conversation_data"
    });
    assert!(rejected, "{:?}", id_lifecycle(&sb));
    let out = send(
        &sb,
        &a,
        "Your context was cleared: run your Startup Checklist.",
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(json(&out)["delivery"], "submitted");
    // agent-deck takes the new id at the re-brief's `Stop`: the new
    // transcript has a turn, and its mtime is past the old one's by more
    // than the 5 s grace (the error record was written about 10 s before).
    let rebound = wait_until(Duration::from_secs(20), || {
        id_lifecycle(&sb).iter().any(|e| {
            e["action"] == "rebind" && e["new_id"] == new.as_str() && e["hook_event"] == "Stop"
        })
    });
    assert!(rebound, "{:?}", id_lifecycle(&sb));
    assert_eq!(claude_session_id(&sb, &a), new);
    // But only in the memory of each process that reads the hook: the same
    // `rebind` from the old id is logged again on every poll (measured
    // 2026-12-07: about every 2 s for a minute), and `session restart`
    // still resumes the old, full conversation. Not in context.md; with a
    // TUI running (which saves), not measured.
    let boot = restarted_boot(&sb, &a);
    assert!(
        boot.contains(&format!("--resume {old} ")),
        "{boot}\nold {old}, new {new}"
    );
    let rebinds = id_lifecycle(&sb)
        .into_iter()
        .filter(|e| e["action"] == "rebind" && e["old_id"] == old.as_str())
        .count();
    assert!(rebinds > 2, "{:?}", id_lifecycle(&sb));
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn compact_is_reported_delivered_and_leaves_the_session_idle() {
    // Measured 2026-12-07: exit 0, `delivery: submitted`, in about 6 s with
    // a 5 s compaction (the busy cue is the evidence agent-deck waits for).
    let sb = Sandbox::new();
    let (a, target) = conductor(&sb, "conductor-compact", "full limit compacts 5");
    error_turn(&sb, &target);
    let sid = claude_session_id(&sb, &a);
    let out = send(&sb, &a, "/compact");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v = json(&out);
    assert_eq!(
        (&v["success"], &v["delivery"]),
        (&true.into(), &"submitted".into()),
        "{v}"
    );
    let compacted = wait_until(Duration::from_secs(20), || {
        let p = pane(&sb, &target);
        p.ends_with("  ⎿  Compacted (ctrl+o to see full summary)\n❯")
    });
    assert!(compacted, "{}", pane(&sb, &target));
    assert_eq!(said(&a), ["Check the sessions in your group.", "/compact"]);
    let last: Value =
        serde_json::from_str(transcript(&sb, &a, &sid).lines().last().unwrap_or_default())
            .unwrap_or_default();
    assert_eq!(last["subtype"], "compact_boundary", "{last}");
    assert_eq!(claude_session_id(&sb, &a), sid, "a compaction keeps the id");
    assert_eq!(reading(&sb, &a), "waiting/idle-at-empty-prompt");
    let out = send(
        &sb,
        &a,
        "[agent-deck-watchdog] continue: the conversation was compacted.",
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(json(&out)["delivery"], "submitted");
    let answered = wait_until(Duration::from_secs(10), || {
        let out = sb.cli(&["session", "output", &a.id, "-q"]);
        String::from_utf8_lossy(&out.stdout) == "resumed\n"
    });
    assert!(answered, "{}", pane(&sb, &target));
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_failed_compact_is_reported_delivered_too() {
    // Measured 2026-12-07: exit 0, `delivery: submitted`, about 4 s with a
    // 3 s compaction; the status is still the error turn's `running`.
    let sb = Sandbox::new();
    let (a, target) = conductor(&sb, "conductor-nocompact", "full limit fails 3");
    error_turn(&sb, &target);
    let out = send(&sb, &a, "/compact");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(json(&out)["delivery"], "submitted");
    let failed = wait_until(Duration::from_secs(20), || {
        pane(&sb, &target).ends_with(
            "  ⎿  Error: Error during compaction: Error: Conversation too long. \
             Press esc twice to go up a few messages and try again.\n❯",
        )
    });
    assert!(failed, "{}", pane(&sb, &target));
    assert_eq!(reading(&sb, &a), "running/idle-at-empty-prompt");
    let out = sb.cli(&["session", "output", &a.id, "-q"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Prompt is too long\n");
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn the_other_renderings_read_the_same_and_output_gives_the_records_text() {
    // Measured 2026-12-07: whatever the `⎿` line says, agent-deck reads the
    // error turn alike, and `session output -q` prints the synthetic
    // record's text (`Prompt is too long`, or the thrashing message).
    let sb = Sandbox::new();
    for (mode, line, text) in [
        (
            "full prompt",
            "  ⎿  Prompt is too long",
            "Prompt is too long",
        ),
        (
            "full thrashing",
            "  ⎿  Autocompact is thrashing: the context refilled to the limit",
            "Autocompact is thrashing: the context refilled to the limit",
        ),
    ] {
        let title = format!("conductor-{}", mode.replace(' ', "-"));
        let (a, target) = conductor(&sb, &title, mode);
        let typed = sb.tmux(&["send-keys", "-t", &target, "Check the sessions.", "Enter"]);
        assert!(typed.status.success(), "{typed:?}");
        let failed = wait_until(Duration::from_secs(20), || {
            let p = pane(&sb, &target);
            p.contains(&format!("⏺ Reading the rest of the logs.\n{line}")) && p.ends_with('❯')
        });
        assert!(failed, "{}", pane(&sb, &target));
        assert_eq!(reading(&sb, &a), "running/idle-at-empty-prompt", "{mode}");
        let out = sb.cli(&["session", "output", &a.id, "-q"]);
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.starts_with(text), "{mode}: {said:?}");
    }
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn session_set_stores_the_cleared_id_so_a_restart_resumes_it() {
    // Measured 2026-12-07: what makes the rebind stick without a TUI is
    // `session set <id> claude-session-id <new>` (exit 0 on a running
    // session); the restart then resumes the new conversation.
    let sb = Sandbox::new();
    let (a, target) = conductor(&sb, "conductor-set", "full");
    error_turn(&sb, &target);
    send(&sb, &a, "/clear");
    let cleared = wait_until(Duration::from_secs(10), || sids(&a).len() == 2);
    assert!(cleared, "{:?}", said(&a));
    let new = sids(&a)[1].clone();
    let out = send(
        &sb,
        &a,
        "Your context was cleared: run your Startup Checklist.",
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let set = sb.cli(&["session", "set", &a.id, "claude-session-id", &new]);
    eprintln!("session set: {set:?}");
    assert!(set.status.success(), "{set:?}");
    let boot = restarted_boot(&sb, &a);
    assert!(
        boot.contains(&format!("--resume {new} ")),
        "{boot}\nnew {new}"
    );
}
