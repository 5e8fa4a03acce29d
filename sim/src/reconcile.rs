//! What the pane host must do to make its children match the state: a pure
//! function of the state and the children it holds (`pane_host.rs` carries
//! the plan out).
//!
//! A live name (a named tmux session that exists, the server not `down`;
//! the first session of a name owns it) gets one child, replaced when its
//! session's `last_started` moved since the spawn (a start or restart that
//! keeps the name, pane-death.md §1). A name that leaves "live" has its
//! child killed, unless the session ignores SIGHUP and only its tmux
//! session was killed: that child is an orphan from then on. A child that
//! exited by itself is an agent that died, which takes its tmux session
//! with it (pane-death.md §2). A server `down` kills every child, orphans
//! too.

use std::collections::{BTreeMap, BTreeSet};

use super::state::{SimSession, SimState};

/// A child the host holds for a pane.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Held {
    /// The session's `last_started` when the child was spawned.
    pub started: Option<f64>,
    /// It has exited (and was reaped) without the host killing it.
    pub exited: bool,
}

/// The host's next step, by tmux name.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Plan {
    /// Orphans to kill: all when the server is down, else displaced ones.
    pub kill_orphans: Vec<String>,
    /// Panes whose child is killed (or, when it has exited, forgotten).
    pub kill: Vec<String>,
    /// Panes whose child leaves `panes` alive, for `orphans`.
    pub orphan: Vec<String>,
    /// Names that get a new child, with the `last_started` it stands for.
    pub spawn: Vec<(String, Option<f64>)>,
    /// Names whose pane process exited: their session's tmux is gone.
    pub gone: Vec<String>,
}

/// The plan for `st`, given the children held and the orphans still alive.
pub(super) fn reconcile(
    st: &SimState,
    panes: &BTreeMap<String, Held>,
    orphans: &BTreeSet<String>,
) -> Plan {
    let down = st.server_down();
    let mut live: BTreeMap<&str, Option<f64>> = BTreeMap::new();
    let hosted = |s: &&SimSession| !down && s.tmux_exists() && !s.tmux_session.is_empty();
    for s in st.sessions.iter().filter(hosted) {
        live.entry(s.tmux_session.as_str())
            .or_insert(s.last_started);
    }
    let mut plan = Plan::default();
    if down {
        plan.kill_orphans.extend(orphans.iter().cloned());
    }
    for (name, held) in panes {
        match live.remove(name.as_str()) {
            Some(started) if started == held.started => {
                if held.exited {
                    plan.kill.push(name.clone());
                    plan.gone.push(name.clone());
                }
            }
            Some(started) => {
                plan.kill.push(name.clone());
                plan.spawn.push((name.clone(), started));
            }
            None if !down && !held.exited && outlives_kill(st, name) => {
                if orphans.contains(name) {
                    plan.kill_orphans.push(name.clone());
                }
                plan.orphan.push(name.clone());
            }
            None => plan.kill.push(name.clone()),
        }
    }
    plan.spawn.extend(
        live.into_iter()
            .map(|(name, started)| (name.to_owned(), started)),
    );
    plan
}

/// The session named `name` ignores SIGHUP and only its tmux session was
/// killed: its agent lives on.
fn outlives_kill(st: &SimState, name: &str) -> bool {
    st.sessions.iter().any(|s| {
        s.tmux_session == name
            && s.ignores_sighup
            && s.was_started()
            && s.tmux_alive == Some(false)
            && s.raw_status() != "stopped"
    })
}
