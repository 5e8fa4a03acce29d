//! The guardrails as pure functions: given the [`State`], the limits and
//! `now`, say what may happen and record what did.
//!
//! Nothing here spawns, sleeps, logs or writes a file; the caller holds the
//! state mutex only for the duration of one of these calls.

use serde::{Deserialize, Serialize};

use crate::decide::book::{prune, State};
use crate::decide::first_run::proves_it_ran;
/// The limits the gates read; they live in [`crate::decide::limits`].
pub(crate) use crate::decide::limits::Limits;
use crate::decide::limits::CASCADE_REMINDER_S;
use crate::decide::stale_hook::HOOK_FRESH_S;
use crate::fleet::session::{Session, Status};

/// Why a gate holds a session in error back from a restart: the `reason` of
/// a `skipped` record in `restart.log`, spelled as it is written there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Hold {
    BreakerOpen,
    #[serde(rename = "backoff_429")]
    Backoff429,
    CascadePause,
    CascadeSettle,
    Cooldown,
    InFlight,
    BudgetSpent,
    /// Added but never started: nothing to revive (see
    /// [`crate::decide::first_run`]).
    NeverStarted,
    /// Restarted, and still read `error` only because of a `dead` hook from
    /// before that restart (see [`crate::decide::stale_hook`]).
    StaleDeadHook,
}

impl Hold {
    pub fn as_str(self) -> &'static str {
        match self {
            Hold::BreakerOpen => "breaker_open",
            Hold::Backoff429 => "backoff_429",
            Hold::CascadePause => "cascade_pause",
            Hold::CascadeSettle => "cascade_settle",
            Hold::Cooldown => "cooldown",
            Hold::InFlight => "in_flight",
            Hold::BudgetSpent => "budget_spent",
            Hold::NeverStarted => "never_started",
            Hold::StaleDeadHook => "stale_dead_hook",
        }
    }
}

impl std::fmt::Display for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The verdict of the gates of SPEC §5.2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Reserve a slot and go.
    Go,
    /// Not now, and nobody needs to hear about it.
    Skip(Hold),
    /// The budget is spent: escalate `rate-limit` and skip.
    BudgetSpent,
}

/// Why every restart is held right now, if one is: the breaker, the burst
/// pause, the cascade settle.
fn fleet_hold(state: &State, now: f64) -> Option<Hold> {
    if state.breaker_open_until > now {
        Some(Hold::BreakerOpen)
    } else if state.cascade_pause_until > now {
        Some(Hold::CascadePause)
    } else if state.cascade.as_ref().is_some_and(|c| c.settle_until > now) {
        Some(Hold::CascadeSettle)
    } else {
        None
    }
}

/// The gates, in order: circuit breaker, 429 backoff, cascade pause or
/// settle, cooldown, a restart already in flight, the rate budget.
pub fn gate(state: &mut State, lim: &Limits, id: &str, now: f64) -> Gate {
    let in_flight = state.in_flight.contains(id);
    let breaker = state.breaker_open_until > now;
    let hold = fleet_hold(state, now);
    let book = state.book(id);
    prune(&mut book.restarts, now, lim.rate_window);
    if breaker {
        Gate::Skip(Hold::BreakerOpen)
    } else if book.backoff_until > now {
        Gate::Skip(Hold::Backoff429)
    } else if let Some(why) = hold {
        Gate::Skip(why)
    } else if book.cooldown_until > now {
        Gate::Skip(Hold::Cooldown)
    } else if in_flight {
        Gate::Skip(Hold::InFlight)
    } else if book.restarts.len() >= lim.rate_max {
        Gate::BudgetSpent
    } else {
        Gate::Go
    }
}

/// The checks repeated after the serialization wait: the breaker, a backoff
/// or a pause may have started meanwhile.
pub fn recheck(state: &mut State, id: &str, now: f64) -> Option<Hold> {
    if state.breaker_open_until > now {
        Some(Hold::BreakerOpen)
    } else if state.book(id).backoff_until > now {
        Some(Hold::Backoff429)
    } else {
        fleet_hold(state, now)
    }
}

/// Takes a budget slot and starts the cooldown. Returns the slot to give back
/// if the restart does not happen.
pub fn reserve(state: &mut State, lim: &Limits, id: &str, now: f64) -> f64 {
    state.in_flight.insert(id.to_owned());
    let book = state.book(id);
    book.restarts.push(now);
    book.cooldown_until = now + lim.cooldown;
    now
}

/// Returns a reserved slot: a restart that never happened is not an attempt.
pub fn give_back(state: &mut State, id: &str, slot: f64) {
    let book = state.book(id);
    if let Some(i) = book.restarts.iter().position(|t| *t == slot) {
        book.restarts.remove(i);
    }
}

/// The restart job for `id` is over, whatever its outcome.
pub fn finish(state: &mut State, id: &str) {
    state.in_flight.remove(id);
}

/// Seconds to wait before the next restart call may run.
pub fn serialization_wait(state: &State, lim: &Limits, now: f64) -> f64 {
    match state.last_restart_at {
        Some(last) => (last + lim.min_interval - now).clamp(0.0, lim.min_interval),
        None => 0.0,
    }
}

/// A rate-limited boot: backs the session off and counts toward the circuit
/// breaker. Returns true when this opens the breaker (escalate once).
pub fn note_rate_limited(state: &mut State, lim: &Limits, id: &str, now: f64) -> bool {
    state.book(id).backoff_until = now + lim.backoff_429;
    state.breaker_hits.push(now);
    prune(&mut state.breaker_hits, now, lim.breaker_window);
    if state.breaker_hits.len() >= lim.breaker_threshold && state.breaker_open_until <= now {
        state.breaker_open_until = now + lim.breaker_pause;
        state.breaker_hits.clear();
        true
    } else {
        false
    }
}

/// Drops what has fallen out of its window, so a loaded state holds only
/// what still matters.
pub fn prune_state(state: &mut State, lim: &Limits, now: f64) {
    // A wall clock stepped backwards leaves recorded times in the future
    // (read as now) and deadlines far ahead (none may lie further ahead than
    // its own length).
    state.clamp_future(now);
    let cap = |until: &mut f64, len: f64| *until = until.min(now + len);
    cap(&mut state.cascade_pause_until, lim.cascade_pause);
    cap(&mut state.breaker_open_until, lim.breaker_pause);
    if let Some(c) = &mut state.cascade {
        cap(&mut c.settle_until, lim.cascade_wait);
    }
    for book in state.sessions.values_mut() {
        cap(&mut book.cooldown_until, lim.cooldown);
        cap(&mut book.backoff_until, lim.backoff_429);
        prune(&mut book.restarts, now, lim.rate_window);
        if book.cooldown_until <= now {
            book.cooldown_until = 0.0;
        }
        if book.backoff_until <= now {
            book.backoff_until = 0.0;
        }
        // Past this, no hook from before the restart is honoured any more.
        if book.restarted_at.is_some_and(|t| now - t >= HOOK_FRESH_S) {
            book.restarted_at = None;
        }
    }
    // A book that last saw the session live is evidence that it ran (and
    // all there is in a state saved before the `ran` set existed).
    let live_books = state.sessions.iter().filter(|(_, b)| {
        b.last_status
            .as_deref()
            .is_some_and(|st| proves_it_ran(Status::parse(st)))
    });
    let seen: Vec<String> = live_books
        .map(|(id, _)| id.clone())
        .filter(|id| !state.ran.contains(id))
        .collect();
    state.ran.extend(seen);
    state.sessions.retain(|_, b| !b.is_empty());
    prune(&mut state.recent_restarts, now, lim.cascade_window);
    prune(&mut state.breaker_hits, now, lim.breaker_window);
    if state.cascade_pause_until <= now {
        state.cascade_pause_until = 0.0;
    }
    if state.breaker_open_until <= now {
        state.breaker_open_until = 0.0;
    }
    let keep = lim.dedup.max(CASCADE_REMINDER_S);
    state.escalated.retain(|_, t| now - *t < keep);
}

/// Whether an escalation of `severity` for `sid` (None: fleet-wide) may go out
/// now; if so, it is recorded so duplicates inside the window are dropped.
pub fn may_escalate(
    state: &mut State,
    lim: &Limits,
    sid: Option<&str>,
    severity: &str,
    now: f64,
) -> bool {
    let key = format!("{}|{severity}", sid.unwrap_or("_global"));
    match state.escalated.get(&key) {
        Some(t) if now - t < lim.dedup => false,
        _ => {
            state.escalated.insert(key, now);
            true
        }
    }
}

/// Once-per-episode alerts (`auth-hold`, `liveness-mismatch`): true the first
/// time in an error episode.
pub fn first_in_episode(state: &mut State, id: &str, alert: &str) -> bool {
    state.book(id).alerted.insert(alert.to_owned())
}

/// A `pane_active` skip; returns the count in a row and whether it just
/// reached the escalation threshold.
pub fn note_pane_active(state: &mut State, lim: &Limits, id: &str) -> (u32, bool) {
    let book = state.book(id);
    book.liveness_skips += 1;
    let n = book.liveness_skips;
    (
        n,
        n >= lim.skip_escalate_after && first_in_episode(state, id, "liveness-mismatch"),
    )
}

/// Records a status seen; a healthy one ends the error episode, and a live
/// or `stopped` one proves the session has run.
pub fn note_status(state: &mut State, s: &Session, status: Status, now: f64) {
    if proves_it_ran(status) && !state.ran.contains(&s.id) {
        state.ran.insert(s.id.clone());
    }
    let book = state.book(&s.id);
    if book.title != s.title {
        book.title = s.title.clone();
    }
    if book.last_status.as_deref() != Some(status.as_str()) {
        book.last_status = Some(status.as_str().to_owned());
        book.status_since = now;
    }
    if status.is_healthy() {
        book.liveness_skips = 0;
        book.alerted.clear();
        book.error_since = None;
    } else if status == Status::Error && book.error_since.is_none() {
        book.error_since = Some(now);
    }
}

/// The session has run: it was found with evidence of it, or the watchdog
/// restarted or started it.
pub fn note_ran(state: &mut State, id: &str) {
    if !state.ran.contains(id) {
        state.ran.insert(id.to_owned());
    }
}

/// agent-deck carried out a `session restart` issued at `issued`.
pub fn note_restarted(state: &mut State, id: &str, issued: f64) {
    note_ran(state, id);
    state.book(id).restarted_at = Some(issued);
}

/// A restart (or start fallback) worked.
pub fn note_success(state: &mut State, id: &str) {
    let book = state.book(id);
    book.consecutive_failures = 0;
    book.liveness_skips = 0;
}

/// A real failure; returns how many in a row.
pub fn note_failure(state: &mut State, id: &str) -> u32 {
    let book = state.book(id);
    book.consecutive_failures += 1;
    book.consecutive_failures
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::decide::cascade::note_restart_call;
    use crate::sys::clock::{Clock, FakeClock};

    pub(crate) fn lim() -> Limits {
        Limits {
            rate_max: 3,
            rate_window: 300.0,
            cooldown: 30.0,
            min_interval: 60.0,
            cascade_threshold: 5,
            cascade_window: 10.0,
            cascade_pause: 60.0,
            dedup: 300.0,
            backoff_429: 180.0,
            skip_escalate_after: 3,
            cascade_wait: 30.0,
            breaker_threshold: 3,
            breaker_window: 600.0,
            breaker_pause: 600.0,
        }
    }

    const ID: &str = "3f9c2a1b-1755891234";

    fn sess(id: &str) -> Session {
        Session {
            id: id.into(),
            title: "conductor-ops".into(),
            ..Session::default()
        }
    }

    #[test]
    fn budget_allows_exactly_rate_max_per_window() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        for _ in 0..3 {
            assert_eq!(gate(&mut s, &l, ID, c.now()), Gate::Go);
            reserve(&mut s, &l, ID, c.now());
            finish(&mut s, ID);
            c.advance(31.0);
        }
        assert_eq!(gate(&mut s, &l, ID, c.now()), Gate::BudgetSpent);
        c.advance(300.0);
        assert_eq!(gate(&mut s, &l, ID, c.now()), Gate::Go);
    }

    #[test]
    fn cooldown_and_in_flight_skip() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        reserve(&mut s, &l, ID, c.now());
        assert_eq!(
            gate(&mut s, &l, ID, c.now() + 1.0),
            Gate::Skip(Hold::Cooldown)
        );
        assert_eq!(
            gate(&mut s, &l, ID, c.now() + 31.0),
            Gate::Skip(Hold::InFlight)
        );
        finish(&mut s, ID);
        assert_eq!(gate(&mut s, &l, ID, c.now() + 31.0), Gate::Go);
    }

    #[test]
    fn give_back_restores_the_budget() {
        let (mut l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        l.cooldown = 0.0;
        for _ in 0..10 {
            assert_eq!(gate(&mut s, &l, ID, c.now()), Gate::Go);
            let slot = reserve(&mut s, &l, ID, c.now());
            give_back(&mut s, ID, slot);
            finish(&mut s, ID);
            c.advance(1.0);
        }
        assert!(s.book(ID).restarts.is_empty());
    }

    #[test]
    fn backoff_comes_before_the_fleet_holds() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        note_rate_limited(&mut s, &l, ID, c.now());
        s.cascade_pause_until = c.now() + 10.0;
        assert_eq!(gate(&mut s, &l, ID, c.now()), Gate::Skip(Hold::Backoff429));
        assert_eq!(recheck(&mut s, ID, c.now() + 179.0), Some(Hold::Backoff429));
        assert_eq!(recheck(&mut s, ID, c.now() + 181.0), None);
    }

    #[test]
    fn serialization_spaces_restarts() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        assert_eq!(serialization_wait(&s, &l, c.now()), 0.0);
        note_restart_call(&mut s, &l, ID, c.now());
        c.advance(20.0);
        assert_eq!(serialization_wait(&s, &l, c.now()), 40.0);
        c.advance(40.0);
        assert_eq!(serialization_wait(&s, &l, c.now()), 0.0);
    }

    #[test]
    fn escalations_dedup_per_session_and_severity() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        assert!(may_escalate(&mut s, &l, Some(ID), "rate-limit", c.now()));
        assert!(!may_escalate(
            &mut s,
            &l,
            Some(ID),
            "rate-limit",
            c.now() + 299.0
        ));
        assert!(may_escalate(
            &mut s,
            &l,
            Some(ID),
            "restart-failed",
            c.now()
        ));
        assert!(may_escalate(&mut s, &l, None, "rate-limit", c.now()));
        assert!(may_escalate(
            &mut s,
            &l,
            Some(ID),
            "rate-limit",
            c.now() + 301.0
        ));
    }

    #[test]
    fn liveness_mismatch_once_per_episode() {
        let (l, mut s) = (lim(), State::default());
        assert_eq!(note_pane_active(&mut s, &l, ID), (1, false));
        assert_eq!(note_pane_active(&mut s, &l, ID), (2, false));
        assert_eq!(note_pane_active(&mut s, &l, ID), (3, true));
        assert_eq!(note_pane_active(&mut s, &l, ID), (4, false));
        note_status(&mut s, &sess(ID), Status::Running, 0.0);
        assert_eq!(note_pane_active(&mut s, &l, ID), (1, false));
        assert!(first_in_episode(&mut s, ID, "auth-hold"));
        assert!(!first_in_episode(&mut s, ID, "auth-hold"));
        note_status(&mut s, &sess(ID), Status::Idle, 0.0);
        assert!(first_in_episode(&mut s, ID, "auth-hold"));
    }

    #[test]
    fn breaker_opens_on_the_third_429_and_closes_after_the_pause() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        assert!(!note_rate_limited(&mut s, &l, "a-1", c.now()));
        c.advance(100.0);
        assert!(!note_rate_limited(&mut s, &l, "b-1", c.now()));
        c.advance(100.0);
        assert!(note_rate_limited(&mut s, &l, "c-1", c.now()));
        assert_eq!(
            gate(&mut s, &l, "d-1", c.now() + 1.0),
            Gate::Skip(Hold::BreakerOpen)
        );
        assert_eq!(
            recheck(&mut s, "d-1", c.now() + 599.0),
            Some(Hold::BreakerOpen)
        );
        assert_eq!(gate(&mut s, &l, "d-1", c.now() + 601.0), Gate::Go);
    }

    #[test]
    fn slow_429s_do_not_trip_the_breaker() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        for i in 0..10 {
            assert!(!note_rate_limited(&mut s, &l, &format!("s-{i}"), c.now()));
            c.advance(301.0);
        }
    }

    #[test]
    fn pruning_drops_expired_entries_only() {
        let (l, c, mut s) = (lim(), FakeClock::at(10_000.0), State::default());
        reserve(&mut s, &l, "old-1", c.now() - 400.0);
        reserve(&mut s, &l, "new-1", c.now() - 10.0);
        note_rate_limited(&mut s, &l, "new-1", c.now());
        may_escalate(&mut s, &l, Some("old-1"), "rate-limit", c.now() - 4000.0);
        may_escalate(&mut s, &l, Some("new-1"), "rate-limit", c.now() - 10.0);
        prune_state(&mut s, &l, c.now());
        assert!(!s.sessions.contains_key("old-1"));
        assert_eq!(s.sessions["new-1"].restarts, vec![c.now() - 10.0]);
        assert!(s.sessions["new-1"].backoff_until > c.now());
        assert_eq!(s.escalated.len(), 1);
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
        ] {
            assert_eq!(h.as_str(), text);
            assert_eq!(serde_json::to_string(&h).unwrap(), format!("\"{text}\""));
        }
    }

    #[test]
    fn a_live_or_stopped_status_proves_a_run_and_unknown_does_not() {
        let mut s = State::default();
        note_status(&mut s, &sess("a-1"), Status::Unknown, 1.0);
        note_status(&mut s, &sess("a-1"), Status::Error, 2.0);
        note_status(&mut s, &sess("q-1"), Status::Queued, 2.0);
        assert!(s.ran.is_empty(), "{:?}", s.ran);
        note_status(&mut s, &sess("a-1"), Status::Idle, 3.0);
        note_status(&mut s, &sess("b-1"), Status::Stopped, 3.0);
        note_ran(&mut s, "c-1");
        let ran: Vec<&str> = s.ran.iter().map(String::as_str).collect();
        assert_eq!(ran, ["a-1", "b-1", "c-1"]);
    }

    #[test]
    fn a_state_saved_before_the_ran_set_keeps_what_its_books_saw() {
        let (l, mut s) = (lim(), State::default());
        note_status(&mut s, &sess("a-1"), Status::Running, 1.0);
        note_status(&mut s, &sess("e-1"), Status::Error, 1.0);
        s.ran.clear();
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
            note_restart_call(&mut s, &l, ID, c.now());
            c.advance(31.0);
        }
        assert_eq!(gate(&mut s, &l, ID, c.now()), Gate::BudgetSpent);
        let back = a_day_back(&c);
        prune_state(&mut s, &l, back.now());
        // At most one window, counted from the step, not a day.
        back.advance(l.rate_window + 1.0);
        prune_state(&mut s, &l, back.now());
        assert_eq!(gate(&mut s, &l, ID, back.now()), Gate::Go);
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
        assert_eq!(gate(&mut s, &l, ID, ahead.now()), Gate::BudgetSpent);
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
        assert_eq!(gate(&mut s, &l, ID, after_cooldown), Gate::BudgetSpent);
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
        use crate::decide::cascade::{observe_cascade, CascadeNews};
        use crate::decide::patrol_rules::{
            note_poller_restarted, observe_waiting, poller_restart_allowed,
        };
        let (l, c, mut s) = (lim(), FakeClock::at(200_000.0), State::default());
        note_poller_restarted(&mut s, ID, c.now());
        observe_waiting(&mut s, "kid-1", "d", c.now() - 700.0, 600.0, 3600.0);
        assert!(observe_waiting(
            &mut s,
            "kid-1",
            "d",
            c.now(),
            600.0,
            3600.0
        ));
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
        assert!(observe_waiting(
            &mut s,
            "kid-1",
            "d",
            back.now(),
            600.0,
            3600.0
        ));
        assert_eq!(
            observe_cascade(&mut s, &l, 9, back.now()),
            CascadeNews::Reminder
        );
        assert_eq!(s.sessions[ID].error_since, Some(back.now() - 3600.0));
        assert_eq!(s.sessions[ID].status_since, back.now() - 3600.0);
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
