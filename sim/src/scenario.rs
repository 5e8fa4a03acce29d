//! The demo's fleet: the sessions of `agent-deck-watchdog demo`'s scenario
//! and the crash it plays. Data only; the runner that drives the daemon
//! against it and prints the timeline is the daemon's `demo` command.
//!
//! The scenario: a conductor crashes and is revived through the inotify
//! fast path; a busy conductor shows an error banner while its pane keeps
//! moving and is left alone; an auth-held conductor is left alone and
//! escalated once; a worker in error is ignored; a conductor at its usage
//! limit is resumed at the reset its rejection names; a conductor whose
//! context window is full is cleared and re-briefed.

use serde_json::json;

use crate::state::Full;
use crate::{unix_now, SimSession, SimState};

/// The conductor that crashes and is revived.
pub const CRASHER: &str = "3f9c2a1b-1755891234";
/// The conductor whose error banner is old news: its pane keeps moving.
pub const BUSY: &str = "7c1d2e3f-1755891300";
/// The conductor whose login expired: auth-held.
pub const HELD: &str = "9a8b7c6d-1755891400";
/// A worker in error: not critical.
pub const WORKER: &str = "a0b1c2d3-1755899999";
/// The conductor at its usage limit.
pub const LIMITED: &str = "5e6f7a8b-1755891500";
/// The conductor whose context window is full.
pub const FULL: &str = "b4c5d6e7-1755891600";

fn session(id: &str, title: &str, group: &str, status: &str, pane: &str) -> SimSession {
    SimSession {
        id: id.into(),
        title: title.into(),
        group: group.into(),
        profile: "default".into(),
        status: Some(status.into()),
        pane: Some(pane.into()),
        // Each has run: its Claude agent booted and got a session id.
        claude_session_id: format!("c1a0de00-{id}"),
        ..SimSession::default()
    }
}

/// The six sessions as the demo starts; conductor-limit's usage limit
/// resets at `resets_at` (Unix seconds).
pub fn fleet(resets_at: u64) -> SimState {
    let ready = "conductor ready\n> ";
    let crasher = session(CRASHER, "conductor-ops", "conductor", "running", ready);
    let banner = "Error: connection reset (an old banner in scrollback)\n";
    let mut busy = session(BUSY, "conductor-busy", "conductor", "error", banner);
    busy.pane_moving = true;
    let mut held = session(HELD, "conductor-auth", "conductor", "error", "");
    held.substate = "auth-401".into();
    held.auth_hold = Some(json!({"reason": "auth_death", "boot_attempts": 1,
        "remedy": "log in again with `claude /login`", "evidence": "API Error: 401",
        "ts": unix_now() as u64}));
    let mut worker = session(WORKER, "worker-1", "srv", "error", "$ ");
    worker.parent_session_id = CRASHER.into();
    // Claude's older rejection wording, whose reset is to the second
    // (stalls.md); today's "resets 3pm (Zone)" is to the minute, up to a
    // minute away, too far for a demo.
    let rejection = format!("Claude AI usage limit reached|{resets_at}");
    let pane = format!("{rejection}\n> ");
    let mut limited = session(LIMITED, "conductor-limit", "conductor", "idle", &pane);
    limited.substate = "usage-limit".into();
    limited.transcript = rejection;
    // Its turns end on the error, as 1.14.0 reads it (`full_context.rs`);
    // no meta.json: agent-deck's clear_on_compact default, true.
    let mut full = session(FULL, "conductor-full", "conductor", "running", "");
    full.substate = "idle-at-empty-prompt".into();
    full.full = Some(Full::Limit);
    SimState {
        sessions: vec![crasher, busy, held, worker, limited, full],
        ..SimState::default()
    }
}

/// The crash: conductor-ops goes to `error` with a panic in its pane.
pub fn crash(st: &mut SimState) {
    if let Some(c) = st.sessions.iter_mut().find(|c| c.id == CRASHER) {
        c.status = Some("error".into());
        c.pane = Some("panic: connection reset by peer\n".into());
    }
}
