//! When agent-deck's version is read again, decided without I/O.
//!
//! agent-deck updates itself in place by default (`[updates] auto_install`,
//! CHANGELOG 1.16.7, 1.16.10, 1.16.25), so the release read at start goes
//! stale under a running daemon. [`VersionWatch`] says when the next read
//! is due: every [`REREAD_EVERY`] after the last read, and sooner after a
//! call failed in a way a changed binary explains ([`suggests_new_binary`]),
//! but never twice within [`REREAD_FLOOR`]. The read at start is the first
//! read, not a re-read: the floor counts between re-reads. A read that got
//! no answer (the binary renamed away for a moment) is asked again after
//! the next call that works, whatever the floor; a retry that gets none
//! either waits out the floor before the next. Time is the caller's (`now`,
//! float seconds); this file neither reads a clock nor runs the CLI.

use super::deck::CliError;
use crate::sys::process::RunError;

/// A read is due this long after the last one.
pub(crate) const REREAD_EVERY: f64 = 3600.0;
/// Two re-reads are at least this far apart, whatever failed.
pub(crate) const REREAD_FLOOR: f64 = 600.0;

/// When the version was read, and whether a failure asked for a re-read.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct VersionWatch {
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
    /// A read happened at `now`; `answered`: the binary answered it.
    pub(crate) fn read(&mut self, now: f64, answered: bool) {
        if self.last_read.is_some() {
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
    }

    /// Whether the last read got no answer.
    pub(crate) fn unanswered(&self) -> bool {
        self.unanswered
    }

    /// A call other than `version` worked; whether that made a retry of an
    /// unanswered read wanted (the reader is worth waking).
    pub(crate) fn call_worked(&mut self) -> bool {
        let wake = self.unanswered && !self.worked_since;
        self.worked_since |= self.unanswered;
        wake
    }

    /// Whether any read happened yet.
    pub(crate) fn was_read(&self) -> bool {
        self.last_read.is_some()
    }

    /// A call failed in a way a new binary explains.
    pub(crate) fn suspect(&mut self) {
        self.suspect = true;
    }

    /// Whether a read is due at `now`. A clock that went back counts as
    /// time passed, so a jump never silences the re-reads.
    pub(crate) fn due(&self, now: f64) -> bool {
        let passed = |t: Option<f64>, d: f64| t.is_none_or(|t| now - t >= d || now - t < 0.0);
        if !self.was_read() {
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

    #[test]
    fn the_first_read_is_due_at_once_and_the_next_an_hour_later() {
        let mut w = VersionWatch::default();
        assert!(w.due(1000.0));
        w.read(1000.0, true);
        assert!(!w.due(1000.0));
        assert!(!w.due(1000.0 + REREAD_EVERY - 1.0));
        assert!(w.due(1000.0 + REREAD_EVERY));
        w.read(1000.0 + REREAD_EVERY, true);
        assert!(!w.due(1000.0 + REREAD_EVERY + 1.0));
        assert!(w.due(1000.0 + 2.0 * REREAD_EVERY));
    }

    #[test]
    fn a_suspect_failure_rereads_at_most_once_in_ten_minutes() {
        let mut w = VersionWatch::default();
        w.read(0.0, true);
        w.suspect();
        assert!(w.due(5.0), "the read at start does not hold a re-read back");
        w.read(5.0, true);
        w.suspect();
        assert!(!w.due(6.0));
        assert!(!w.due(5.0 + REREAD_FLOOR - 0.5));
        assert!(w.due(5.0 + REREAD_FLOOR));
        w.read(5.0 + REREAD_FLOOR, true);
        assert!(!w.due(10.0 + REREAD_FLOOR), "the suspicion was answered");
    }

    #[test]
    fn a_clock_that_went_back_does_not_silence_the_rereads() {
        let mut w = VersionWatch::default();
        w.read(10_000.0, true);
        assert!(w.due(100.0));
        w.read(100.0, true);
        assert!(!w.due(101.0));
    }

    #[test]
    fn an_unanswered_read_is_asked_again_after_the_next_call_that_works() {
        let mut w = VersionWatch::default();
        w.read(0.0, true);
        // A list fails (the binary renamed away), the re-read it asks for too.
        w.suspect();
        w.read(1.0, false);
        assert!(!w.due(2.0), "nothing says the binary is back");
        assert!(w.call_worked(), "the reader is woken once");
        assert!(!w.call_worked());
        assert!(w.due(5.0), "inside the floor: the binary is back");
        // No answer again: the next retry waits out the floor.
        w.read(5.0, false);
        w.call_worked();
        assert!(!w.due(6.0));
        assert!(w.due(5.0 + REREAD_FLOOR));
        w.read(5.0 + REREAD_FLOOR, true);
        assert!(!w.unanswered() && !w.call_worked());
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
