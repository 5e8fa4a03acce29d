//! Which agent-deck release the daemon goes by, and when `agent-deck
//! version` is read again, decided without I/O.
//!
//! The release gone by is the one the last answered read named. A read
//! that got no answer (it failed or timed out: an update in place renames
//! the binary away for a moment) keeps the release known before, marked
//! unconfirmed, so the version gates never fall back to the oldest release
//! over one failed read. An answer that names no release (a dev build) is
//! believed: nothing is known.
//!
//! agent-deck updates itself in place by default (`[updates] auto_install`,
//! CHANGELOG 1.16.7, 1.16.10, 1.16.25), so the release read at start goes
//! stale under a running daemon. The next read is due every
//! [`REREAD_EVERY`] after the last read, and sooner after a call failed in
//! a way a changed binary explains ([`suggests_new_binary`]), but never
//! twice within [`REREAD_FLOOR`]. The read at start is the first read, not
//! a re-read: the floor counts between re-reads. A read that got no answer
//! is asked again after the next call that works, whatever the floor; a
//! retry that gets none either waits out the floor before the next. Time
//! is the caller's (`now`, float seconds); this file neither reads a clock
//! nor runs the CLI.

use super::deck::CliError;
use super::version::Version;
use crate::sys::process::RunError;

/// A read is due this long after the last one.
pub(crate) const REREAD_EVERY: f64 = 3600.0;
/// Two re-reads are at least this far apart, whatever failed.
pub(crate) const REREAD_FLOOR: f64 = 600.0;

/// What one `agent-deck version` call gave.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Answer {
    Release(Version),
    /// It answered, naming no release.
    NoRelease,
    /// No answer: it failed or timed out.
    Failed,
}

/// What a read changed: the one log line it is worth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum News {
    Quiet,
    /// The first read named this release.
    First(Version),
    /// The first read named none: nothing is known.
    Unknown,
    /// The read failed; this release, known before, is kept unconfirmed.
    Kept(Version),
    /// The kept release answered again.
    Confirmed(Version),
    /// A later answer named another release, or none.
    Changed(Option<Version>, Option<Version>),
}

/// The release gone by, when the version was read, and whether a failure
/// asked for a re-read.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct VersionWatch {
    /// The last release named, `None` if none was.
    known: Option<Version>,
    /// The last read of any kind (the one at start included).
    last_read: Option<f64>,
    /// The last re-read (every read after the first).
    last_reread: Option<f64>,
    /// A call failed in a way a new binary explains since the last read.
    suspect: bool,
    /// The last read got no answer: it failed or timed out.
    unanswered: bool,
    /// A call worked since that unanswered read: the binary is back.
    worked_since: bool,
    /// The last retry of an unanswered read, while none is answered.
    last_retry: Option<f64>,
}

impl VersionWatch {
    pub(crate) fn known(&self) -> Option<Version> {
        self.known
    }

    /// Whether the release known was not confirmed by the last read.
    pub(crate) fn unconfirmed(&self) -> bool {
        self.known.is_some() && self.unanswered
    }

    /// Takes in a read at `now`.
    pub(crate) fn read(&mut self, now: f64, answer: Answer) -> News {
        let (first, was_unconfirmed, before) =
            (self.last_read.is_none(), self.unconfirmed(), self.known);
        let answered = answer != Answer::Failed;
        if !first {
            self.last_reread = Some(now);
        }
        if answered {
            self.last_retry = None;
        } else if self.unanswered && self.worked_since {
            self.last_retry = Some(now);
        }
        self.last_read = Some(now);
        self.suspect = false;
        self.unanswered = !answered;
        self.worked_since = false;
        self.known = match answer {
            Answer::Release(v) => Some(v),
            Answer::NoRelease => None,
            Answer::Failed => before,
        };
        match (answer, before, self.known) {
            (Answer::Failed, Some(v), _) if !was_unconfirmed => News::Kept(v),
            (_, _, None) if first => News::Unknown,
            (_, _, Some(v)) if first => News::First(v),
            (_, old, new) if old != new => News::Changed(old, new),
            (Answer::Release(v), _, _) if was_unconfirmed => News::Confirmed(v),
            _ => News::Quiet,
        }
    }

    /// A call other than `version` worked; whether that made a retry of an
    /// unanswered read wanted (the reader is worth waking).
    pub(crate) fn call_worked(&mut self) -> bool {
        let wake = self.unanswered && !self.worked_since;
        self.worked_since |= self.unanswered;
        wake
    }

    /// A call failed in a way a new binary explains.
    pub(crate) fn suspect(&mut self) {
        self.suspect = true;
    }

    /// Whether a read is due at `now`. A clock that went back counts as
    /// time passed, so a jump never silences the re-reads.
    pub(crate) fn due(&self, now: f64) -> bool {
        let passed = |t: Option<f64>, d: f64| t.is_none_or(|t| now - t >= d || now - t < 0.0);
        if self.last_read.is_none() {
            return true;
        }
        if self.unanswered && self.worked_since && passed(self.last_retry, REREAD_FLOOR) {
            return true;
        }
        let wanted = self.suspect || passed(self.last_read, REREAD_EVERY);
        wanted && passed(self.last_reread, REREAD_FLOOR)
    }
}

/// Whether `err`, from the command counted as `name`, is a failure a
/// healthy CLI does not give and a replaced binary may: any failure of the
/// reads every tick makes (`list-all`, `list`, `show`), an answer that does
/// not parse, a binary that could not be started, or a flag or command the
/// binary does not know. A dead pane's sample (`output-pane`), a restart or
/// start whose agent cannot come up, and a send to a busy agent fail by
/// design: none of those alone is a sign. Shutdown is never one.
pub(crate) fn suggests_new_binary(name: &str, err: &CliError) -> bool {
    match err {
        CliError::Run(RunError::Interrupted) => false,
        // The binary was missing for a moment: an update replacing it.
        CliError::Run(RunError::Spawn(_)) | CliError::Garbage(_) => true,
        // Go's flag package on a flag it does not define, or agent-deck on
        // a subcommand it does not have.
        CliError::Exit { message, .. } | CliError::Undelivered { message, .. }
            if message.contains("flag provided but not defined")
                || message.contains("unknown command") =>
        {
            true
        }
        _ => matches!(name, "list-all" | "list" | "show"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V: Version = Version::new(1, 16, 26);
    const R: Answer = Answer::Release(V);

    #[test]
    fn a_failed_read_keeps_the_release_unconfirmed_until_one_answers() {
        let mut k = VersionWatch::default();
        assert_eq!(k.read(0.0, Answer::Release(V)), News::First(V));
        assert!(!k.unconfirmed());
        // The binary renamed away: no answer, twice; said once.
        assert_eq!(k.read(1.0, Answer::Failed), News::Kept(V));
        assert_eq!(k.read(2.0, Answer::Failed), News::Quiet);
        assert_eq!((k.known(), k.unconfirmed()), (Some(V), true));
        assert_eq!(k.read(3.0, Answer::Release(V)), News::Confirmed(V));
        assert!(!k.unconfirmed());
        assert_eq!(k.read(4.0, Answer::Release(V)), News::Quiet);
    }

    #[test]
    fn an_update_seen_after_a_failed_read_is_a_change() {
        let mut k = VersionWatch::default();
        k.read(0.0, Answer::Release(Version::OLDEST));
        k.read(1.0, Answer::Failed);
        assert_eq!(
            k.read(2.0, Answer::Release(V)),
            News::Changed(Some(Version::OLDEST), Some(V))
        );
        assert!(!k.unconfirmed());
    }

    #[test]
    fn nothing_known_stays_not_known_and_an_answer_without_a_release_is_believed() {
        let mut k = VersionWatch::default();
        assert_eq!(k.read(0.0, Answer::Failed), News::Unknown);
        assert_eq!(k.read(1.0, Answer::Failed), News::Quiet);
        assert!(!k.unconfirmed(), "nothing known, nothing to confirm");
        assert_eq!(
            k.read(2.0, Answer::Release(V)),
            News::Changed(None, Some(V))
        );
        assert_eq!(k.read(3.0, Answer::NoRelease), News::Changed(Some(V), None));
        assert_eq!(k.known(), None);
        let mut dev = VersionWatch::default();
        assert_eq!(dev.read(0.0, Answer::NoRelease), News::Unknown);
    }

    #[test]
    fn the_first_read_is_due_at_once_and_the_next_an_hour_later() {
        let mut w = VersionWatch::default();
        assert!(w.due(1000.0));
        w.read(1000.0, R);
        assert!(!w.due(1000.0));
        assert!(!w.due(1000.0 + REREAD_EVERY - 1.0));
        assert!(w.due(1000.0 + REREAD_EVERY));
        w.read(1000.0 + REREAD_EVERY, R);
        assert!(!w.due(1000.0 + REREAD_EVERY + 1.0));
        assert!(w.due(1000.0 + 2.0 * REREAD_EVERY));
    }

    #[test]
    fn a_suspect_failure_rereads_at_most_once_in_ten_minutes() {
        let mut w = VersionWatch::default();
        w.read(0.0, R);
        w.suspect();
        assert!(w.due(5.0), "the read at start does not hold a re-read back");
        w.read(5.0, R);
        w.suspect();
        assert!(!w.due(6.0));
        assert!(!w.due(5.0 + REREAD_FLOOR - 0.5));
        assert!(w.due(5.0 + REREAD_FLOOR));
        w.read(5.0 + REREAD_FLOOR, R);
        assert!(!w.due(10.0 + REREAD_FLOOR), "the suspicion was answered");
    }

    #[test]
    fn a_clock_that_went_back_does_not_silence_the_rereads() {
        let mut w = VersionWatch::default();
        w.read(10_000.0, R);
        assert!(w.due(100.0));
        w.read(100.0, R);
        assert!(!w.due(101.0));
    }

    #[test]
    fn an_unanswered_read_is_asked_again_after_the_next_call_that_works() {
        let mut w = VersionWatch::default();
        w.read(0.0, R);
        // A list fails (the binary renamed away), the re-read it asks for too.
        w.suspect();
        w.read(1.0, Answer::Failed);
        assert!(!w.due(2.0), "nothing says the binary is back");
        assert!(w.call_worked(), "the reader is woken once");
        assert!(!w.call_worked());
        assert!(w.due(5.0), "inside the floor: the binary is back");
        // No answer again: the next retry waits out the floor.
        w.read(5.0, Answer::Failed);
        w.call_worked();
        assert!(!w.due(6.0));
        assert!(w.due(5.0 + REREAD_FLOOR));
        w.read(5.0 + REREAD_FLOOR, R);
        assert!(!w.unconfirmed() && !w.call_worked());
        assert!(!w.due(6.0 + REREAD_FLOOR), "answered: back to the hour");
    }

    #[test]
    fn only_failures_a_new_binary_explains_are_suspect() {
        let exit = |code, m: &str| CliError::Exit {
            code: Some(code),
            message: m.into(),
        };
        let not_running = exit(1, "failed to capture pane: exit status 1");
        assert!(suggests_new_binary("list-all", &not_running));
        assert!(suggests_new_binary("list", &not_running));
        assert!(suggests_new_binary("show", &not_running));
        for name in [
            "output-pane",
            "restart",
            "start",
            "send",
            "output",
            "remove",
        ] {
            assert!(!suggests_new_binary(name, &not_running), "{name}");
        }
        let unknown = exit(2, "flag provided but not defined: -primary");
        assert!(suggests_new_binary("output-pane", &unknown));
        assert!(suggests_new_binary(
            "send",
            &exit(1, "Error: unknown command")
        ));
        assert!(suggests_new_binary(
            "restart",
            &CliError::Garbage("x".into())
        ));
        let stopped = CliError::Run(RunError::Interrupted);
        assert!(!suggests_new_binary("list-all", &stopped));
    }
}
