//! The restart of a live conductor whose Telegram poller is gone (SPEC
//! §6.1) or deaf (§6.5). It runs on the restart worker, serialized with
//! every other restart; the patrol has already claimed its dedup window.

use crate::act::context::Context;
use crate::act::job::Job;
use crate::decide::outcomes::RestartAction;
use crate::decide::restart::JobKind;
use crate::decide::restart::Outcome;
use crate::decide::{book::cascade, patrol_rules};
use crate::fleet::deck::RestartAnswer;

/// SPEC §6.1 and §6.5: restart a live conductor whose Telegram poller is
/// gone or deaf. A `skipped` answer is a refusal, not a success: the dedup
/// window starts only when a restart really ran.
pub(crate) fn restart(ctx: &Context, job: &Job) -> Outcome {
    let s = &job.session;
    let now = ctx.clock.now();
    // The record's action on success, its reason, and what a refused or
    // failed attempt's record adds to say which check asked for it.
    let (done, why, which) = match &job.kind {
        JobKind::PollerDeaf { pending } => {
            let why = patrol_rules::deaf_reason(pending);
            (
                RestartAction::PollerDeaf,
                why.clone(),
                format!(" (telegram poller deaf: {why})"),
            )
        }
        _ => (
            RestartAction::PollerRestart,
            "telegram poller not running".to_owned(),
            String::new(),
        ),
    };
    let (action, reason) = if ctx.dry_run {
        log::info!("dry-run: would restart {} ({}): {why}", s.id, s.title);
        (done, why)
    } else {
        cascade::note_call(&mut ctx.state.lock(), &ctx.limits, &s.id, now);
        match ctx.deck.restart(&s.profile, &s.id) {
            Ok(RestartAnswer::Restarted) => {
                log::info!("restarted {} ({}): {why}", s.id, s.title);
                (done, why)
            }
            Ok(RestartAnswer::Skipped(refusal)) => {
                log::info!("agent-deck declined the poller restart of {}: {refusal}; will try again at a later check", s.id);
                let reason = format!("agent-deck refused the restart: {refusal}{which}");
                let action = RestartAction::PollerRefused;
                return Outcome::Poller { action, reason };
            }
            // It may have torn the pane down already: no retry before the dedup window.
            Err(e) => {
                log::warn!(
                    "poller restart of {} failed: {e}; not retried within POLLER_RESTART_DEDUP_S",
                    s.id
                );
                let reason = format!("restart {e}{which}");
                (RestartAction::PollerRestartFailed, reason)
            }
        }
    };
    Outcome::Poller { action, reason }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::act::context::tests::{actions, context, restart_records, NOW};
    use crate::fleet::fake::{live, FakeDeck, Script};
    use crate::fleet::session::{Session, Status};

    /// The poller restart of `job`, carried out to its records.
    fn run(ctx: &Context, job: &Job) {
        let outcome = restart(ctx, job);
        crate::act::apply::tests::apply_now(ctx, job, &outcome);
    }

    const ID: &str = "3f9c2a1b-1755891234";

    fn conductor() -> Session {
        Session {
            id: ID.into(),
            title: "conductor-ops".into(),
            profile: "default".into(),
            ..Session::default()
        }
    }

    /// A live conductor whose `session restart` answers `restart`.
    fn deck(restart: Option<RestartAnswer>) -> Arc<FakeDeck> {
        Arc::new(FakeDeck::new(Script {
            shows: [live(Status::Running)].into(),
            restart,
            ..Script::default()
        }))
    }

    fn deaf() -> JobKind {
        JobKind::PollerDeaf {
            pending: vec![3, 5, 9],
        }
    }

    #[test]
    fn a_missing_poller_is_restarted_without_a_liveness_check_or_a_budget_slot() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = deck(Some(RestartAnswer::Restarted));
        let (ctx, _) = context(tmp.path(), deck.clone());
        run(&ctx, &Job::poller(&conductor(), JobKind::PollerMissing));
        assert_eq!(*deck.calls.lock(), [format!("restart {ID}")]);
        let rec = &restart_records(tmp.path())[0];
        assert_eq!(rec.action, "poller-restart");
        assert_eq!(rec.reason.as_deref(), Some("telegram poller not running"));
        let st = ctx.state.lock();
        assert_eq!(st.poller_restarted.get(ID), Some(&NOW), "the dedup starts");
        assert!(st.sessions[ID].restarts.is_empty(), "no budget slot taken");
        assert_eq!(st.last_restart_at, Some(NOW), "serialized with the others");
    }

    #[test]
    fn a_deaf_poller_is_restarted_with_its_counts_and_starts_a_new_streak() {
        let tmp = tempfile::tempdir().unwrap();
        let (ctx, _) = context(tmp.path(), deck(Some(RestartAnswer::Restarted)));
        let streak = Default::default();
        ctx.state.lock().pending_updates.insert(ID.into(), streak);
        run(&ctx, &Job::poller(&conductor(), deaf()));
        let rec = &restart_records(tmp.path())[0];
        assert_eq!(rec.action, "poller-deaf");
        assert_eq!(
            rec.reason.as_deref(),
            Some("pending updates 3, 5, 9 over 3 checks")
        );
        let st = ctx.state.lock();
        assert!(st.pending_updates.is_empty());
        assert_eq!(st.poller_restarted.get(ID), Some(&NOW));
    }

    #[test]
    fn a_refused_poller_restart_says_which_check_asked_and_starts_no_dedup() {
        let tmp = tempfile::tempdir().unwrap();
        let refusal = RestartAnswer::Skipped("started 12s ago".into());
        let (ctx, _) = context(tmp.path(), deck(Some(refusal)));
        run(&ctx, &Job::poller(&conductor(), deaf()));
        let rec = &restart_records(tmp.path())[0];
        assert_eq!(rec.action, "poller-refused");
        assert_eq!(
            rec.reason.as_deref(),
            Some("agent-deck refused the restart: started 12s ago (telegram poller deaf: pending updates 3, 5, 9 over 3 checks)")
        );
        assert!(ctx.state.lock().poller_restarted.is_empty());
    }

    #[test]
    fn a_failed_poller_restart_is_not_retried_within_the_dedup_window() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = deck(None);
        let (ctx, _) = context(tmp.path(), deck.clone());
        run(&ctx, &Job::poller(&conductor(), JobKind::PollerMissing));
        assert_eq!(deck.count("start"), 0, "no start fallback for a live pane");
        assert_eq!(actions(tmp.path()), ["poller-restart-failed"]);
        assert_eq!(ctx.state.lock().poller_restarted.get(ID), Some(&NOW));
    }

    #[test]
    fn a_dry_run_poller_restart_is_recorded_and_not_run() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = deck(Some(RestartAnswer::Restarted));
        let (mut ctx, _) = context(tmp.path(), deck.clone());
        ctx.dry_run = true;
        run(&ctx, &Job::poller(&conductor(), JobKind::PollerMissing));
        assert!(deck.calls.lock().is_empty());
        let recs = restart_records(tmp.path());
        assert_eq!(
            (recs[0].action.as_str(), recs[0].dry_run),
            ("poller-restart", true)
        );
        assert_eq!(ctx.state.lock().poller_restarted.get(ID), Some(&NOW));
    }
}
