//! agent-deck's freshness guard (SPEC §5.5), pure: whether a `skipped`
//! answer to `session restart` came from it, what a refused call gives back,
//! and when the refused session is tried again.
//!
//! agent-deck declines to restart a session started less than its window
//! (60 s) ago while its *stored* status reads healthy
//! (`internal/session/restart_guard.go`, `ShouldSkipRestart`, in 1.14.0 and
//! at 056a97ee, whose `internal/core/session_restart.go` answers the same
//! way). notify-daemon writes the stored status a few seconds after a death,
//! and no read prints it, so a fast trigger meets the guard with the session
//! plainly dead. Its answer's reason reads `session is running and was
//! started 8s ago (within 1m0s freshness window); use --force to restart
//! anyway`, both durations as Go prints them.
//!
//! A refusal costs nothing: its budget slot, its cooldown, its serialization
//! turn and its burst-guard entry are given back, so refusals never add up
//! to a `cascade` pause. A run of refusals is retried twice at most: once
//! [`FIRST_RETRY_S`] later, when notify-daemon has had time to write, then
//! at the end of the window the reason names. Each retry goes through the
//! gates, the serialization and the liveness confirmation again. The run is
//! recorded once (`cli-refused`, at its first refusal) and ends when a call
//! is not refused or the session is seen healthy.

use crate::decide::book::cascade::{self, Call};
use crate::decide::book::{Refusal, SessionBook, State};
use crate::decide::limits::Limits;

/// The first retry comes this long after the first refusal: notify-daemon
/// writes the stored status 1–3 s after a death.
pub(crate) const FIRST_RETRY_S: f64 = 3.0;
/// agent-deck's freshness window, for a reason whose window cannot be read.
pub(crate) const WINDOW_S: f64 = 60.0;
/// Added to the end of the window: agent-deck rounds the age it prints to
/// the second.
pub(crate) const MARGIN_S: f64 = 1.0;
/// Retries after the first refusal of a run.
pub(crate) const MAX_RETRIES: u32 = 2;
/// A retry lies no further ahead than this: a later one (a clock that
/// stepped back, a hand-edited state) is due at once.
pub(crate) const MAX_AHEAD_S: f64 = 600.0;

/// What the freshness guard's reason says: the session's age and the
/// window, each None when it cannot be read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Freshness {
    pub age: Option<f64>,
    pub window: Option<f64>,
}

/// The freshness guard's reading of a `skipped` reason; None when another
/// guard (an auth hold, say) declined.
pub(crate) fn freshness(reason: &str) -> Option<Freshness> {
    if !reason.contains("freshness window") {
        return None;
    }
    let between = |open: &str, close: &str| {
        let from = reason.find(open)? + open.len();
        let len = reason[from..].find(close)?;
        go_duration(&reason[from..from + len])
    };
    Some(Freshness {
        age: between("was started ", " ago"),
        window: between("(within ", " freshness window"),
    })
}

/// Seconds in a duration as Go prints it (`8s`, `1m0s`, `1h2m3.5s`,
/// `500ms`), which jiff's friendly format reads; a negative one is none.
fn go_duration(text: &str) -> Option<f64> {
    let d = match text.trim() {
        "0" => jiff::SignedDuration::ZERO,
        text => text.parse::<jiff::SignedDuration>().ok()?,
    };
    (!d.is_negative()).then(|| d.as_secs_f64())
}

/// What comes of a freshness refusal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Verdict {
    /// The first refusal of its run: the one that is recorded.
    pub first: bool,
    /// When the session is tried again; None once the retries are spent.
    pub retry_at: Option<f64>,
}

/// A call for `id` the freshness guard refused at `now`: gives back what the
/// attempt took (the budget `slot` it reserved, if any, the cooldown and the
/// `call`'s serialization turn and burst entry) and says when it is tried
/// again. Once the retries are spent the cooldown stays, as for any other
/// refusal, so a session agent-deck keeps refusing is not called every tick.
pub(crate) fn note_refused(
    state: &mut State,
    lim: &Limits,
    id: &str,
    slot: Option<f64>,
    call: &Call,
    fresh: Freshness,
    now: f64,
) -> Verdict {
    cascade::give_back_call(state, id, call);
    if let Some(slot) = slot {
        state.give_back_slot(id, slot);
        // The gate found no cooldown in force at `slot`, so none is left of it.
        let book = state.book(id);
        book.cooldown_until = book.cooldown_until.min(slot);
    }
    let book = state.book(id);
    let run = book.refusal.get_or_insert(Refusal {
        first_at: now,
        refused: 0,
        retry_at: None,
    });
    run.refused = run.refused.saturating_add(1);
    let first = run.refused == 1;
    let retry_at = match run.refused {
        1 => Some(now + FIRST_RETRY_S),
        n if n <= MAX_RETRIES => {
            let end = match (fresh.age, fresh.window) {
                (Some(age), Some(window)) => now + (window - age).max(0.0),
                _ => run.first_at + WINDOW_S,
            };
            Some((end + MARGIN_S).max(now + MARGIN_S))
        }
        _ => None,
    };
    run.retry_at = retry_at.map(|t| t.min(now + MAX_AHEAD_S));
    let retry_at = run.retry_at;
    if retry_at.is_none() {
        book.cooldown_until = now + lim.cooldown;
    }
    Verdict { first, retry_at }
}

/// A call for `id` agent-deck did not refuse: the run of refusals is over.
pub(crate) fn note_answered(state: &mut State, id: &str) {
    if let Some(book) = state.sessions.get_mut(id) {
        book.refusal = None;
    }
}

/// Whether a retry of this session is scheduled after `now`: until then
/// the gates hold it as a restart already queued.
pub(crate) fn retry_pending(book: &SessionBook, now: f64) -> bool {
    let at = book.refusal.as_ref().and_then(|r| r.retry_at);
    at.is_some_and(|t| t > now && t <= now + MAX_AHEAD_S)
}

/// The sessions whose retry is due at `now`, taken off the schedule: the
/// caller looks at each through the normal path.
pub(crate) fn take_due(state: &mut State, now: f64) -> Vec<String> {
    let sessions = state.sessions.iter_mut();
    let due = sessions.filter(|(_, book)| !retry_pending(book, now));
    due.filter_map(|(id, book)| book.refusal.as_mut()?.retry_at.take().map(|_| id.clone()))
        .collect()
}

/// Seconds from `now` until the next scheduled retry, if any.
pub(crate) fn next_retry(state: &State, now: f64) -> Option<f64> {
    let ahead = |b: &SessionBook| b.refusal.as_ref().and_then(|r| r.retry_at);
    state
        .sessions
        .values()
        .filter_map(ahead)
        .map(|t| (t - now).clamp(0.0, MAX_AHEAD_S))
        .min_by(f64::total_cmp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::book::cascade::note_call;
    use crate::decide::book::notes::{note_status, tests::sess};
    use crate::decide::limits::tests::lim;
    use crate::decide::restart::gates::{finish, gate, reserve, serialization_wait, Gate, Hold};
    use crate::fleet::session::Status;
    use crate::sys::clock::{Clock, FakeClock};

    const ID: &str = "3f9c2a1b-1755891234";
    const OTHER: &str = "a0b1c2d3-1755899999";

    fn reason(age: &str) -> String {
        format!(
            "session is running and was started {age} ago (within 1m0s freshness window); use --force to restart anyway"
        )
    }

    /// The gates pass for `id`, its slot is reserved and its call noted,
    /// and agent-deck refuses saying `why`.
    fn refused(s: &mut State, l: &Limits, id: &str, now: f64, why: &str) -> Verdict {
        assert_eq!(gate(s, l, id, now, None), Gate::Go, "at {now}");
        let slot = reserve(s, l, id, now);
        let (_, call) = note_call(s, l, id, now);
        let fresh = freshness(why).expect("the freshness guard");
        let v = note_refused(s, l, id, Some(slot), &call, fresh, now);
        finish(s, id);
        v
    }

    #[test]
    fn the_reason_is_read_as_agent_deck_prints_it() {
        let f = freshness(&reason("8s")).unwrap();
        assert_eq!((f.age, f.window), (Some(8.0), Some(60.0)));
        let f = freshness(&reason("1m0s")).unwrap();
        assert_eq!(f.age, Some(60.0), "59.6s rounds to 1m0s");
        let f = freshness("was started 0s ago (within 1h2m3.5s freshness window)").unwrap();
        assert_eq!((f.age, f.window), (Some(0.0), Some(3723.5)));
        let f = freshness("session is idle and (within 5s freshness window)").unwrap();
        assert_eq!((f.age, f.window), (None, Some(5.0)));
        let f = freshness("was started soon ago (within a minute freshness window)").unwrap();
        assert_eq!((f.age, f.window), (None, None));
        for other in [
            "",
            "auth hold: run claude /login (use --force to restart anyway)",
            "session is running and was started 8s ago",
        ] {
            assert_eq!(freshness(other), None, "{other}");
        }
        assert_eq!(go_duration("500ms"), Some(0.5));
        assert_eq!(go_duration("8"), None);
        assert_eq!(go_duration("8x"), None);
        assert_eq!(go_duration("1.5µs"), Some(1.5e-6));
        assert_eq!(
            (go_duration("0"), go_duration("0s")),
            (Some(0.0), Some(0.0))
        );
        assert_eq!(go_duration("-8s"), None);
    }

    #[test]
    fn first_refusal_retries_3s_later_second_at_the_window_end_third_not_at_all() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        let v = refused(&mut s, &l, ID, c.now(), &reason("8s"));
        assert_eq!(
            v,
            Verdict {
                first: true,
                retry_at: Some(1003.0)
            }
        );
        assert!(take_due(&mut s, 1002.9).is_empty());
        assert_eq!(next_retry(&s, 1002.0), Some(1.0));
        assert_eq!(
            gate(&mut s, &l, ID, 1002.9, None),
            Gate::Skip(Hold::InFlight)
        );
        c.advance(3.0);
        assert_eq!(take_due(&mut s, c.now()), [ID]);
        assert!(take_due(&mut s, c.now()).is_empty(), "taken once");
        assert_eq!(next_retry(&s, c.now()), None);
        // Refused again, 11 s into the window: the retry comes when it ends.
        let v = refused(&mut s, &l, ID, c.now(), &reason("11s"));
        assert_eq!(
            v,
            Verdict {
                first: false,
                retry_at: Some(1003.0 + 49.0 + MARGIN_S)
            }
        );
        c.advance(1053.0 - c.now());
        assert_eq!(take_due(&mut s, c.now()), [ID]);
        let v = refused(&mut s, &l, ID, c.now(), &reason("0s"));
        assert_eq!(
            v,
            Verdict {
                first: false,
                retry_at: None
            },
            "two retries at most"
        );
        assert!(take_due(&mut s, c.now() + 100.0).is_empty());
        // Spent: the cooldown stays, so it is not called every tick.
        assert_eq!(
            gate(&mut s, &l, ID, c.now() + 1.0, None),
            Gate::Skip(Hold::Cooldown)
        );
        assert_eq!(s.book(ID).restarts, Vec::<f64>::new(), "no slot spent");
    }

    #[test]
    fn an_unreadable_window_ends_60s_after_the_first_refusal() {
        let (l, mut s) = (lim(), State::default());
        let garbled = "was started soon ago (within a while freshness window)";
        refused(&mut s, &l, ID, 1000.0, garbled);
        take_due(&mut s, 1003.0);
        let v = refused(&mut s, &l, ID, 1003.0, garbled);
        assert_eq!(v.retry_at, Some(1000.0 + WINDOW_S + MARGIN_S));
    }

    #[test]
    fn a_refusal_gives_back_its_slot_cooldown_serialization_turn_and_burst_entry() {
        let (mut l, mut s) = (lim(), State::default());
        (l.cascade_threshold, l.cascade_window) = (3, 300.0);
        // A real restart of another session, 70 s before.
        note_call(&mut s, &l, OTHER, 930.0);
        let before = s.clone();
        refused(&mut s, &l, ID, 1000.0, &reason("2s"));
        assert_eq!(s.book(ID).restarts, Vec::<f64>::new());
        assert_eq!(s.book(ID).cooldown_until, 1000.0, "no cooldown left");
        assert_eq!(s.last_restart_at, before.last_restart_at);
        assert_eq!(s.recent_restarts, before.recent_restarts);
        assert_eq!(
            serialization_wait(&s, &l, 1000.5),
            0.0,
            "no wait for the next"
        );
        // Several refused at once, retried twice each: no burst.
        let ids = [OTHER, "b0b1c2d3-1755899998", "c0b1c2d3-1755899997"];
        for (now, age) in [(1010.0, "1s"), (1013.0, "4s"), (1070.0, "0s")] {
            take_due(&mut s, now);
            for id in ids {
                refused(&mut s, &l, id, now, &reason(age));
            }
        }
        assert_eq!(s.cascade_pause_until, 0.0, "no cascade pause");
        assert_eq!(s.recent_restarts, [930.0], "only the real restart counts");
        assert!(ids
            .iter()
            .all(|id| s.book(id).refusal.as_ref().unwrap().refused == 3));
    }

    #[test]
    fn serialization_after_a_refusal_counts_from_the_last_real_call() {
        let (mut l, mut s) = (lim(), State::default());
        l.min_interval = 60.0;
        note_call(&mut s, &l, OTHER, 1000.0);
        refused(&mut s, &l, ID, 1061.0, &reason("3s"));
        assert_eq!(s.last_restart_at, Some(1000.0));
        let mut fresh = State::default();
        refused(&mut fresh, &l, ID, 1061.0, &reason("3s"));
        assert_eq!(fresh.last_restart_at, None, "none before it: none after");
        assert_eq!(serialization_wait(&fresh, &l, 1061.0), 0.0);
    }

    #[test]
    fn the_run_ends_when_a_call_is_answered_or_the_session_is_seen_healthy() {
        let (l, mut s) = (lim(), State::default());
        refused(&mut s, &l, ID, 1000.0, &reason("1s"));
        note_answered(&mut s, ID);
        assert_eq!(s.book(ID).refusal, None);
        let v = refused(&mut s, &l, ID, 1100.0, &reason("1s"));
        assert!(v.first, "a new run is recorded again");
        note_status(&mut s, &sess(ID), Status::Running, 1101.0);
        assert_eq!(s.book(ID).refusal, None, "recovered: no retry");
        assert!(take_due(&mut s, 1200.0).is_empty());
        assert_eq!(gate(&mut s, &l, ID, 1101.0, None), Gate::Go);
    }

    #[test]
    fn a_retry_scheduled_under_a_clock_that_stepped_back_is_due_at_once() {
        let (l, mut s) = (lim(), State::default());
        refused(&mut s, &l, ID, 10_000.0, &reason("1s"));
        assert!(!retry_pending(s.book(ID), 9_000.0));
        assert_eq!(next_retry(&s, 1000.0), Some(MAX_AHEAD_S));
        assert_eq!(take_due(&mut s, 1000.0), [ID]);
    }

    #[test]
    fn a_scheduled_retry_is_saved_with_the_book() {
        let (l, mut s) = (lim(), State::default());
        refused(&mut s, &l, ID, 1000.0, &reason("1s"));
        let saved = serde_json::to_string(&s).unwrap();
        let mut back: State = serde_json::from_str(&saved).unwrap();
        assert!(retry_pending(back.book(ID), 1001.0));
        assert_eq!(take_due(&mut back, 1003.0), [ID]);
        let worn: State = serde_json::from_str(&format!(
            r#"{{"sessions":{{"{ID}":{{"refusal":{{"refused":4294967295}}}}}}}}"#
        ))
        .unwrap();
        let mut worn = worn;
        let v = refused(&mut worn, &l, ID, 1000.0, &reason("1s"));
        assert_eq!(v.retry_at, None, "a worn count is spent, not wrapped");
    }

    #[test]
    fn a_refusal_that_is_not_the_freshness_guard_is_not_read_as_one() {
        assert_eq!(
            freshness("please log in again (use --force to restart anyway)"),
            None
        );
    }
}
