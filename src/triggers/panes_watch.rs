//! Thread C, the pane watch (`panes-watch`): learns of a restart-critical
//! session's death the moment its pane process exits.
//!
//! It lists agent-deck's tmux server ([`crate::fleet::panes`]), holds a
//! kernel handle ([`crate::sys::pid_watch`]) on each covered critical
//! pane's process and on the server, and on any wake-up, and every
//! `PANE_LIST_INTERVAL_S` (the backstop: an agent that ignores SIGHUP
//! outlives its session; new sessions; pids replaced by others' restarts),
//! lists again. A previously covered session whose name is gone from the
//! listing or whose pane is dead is sent into the queue; all that one
//! listing finds dead go in one message (a kill-server is one event). The
//! same name with a new live pid is a respawn: re-armed, never an event.
//!
//! Against pid reuse a pid is kept armed only if a second listing, taken
//! after the handle was opened, still shows the same live pid under the same
//! name and the pid's parent is the tmux server. A covered pane whose
//! process has been a bare shell for `PANE_LIST_INTERVAL_S` (SPEC §14: an
//! interactive shell with no child, where the agent should run; checked
//! each round in the process table, no call) is sent up the queue, as is
//! each round's listing, and the fleet is asked for a look. The critical
//! sessions and their tmux names come from the main loop ([`PaneMap`]). It
//! only reports; it never calls agent-deck, never writes to tmux and never
//! signals. Where it cannot work it says why once (and in [`WatchStatus`])
//! and the daemon polls as without it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::fleet::panes::{ListError, Listing, PaneSource, Proof};
use crate::sys::pid_watch::{ArmError, PidWatch, Woken};
use crate::sys::process_table::{bare_shell, parent_pid, PROC_DIR};
use crate::sys::shutdown::Shutdown;
use crate::triggers::event_queue::{EventQueue, Trigger};
use crate::triggers::pane_share::{PaneMap, PaneShare, WatchStatus};

/// The prefix agent-deck gives every tmux session it creates.
const DECK_PREFIX: &str = "agentdeck_";
/// How long after a first exit more exits are waited for, so that one
/// kill-server is one listing and one message.
const SETTLE: Duration = Duration::from_millis(15);
/// At most this many settle waits in a row.
const MAX_SETTLE: u32 = 8;
/// How soon tmux is asked again when the kernel saw a pid exit that tmux
/// still shows alive (it has not reaped it yet), and how many times.
const REAP_RETRY: Duration = Duration::from_millis(25);
const MAX_REAP_RETRIES: u32 = 40;
/// How often the server is looked for while none runs.
const NO_SERVER_RETRY: Duration = Duration::from_secs(1);
/// How often the first map is looked for (the first tick runs at start).
const NO_MAP_RETRY: Duration = Duration::from_millis(100);

/// The kernel side of the watch: a handle per pid that fires on exit.
pub(crate) trait Kernel {
    fn arm(&mut self, pid: u32) -> Result<(), ArmError>;
    fn disarm(&mut self, pid: u32);
    fn wait(&mut self, timeout: Duration) -> Woken;
}

impl Kernel for PidWatch {
    fn arm(&mut self, pid: u32) -> Result<(), ArmError> {
        PidWatch::arm(self, pid)
    }
    fn disarm(&mut self, pid: u32) {
        PidWatch::disarm(self, pid);
    }
    fn wait(&mut self, timeout: Duration) -> Woken {
        PidWatch::wait(self, timeout)
    }
}

/// A covered critical session: the name and pid it is armed on.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Covered {
    name: String,
    pid: u32,
}

/// What a listing round found.
#[derive(Debug, Default, PartialEq, Eq)]
struct Round {
    dead: BTreeMap<String, Proof>,
    /// The fleet needs a look: an `agentdeck_*` name no list row carried,
    /// or a covered pane first found a bare shell for the patience.
    look: bool,
    /// The kernel saw a covered pid exit that tmux still shows alive.
    unreaped: bool,
    /// No safety tick has named the critical sessions yet.
    no_map: bool,
}

/// Why a round could not be had: the thread stops watching.
#[derive(Debug)]
struct Fatal(String);

/// The watch's state between wake-ups.
pub(crate) struct PaneWatch<S, K> {
    source: S,
    kernel: K,
    /// The parent of a pid (the reuse guard), `None` when unreadable.
    parent: fn(u32) -> Option<u32>,
    /// Whether a pid is a bare shell (see [`bare_shell`]).
    bare_shell: fn(u32) -> bool,
    /// How long a pane must stay a bare shell to count as one: a pane
    /// agent-deck just spawned is one until it types the agent's command.
    patience: Duration,
    /// Each covered session whose pane is a bare shell: its pid, and since when.
    bare_since: BTreeMap<String, (u32, Instant)>,
    /// The bare shells already told, less those the main loop has since
    /// restarted.
    told: BTreeSet<String>,
    /// The bare shells the main loop's map held at the last round.
    held: BTreeSet<String>,
    share: Arc<PaneShare>,
    queue: Arc<EventQueue>,
    covered: BTreeMap<String, Covered>,
    server: Option<u32>,
    /// Pids the kernel said exited since the last round.
    exited: BTreeSet<u32>,
    /// `agentdeck_*` names already asked about.
    asked: BTreeSet<String>,
    /// The reason last said, so each is said once.
    said: Option<String>,
}

impl<S: PaneSource, K: Kernel> PaneWatch<S, K> {
    pub(crate) fn new(
        source: S,
        kernel: K,
        parent: fn(u32) -> Option<u32>,
        share: Arc<PaneShare>,
        queue: Arc<EventQueue>,
    ) -> PaneWatch<S, K> {
        PaneWatch {
            source,
            kernel,
            parent,
            bare_shell: |_| false,
            patience: Duration::ZERO,
            bare_since: BTreeMap::new(),
            told: BTreeSet::new(),
            held: BTreeSet::new(),
            share,
            queue,
            covered: BTreeMap::new(),
            server: None,
            exited: BTreeSet::new(),
            asked: BTreeSet::new(),
            said: None,
        }
    }

    /// Watches until shutdown; `every` is the backstop listing.
    fn run(&mut self, every: Duration, shutdown: &Shutdown) {
        let mut retries = 0;
        while !shutdown.is_set() {
            let round = match self.round() {
                Ok(r) => r,
                Err(Fatal(why)) => return self.stop_watching(&why),
            };
            retries = if round.unreaped { retries + 1 } else { 0 };
            let wait = if round.unreaped && retries <= MAX_REAP_RETRIES {
                REAP_RETRY
            } else if round.no_map {
                NO_MAP_RETRY
            } else if self.server.is_none() {
                every.min(NO_SERVER_RETRY)
            } else {
                every
            };
            if !self.wait(wait) {
                return;
            }
        }
    }

    /// Waits for an exit, shutdown or `timeout`; false on shutdown. After an
    /// exit it waits a moment for more (one kill-server, one round).
    fn wait(&mut self, timeout: Duration) -> bool {
        let mut wait = timeout;
        for _ in 0..=MAX_SETTLE {
            match self.kernel.wait(wait) {
                Woken::Shutdown => return false,
                Woken::TimedOut => return true,
                Woken::Exited(pids) => self.exited.extend(pids),
            }
            wait = SETTLE;
        }
        true
    }

    /// One listing round: deaths sent, arms renewed, status published.
    fn round(&mut self) -> Result<Round, Fatal> {
        let Some(map) = self.share.map() else {
            self.publish("waiting for the first safety poll to name the critical sessions");
            return Ok(Round {
                no_map: true,
                ..Round::default()
            });
        };
        // A shell the main loop no longer holds bare was restarted: told again.
        let before = std::mem::replace(&mut self.held, map.bare.clone());
        self.told
            .retain(|id| !before.contains(id) || map.bare.contains(id));
        let mut round = Round::default();
        match self.source.list() {
            Ok(listing) => {
                let names = listing.panes.keys().cloned().collect();
                self.queue.send(Trigger::Listed(names));
                self.diff(&map, &listing, &mut round);
                self.arm_new(&map, &listing)?;
                round.look = self.unknown_names(&map, &listing);
            }
            Err(e @ (ListError::NoServer | ListError::NoTmux(_))) => {
                self.queue.send(Trigger::Listed(BTreeSet::new()));
                self.all_gone(&mut round);
                self.publish(&e.to_string());
            }
            Err(e @ ListError::Failed(_)) => self.publish(&e.to_string()),
        }
        round.look |= self.bare_shells();
        // An exit tmux has not caught up with keeps its proof for the next round.
        let kept: BTreeSet<u32> = self.covered.values().map(|c| c.pid).collect();
        self.exited.retain(|p| kept.contains(p));
        if !round.dead.is_empty() {
            let dead: Vec<String> = round
                .dead
                .iter()
                .map(|(id, proof)| format!("{id} ({})", proof.as_str()))
                .collect();
            log::info!(
                "pane watch: {} dead; checking with agent-deck",
                dead.join(", ")
            );
            self.queue.send(Trigger::PanesDied(round.dead.clone()));
        }
        if round.look {
            self.queue.send(Trigger::Rescan);
        }
        Ok(round)
    }

    /// Sorts the covered sessions by what `listing` shows: kept, re-mapped
    /// or respawned (dropped, to be armed again), or dead.
    fn diff(&mut self, map: &PaneMap, listing: &Listing, round: &mut Round) {
        for (id, c) in std::mem::take(&mut self.covered) {
            if map.critical.get(&id) != Some(&c.name) {
                self.kernel.disarm(c.pid);
                continue;
            }
            match listing.panes.get(&c.name) {
                Some(p) if !p.dead && p.pid == c.pid => {
                    round.unreaped |= self.exited.contains(&c.pid);
                    self.covered.insert(id, c);
                }
                // Same name, new live pid: a respawn, armed again below.
                Some(p) if !p.dead => self.kernel.disarm(c.pid),
                _ => self.bury(id, &c, round),
            }
        }
        if let Some(old) = self.server.take_if(|old| listing.server != Some(*old)) {
            self.kernel.disarm(old);
        }
    }

    /// Sends the covered panes that have been bare shells for the patience
    /// up the queue; true when one is new.
    fn bare_shells(&mut self) -> bool {
        let now = Instant::now();
        let before = std::mem::take(&mut self.bare_since);
        for (id, c) in &self.covered {
            if (self.bare_shell)(c.pid) {
                let kept = before.get(id).filter(|(pid, _)| *pid == c.pid);
                let since = kept.map_or(now, |(_, t)| *t);
                self.bare_since.insert(id.clone(), (c.pid, since));
            }
        }
        let proven: BTreeSet<String> = (self.bare_since.iter())
            .filter(|(_, (_, since))| now.duration_since(*since) >= self.patience)
            .map(|(id, _)| id.clone())
            .collect();
        let new: Vec<&String> = proven.difference(&self.told).collect();
        for id in &new {
            log::info!("pane watch: the pane of {id} is a bare shell: its agent is gone; asking for a fleet look");
        }
        let news = !new.is_empty();
        self.told.clone_from(&proven);
        self.queue.send(Trigger::BareShells(proven));
        news
    }

    /// Every covered session is dead: the server is gone (or tmux is).
    fn all_gone(&mut self, round: &mut Round) {
        for (id, c) in std::mem::take(&mut self.covered) {
            self.bury(id, &c, round);
        }
        if let Some(old) = self.server.take() {
            self.kernel.disarm(old);
        }
    }

    /// Disarms `c` and counts it dead; the kernel's proof when it saw the exit.
    fn bury(&mut self, id: String, c: &Covered, round: &mut Round) {
        self.kernel.disarm(c.pid);
        let proof = if self.exited.contains(&c.pid) {
            Proof::ProcessExited
        } else {
            Proof::GoneFromListing
        };
        round.dead.insert(id, proof);
    }

    /// Arms the critical panes `listing` shows live that are not covered,
    /// and the server, then keeps each only if a second listing passes the
    /// reuse guard.
    fn arm_new(&mut self, map: &PaneMap, listing: &Listing) -> Result<(), Fatal> {
        let Some(server) = listing.server else {
            self.publish_covered(
                map,
                "no critical session's pane is on the watched tmux server",
            );
            return Ok(());
        };
        let mut fresh: Vec<(String, Covered)> = Vec::new();
        if self.server.is_none() && self.arm_one(server)? {
            self.server = Some(server);
        }
        for (id, name) in &map.critical {
            if self.covered.contains_key(id) {
                continue;
            }
            let Some(p) = listing.panes.get(name).filter(|p| !p.dead) else {
                continue;
            };
            if self.exited.contains(&p.pid) || !self.arm_one(p.pid)? {
                continue;
            }
            let c = Covered {
                name: name.clone(),
                pid: p.pid,
            };
            fresh.push((id.clone(), c));
        }
        if !fresh.is_empty() {
            let again = self.source.list().unwrap_or_default();
            for (id, c) in fresh {
                if self.guard_holds(&again, &c, server) {
                    self.covered.insert(id, c);
                } else {
                    log::debug!("pane watch: pid {} of {id} did not pass the reuse guard; looked at again next round", c.pid);
                    self.kernel.disarm(c.pid);
                }
            }
        }
        self.publish_covered(map, "not on the watched tmux server or not running");
        Ok(())
    }

    /// The reuse guard: the second listing shows the same live pid under
    /// the same name on the same server, and the pid's parent is it.
    fn guard_holds(&self, again: &Listing, c: &Covered, server: u32) -> bool {
        let same = again
            .panes
            .get(&c.name)
            .is_some_and(|p| !p.dead && p.pid == c.pid);
        same && again.server == Some(server) && (self.parent)(c.pid) == Some(server)
    }

    /// Arms `pid`: true when armed, false when it is gone or this one pid
    /// failed; an unsupported kernel ends the watch.
    fn arm_one(&mut self, pid: u32) -> Result<bool, Fatal> {
        match self.kernel.arm(pid) {
            Ok(()) => Ok(true),
            Err(ArmError::Gone) => Ok(false),
            Err(ArmError::Unsupported(e)) => Err(Fatal(e)),
            Err(ArmError::Failed(e)) => {
                log::debug!("pane watch: cannot watch pid {pid} ({e}); the listing looks again");
                Ok(false)
            }
        }
    }

    /// Whether `listing` holds an agent-deck name that no list row carried
    /// and that was not asked about before. Not while a restart of ours is
    /// under way: the name it gives comes back with its ending.
    fn unknown_names(&mut self, map: &PaneMap, listing: &Listing) -> bool {
        // A name that left the server is asked about again when it is back
        // (a stopped critical session started again).
        self.asked.retain(|n| listing.panes.contains_key(n));
        if !map.restarting.is_empty() {
            return false;
        }
        let mut unknown = false;
        for name in listing.panes.keys() {
            if name.starts_with(DECK_PREFIX)
                && !map.known.contains(name)
                && self.asked.insert(name.clone())
            {
                log::debug!("pane watch: tmux session {name} is no session the last poll read; asking for a fleet look");
                unknown = true;
            }
        }
        unknown
    }

    /// Publishes how many critical sessions are covered; `why` is why
    /// some are not.
    fn publish_covered(&mut self, map: &PaneMap, why: &str) {
        let (n, of) = (self.covered.len(), map.critical.len());
        let why_not = if of == 0 {
            Some("no restart-critical session to watch".to_owned())
        } else if n < of {
            Some(format!("{n} of {of} critical sessions covered ({why})"))
        } else {
            None
        };
        self.said = None;
        self.share.publish(WatchStatus {
            armed: of > 0 && n == of,
            covered: n,
            why_not,
        });
    }

    /// Not armed for `why`: said once until it changes, and published.
    fn publish(&mut self, why: &str) {
        if self.said.as_deref() != Some(why) {
            log::info!("pane watch not armed: {why}; the safety poll runs at its own interval");
            self.said = Some(why.to_owned());
        }
        self.share.publish(WatchStatus::not_armed(why));
    }

    /// The watch cannot work here at all: said once, and published; the
    /// thread then ends.
    fn stop_watching(&mut self, why: &str) {
        for c in std::mem::take(&mut self.covered).into_values() {
            self.kernel.disarm(c.pid);
        }
        self.share.turn_off(why);
    }
}

/// Starts thread C, or says why it cannot run (`share` then tells it).
pub(crate) fn spawn(
    source: impl PaneSource + 'static,
    every: Duration,
    share: Arc<PaneShare>,
    queue: Arc<EventQueue>,
    shutdown: Shutdown,
) -> std::io::Result<Option<JoinHandle<()>>> {
    let kernel = match PidWatch::new(shutdown.clone()) {
        Ok(k) => k,
        Err(e) => {
            share.turn_off(&e.to_string());
            return Ok(None);
        }
    };
    let parent = |pid| parent_pid(PROC_DIR.as_ref(), pid);
    let mut watch = PaneWatch::new(source, kernel, parent, share, queue);
    watch.bare_shell = |pid| bare_shell(PROC_DIR.as_ref(), pid);
    watch.patience = every;
    std::thread::Builder::new()
        .name("panes-watch".into())
        .spawn(move || watch.run(every, &shutdown))
        .map(Some)
}

#[cfg(test)]
mod tests;
