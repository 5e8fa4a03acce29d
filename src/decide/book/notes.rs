//! What the restart book notes, pure: a status seen, a run proven, a restart
//! carried out, worked or failed, a liveness skip, a rate-limited boot.

use crate::decide::book::dedup::first_in_episode;
use crate::decide::book::first_run::proves_it_ran;
use crate::decide::book::prune::prune;
use crate::decide::book::stop;
use crate::decide::book::State;
use crate::decide::limits::Limits;
use crate::decide::outcomes::Severity;
use crate::fleet::session::{Session, Status};

/// A rate-limited boot: backs the session off for `backoff` seconds (a usage
/// limit names its own retry time) and counts toward the circuit breaker.
/// Returns true when this opens the breaker (escalate once).
pub(crate) fn note_rate_limited(
    state: &mut State,
    lim: &Limits,
    id: &str,
    now: f64,
    backoff: f64,
) -> bool {
    let book = state.book(id);
    book.backoff_until = now + backoff;
    let usual = backoff == lim.backoff_429;
    book.backoff_s = if usual { 0.0 } else { backoff };
    state.breaker_hits.push(now);
    prune(&mut state.breaker_hits, now, lim.breaker_window);
    let opens =
        state.breaker_hits.len() >= lim.breaker_threshold && state.breaker_open_until <= now;
    if opens {
        state.breaker_open_until = now + lim.breaker_pause;
        state.breaker_hits.clear();
    }
    opens
}

/// A `pane_active` skip; returns the count in a row and whether it just
/// reached the escalation threshold.
pub(crate) fn note_pane_active(state: &mut State, lim: &Limits, id: &str) -> (u32, bool) {
    let book = state.book(id);
    book.liveness_skips += 1;
    let n = book.liveness_skips;
    (
        n,
        n >= lim.skip_escalate_after && first_in_episode(state, id, Severity::LivenessMismatch),
    )
}

/// Records a status seen; a healthy one ends the error episode, and a live
/// or `stopped` one proves the session has run.
pub(crate) fn note_status(state: &mut State, s: &Session, status: Status, now: f64) {
    if proves_it_ran(status) {
        note_ran(state, &s.id);
    }
    stop::note_seen(state, &s.id, status);
    let book = state.book(&s.id);
    book.title.clone_from(&s.title);
    if book.last_status.as_deref() != Some(status.as_str()) {
        book.last_status = Some(status.as_str().to_owned());
        book.status_since = now;
    }
    if status.is_healthy() {
        book.liveness_skips = 0;
        book.alerted.clear();
        book.error_since = None;
        book.spawn_died_fast_at = None;
        book.unsaved = None;
        book.unsaved_ended_at = None;
        book.usage_limit = None;
        book.refusal = None;
    } else if status == Status::Error && book.error_since.is_none() {
        book.error_since = Some(now);
    }
}

/// The session has run: it was found with evidence of it, or the watchdog
/// restarted or started it.
pub(crate) fn note_ran(state: &mut State, id: &str) {
    // Called for every healthy critical session each tick: no allocation
    // once the id is known.
    if !state.ran.contains(id) {
        state.ran.insert(id.to_owned());
    }
}

/// agent-deck carried out a `session restart` issued at `issued`.
pub(crate) fn note_restarted(state: &mut State, id: &str, issued: f64) {
    note_ran(state, id);
    state.book(id).restarted_at = Some(issued);
}

/// A restart (or start fallback) worked.
pub(crate) fn note_success(state: &mut State, id: &str) {
    let book = state.book(id);
    book.consecutive_failures = 0;
    book.liveness_skips = 0;
}

/// agent-deck said the spawn died at once (`spawn_died_fast`): the session
/// is held from restarts until it is next seen healthy.
pub(crate) fn note_spawn_died_fast(state: &mut State, id: &str, now: f64) {
    state.book(id).spawn_died_fast_at = Some(now);
}

/// A real failure; returns how many in a row.
pub(crate) fn note_failure(state: &mut State, id: &str) -> u32 {
    let book = state.book(id);
    book.consecutive_failures += 1;
    book.consecutive_failures
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::decide::limits::tests::lim;
    use crate::decide::restart::gates::{gate, recheck, Gate, Hold};
    use crate::sys::clock::{Clock, FakeClock};

    const ID: &str = "3f9c2a1b-1755891234";

    pub(crate) fn sess(id: &str) -> Session {
        Session {
            id: id.into(),
            title: "conductor-ops".into(),
            ..Session::default()
        }
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
        assert!(first_in_episode(&mut s, ID, Severity::AuthHold));
        assert!(!first_in_episode(&mut s, ID, Severity::AuthHold));
        note_status(&mut s, &sess(ID), Status::Idle, 0.0);
        assert!(first_in_episode(&mut s, ID, Severity::AuthHold));
    }

    /// A 429 boot of `id`, backed off `API_429_BACKOFF_S`.
    fn boot_429(s: &mut State, l: &Limits, id: &str, now: f64) -> bool {
        note_rate_limited(s, l, id, now, l.backoff_429)
    }

    #[test]
    fn breaker_opens_on_the_third_429_and_closes_after_the_pause() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        assert!(!boot_429(&mut s, &l, "a-1", c.now()));
        c.advance(100.0);
        assert!(!boot_429(&mut s, &l, "b-1", c.now()));
        c.advance(100.0);
        assert!(boot_429(&mut s, &l, "c-1", c.now()));
        assert_eq!(
            gate(&mut s, &l, "d-1", c.now() + 1.0, None),
            Gate::Skip(Hold::BreakerOpen)
        );
        assert_eq!(
            recheck(&mut s, "d-1", c.now() + 599.0, None),
            Some(Hold::BreakerOpen)
        );
        assert_eq!(gate(&mut s, &l, "d-1", c.now() + 601.0, None), Gate::Go);
    }

    #[test]
    fn slow_429s_do_not_trip_the_breaker() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        for i in 0..10 {
            assert!(!boot_429(&mut s, &l, &format!("s-{i}"), c.now()));
            c.advance(301.0);
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
}
