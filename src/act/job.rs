//! A restart job, and the steps every kind of restart shares: giving a
//! budget slot back, waiting for the session to leave `error`, and noting a
//! success. The kinds (a revival, a poller restart, prompt-resume) build on
//! this file, and this file on none of them.

use std::time::Duration;

use crate::act::context::Context;
use crate::act::continuity::Continuity;
use crate::decide::notes;
use crate::decide::outcomes::{RestartAction, Severity};
use crate::fleet::deck::SpawnFailure;
use crate::fleet::panes::Proof;
use crate::fleet::session::{Live, Session, Status};
use crate::records::audit::RestartRecord;

/// Why a session is being restarted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RestartKind {
    /// It is in error: confirm it is dead, restart, verify, fall back.
    Revive,
    /// It is alive but its Telegram poller process is missing (SPEC §6.1).
    PollerMissing,
    /// It is alive, its poller process too, but Telegram updates stayed
    /// unread on this many checks in a row (SPEC §6.5).
    PollerDeaf { pending: Vec<u64> },
    /// It is stalled (SPEC §14): one resume message, never a restart.
    Resume,
}

/// A death the pane watch proved, and the `session show` that found the
/// session in error: the liveness check leans on both (one read, no pane
/// samples), unless the job had to wait its turn, when it reads again.
#[derive(Debug, Clone)]
pub(crate) struct Proven {
    pub proof: Proof,
    pub shown: Live,
}

/// A session cleared for restart, with the budget slot it reserved
/// (revivals only).
#[derive(Debug, Clone)]
pub(crate) struct RestartJob {
    pub session: Session,
    pub slot: Option<f64>,
    pub kind: RestartKind,
    /// Set for a death the pane watch proved; `None` for every other.
    pub proven: Option<Proven>,
}

impl RestartJob {
    /// A poller restart of `s`, which takes no budget slot.
    pub(crate) fn poller(s: &Session, kind: RestartKind) -> RestartJob {
        RestartJob {
            session: s.clone(),
            slot: None,
            kind,
            proven: None,
        }
    }
}

/// Polls the status of `s` for up to `within`; the last status read, if
/// any. The read that finds it out of `error` hands its tmux name to the
/// pane watch (a custom tool's restart changes it).
pub(super) fn verify(ctx: &Context, s: &Session, within: Duration) -> Option<Status> {
    let step = (within / 4).min(Duration::from_secs(1));
    let deadline = ctx.clock.now() + within.as_secs_f64();
    let mut last = None;
    loop {
        if !step.is_zero() && !ctx.shutdown.sleep(step) {
            return last;
        }
        if let Some(live) = ctx.read_status(s) {
            last = live.status;
            if live.status() != Status::Error {
                ctx.remap(s, &live);
                return last;
            }
        }
        if ctx.clock.now() >= deadline || step.is_zero() {
            return last;
        }
    }
}

/// The `n`th real failure in a row of a restart of `s`, for `err`: logged,
/// recorded with what agent-deck said of a failed `spawn`, and escalated
/// from the second on.
pub(crate) fn failed(ctx: &Context, s: &Session, n: u32, err: &str, spawn: Option<&SpawnFailure>) {
    log::warn!(
        "restart of {} ({}) failed ({n} in a row): {err}",
        s.id,
        s.title
    );
    let mut rec = ctx.record(s, RestartAction::RestartFailed, Some(err.to_owned()));
    with_spawn(&mut rec, spawn);
    ctx.records.restart(&rec);
    if n >= 2 {
        let msg = format!(
            "{} ({}) failed to restart {n}x consecutively; last err: {err}",
            s.title, s.id
        );
        ctx.alert(s, Severity::RestartFailed, &msg);
    }
}

/// Adds what agent-deck said of a failed spawn to a record: its reason, the
/// digest of the dying output (never the text) and `elapsed_ms`.
pub(super) fn with_spawn(rec: &mut RestartRecord, spawn: Option<&SpawnFailure>) {
    if let Some(f) = spawn {
        rec.spawn_reason = Some(f.reason.to_string());
        rec.dying_output_digest.clone_from(&f.dying_output_digest);
        rec.elapsed_ms = f.elapsed_ms;
    }
}

/// A restart of `s` that brought it back as `status`: noted, recorded, and
/// its continuity message handed to `continuity`.
pub(crate) fn succeeded(ctx: &Context, s: &Session, status: Status, continuity: &Continuity) {
    let status = status.as_str();
    log::info!("restart of {} ({}) worked: status {status}", s.id, s.title);
    notes::note_success(&mut ctx.state.lock(), &s.id);
    let mut rec = ctx.record(s, RestartAction::Restarted, None);
    rec.final_status = Some(status.into());
    ctx.records.restart(&rec);
    continuity.queue(s);
}
