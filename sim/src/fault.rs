//! Faults and delays the state file injects into simulated calls:
//! `faults.<kind>` makes the next calls of that kind misbehave (wearing off
//! after `count` calls), `delay_s.<kind>` makes every call of that kind
//! sleep first. Both are read leniently, as a dynamically typed program
//! would: a value of the wrong type is zero or is ignored, never an error.
//! The sleeping happens without the state lock.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::args::CommandKind;
use super::reply::{Out, Reply};
use super::state::SimState;

/// What a fault does once its `delay` has passed.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum FaultMode {
    /// Exit 0 with truncated JSON on stdout.
    Garbage,
    /// Exit 0 with `null`.
    Null,
    /// Exit 0 with nothing.
    Empty,
    /// Sleep `seconds`, then answer normally (unless killed first).
    Hang,
    /// Exit 1 with `simulated failure`.
    Exit1,
    /// SIGKILL to itself.
    Crash,
    /// agent-deck cannot load its storage: `NOT_FOUND` with exit 1 (for
    /// `remove`, `INVALID_OPERATION`; for `list`, plain text on stdout).
    LoadError,
    /// Another process holds agent-deck's store locked (1.14.0): `list
    /// --all` finds no session (`null`, exit 0) and every other call fails
    /// to open the store, exit 1. `delay` is its busy timeout.
    Locked,
    /// Any other mode: only the delay applies.
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Fault {
    pub mode: FaultMode,
    pub delay: f64,
    /// How long a `hang` sleeps: `seconds`, an hour when absent.
    pub hang_s: f64,
}

/// Takes the fault for `kind`, using up one of its `count`; a count already
/// at zero (or not a number) removes the fault without applying it.
pub(super) fn take(state: &mut SimState, kind: &str) -> Option<Fault> {
    let faults = state.faults.as_mut()?.as_object_mut()?;
    let fault = faults.get(kind)?.as_object()?.clone();
    if let Some(count) = fault.get("count") {
        let left = int(count);
        if left <= 1 {
            faults.remove(kind);
        } else if let Some(f) = faults.get_mut(kind).and_then(Value::as_object_mut) {
            f.insert("count".into(), Value::from(left - 1));
        }
        if left <= 0 {
            return None;
        }
    }
    let mode = fault.get("mode").filter(|m| m.is_string());
    let mode = mode.and_then(|m| FaultMode::deserialize(m).ok());
    let hang_s = match fault.get("seconds") {
        None | Some(Value::Null) => 3600.0,
        Some(v) => float(v),
    };
    Some(Fault {
        mode: mode.unwrap_or(FaultMode::Other),
        delay: fault.get("delay").map_or(0.0, float),
        hang_s,
    })
}

/// Seconds every call of `kind` sleeps before it runs.
pub(super) fn delay(state: &SimState, kind: &str) -> f64 {
    state
        .delay_s
        .as_ref()
        .and_then(|d| d.get(kind))
        .map_or(0.0, float)
}

/// Sleeps as the fault says, then ends the call (Some) or lets it run (None).
pub(super) fn apply(
    fault: &Fault,
    kind: CommandKind,
    json: bool,
    flush: impl FnOnce(),
) -> Option<Reply> {
    let out = Out { json, quiet: false };
    sleep(fault.delay);
    match fault.mode {
        FaultMode::Garbage => Some(Reply::out(0, "{\"id\": \"oops\n".into())),
        FaultMode::Null => Some(Reply::out(0, "null\n".into())),
        FaultMode::Empty => Some(Reply::out(0, String::new())),
        FaultMode::Hang => {
            sleep(fault.hang_s);
            None
        }
        FaultMode::Exit1 => Some(out.invalid("simulated failure")),
        FaultMode::Crash => {
            flush();
            // SIGKILL cannot be caught: the process ends here.
            let _ = rustix::process::kill_process(
                rustix::process::getpid(),
                rustix::process::Signal::KILL,
            );
            sleep(10.0);
            Some(Reply::out(137, String::new()))
        }
        FaultMode::LoadError => Some(load_error(kind, out)),
        FaultMode::Locked => Some(locked(kind, out)),
        FaultMode::Other => None,
    }
}

fn load_error(kind: CommandKind, out: Out) -> Reply {
    const CAUSE: &str = "failed to load sessions: simulated";
    match kind {
        CommandKind::ListAll => Reply::out(1, "Error: failed to list profiles: simulated\n".into()),
        CommandKind::List => Reply::out(1, format!("Error: {CAUSE}\n")),
        CommandKind::Remove => out.invalid(CAUSE),
        CommandKind::Output | CommandKind::OutputPane => out.error(
            &format!("failed to load sessions: {CAUSE}"),
            "NOT_FOUND",
            1,
            None,
        ),
        _ => out.error(CAUSE, "NOT_FOUND", 1, None),
    }
}

fn locked(kind: CommandKind, out: Out) -> Reply {
    const CAUSE: &str = "failed to initialize storage: failed to open state db: database is locked (5) (SQLITE_BUSY)";
    match kind {
        CommandKind::ListAll => Reply::out(0, "null\n".into()),
        CommandKind::List => Reply::out(1, format!("Error: {CAUSE}\n")),
        _ => out.error(CAUSE, "NOT_FOUND", 1, None),
    }
}

/// Sleeps `secs` when it is a positive, finite number of seconds.
pub(super) fn sleep(secs: f64) {
    if let Ok(d) = Duration::try_from_secs_f64(secs) {
        std::thread::sleep(d);
    }
}

/// A value as an integer the way `int()` would take it; anything else is 0.
fn int(v: &Value) -> i64 {
    match v {
        Value::Number(n) => n
            .as_i64()
            .unwrap_or_else(|| n.as_f64().unwrap_or(0.0) as i64),
        Value::String(s) => s.trim().parse().unwrap_or(0),
        Value::Bool(b) => i64::from(*b),
        _ => 0,
    }
}

/// A value as seconds the way `float()` would take it; anything else is 0.
fn float(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap_or(0.0),
        Value::String(s) => s.trim().parse().unwrap_or(0.0),
        Value::Bool(b) => f64::from(u8::from(*b)),
        _ => 0.0,
    }
}
