//! What the fleet's parsers promise of what they give, whatever the CLI
//! printed: a complaint is short and on one line, and nothing read holds
//! more than the bytes it was read from. The property tests of the list
//! reader and of the other answers check these. Test code only.

use crate::fleet::parse::Garbage;
use crate::fleet::session::{Live, Session};

/// The longest skip reason or garbage message a parser may produce.
pub(crate) const MAX_REASON_CHARS: usize = 300;

/// A parser's complaint: short and on one line.
pub(crate) fn garbage_within(g: &Garbage) -> bool {
    g.0.chars().count() <= MAX_REASON_CHARS && !g.0.contains('\n')
}

/// A session read from `n` bytes holds no field longer than them.
pub(crate) fn session_within(s: &Session, n: usize) -> bool {
    [&s.id, &s.title, &s.group, &s.profile, &s.path]
        .iter()
        .all(|f| f.len() <= n)
        && s.parent_session_id.as_ref().is_none_or(|p| p.len() <= n)
        && !s.id.is_empty()
}

/// A live state read from `n` bytes holds no more than them.
pub(crate) fn live_within(l: &Live, n: usize) -> bool {
    l.channels.len() <= n
        && l.channels.iter().all(|c| c.len() <= n)
        && [&l.substate, &l.auth_hold, &l.claude_session_id]
            .iter()
            .all(|f| f.as_ref().is_none_or(|s| s.len() <= n))
}
