//! Whether a Claude pane's last turn ended on a terminal API error (SPEC
//! §14: `api-overload`, `connection-lost`), pure, from the pane's text.
//!
//! Only the last [`TAIL`] non-empty lines are read. Quoted tool results
//! (`⎿`), the input line (`❯`, `>`) and dialog boxes (`│`) are skipped, as
//! agent-deck skips them. Of the rest, the last line of the turn (one that
//! starts with Claude's `⏺`, or a bare `API Error`) must be the banner
//! itself, which starts with `API Error` once the `⏺` is off: so prose that
//! mentions an error, or a turn that went on after one, never matches. A
//! retry under way after the banner ("Retrying in 37s · attempt 8/10") or a
//! busy cue means Claude has not given up yet.
//!
//! agent-deck's own rule that an assistant line carry a structural marker is
//! not copied: today's banner (`⏺ API Error: 529 Overloaded. This is a
//! server-side issue…`) has none, and that rule would skip it.

/// How many non-empty lines at the bottom of the pane are read.
pub(crate) const TAIL: usize = 15;

/// The terminal API error a turn ended on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ApiError {
    /// `API Error: 529 Overloaded`, or `overloaded_error` in the older form.
    Overload,
    /// The connection to the API failed or dropped.
    ConnectionLost,
}

/// Words of a banner that say the connection failed.
const CONNECTION: [&str; 6] = [
    "unable to connect",
    "enotfound",
    "econnrefused",
    "econnreset",
    "socket connection closed",
    "connection error",
];

/// The API error the last turn in `pane` ended on, if it ended on one and
/// nothing has happened since.
pub(crate) fn ended_on(pane: &str) -> Option<ApiError> {
    let lines: Vec<&str> = pane
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let tail = &lines[lines.len().saturating_sub(TAIL)..];
    let kept: Vec<&str> = tail
        .iter()
        .copied()
        .filter(|l| !l.starts_with(['⎿', '❯', '>', '│']))
        .collect();
    let turn = |l: &&str| l.starts_with('⏺') || l.starts_with("API Error");
    let at = kept.iter().rposition(turn)?;
    let banner = kept[at].trim_start_matches('⏺').trim_start();
    if !banner.starts_with("API Error") {
        return None;
    }
    let under_way = |l: &&str| {
        let l = l.to_lowercase();
        (l.contains("retrying in") && l.contains("attempt")) || l.contains("esc to interrupt")
    };
    if kept[at + 1..].iter().any(under_way) {
        return None;
    }
    let banner = banner.to_lowercase();
    if banner.contains("529") || banner.contains("overloaded") {
        Some(ApiError::Overload)
    } else if CONNECTION.iter().any(|w| banner.contains(w)) {
        Some(ApiError::ConnectionLost)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Claude's prompt box and footer, below every turn.
    const PROMPT: &str = "\n────────────────────\n❯ \n────────────────────\n  ? for shortcuts\n";

    fn pane(turn: &str) -> String {
        format!("> fix the flaky test\n\n⏺ I'll look at the test first.\n\n{turn}\n{PROMPT}")
    }

    #[test]
    fn real_banners_are_read() {
        let cases = [
            ("⏺ API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check status.anthropic.com.", ApiError::Overload),
            ("  ⎿  API Error (529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}})\nAPI Error (529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}})", ApiError::Overload),
            ("⏺ API Error: Unable to connect to API (ECONNREFUSED)", ApiError::ConnectionLost),
            ("⏺ API Error: Connection error. getaddrinfo ENOTFOUND api.anthropic.com", ApiError::ConnectionLost),
            ("⏺ API Error: 529 Overloaded\n✻ 529 Overloaded · Retrying in 37s · attempt 8/10\n⏺ API Error: 529 Overloaded", ApiError::Overload),
        ];
        for (turn, want) in cases {
            assert_eq!(ended_on(&pane(turn)), Some(want), "{turn}");
        }
    }

    #[test]
    fn prose_quotes_input_lines_and_turns_that_went_on_never_match() {
        for turn in [
            // Prose about an error, on an assistant line.
            "⏺ The 529 Overloaded error in the logs came from the staging proxy.",
            "⏺ I saw \"API Error: 529\" in the CI output; it is unrelated.",
            // A quoted tool result and an input line.
            "⏺ Bash(grep -r overloaded src)\n  ⎿  API Error: 529 Overloaded",
            "❯ API Error: 529 Overloaded — why does this happen?",
            "> API Error: Unable to connect to API",
            "│ API Error: 529 Overloaded │",
            // A retry under way, and a turn that went on after the error.
            "⏺ API Error: 529 Overloaded\n✻ 529 Overloaded · Retrying in 37s · attempt 8/10",
            "⏺ API Error: 529 Overloaded\n⏺ Retried; the tests pass now.",
            "⏺ API Error: 529 Overloaded\n✶ Thinking… (esc to interrupt)",
            // Not a stall of these kinds: auth, and a subagent's failure.
            "⏺ API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\"}}",
            "⏺ Agent terminated early due to an API error",
        ] {
            assert_eq!(ended_on(&pane(turn)), None, "{turn}");
        }
    }

    #[test]
    fn only_the_tail_is_read() {
        let old = format!("⏺ API Error: 529 Overloaded\n{}", "⎿ line\n".repeat(TAIL));
        assert_eq!(ended_on(&old), None);
        assert_eq!(ended_on(""), None);
    }
}
