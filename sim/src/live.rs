//! What a CLI call reads for a session at a given moment, as agent-deck's
//! status code derives it from the state and a fresh hook file; and the tmux
//! name a restart that recreates the tmux session gives it. Pure but for
//! reading a hook file: no state is written here.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::path::PathBuf;

use super::hooks;
use super::state::{SimSession, SimState};
use crate::release::Release;

/// Seconds after creation (or start) during which a missing tmux session
/// reads as starting up rather than as a fault.
pub(super) const START_GRACE_S: f64 = 1.5;

/// How long a hook file moves the status; a Codex-family hook other than
/// `waiting` moves it for less.
pub(super) const HOOK_WINDOW_S: f64 = 120.0;
pub(super) const CODEX_RUNNING_HOOK_WINDOW_S: f64 = 20.0;

/// The freshness guard's window: a restart this soon after a start or
/// restart of a healthy session is skipped.
pub(super) const FRESHNESS_WINDOW_S: f64 = 60.0;

/// The moment of one call and where its hook files are.
#[derive(Debug, Clone, Default)]
pub(super) struct Moment {
    /// Unix seconds.
    pub now: f64,
    /// The hooks directory, under `read_hooks: true`.
    pub hooks: Option<PathBuf>,
    /// The caller's `TMUX` names another tmux server than the fleet's: the
    /// release, which decides what every session then reads.
    pub foreign: Option<Release>,
}

/// Statuses printed as themselves; the rest print `unknown` (`starting` too).
const KNOWN_STATUSES: [&str; 6] = ["running", "waiting", "idle", "error", "stopped", "queued"];

/// Statuses the freshness and auth-hold guards count as healthy.
pub(super) const HEALTHY: [&str; 4] = ["running", "waiting", "idle", "starting"];

/// A status as the CLI prints it.
pub(super) fn printed(status: &str) -> &str {
    if KNOWN_STATUSES.contains(&status) {
        status
    } else {
        "unknown"
    }
}

fn codex_family(s: &SimSession) -> bool {
    s.tool() == "codex" || s.compatible_with.trim().eq_ignore_ascii_case("codex")
}

fn reads_hooks(s: &SimSession) -> bool {
    s.claude_family() || codex_family(s) || ["gemini", "hermes", "cursor"].contains(&s.tool())
}

/// The session's status now, before printing (so `starting` may come back).
pub(super) fn status(s: &SimSession, at: &Moment) -> String {
    if !s.was_started() {
        let created = s.created_at.unwrap_or(s.created_secs() as f64);
        let young = at.now - created < START_GRACE_S;
        return if young { "starting" } else { "error" }.into();
    }
    if s.raw_status() == "stopped" {
        return "stopped".into();
    }
    // Through another tmux server, up to 1.16.16 every session, live or
    // dead, reads `error` (measured on 1.14.0 by the live contract suite;
    // CHANGELOG 1.16.17); from 1.16.17 "its last known status is kept".
    if let Some(release) = at.foreign {
        let kept = release >= Release::new(1, 16, 17);
        return if kept { s.raw_status() } else { "error" }.into();
    }
    if !s.tmux_exists() {
        // Within the grace after a start, a gone tmux is still `starting`.
        let young = s.last_started.is_some_and(|t| at.now - t < START_GRACE_S);
        return if young { "starting" } else { "error" }.into();
    }
    if let Some(hook) = fresh_hook(s, at) {
        match hook.as_str() {
            "running" | "waiting" | "starting" => return hook,
            "dead" => return "error".into(),
            _ => {}
        }
    }
    s.raw_status().into()
}

/// The status of a fresh hook file that applies to this session.
fn fresh_hook(s: &SimSession, at: &Moment) -> Option<String> {
    if !reads_hooks(s) {
        return None;
    }
    let (status, ts) = hooks::read(at.hooks.as_deref()?, &s.id, at.now)?;
    let window = if codex_family(s) && status != "waiting" {
        CODEX_RUNNING_HOOK_WINDOW_S
    } else {
        HOOK_WINDOW_S
    };
    (at.now - ts < window).then_some(status)
}

/// The status the restart guards read: the stored one under
/// `status_writer: false`, else the live one.
pub(super) fn guard_status(s: &SimSession, st: &SimState, at: &Moment) -> String {
    if st.status_writer == Some(false) {
        s.stored_status
            .clone()
            .unwrap_or_else(|| s.raw_status().into())
    } else {
        status(s, at)
    }
}

/// The freshness guard's reason when it skips a restart now, else None,
/// as `internal/session/restart_guard.go` (1.14.0 and 056a97ee) words it.
pub(super) fn freshness_skip(s: &SimSession, st: &SimState, at: &Moment) -> Option<String> {
    let age = at.now - s.last_started?;
    let window = st.freshness_window_s.unwrap_or(FRESHNESS_WINDOW_S);
    let status = guard_status(s, st, at);
    if !(0.0..window).contains(&age) || !HEALTHY.contains(&status.as_str()) {
        return None;
    }
    Some(format!(
        "session is {status} and was started {} ago (within {} freshness window); \
         use --force to restart anyway",
        go_seconds(age),
        go_seconds(window)
    ))
}

/// Whole seconds as Go prints a duration: `8s`, `1m0s`, `1h0m5s`.
fn go_seconds(secs: f64) -> String {
    let n = secs.round().max(0.0) as u64;
    match (n / 3600, n % 3600 / 60, n % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, s) => format!("{h}h{m}m{s}s"),
    }
}

/// Whether a restart keeps the tmux session (and its scrollback).
pub(super) fn restart_keeps_tmux(s: &SimSession) -> bool {
    s.claude_family() && !s.claude_session_id.is_empty() && s.tmux_exists()
}

/// A fresh tmux session name: `agentdeck_<title>_<8 hex>`, each run of
/// characters outside `[A-Za-z0-9-]` in the title made one `-`.
pub(super) fn new_tmux_name(title: &str, at: &Moment) -> String {
    let (mut sanitized, mut in_run) = (String::new(), false);
    for c in title.chars() {
        let kept = c.is_ascii_alphanumeric() || c == '-';
        if kept {
            sanitized.push(c);
        } else if !in_run {
            sanitized.push('-');
        }
        in_run = !kept;
    }
    let seed = RandomState::new().hash_one((title, at.now.to_bits(), std::process::id()));
    format!("agentdeck_{sanitized}_{:08x}", seed as u32)
}
