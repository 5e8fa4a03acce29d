//! The gates of SPEC §5.2 as pure functions: given the [`State`], the limits
//! and `now`, say whether a restart may go, and take its budget slot (the
//! [`State`] gives one back). The caller holds the state mutex only for one
//! of these calls.

use serde::{Deserialize, Serialize};

use crate::decide::book::prune::prune;
use crate::decide::book::State;
/// The limits the gates read; they live in [`crate::decide::limits`].
pub(crate) use crate::decide::limits::Limits;
use crate::decide::restart::refusal;
use crate::spelled::spelled;

spelled! {
    /// Why a gate holds a session in error back from a restart: the `reason`
    /// of a `skipped` record in `restart.log`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    pub(crate) enum Hold {
        BreakerOpen = "breaker_open",
        Backoff429 = "backoff_429",
        CascadePause = "cascade_pause",
        CascadeSettle = "cascade_settle",
        Cooldown = "cooldown",
        InFlight = "in_flight",
        BudgetSpent = "budget_spent",
        /// Added but never started: nothing to revive (see
        /// [`crate::decide::book::first_run`]).
        NeverStarted = "never_started",
        /// Restarted, and still read `error` only because of a `dead` hook from
        /// before that restart (see [`crate::decide::book::stale_hook`]).
        StaleDeadHook = "stale_dead_hook",
        /// agent-deck said its last restart or start died at once (see
        /// [`crate::decide::book::notes::note_spawn_died_fast`]): held until it is
        /// seen healthy.
        SpawnDiedFast = "spawn_died_fast",
        /// Seen `stopped`, and not started since: before 1.16.23 a stop could
        /// flip to `error` (see [`crate::decide::book::stop`]).
        StoppedBefore = "stopped_before",
        /// At agent-deck's `model-unavailable`: a restart boots into the same
        /// model, so it is a stall to resume (SPEC §14), never restarted.
        ModelUnavailable = "model_unavailable",
        /// Its last restart spawned a tmux session agent-deck did not save,
        /// which still runs: another restart or start would be a second
        /// agent. Held until it is seen healthy or that session is gone.
        UnsavedAgent = "unsaved_agent",
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Reserve a slot and go.
    Go,
    /// Not now, and nobody needs to hear about it.
    Skip(Hold),
    /// The budget is spent: escalate `rate-limit` and skip.
    BudgetSpent,
}

/// The gates, in order: circuit breaker, 429 backoff, cascade pause or
/// settle, cooldown, a restart already in flight (or a retry after a
/// freshness refusal scheduled, see [`crate::decide::restart::refusal`]), the rate
/// budget. `ending`: the unsaved tmux session this restart ends first
/// (see [`recheck`]).
pub(crate) fn gate(
    state: &mut State,
    lim: &Limits,
    id: &str,
    now: f64,
    ending: Option<&str>,
) -> Gate {
    if let Some(why) = recheck(state, id, now, ending) {
        return Gate::Skip(why);
    }
    let in_flight = state.in_flight.contains(id);
    let book = state.book(id);
    let in_flight = in_flight || refusal::retry_pending(book, now);
    prune(&mut book.restarts, now, lim.rate_window);
    if book.cooldown_until > now {
        Gate::Skip(Hold::Cooldown)
    } else if in_flight {
        Gate::Skip(Hold::InFlight)
    } else if book.restarts.len() >= lim.rate_max {
        Gate::BudgetSpent
    } else {
        Gate::Go
    }
}

/// The first gates, repeated after the serialization wait: a spawn that
/// died at once, the breaker, a backoff, the burst pause or the cascade
/// settle may have started meanwhile. The spawn hold comes first: it lasts
/// until the session is seen healthy, so it is the one a held session is
/// recorded with. An unsaved agent holds it unless it is `ending`, the
/// tmux session this restart ends before its call (SPEC §5.5).
pub(crate) fn recheck(state: &mut State, id: &str, now: f64, ending: Option<&str>) -> Option<Hold> {
    let book = state.sessions.get(id);
    if book.is_some_and(|b| b.unsaved.is_some() && b.unsaved.as_deref() != ending) {
        Some(Hold::UnsavedAgent)
    } else if book.and_then(|b| b.spawn_died_fast_at).is_some() {
        Some(Hold::SpawnDiedFast)
    } else if state.breaker_open_until > now {
        Some(Hold::BreakerOpen)
    } else if state.book(id).backoff_until > now {
        Some(Hold::Backoff429)
    } else if state.cascade_pause_until > now {
        Some(Hold::CascadePause)
    } else if state.cascade.as_ref().is_some_and(|c| c.settle_until > now) {
        Some(Hold::CascadeSettle)
    } else {
        None
    }
}

/// Takes a budget slot and starts the cooldown. Returns the slot to give back
/// if the restart does not happen.
pub(crate) fn reserve(state: &mut State, lim: &Limits, id: &str, now: f64) -> f64 {
    state.in_flight.insert(id.to_owned());
    let book = state.book(id);
    book.restarts.push(now);
    book.cooldown_until = now + lim.cooldown;
    now
}

/// The restart job for `id` is over, whatever its outcome.
pub(crate) fn finish(state: &mut State, id: &str) {
    state.in_flight.remove(id);
}

/// Seconds to wait before the next restart call may run.
pub(crate) fn serialization_wait(state: &State, lim: &Limits, now: f64) -> f64 {
    let wait = |last: f64| (last + lim.min_interval - now).clamp(0.0, lim.min_interval);
    state.last_restart_at.map_or(0.0, wait)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::book::cascade::note_call;
    use crate::decide::book::notes::note_rate_limited;
    use crate::decide::limits::tests::lim;
    use crate::sys::clock::{Clock, FakeClock};

    const ID: &str = "3f9c2a1b-1755891234";

    #[test]
    fn budget_allows_exactly_rate_max_per_window() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        for _ in 0..3 {
            assert_eq!(gate(&mut s, &l, ID, c.now(), None), Gate::Go);
            reserve(&mut s, &l, ID, c.now());
            finish(&mut s, ID);
            c.advance(31.0);
        }
        assert_eq!(gate(&mut s, &l, ID, c.now(), None), Gate::BudgetSpent);
        c.advance(300.0);
        assert_eq!(gate(&mut s, &l, ID, c.now(), None), Gate::Go);
    }

    #[test]
    fn cooldown_and_in_flight_skip() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        reserve(&mut s, &l, ID, c.now());
        assert_eq!(
            gate(&mut s, &l, ID, c.now() + 1.0, None),
            Gate::Skip(Hold::Cooldown)
        );
        assert_eq!(
            gate(&mut s, &l, ID, c.now() + 31.0, None),
            Gate::Skip(Hold::InFlight)
        );
        finish(&mut s, ID);
        assert_eq!(gate(&mut s, &l, ID, c.now() + 31.0, None), Gate::Go);
    }

    #[test]
    fn give_back_restores_the_budget() {
        let (mut l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        l.cooldown = 0.0;
        for _ in 0..10 {
            assert_eq!(gate(&mut s, &l, ID, c.now(), None), Gate::Go);
            let slot = reserve(&mut s, &l, ID, c.now());
            s.give_back_slot(ID, slot);
            finish(&mut s, ID);
            c.advance(1.0);
        }
        assert!(s.book(ID).restarts.is_empty());
    }

    #[test]
    fn backoff_comes_before_the_fleet_holds() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        note_rate_limited(&mut s, &l, ID, c.now(), l.backoff_429);
        s.cascade_pause_until = c.now() + 10.0;
        assert_eq!(
            gate(&mut s, &l, ID, c.now(), None),
            Gate::Skip(Hold::Backoff429)
        );
        assert_eq!(
            recheck(&mut s, ID, c.now() + 179.0, None),
            Some(Hold::Backoff429)
        );
        assert_eq!(recheck(&mut s, ID, c.now() + 181.0, None), None);
    }

    #[test]
    fn a_spawn_that_died_fast_holds_until_seen_healthy_before_any_budget_or_fleet_hold() {
        use crate::decide::book::notes::{note_spawn_died_fast, note_status, tests::sess};
        use crate::fleet::session::Status;
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        note_spawn_died_fast(&mut s, ID, c.now());
        s.breaker_open_until = c.now() + 10.0;
        assert_eq!(
            gate(&mut s, &l, ID, c.now(), None),
            Gate::Skip(Hold::SpawnDiedFast)
        );
        c.advance(86400.0);
        note_status(&mut s, &sess(ID), Status::Error, c.now());
        assert_eq!(
            gate(&mut s, &l, ID, c.now(), None),
            Gate::Skip(Hold::SpawnDiedFast)
        );
        assert_eq!(gate(&mut s, &l, "other-1", c.now(), None), Gate::Go);
        note_status(&mut s, &sess(ID), Status::Waiting, c.now());
        assert_eq!(gate(&mut s, &l, ID, c.now(), None), Gate::Go);
    }

    #[test]
    fn serialization_spaces_restarts() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        assert_eq!(serialization_wait(&s, &l, c.now()), 0.0);
        note_call(&mut s, &l, ID, c.now());
        c.advance(20.0);
        assert_eq!(serialization_wait(&s, &l, c.now()), 40.0);
        c.advance(40.0);
        assert_eq!(serialization_wait(&s, &l, c.now()), 0.0);
    }

    #[test]
    fn hold_reasons_are_written_as_the_record_strings() {
        for (h, text) in [
            (Hold::BreakerOpen, "breaker_open"),
            (Hold::Backoff429, "backoff_429"),
            (Hold::CascadePause, "cascade_pause"),
            (Hold::CascadeSettle, "cascade_settle"),
            (Hold::Cooldown, "cooldown"),
            (Hold::InFlight, "in_flight"),
            (Hold::BudgetSpent, "budget_spent"),
            (Hold::NeverStarted, "never_started"),
            (Hold::StaleDeadHook, "stale_dead_hook"),
            (Hold::SpawnDiedFast, "spawn_died_fast"),
            (Hold::UnsavedAgent, "unsaved_agent"),
            (Hold::StoppedBefore, "stopped_before"),
        ] {
            assert_eq!(h.as_str(), text);
            assert_eq!(serde_json::to_string(&h).unwrap(), format!("\"{text}\""));
        }
    }
}
