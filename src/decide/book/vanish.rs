//! A fleet that vanishes (SPEC §5.6), pure. Up to agent-deck 1.16.13 every
//! new CLI process could open an empty profile store beside the full one,
//! and "from the CLI the fleet looked wiped" (#2323, fixed 1.16.14): a `list
//! --all` that answers `[]`, `null` or "No profiles found.". Such a list
//! reads as no sessions, so without this rule the watchdog would silently
//! protect nothing and forget every restart history.
//!
//! The rule: a readable `list --all` that holds none of the restart-critical
//! sessions the one before it held, when those were at least two, starts an
//! episode. It is told once (`fleet-vanished`); while it lasts, the state of
//! those sessions is kept; it ends when one of them is listed again, or
//! after [`VANISH_HOLD_S`], when their state goes the usual way. One session
//! removed, or one of two, is no vanish. The episode is kept in `state.json`,
//! so a watchdog restarted meanwhile neither forgets the state nor tells
//! again, and the hour is an hour.

use std::collections::BTreeSet;

use crate::decide::book::prune::not_in_future;
use crate::decide::book::{State, Vanished};

/// How long the state of a vanished fleet is kept for it to come back.
pub(crate) const VANISH_HOLD_S: f64 = 3600.0;

/// The fewest critical sessions whose sudden absence is a vanish.
pub(crate) const VANISH_MIN: usize = 2;

/// What a readable `list --all` means for the vanish episode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum VanishNews {
    /// Nothing to say.
    Quiet,
    /// A new episode: these critical sessions are gone at once. Tell once.
    Vanished(BTreeSet<String>),
    /// One of them is listed again: the episode is over, their state is theirs.
    Back,
    /// They stayed away for the whole hold: their state is let go.
    Expired,
}

/// Reads one readable `list --all`: `held` are the critical sessions the
/// list before it held, `listed` says whether this one holds an id.
pub(crate) fn observe_list(
    state: &mut State,
    held: &BTreeSet<String>,
    listed: &dyn Fn(&str) -> bool,
    now: f64,
) -> VanishNews {
    if let Some(v) = &mut state.vanished {
        not_in_future(&mut v.since, now);
        let news = if v.ids.iter().any(|id| listed(id)) {
            VanishNews::Back
        } else if now - v.since >= VANISH_HOLD_S {
            VanishNews::Expired
        } else {
            return VanishNews::Quiet;
        };
        state.vanished = None;
        return news;
    }
    if held.len() < VANISH_MIN || held.iter().any(|id| listed(id)) {
        return VanishNews::Quiet;
    }
    state.vanished = Some(Vanished {
        since: now,
        ids: held.clone(),
    });
    VanishNews::Vanished(held.clone())
}

/// Whether the state of `id` is kept although the list no longer holds it.
pub(crate) fn kept(state: &State, id: &str) -> bool {
    state.vanished.as_ref().is_some_and(|v| v.ids.contains(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::clock::{Clock, FakeClock};

    fn ids(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn none(_: &str) -> bool {
        false
    }

    #[test]
    fn two_critical_sessions_gone_at_once_is_one_episode_until_they_are_back() {
        let (c, mut s) = (FakeClock::at(1000.0), State::default());
        let held = ids(&["a-1", "b-1"]);
        assert_eq!(
            observe_list(&mut s, &held, &none, c.now()),
            VanishNews::Vanished(held.clone())
        );
        assert!(kept(&s, "a-1") && kept(&s, "b-1") && !kept(&s, "c-1"));
        for _ in 0..10 {
            c.advance(60.0);
            // The list before held nothing: no second episode, no second word.
            assert_eq!(
                observe_list(&mut s, &ids(&[]), &none, c.now()),
                VanishNews::Quiet
            );
        }
        let back = |id: &str| id == "b-1";
        assert_eq!(
            observe_list(&mut s, &ids(&[]), &back, c.now()),
            VanishNews::Back
        );
        assert!(!kept(&s, "a-1") && s.vanished.is_none());
    }

    #[test]
    fn the_state_is_let_go_after_an_hour() {
        let (c, mut s) = (FakeClock::at(1000.0), State::default());
        observe_list(&mut s, &ids(&["a-1", "b-1", "c-1"]), &none, c.now());
        c.advance(VANISH_HOLD_S - 1.0);
        assert_eq!(
            observe_list(&mut s, &ids(&[]), &none, c.now()),
            VanishNews::Quiet
        );
        c.advance(1.0);
        assert_eq!(
            observe_list(&mut s, &ids(&[]), &none, c.now()),
            VanishNews::Expired
        );
        assert!(!kept(&s, "a-1"));
    }

    #[test]
    fn removing_the_only_conductor_or_one_of_two_is_no_vanish() {
        let (c, mut s) = (FakeClock::at(1000.0), State::default());
        assert_eq!(
            observe_list(&mut s, &ids(&["a-1"]), &none, c.now()),
            VanishNews::Quiet
        );
        let one_left = |id: &str| id == "b-1";
        assert_eq!(
            observe_list(&mut s, &ids(&["a-1", "b-1"]), &one_left, c.now()),
            VanishNews::Quiet
        );
        // Then the last one goes too: one held, no vanish.
        assert_eq!(
            observe_list(&mut s, &ids(&["b-1"]), &none, c.now()),
            VanishNews::Quiet
        );
        assert!(s.vanished.is_none());
    }

    #[test]
    fn an_episode_kept_across_a_restart_lasts_an_hour_from_its_start() {
        let (c, mut s) = (FakeClock::at(1000.0), State::default());
        observe_list(&mut s, &ids(&["a-1", "b-1"]), &none, c.now());
        let mut loaded: State = serde_json::from_slice(&serde_json::to_vec(&s).unwrap()).unwrap();
        c.advance(1800.0);
        assert_eq!(
            observe_list(&mut loaded, &ids(&[]), &none, c.now()),
            VanishNews::Quiet
        );
        assert!(kept(&loaded, "a-1"));
        c.advance(1800.0);
        assert_eq!(
            observe_list(&mut loaded, &ids(&[]), &none, c.now()),
            VanishNews::Expired
        );
    }

    #[test]
    fn an_episode_stamped_in_the_future_counts_from_now() {
        let (c, mut s) = (FakeClock::at(100_000.0), State::default());
        observe_list(&mut s, &ids(&["a-1", "b-1"]), &none, c.now() + 86_400.0);
        assert_eq!(
            observe_list(&mut s, &ids(&[]), &none, c.now()),
            VanishNews::Quiet
        );
        c.advance(VANISH_HOLD_S);
        assert_eq!(
            observe_list(&mut s, &ids(&[]), &none, c.now()),
            VanishNews::Expired
        );
    }
}
