//! The profile-store WARNING of agent-deck 1.16.14 and later (#2323): when
//! both the legacy `~/.agent-deck` and the XDG data root hold profiles and
//! no marker pins one, every CLI process prints one `WARNING: …` line on
//! stderr first and answers as usual (CHANGELOG 1.16.14). Here under
//! `"both_store_roots": true`; the counts come from the state and the paths
//! are the defaults under `~` (the real CLI prints them absolute).

use super::state::SimState;
use crate::release::Release;

/// The release that brought the stable store-root rule and its WARNING.
const STORE_ROOT_RULE: Release = Release::new(1, 16, 14);

/// The stderr line a call prints first, if any.
pub(super) fn warning(st: &SimState) -> Option<String> {
    if !st.both_store_roots || st.release() < STORE_ROOT_RULE {
        return None;
    }
    let (legacy, xdg) = ("~/.agent-deck", "~/.local/share/agent-deck");
    let n = st.sessions.len();
    Some(format!(
        "WARNING: profile stores exist under both {legacy} ({n} sessions, active: no migration \
marker, legacy is the pre-migration default) and {xdg} (0 sessions, ignored); to stay on \
legacy move {xdg}/profiles aside; if the XDG copy is the one you want, run \
'agent-deck migrate-paths --force'\n"
    ))
}
