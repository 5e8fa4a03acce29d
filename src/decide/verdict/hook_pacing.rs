//! When the main loop may look at a session because of its hook file, and
//! when it owes the fleet a full rescan: a hook-triggered status check runs
//! at most once a [`HOOK_CHECK_GAP`] per session (a closer one is deferred,
//! not dropped), and a rescan at most once a [`MIN_RESCAN_GAP`].
//!
//! Pure bookkeeping over `now`: it never calls agent-deck or sleeps.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::sys::clock::clamped;

/// A hook-triggered status check for one session runs at most this often.
pub(crate) const HOOK_CHECK_GAP: f64 = 1.0;
/// Rescans (after queue overflow or a re-armed watch) run at most this often.
pub(crate) const MIN_RESCAN_GAP: f64 = 1.0;
/// Deferred checks kept one by one; past this many (a flood of hooks), a
/// rescan is owed instead, which looks at every session at once.
pub(crate) const MAX_DEFERRED: usize = 256;

#[derive(Debug, Default)]
pub(crate) struct HookPacing {
    /// When each session was last checked because of a hook.
    checked: BTreeMap<String, f64>,
    /// Checks postponed by the per-session gap.
    deferred: BTreeSet<String>,
    /// A rescan was asked for and has not run yet.
    rescan_owed: bool,
    /// When the last full tick started.
    pub last_tick: Option<f64>,
}

impl HookPacing {
    /// Whether a hook for `id` may be checked now; if so the check is noted,
    /// if not it is deferred until the gap has passed.
    pub(crate) fn may_check(&mut self, id: &str, now: f64) -> bool {
        let checked = self.checked.get(id);
        if checked.is_some_and(|t| now - t < HOOK_CHECK_GAP) {
            self.deferred.insert(id.to_owned());
            return false;
        }
        self.checked.insert(id.to_owned(), now);
        true
    }

    /// Puts off a check of `id` for one gap from `now`; when too many are
    /// put off already, owes a rescan instead, so memory stays flat.
    pub(crate) fn defer(&mut self, id: &str, now: f64) {
        if self.deferred.len() >= MAX_DEFERRED && !self.deferred.contains(id) {
            self.rescan_owed = true;
            return;
        }
        self.checked.insert(id.to_owned(), now);
        self.deferred.insert(id.to_owned());
    }

    /// The deferred checks whose gap has passed, taken off the list.
    pub(crate) fn due(&mut self, now: f64) -> Vec<String> {
        let checked = &self.checked;
        let (due, later): (BTreeSet<String>, _) = std::mem::take(&mut self.deferred)
            .into_iter()
            .partition(|id| checked.get(id).is_none_or(|t| now - t >= HOOK_CHECK_GAP));
        self.deferred = later;
        due.into_iter().collect()
    }

    /// Whether a full tick should run now: the ticker asked (`tick`), or a
    /// rescan is owed and the last tick is old enough. A flood turns into a
    /// rescan per batch; one full poll a second is enough.
    pub(crate) fn tick_due(&mut self, tick: bool, rescan: bool, now: f64) -> bool {
        self.rescan_owed |= rescan;
        let rescan_due =
            self.rescan_owed && self.last_tick.is_none_or(|t| now - t >= MIN_RESCAN_GAP);
        let due = tick || rescan_due;
        self.rescan_owed &= !due;
        due
    }

    /// How long the main loop may wait before something of its own is due: a
    /// deferred check, an owed rescan.
    pub(crate) fn next_wakeup(&self, now: f64) -> Duration {
        let mut wait = Duration::from_secs(1);
        for id in &self.deferred {
            let checked = self.checked.get(id);
            let due = checked.map_or(0.0, |t| t + HOOK_CHECK_GAP - now);
            wait = wait.min(clamped(due.max(0.01)));
        }
        if self.rescan_owed {
            wait = wait.min(Duration::from_millis(200));
        }
        wait
    }

    /// Forgets sessions agent-deck no longer lists.
    pub(crate) fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.checked.retain(|id, _| keep(id));
        self.deferred.retain(|id| keep(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_hook_within_the_gap_is_deferred_not_dropped() {
        let mut h = HookPacing::default();
        assert!(h.may_check("a-1", 100.0));
        assert!(!h.may_check("a-1", 100.4));
        assert!(h.may_check("b-1", 100.4), "the gap is per session");
        assert!(h.due(100.9).is_empty());
        let wait = h.next_wakeup(100.9);
        assert!(wait <= Duration::from_millis(101), "{wait:?}");
        assert_eq!(h.due(101.0), vec!["a-1".to_string()]);
        assert!(h.due(101.0).is_empty(), "taken off the list");
        h.defer("c-1", 101.0);
        assert!(h.due(101.5).is_empty());
        assert_eq!(h.due(102.0), vec!["c-1".to_string()]);
        assert!(h.may_check("c-1", 102.0), "a deferred check runs when due");
    }

    #[test]
    fn a_flood_of_deferred_checks_becomes_one_rescan() {
        let mut h = HookPacing::default();
        for i in 0..MAX_DEFERRED + 1000 {
            h.defer(&format!("id-{i}"), 100.0);
        }
        assert_eq!(h.deferred.len(), MAX_DEFERRED);
        assert_eq!(h.checked.len(), MAX_DEFERRED);
        assert!(h.tick_due(false, false, 100.0), "the rest is a rescan");
    }

    #[test]
    fn a_rescan_is_owed_until_a_tick_runs_and_then_spaced() {
        let mut h = HookPacing::default();
        assert!(
            h.tick_due(false, true, 100.0),
            "the first rescan runs at once"
        );
        h.last_tick = Some(100.0);
        assert!(
            !h.tick_due(false, true, 100.5),
            "the next waits for the gap"
        );
        assert_eq!(h.next_wakeup(100.5), Duration::from_millis(200));
        assert!(
            h.tick_due(false, false, 101.0),
            "the owed rescan runs after the gap"
        );
        h.last_tick = Some(101.0);
        assert!(
            h.tick_due(true, false, 101.1),
            "the ticker always gets its tick"
        );
        assert_eq!(h.next_wakeup(101.1), Duration::from_secs(1));
    }
}
