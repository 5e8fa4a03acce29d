//! A Claude session whose context window is full (issue #37), as agent-deck
//! 1.14.0 shows it: the error turn on its pane, the synthetic record's text
//! as its last assistant message, and what `/clear`, `/compact` and any
//! other message sent to it leave. It owns the state keys `full`,
//! `on_compact`, `clear_delivery` and `answers`; it writes no answer
//! (`actions.rs` does) and acts on nothing outside the Claude family.
//!
//! Evidence: context.md §1.7 and §3 for the renderings, and the live tests
//! in tests/live/context.rs, measured on the real 1.14.0 (2026-12-07) with
//! the Claude-mode fake agent (tests/live/fake_agent.rs `FULL`), whose
//! screens this module draws. Guesses are named where they are made.
//!
//! While `full` is set, `output --pane` shows after `pane` the turn that
//! failed (`❯ <prompt>`, `⏺ …`, the error's `⎿` line, an empty `❯ `)
//! unless `pane` already ends on one; a read never stores it, so reads do
//! not grow the pane. A send stores it before adding its own lines.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use super::live::Moment;
use super::state::{push_line, Delivery, Full, OnCompact, SimSession};

/// The prompt of the turn a full session's pane shows before anything was
/// sent to it: the one the live tests type (`error_turn`).
const FIRST_PROMPT: &str = "Check the sessions in your group.";

/// The turn line above the error, as context.md §3 draws it (`⏺ …`); the
/// text is the live fake's.
const TURN: &str = "⏺ Reading the rest of the logs.";

const THRASHING: &str = "Autocompact is thrashing: the context refilled to the limit \
within 3 turns of the previous compact, 3 times in a row. A file being read or a tool output \
is likely too large for the context window. Try reading in smaller chunks, or use /clear to \
start fresh.";

/// Every kind, for recognising a pane that already shows its error.
const KINDS: [Full; 4] = [Full::Limit, Full::Prompt, Full::Compaction, Full::Thrashing];

/// A `/compact` that worked wipes the screen to these over the composer
/// (context.md §3, CC#7392 with the newer `ctrl+o`; tests/live/context.rs
/// `compact_is_reported_delivered_and_leaves_the_session_idle`).
const COMPACTED: &str = "══ Conversation compacted · ctrl+o for history ══\n  \
⎿  Compacted (ctrl+o to see full summary)\n❯ ";

/// The busy line of a compaction (context.md §3), frozen where it hung.
const COMPACTING: &str = "✻ Compacting conversation… (3s · esc to interrupt)";

/// The one-line answer of a turn that goes through.
const ANSWER: &str = "Resumed.";

/// The substate 1.14.0 reads at an empty prompt, whether the status is
/// the error turn's `running` or the `waiting` after `/clear` and
/// `/compact` (tests/live/context.rs, every reading of it).
const AT_EMPTY_PROMPT: &str = "idle-at-empty-prompt";

/// The error's `⎿` line text (context.md §3).
fn rendering(full: Full) -> &'static str {
    match full {
        Full::Limit => "Context limit reached · /compact or /clear to continue",
        Full::Prompt => "Prompt is too long",
        Full::Compaction => {
            "Error: Error during compaction: Error: Conversation too long. Press esc twice to \
             go up a few messages and try again."
        }
        Full::Thrashing => THRASHING,
    }
}

/// What `session output` prints: the test's `transcript`, else while full
/// the synthetic record's text, which is the thrashing message for that
/// kind and `Prompt is too long` for the others (tests/live/context.rs
/// `the_other_renderings_read_the_same_and_output_gives_the_records_text`).
pub(super) fn transcript(s: &SimSession) -> String {
    match s.full {
        Some(Full::Thrashing) if s.transcript.is_empty() => THRASHING.into(),
        Some(_) if s.transcript.is_empty() => "Prompt is too long".into(),
        _ => s.transcript.clone(),
    }
}

/// The pane as `output --pane` shows it (None: gone).
pub(super) fn pane(s: &SimSession) -> Option<String> {
    let mut pane = s.pane.clone()?;
    if let Some(full) = s.full.filter(|_| !shows_it(&pane)) {
        error_turn(&mut pane, FIRST_PROMPT, full);
    }
    Some(pane)
}

/// Whether the pane ends on an error turn, or on a compaction under way.
fn shows_it(pane: &str) -> bool {
    let tail = pane.trim_end();
    tail.ends_with(COMPACTING)
        || KINDS
            .iter()
            .any(|&f| tail.ends_with(&format!("⎿  {}\n❯", rendering(f))))
}

/// A message sent to a Claude session that `/clear` or `/compact` acts on,
/// or that is full or `answers`: its pane, transcript, status and id as
/// they are after the turn, and how `session send` answers (the caller
/// writes the reply). None: any other send, answered as before.
pub(super) fn take(s: &mut SimSession, message: &str, at: &Moment) -> Option<Delivery> {
    if !s.claude_family() {
        return None;
    }
    s.pane = pane(s);
    match message.trim() {
        "/clear" => return Some(clear(s, at)),
        "/compact" => compact(s),
        _ if s.full.is_some() => {
            let full = s.full.unwrap_or(Full::Limit);
            edit(s, |p| error_turn(p, message, full));
            rest(s, "running");
        }
        _ if s.answers => {
            edit(s, |p| {
                type_line(p, message);
                push_line(p, &format!("⏺ {ANSWER}"));
                push_line(p, "❯ ");
            });
            s.transcript = ANSWER.into();
        }
        _ => return None,
    }
    Some(Delivery::Submitted)
}

/// `/clear`: a new conversation at once, whether it was full or not.
/// 1.14.0's `session show` prints the new id at once, from the hook's
/// `SessionStart`, and reads `waiting`/`idle-at-empty-prompt`. The send
/// answered `no_evidence` in 8 of 11 runs, `submitted` in the other 3
/// (tests/live/context.rs
/// `clear_is_typed_once_and_a_rebrief_moves_the_shown_id_but_a_restart_resumes_the_old`);
/// `clear_delivery` picks the minority.
fn clear(s: &mut SimSession, at: &Moment) -> Delivery {
    s.pane = Some("❯ \n".into());
    s.transcript.clear();
    s.full = None;
    s.answers = true;
    s.claude_session_id = new_claude_id(s, at);
    rest(s, "waiting");
    s.clear_delivery.unwrap_or(Delivery::NoEvidence)
}

/// `/compact`, answered `submitted` whether it works or fails (measured,
/// tests/live/context.rs `compact_is_reported_delivered_and_leaves_the_session_idle`
/// and `a_failed_compact_is_reported_delivered_too`).
fn compact(s: &mut SimSession) {
    match s.on_compact.unwrap_or(OnCompact::Compacts) {
        OnCompact::Compacts => {
            // *Guess*: the synthetic record stays the last assistant
            // message, since a compaction writes a system record and a
            // summary, no assistant one.
            s.transcript = transcript(s);
            s.pane = Some(COMPACTED.into());
            s.full = None;
            s.answers = true;
            rest(s, "waiting");
        }
        OnCompact::Fails => {
            // The status stays the error turn's (measured).
            edit(s, |p| {
                type_line(p, "/compact");
                push_line(p, &format!("  ⎿  {}", rendering(Full::Compaction)));
                push_line(p, "❯ ");
            });
            s.full = Some(Full::Compaction);
        }
        OnCompact::Hangs => {
            // *Guess*: a busy cue reads `running` with no substate.
            edit(s, |p| {
                type_line(p, "/compact");
                push_line(p, COMPACTING);
            });
            s.status = Some("running".into());
            s.substate.clear();
        }
    }
}

fn edit(s: &mut SimSession, f: impl FnOnce(&mut String)) {
    if let Some(pane) = s.pane.as_mut() {
        f(pane);
    }
}

/// At an empty prompt, reading `status`.
fn rest(s: &mut SimSession, status: &str) {
    s.status = Some(status.into());
    s.substate = AT_EMPTY_PROMPT.into();
}

/// `message`'s turn, failing on `full`'s error.
fn error_turn(pane: &mut String, message: &str, full: Full) {
    type_line(pane, message);
    push_line(pane, TURN);
    push_line(pane, &format!("  ⎿  {}", rendering(full)));
    push_line(pane, "❯ ");
}

/// Types `line` at the composer: an empty prompt at the pane's foot takes it.
fn type_line(pane: &mut String, line: &str) {
    let body = pane.trim_end();
    let keep = (body.strip_suffix('❯'))
        .filter(|rest| rest.is_empty() || rest.ends_with('\n'))
        .map(str::len);
    if let Some(n) = keep {
        pane.truncate(n);
    }
    push_line(pane, &format!("❯ {line}"));
}

/// A fresh Claude session id in the UUID shape.
fn new_claude_id(s: &SimSession, at: &Moment) -> String {
    let seeds = RandomState::new();
    let (a, b) = (
        seeds.hash_one((&s.id, at.now.to_bits(), 0)),
        seeds.hash_one((&s.id, at.now.to_bits(), 1)),
    );
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}
