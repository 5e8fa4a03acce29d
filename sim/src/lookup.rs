//! `ResolveSession`: which session an identifier on the command line names.
//! Within the call's profile, tried in order: an exact title, an id prefix of
//! at least 6 characters, a path. More than one match at a step is AMBIGUOUS
//! (exit 1); no match at all is NOT_FOUND (exit 2) (contract §0).

use super::args::Call;
use super::reply::{Out, Reply};
use super::state::{SimSession, SimState};

/// One step of the resolution: whether a session matches the identifier.
type Matches<'a> = &'a dyn Fn(&SimSession) -> bool;

/// The index in `state.sessions` of the session the call's first positional
/// names; `not_found_suffix` ends the NOT_FOUND message.
pub(super) fn find(
    c: &Call,
    state: &SimState,
    out: Out,
    not_found_suffix: &str,
) -> Result<usize, Reply> {
    let Some(ident) = c.pos.first() else {
        return Err(out.invalid("session ID or title is required"));
    };
    if ident.is_empty() {
        let msg = "session identifier is required";
        return Err(out.error(msg, "NOT_FOUND", 2, None));
    }
    let by_id = ident.chars().count() >= 6;
    let many = format!("'{ident}' matches multiple sessions:");
    let many_paths = format!("path '{ident}' has multiple sessions:");
    let be_specific = "Use full ID or more specific title.";
    let use_title = "Use title or ID to specify.";
    let steps: [(Matches, &str, &str); 3] = [
        (&|s| s.title == *ident, &many, be_specific),
        (&|s| by_id && s.id.starts_with(&**ident), &many, be_specific),
        (&|s| s.path() == ident, &many_paths, use_title),
    ];
    for (test, head, tail) in steps {
        let found: Vec<usize> = (0..state.sessions.len())
            .filter(|i| state.sessions[*i].profile() == c.profile && test(&state.sessions[*i]))
            .collect();
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
