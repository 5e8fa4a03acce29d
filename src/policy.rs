//! The guardrails as pure functions: given the [`State`], the limits and
//! `now`, say what may happen and record what did.
//!
//! Nothing here spawns, sleeps, logs or writes a file; the caller holds the
//! state mutex only for the duration of one of these calls.

use std::time::Duration;

use crate::config::Config;
use crate::state::State;

/// The limits, as float seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub rate_max: usize,
    pub rate_window: f64,
    pub cooldown: f64,
    pub min_interval: f64,
    pub cascade_threshold: usize,
    pub cascade_window: f64,
    pub cascade_pause: f64,
    pub dedup: f64,
    pub backoff_429: f64,
    pub skip_escalate_after: u32,
}

impl Limits {
    pub fn from_config(c: &Config) -> Limits {
        let s = Duration::as_secs_f64;
        Limits {
            rate_max: c.rate_limit_max as usize,
            rate_window: s(&c.rate_limit_window),
            cooldown: s(&c.post_restart_cooldown),
            min_interval: s(&c.min_global_restart_interval),
            cascade_threshold: c.cascade_threshold as usize,
            cascade_window: s(&c.cascade_window),
            cascade_pause: s(&c.cascade_pause),
            dedup: s(&c.escalation_dedup),
            backoff_429: s(&c.api_429_backoff),
            skip_escalate_after: c.liveness_skip_escalate_after,
        }
    }
}

/// The verdict of the gates of SPEC §5.2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Reserve a slot and go.
    Go,
    /// Not now, and nobody needs to hear about it.
    Skip(&'static str),
    /// The budget is spent: escalate `rate-limit` and skip.
    BudgetSpent,
}

/// Drops the restart times that fell out of the window.
fn prune(times: &mut Vec<f64>, now: f64, window: f64) {
    times.retain(|t| now - t < window);
}

/// The gates, in order: 429 backoff, cascade pause, cooldown, a restart
/// already in flight, the rate budget.
pub fn gate(state: &mut State, lim: &Limits, id: &str, now: f64) -> Gate {
    let in_flight = state.in_flight.contains(id);
    let paused = state.cascade_pause_until > now;
    let book = state.book(id);
    prune(&mut book.restarts, now, lim.rate_window);
    if book.backoff_until > now {
        Gate::Skip("backoff_429")
    } else if paused {
        Gate::Skip("cascade_pause")
    } else if book.cooldown_until > now {
        Gate::Skip("cooldown")
    } else if in_flight {
        Gate::Skip("in_flight")
    } else if book.restarts.len() >= lim.rate_max {
        Gate::BudgetSpent
    } else {
        Gate::Go
    }
}

/// The checks repeated after the serialization wait: backoff and pause may
/// have started meanwhile.
pub fn recheck(state: &mut State, id: &str, now: f64) -> Option<&'static str> {
    if state.book(id).backoff_until > now {
        Some("backoff_429")
    } else if state.cascade_pause_until > now {
        Some("cascade_pause")
    } else {
        None
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
        Some(last) => (last + lim.min_interval - now).max(0.0),
        None => 0.0,
    }
}

/// Records that a restart call is about to run. Returns true when this makes a
/// burst (≥ threshold restarts within the cascade window): every restart is
/// then paused and the caller escalates `cascade`.
pub fn note_restart_call(state: &mut State, lim: &Limits, now: f64) -> bool {
    state.last_restart_at = Some(now);
    state.recent_restarts.push(now);
    prune(&mut state.recent_restarts, now, lim.cascade_window);
    if state.recent_restarts.len() >= lim.cascade_threshold {
        state.cascade_pause_until = now + lim.cascade_pause;
        state.recent_restarts.clear();
        true
    } else {
        false
    }
}

/// Starts a per-session backoff after a rate-limited boot.
pub fn back_off(state: &mut State, lim: &Limits, id: &str, now: f64) {
    state.book(id).backoff_until = now + lim.backoff_429;
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

/// The session was seen healthy: its error episode is over.
pub fn note_status(state: &mut State, id: &str, status: &str, healthy: bool, now: f64) {
    let book = state.book(id);
    book.last_status = Some(status.to_owned());
    book.last_seen = now;
    if healthy {
        book.liveness_skips = 0;
        book.alerted.clear();
        book.error_since = None;
    } else if status == "error" && book.error_since.is_none() {
        book.error_since = Some(now);
    }
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
mod tests {
    use super::*;
    use crate::clock::{Clock, FakeClock};

    fn lim() -> Limits {
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
        }
    }

    const ID: &str = "3f9c2a1b-1755891234";

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
        assert_eq!(gate(&mut s, &l, ID, c.now() + 1.0), Gate::Skip("cooldown"));
        assert_eq!(
            gate(&mut s, &l, ID, c.now() + 31.0),
            Gate::Skip("in_flight")
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
    fn backoff_comes_before_everything() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        back_off(&mut s, &l, ID, c.now());
        s.cascade_pause_until = c.now() + 10.0;
        assert_eq!(gate(&mut s, &l, ID, c.now()), Gate::Skip("backoff_429"));
        assert_eq!(recheck(&mut s, ID, c.now() + 179.0), Some("backoff_429"));
        assert_eq!(recheck(&mut s, ID, c.now() + 181.0), None);
    }

    #[test]
    fn serialization_spaces_restarts() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        assert_eq!(serialization_wait(&s, &l, c.now()), 0.0);
        note_restart_call(&mut s, &l, c.now());
        c.advance(20.0);
        assert_eq!(serialization_wait(&s, &l, c.now()), 40.0);
        c.advance(40.0);
        assert_eq!(serialization_wait(&s, &l, c.now()), 0.0);
    }

    #[test]
    fn burst_pauses_everything() {
        let (mut l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        l.min_interval = 0.0;
        for i in 0..4 {
            assert!(!note_restart_call(&mut s, &l, c.now()), "restart {i}");
            c.advance(1.0);
        }
        assert!(note_restart_call(&mut s, &l, c.now()));
        assert_eq!(
            gate(&mut s, &l, "other-1", c.now() + 1.0),
            Gate::Skip("cascade_pause")
        );
        assert_eq!(gate(&mut s, &l, "other-1", c.now() + 61.0), Gate::Go);
    }

    #[test]
    fn slow_restarts_are_no_burst() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        for _ in 0..20 {
            assert!(!note_restart_call(&mut s, &l, c.now()));
            c.advance(3.0);
        }
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
        note_status(&mut s, ID, "running", true, 0.0);
        assert_eq!(note_pane_active(&mut s, &l, ID), (1, false));
        assert!(first_in_episode(&mut s, ID, "auth-hold"));
        assert!(!first_in_episode(&mut s, ID, "auth-hold"));
        note_status(&mut s, ID, "idle", true, 0.0);
        assert!(first_in_episode(&mut s, ID, "auth-hold"));
    }
}
