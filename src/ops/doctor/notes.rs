//! `doctor`'s notes on the agent-deck release it found: what that release
//! does that the watchdog cannot make up for, one warning each, with what
//! the operator can do instead. Pure: the version in, the lines out.

use super::Check;
use crate::fleet::version::Version;

/// The check name of every note.
const NAME: &str = "agent-deck notes";

/// A release change the watchdog cannot see past, from the release that
/// brought it.
struct Note {
    since: Version,
    detail: &'static str,
    fix: &'static str,
}

/// Every note, oldest release first.
const NOTES: &[Note] = &[
    // CHANGELOG 1.16.11 (#2091): a vanished pane consults the last hook's
    // completion and reads `stopped` instead of `error`; from outside that
    // cannot be told apart from a stop by a human.
    Note {
        since: Version::PRIMARY_PANE,
        detail: "a pane lost right after a Stop hook reads `stopped` (#2091): the watchdog will not revive it",
        fix: "when a conductor reads `stopped` and nobody stopped it, start it again with `agent-deck session start <id>`; keep its tmux server out of reach of SSH logouts (a systemd user unit)",
    },
];

/// The notes for `found` (an unreadable version has none: nothing is known
/// of it).
pub(super) fn for_version(found: Option<Version>) -> Vec<Check> {
    let Some(v) = found else {
        return Vec::new();
    };
    NOTES
        .iter()
        .filter(|n| v.at_least(n.since))
        .map(|n| Check::warn(NAME, format!("agent-deck {v}: {}", n.detail), n.fix))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::doctor::CheckStatus;

    #[test]
    fn a_newer_release_gets_the_stop_hook_note_and_the_verified_one_none() {
        let newer = for_version(Some(Version::new(1, 16, 26)));
        assert_eq!(newer.len(), 1);
        assert_eq!(newer[0].status, CheckStatus::Warn);
        assert!(
            newer[0].detail.contains("a pane lost right after a Stop hook reads `stopped` (#2091): the watchdog will not revive it"),
            "{:?}",
            newer[0]
        );
        assert!(newer[0].fix.is_some());
        assert_eq!(for_version(Some(Version::new(1, 16, 11))).len(), 1);
        assert!(for_version(Some(Version::new(1, 16, 10))).is_empty());
        assert!(for_version(Some(Version::OLDEST)).is_empty());
        assert!(for_version(None).is_empty());
    }
}
