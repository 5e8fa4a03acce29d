//! The long-running loop: starts the hooks watch, the pane watch and the
//! ticker, then takes one batch of triggers at a time until shutdown. Each
//! batch goes where [`route`] sends it: a full tick, the check of one dead
//! pane (and SPEC §5.3's short path for a death the kernel proved), or the
//! status checks of hooks, deferred checks and retries.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::act::job::Proven;
use crate::config::Config;
use crate::config::PaneWatchMode;
use crate::daemon::Daemon;
use crate::decide::plan;
use crate::decide::verdict::route::{route, Death, DeathPath, Deaths, Route};
use crate::decide::verdict::{Decided, Errored, Look};
use crate::decide::{book::cascade, restart::refusal, stall};
use crate::error::{Error, Result};
use crate::fleet::panes::{Proof, Tmux};
use crate::fleet::session::{Live, Session, Status};
use crate::triggers::event_queue::Batch;
use crate::triggers::hook_file::{self, HookStatus};
use crate::triggers::{panes_watch, ticker, watch};

impl Daemon {
    /// The long-running loop.
    pub(super) fn serve(&mut self, cfg: &Config, reload: &AtomicBool) -> Result<()> {
        let watcher = watch::spawn(
            cfg.hooks_dir.clone(),
            self.triggers.queue.clone(),
            self.ctx.shutdown.clone(),
            cfg.watch_backend,
        )
        .map_err(|e| Error::runtime(format!("cannot start the hooks-watch thread: {e}")))?;
        self.triggers.threads.push(watcher);
        self.spawn_pane_watch(cfg)?;
        let every = ticker::Intervals {
            safety: cfg.safety_poll_interval,
            armed: cfg.armed_poll_interval,
        };
        self.triggers.threads.push(ticker::spawn(
            every,
            self.triggers.panes.clone(),
            self.triggers.queue.clone(),
            self.ctx.shutdown.clone(),
        )?);
        let every = cfg.safety_poll_interval.as_secs_f64();
        log::info!("armed: watching hooks and polling every {every:.1}s");
        self.sd_notify.ready();
        loop {
            let now = self.ctx.clock.now();
            let (retry, revive, remedy) = {
                let st = self.ctx.state.lock();
                let revive = cascade::revive_tick_in(&st, self.memory.hook_pacing.last_tick, now);
                (
                    refusal::next_retry(&st, now),
                    revive,
                    self.remedy_look_in(&st, now),
                )
            };
            let idle = self.memory.hook_pacing.next_wakeup(now);
            let idle = [retry, revive, remedy]
                .into_iter()
                .flatten()
                .fold(idle, |d, s| d.min(crate::sys::clock::clamped(s)));
            let wait = self.sd_notify.max_sleep(idle);
            let Some(batch) = self.triggers.queue.next_batch(&self.ctx.shutdown, wait) else {
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
    pub(super) fn spawn_pane_watch(&mut self, cfg: &Config) -> Result<()> {
        if cfg.pane_watch == PaneWatchMode::Off {
            log::info!("PANE_WATCH=off: deaths are seen by hooks and the safety poll only");
            return Ok(());
        }
        let tmux = Tmux::for_config(cfg, self.ctx.shutdown.clone());
        let thread = panes_watch::spawn(
            tmux,
            cfg.pane_list_interval,
            self.triggers.panes.clone(),
            self.triggers.queue.clone(),
            self.ctx.shutdown.clone(),
        )
        .map_err(|e| Error::runtime(format!("cannot start the panes-watch thread: {e}")))?;
        self.triggers.threads.extend(thread);
        Ok(())
    }

    /// When a full context's remedy under way is next looked at.
    fn remedy_look_in(&self, st: &crate::decide::book::State, now: f64) -> Option<f64> {
        let stalls = st.sessions.values().filter_map(|b| b.stall.as_ref());
        let every = self.ctx.cfg.safety_poll_interval.as_secs_f64();
        stall::remedy_look_in(stalls, self.memory.hook_pacing.last_tick, now, every)
    }

    /// One batch of triggers, where [`route`] sends it; false when there was
    /// nothing to do.
    pub(super) fn handle(&mut self, batch: Batch) -> bool {
        self.take_endings(&batch);
        let now = self.ctx.clock.now();
        let due = self.memory.hook_pacing.due(now);
        // A retry after a freshness refusal is looked at as a hook is.
        let retries = refusal::take_due(&mut self.ctx.state.lock(), now);
        let (revive, remedy, deaths) = {
            let st = self.ctx.state.lock();
            let deaths = Deaths {
                episode: st.cascade.is_some(),
                last_died: self.memory.last_died,
                in_flight: st.in_flight.len(),
                threshold: self.ctx.limits.cascade_threshold,
            };
            (
                cascade::revive_tick_in(&st, self.memory.hook_pacing.last_tick, now),
                self.remedy_look_in(&st, now),
                deaths,
            )
        };
        let tick = self
            .memory
            .hook_pacing
            .tick_due(batch.tick, batch.rescan, now)
            || revive == Some(0.0)
            || remedy == Some(0.0);
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
    pub(super) fn pane_died(&mut self, death: &Death) -> Option<bool> {
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
    pub(super) fn short_path(&mut self, id: &str, shown: Live) {
        let Some(s) = self.fleet.get(id).cloned() else {
            return;
        };
        log::info!(
            "pane of {id} died (its process exited) and agent-deck says error; deciding on its restart without a poll"
        );
        let hook = self.hook_seen(&s);
        let errored = {
            let (release, now) = (self.ctx.deck.version(), self.ctx.clock.now());
            let mut st = self.ctx.state.lock();
            let ep = &mut self.memory.episodes;
            let show = Ok(shown.clone());
            plan::judge(&mut st, ep, release, &s, &shown, &hook, Some(&show), now)
        };
        let decided = self.decide(&s, Some(&shown), Some(errored));
        let proven = (errored == Errored::Died).then_some(Proven {
            proof: Proof::ProcessExited,
            shown,
        });
        self.carry_out(&s, &decided, proven);
    }

    /// The verdict on `s`, read as `live` and, in error, judged `errored`,
    /// outside a tick.
    fn decide(&mut self, s: &Session, live: Option<&Live>, errored: Option<Errored>) -> Decided {
        let now = self.ctx.clock.now();
        let (mut st, lim) = (self.ctx.state.lock(), &self.ctx.limits);
        let look = Look {
            session: s,
            live,
            errored,
            ending: None,
        };
        plan::decide(&mut st, &mut self.memory.episodes, lim, now, look)
    }

    /// The status check of `id` (`retry`: a deferred check coming back).
    /// `from_hook`: a hook file for it was written, and one that says the
    /// agent is alive ends the check without a call, and the per-session gap
    /// paces it. The show, when it says `error`: the fleet then needs a
    /// full look.
    pub(super) fn check_finds_error(
        &mut self,
        id: &str,
        retry: bool,
        from_hook: bool,
    ) -> Option<Live> {
        if self.fleet.needs_refresh_for(id) && !self.refresh_fleet_if_stale() && !retry {
            // The list was read less than a second ago, maybe before the
            // session existed: come back once it may be read again. A retry
            // goes on: whatever read the list since then came after its hook.
            self.memory.hook_pacing.defer(id, self.ctx.clock.now());
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
        if from_hook && !self.memory.hook_pacing.may_check(id, self.ctx.clock.now()) {
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
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::act::context::tests::{actions, config};
    use crate::daemon::apply::tests::daemon;
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
        d.memory.last_died = d.ctx.limits.cascade_threshold - 1;
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
        assert_eq!(d.triggers.panes.map().unwrap().critical[COND], OLD);
        d.handle(died(Proof::ProcessExited));
        d.finish();
        // The main loop takes the restart's ending.
        d.take_endings(&Batch::default());
        let map = d.triggers.panes.map().unwrap();
        assert_eq!(map.critical[COND], "agentdeck_conductor-ops_9e8d7c6b");
        assert!(map.known.contains("agentdeck_conductor-ops_9e8d7c6b"));
    }

    #[test]
    fn a_tick_that_cannot_read_the_profile_keeps_the_name_a_restart_gave() {
        let tmp = tempfile::tempdir().unwrap();
        let new = "agentdeck_conductor-ops_9e8d7c6b";
        let renamed = Live {
            tmux_session: Some(new.into()),
            ..live(Status::Running).unwrap()
        };
        let (mut d, deck) = ticked(tmp.path(), &[live(Status::Error), Some(renamed)]);
        d.handle(died(Proof::ProcessExited));
        let ended = || {
            let restarted = actions(tmp.path()).iter().any(|a| a == "restarted");
            restarted && !d.ctx.state.lock().in_flight.contains(COND)
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !ended() {
            assert!(
                std::time::Instant::now() < deadline,
                "the restart never ended"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // The ending woke the main loop, which takes it.
        let woke = d
            .triggers
            .queue
            .next_batch(&d.ctx.shutdown, std::time::Duration::ZERO);
        d.handle(woke.unwrap());
        assert_eq!(d.triggers.panes.map().unwrap().critical[COND], new);
        // The next tick cannot read the conductor's profile: the name it
        // keeps is the one the restart gave, not the one listed before.
        deck.script.lock().lists.clear();
        d.tick();
        assert_eq!(d.triggers.panes.map().unwrap().critical[COND], new);
        d.finish();
    }
}
