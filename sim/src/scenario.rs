//! The demo's fleet: the sessions of `agent-deck-watchdog demo`'s scenario
//! and the crash it plays. Data only; the runner that drives the daemon
//! against it and prints the timeline is the daemon's `demo` command.
//!
//! The scenario: a conductor crashes and is revived through the inotify
//! fast path; a busy conductor shows an error banner while its pane keeps
//! moving and is left alone; an auth-held conductor is left alone and
//! escalated once; a worker in error is ignored.

use serde_json::json;

use crate::{unix_now, SimSession, SimState};

/// The conductor that crashes and is revived.
pub const CRASHER: &str = "3f9c2a1b-1755891234";
/// The conductor whose error banner is old news: its pane keeps moving.
pub const BUSY: &str = "7c1d2e3f-1755891300";
/// The conductor whose login expired: auth-held.
pub const HELD: &str = "9a8b7c6d-1755891400";
/// A worker in error: not critical.
pub const WORKER: &str = "a0b1c2d3-1755899999";

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

/// The four sessions as the demo starts.
pub fn fleet() -> SimState {
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
    SimState {
        sessions: vec![crasher, busy, held, worker],
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
