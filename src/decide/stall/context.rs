//! Whether a Claude session's context window is full (SPEC §15), pure, from
//! what the session shows: its last assistant message (`session output -q`)
//! and its pane.
//!
//! The pane is read like the API-error banner ([`super::banner`]),
//! with one difference: the error renders on a `⎿` line, which that scan
//! skips. Here one leading `⎿` is stripped, and the line must *start with*
//! one of Claude's four renderings, after the last turn line (`⏺`, `●`)
//! and before the final prompt, with no busy cue: a conductor quoting a
//! child's banner inside its own `⎿` block does so within a turn that goes
//! on, and prose only mentions the words.

/// How many non-empty lines at the bottom of the pane are read.
const TAIL: usize = 15;

/// How the full context showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// `Context limit reached · /compact or /clear to continue`.
    LimitReached,
    /// `Prompt is too long` (the transcript's synthetic record says this
    /// for every form).
    PromptTooLong,
    /// `Error: Error during compaction: … Conversation too long`.
    CompactionFailed,
    /// `Autocompact is thrashing: …`, which itself advises `/clear`.
    Thrashing,
}

impl Full {
    /// How Claude renders it (the start of its line).
    pub(crate) fn text(self) -> &'static str {
        PANE.iter().find(|(_, f)| *f == self).map_or("", |(t, _)| t)
    }

    /// The evidence already says compaction failed: a `/compact` is not tried.
    pub(crate) fn compaction_failed(self) -> bool {
        matches!(self, Full::CompactionFailed | Full::Thrashing)
    }
}

/// The starts of the pane's lines that say the context is full, as Claude
/// renders them.
const PANE: [(&str, Full); 4] = [
    (
        "Context limit reached · /compact or /clear to continue",
        Full::LimitReached,
    ),
    ("Prompt is too long", Full::PromptTooLong),
    ("Error: Error during compaction:", Full::CompactionFailed),
    ("Autocompact is thrashing:", Full::Thrashing),
];

/// What the last turn on the pane shows of the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PaneSays {
    Full(Full),
    /// `Compacting conversation…` under way.
    Compacting,
    /// `Conversation compacted`, or the `Compacted` result line.
    Compacted,
    /// An empty prompt with no turn above it: a `/clear` wiped the screen.
    Cleared,
    /// A turn that ended with none of these: it answered.
    Answered,
    Nothing,
}

/// Words of a line that say Claude is at work.
fn busy(line: &str) -> bool {
    let l = line.to_lowercase();
    l.contains("esc to interrupt") || l.contains("compacting conversation")
}

/// A prompt line: an empty one, or an input line.
fn prompt(l: &str) -> bool {
    l.starts_with('❯') || l.starts_with('>') || l.starts_with("│ >")
}

/// `l` without one leading `⎿`.
fn unquoted(l: &str) -> &str {
    l.strip_prefix('⎿').unwrap_or(l).trim_start()
}

/// An input line: a prompt with text typed after it.
fn input(l: &str) -> bool {
    let rest = ["│ >", "❯", ">"].iter().find_map(|p| l.strip_prefix(p));
    rest.is_some_and(|r| !r.trim().is_empty())
}

fn turn_line(l: &str) -> bool {
    l.starts_with('⏺') || l.starts_with('●')
}

/// What the bottom of `pane` says of the context. The last turn is what
/// follows the last turn line or input line, up to the final prompt.
pub(crate) fn pane_says(pane: &str) -> PaneSays {
    let lines: Vec<&str> = pane
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let tail = &lines[lines.len().saturating_sub(TAIL)..];
    if tail.iter().any(|l| l.contains("Compacting conversation")) {
        return PaneSays::Compacting;
    }
    let end = tail.iter().rposition(|l| prompt(l)).unwrap_or(tail.len());
    let start = tail[..end].iter().rposition(|l| turn_line(l) || input(l));
    let compacted =
        |l: &&str| l.contains("Conversation compacted") || unquoted(l).starts_with("Compacted");
    let Some(start) = start else {
        // A wiped screen: `/clear`'s, or a compaction's summary line.
        return if tail[..end].iter().any(compacted) {
            PaneSays::Compacted
        } else if end < tail.len() {
            PaneSays::Cleared
        } else {
            PaneSays::Nothing
        };
    };
    let last_turn = &tail[start + 1..end];
    if last_turn.iter().any(|l| busy(l)) {
        return PaneSays::Nothing;
    }
    let full = last_turn.iter().map(|l| unquoted(l)).find_map(|l| {
        PANE.iter()
            .find(|(start, _)| l.starts_with(start))
            .map(|&(_, f)| f)
    });
    if let Some(full) = full {
        return PaneSays::Full(full);
    }
    if tail[start..end].iter().any(compacted) {
        PaneSays::Compacted
    } else if turn_line(tail[start]) && end < tail.len() {
        PaneSays::Answered
    } else {
        PaneSays::Nothing
    }
}

/// What the last assistant message (`session output -q`) says: one of the
/// errors, the whole message (an `API Error: 400` prefix allowed), never a
/// message that only mentions one.
pub(crate) fn message_says(message: &str) -> Option<Full> {
    let m = message.trim();
    let m = m.strip_prefix("API Error: 400").map_or(m, str::trim_start);
    let starts = |w: &str| m.get(..w.len()).is_some_and(|s| s.eq_ignore_ascii_case(w));
    if starts("prompt is too long") || starts("input is too long") {
        Some(Full::PromptTooLong)
    } else if starts("context limit reached") {
        Some(Full::LimitReached)
    } else if starts("error: error during compaction") || starts("error during compaction") {
        Some(Full::CompactionFailed)
    } else if starts("autocompact is thrashing") {
        Some(Full::Thrashing)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Claude's prompt box and footer, below every turn.
    const PROMPT: &str = "\n\n❯ \n  ? for shortcuts\n";

    fn pane(turn: &str) -> String {
        format!("> Look at the logs\n\n{turn}{PROMPT}")
    }

    #[test]
    fn each_rendering_of_a_full_context_is_seen_on_its_own_line() {
        let cases = [
            (
                "⏺ Reading the rest of the logs.\n  ⎿  Context limit reached · /compact or /clear to continue",
                Full::LimitReached,
            ),
            ("⏺ Checking.\n  ⎿  Prompt is too long", Full::PromptTooLong),
            (
                "⏺ Compacting.\n  ⎿  Error: Error during compaction: Error: Conversation too long. Press esc twice to go up a few messages and try again.",
                Full::CompactionFailed,
            ),
            (
                "⏺ Reading.\n  ⎿  Autocompact is thrashing: the context refilled to the limit within 3 turns of the previous compact, 3 times in a row.",
                Full::Thrashing,
            ),
        ];
        for (turn, full) in cases {
            assert_eq!(pane_says(&pane(turn)), PaneSays::Full(full), "{turn}");
        }
    }

    #[test]
    fn what_only_mentions_the_words_is_not_a_full_context() {
        let cases = [
            // A child's banner, quoted inside the conductor's turn, which went on.
            "⏺ Bash(agent-deck session output child)\n  ⎿  Prompt is too long\n⏺ The child is full; I will tell the operator.",
            // Prose.
            "⏺ The error Prompt is too long means the context is full.",
            "⏺ Note:\n  ⎿  The child said: Context limit reached · /compact or /clear to continue",
            // The warning before it.
            "⏺ Done.\n  Context low (9% remaining) · Run /compact to compact & continue",
        ];
        for turn in cases {
            assert_eq!(pane_says(&pane(turn)), PaneSays::Answered, "{turn}");
        }
        // Busy.
        let busy = "⏺ Reading.\n  ⎿  Prompt is too long\n✻ Thinking… (3s · esc to interrupt)";
        assert_eq!(pane_says(&pane(busy)), PaneSays::Nothing);
        // An input line is no output.
        let typed = "⏺ Done.\n\n❯ Prompt is too long\n  ? for shortcuts\n";
        assert_eq!(pane_says(typed), PaneSays::Answered);
    }

    #[test]
    fn a_compaction_under_way_and_one_done_are_told_apart() {
        let busy = "⏺ Done.\n✻ Compacting conversation… (26s · esc to interrupt)\n";
        assert_eq!(pane_says(&pane(busy)), PaneSays::Compacting);
        let done = "══════ Conversation compacted · ctrl+o for history ══════\n  ⎿  Compacted (ctrl+o to see full summary)";
        assert_eq!(pane_says(&pane(done)), PaneSays::Compacted);
        // The screen wiped to the summary, as Claude leaves it.
        assert_eq!(pane_says(&format!("{done}\n❯ \n")), PaneSays::Compacted);
    }

    #[test]
    fn the_last_turn_is_after_the_last_input_line() {
        // Compacted after the error: the error is history.
        let done = "⏺ Reading.\n  ⎿  Prompt is too long\n> /compact\n✻ Conversation compacted (ctrl+o for history)\n  ⎿  Compacted (ctrl+o to see full summary)";
        assert_eq!(pane_says(&pane(done)), PaneSays::Compacted);
        // A turn after the compaction: it answered.
        let after = format!("{done}\n> carry on\n⏺ Carrying on.");
        assert_eq!(pane_says(&pane(&after)), PaneSays::Answered);
        // Full again after it.
        let again = format!("{done}\n> carry on\n  ⎿  Prompt is too long");
        assert_eq!(
            pane_says(&pane(&again)),
            PaneSays::Full(Full::PromptTooLong)
        );
        // An error turn with no turn line of its own.
        let bare =
            "❯ Check the fleet\n  ⎿  Context limit reached · /compact or /clear to continue\n❯ \n";
        assert_eq!(pane_says(bare), PaneSays::Full(Full::LimitReached));
    }

    #[test]
    fn a_wiped_screen_is_a_cleared_prompt() {
        assert_eq!(pane_says("❯ \n\n❯\n"), PaneSays::Cleared);
        assert_eq!(pane_says("❯ \n  ? for shortcuts\n"), PaneSays::Cleared);
        assert_eq!(pane_says(""), PaneSays::Nothing);
        assert_eq!(pane_says(&pane("⏺ Done.")), PaneSays::Answered);
    }

    #[test]
    fn the_last_message_is_an_error_only_as_a_whole() {
        assert_eq!(
            message_says("Prompt is too long\n"),
            Some(Full::PromptTooLong)
        );
        assert_eq!(
            message_says("API Error: 400 Prompt is too long"),
            Some(Full::PromptTooLong)
        );
        assert_eq!(
            message_says("Autocompact is thrashing: the context refilled"),
            Some(Full::Thrashing)
        );
        assert_eq!(message_says("The prompt is too long, so I split it."), None);
        assert_eq!(message_says(""), None);
    }
}
