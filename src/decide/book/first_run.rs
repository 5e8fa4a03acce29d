//! Whether a session in error has ever run.
//!
//! agent-deck prints a session that was added but never started exactly like
//! one that ran and died: `error` (after its first 1.5 s), with the same keys
//! in `show` and `list`. Only a session that has run can have died, so a
//! restart-critical session in error is revived only on evidence that it ran:
//! the watchdog saw it live or `stopped` (now or in an earlier run: the
//! `ran` set in `state.json`) or restarted it itself, a hook file exists for
//! it, or `session show` prints a `claude_session_id` (a Claude-family agent
//! gets one when it boots). `unknown` is no evidence: a fresh session reads
//! that before it reads `error`.
//!
//! [`has_run`] orders the look-ups from cheapest to dearest; the [`Probe`]
//! does the I/O.

use crate::decide::probe::Probe;
use crate::fleet::session::Status;

/// What the evidence says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ran {
    /// It has run: an ordinary session, revived like any other.
    Yes,
    /// Added and never started: not revived, not counted toward a cascade.
    Never,
    /// The show was unreadable: no decision, looked at again next tick.
    Unknown,
}

/// A status that proves the session has run: live, or `stopped` (a pane
/// that exited). `idle` counts: only the `add` that created a session ever
/// reads a never-started one as `idle`.
pub(crate) fn proves_it_ran(status: Status) -> bool {
    matches!(
        status,
        Status::Running | Status::Waiting | Status::Idle | Status::Stopped
    )
}

/// Whether the session has run. `known`: it is in the restart book's `ran`
/// set. `judged_never`: this error episode already found no evidence, so
/// the show (the only CLI call here) is not repeated; the hook file, which
/// costs no call, is looked at every time.
pub(crate) fn has_run(known: bool, judged_never: bool, probe: &dyn Probe) -> Ran {
    if known || probe.hook_file() {
        return Ran::Yes;
    }
    if judged_never {
        return Ran::Never;
    }
    match probe.read() {
        None => Ran::Unknown,
        Some(l) if l.claude_session_id.is_some() || proves_it_ran(l.status()) => Ran::Yes,
        Some(_) => Ran::Never,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::session::Live;
    use std::cell::Cell;
    use std::time::Duration;

    #[derive(Default)]
    struct Seen {
        hook: bool,
        show: Option<Live>,
        shows: Cell<u32>,
    }

    impl Probe for Seen {
        fn hook_file(&self) -> bool {
            self.hook
        }
        fn read(&self) -> Option<Live> {
            self.shows.set(self.shows.get() + 1);
            self.show.clone()
        }
        fn pane(&self) -> Option<String> {
            unreachable!("the first-run evidence captures no pane")
        }
        fn wait(&self, _: Duration) -> bool {
            unreachable!("the first-run evidence does not wait")
        }
        fn now(&self) -> f64 {
            unreachable!("the first-run evidence reads no clock")
        }
    }

    fn errored(claude_session_id: Option<&str>) -> Option<Live> {
        Some(Live {
            status: Some(Status::Error),
            claude_session_id: claude_session_id.map(str::to_owned),
            ..Live::default()
        })
    }

    #[test]
    fn a_session_in_error_with_no_evidence_never_started() {
        let p = Seen {
            show: errored(None),
            ..Seen::default()
        };
        assert_eq!(has_run(false, false, &p), Ran::Never);
        assert_eq!(has_run(false, true, &p), Ran::Never);
        assert_eq!(p.shows.get(), 1, "judged once per episode, shown once");
    }

    #[test]
    fn any_one_piece_of_evidence_makes_it_an_ordinary_session() {
        let known = Seen::default();
        assert_eq!(has_run(true, true, &known), Ran::Yes);
        assert_eq!(known.shows.get(), 0, "the book costs no call");
        let hook = Seen {
            hook: true,
            ..Seen::default()
        };
        assert_eq!(
            has_run(false, true, &hook),
            Ran::Yes,
            "a hook written since"
        );
        assert_eq!(hook.shows.get(), 0, "a stat costs no call");
        let booted = Seen {
            show: errored(Some("5d0e9c1a-aaaa")),
            ..Seen::default()
        };
        assert_eq!(has_run(false, false, &booted), Ran::Yes);
        let recovered = Seen {
            show: crate::fleet::fake::live(Status::Running),
            ..Seen::default()
        };
        assert_eq!(has_run(false, false, &recovered), Ran::Yes);
    }

    #[test]
    fn an_unreadable_show_decides_nothing() {
        assert_eq!(has_run(false, false, &Seen::default()), Ran::Unknown);
    }

    #[test]
    fn unknown_and_queued_are_no_proof_of_a_run() {
        for s in [Status::Unknown, Status::Queued, Status::Error] {
            assert!(!proves_it_ran(s), "{s:?}");
        }
        for s in [
            Status::Running,
            Status::Waiting,
            Status::Idle,
            Status::Stopped,
        ] {
            assert!(proves_it_ran(s), "{s:?}");
        }
    }
}
