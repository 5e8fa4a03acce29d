//! The patrols' decisions (SPEC §6), as pure functions over the [`State`].
//!
//! Which waiting child to nudge, which deaf conductor may be restarted now,
//! when a live poller counts as deaf, which stale session may be removed. Nothing here calls agent-deck or
//! touches a file; the daemon samples, these decide, the errand worker acts.

use std::collections::BTreeSet;

use crate::decide::book::{SessionBook, State, WaitWatch};
use crate::fleet::session::Session;

/// The nudge sent to a child that has waited too long.
pub(crate) const NUDGE_TEXT: &str = "report status?";

/// A waiting child's pane digest was sampled. When it has not changed for
/// `threshold` seconds and was not nudged within `dedup`, returns how long
/// it has waited: nudge it now (the nudge is recorded here).
pub(crate) fn observe_waiting(
    state: &mut State,
    id: &str,
    digest: &str,
    now: f64,
    threshold: f64,
    dedup: f64,
) -> Option<f64> {
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
        return None;
    }
    let due = now - w.since >= threshold && w.nudged_at.is_none_or(|t| now - t >= dedup);
    if due {
        w.nudged_at = Some(now);
    }
    due.then_some(now - w.since)
}

/// Children no longer in `waiting` are forgotten.
pub(crate) fn forget_not_waiting(state: &mut State, waiting_now: &BTreeSet<String>) {
    state.waiting.retain(|id, _| waiting_now.contains(id));
}

/// Whether a conductor may be restarted for a missing poller now.
pub(crate) fn poller_restart_allowed(state: &State, id: &str, now: f64, dedup: f64) -> bool {
    let last = state.poller_restarted.get(id);
    last.is_none_or(|t| now - t >= dedup)
}

/// A poller restart ran (or, in dry-run, would have): the dedup window
/// starts, and the restarted poller starts a new streak.
pub(crate) fn note_poller_restarted(state: &mut State, id: &str, now: f64) {
    state.poller_restarted.insert(id.to_owned(), now);
    state.pending_updates.remove(id);
}

/// What one `getWebhookInfo` check of a live poller's bot saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WebhookAnswer {
    /// `pending_update_count`.
    Pending(u64),
    /// A failed, timed-out or rate-limited call: it tells nothing.
    Unknown,
}

/// The streak rule of SPEC §6.5, one check at a time: 0 pending ends the
/// streak; more than 0 extends it (the last `checks` counts are kept); an
/// unknown answer changes nothing but the time of the last check. A streak
/// whose last check lies more than `max_gap` back was not consecutive (the
/// watchdog was down, the poller was gone): it starts over. Returns the
/// streak's length.
pub(crate) fn observe_webhook(
    state: &mut State,
    id: &str,
    answer: WebhookAnswer,
    now: f64,
    checks: u32,
    max_gap: f64,
) -> usize {
    let streaks = &mut state.pending_updates;
    let last = streaks.get(id).map(|p| p.last_check);
    if last.is_some_and(|t| now - t > max_gap) {
        streaks.remove(id);
    }
    match answer {
        WebhookAnswer::Pending(0) => {
            streaks.remove(id);
        }
        WebhookAnswer::Pending(n) => {
            let p = streaks.entry(id.to_owned()).or_default();
            p.counts.push(n);
            let extra = p.counts.len().saturating_sub(checks as usize);
            p.counts.drain(..extra);
            p.last_check = now;
        }
        WebhookAnswer::Unknown => {
            if let Some(p) = streaks.get_mut(id) {
                p.last_check = now;
            }
        }
    }
    streaks.get(id).map_or(0, |p| p.counts.len())
}

/// The conductors whose pollers are deaf now (a streak `checks` long whose
/// last check is recent), with the counts seen.
pub(crate) fn deaf_pollers(
    state: &State,
    now: f64,
    checks: u32,
    max_gap: f64,
) -> Vec<(String, Vec<u64>)> {
    state
        .pending_updates
        .iter()
        .filter(|(_, p)| {
            checks > 0 && p.counts.len() >= checks as usize && now - p.last_check <= max_gap
        })
        .map(|(id, p)| (id.clone(), p.counts.clone()))
        .collect()
}

/// Streaks without a check for `max_gap` are forgotten: the conductor
/// stopped, lost its poller or left the fleet.
pub(crate) fn forget_stale_streaks(state: &mut State, now: f64, max_gap: f64) {
    state
        .pending_updates
        .retain(|_, p| now - p.last_check <= max_gap);
}

/// The reason recorded for a deaf poller's restart.
pub(crate) fn deaf_reason(counts: &[u64]) -> String {
    let seen: Vec<String> = counts.iter().map(u64::to_string).collect();
    let n = counts.len();
    format!("pending updates {} over {n} checks", seen.join(", "))
}

/// A conductor for the deaf-conductor patrol.
pub(crate) fn is_conductor(s: &Session) -> bool {
    s.title.starts_with("conductor-") || s.group == "conductor" || s.is_conductor
}

/// Stale cleanup may remove restart-critical sessions that can never alert a
/// human (SPEC §6.3). A one-off that lands in group `conductor` (a title like
/// `test-visual`) is exactly what it exists for; only escalation-critical
/// sessions (title `conductor-*`, group `watchers`, `is_conductor`) are exempt.
pub(crate) fn stale_candidate(s: &Session, critical: bool) -> bool {
    critical && !crate::fleet::session::is_escalation_critical(s)
}

/// How long the session has been stuck in error, if that is at least
/// `threshold` and it is not backing off from a rate-limited boot.
pub(crate) fn stuck_for(book: &SessionBook, now: f64, threshold: f64) -> Option<f64> {
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
            if observe_waiting(&mut s, KID, "d1", c.now(), 600.0, 3600.0).is_some() {
                nudges += 1;
            }
            c.advance(30.0);
        }
        // 3000 s of frozen pane: one nudge at 600 s, none again within the hour.
        assert_eq!(nudges, 1);
        // The nudge went out at 1600; the next may go an hour later.
        c.advance(1199.0);
        assert_eq!(
            observe_waiting(&mut s, KID, "d1", c.now(), 600.0, 3600.0),
            None
        );
        c.advance(1.0);
        assert_eq!(
            observe_waiting(&mut s, KID, "d1", c.now(), 600.0, 3600.0),
            Some(4200.0),
            "it has waited since the first sample"
        );
    }

    #[test]
    fn changing_pane_resets_the_timer() {
        let (c, mut s) = (FakeClock::at(1000.0), State::default());
        for i in 0..100 {
            let digest = format!("d{i}");
            assert_eq!(
                observe_waiting(&mut s, KID, &digest, c.now(), 600.0, 3600.0),
                None
            );
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
            observe_waiting(&mut s, KID, "d", c.now(), 600.0, 3600.0).is_none(),
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

    const COND: &str = "3f9c2a1b-1755891234";
    const GAP: f64 = 180.0;

    /// One check every minute: each answer in turn, then the deaf ones.
    fn checks(answers: &[WebhookAnswer], n: u32) -> (State, Vec<(String, Vec<u64>)>) {
        let (c, mut s) = (FakeClock::at(1000.0), State::default());
        for a in answers {
            observe_webhook(&mut s, COND, *a, c.now(), n, GAP);
            c.advance(60.0);
        }
        let deaf = deaf_pollers(&s, c.now(), n, GAP);
        (s, deaf)
    }

    use WebhookAnswer::{Pending, Unknown};

    #[test]
    fn pending_updates_on_n_consecutive_checks_make_a_deaf_poller() {
        let (_, deaf) = checks(&[Pending(3), Pending(5)], 3);
        assert!(deaf.is_empty());
        let (_, deaf) = checks(&[Pending(3), Pending(5), Pending(9)], 3);
        assert_eq!(deaf, vec![(COND.to_owned(), vec![3, 5, 9])]);
        assert_eq!(
            deaf_reason(&deaf[0].1),
            "pending updates 3, 5, 9 over 3 checks"
        );
        // Only the last N counts are kept.
        let (_, deaf) = checks(&[Pending(1), Pending(2), Pending(3), Pending(4)], 3);
        assert_eq!(deaf, vec![(COND.to_owned(), vec![2, 3, 4])]);
    }

    #[test]
    fn a_draining_queue_is_never_deaf() {
        let answers: Vec<WebhookAnswer> = (0..20)
            .map(|i| if i % 3 == 2 { Pending(0) } else { Pending(7) })
            .collect();
        let (c, mut s) = (FakeClock::at(1000.0), State::default());
        for a in answers {
            observe_webhook(&mut s, COND, a, c.now(), 3, GAP);
            assert!(deaf_pollers(&s, c.now(), 3, GAP).is_empty());
            c.advance(60.0);
        }
    }

    #[test]
    fn an_unknown_answer_neither_counts_nor_resets() {
        let (_, deaf) = checks(&[Pending(4), Unknown, Pending(4), Unknown, Unknown], 3);
        assert!(deaf.is_empty());
        let (_, deaf) = checks(&[Pending(4), Unknown, Pending(5), Unknown, Pending(6)], 3);
        assert_eq!(deaf, vec![(COND.to_owned(), vec![4, 5, 6])]);
        let (s, _) = checks(&[Unknown, Unknown], 3);
        assert!(s.pending_updates.is_empty(), "an unknown starts nothing");
    }

    #[test]
    fn a_gap_between_checks_starts_the_streak_over() {
        let (c, mut s) = (FakeClock::at(1000.0), State::default());
        observe_webhook(&mut s, COND, Pending(4), c.now(), 2, GAP);
        c.advance(GAP + 1.0);
        assert!(deaf_pollers(&s, c.now(), 2, GAP).is_empty());
        observe_webhook(&mut s, COND, Pending(4), c.now(), 2, GAP);
        assert!(deaf_pollers(&s, c.now(), 2, GAP).is_empty());
        c.advance(60.0);
        observe_webhook(&mut s, COND, Pending(6), c.now(), 2, GAP);
        assert_eq!(deaf_pollers(&s, c.now(), 2, GAP).len(), 1);
        // A deaf streak whose checks stopped is no longer acted on, then forgotten.
        c.advance(GAP + 1.0);
        assert!(deaf_pollers(&s, c.now(), 2, GAP).is_empty());
        forget_stale_streaks(&mut s, c.now(), GAP);
        assert!(s.pending_updates.is_empty());
    }

    #[test]
    fn a_poller_restart_starts_a_new_streak() {
        let (mut s, deaf) = checks(&[Pending(1), Pending(2)], 2);
        assert_eq!(deaf.len(), 1);
        assert!(deaf_pollers(&s, 1120.0, 0, GAP).is_empty(), "0 checks: off");
        note_poller_restarted(&mut s, COND, 1200.0);
        assert!(s.pending_updates.is_empty());
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
