//! A stall's resume (SPEC §14), on the restart worker: it waits its turn
//! in the global serialization, so no resume and restart ever run at once,
//! but passes none of the restart gates and spends nothing of the restart
//! budget, the cascade guard or the 429 breaker. A fresh `session show`
//! must still find the stall (it may have gone on by itself, or a menu may
//! have opened), then one `session send` of `RESUME_MESSAGE` goes. agent-deck's
//! send keeps an operator's draft: from 1.16.9 it refuses to type over one
//! (`composer_blocked`); 1.14.0 saves it, sends, and types it back.

use crate::act::context::Context;
use crate::act::job::Job;
use crate::decide::restart::{Dropped, Outcome};
use crate::decide::stall::Seen;
use crate::fleet::deck::Delivery;

/// Sends the resume of the stall of `job`'s session, if it is still one.
pub(crate) fn resume(ctx: &Context, job: &Job) -> Outcome {
    let s = &job.session;
    let Some(mut stall) = ctx.state.lock().book(&s.id).stall.clone() else {
        return Outcome::Dropped(Dropped::NoStall);
    };
    let Some(live) = ctx.read_status(s) else {
        return Outcome::Dropped(Dropped::StatusUnread);
    };
    if Seen::of(&live, Some(stall.kind)) != Some(Seen::Stalled) {
        return Outcome::Dropped(Dropped::NotStalled(live.status()));
    }
    let now = ctx.clock.now();
    if ctx.dry_run {
        // Said once: a dry run sends nothing, so there is nothing to verify.
        stall.unresolved = true;
        return Outcome::Resumed {
            stall,
            unconfirmed: None,
        };
    }
    let text = ctx
        .cfg
        .resume_message
        .replace("{kind}", stall.kind.as_str());
    match ctx.deck.send(&s.profile, &s.id, &text) {
        Err(e) if !e.delivery().is_some_and(Delivery::arrived) => {
            let unresolved = stall.undelivered(now, &ctx.limits.stall);
            Outcome::ResumeFailed {
                stall,
                why: format!("send {e}"),
                unresolved,
            }
        }
        sent => {
            stall.sent(now);
            Outcome::Resumed {
                stall,
                unconfirmed: sent.err().map(|e| e.to_string()),
            }
        }
    }
}
