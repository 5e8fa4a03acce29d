//! A stall's resume (SPEC §14), on the restart worker: it waits its turn
//! in the global serialization, so no resume and restart ever run at once,
//! but passes none of the restart gates and spends nothing of the restart
//! budget, the cascade guard or the 429 breaker. A fresh `session show`
//! must still find the stall (it may have gone on by itself, or a menu may
//! have opened), then one `session send` goes: `RESUME_MESSAGE`, or a full
//! context's step (SPEC §15): its command (`/clear`, `/compact`), then the
//! re-brief or the resume. agent-deck's send keeps an operator's draft:
//! from 1.16.9 it refuses to type over one (`composer_blocked`); 1.14.0
//! saves it, sends, and types it back.

use crate::act::context::Context;
use crate::act::job::Job;
use crate::decide::restart::{Dropped, Outcome};
use crate::decide::stall::{Seen, Stall};
use crate::fleet::deck::Delivery;
use crate::fleet::session::{Live, Session};

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
    if ctx.dry_run {
        // Said once: a dry run sends nothing, so there is nothing to verify.
        stall.unresolved = true;
        return Outcome::Resumed {
            stall,
            unconfirmed: None,
        };
    }
    match stall.remedy.as_mut() {
        Some(r) if r.command_at.is_none() => {
            r.old_id = live.claude_session_id.clone().or(r.old_id.take());
            command(ctx, s, stall)
        }
        Some(r) if r.clear => {
            let new_id = live.claude_session_id.clone();
            if new_id.is_some() && new_id == r.old_id {
                stall.unresolved = true;
                let why = "/clear started no new conversation (claude_session_id unchanged)";
                return Outcome::ResumeFailed {
                    stall,
                    why: why.into(),
                    unresolved: true,
                };
            }
            let outcome = message(ctx, s, stall, &ctx.cfg.context_rebrief_message);
            rebind(ctx, s, &outcome, &live);
            outcome
        }
        _ => {
            let text = ctx
                .cfg
                .resume_message
                .replace("{kind}", stall.kind.as_str());
            message(ctx, s, stall, &text)
        }
    }
}

/// Sends a full context's command. Whatever agent-deck answers once the
/// text may have been taken (1.14.0 answers `/clear` with `no_evidence` in
/// most runs, though it worked), it is never typed again: the pane tells
/// whether it took.
fn command(ctx: &Context, s: &Session, mut stall: Stall) -> Outcome {
    let now = ctx.clock.now();
    let text = stall.remedy.as_ref().map_or("", |r| r.command());
    match ctx.deck.send(&s.profile, &s.id, text) {
        Err(e) if !e.delivery().is_some_and(Delivery::maybe_submitted) => {
            let unresolved = stall.undelivered(now, &ctx.limits.stall);
            let why = format!("send {e}");
            Outcome::ResumeFailed {
                stall,
                why,
                unresolved,
            }
        }
        sent => {
            if let Some(r) = stall.remedy.as_mut() {
                r.command_at = Some(now);
            }
            Outcome::Resumed {
                stall,
                unconfirmed: sent.err().map(|e| e.to_string()),
            }
        }
    }
}

/// Sends `text`, the resume or the re-brief, to be verified by a new turn
/// even when agent-deck saw no sign that it was submitted: the turn tells.
fn message(ctx: &Context, s: &Session, mut stall: Stall, text: &str) -> Outcome {
    let now = ctx.clock.now();
    match ctx.deck.send(&s.profile, &s.id, text) {
        Err(e) if !e.delivery().is_some_and(Delivery::maybe_submitted) => {
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

/// After the re-brief went, stores the conversation the `/clear` started
/// as the one a restart resumes: agent-deck shows it at once but 1.14.0
/// never stores it without a TUI, so a restart would resume the full one
/// (tests/live/context.rs).
fn rebind(ctx: &Context, s: &Session, outcome: &Outcome, live: &Live) {
    let (Outcome::Resumed { .. }, Some(new)) = (outcome, &live.claude_session_id) else {
        return;
    };
    if let Err(e) = ctx.deck.set_claude_session_id(&s.profile, &s.id, new) {
        log::warn!(
            "could not store {}'s new conversation {new} ({e}): a restart may resume the full one",
            s.id
        );
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::decide::restart::JobKind;
    use crate::fleet::fake::{live, FakeDeck, Script};
    use crate::fleet::session::Status;

    const ID: &str = "3f9c2a1b-1755891234";

    /// A conductor cleared by `/clear` whose `session show` now prints
    /// `shown` as its `claude_session_id`, due its re-brief.
    fn rebrief(shown: &str) -> (Outcome, Arc<FakeDeck>) {
        let tmp = tempfile::tempdir().unwrap();
        let showing = Live {
            claude_session_id: Some(shown.into()),
            ..live(Status::Waiting).unwrap()
        };
        let deck = Arc::new(FakeDeck::new(Script {
            shows: [Some(showing)].into(),
            ..Script::default()
        }));
        let (ctx, _) = crate::act::context::tests::context(tmp.path(), deck.clone());
        // `/clear` typed and its effect seen: the re-brief is next.
        let mut stall = crate::decide::stall::ladder_tests::full(true);
        let remedy = stall.remedy.as_mut().unwrap();
        (remedy.command_at, remedy.settled) = (Some(0.0), true);
        ctx.state.lock().book(ID).stall = Some(stall);
        let session = Session {
            id: ID.into(),
            title: "conductor-ops".into(),
            profile: "default".into(),
            ..Session::default()
        };
        let job = Job {
            session,
            slot: None,
            kind: JobKind::Resume,
            proven: None,
            ending: None,
        };
        (resume(&ctx, &job), deck)
    }

    #[test]
    fn the_re_brief_goes_only_to_a_new_conversation_which_is_then_stored() {
        let (out, deck) = rebrief("new");
        assert!(matches!(&out, Outcome::Resumed { stall, .. } if stall.sent_at.is_some()));
        assert_eq!(deck.count("send"), 1);
        let stored = deck
            .calls
            .lock()
            .iter()
            .any(|c| c == &format!("set {ID} claude-session-id new"));
        assert!(stored, "{:?}", deck.calls.lock());
        // The same conversation: the `/clear` did not take; nothing is typed.
        let (out, deck) = rebrief("old");
        let Outcome::ResumeFailed {
            why, unresolved, ..
        } = out
        else {
            panic!("{out:?}");
        };
        assert!(unresolved && why.contains("no new conversation"), "{why}");
        assert_eq!((deck.count("send"), deck.count("set")), (0, 0));
    }
}
