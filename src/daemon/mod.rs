//! The daemon: starts the threads and runs the main loop.
//!
//! Thread A (the hooks watch: inotify, kqueue or a scan), thread B (the
//! safety-poll ticker) and thread C (the pane watch, which the tick hands
//! the critical sessions' tmux names through a [`PaneShare`]) feed one
//! bounded [`EventQueue`]; the main thread
//! consumes it under the state mutex, reads the fleet, runs the gates and
//! hands cleared restarts to the [`Restarter`] thread. agent-deck's
//! version is read once before the first tick, and again by its own thread
//! (`version_reread.rs`) when due. `--once` is one tick of the same code
//! followed by waiting for the work it started and printing what it did
//! (`pass_summary.rs`). The daemon's own plumbing lives here too: its log
//! output (`logging.rs`) and systemd's notify protocol (`sd_notify.rs`).

mod executor;
mod fleet_list;
mod hook_pacing;
pub(crate) mod logging;
mod pass_summary;
mod safety_poll;
mod sd_notify;
mod signals;
mod version_reread;
mod watching;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::act::context::Context;
use crate::act::job::Proven;
use crate::act::patrols::Patrols;
use crate::act::restart::{self, Restarter};
use crate::config::Config;
use crate::config::PaneWatch as PaneWatchMode;
use crate::daemon::pass_summary::{Did, Pass, PassNotes};
use crate::daemon::sd_notify::SdNotify;
use crate::decide::route::{route, Death, DeathPath, Deaths, Route};
use crate::decide::verdict::{Episodes, Errored};
use crate::decide::{cascade, refusal};
use crate::error::{Error, Result};
use crate::fleet::cache::Fleet;
use crate::fleet::deck::{AgentDeck, Cli, ReadOnly};
use crate::fleet::panes::{Proof, Tmux};
use crate::fleet::session::{Live, Status};
use crate::records::instance_lock;
use crate::records::metrics::MetricsFiles;
use crate::sys::clock::{Clock, SystemClock};
use crate::sys::shutdown::Shutdown;
use crate::tasks::each_tick::TickFollowUp;
use crate::tasks::followup::FollowUp;
use crate::triggers::event_queue::{Batch, EventQueue};
use crate::triggers::hook_file::{self, HookStatus};
use crate::triggers::pane_share::PaneShare;
use crate::triggers::panes_watch;
use crate::triggers::{ticker, watch};
use hook_pacing::HookPacing;

/// Flags shared by the daemon and `--once`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RunFlags {
    pub dry_run: bool,
    pub once: bool,
    pub verbose: bool,
    /// `--once --json`: the pass summary as one JSON object.
    pub json: bool,
}

/// Runs the daemon (or one pass with `--once`) until done or signalled.
pub(crate) fn run(cfg: Config, flags: RunFlags) -> Result<()> {
    let shutdown = Shutdown::new()
        .map_err(|e| Error::runtime(format!("cannot create the shutdown wake-up pipe: {e}")))?;
    let reload = Arc::new(AtomicBool::new(false));
    let signals = signals::Signals::install(shutdown.clone(), reload.clone())?;
    let result = run_with(&cfg, flags, shutdown, &reload);
    signals.close();
    result
}

/// The daemon with the caller's shutdown token (signals, or the demo).
pub(crate) fn run_with(
    cfg: &Config,
    flags: RunFlags,
    shutdown: Shutdown,
    reload: &AtomicBool,
) -> Result<()> {
    let dir = cfg.autorestart_dir();
    crate::sys::fs::create_private_dirs(&dir)
        .map_err(|e| Error::runtime(format!("cannot create {}: {e}", dir.display())))?;
    let me = instance_lock::Holder {
        pid: std::process::id(),
        dry_run: flags.dry_run,
        once: flags.once,
        started_at: Some(crate::sys::clock::unix_now()),
    };
    let _lock = instance_lock::acquire(&cfg.watchdog_dir, &me)?;
    remove_stale_temps(cfg);
    let cli = Arc::new(Cli::new(
        cfg.bin.clone(),
        cfg.subprocess_timeout,
        shutdown.clone(),
    ));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let deck: Arc<dyn AgentDeck> = if flags.dry_run {
        Arc::new(ReadOnly(cli.clone()))
    } else {
        cli.clone()
    };
    log::info!(
        "agent-deck-watchdog {} starting: dry_run={} once={} cli={} hooks={}",
        env!("CARGO_PKG_VERSION"),
        flags.dry_run,
        flags.once,
        cfg.bin.display(),
        cfg.hooks_dir.display()
    );
    log_pane_env(cfg);
    // Before the first tick: the pane sample's flags follow it.
    cli.read_version(clock.now());
    let mut daemon = Daemon::new(cfg, flags, deck, clock.clone(), shutdown.clone())?;
    if flags.once {
        daemon.tick();
        // Read while the CLI may still be called: finish() shuts it down.
        let others = flags.verbose.then(|| daemon.other_sessions());
        daemon.finish();
        daemon.print_pass_summary(flags.json, others)?;
    } else {
        let reread = version_reread::spawn(cli, clock, shutdown)?;
        daemon.threads.push(reread);
        daemon.serve(cfg, reload)?;
    }
    log::info!("agent-deck-watchdog stopped");
    Ok(())
}

/// Says once which variables of a tmux client or an agent-deck pane were
/// set and are not handed to agent-deck, tmux or any other child.
fn log_pane_env(cfg: &Config) {
    if !cfg.pane_env.is_empty() {
        log::info!(
            "not handing {} to agent-deck or any other child: they belong to the tmux client or agent-deck pane this daemon was started from",
            cfg.pane_env.join(", ")
        );
    }
    if cfg.claude_config_dir_from_pane {
        log::warn!(
            "CLAUDE_CONFIG_DIR looks inherited from an agent-deck pane (AGENTDECK_INSTANCE_ID is set too); it is kept, so every session a restart spawns uses that Claude account: start the watchdog outside agent-deck if that is not meant"
        );
    }
}

/// Removes the temp files a killed run left behind (the instance lock is
/// held, so none of them belongs to a live writer; the registry's are
/// removed under its own lock).
fn remove_stale_temps(cfg: &Config) {
    use crate::records::daemon_status::DAEMON_STATUS_FILE;
    use crate::records::{metrics::METRICS_FILE, state_file::STATE_FILE};
    use crate::tasks::registry::RegistryFile;
    let mut removed = [STATE_FILE, METRICS_FILE, DAEMON_STATUS_FILE]
        .iter()
        .map(|f| crate::sys::fs::remove_stale_temps(&cfg.watchdog_dir.join(f)))
        .sum::<usize>();
    let registry = RegistryFile::impatient(&cfg.task_timers_file, Duration::from_secs(1));
    match registry.remove_stale_temps() {
        Ok(n) => removed += n,
        Err(e) => log::warn!("temp files next to the task registry stay until the next start: {e}"),
    }
    if removed > 0 {
        log::info!("removed {removed} temp file(s) left by an earlier run that was killed");
    }
}

/// The main loop's state and collaborators.
pub(crate) struct Daemon {
    ctx: Context,
    restarter: Restarter,
    queue: Arc<EventQueue>,
    fleet: Fleet,
    sd_notify: SdNotify,
    metrics: MetricsFiles,
    patrols: Patrols,
    /// The task follow-up, after each tick.
    tasks: TickFollowUp,
    /// When hooks may be checked and a rescan is owed.
    hook_pacing: HookPacing,
    /// What the tick hands the pane watch, and what the watch covers.
    panes: Arc<PaneShare>,
    /// Each critical session's tmux name, as the last readable rows gave it.
    tmux_names: BTreeMap<String, String>,
    /// Each session's error episode: its hold, recorded once, and whether
    /// it showed no evidence that it ever ran.
    episodes: Episodes,
    /// Critical sessions that had died at the last full tick: the cascade
    /// count a kernel-proven death adds itself to.
    last_died: usize,
    /// The restart-critical sessions last named (id → title), `None`
    /// before the fleet was first listed ([`watching`]).
    watching: Option<BTreeMap<String, String>>,
    /// What a `--once` pass did, for its summary; `None` for the daemon.
    pass: Option<PassNotes>,
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
        let mut ctx = Context::from_config(cfg, flags.dry_run, deck, clock, shutdown);
        ctx.panes = Some(panes.clone());
        if flags.once {
            ctx.records.keep_last();
        }
        let restarter = restart::spawn(ctx.clone())
            .map_err(|e| Error::runtime(format!("cannot start the restart thread: {e}")))?;
        let patrols = Patrols::spawn(ctx.clone())?;
        // A registry lock held by a stuck dispatcher must not stall the main loop.
        let patience = Some(Duration::from_secs(1));
        let (escalator, clock) = (ctx.escalator.clone(), ctx.clock.clone());
        let followup = FollowUp::from_config(cfg, flags.dry_run, escalator, clock, patience);
        let mut fleet = Fleet::new(cfg.autorestart_dir());
        fleet.reload_markers();
        Ok(Daemon {
            ctx,
            restarter,
            queue: Arc::new(EventQueue::new(cfg.event_queue_maxsize)),
            fleet,
            sd_notify: SdNotify::from_config(cfg),
            metrics: MetricsFiles::default(),
            patrols,
            tasks: TickFollowUp::new(followup),
            hook_pacing: HookPacing::default(),
            panes,
            tmux_names: BTreeMap::new(),
            episodes: Episodes::default(),
            last_died: 0,
            watching: None,
            pass: flags.once.then(PassNotes::default),
            threads: Vec::new(),
        })
    }

    /// The long-running loop.
    fn serve(&mut self, cfg: &Config, reload: &AtomicBool) -> Result<()> {
        let watcher = watch::spawn(
            cfg.hooks_dir.clone(),
            self.queue.clone(),
            self.ctx.shutdown.clone(),
            cfg.watch_backend,
        )
        .map_err(|e| Error::runtime(format!("cannot start the hooks-watch thread: {e}")))?;
        self.threads.push(watcher);
        self.spawn_pane_watch(cfg)?;
        let every = ticker::Intervals {
            safety: cfg.safety_poll_interval,
            armed: cfg.armed_poll_interval,
        };
        self.threads.push(ticker::spawn(
            every,
            self.panes.clone(),
            self.queue.clone(),
            self.ctx.shutdown.clone(),
        )?);
        let every = cfg.safety_poll_interval.as_secs_f64();
        log::info!("armed: watching hooks and polling every {every:.1}s");
        self.sd_notify.ready();
        loop {
            let now = self.ctx.clock.now();
            let (retry, revive) = {
                let st = self.ctx.state.lock();
                let revive = cascade::revive_tick_in(&st, self.hook_pacing.last_tick(), now);
                (refusal::next_retry(&st, now), revive)
            };
            let idle = self.hook_pacing.next_wakeup(now);
            let idle = [retry, revive]
                .into_iter()
                .flatten()
                .fold(idle, |d, s| d.min(crate::sys::clock::clamped(s)));
            let wait = self.sd_notify.max_sleep(idle);
            let Some(batch) = self.queue.next_batch(&self.ctx.shutdown, wait) else {
                break;
            };
            if reload.swap(false, Ordering::SeqCst) {
                log::info!(
                    "SIGHUP: re-reading the opt-in markers and re-creating the watchdog directory"
                );
                if let Err(e) = crate::sys::fs::create_private_dirs(&cfg.autorestart_dir()) {
                    log::warn!("cannot create {} ({e}); records and state cannot be written until it exists", cfg.autorestart_dir().display());
                }
                self.fleet.reload_markers();
            }
            // A wake-up with nothing to do changes nothing worth saving.
            if self.handle(batch) {
                self.ctx.store.save(&self.ctx.state);
            }
            self.sd_notify.alive();
        }
        self.sd_notify.stopping();
        self.finish();
        Ok(())
    }

    /// Thread C, unless `PANE_WATCH=off` (then the daemon polls as without
    /// it, and says so once).
    fn spawn_pane_watch(&mut self, cfg: &Config) -> Result<()> {
        if cfg.pane_watch == PaneWatchMode::Off {
            log::info!("PANE_WATCH=off: deaths are seen by hooks and the safety poll only");
            return Ok(());
        }
        let tmux = Tmux::for_config(cfg, self.ctx.shutdown.clone());
        let thread = panes_watch::spawn(
            tmux,
            cfg.pane_list_interval,
            self.panes.clone(),
            self.queue.clone(),
            self.ctx.shutdown.clone(),
        )
        .map_err(|e| Error::runtime(format!("cannot start the panes-watch thread: {e}")))?;
        self.threads.extend(thread);
        Ok(())
    }

    /// One batch of triggers, where [`route`] sends it; false when there was
    /// nothing to do.
    fn handle(&mut self, batch: Batch) -> bool {
        let now = self.ctx.clock.now();
        let due = self.hook_pacing.due(now);
        // A retry after a freshness refusal is looked at as a hook is.
        let retries = refusal::take_due(&mut self.ctx.state.lock(), now);
        let (revive, deaths) = {
            let st = self.ctx.state.lock();
            let deaths = Deaths {
                episode: st.cascade.is_some(),
                last_died: self.last_died,
                in_flight: st.in_flight.len(),
                threshold: self.ctx.limits.cascade_threshold,
            };
            (
                cascade::revive_tick_in(&st, self.hook_pacing.last_tick(), now),
                deaths,
            )
        };
        let tick = self.hook_pacing.tick_due(batch.tick, batch.rescan, now) || revive == Some(0.0);
        match route(&batch, tick, &due, &retries, deaths) {
            Route::Idle => return false,
            Route::Tick { first } => {
                if let Some(death) = first {
                    self.pane_died(&death);
                }
            }
            Route::PanesDied(ids) => log::info!(
                "pane watch: {} panes died at once ({}); polling the fleet now",
                ids.len(),
                ids.join(", ")
            ),
            Route::Check { death, checks } => match death.and_then(|d| self.pane_died(&d)) {
                Some(false) => return true,
                Some(true) => {}
                None => {
                    let Some(id) = checks
                        .iter()
                        .find(|(id, retry)| self.check_finds_error(id, *retry, true).is_some())
                        .map(|(id, _)| id)
                    else {
                        return true;
                    };
                    log::info!("hook for {id}: in error; polling the fleet now");
                }
            },
        }
        self.tick();
        true
    }

    /// The pane watch saw the pane of `death.id` die: the hook's check, but
    /// a hook file's "running" (written before the death) is no answer, and
    /// it is neither deferred nor paced (the watch tells each death once, so
    /// it never comes back as a hook check). `None` when it is not in
    /// `error`; else whether its [`DeathPath`] polls the fleet now.
    fn pane_died(&mut self, death: &Death) -> Option<bool> {
        let id = &death.id;
        log::debug!("pane of {id} died ({}); checking its status", death.proof);
        let shown = self.check_finds_error(id, true, false)?;
        match death.path {
            DeathPath::Short => {
                self.short_path(id, shown);
                return Some(false);
            }
            DeathPath::CascadeCheck { dead } => log::info!(
                "pane of {id} died with {dead} other critical session(s) known dead: polling the fleet for the cascade check"
            ),
            DeathPath::Poll => {}
        }
        log::info!("pane of {id} died: in error; polling the fleet now");
        Some(true)
    }

    /// SPEC §5.3's short path for a death the kernel proved, which `shown`
    /// (the one `session show`) found in error: the holds and gates run on
    /// the daemon's own state, with no full tick, no list and no further
    /// call, and the restart job carries the proof and the show.
    fn short_path(&mut self, id: &str, shown: Live) {
        let Some(s) = self.fleet.get(id).cloned() else {
            return;
        };
        log::info!(
            "pane of {id} died (its process exited) and agent-deck says error; deciding on its restart without a poll"
        );
        let errored = self.judge_errored(&s, &shown, true);
        let decided = self.decide(&s, Some(&shown), Some(errored));
        let proven = (errored == Errored::Died).then_some(Proven {
            proof: Proof::ProcessExited,
            shown,
        });
        self.carry_out(&s, &decided, proven);
    }

    /// The status check of `id` (`retry`: a deferred check coming back).
    /// `from_hook`: a hook file for it was written, and one that says the
    /// agent is alive ends the check without a call, and the per-session gap
    /// paces it. The show, when it says `error`: the fleet then needs a
    /// full look.
    fn check_finds_error(&mut self, id: &str, retry: bool, from_hook: bool) -> Option<Live> {
        if self.fleet.needs_refresh_for(id) && !self.refresh_fleet_if_stale() && !retry {
            // The list was read less than a second ago, maybe before the
            // session existed: come back once it may be read again. A retry
            // goes on: whatever read the list since then came after its hook.
            self.hook_pacing.defer(id, self.ctx.clock.now());
            return None;
        }
        let Some(s) = self.fleet.get(id).cloned() else {
            log::debug!("hook for {id}, not a critical session of any profile; ignored");
            return None;
        };
        if !self.fleet.is_critical(&s) || self.ctx.state.lock().in_flight.contains(id) {
            return None;
        }
        // The agent itself just reported it is running or waiting: alive, no call needed.
        let hook = from_hook.then(|| hook_file::read_hook(&self.ctx.cfg.hooks_dir, id));
        let live = match hook.flatten().map(|h| h.status) {
            Some(HookStatus::Running) => Some("running"),
            Some(HookStatus::Waiting) => Some("waiting"),
            _ => None,
        };
        if let Some(live) = live {
            log::debug!("hook for {id}: the agent reports {live}; no status check");
            return None;
        }
        if from_hook && !self.hook_pacing.may_check(id, self.ctx.clock.now()) {
            return None;
        }
        self.sd_notify.alive();
        match self.ctx.deck.show(&s.profile, &s.id) {
            Ok(live) if live.status() == Status::Error => return Some(live),
            Ok(live) => {
                let decided = self.decide(&s, Some(&live), None);
                self.carry_out(&s, &decided, None);
            }
            Err(e) => log::warn!(
                "hook for {id}: status unreadable ({e}); the safety poll will look again"
            ),
        }
        None
    }

    /// `--once`: prints what the pass saw and did (see [`pass_summary`]).
    fn print_pass_summary(
        &mut self,
        json: bool,
        others: Option<Vec<pass_summary::Other>>,
    ) -> Result<()> {
        let Some(notes) = self.pass.take() else {
            return Ok(());
        };
        let records = self.ctx.records.last_restart_records();
        let critical = notes
            .critical
            .into_iter()
            .map(|(s, status, verdict)| {
                let record = records.get(&s.id);
                let record = record.map(|r| (&r.action, r.reason.as_deref(), r.dry_run));
                let did = Did::of_verdict(&verdict, record);
                pass_summary::Critical {
                    because: self.fleet.critical_reason(&s).unwrap_or_default(),
                    title: s.title,
                    id: s.id,
                    profile: s.profile,
                    status,
                    did,
                }
            })
            .collect();
        let pass = Pass {
            dry_run: self.ctx.dry_run,
            listed: notes.listed,
            critical,
            others,
        };
        let out = if json {
            pass_summary::json(&pass)
        } else {
            pass_summary::text(&pass)
        };
        crate::sys::fs::print_stdout(&out)
            .map_err(|e| Error::runtime(format!("cannot write the pass summary to stdout: {e}")))
    }

    /// `--once --verbose`: every listed session that is not
    /// restart-critical, with its status: one more `list --all` and one
    /// `-p P list` per profile holding one (`list --all` prints no status).
    fn other_sessions(&self) -> Vec<pass_summary::Other> {
        let mut others: Vec<pass_summary::Other> = Vec::new();
        let fleet = &self.fleet;
        let listed = self.ctx.deck.list_all(&mut |row| {
            let s = row.session();
            if fleet.critical_reason(&s).is_none() {
                others.push(pass_summary::Other {
                    title: s.title,
                    id: s.id,
                    profile: s.profile,
                    status: None,
                });
            }
        });
        if let Err(e) = listed {
            log::warn!(
                "cannot list the other sessions ({e}); the summary names only the critical ones"
            );
        }
        let profiles: BTreeSet<String> = others.iter().map(|o| o.profile.clone()).collect();
        for profile in profiles {
            let mut status = BTreeMap::new();
            let read = self.ctx.deck.list_profile(&profile, &mut |row| {
                status.insert(row.id.to_string(), row.status);
            });
            if let Err(e) = read {
                log::warn!("statuses of profile '{profile}' are unreadable ({e}); its other sessions show as unread");
            }
            for o in others.iter_mut().filter(|o| o.profile == profile) {
                o.status = status.get(&o.id).copied().flatten();
            }
        }
        others
    }

    /// Waits for started work, then stops every thread.
    pub(crate) fn finish(&mut self) {
        self.patrols.finish();
        self.restarter.finish();
        self.ctx.store.save(&self.ctx.state);
        self.ctx.escalator.drain();
        self.ctx.shutdown.trigger();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let stats = self.ctx.deck.stats();
        let calls: u64 = stats.calls.values().sum();
        let failures: u64 = stats.failures.values().sum();
        log::info!(
            "{calls} agent-deck calls, {failures} failed, {} queue drops{}",
            self.queue.drops(),
            if self.ctx.dry_run { " (dry-run)" } else { "" }
        );
        let by_design: u64 = stats.by_design.values().sum();
        if by_design > 0 {
            log::info!("{by_design} more agent-deck calls failed by design, as a death brings (a pane sample of a gone tmux session, a restart answered tmux_session_missing), not counted as failed");
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.ctx.shutdown.trigger();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::safety_poll::tests::daemon;
    use super::*;
    use crate::act::context::tests::{actions, config};
    use crate::fleet::fake::{live, FakeDeck, Script};
    use crate::records::audit::{LivenessRecord, LIVENESS_LOG};
    use crate::records::read_back::read_lines;
    use crate::triggers::event_queue::Batch;

    const COND: &str = "3f9c2a1b-1755891234";
    const OLD: &str = "agentdeck_conductor-ops_3f9c2a1b";

    /// One conductor in profile `default`, listed running under tmux `OLD`.
    fn fleet() -> Script {
        let row = format!(
            r#"[{{"id":"{COND}","title":"conductor-ops","profile":"default","path":"/srv","status":"running","tmux_session":"{OLD}"}}]"#
        );
        Script {
            list_all: Some(row.clone()),
            lists: [("default".to_owned(), row)].into(),
            ..Script::default()
        }
    }

    fn died(proof: Proof) -> Batch {
        Batch {
            panes: [(COND.to_owned(), proof)].into(),
            ..Batch::default()
        }
    }

    /// A daemon that has ticked once over [`fleet`] (the conductor ran),
    /// its calls forgotten, the next shows `shows`.
    fn ticked(home: &std::path::Path, shows: &[Option<Live>]) -> (Daemon, Arc<FakeDeck>) {
        let deck = Arc::new(FakeDeck::new(fleet()));
        let mut d = daemon(home, deck.clone());
        d.tick();
        deck.calls.lock().clear();
        deck.script.lock().shows = shows.iter().cloned().collect();
        (d, deck)
    }

    #[test]
    fn a_kernel_proven_death_is_restarted_from_one_show_with_no_poll_and_no_sample() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut d, deck) = ticked(tmp.path(), &[live(Status::Error), live(Status::Running)]);
        assert!(d.handle(died(Proof::ProcessExited)));
        d.finish();
        let calls = deck.calls.lock().clone();
        let restart = calls
            .iter()
            .position(|c| c.starts_with("restart "))
            .unwrap();
        assert_eq!(
            calls[..restart],
            [format!("show {COND}")],
            "one show between the death and the restart call"
        );
        assert_eq!(deck.count("output-pane"), 0);
        assert_eq!(actions(tmp.path()), ["restart", "restarted"]);
        let dir = config(tmp.path()).watchdog_dir;
        let rec = &read_lines::<LivenessRecord>(&dir.join(LIVENESS_LOG))[0];
        assert_eq!(
            (rec.proof, rec.gap_s, rec.pane.sampled),
            (Some(Proof::ProcessExited), 0.0, false)
        );
    }

    #[test]
    fn a_kernel_proven_death_that_comes_with_a_tick_still_takes_the_short_path() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut d, deck) = ticked(tmp.path(), &[live(Status::Error), live(Status::Running)]);
        let batch = Batch {
            tick: true,
            ..died(Proof::ProcessExited)
        };
        assert!(d.handle(batch));
        d.finish();
        assert_eq!(
            deck.calls.lock()[0],
            format!("show {COND}"),
            "the death first"
        );
        assert_eq!(deck.count("list-all"), 1, "and the tick after it");
        assert_eq!(deck.count("output-pane"), 0);
        let dir = config(tmp.path()).watchdog_dir;
        let rec = &read_lines::<LivenessRecord>(&dir.join(LIVENESS_LOG))[0];
        assert_eq!(rec.proof, Some(Proof::ProcessExited));
        assert_eq!(actions(tmp.path()), ["restart", "restarted"]);
    }

    #[test]
    fn a_death_only_a_listing_saw_keeps_the_poll_and_the_two_samples() {
        let tmp = tempfile::tempdir().unwrap();
        let shows = [
            live(Status::Error),
            live(Status::Error),
            live(Status::Error),
            live(Status::Running),
        ];
        let (mut d, deck) = ticked(tmp.path(), &shows);
        deck.script.lock().lists.insert(
            "default".into(),
            format!(r#"[{{"id":"{COND}","title":"conductor-ops","profile":"default","status":"error"}}]"#),
        );
        assert!(d.handle(died(Proof::GoneFromListing)));
        d.finish();
        assert_eq!(deck.count("list-all"), 1, "a tick");
        assert_eq!(deck.count("output-pane"), 2, "{:?}", deck.calls.lock());
        let dir = config(tmp.path()).watchdog_dir;
        let rec = &read_lines::<LivenessRecord>(&dir.join(LIVENESS_LOG))[0];
        assert_eq!(rec.proof, None);
    }

    #[test]
    fn a_kernel_proven_death_agent_deck_calls_stopped_is_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut d, deck) = ticked(tmp.path(), &[live(Status::Stopped)]);
        d.handle(died(Proof::ProcessExited));
        d.finish();
        assert_eq!(*deck.calls.lock(), [format!("show {COND}")]);
        assert!(actions(tmp.path()).is_empty());
    }

    #[test]
    fn the_gates_of_a_kernel_proven_death_run_on_the_daemon_s_state_with_no_call() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut d, deck) = ticked(tmp.path(), &[live(Status::Error)]);
        // Its restart budget is spent.
        let now = d.ctx.clock.now();
        d.ctx.state.lock().book(COND).restarts = vec![now; d.ctx.limits.rate_max];
        d.handle(died(Proof::ProcessExited));
        d.finish();
        assert_eq!(*deck.calls.lock(), [format!("show {COND}")]);
        assert_eq!(deck.count("restart"), 0);
        // Never seen to run, no hook, no claude_session_id: never started.
        let tmp = tempfile::tempdir().unwrap();
        let (mut d, deck) = ticked(tmp.path(), &[live(Status::Error)]);
        d.ctx.state.lock().ran.clear();
        d.handle(died(Proof::ProcessExited));
        d.finish();
        assert_eq!(
            *deck.calls.lock(),
            [format!("show {COND}")],
            "its show is not repeated"
        );
        let recs = crate::act::context::tests::restart_records(tmp.path());
        assert_eq!(recs[0].reason.as_deref(), Some("never_started"));
    }

    #[test]
    fn a_kernel_proven_death_that_would_make_a_cascade_is_polled_for() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut d, deck) = ticked(tmp.path(), &[live(Status::Error)]);
        d.last_died = d.ctx.limits.cascade_threshold - 1;
        assert!(d.handle(died(Proof::ProcessExited)));
        assert_eq!(deck.count("list-all"), 1, "{:?}", deck.calls.lock());
        // Deaths the pane watch already sent on their way count too.
        let tmp = tempfile::tempdir().unwrap();
        let (mut d, deck) = ticked(tmp.path(), &[live(Status::Error)]);
        let others = (1..d.ctx.limits.cascade_threshold).map(|i| format!("other-{i}"));
        d.ctx.state.lock().in_flight.extend(others);
        assert!(d.handle(died(Proof::ProcessExited)));
        assert_eq!(deck.count("list-all"), 1, "{:?}", deck.calls.lock());
    }

    #[test]
    fn the_show_after_a_restart_hands_the_pane_watch_the_new_tmux_name() {
        let tmp = tempfile::tempdir().unwrap();
        let renamed = Live {
            tmux_session: Some("agentdeck_conductor-ops_9e8d7c6b".into()),
            ..live(Status::Running).unwrap()
        };
        let (mut d, _deck) = ticked(tmp.path(), &[live(Status::Error), Some(renamed)]);
        assert_eq!(d.panes.map().unwrap().critical[COND], OLD);
        d.handle(died(Proof::ProcessExited));
        d.finish();
        let map = d.panes.map().unwrap();
        assert_eq!(map.critical[COND], "agentdeck_conductor-ops_9e8d7c6b");
        assert!(map.known.contains("agentdeck_conductor-ops_9e8d7c6b"));
    }
}
