//! The patrols' decisions (SPEC §6), as pure functions over the [`State`].
//!
//! Which waiting child to nudge, which deaf conductor may be restarted now,
//! which stale session may be removed. Nothing here calls agent-deck or
//! touches a file; the daemon samples, these decide, the errand worker acts.

use std::collections::BTreeSet;

use crate::decide::book::{SessionBook, State, WaitWatch};
use crate::fleet::session::Session;

/// The nudge sent to a child that has waited too long.
pub const NUDGE_TEXT: &str = "report status?";

/// A waiting child's pane digest was sampled. Returns true when it has not
/// changed for `threshold` seconds and was not nudged within `dedup`: nudge
/// it now (the nudge is recorded here).
pub fn observe_waiting(
    state: &mut State,
    id: &str,
    digest: &str,
    now: f64,
    threshold: f64,
    dedup: f64,
) -> bool {
    let w = state
        .waiting
        .entry(id.to_owned())
        .or_insert_with(|| WaitWatch {
            digest: digest.to_owned(),
            since: now,
            nudged_at: None,
        });
    if w.digest != digest {
        w.digest = digest.to_owned();
        w.since = now;
        return false;
    }
    let frozen = now - w.since >= threshold;
    let quiet = w.nudged_at.is_none_or(|t| now - t >= dedup);
    if frozen && quiet {
        w.nudged_at = Some(now);
        true
    } else {
        false
    }
}

/// Children no longer in `waiting` are forgotten.
pub fn forget_not_waiting(state: &mut State, waiting_now: &BTreeSet<String>) {
    state.waiting.retain(|id, _| waiting_now.contains(id));
}

/// Whether a conductor may be restarted for a missing poller now.
pub fn poller_restart_allowed(state: &State, id: &str, now: f64, dedup: f64) -> bool {
    state
        .poller_restarted
        .get(id)
        .is_none_or(|t| now - t >= dedup)
}

pub fn note_poller_restarted(state: &mut State, id: &str, now: f64) {
    state.poller_restarted.insert(id.to_owned(), now);
}

/// A conductor for the deaf-conductor patrol.
pub fn is_conductor(s: &Session) -> bool {
    s.title.starts_with("conductor-") || s.group == "conductor" || s.is_conductor
}

/// Stale cleanup may remove restart-critical sessions that can never alert a
/// human (SPEC §6.3). A one-off that lands in group `conductor` (a title like
/// `test-visual`) is exactly what it exists for; only escalation-critical
/// sessions (title `conductor-*`, group `watchers`, `is_conductor`) are exempt.
pub fn stale_candidate(s: &Session, critical: bool) -> bool {
    critical && !crate::fleet::session::is_escalation_critical(s)
}

/// How long the session has been stuck in error, if that is at least
/// `threshold` and it is not backing off from a rate-limited boot.
pub fn stuck_for(book: &SessionBook, now: f64, threshold: f64) -> Option<f64> {
    let since = book.error_since?;
    let stuck = now - since;
    (stuck >= threshold && book.backoff_until <= now).then_some(stuck)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::clock::{Clock, FakeClock};

    const KID: &str = "a0b1c2d3-1755899999";

    #[test]
    fn frozen_pane_nudges_once_per_dedup_window() {
        let (c, mut s) = (FakeClock::at(1000.0), State::default());
        let mut nudges = 0;
        for _ in 0..100 {
            if observe_waiting(&mut s, KID, "d1", c.now(), 600.0, 3600.0) {
                nudges += 1;
            }
            c.advance(30.0);
        }
        // 3000 s of frozen pane: one nudge at 600 s, none again within the hour.
        assert_eq!(nudges, 1);
        // The nudge went out at 1600; the next may go an hour later.
        c.advance(1199.0);
        assert!(!observe_waiting(&mut s, KID, "d1", c.now(), 600.0, 3600.0));
        c.advance(1.0);
        assert!(observe_waiting(&mut s, KID, "d1", c.now(), 600.0, 3600.0));
    }

    #[test]
    fn changing_pane_resets_the_timer() {
        let (c, mut s) = (FakeClock::at(1000.0), State::default());
        for i in 0..100 {
            assert!(!observe_waiting(
                &mut s,
                KID,
                &format!("d{i}"),
                c.now(),
                600.0,
                3600.0
            ));
            c.advance(30.0);
        }
    }

    #[test]
    fn leaving_waiting_forgets() {
        let (c, mut s) = (FakeClock::at(1000.0), State::default());
        observe_waiting(&mut s, KID, "d", c.now(), 600.0, 3600.0);
        forget_not_waiting(&mut s, &BTreeSet::new());
        assert!(s.waiting.is_empty());
        c.advance(700.0);
        assert!(
            !observe_waiting(&mut s, KID, "d", c.now(), 600.0, 3600.0),
            "the timer restarted"
        );
    }

    #[test]
    fn poller_dedup() {
        let mut s = State::default();
        assert!(poller_restart_allowed(&s, "c-1", 1000.0, 3600.0));
        note_poller_restarted(&mut s, "c-1", 1000.0);
        assert!(!poller_restart_allowed(&s, "c-1", 4599.0, 3600.0));
        assert!(poller_restart_allowed(&s, "c-1", 4600.0, 3600.0));
    }

    #[test]
    fn a_one_off_in_group_conductor_is_a_stale_candidate() {
        let one_off = Session {
            id: "e0b1c2d3-1755899999".into(),
            title: "test-visual".into(),
            group: "conductor".into(),
            ..Session::default()
        };
        assert!(stale_candidate(&one_off, true));
        for exempt in [
            Session {
                title: "conductor-ops".into(),
                ..one_off.clone()
            },
            Session {
                group: "watchers".into(),
                ..one_off.clone()
            },
            Session {
                is_conductor: true,
                ..one_off.clone()
            },
        ] {
            assert!(!stale_candidate(&exempt, true), "{exempt:?}");
        }
    }

    #[test]
    fn stale_rules() {
        let w = Session {
            id: "w-1".into(),
            title: "meeting-watcher".into(),
            group: "x".into(),
            ..Session::default()
        };
        let conductor = Session {
            title: "conductor-ops".into(),
            ..w.clone()
        };
        assert!(stale_candidate(&w, true));
        assert!(!stale_candidate(&w, false));
        assert!(!stale_candidate(&conductor, true));
        let mut book = SessionBook {
            error_since: Some(100.0),
            ..SessionBook::default()
        };
        assert_eq!(stuck_for(&book, 700.0, 600.0), Some(600.0));
        assert_eq!(stuck_for(&book, 699.0, 600.0), None);
        book.backoff_until = 800.0;
        assert_eq!(stuck_for(&book, 700.0, 600.0), None);
    }
}
