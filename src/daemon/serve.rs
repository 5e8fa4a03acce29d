//! The long-running loop: starts the hooks watch, the pane watch and the
//! ticker, then takes one batch of triggers at a time until shutdown.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::Config;
use crate::config::PaneWatchMode;
use crate::daemon::Daemon;
use crate::decide::{cascade, refusal};
use crate::error::{Error, Result};
use crate::fleet::panes::Tmux;
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
            let (retry, revive) = {
                let st = self.ctx.state.lock();
                let revive = cascade::revive_tick_in(&st, self.memory.hook_pacing.last_tick, now);
                (refusal::next_retry(&st, now), revive)
            };
            let idle = self.memory.hook_pacing.next_wakeup(now);
            let idle = [retry, revive]
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
}
