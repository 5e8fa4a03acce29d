//! agent-deck's release, as `agent-deck version` names it, and the releases
//! that changed an answer the watchdog reads (`agent-deck-drift.md`).
//!
//! Behaviour gated on a release asks [`Version::at_least`] of the version
//! read last; a version that could not be read counts as the oldest known
//! ([`Version::OLDEST`]), so an unreadable answer never turns on a flag an
//! older CLI would reject. Reading the version is the CLI's job
//! ([`crate::fleet::deck`]); this file only parses and compares.

use std::fmt;

/// A release number, `major.minor.patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Version {
    pub(crate) const fn new(major: u32, minor: u32, patch: u32) -> Version {
        Version {
            major,
            minor,
            patch,
        }
    }

    /// The oldest release the watchdog knows, and what an unreadable
    /// version counts as.
    pub(crate) const OLDEST: Version = Version::new(1, 14, 0);
    /// `session output --pane --primary` samples the session's first window
    /// (CHANGELOG 1.16.11, #2257); older releases exit 2 on the flag.
    pub(crate) const PRIMARY_PANE: Version = Version::new(1, 16, 11);
    /// `usage --json` reports the plan windows and their resets
    /// (`cmd/agent-deck/usage_cmd.go`); before it, `usage` is no command and
    /// falls through to the TUI (measured on 1.14.0).
    pub(crate) const USAGE_JSON: Version = Version::new(1, 16, 11);
    /// A deliberate `session stop` no longer flips to `error` half a second
    /// later under notify-daemon (CHANGELOG 1.16.23, #2453).
    pub(crate) const STOP_STAYS_STOPPED: Version = Version::new(1, 16, 23);
    /// agent-deck types a recovery turn into a conductor it finds restarted
    /// (from 1.16.29, a lead of #38 not seen on 1.14.0; the 1.16.38 release
    /// line "retry Enter when the recovery turn stays in the composer",
    /// #3074, confirms there is one).
    pub(crate) const RECOVERY_TURN: Version = Version::new(1, 16, 29);

    /// The first `X.Y.Z` in `agent-deck version`'s answer
    /// (`Agent Deck v1.16.26`, maybe followed by
    /// ` (update available: v1.16.27)`); `None` when there is none.
    pub(crate) fn parse(text: &str) -> Option<Version> {
        text.split_whitespace().find_map(|word| {
            let word = word.strip_prefix('v').unwrap_or(word);
            let mut parts = word.splitn(3, '.');
            let mut number = || -> Option<u32> {
                let part = parts.next()?;
                let end = part.find(|c: char| !c.is_ascii_digit());
                part[..end.unwrap_or(part.len())].parse().ok()
            };
            Some(Version::new(number()?, number()?, number()?))
        })
    }

    /// Whether this release has what `since` brought.
    pub(crate) fn at_least(self, since: Version) -> bool {
        self >= since
    }

    /// What gated behaviour follows: `read`, or the oldest known release
    /// when the version could not be read.
    pub(crate) fn or_oldest(read: Option<Version>) -> Version {
        read.unwrap_or(Version::OLDEST)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_line_of_every_known_shape_parses() {
        let v = |s| Version::parse(s);
        assert_eq!(v("Agent Deck v1.14.0\n"), Some(Version::new(1, 14, 0)));
        assert_eq!(
            v("Agent Deck v1.16.26 (update available: v1.16.27)"),
            Some(Version::new(1, 16, 26))
        );
        assert_eq!(v("1.16.3-rc1"), Some(Version::new(1, 16, 3)));
        assert_eq!(v("Agent Deck dev"), None);
        assert_eq!(v("Agent Deck v1.16"), None);
        assert_eq!(v(""), None);
    }

    #[test]
    fn an_unreadable_version_gates_like_the_oldest_known() {
        let gated = Version::or_oldest(None);
        assert_eq!(gated, Version::OLDEST);
        assert!(!gated.at_least(Version::PRIMARY_PANE));
        assert!(!gated.at_least(Version::STOP_STAYS_STOPPED));
    }

    #[test]
    fn releases_compare_by_number_not_by_text() {
        assert!(Version::new(1, 16, 10).at_least(Version::new(1, 16, 9)));
        assert!(!Version::new(1, 16, 9).at_least(Version::new(1, 16, 10)));
        assert!(Version::new(2, 0, 0).at_least(Version::STOP_STAYS_STOPPED));
        assert_eq!(Version::new(1, 16, 26).to_string(), "1.16.26");
    }
}
