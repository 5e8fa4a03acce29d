//! A stall's resume (SPEC §14), on the restart worker: it waits its turn
//! in the global serialization, so no resume and restart ever run at once,
//! but passes none of the restart gates and spends nothing of the restart
//! budget, the cascade guard or the 429 breaker. A fresh `session show`
//! must still find the stall (it may have gone on by itself, or a menu may
//! have opened), then one `session send` of `RESUME_MESSAGE` goes. agent-deck's
//! send keeps an operator's draft: from 1.16.9 it refuses to type over one
//! (`composer_blocked`); 1.14.0 saves it, sends, and types it back.

use crate::act::context::Context;
use crate::act::job::RestartJob;
use crate::decide::outcomes::{RestartAction, Severity};
use crate::decide::stall::{Seen, Stall};
use crate::fleet::deck::Delivery;
use crate::fleet::session::Session;

/// Sends the resume of the stall of `job`'s session, if it is still one.
pub(crate) fn resume(ctx: &Context, job: &RestartJob) {
    let s = &job.session;
    let Some(mut stall) = ctx.state.lock().book(&s.id).stall.clone() else {
        return;
    };
    let Some(live) = ctx.read_status(s) else {
        return log::info!("resume of {} put off: its status is unreadable", s.id);
    };
    if Seen::of(&live, Some(stall.kind)) != Some(Seen::Stalled) {
        return log::info!(
            "resume of {} not sent: it reads {} now; the next tick looks again",
            s.id,
            live.status().as_str()
        );
    }
    let kind = stall.kind.as_str();
    let now = ctx.clock.now();
    if ctx.dry_run {
        log::info!("dry-run: would resume {} ({}) now: {kind}", s.id, s.title);
        // Said once: a dry run sends nothing, so there is nothing to verify.
        stall.unresolved = true;
        ctx.state.lock().book(&s.id).stall = Some(stall.clone());
        return ctx
            .records
            .restart(&record(ctx, s, RestartAction::ResumeSent, &stall, None));
    }
    let text = ctx.cfg.resume_message.replace("{kind}", kind);
    match ctx.deck.send(&s.profile, &s.id, &text) {
        Err(e) if !e.delivery().is_some_and(Delivery::arrived) => {
            let unresolved = stall.undelivered(now, &ctx.limits.stall);
            ctx.state.lock().book(&s.id).stall = Some(stall.clone());
            failed(ctx, s, &stall, format!("send {e}"), unresolved);
        }
        sent => {
            if let Err(e) = sent {
                log::info!("resume typed into the pane of {}, unconfirmed ({e})", s.id);
            }
            log::info!("resume sent to {} ({}): {kind}", s.id, s.title);
            stall.sent(now);
            let mut st = ctx.state.lock();
            st.resumes.note(now);
            st.book(&s.id).stall = Some(stall.clone());
            drop(st);
            let rec = record(ctx, s, RestartAction::ResumeSent, &stall, None);
            ctx.records.restart(&rec);
        }
    }
}

/// A resume that started no turn, or was not delivered (`why`): recorded,
/// and escalated once when that leaves the stall `unresolved`.
pub(crate) fn failed(ctx: &Context, s: &Session, stall: &Stall, why: String, unresolved: bool) {
    log::warn!(
        "resume {} of {} ({}) failed: {why}",
        stall.attempts,
        s.id,
        s.title
    );
    let rec = record(ctx, s, RestartAction::ResumeFailed, stall, Some(why));
    ctx.records.restart(&rec);
    if unresolved {
        let msg = format!(
            "{} ({}) is stalled ({}) and {} resumes did not bring it back — it needs a human",
            s.title,
            s.id,
            stall.kind.as_str(),
            ctx.limits.stall.max_attempts
        );
        ctx.alert(s, Severity::StallUnresolved, &msg);
    }
}

/// A `restart.log` record of `action` about the stall of `s`.
pub(crate) fn record(
    ctx: &Context,
    s: &Session,
    action: RestartAction,
    stall: &Stall,
    reason: Option<String>,
) -> crate::records::audit::RestartRecord {
    let mut rec = ctx.record(s, action, reason);
    rec.kind = Some(stall.kind.as_str().into());
    rec.evidence = Some(stall.evidence.clone());
    rec.resume_at = Some(stall.resume_at);
    rec.resume_from = Some(stall.resume_from.clone());
    rec.attempt = (stall.attempts > 0).then_some(stall.attempts);
    rec
}
