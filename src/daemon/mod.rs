//! The daemon: starts the threads and runs the main loop.
//!
//! Thread A (the hooks watch: inotify, kqueue or a scan), thread B (the
//! safety-poll ticker) and thread C (the pane watch, which the tick hands
//! the critical sessions' tmux names through a [`PaneShare`]) feed one
//! bounded [`EventQueue`]; the main thread takes one batch at a time. The
//! rooms, in the order a batch meets them:
//! - `start.rs`: the lock, the CLI and its version (read once before the
//!   first tick, and again by its own thread, `version_reread.rs`, when
//!   due), then one `--once` pass or the daemon;
//! - `serve.rs`: the loop, which starts the trigger threads, and where a
//!   batch goes ([`crate::decide::verdict::route`]): a tick, a dead pane's check and
//!   short path, or hook checks;
//! - `observe.rs`: a tick's reads, told as outages when they fail;
//! - [`crate::decide::plan`] decides, and `apply.rs` carries the plan out:
//!   records, alerts, the stalls' transitions, and the restarts and resumes
//!   handed to the [`Jobs`] thread, whose endings come back to the next
//!   tick as values ([`crate::decide::restart::Outcome`]);
//! - `pass_summary.rs`: what a `--once` pass saw and did.
//!
//! The daemon's own plumbing lives here too: its log output (`logging.rs`)
//! and systemd's notify protocol (`sd_notify.rs`).

mod apply;
pub(crate) mod logging;
mod observe;
mod pass_summary;
pub(crate) mod sd_notify;
mod serve;
mod signals;
mod start;
mod version_reread;
mod watching;

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::act::context::Context;
use crate::act::job_worker::{self, Jobs};
use crate::act::patrols::Patrols;
use crate::config::{Config, PaneWatchMode, ResumeScope};
use crate::daemon::pass_summary::{Other, PassNotes};
use crate::daemon::sd_notify::SdNotify;
use crate::decide::memory::FleetMemory;
use crate::error::{Error, Result};
use crate::fleet::cache::Fleet;
use crate::fleet::deck::AgentDeck;
use crate::records::metrics::MetricsFiles;
use crate::sys::clock::Clock;
use crate::sys::shutdown::Shutdown;
use crate::tasks::followup::FollowUp;
use crate::triggers::event_queue::EventQueue;
use crate::triggers::pane_share::PaneShare;
pub(crate) use start::{run, run_with};

/// Flags shared by the daemon and `--once`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RunFlags {
    pub dry_run: bool,
    pub once: bool,
    pub verbose: bool,
    /// `--once --json`: the pass summary as one JSON object.
    pub json: bool,
}

/// The main loop's state and collaborators.
pub(crate) struct Daemon {
    ctx: Context,
    /// Where the main loop's work is carried out.
    workers: Workers,
    /// What wakes the main loop.
    triggers: Triggers,
    fleet: Fleet,
    sd_notify: SdNotify,
    metrics: MetricsFiles,
    /// What the decisions remember of the fleet from one look to the next.
    memory: FleetMemory,
    /// What a `--once` pass did, for its summary; `None` for the daemon.
    pass: Option<PassNotes>,
}

/// The workers the main loop hands its work to: restarts and resumes, the
/// patrols' errands, and the task follow-up after each tick.
struct Workers {
    jobs: Jobs,
    patrols: Patrols,
    tasks: FollowUp,
}

/// The trigger threads' side of the main loop: the queue they feed, what
/// the tick hands the pane watch (and what the watch covers), and their
/// handles.
struct Triggers {
    queue: Arc<EventQueue>,
    panes: Arc<PaneShare>,
    threads: Vec<JoinHandle<()>>,
}

impl Daemon {
    /// The daemon over `deck`: the shared context, the restart worker, the
    /// patrols and their workers, the task follow-up and the session cache.
    /// No trigger thread runs yet.
    pub(crate) fn new(
        cfg: &Config,
        flags: RunFlags,
        deck: Arc<dyn AgentDeck>,
        clock: Arc<dyn Clock>,
        shutdown: Shutdown,
    ) -> Result<Daemon> {
        let not_yet = match cfg.pane_watch {
            PaneWatchMode::Off => "PANE_WATCH=off",
            PaneWatchMode::Auto if flags.once => "not started for --once",
            PaneWatchMode::Auto => "starting",
        };
        let panes = Arc::new(PaneShare::new(not_yet));
        let queue = Arc::new(EventQueue::new(cfg.event_queue_maxsize));
        let mut ctx = Context::from_config(cfg, flags.dry_run, deck, clock, shutdown);
        ctx.panes = Some(panes.clone());
        ctx.queue = Some(queue.clone());
        let jobs = job_worker::spawn(ctx.clone())
            .map_err(|e| Error::runtime(format!("cannot start the restart thread: {e}")))?;
        let patrols = Patrols::spawn(ctx.clone())?;
        // A registry lock held by a stuck dispatcher must not stall the main loop.
        let patience = Some(Duration::from_secs(1));
        let (escalator, clock) = (ctx.escalator.clone(), ctx.clock.clone());
        let followup = FollowUp::from_config(cfg, flags.dry_run, escalator, clock, patience);
        let mut fleet = Fleet::new(cfg.autorestart_dir());
        if cfg.resume_scope == ResumeScope::All {
            fleet = fleet.with_claude();
        }
        fleet.reload_markers();
        Ok(Daemon {
            ctx,
            workers: Workers {
                jobs,
                patrols,
                tasks: followup,
            },
            triggers: Triggers {
                queue,
                panes,
                threads: Vec::new(),
            },
            fleet,
            sd_notify: SdNotify::from_config(cfg),
            metrics: MetricsFiles::default(),
            memory: FleetMemory {
                interrupted: start::interrupted_restarts(&cfg.watchdog_dir),
                ..FleetMemory::default()
            },
            pass: flags.once.then(PassNotes::default),
        })
    }

    /// Waits for started work, then stops every thread.
    pub(crate) fn finish(&mut self) {
        self.workers.patrols.finish();
        self.workers.jobs.finish();
        self.ctx.store.save(&self.ctx.state);
        self.ctx.escalator.drain();
        self.ctx.shutdown.trigger();
        for t in self.triggers.threads.drain(..) {
            let _ = t.join();
        }
        let stats = self.ctx.deck.stats();
        let calls: u64 = stats.calls.values().sum();
        let failures: u64 = stats.failures.values().sum();
        log::info!(
            "{calls} agent-deck calls, {failures} failed, {} queue drops{}",
            self.triggers.queue.drops(),
            if self.ctx.dry_run { " (dry-run)" } else { "" }
        );
        let by_design: u64 = stats.by_design.values().sum();
        if by_design > 0 {
            log::info!("{by_design} more agent-deck calls failed by design, as a death brings (a pane sample of a gone tmux session, a restart answered tmux_session_missing), not counted as failed");
        }
    }

    /// `--once`: prints what the pass saw and did.
    pub(super) fn print_pass_summary(
        &mut self,
        json: bool,
        others: Option<Vec<Other>>,
    ) -> Result<()> {
        let Some(mut notes) = self.pass.take() else {
            return Ok(());
        };
        notes.ended.extend(self.workers.jobs.ended());
        let (st, now) = (self.ctx.state.lock(), self.ctx.clock.now());
        let pass = pass_summary::pass(notes, &st, &self.fleet, self.ctx.dry_run, now, others);
        pass_summary::print(&pass, json)
    }

    /// `--once --verbose`: the sessions that are not restart-critical.
    pub(super) fn other_sessions(&self) -> Vec<Other> {
        pass_summary::others(self.ctx.deck.as_ref(), &self.fleet)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.ctx.shutdown.trigger();
        for t in self.triggers.threads.drain(..) {
            let _ = t.join();
        }
    }
}
