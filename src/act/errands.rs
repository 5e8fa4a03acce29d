//! The patrols' actions, run on their own worker thread: nudging a child
//! that has waited too long, removing a session stuck in error.
//!
//! `session send` and `remove` can take seconds, so the main loop only
//! queues them here. Each errand writes one `restart.log` record with its own
//! `action`; in dry-run the record is written and nothing is run. A nudge
//! that agent-deck reports typed into the pane but not acted on
//! (`"delivery":"typed"`, a non-Claude tool) is a nudge with reason `typed`,
//! not a failure. No errand is retried here: the patrols queue a removal
//! again after a minute and a nudge after the dedup window.

use crate::act::apply;
use crate::act::context::Context;
use crate::decide::outcomes::RestartAction;
use crate::decide::patrol_rules::NUDGE_TEXT;
use crate::fleet::deck::{CliResult, Delivery};
use crate::fleet::session::Session;
use crate::records::audit::Detail;
use crate::sys::worker::Worker;

/// One thing to do.
#[derive(Debug, Clone)]
pub(crate) enum Errand {
    /// `session send <id> "report status?" --no-wait`.
    Nudge { session: Session, waited_s: f64 },
    /// `remove <id>`: stuck in error for `stuck_for_s`.
    Remove { session: Session, stuck_for_s: f64 },
}

pub(crate) fn spawn(ctx: Context) -> std::io::Result<Worker<Errand>> {
    Worker::spawn("errands", move |e: Errand| run(&ctx, e))
}

/// How an errand's call went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ErrandEnd {
    Done,
    /// `session send` failed, but its text reached the pane
    /// (`"delivery":"typed"`): not a failure, and not sent again.
    Typed,
    Failed,
}

/// Runs `call` (or, in dry-run, only says it would) and says how it went.
fn act(
    ctx: &Context,
    s: &Session,
    what: &str,
    reason: &str,
    retry: &str,
    call: impl FnOnce() -> CliResult<()>,
) -> ErrandEnd {
    if ctx.dry_run {
        log::info!("dry-run: would {what} {} ({}): {reason}", s.id, s.title);
        return ErrandEnd::Done;
    }
    match call() {
        Ok(()) => {
            log::info!("{what} {} ({}): done, {reason}", s.id, s.title);
            ErrandEnd::Done
        }
        Err(e) if e.delivery().is_some_and(Delivery::arrived) => {
            log::info!(
                "{what} {} ({}): typed into the pane, agent-deck saw no sign it was acted on ({e}); not sent again",
                s.id,
                s.title
            );
            ErrandEnd::Typed
        }
        Err(e) => {
            log::warn!("{what} {} failed: {e}; {retry}", s.id);
            ErrandEnd::Failed
        }
    }
}

fn run(ctx: &Context, errand: Errand) {
    match errand {
        Errand::Nudge { session, waited_s } => {
            let s = &session;
            let reason = format!("waiting {waited_s:.0}s with an unchanged pane");
            let send = || ctx.deck.send(&s.profile, &s.id, NUDGE_TEXT);
            let retry = "the next one waits for the dedup window";
            let (action, reason) = match act(ctx, s, "nudge", &reason, retry, send) {
                ErrandEnd::Done => (RestartAction::Nudge, reason),
                ErrandEnd::Typed => (RestartAction::Nudge, Delivery::Typed.to_string()),
                ErrandEnd::Failed => (RestartAction::NudgeFailed, reason),
            };
            apply::record(ctx, s, action, Some(reason));
        }
        Errand::Remove {
            session: s,
            stuck_for_s,
        } => {
            let reason = format!("in error for {stuck_for_s:.0}s");
            let remove = || ctx.deck.remove(&s.profile, &s.id);
            let retry = "trying again in a minute";
            let action = match act(ctx, &s, "remove", &reason, retry, remove) {
                ErrandEnd::Done => RestartAction::StaleRemoved,
                ErrandEnd::Typed | ErrandEnd::Failed => RestartAction::StaleRemoveFailed,
            };
            let rec = ctx.record(&s, action, Some(reason));
            apply::write(&ctx.records, &rec.with(Detail::Stale { stuck_for_s }));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::act::context::tests::{context, restart_records};
    use crate::fleet::fake::{FakeDeck, Script, SendAnswer};
    use crate::fleet::parse::Delivery;
    use crate::records::audit::RestartRecord;

    fn nudge_with(send: SendAnswer) -> (Vec<RestartRecord>, Arc<FakeDeck>) {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script {
            send,
            ..Script::default()
        }));
        let (ctx, _) = context(tmp.path(), deck.clone());
        let session = Session {
            id: "a0b1c2d3-1755899999".into(),
            title: "worker-1".into(),
            profile: "default".into(),
            ..Session::default()
        };
        run(
            &ctx,
            Errand::Nudge {
                session,
                waited_s: 700.0,
            },
        );
        (restart_records(tmp.path()), deck)
    }
    #[test]
    fn a_nudge_typed_into_a_non_claude_pane_is_a_nudge_not_a_failure() {
        let (records, deck) = nudge_with(SendAnswer::Undelivered(Delivery::Typed));
        assert_eq!(records.len(), 1, "{records:?}");
        assert_eq!(records[0].action, "nudge");
        assert_eq!(records[0].reason.as_deref(), Some("typed"));
        assert_eq!(deck.count("send"), 1, "not retried");
    }

    #[test]
    fn a_nudge_that_did_not_arrive_is_still_nudge_failed() {
        for delivery in [Delivery::SendFailed, Delivery::TypedNotSubmitted] {
            let (records, _) = nudge_with(SendAnswer::Undelivered(delivery));
            assert_eq!(records[0].action, "nudge-failed", "{delivery:?}");
        }
        let (records, _) = nudge_with(SendAnswer::Delivered);
        assert_eq!(records[0].action, "nudge");
        assert_eq!(
            records[0].reason.as_deref(),
            Some("waiting 700s with an unchanged pane")
        );
    }
}
