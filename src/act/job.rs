//! A job of the worker (a revive, a stall's resume, a poller restart), and
//! the step the revives share: waiting for the session to leave `error`.
//! The kinds build on this file, and this file on none of them.

use std::time::Duration;

use crate::act::context::Context;
use crate::decide::restart::{JobKind, Verified};
use crate::fleet::panes::Proof;
use crate::fleet::session::{Live, Session, Status};

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
pub(crate) struct Job {
    pub session: Session,
    pub slot: Option<f64>,
    pub kind: JobKind,
    /// Set for a death the pane watch proved; `None` for every other.
    pub proven: Option<Proven>,
    /// The tmux session its last restart left unsaved, ended before this
    /// one's call (SPEC §5.5).
    pub ending: Option<String>,
}

impl Job {
    /// A poller restart of `s`, which takes no budget slot.
    pub(crate) fn poller(s: &Session, kind: JobKind) -> Job {
        Job {
            session: s.clone(),
            slot: None,
            kind,
            proven: None,
            ending: None,
        }
    }
}

/// Polls the status of `s` for up to `within`. The read that finds it out
/// of `error` says when it names a tmux session other than the main loop's
/// map; the main loop has the name from the job's outcome, and hands the
/// pane watch a new map as soon as it takes it.
pub(super) fn verify(ctx: &Context, s: &Session, within: Duration) -> Verified {
    let step = (within / 4).min(Duration::from_secs(1));
    let deadline = ctx.clock.now() + within.as_secs_f64();
    let mut last = Verified::default();
    loop {
        if !step.is_zero() && !ctx.shutdown.sleep(step) {
            return last;
        }
        if let Some(live) = ctx.read_status(s) {
            last.status = live.status;
            if live.status() != Status::Error {
                let map = ctx.panes.as_ref().and_then(|p| p.map());
                let old = map.as_ref().and_then(|m| m.critical.get(&s.id));
                let name = live.tmux_session.as_ref();
                if let Some(name) = name.filter(|n| old.is_some_and(|o| o != *n)) {
                    log::info!(
                        "{} now runs in tmux session {name}; the pane watch follows it",
                        s.id
                    );
                }
                last.tmux = live.tmux_session;
                return last;
            }
        }
        if ctx.clock.now() >= deadline || step.is_zero() {
            return last;
        }
    }
}
