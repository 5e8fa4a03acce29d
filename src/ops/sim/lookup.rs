//! `ResolveSession`: which session an identifier on the command line names.
//!
//! Within the call's profile, tried in order: an exact title, an id prefix of
//! at least 6 characters, a path. More than one match at a step is AMBIGUOUS
//! (exit 1); no match at all is NOT_FOUND (exit 2) (contract §0).

use super::args::Call;
use super::reply::{Out, Reply};
use super::state::{SimSession, SimState};

/// The index in `state.sessions` of the session the call's first positional
/// names; `not_found_suffix` ends the NOT_FOUND message.
pub(super) fn find(
    c: &Call,
    state: &SimState,
    out: Out,
    not_found_suffix: &str,
) -> Result<usize, Reply> {
    let Some(ident) = c.pos.first() else {
        let msg = "session ID or title is required";
        return Err(out.error(msg, "INVALID_OPERATION", 1, None));
    };
    if ident.is_empty() {
        let msg = "session identifier is required";
        return Err(out.error(msg, "NOT_FOUND", 2, None));
    }
    let mine: Vec<usize> = (0..state.sessions.len())
        .filter(|i| state.sessions[*i].profile() == c.profile)
        .collect();
    let matching = |test: &dyn Fn(&SimSession) -> bool| -> Vec<usize> {
        mine.iter()
            .copied()
            .filter(|i| test(&state.sessions[*i]))
            .collect()
    };
    let by_id = ident.chars().count() >= 6;
    let ambiguous = format!("'{ident}' matches multiple sessions:");
    let steps = [
        (
            matching(&|s| s.title == *ident),
            &ambiguous,
            "Use full ID or more specific title.",
        ),
        (
            matching(&|s| by_id && s.id.starts_with(ident.as_str())),
            &ambiguous,
            "Use full ID or more specific title.",
        ),
        (
            matching(&|s| s.path() == ident),
            &format!("path '{ident}' has multiple sessions:"),
            "Use title or ID to specify.",
        ),
    ];
    for (found, head, tail) in steps {
        match found[..] {
            [] => continue,
            [only] => return Ok(only),
            _ => {
                let names: Vec<String> = found
                    .iter()
                    .map(|i| {
                        let s = &state.sessions[*i];
                        let short: String = s.id.chars().take(12).collect();
                        format!("{} ({short})", s.title)
                    })
                    .collect();
                let msg = format!("{head}\n  - {}\n{tail}", names.join("\n  - "));
                return Err(out.error(&msg, "AMBIGUOUS", 1, None));
            }
        }
    }
    let msg = format!("session '{ident}' not found{not_found_suffix}");
    Err(out.error(&msg, "NOT_FOUND", 2, None))
}
