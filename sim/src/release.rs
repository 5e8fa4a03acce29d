//! The agent-deck release whose answers the simulator gives (the state's
//! `version`), and the releases that changed an answer it models.
//!
//! The simulator's own copy, not the daemon's `fleet::version`: a test
//! double that shared the daemon's reading of a release could not catch the
//! daemon misreading one. Parsing follows `agent-deck version`'s answer:
//! the first `X.Y.Z` (a `v` prefix and a suffix such as `-rc1` allowed).

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Release {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Release {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Release {
        Release {
            major,
            minor,
            patch,
        }
    }

    /// The oldest release modelled, and what an unreadable version counts as.
    pub const OLDEST: Release = Release::new(1, 14, 0);
    /// A failed `session start`/`restart` exits 1 with `reason` in its JSON
    /// (CHANGELOG 1.16.10, #2265).
    pub const SPAWN_VERIFIED: Release = Release::new(1, 16, 10);
    /// `session output --pane --primary` exists (CHANGELOG 1.16.11, #2257).
    pub const PRIMARY_PANE: Release = Release::new(1, 16, 11);
    /// `substate_detail` beside `substate` (CHANGELOG 1.16.11).
    pub const SUBSTATE_DETAIL: Release = Release::new(1, 16, 11);
    /// `usage --json` is a command (`cmd/agent-deck/usage_cmd.go`).
    pub const USAGE_JSON: Release = Release::new(1, 16, 11);

    /// The first `X.Y.Z` in `text`; `None` when there is none.
    pub fn parse(text: &str) -> Option<Release> {
        text.split_whitespace().find_map(|word| {
            let word = word.strip_prefix('v').unwrap_or(word);
            let mut parts = word.splitn(3, '.');
            let mut number = || -> Option<u32> {
                let part = parts.next()?;
                let end = part.find(|c: char| !c.is_ascii_digit());
                part[..end.unwrap_or(part.len())].parse().ok()
            };
            Some(Release::new(number()?, number()?, number()?))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_line_of_every_known_shape_parses() {
        let v = Release::parse;
        assert_eq!(v("Agent Deck v1.14.0\n"), Some(Release::new(1, 14, 0)));
        assert_eq!(v("1.16.3-rc1"), Some(Release::new(1, 16, 3)));
        assert_eq!(v("Agent Deck dev"), None);
        assert_eq!(v("Agent Deck v1.16"), None);
        assert!(Release::new(1, 16, 10) >= Release::new(1, 9, 30));
    }
}
