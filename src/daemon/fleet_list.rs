//! The list of all sessions, read into the session cache: by the safety
//! poll and by a hook that names a session the cache lacks. A readable one
//! that holds none of the critical sessions the one before held is a
//! vanished fleet (SPEC §5.6, #2323): told once, like a cascade, and their
//! state kept (see [`crate::decide::vanish`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::daemon::Daemon;
use crate::decide::outcomes::Severity;
use crate::decide::store;
use crate::decide::vanish::{self, VanishNews};
use crate::fleet::deck::CliError;
use crate::sys::say_once::ONCE;

/// What the locked store's escalation is said once under.
const STORE_LOCKED: &str = "store locked";

impl Daemon {
    /// `list --all`, read into the cache, and what a readable one means for
    /// a vanished fleet; the last known fleet stays when it is unreadable.
    pub(super) fn refresh_fleet(&mut self) -> Result<(), CliError> {
        let held = self.held_critical();
        let profile = self.fleet.critical().into_iter().next().map(|s| s.profile);
        let deck = self.ctx.deck.clone();
        let started = std::time::Instant::now();
        // An empty answer after a fleet with critical sessions: a locked store?
        let unread = |n: usize| {
            if n > 0 || held.is_empty() {
                return None;
            }
            let probe = || {
                let mut rows = 0;
                let read = deck.list_profile(&profile?, &mut |_| rows += 1);
                Some(read.map(|()| rows).map_err(|e| e.to_string()))
            };
            store::empty_list_unread(started.elapsed(), probe).map(|why| store::named(&why))
        };
        let read = self.fleet.refresh_unless(deck.as_ref(), unread);
        self.note_store(&read);
        read?;
        self.watch_vanish(&held);
        Ok(())
    }

    /// Escalates `store-locked` once an episode of a store that cannot be
    /// read; the session list's outage says in the log when it starts and
    /// ends ([`Self::tell_outage`]).
    fn note_store(&mut self, read: &Result<(), CliError>) {
        let (said, now) = (&self.memory.said, self.ctx.clock.now());
        match read {
            Err(CliError::StoreUnreadable(why)) if said.note(STORE_LOCKED, now, ONCE).is_some() => {
                let msg = format!("{why}: the watchdog keeps the last known fleet and its pane watch, but cannot read a status or restart until the store reads again. Look for a process holding agent-deck's state.db.");
                let ctx = &self.ctx;
                ctx.escalator
                    .escalate(Severity::StoreLocked, &msg, None, true);
            }
            Ok(()) => _ = said.end(STORE_LOCKED, now),
            _ => {}
        }
    }

    /// [`Self::refresh_fleet`], unless the last try was less than a second
    /// ago (false: the caller comes back).
    pub(super) fn refresh_fleet_if_stale(&mut self) -> bool {
        if !self.fleet.may_refresh() {
            return false;
        }
        let failed = self
            .refresh_fleet()
            .err()
            .map(|e| format!("session list is unreadable ({e}); keeping the last known fleet"));
        self.tell_outage(super::safety_poll::LIST, failed);
        true
    }

    /// The critical sessions the last readable list held, by id, with their
    /// titles; before this run read one, the ones whose state was saved.
    fn held_critical(&self) -> BTreeMap<String, String> {
        if self.fleet.listed_once() {
            let critical = self.fleet.critical().into_iter();
            return critical.map(|s| (s.id, s.title)).collect();
        }
        let st = self.ctx.state.lock();
        let seen = st.sessions.iter().filter(|(_, b)| b.last_status.is_some());
        seen.map(|(id, b)| (id.clone(), b.title.clone())).collect()
    }

    /// A readable list that holds none of the two or more critical sessions
    /// the one before held: told once, like a cascade, and their state is
    /// kept until they are back or the hold is over (see
    /// [`crate::decide::vanish`]).
    fn watch_vanish(&self, held: &BTreeMap<String, String>) {
        let ids: BTreeSet<String> = held.keys().cloned().collect();
        let (fleet, now) = (&self.fleet, self.ctx.clock.now());
        let listed = |id: &str| fleet.knows(id);
        let news = vanish::observe_list(&mut self.ctx.state.lock(), &ids, &listed, now);
        let hold_min = vanish::VANISH_HOLD_S / 60.0;
        match news {
            VanishNews::Vanished(gone) => {
                let titles: Vec<&str> = gone
                    .iter()
                    .filter_map(|id| held.get(id).map(String::as_str))
                    .take(5)
                    .collect();
                let more = gone.len().saturating_sub(titles.len());
                let more = if more > 0 { format!(" and {more} more") } else { String::new() };
                let msg = format!(
                    "agent-deck's session list suddenly holds none of the {} restart-critical sessions it held ({}{more}): nothing is protected until they are listed again. agent-deck up to 1.16.13 could read an empty profile store beside the full one (#2323); check `agent-deck list --all` and the profiles under ~/.agent-deck and ~/.local/share/agent-deck. Their restart history is kept for {hold_min:.0} minutes.",
                    gone.len(),
                    titles.join(", ")
                );
                self.ctx
                    .escalator
                    .escalate(Severity::FleetVanished, &msg, None, true);
            }
            VanishNews::Back => log::info!(
                "the vanished critical sessions are listed again; their restart history was kept"
            ),
            VanishNews::Expired => log::warn!(
                "the vanished critical sessions were not listed again within {hold_min:.0} minutes; their restart history is forgotten"
            ),
            VanishNews::Quiet => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::act::context::tests::severities;
    use crate::daemon::safety_poll::tests::{daemon, daemon_and_clock};
    use crate::fleet::fake::{FakeDeck, Script};

    const COND: &str = "3f9c2a1b-1755891234";
    const COND2: &str = "4f9c2a1b-1755891235";

    /// `list --all` and the profile list of conductors `ids`, all waiting.
    fn conductors(ids: &[&str]) -> (String, String) {
        let rows = |status: &str| {
            let rows: Vec<String> = ids
                .iter()
                .map(|id| {
                    format!(
                        r#"{{"id":"{id}","title":"conductor-{id}","profile":"default"{status}}}"#
                    )
                })
                .collect();
            format!("[{}]", rows.join(","))
        };
        (rows(""), rows(r#","status":"waiting""#))
    }

    fn list(deck: &FakeDeck, ids: &[&str], empty: &str) {
        let (all, listed) = conductors(ids);
        let mut script = deck.script.lock();
        script.list_all = Some(if ids.is_empty() {
            empty.to_owned()
        } else {
            all
        });
        script.lists = [(
            "default".to_owned(),
            if ids.is_empty() {
                "[]".to_owned()
            } else {
                listed
            },
        )]
        .into();
    }

    #[test]
    fn a_list_that_suddenly_holds_none_of_two_conductors_alerts_once_and_keeps_their_state() {
        for empty in ["[]", "null", "No profiles found."] {
            let tmp = tempfile::tempdir().unwrap();
            let deck = Arc::new(FakeDeck::new(Script::default()));
            let (mut d, clock) = daemon_and_clock(tmp.path(), deck.clone());
            list(&deck, &[COND, COND2], empty);
            d.tick();
            d.ctx.state.lock().book(COND).consecutive_failures = 1;
            list(&deck, &[], empty);
            for _ in 0..5 {
                clock.advance(60.0);
                d.tick();
            }
            assert_eq!(severities(tmp.path()), ["fleet-vanished"], "{empty}");
            assert_eq!(
                d.ctx.state.lock().sessions[COND].consecutive_failures,
                1,
                "{empty}"
            );
            // A restarted watchdog finds the episode and keeps the state too.
            d.finish();
            let (mut d, clock) = daemon_and_clock(tmp.path(), deck.clone());
            clock.advance(600.0);
            d.tick();
            assert!(d.ctx.state.lock().sessions.contains_key(COND), "{empty}");
            list(&deck, &[COND, COND2], empty);
            d.tick();
            assert!(d.ctx.state.lock().vanished.is_none(), "{empty}: back");
            assert_eq!(
                d.ctx.state.lock().sessions[COND].consecutive_failures,
                1,
                "{empty}"
            );
            d.finish();
            assert_eq!(severities(tmp.path()), ["fleet-vanished"], "{empty}");
        }
    }

    #[test]
    fn a_vanished_fleet_that_stays_away_an_hour_is_forgotten() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script::default()));
        let (mut d, clock) = daemon_and_clock(tmp.path(), deck.clone());
        list(&deck, &[COND, COND2], "[]");
        d.tick();
        list(&deck, &[], "[]");
        d.tick();
        clock.advance(crate::decide::vanish::VANISH_HOLD_S);
        d.tick();
        d.finish();
        assert!(d.ctx.state.lock().sessions.is_empty());
        assert_eq!(severities(tmp.path()), ["fleet-vanished"]);
    }

    #[test]
    fn removing_the_only_conductor_or_one_of_two_raises_no_alarm() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script::default()));
        let mut d = daemon(tmp.path(), deck.clone());
        list(&deck, &[COND, COND2], "[]");
        d.tick();
        list(&deck, &[COND2], "[]");
        d.tick();
        list(&deck, &[], "null");
        d.tick();
        d.finish();
        assert!(severities(tmp.path()).is_empty());
        assert!(
            d.ctx.state.lock().sessions.is_empty(),
            "removed is forgotten"
        );
    }
}
