//! The daemon: wires the threads together and runs the main loop.
//!
//! Thread A (inotify) and thread B (the safety-poll ticker) feed one bounded
//! [`EventQueue`]; the main thread consumes it, reads the fleet, runs the
//! gates and hands cleared restarts to the [`Restarter`] thread. `--once` is
//! one tick of the same code followed by waiting for the work it started.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;

use crate::act::errands;
use crate::act::patrols::{self, Patrols, Snapshot};
use crate::act::restart::{self, Restarter};
use crate::alert::escalate::{Escalator, EscalatorParts};
use crate::alert::telegram::Telegram;
use crate::cli::RunFlags;
use crate::config::Config;
use crate::decide::gates::{self, CascadeNews, Gate, Hold, Limits};
use crate::error::{Error, Result};
use crate::fleet::cache::Fleet;
use crate::fleet::deck::{AgentDeck, Cli, ReadOnly};
use crate::fleet::session::{self, Live, Session, Status};
use crate::ops::sd_notify::SdNotify;
use crate::records::audit::Records;
use crate::records::instance_lock;
use crate::records::metrics;
use crate::records::state_file::Store;
use crate::sys::clock::{Clock, SystemClock};
use crate::sys::shutdown::Shutdown;
use crate::tasks::cli;
use crate::tasks::followup::FollowUp;
use crate::triggers::inotify;
use crate::triggers::queue::{Batch, EventQueue, Trigger};

/// A hook-triggered status check for one session runs at most this often.
const HOOK_CHECK_GAP: f64 = 1.0;
/// Rescans (after queue overflow or a re-armed watch) run at most this often.
const MIN_RESCAN_GAP: Duration = Duration::from_secs(1);

/// Runs the daemon (or one pass with `--once`) until done or signalled.
pub fn run(cfg: Config, flags: RunFlags) -> Result<()> {
    let shutdown = Shutdown::new()
        .map_err(|e| Error::runtime(format!("cannot create the shutdown eventfd: {e}")))?;
    let reload = Arc::new(AtomicBool::new(false));
    let signals = Signals::install(shutdown.clone(), reload.clone())?;
    let result = run_with(&cfg, flags, shutdown, &reload);
    signals.close();
    result
}

/// The daemon with the caller's shutdown token (signals, or the demo).
pub fn run_with(
    cfg: &Config,
    flags: RunFlags,
    shutdown: Shutdown,
    reload: &AtomicBool,
) -> Result<()> {
    std::fs::create_dir_all(cfg.autorestart_dir()).map_err(|e| {
        Error::runtime(format!(
            "cannot create {}: {e}",
            cfg.autorestart_dir().display()
        ))
    })?;
    let _lock = instance_lock::acquire(&cfg.watchdog_dir)?;
    let cli: Arc<dyn AgentDeck> = Arc::new(Cli::new(
        cfg.bin.clone(),
        cfg.subprocess_timeout,
        shutdown.clone(),
    ));
    let deck: Arc<dyn AgentDeck> = if flags.dry_run {
        Arc::new(ReadOnly(cli))
    } else {
        cli
    };
    log::info!(
        "agent-deck-watchdog {} starting: dry_run={} once={} cli={} hooks={}",
        env!("CARGO_PKG_VERSION"),
        flags.dry_run,
        flags.once,
        cfg.bin.display(),
        cfg.hooks_dir.display()
    );
    let mut daemon = Daemon::new(cfg, flags, deck, Arc::new(SystemClock), shutdown)?;
    if flags.once {
        daemon.tick();
        daemon.finish();
    } else {
        daemon.serve(cfg, reload)?;
    }
    log::info!("agent-deck-watchdog stopped");
    Ok(())
}

/// The main loop's state and collaborators.
pub struct Daemon {
    flags: RunFlags,
    deck: Arc<dyn AgentDeck>,
    state: Arc<Mutex<crate::decide::book::State>>,
    store: Arc<Store>,
    limits: Limits,
    escalator: Arc<Escalator>,
    restarter: Restarter,
    queue: Arc<EventQueue>,
    shutdown: Shutdown,
    clock: Arc<dyn Clock>,
    fleet: Fleet,
    records: Arc<Records>,
    sd_notify: SdNotify,
    watchdog_dir: std::path::PathBuf,
    hooks_dir: std::path::PathBuf,
    metrics_warned: bool,
    patrols: Patrols,
    followup: FollowUp,
    /// The last task follow-up error, logged once until it changes.
    followup_error: Option<String>,
    /// When each session was last checked because of a hook event.
    hook_checked: BTreeMap<String, f64>,
    /// Hook checks postponed by the per-session throttle.
    deferred: BTreeSet<String>,
    /// A rescan was asked for and has not run yet.
    rescan_owed: bool,
    /// The gate that last held each session, so a hold is recorded once.
    gate_skips: BTreeMap<String, Hold>,
    last_tick: Option<std::time::Instant>,
    threads: Vec<JoinHandle<()>>,
}

impl Daemon {
    pub fn new(
        cfg: &Config,
        flags: RunFlags,
        deck: Arc<dyn AgentDeck>,
        clock: Arc<dyn Clock>,
        shutdown: Shutdown,
    ) -> Result<Daemon> {
        let limits = Limits::from_config(cfg);
        let store = Arc::new(Store::new(&cfg.watchdog_dir, !flags.dry_run));
        let state = Arc::new(Mutex::new(store.load(&limits, clock.now())));
        let records = Arc::new(Records::new(&cfg.watchdog_dir));
        let escalator = Arc::new(Escalator::new(EscalatorParts {
            records: records.clone(),
            state: state.clone(),
            limits: limits.clone(),
            clock: clock.clone(),
            dry_run: flags.dry_run,
            script: cfg.watchdog_dir.join("escalate.sh"),
            script_timeout: cfg.subprocess_timeout,
            messenger: Telegram::from_config(cfg, shutdown.clone()),
            shutdown: shutdown.clone(),
            store: Some(store.clone()),
        }));
        let restarter = restart::spawn(restart::Context {
            deck: deck.clone(),
            state: state.clone(),
            limits: limits.clone(),
            settings: restart::Settings {
                dry_run: flags.dry_run,
                gap: cfg.liveness_confirm_gap,
                restart_verify: cfg.restart_verify,
                start_verify: cfg.start_verify,
                continuity_message: cfg.continuity_message.clone(),
                prompt_resume: cfg.prompt_resume_profiles.clone(),
                prompt_resume_timeout: cfg.subprocess_timeout.max(Duration::from_secs(120)),
            },
            records: records.clone(),
            escalator: escalator.clone(),
            store: store.clone(),
            clock: clock.clone(),
            shutdown: shutdown.clone(),
        })
        .map_err(|e| Error::runtime(format!("cannot start the restart thread: {e}")))?;
        let errands = errands::spawn(errands::Runner {
            deck: deck.clone(),
            records: records.clone(),
            clock: clock.clone(),
            dry_run: flags.dry_run,
        })
        .map_err(|e| Error::runtime(format!("cannot start the errands thread: {e}")))?;
        let patrols = Patrols::new(
            patrols::Settings::from_config(cfg),
            deck.clone(),
            state.clone(),
            clock.clone(),
            errands,
        );
        // A registry lock held by a stuck dispatcher must not stall the main loop.
        let patience = Some(Duration::from_secs(1));
        let followup = cli::follow_up(
            cfg,
            flags.dry_run,
            escalator.clone(),
            clock.clone(),
            patience,
        );
        let mut fleet = Fleet::new(cfg.autorestart_dir());
        fleet.reload_markers();
        Ok(Daemon {
            flags,
            deck,
            state,
            store,
            limits,
            escalator,
            restarter,
            queue: Arc::new(EventQueue::new(cfg.event_queue_maxsize)),
            shutdown,
            clock,
            fleet,
            records,
            sd_notify: SdNotify::from_config(cfg),
            watchdog_dir: cfg.watchdog_dir.clone(),
            hooks_dir: cfg.hooks_dir.clone(),
            metrics_warned: false,
            patrols,
            followup,
            followup_error: None,
            hook_checked: BTreeMap::new(),
            deferred: BTreeSet::new(),
            rescan_owed: false,
            gate_skips: BTreeMap::new(),
            last_tick: None,
            threads: Vec::new(),
        })
    }

    /// The long-running loop.
    fn serve(&mut self, cfg: &Config, reload: &AtomicBool) -> Result<()> {
        match inotify::spawn(
            cfg.hooks_dir.clone(),
            self.queue.clone(),
            self.shutdown.clone(),
        ) {
            Ok(watcher) => self.threads.push(watcher),
            // The safety poll still sees every error, only slower.
            Err(e) => log::error!(
                "inotify is unavailable ({e}); running on the safety poll alone, every {:.1}s",
                cfg.safety_poll_interval.as_secs_f64()
            ),
        }
        self.threads.push(spawn_ticker(
            cfg.safety_poll_interval,
            self.queue.clone(),
            self.shutdown.clone(),
        )?);
        log::info!(
            "armed: watching hooks and polling every {:.1}s",
            cfg.safety_poll_interval.as_secs_f64()
        );
        self.sd_notify.ready();
        loop {
            let idle = self.next_wakeup();
            let wait = self.sd_notify.max_sleep(idle);
            let Some(batch) = self.queue.next_batch(&self.shutdown, wait) else {
                break;
            };
            if reload.swap(false, Ordering::SeqCst) {
                log::info!(
                    "SIGHUP: re-reading the opt-in markers and re-creating the watchdog directory"
                );
                if let Err(e) = std::fs::create_dir_all(cfg.autorestart_dir()) {
                    log::warn!("cannot create {} ({e}); records and state cannot be written until it exists", cfg.autorestart_dir().display());
                }
                self.fleet.reload_markers();
            }
            self.handle(batch);
            self.store.save(&self.state);
            self.sd_notify.alive();
        }
        self.sd_notify.stopping();
        self.finish();
        Ok(())
    }

    fn handle(&mut self, batch: Batch) {
        // A flood turns into a rescan per batch; one full poll a second is enough.
        self.rescan_owed |= batch.rescan;
        let rescan_due =
            self.rescan_owed && self.last_tick.is_none_or(|t| t.elapsed() >= MIN_RESCAN_GAP);
        if batch.tick || rescan_due {
            self.rescan_owed = false;
            self.tick();
        }
        for id in batch.hooks {
            self.on_hook(&id);
        }
        let now = self.clock.now();
        let due: Vec<String> = self
            .deferred
            .iter()
            .filter(|id| {
                self.hook_checked
                    .get(*id)
                    .is_none_or(|t| now - t >= HOOK_CHECK_GAP)
            })
            .cloned()
            .collect();
        for id in due {
            self.deferred.remove(&id);
            self.on_hook(&id);
        }
    }

    /// How long the main loop may wait for events before something of its own
    /// is due: a deferred hook check, an owed rescan.
    fn next_wakeup(&self) -> Duration {
        let now = self.clock.now();
        let mut wait = Duration::from_secs(1);
        for id in &self.deferred {
            let due = self
                .hook_checked
                .get(id)
                .map_or(0.0, |t| t + HOOK_CHECK_GAP - now);
            wait = wait.min(crate::sys::clock::clamped(due.max(0.01)));
        }
        if self.rescan_owed {
            wait = wait.min(Duration::from_millis(200));
        }
        wait
    }

    /// One safety-poll pass: 1 + P CLI calls when the fleet is healthy.
    pub fn tick(&mut self) {
        let started = std::time::Instant::now();
        self.last_tick = Some(started);
        self.fleet.reload_markers();
        self.sd_notify.alive();
        let fleet_readable = match self.fleet.refresh(self.deck.as_ref()) {
            Ok(()) => true,
            Err(e) => {
                log::warn!(
                    "session list is unreadable ({e}); using the last known fleet of {} sessions",
                    self.fleet.len()
                );
                false
            }
        };
        let critical = self.fleet.critical();
        let mut profiles = Fleet::profiles(&critical);
        profiles.extend(Patrols::profiles_needed(self.fleet.all()));
        let mut live: BTreeMap<String, Live> = BTreeMap::new();
        let mut unreadable = BTreeSet::new();
        for profile in profiles {
            // A hung call may take SUBPROCESS_TIMEOUT_S; keep systemd's watchdog fed between calls.
            self.sd_notify.alive();
            match self.deck.list_profile(&profile) {
                Ok(list) => live.extend(list.into_iter().map(|(s, l)| (s.id, l))),
                Err(e) => {
                    log::warn!("statuses of profile '{profile}' are unreadable ({e}); its sessions count as unknown this tick");
                    unreadable.insert(profile);
                }
            }
        }
        let errored = critical
            .iter()
            .filter(|s| live.get(&s.id).is_some_and(|l| l.status() == Status::Error))
            .count();
        // A partial view would undercount: cascade episodes are judged on full ticks only.
        if unreadable.is_empty() {
            self.watch_cascade(errored);
        }
        for s in &critical {
            if let Some(l) = live.get(&s.id) {
                self.observe(s, l.status());
            }
        }
        if fleet_readable {
            self.forget_gone();
        }
        gates::prune_state(&mut self.state.lock(), &self.limits, self.clock.now());
        let snap = Snapshot {
            sessions: self.fleet.all().collect(),
            critical: &critical,
            live: &live,
            unreadable: &unreadable,
        };
        self.patrols
            .run(&snap, &self.restarter, &mut self.sd_notify);
        self.follow_up_tasks();
        self.report(critical.len(), errored, started.elapsed().as_secs_f64());
    }

    /// Sessions agent-deck no longer lists leave the state and the caches.
    fn forget_gone(&mut self) {
        let fleet = &self.fleet;
        {
            let mut st = self.state.lock();
            let in_flight = st.in_flight.clone();
            let keep = |id: &String| fleet.get(id).is_some() || in_flight.contains(id);
            st.sessions.retain(|id, _| keep(id));
            st.waiting.retain(|id, _| keep(id));
            st.poller_restarted.retain(|id, _| keep(id));
        }
        self.hook_checked.retain(|id, _| fleet.get(id).is_some());
        self.gate_skips.retain(|id, _| fleet.get(id).is_some());
    }

    /// `metrics.prom` and the systemd status line, after each tick.
    fn report(&mut self, critical: usize, errored: usize, tick_seconds: f64) {
        let now = self.clock.now();
        let (breaker_open, in_window) = {
            let st = self.state.lock();
            let window = self.limits.rate_window;
            let restarts = st
                .sessions
                .values()
                .map(|b| b.restarts.iter().filter(|t| now - **t < window).count())
                .sum::<usize>();
            (st.breaker_open_until > now, restarts)
        };
        let sample = metrics::Sample {
            tally: self.records.tally(),
            cli: self.deck.stats(),
            queue_drops: self.queue.drops(),
            tick_seconds,
            sessions_seen: self.fleet.len(),
            sessions_critical: critical,
            sessions_errored: errored,
            breaker_open,
            now,
        };
        match metrics::write(&self.watchdog_dir, &sample) {
            Ok(()) => self.metrics_warned = false,
            Err(e) if !self.metrics_warned => {
                log::warn!(
                    "cannot write {} ({e}); metrics are stale until it works",
                    metrics::METRICS_FILE
                );
                self.metrics_warned = true;
            }
            Err(_) => {}
        }
        let breaker = if breaker_open {
            "; circuit breaker OPEN"
        } else {
            ""
        };
        self.sd_notify.status(&format!(
            "{critical} critical sessions, {errored} in error; {in_window} restarts in the window{breaker}"
        ));
    }

    /// SPEC §8: the task follow-up pass, when a registry exists.
    fn follow_up_tasks(&mut self) {
        if !self.followup.registry.path.exists() {
            return;
        }
        match self.followup.pass() {
            Ok(summary) => {
                self.followup_error = None;
                if !summary.redispatched.is_empty() {
                    log::info!(
                        "task follow-up re-dispatched {}",
                        summary.redispatched.join(", ")
                    );
                }
            }
            Err(e) => {
                let msg = e.to_string();
                if self.followup_error.as_deref() != Some(msg.as_str()) {
                    log::warn!("task follow-up skipped: {msg}");
                    self.followup_error = Some(msg);
                }
            }
        }
    }

    /// Settle-and-revive: many critical sessions in error at once hold every
    /// restart for the settle time, with one alert per episode.
    fn watch_cascade(&mut self, errored: usize) {
        let now = self.clock.now();
        let news = gates::observe_cascade(&mut self.state.lock(), &self.limits, errored, now);
        let wait = self.limits.cascade_wait;
        match news {
            CascadeNews::Detected => {
                let msg = format!(
                    "{errored} critical sessions in error simultaneously — waiting {wait:.0}s to stabilize, then reviving them one at a time"
                );
                self.escalator
                    .escalate("cascade-detected", &msg, None, true);
            }
            CascadeNews::Reminder => {
                let msg = format!("{errored} critical sessions are still in error after the cascade; they need a human");
                self.escalator
                    .escalate("cascade-detected", &msg, None, true);
            }
            CascadeNews::Cleared => {
                log::info!("cascade over: {errored} critical sessions in error")
            }
            CascadeNews::Quiet => {}
        }
    }

    /// Acts on a status seen for a critical session.
    fn observe(&mut self, s: &Session, status: Status) {
        let now = self.clock.now();
        gates::note_status(
            &mut self.state.lock(),
            s,
            status.as_str(),
            status.is_healthy(),
            now,
        );
        if status != Status::Error {
            self.gate_skips.remove(&s.id);
        }
        if status == Status::Error {
            self.consider(s);
        }
    }

    /// A hook file for `id` was written.
    fn on_hook(&mut self, id: &str) {
        if self.fleet.get(id).is_none() {
            self.fleet.refresh_if_stale(self.deck.as_ref());
        }
        let Some(s) = self.fleet.get(id).cloned() else {
            log::debug!("hook for {id}, which no profile lists; ignored");
            return;
        };
        if !self.fleet.is_critical(&s) || self.state.lock().in_flight.contains(id) {
            return;
        }
        // The agent itself just reported it is running or waiting: alive, no call needed.
        if let Some(live @ ("running" | "waiting")) =
            inotify::hook_status(&self.hooks_dir, id).as_deref()
        {
            log::debug!("hook for {id}: the agent reports {live}; no status check");
            return;
        }
        let now = self.clock.now();
        if self
            .hook_checked
            .get(id)
            .is_some_and(|t| now - t < HOOK_CHECK_GAP)
        {
            self.deferred.insert(id.to_owned());
            return;
        }
        self.hook_checked.insert(id.to_owned(), now);
        self.sd_notify.alive();
        match self.deck.show(&s.profile, &s.id) {
            // A dead pane may be one of many (a tmux server died): look at the
            // whole fleet now, so a cascade is seen before any restart starts.
            Ok(live) if live.status() == Status::Error => {
                log::info!("hook for {id}: in error; polling the fleet now");
                self.tick();
            }
            Ok(live) => self.observe(&s, live.status()),
            Err(e) => log::warn!(
                "hook for {id}: status unreadable ({e}); the safety poll will look again"
            ),
        }
    }

    /// Runs the gates for an errored critical session and, if they pass,
    /// queues its restart.
    fn consider(&mut self, s: &Session) {
        let now = self.clock.now();
        let verdict = {
            let mut st = self.state.lock();
            let g = gates::gate(&mut st, &self.limits, &s.id, now);
            let slot = (g == Gate::Go).then(|| gates::reserve(&mut st, &self.limits, &s.id, now));
            (g, slot)
        };
        match verdict {
            (Gate::Go, Some(slot)) => {
                // Saved before the restart can run, so a crash right after still counts it.
                self.store.save(&self.state);
                log::info!("{} ({}) is in error; queueing a restart", s.id, s.title);
                self.restarter.submit(restart::RestartJob {
                    session: s.clone(),
                    escalation_critical: session::is_escalation_critical(s),
                    slot: Some(slot),
                    kind: restart::Kind::Revive,
                });
            }
            (Gate::BudgetSpent, _) => {
                self.record_gate_skip(s, Hold::BudgetSpent);
                let msg = format!(
                    "Session {} ({}) keeps crashing — needs human attention",
                    s.title, s.id
                );
                if self.escalator.escalate(
                    "rate-limit",
                    &msg,
                    Some(&s.id),
                    session::is_escalation_critical(s),
                ) {
                    log::warn!(
                        "{} used its {} restarts in {:.0}s; no more restarts until the window moves",
                        s.id, self.limits.rate_max, self.limits.rate_window
                    );
                }
            }
            (Gate::Skip(why), _) => {
                log::debug!("{} is in error but not restarted now: {why}", s.id);
                self.record_gate_skip(s, why);
            }
            (Gate::Go, None) => {}
        }
    }

    /// One `restart.log` line when a session starts being held by a gate (not
    /// one per tick while it stays held).
    fn record_gate_skip(&mut self, s: &Session, why: Hold) {
        // A queued restart or its own quiet time is the normal course, not a hold.
        if matches!(why, Hold::InFlight | Hold::Cooldown)
            || self.gate_skips.insert(s.id.clone(), why) == Some(why)
        {
            return;
        }
        let rec = crate::records::audit::RestartRecord::new(
            self.clock.now(),
            s,
            "skipped",
            Some(why.as_str().to_owned()),
            self.flags.dry_run,
        );
        self.records.restart(&rec);
    }

    /// Waits for started work, then stops every thread.
    pub fn finish(&mut self) {
        self.patrols.finish();
        self.restarter.finish();
        self.store.save(&self.state);
        self.escalator.drain();
        self.shutdown.trigger();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let stats = self.deck.stats();
        let calls: u64 = stats.calls.values().sum();
        let failures: u64 = stats.failures.values().sum();
        log::info!(
            "{calls} agent-deck calls, {failures} failed, {} queue drops{}",
            self.queue.drops(),
            if self.flags.dry_run { " (dry-run)" } else { "" }
        );
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.shutdown.trigger();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Thread B: a tick now, then one every `interval`.
fn spawn_ticker(
    interval: Duration,
    queue: Arc<EventQueue>,
    shutdown: Shutdown,
) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("ticker".into())
        .spawn(move || {
            queue.send(Trigger::Tick);
            while shutdown.sleep(interval) {
                queue.send(Trigger::Tick);
            }
        })
        .map_err(|e| Error::runtime(format!("cannot start the ticker thread: {e}")))
}

/// SIGTERM/SIGINT trigger shutdown; SIGHUP asks for a reload.
struct Signals {
    handle: signal_hook::iterator::Handle,
    thread: JoinHandle<()>,
}

impl Signals {
    fn install(shutdown: Shutdown, reload: Arc<AtomicBool>) -> Result<Signals> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])
            .map_err(|e| Error::runtime(format!("cannot install signal handlers: {e}")))?;
        let handle = signals.handle();
        let thread = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    if sig == SIGHUP {
                        reload.store(true, Ordering::SeqCst);
                    } else {
                        log::info!("signal {sig} received, shutting down");
                        shutdown.trigger();
                    }
                }
            })
            .map_err(|e| Error::runtime(format!("cannot start the signal thread: {e}")))?;
        Ok(Signals { handle, thread })
    }

    fn close(self) {
        self.handle.close();
        let _ = self.thread.join();
    }
}
