//! What the main loop's decisions remember of the fleet from one look to
//! the next, beside the restart book (which is saved, and shared with the
//! workers): one value that only the main loop holds. Plain data: the
//! rules that read and change it are where their question is answered.

use std::collections::{BTreeMap, BTreeSet};

use crate::decide::verdict::hook_pacing::HookPacing;
use crate::decide::verdict::Episodes;
use crate::sys::say_once::SayOnce;

#[derive(Debug, Default)]
pub(crate) struct FleetMemory {
    /// Each critical session's tmux name, as the last readable rows gave
    /// it, or the restart that brought it back.
    pub tmux_names: BTreeMap<String, String>,
    /// Each session's error episode: its hold, recorded once, and whether
    /// it showed no evidence that it ever ran.
    pub episodes: Episodes,
    /// Critical sessions that had died at the last full tick: the cascade
    /// count a kernel-proven death adds itself to.
    pub last_died: usize,
    /// The restart-critical sessions last named (id → title), `None`
    /// before the fleet was first listed.
    pub watching: Option<BTreeMap<String, String>>,
    /// The sessions in `RESUME_SCOPE` last seen at work (`running`, not at
    /// an empty prompt), and those last seen `running` at an empty prompt,
    /// so that a turn's end shows.
    pub working: BTreeSet<String>,
    pub running_idle: BTreeSet<String>,
    /// The sessions in `RESUME_SCOPE` seen at all since the watchdog
    /// started: one seen at rest for the first time gets a turn end's look.
    pub looked: BTreeSet<String>,
    /// Sessions whose pane showed a full context while their last message
    /// could not be read (id → when first seen): a second look 30 s on
    /// decides (SPEC §15).
    pub full_pane: BTreeMap<String, f64>,
    /// When a turn's end last showed a `/clear` or a compaction someone
    /// else made, by session: no proactive clear within a minute of it.
    pub reset_seen: BTreeMap<String, f64>,
    /// What the main loop says once, by kind: the outage of each read a
    /// tick makes (by what is read), agent-deck's store locked.
    pub said: SayOnce<String, f64>,
    /// The restarts a stopped watchdog left with no outcome on record (id →
    /// when), named once the first tick has read their sessions.
    pub interrupted: BTreeMap<String, f64>,
    /// When hooks may be checked and a rescan is owed.
    pub hook_pacing: HookPacing,
    /// Every tmux name the last map handed the pane watch knew; `None`
    /// before the first.
    pub tmux_known: Option<BTreeSet<String>>,
    /// The critical sessions whose pane the pane watch last found a bare
    /// shell (SPEC §14), less those restarted since.
    pub bare_shells: BTreeSet<String>,
    /// Every tmux session name the pane watch's last listing showed; `None`
    /// before one came.
    pub tmux_listed: Option<BTreeSet<String>>,
}
