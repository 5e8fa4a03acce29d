//! The restart of a live conductor whose Telegram poller is gone (SPEC
//! §6.1) or deaf (§6.5). It runs on the restart worker, serialized with
//! every other restart; the patrol has already claimed its dedup window.

use crate::act::job::{RestartJob, RestartKind, RestartRunner};
use crate::decide::{cascade, patrol_rules};
use crate::fleet::deck::RestartAnswer;

/// SPEC §6.1 and §6.5: restart a live conductor whose Telegram poller is
/// gone or deaf. A `skipped` answer is a refusal, not a success: the dedup
/// window starts only when a restart really ran.
pub fn restart(run: &RestartRunner, job: &RestartJob) {
    let (s, ctx) = (&job.session, &run.ctx);
    let now = ctx.clock.now();
    // The record's action on success, its reason, and what a refused or
    // failed attempt's record adds to say which check asked for it.
    let (done, why, which) = match &job.kind {
        RestartKind::PollerDeaf { pending } => {
            let why = patrol_rules::deaf_reason(pending);
            (
                "poller-deaf",
                why.clone(),
                format!(" (telegram poller deaf: {why})"),
            )
        }
        _ => (
            "poller-restart",
            "telegram poller not running".to_owned(),
            String::new(),
        ),
    };
    if ctx.dry_run {
        log::info!("dry-run: would restart {} ({}): {why}", s.id, s.title);
        patrol_rules::note_poller_restarted(&mut ctx.state.lock(), &s.id, now);
        return ctx.note(s, done, Some(why));
    }
    cascade::note_restart_call(&mut ctx.state.lock(), &ctx.limits, &s.id, now);
    let (action, reason) = match ctx.deck.restart(&s.profile, &s.id) {
        Ok(RestartAnswer::Restarted) => {
            patrol_rules::note_poller_restarted(&mut ctx.state.lock(), &s.id, ctx.clock.now());
            log::info!("restarted {} ({}): {why}", s.id, s.title);
            (done, why)
        }
        Ok(RestartAnswer::Skipped(refusal)) => {
            log::info!("agent-deck declined the poller restart of {}: {refusal}; will try again at a later check", s.id);
            (
                "poller-refused",
                format!("agent-deck refused the restart: {refusal}{which}"),
            )
        }
        Err(e) => {
            // It may have torn the pane down already: no retry before the dedup window.
            patrol_rules::note_poller_restarted(&mut ctx.state.lock(), &s.id, ctx.clock.now());
            log::warn!(
                "poller restart of {} failed: {e}; not retried within POLLER_RESTART_DEDUP_S",
                s.id
            );
            ("poller-restart-failed", format!("restart {e}{which}"))
        }
    };
    ctx.note(s, action, Some(reason));
}
