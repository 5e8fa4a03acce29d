//! The wiring: builds the daemon's collaborators once, from the settings,
//! and hands each only what it needs. The restart book and its store, the
//! records, the escalator, the restart, errand and webhook-check workers, the
//! patrols, the task follow-up and the session cache. Nothing here runs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::act::errands;
use crate::act::job;
use crate::act::patrols::{self, Patrols};
use crate::act::pending_updates::WebhookChecks;
use crate::act::restart;
use crate::alert::escalate::{Escalator, EscalatorParts};
use crate::alert::telegram::Telegram;
use crate::args::RunFlags;
use crate::config::Config;
use crate::daemon::hook_checks::HookChecks;
use crate::daemon::Daemon;
use crate::decide::limits::Limits;
use crate::error::{Error, Result};
use crate::fleet::cache::Fleet;
use crate::fleet::deck::AgentDeck;
use crate::ops::sd_notify::SdNotify;
use crate::records::state_file::Store;
use crate::records::writer::Records;
use crate::sys::clock::Clock;
use crate::sys::shutdown::Shutdown;
use crate::tasks::followup::FollowUp;
use crate::triggers::queue::EventQueue;

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
        let records = Arc::new(Records::from_config(cfg));
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
        let restarter = restart::spawn(job::Context {
            deck: deck.clone(),
            state: state.clone(),
            limits: limits.clone(),
            settings: job::RestartSettings::from_config(cfg, flags.dry_run),
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
        let webhook_checks =
            WebhookChecks::from_config(cfg, state.clone(), clock.clone(), shutdown.clone())
                .map_err(|e| {
                    Error::runtime(format!("cannot start the webhook-checks thread: {e}"))
                })?;
        let patrols = Patrols::new(
            patrols::PatrolSettings::from_config(cfg),
            deck.clone(),
            state.clone(),
            clock.clone(),
            errands,
            webhook_checks,
        );
        // A registry lock held by a stuck dispatcher must not stall the main loop.
        let patience = Some(Duration::from_secs(1));
        let followup = FollowUp::from_config(
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
            hook_checks: HookChecks::default(),
            gate_skips: BTreeMap::new(),
            never_started: Default::default(),
            threads: Vec::new(),
        })
    }
}
