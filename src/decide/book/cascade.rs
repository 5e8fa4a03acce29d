//! Cascades (SPEC §5.4), pure: the settle-and-revive episode seen from each
//! tick's count of critical sessions in error (one alert, an hourly reminder
//! at most), and the burst guard that pauses every restart when too many ran
//! within the cascade window.

use crate::decide::book::prune::prune;
use crate::decide::book::{Cascade, State};
use crate::decide::limits::{Limits, CASCADE_REMINDER_S};

/// What [`note_call`] changed for one call, so that a call agent-deck
/// refused can give it back (see [`crate::decide::restart::refusal`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Call {
    /// When the call was noted: its serialization turn and burst entry.
    pub at: f64,
    cooldown_before: f64,
    last_before: Option<f64>,
}

/// Records that a restart call for `id` is about to run; its quiet time
/// starts again now (the serialization wait may have used it up). Returns
/// true when this makes a burst (≥ threshold restarts within the cascade
/// window): every restart is then paused and the caller escalates `cascade`;
/// and what the call took. A cascade episode's revive is no burst: its
/// restarts go one at a time by design, and a human heard of it once.
pub(crate) fn note_call(state: &mut State, lim: &Limits, id: &str, now: f64) -> (bool, Call) {
    let book = state.book(id);
    let call = Call {
        at: now,
        cooldown_before: book.cooldown_until,
        last_before: state.last_restart_at,
    };
    state.book(id).cooldown_until = now + lim.cooldown;
    state.last_restart_at = Some(now);
    if state.cascade.is_some() {
        return (false, call);
    }
    state.recent_restarts.push(now);
    prune(&mut state.recent_restarts, now, lim.cascade_window);
    let burst = state.recent_restarts.len() >= lim.cascade_threshold;
    if burst {
        state.cascade_pause_until = now + lim.cascade_pause;
        state.recent_restarts.clear();
    }
    (burst, call)
}

/// Gives back what `call` for `id` took: the cooldown it started, its
/// serialization turn (the next call waits for the one before it) and its
/// burst entry. A burst this call completed has paused and escalated
/// already, for the calls before it; that stands.
pub(crate) fn give_back_call(state: &mut State, id: &str, call: &Call) {
    state.book(id).cooldown_until = call.cooldown_before;
    if state.last_restart_at == Some(call.at) {
        state.last_restart_at = call.last_before;
    }
    if let Some(i) = state.recent_restarts.iter().position(|t| *t == call.at) {
        state.recent_restarts.remove(i);
    }
}

/// What a tick's count of critical sessions in error means for the cascade
/// episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CascadeNews {
    /// Nothing to say.
    Quiet,
    /// A new episode: alert once, restarts are held for the settle time.
    Detected,
    /// Still going an hour after the last alert: remind once.
    Reminder,
    /// The episode is over.
    Cleared,
}

/// Tracks cascade episodes: one alert when one starts, a reminder at most
/// every [`CASCADE_REMINDER_S`] while it does not clear, nothing in between.
pub(crate) fn observe_cascade(
    state: &mut State,
    lim: &Limits,
    errored: usize,
    now: f64,
) -> CascadeNews {
    let big = errored >= lim.cascade_threshold;
    match (&mut state.cascade, big) {
        (None, true) => {
            state.cascade = Some(Cascade {
                started: now,
                settle_until: now + lim.cascade_wait,
                last_alert: now,
                size: errored,
            });
            CascadeNews::Detected
        }
        (Some(c), true) if now - c.last_alert >= CASCADE_REMINDER_S => {
            c.last_alert = now;
            CascadeNews::Reminder
        }
        // Over once none is in error: the revive goes on until then.
        (Some(c), false) if c.settle_until <= now && errored == 0 => {
            state.cascade = None;
            CascadeNews::Cleared
        }
        _ => CascadeNews::Quiet,
    }
}

/// Seconds from `now` until a tick is owed for the revive of a cascade
/// episode: its settle ends then, and no tick has looked at the fleet since
/// (`last_tick`). The revive starts at the settle's end, not at whichever
/// poll comes after it. `None` when no such tick is owed.
pub(crate) fn revive_tick_in(state: &State, last_tick: Option<f64>, now: f64) -> Option<f64> {
    let end = state.cascade.as_ref()?.settle_until;
    last_tick
        .is_none_or(|t| t < end)
        .then(|| (end - now).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::limits::tests::lim;
    use crate::decide::restart::gates::{gate, Gate, Hold};
    use crate::sys::clock::{Clock, FakeClock};

    const ID: &str = "3f9c2a1b-1755891234";

    #[test]
    fn burst_pauses_everything() {
        let (mut l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        l.min_interval = 0.0;
        for i in 0..4 {
            assert!(!note_call(&mut s, &l, ID, c.now()).0, "restart {i}");
            c.advance(1.0);
        }
        assert!(note_call(&mut s, &l, ID, c.now()).0);
        assert_eq!(
            gate(&mut s, &l, "other-1", c.now() + 1.0, None),
            Gate::Skip(Hold::CascadePause)
        );
        assert_eq!(gate(&mut s, &l, "other-1", c.now() + 61.0, None), Gate::Go);
    }

    #[test]
    fn slow_restarts_are_no_burst() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        for _ in 0..20 {
            assert!(!note_call(&mut s, &l, ID, c.now()).0);
            c.advance(3.0);
        }
    }

    #[test]
    fn cascade_alerts_once_settles_then_reminds_hourly() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        assert_eq!(observe_cascade(&mut s, &l, 4, c.now()), CascadeNews::Quiet);
        assert_eq!(
            observe_cascade(&mut s, &l, 6, c.now()),
            CascadeNews::Detected
        );
        assert_eq!(
            gate(&mut s, &l, ID, c.now() + 29.0, None),
            Gate::Skip(Hold::CascadeSettle)
        );
        assert_eq!(gate(&mut s, &l, ID, c.now() + 31.0, None), Gate::Go);
        for _ in 0..100 {
            c.advance(30.0);
            let news = observe_cascade(&mut s, &l, 6, c.now());
            let hour = c.now() - 1000.0 >= CASCADE_REMINDER_S
                && c.now() - 1000.0 < CASCADE_REMINDER_S + 30.0;
            assert_eq!(
                news,
                if hour {
                    CascadeNews::Reminder
                } else {
                    CascadeNews::Quiet
                },
                "at {}",
                c.now()
            );
        }
        assert_eq!(
            observe_cascade(&mut s, &l, 1, c.now()),
            CascadeNews::Quiet,
            "one still in error: the revive goes on"
        );
        assert_eq!(
            observe_cascade(&mut s, &l, 0, c.now()),
            CascadeNews::Cleared
        );
        assert_eq!(
            observe_cascade(&mut s, &l, 5, c.now()),
            CascadeNews::Detected
        );
    }

    #[test]
    fn a_cascade_s_revive_is_no_burst_and_the_guard_is_back_once_it_is_over() {
        let (mut l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        l.min_interval = 0.0;
        observe_cascade(&mut s, &l, 6, c.now());
        c.advance(l.cascade_wait);
        for i in 0..6 {
            assert!(
                !note_call(&mut s, &l, &format!("c{i}"), c.now()).0,
                "revive {i}"
            );
            c.advance(1.0);
        }
        assert_eq!(
            observe_cascade(&mut s, &l, 0, c.now()),
            CascadeNews::Cleared
        );
        let bursts = (0..5).filter(|_| {
            c.advance(1.0);
            note_call(&mut s, &l, ID, c.now()).0
        });
        assert_eq!(bursts.count(), 1, "the burst guard holds again");
    }

    #[test]
    fn the_settles_end_owes_one_tick() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        assert_eq!(revive_tick_in(&s, Some(999.0), c.now()), None);
        observe_cascade(&mut s, &l, 6, c.now());
        let end = c.now() + l.cascade_wait;
        assert_eq!(
            revive_tick_in(&s, Some(c.now()), c.now()),
            Some(l.cascade_wait)
        );
        c.advance(l.cascade_wait + 0.5);
        assert_eq!(
            revive_tick_in(&s, Some(1000.0), c.now()),
            Some(0.0),
            "due, and past due"
        );
        assert_eq!(
            revive_tick_in(&s, Some(end), c.now()),
            None,
            "the tick at the end"
        );
        assert_eq!(
            revive_tick_in(&s, Some(c.now()), c.now()),
            None,
            "a later tick"
        );
    }
}
