//! Time hygiene of the restart book, pure: what fell out of its window is
//! dropped, and what a clock that has since stepped back recorded in the
//! future is brought back to now (SPEC §11 Clocks).

use crate::decide::book::first_run::proves_it_ran;
use crate::decide::book::stale_hook::HOOK_FRESH_S;
use crate::decide::book::State;
use crate::decide::limits::{Limits, CASCADE_REMINDER_S};
use crate::fleet::session::Status;

/// How far ahead of `now` a recorded time may lie before it is taken for one
/// written under a clock that has since stepped back: the threads read the
/// clock at slightly different moments.
pub(crate) const FUTURE_SLACK_S: f64 = 5.0;

/// A time recorded under a clock that has since stepped back (NTP, a
/// suspend, a hand-edited state) reads as `now`: it may never hold restarts
/// or silence alerts until the clock catches up.
pub(crate) fn not_in_future(t: &mut f64, now: f64) {
    if *t > now + FUTURE_SLACK_S {
        *t = now;
    }
}

/// Drops the times that fell out of the window; one recorded under a clock
/// that has since stepped back counts from now.
pub(crate) fn prune(times: &mut Vec<f64>, now: f64, window: f64) {
    times.iter_mut().for_each(|t| not_in_future(t, now));
    times.retain(|t| now - t < window);
}

/// Drops what has fallen out of its window, so a loaded state holds only
/// what still matters. Recorded times from the future read as now; a
/// deadline lies no further ahead than its own length and is zeroed once
/// passed.
pub(crate) fn prune_state(state: &mut State, lim: &Limits, now: f64) {
    let past = move |t: &mut f64| not_in_future(t, now);
    let deadline = move |until: &mut f64, len: f64| {
        *until = until.min(now + len);
        if *until <= now {
            *until = 0.0;
        }
    };
    deadline(&mut state.cascade_pause_until, lim.cascade_pause);
    deadline(&mut state.breaker_open_until, lim.breaker_pause);
    if let Some(c) = &mut state.cascade {
        past(&mut c.started);
        past(&mut c.last_alert);
        c.settle_until = c.settle_until.min(now + lim.cascade_wait);
    }
    if let Some(t) = &mut state.last_restart_at {
        *t = t.min(now);
    }
    for book in state.sessions.values_mut() {
        deadline(&mut book.cooldown_until, lim.cooldown);
        // A usage limit's backoff is as long as its retry time said.
        deadline(&mut book.backoff_until, book.backoff_s.max(lim.backoff_429));
        if book.backoff_until == 0.0 {
            book.backoff_s = 0.0;
        }
        prune(&mut book.restarts, now, lim.rate_window);
        past(&mut book.status_since);
        book.error_since.iter_mut().for_each(past);
        book.restarted_at.iter_mut().for_each(past);
        // Past this, no hook from before the restart is honoured any more.
        if book.restarted_at.is_some_and(|t| now - t >= HOOK_FRESH_S) {
            book.restarted_at = None;
        }
    }
    state.sessions.retain(|_, b| !b.is_empty());
    prune(&mut state.recent_restarts, now, lim.cascade_window);
    prune(&mut state.breaker_hits, now, lim.breaker_window);
    state.poller_restarted.values_mut().for_each(past);
    for p in state.pending_updates.values_mut() {
        past(&mut p.last_check);
    }
    for w in state.waiting.values_mut() {
        past(&mut w.since);
        w.nudged_at.iter_mut().for_each(past);
    }
    // A dedup stamp from the future is dropped, not clamped: clamped, it
    // would swallow the alert that says why restarts are held.
    let keep = lim.dedup.max(CASCADE_REMINDER_S);
    state
        .escalated
        .retain(|_, t| *t <= now + FUTURE_SLACK_S && now - *t < keep);
}

/// A state saved before the `ran` set existed: a book that last saw its
/// session live is the evidence that it ran. Run once, on load; from then
/// on `note_status` keeps the set.
pub(crate) fn backfill_ran(state: &mut State) {
    let State { sessions, ran, .. } = state;
    let seen = sessions.iter().filter(|(_, b)| {
        let last = b.last_status.as_deref();
        last.is_some_and(|st| proves_it_ran(Status::parse(st)))
    });
    ran.extend(seen.map(|(id, _)| id.clone()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::book::cascade::note_call;
    use crate::decide::book::dedup::may_escalate;
    use crate::decide::book::notes::tests::sess;
    use crate::decide::book::notes::{note_rate_limited, note_restarted, note_status};
    use crate::decide::limits::tests::lim;
    use crate::decide::restart::gates::{finish, gate, reserve, serialization_wait, Gate};
    use crate::sys::clock::{Clock, FakeClock};

    const ID: &str = "3f9c2a1b-1755891234";

    #[test]
    fn pruning_drops_expired_entries_only() {
        let (l, c, mut s) = (lim(), FakeClock::at(10_000.0), State::default());
        reserve(&mut s, &l, "old-1", c.now() - 400.0);
        reserve(&mut s, &l, "new-1", c.now() - 10.0);
        note_rate_limited(&mut s, &l, "new-1", c.now(), l.backoff_429);
        may_escalate(&mut s, &l, Some("old-1"), "rate-limit", c.now() - 4000.0);
        may_escalate(&mut s, &l, Some("new-1"), "rate-limit", c.now() - 10.0);
        prune_state(&mut s, &l, c.now());
        assert!(!s.sessions.contains_key("old-1"));
        assert_eq!(s.sessions["new-1"].restarts, vec![c.now() - 10.0]);
        assert!(s.sessions["new-1"].backoff_until > c.now());
        assert_eq!(s.escalated.len(), 1);
    }

    #[test]
    fn a_state_saved_before_the_ran_set_keeps_what_its_books_saw() {
        let (l, mut s) = (lim(), State::default());
        note_status(&mut s, &sess("a-1"), Status::Running, 1.0);
        note_status(&mut s, &sess("e-1"), Status::Error, 1.0);
        s.ran.clear();
        backfill_ran(&mut s);
        prune_state(&mut s, &l, 2.0);
        assert_eq!(s.ran.iter().collect::<Vec<_>>(), ["a-1"]);
    }

    #[test]
    fn a_carried_out_restart_is_remembered_as_long_as_a_hook_from_before_it_counts() {
        let (l, mut s) = (lim(), State::default());
        note_status(&mut s, &sess(ID), Status::Error, 1000.0);
        note_restarted(&mut s, ID, 1000.0);
        assert!(s.ran.contains(ID));
        prune_state(&mut s, &l, 1119.0);
        assert_eq!(s.sessions[ID].restarted_at, Some(1000.0));
        prune_state(&mut s, &l, 1120.0);
        assert_eq!(s.sessions[ID].restarted_at, None);
    }

    /// A wall clock one day behind the one that wrote the state.
    fn a_day_back(c: &FakeClock) -> FakeClock {
        FakeClock::at(c.now() - 86_400.0)
    }

    #[test]
    fn a_clock_stepped_back_does_not_hold_restarts() {
        let (l, c, mut s) = (lim(), FakeClock::at(200_000.0), State::default());
        for _ in 0..3 {
            reserve(&mut s, &l, ID, c.now());
            finish(&mut s, ID);
            note_call(&mut s, &l, ID, c.now());
            c.advance(31.0);
        }
        assert_eq!(gate(&mut s, &l, ID, c.now(), None), Gate::BudgetSpent);
        let back = a_day_back(&c);
        prune_state(&mut s, &l, back.now());
        // At most one window, counted from the step, not a day.
        back.advance(l.rate_window + 1.0);
        prune_state(&mut s, &l, back.now());
        assert_eq!(gate(&mut s, &l, ID, back.now(), None), Gate::Go);
        assert_eq!(serialization_wait(&s, &l, back.now()), 0.0);
    }

    #[test]
    fn a_clock_stepped_back_does_not_silence_alerts() {
        let (l, c, mut s) = (lim(), FakeClock::at(200_000.0), State::default());
        assert!(may_escalate(&mut s, &l, Some(ID), "rate-limit", c.now()));
        let back = a_day_back(&c);
        prune_state(&mut s, &l, back.now());
        // The stamp from the future is dropped: the alert goes out again.
        assert!(may_escalate(&mut s, &l, Some(ID), "rate-limit", back.now()));
    }

    #[test]
    fn a_state_from_a_clock_that_ran_ahead_holds_a_conductor_under_budget_spent_loudly() {
        // Written an hour ahead: three restarts and the rate-limit alert.
        let (l, ahead, mut s) = (lim(), FakeClock::at(203_600.0), State::default());
        for _ in 0..3 {
            reserve(&mut s, &l, ID, ahead.now());
            finish(&mut s, ID);
            ahead.advance(31.0);
        }
        assert_eq!(gate(&mut s, &l, ID, ahead.now(), None), Gate::BudgetSpent);
        assert!(may_escalate(
            &mut s,
            &l,
            Some(ID),
            "rate-limit",
            ahead.now()
        ));
        // Loaded under the right clock: the restarts did happen, so the
        // budget holds for one window, but the hold is not silent.
        let now = 200_000.0;
        prune_state(&mut s, &l, now);
        let after_cooldown = now + l.cooldown + 1.0;
        assert_eq!(
            gate(&mut s, &l, ID, after_cooldown, None),
            Gate::BudgetSpent
        );
        assert!(may_escalate(
            &mut s,
            &l,
            Some(ID),
            "rate-limit",
            after_cooldown
        ));
        // Once said, the alert is deduplicated as usual.
        assert!(!may_escalate(
            &mut s,
            &l,
            Some(ID),
            "rate-limit",
            after_cooldown + 1.0
        ));
    }

    #[test]
    fn a_clock_stepped_back_does_not_hold_patrols_or_cascade_reminders() {
        use crate::decide::book::cascade::{observe_cascade, CascadeNews};
        use crate::decide::patrol_rules::{
            note_poller_restarted, observe_waiting, poller_restart_allowed,
        };
        let (l, c, mut s) = (lim(), FakeClock::at(200_000.0), State::default());
        note_poller_restarted(&mut s, ID, c.now());
        observe_waiting(&mut s, "kid-1", "d", c.now() - 700.0, 600.0, 3600.0);
        assert!(observe_waiting(&mut s, "kid-1", "d", c.now(), 600.0, 3600.0).is_some());
        assert_eq!(
            observe_cascade(&mut s, &l, 9, c.now()),
            CascadeNews::Detected
        );
        note_status(&mut s, &sess(ID), Status::Error, c.now());
        let back = a_day_back(&c);
        prune_state(&mut s, &l, back.now());
        back.advance(3600.0);
        prune_state(&mut s, &l, back.now());
        assert!(poller_restart_allowed(&s, ID, back.now(), 3600.0));
        assert!(observe_waiting(&mut s, "kid-1", "d", back.now(), 600.0, 3600.0).is_some());
        assert_eq!(
            observe_cascade(&mut s, &l, 9, back.now()),
            CascadeNews::Reminder
        );
        assert_eq!(s.sessions[ID].error_since, Some(back.now() - 3600.0));
        assert_eq!(s.sessions[ID].status_since, back.now() - 3600.0);
    }

    #[test]
    fn a_usage_limit_backoff_lasts_its_retry_time_and_no_more() {
        use crate::decide::book::notes::note_rate_limited;
        let (l, c, mut s) = (lim(), FakeClock::at(200_000.0), State::default());
        note_rate_limited(&mut s, &l, ID, c.now(), 7_200.0);
        c.advance(5.0);
        prune_state(&mut s, &l, c.now());
        assert_eq!(
            s.sessions[ID].backoff_until, 207_200.0,
            "not cut to API_429_BACKOFF_S"
        );
        let back = a_day_back(&c);
        prune_state(&mut s, &l, back.now());
        assert_eq!(s.sessions[ID].backoff_until, back.now() + 7_200.0);
        back.advance(7_201.0);
        prune_state(&mut s, &l, back.now());
        assert!(
            !s.sessions.contains_key(ID),
            "over, and nothing left to keep"
        );
    }

    #[test]
    fn times_a_few_seconds_ahead_are_kept() {
        let (l, c, mut s) = (lim(), FakeClock::at(200_000.0), State::default());
        reserve(&mut s, &l, ID, c.now() + 2.0);
        may_escalate(&mut s, &l, Some(ID), "rate-limit", c.now() + 2.0);
        prune_state(&mut s, &l, c.now());
        assert_eq!(s.sessions[ID].restarts, vec![c.now() + 2.0]);
        assert_eq!(s.escalated[&format!("{ID}|rate-limit")], c.now() + 2.0);
    }
}
