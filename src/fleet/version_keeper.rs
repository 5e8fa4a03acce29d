//! Which agent-deck release the daemon goes by, decided without I/O: the one
//! the last answered `agent-deck version` named. A read that got no answer
//! (it failed or timed out: an update in place renames the binary away for
//! a moment) keeps the release known before, marked unconfirmed, so the
//! version gates never fall back to the oldest release over one failed read;
//! [`VersionWatch`] has it asked again after the next call that works. An
//! answer that names no release (a dev build) is believed: nothing is known.

use super::version::Version;
use super::version_watch::VersionWatch;

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

/// The release gone by, and when to ask again.
#[derive(Debug, Default)]
pub(crate) struct VersionKeeper {
    known: Option<Version>,
    pub(crate) watch: VersionWatch,
}

impl VersionKeeper {
    /// The last release named, `None` if none was.
    pub(crate) fn known(&self) -> Option<Version> {
        self.known
    }

    /// Whether the release known was not confirmed by the last read.
    pub(crate) fn unconfirmed(&self) -> bool {
        self.known.is_some() && self.watch.unanswered()
    }

    /// Takes in a read at `now`.
    pub(crate) fn read(&mut self, now: f64, answer: Answer) -> News {
        let (first, was_unconfirmed, before) =
            (!self.watch.was_read(), self.unconfirmed(), self.known);
        self.watch.read(now, answer != Answer::Failed);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    const V: Version = Version::new(1, 16, 26);

    #[test]
    fn a_failed_read_keeps_the_release_unconfirmed_until_one_answers() {
        let mut k = VersionKeeper::default();
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
        let mut k = VersionKeeper::default();
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
        let mut k = VersionKeeper::default();
        assert_eq!(k.read(0.0, Answer::Failed), News::Unknown);
        assert_eq!(k.read(1.0, Answer::Failed), News::Quiet);
        assert!(!k.unconfirmed(), "nothing known, nothing to confirm");
        assert_eq!(
            k.read(2.0, Answer::Release(V)),
            News::Changed(None, Some(V))
        );
        assert_eq!(k.read(3.0, Answer::NoRelease), News::Changed(Some(V), None));
        assert_eq!(k.known(), None);
        let mut dev = VersionKeeper::default();
        assert_eq!(dev.read(0.0, Answer::NoRelease), News::Unknown);
    }
}
