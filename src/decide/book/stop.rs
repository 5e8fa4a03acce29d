//! A stop stays a stop, pure (SPEC §5.6; CHANGELOG 1.16.23, #2453): before
//! 1.16.23, with notify-daemon on Linux, a session stopped on purpose could
//! read `error` half a second after the stop. A critical session the daemon
//! has seen `stopped` is therefore not revived from `error` until it has
//! been seen healthy again, that is, until a human started it. Every status
//! the daemon reads (the poll, a hook's `show`, a liveness `show`) is noted
//! here; the flag is kept in `state.json`.

use crate::decide::book::State;
use crate::fleet::session::Status;
use crate::fleet::version::Version;

/// Notes a status read for `id`: `stopped` raises the flag, a healthy
/// status lowers it; `error` and `unknown` leave it as it is.
pub(crate) fn note_seen(state: &mut State, id: &str, status: Status) {
    if status == Status::Stopped {
        if !state.stopped.contains(id) {
            state.stopped.insert(id.to_owned());
        }
    } else if status.is_healthy() {
        state.stopped.remove(id);
    }
}

/// Whether `id`, in `error`, is held because it was seen stopped and not
/// started since, under the agent-deck release read last (an unread one
/// counts as the oldest known, which the rule covers).
pub(crate) fn held_by_stop(state: &State, id: &str, release: Option<Version>) -> bool {
    let release = Version::or_oldest(release);
    !release.at_least(Version::STOP_STAYS_STOPPED) && state.stopped.contains(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::book::notes::note_status;
    use crate::decide::book::notes::tests::sess;
    use crate::sys::clock::{Clock, FakeClock};

    const ID: &str = "3f9c2a1b-1755891234";

    #[test]
    fn seen_stopped_holds_error_until_seen_healthy() {
        let (c, mut s) = (FakeClock::at(1000.0), State::default());
        note_status(&mut s, &sess(ID), Status::Running, c.now());
        assert!(
            !held_by_stop(&s, ID, None),
            "a crash of a running session is revived"
        );
        note_status(&mut s, &sess(ID), Status::Stopped, c.now());
        c.advance(0.5);
        note_status(&mut s, &sess(ID), Status::Error, c.now());
        assert!(held_by_stop(&s, ID, None));
        for st in [Status::Error, Status::Unknown, Status::Stopped] {
            c.advance(60.0);
            note_status(&mut s, &sess(ID), st, c.now());
            assert!(held_by_stop(&s, ID, None), "{st:?} is no start");
        }
        note_status(&mut s, &sess(ID), Status::Waiting, c.now());
        assert!(!held_by_stop(&s, ID, None), "a human started it");
        note_status(&mut s, &sess(ID), Status::Error, c.now());
        assert!(!held_by_stop(&s, ID, None));
    }

    #[test]
    fn the_rule_applies_below_1_16_23_only() {
        let mut s = State::default();
        note_seen(&mut s, ID, Status::Stopped);
        assert!(held_by_stop(&s, ID, Some(Version::OLDEST)));
        assert!(held_by_stop(&s, ID, Some(Version::new(1, 16, 22))));
        assert!(!held_by_stop(&s, ID, Some(Version::STOP_STAYS_STOPPED)));
        assert!(!held_by_stop(&s, ID, Some(Version::new(1, 16, 26))));
        assert!(held_by_stop(&s, ID, None), "unread counts as the oldest");
        assert!(!held_by_stop(&s, "other-1", Some(Version::OLDEST)));
    }

    #[test]
    fn the_flag_survives_a_save_and_load() {
        let mut s = State::default();
        note_seen(&mut s, ID, Status::Stopped);
        let back: State = serde_json::from_slice(&serde_json::to_vec(&s).unwrap()).unwrap();
        assert!(held_by_stop(&back, ID, None));
    }
}
