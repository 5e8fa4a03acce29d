//! The patrols of SPEC §6, run once per safety tick from the daemon's
//! snapshot of the fleet: waiting-too-long nudges, the deaf-conductor check
//! with its opt-in deaf-but-alive poller check, and the opt-in stale cleanup.
//!
//! Sampling (a pane capture per waiting child, a `/proc` scan per poller
//! check) happens here; the Bot API is asked on the webhook-check worker,
//! which notes its answers in the book; decisions come from
//! [`crate::decide::patrol_rules`]; slow actions go to the errand worker or,
//! for restarts, to the restart worker so restarts stay serialized.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::act::context::Context;
use crate::act::errands::{self, Errand};
use crate::act::job::{RestartJob, RestartKind};
use crate::act::pending_updates::{Conductor, WebhookWorker};
use crate::act::restart::Restarter;
use crate::act::snapshot::Snapshot;
use crate::act::telegram_pollers::{self, Places};
use crate::config::Config;
use crate::decide::liveness::digest;
use crate::decide::patrol_rules;
use crate::error::{Error, Result};
use crate::fleet::session::{Session, Status};
use crate::sys::worker::Worker;

/// A removal that did not take is tried again after this long.
const REMOVAL_RETRY_S: f64 = 60.0;

/// The patrol settings, as float seconds.
#[derive(Debug, Clone)]
pub struct PatrolSettings {
    pub waiting_threshold: f64,
    pub nudge_dedup: f64,
    pub poller_interval: f64,
    pub poller_dedup: f64,
    /// 0: stale cleanup off.
    pub stale_after: f64,
    pub places: Places,
}

impl PatrolSettings {
    pub fn from_config(c: &Config) -> PatrolSettings {
        let s = Duration::as_secs_f64;
        PatrolSettings {
            waiting_threshold: s(&c.waiting_patrol_threshold),
            nudge_dedup: s(&c.waiting_patrol_nudge_dedup),
            poller_interval: s(&c.poller_check_interval),
            poller_dedup: s(&c.poller_restart_dedup),
            stale_after: s(&c.stale_error_cleanup),
            places: Places {
                home: c.home.clone(),
                root: c.root.clone(),
                xdg_config_home: c.xdg_config_home.clone(),
                proc_dir: crate::sys::process_table::PROC_DIR.into(),
            },
        }
    }
}

pub struct Patrols {
    ctx: Context,
    pub settings: PatrolSettings,
    errands: Worker<Errand>,
    /// The deaf-but-alive poller check (SPEC §6.5); `None`: off.
    webhook: Option<WebhookWorker>,
    last_poller_check: Option<f64>,
    /// Removals queued and when: a slow, failed or dry-run removal is queued
    /// again only after [`REMOVAL_RETRY_S`].
    removals: BTreeMap<String, f64>,
}

impl Patrols {
    /// The patrols, with their errand and webhook-check workers started.
    pub fn spawn(cfg: &Config, ctx: Context) -> Result<Patrols> {
        let started = |what: &'static str| {
            move |e: std::io::Error| Error::runtime(format!("cannot start the {what} thread: {e}"))
        };
        Ok(Patrols {
            settings: PatrolSettings::from_config(cfg),
            errands: errands::spawn(ctx.clone()).map_err(started("errands"))?,
            webhook: WebhookWorker::from_config(cfg, ctx.clone())
                .map_err(started("webhook-checks"))?,
            ctx,
            last_poller_check: None,
            removals: BTreeMap::new(),
        })
    }

    /// One patrol pass; `alive` is called before each slow pane read, so
    /// the caller can tell its supervisor the pass is still moving.
    pub fn run(&mut self, snap: &Snapshot, restarter: &Restarter, alive: &mut dyn FnMut()) {
        self.nudge_waiting(snap, alive);
        self.check_pollers(snap, restarter);
        self.clean_stale(snap);
    }

    /// §6.2: one pane sample per waiting child; only children already in
    /// `waiting` are sampled.
    fn nudge_waiting(&mut self, snap: &Snapshot, alive: &mut dyn FnMut()) {
        let waiting: Vec<&Session> = snap
            .sessions
            .iter()
            .copied()
            .filter(|s| s.parent_session_id.is_some())
            .filter(|s| {
                snap.live
                    .get(&s.id)
                    .is_some_and(|l| l.status() == Status::Waiting)
            })
            .collect();
        // Children of an unreadable profile are unknown this tick, not "not waiting".
        let keep: BTreeSet<String> = snap
            .sessions
            .iter()
            .filter(|s| snap.unreadable.contains(&s.profile))
            .map(|s| s.id.clone())
            .chain(waiting.iter().map(|s| s.id.clone()))
            .collect();
        patrol_rules::forget_not_waiting(&mut self.ctx.state.lock(), &keep);
        for s in waiting {
            alive();
            let pane = match self.ctx.deck.pane(&s.profile, &s.id) {
                Ok(p) => p,
                Err(e) => {
                    log::debug!(
                        "pane of waiting child {} unreadable ({e}); looking again next tick",
                        s.id
                    );
                    continue;
                }
            };
            let now = self.ctx.clock.now();
            let st = &self.settings;
            let nudge = {
                let mut state = self.ctx.state.lock();
                let due = patrol_rules::observe_waiting(
                    &mut state,
                    &s.id,
                    &digest(&pane),
                    now,
                    st.waiting_threshold,
                    st.nudge_dedup,
                );
                due.then(|| now - state.waiting.get(&s.id).map_or(now, |w| w.since))
            };
            if let Some(waited_s) = nudge {
                self.errands.submit(Errand::Nudge {
                    session: s.clone(),
                    waited_s,
                });
            }
        }
    }

    /// §6.1, every `POLLER_CHECK_INTERVAL_S`: a live conductor with a
    /// Telegram channel whose poller process is gone is restarted; one whose
    /// poller runs gets a `getWebhookInfo` check when §6.5 is on. A poller
    /// found deaf by those checks is restarted at the next tick.
    fn check_pollers(&mut self, snap: &Snapshot, restarter: &Restarter) {
        self.restart_deaf_pollers(snap, restarter);
        let now = self.ctx.clock.now();
        if self
            .last_poller_check
            .is_some_and(|t| now - t < self.settings.poller_interval)
        {
            return;
        }
        self.last_poller_check = Some(now);
        if let Some(w) = &self.webhook {
            patrol_rules::forget_stale_streaks(&mut self.ctx.state.lock(), now, w.max_gap);
        }
        for seen in telegram_pollers::telegram_pollers(snap, &self.settings.places) {
            let s = seen.session;
            if seen.running {
                if let Some(w) = &self.webhook {
                    if !self.ctx.state.lock().in_flight.contains(&s.id) {
                        w.submit(Conductor {
                            id: s.id.clone(),
                            title: s.title.clone(),
                            state_dir: seen.state_dir,
                        });
                    }
                }
                continue;
            }
            if self.claim_poller_restart(&s.id, now) {
                log::warn!(
                    "{} ({}) is deaf: no Telegram poller for {}; queueing a restart",
                    s.id,
                    s.title,
                    seen.state_dir.display()
                );
                restarter.submit(RestartJob::poller(s, RestartKind::PollerMissing));
            }
        }
    }

    /// §6.5: a live conductor whose poller left Telegram updates unread on
    /// `POLLER_DEAF_CHECKS` checks in a row is restarted through the §6.1
    /// path and dedup. Its streak is used up: should agent-deck refuse, a
    /// new streak is needed before the next try.
    fn restart_deaf_pollers(&mut self, snap: &Snapshot, restarter: &Restarter) {
        let Some(w) = &self.webhook else {
            return;
        };
        let now = self.ctx.clock.now();
        let deaf = patrol_rules::deaf_pollers(&self.ctx.state.lock(), now, w.checks, w.max_gap);
        for (id, pending) in deaf {
            let Some(s) = snap.sessions.iter().copied().find(|s| s.id == id) else {
                continue;
            };
            if !patrol_rules::is_conductor(s)
                || !telegram_pollers::has_live_telegram_channel(snap, s)
                || !self.claim_poller_restart(&s.id, now)
            {
                continue;
            }
            self.ctx.state.lock().pending_updates.remove(&s.id);
            log::warn!(
                "{} ({}) is deaf: its Telegram poller runs but leaves updates unread ({}); queueing a restart",
                s.id,
                s.title,
                patrol_rules::deaf_reason(&pending)
            );
            restarter.submit(RestartJob::poller(s, RestartKind::PollerDeaf { pending }));
        }
    }

    /// Whether a poller restart of `id` may be queued now (the dedup window
    /// is over and none is queued or running); if so, it is marked in flight.
    fn claim_poller_restart(&self, id: &str, now: f64) -> bool {
        let mut state = self.ctx.state.lock();
        let ok = patrol_rules::poller_restart_allowed(&state, id, now, self.settings.poller_dedup)
            && !state.in_flight.contains(id);
        if ok {
            state.in_flight.insert(id.to_owned());
        }
        ok
    }

    /// §6.3, opt-in: remove restart-critical, non-escalating sessions stuck
    /// in error for `STALE_ERROR_CLEANUP_S`.
    fn clean_stale(&mut self, snap: &Snapshot) {
        if self.settings.stale_after <= 0.0 {
            return;
        }
        let now = self.ctx.clock.now();
        self.removals.retain(|id, at| {
            now - *at < REMOVAL_RETRY_S && snap.critical.iter().any(|s| s.id == *id)
        });
        for s in snap.critical {
            let in_error = snap
                .live
                .get(&s.id)
                .is_some_and(|l| l.status() == Status::Error);
            if !in_error
                || !patrol_rules::stale_candidate(s, true)
                || self.removals.contains_key(&s.id)
            {
                continue;
            }
            let stuck = {
                let mut state = self.ctx.state.lock();
                patrol_rules::stuck_for(state.book(&s.id), now, self.settings.stale_after)
            };
            if let Some(stuck_for_s) = stuck {
                self.removals.insert(s.id.clone(), now);
                self.errands.submit(Errand::Remove {
                    session: s.clone(),
                    stuck_for_s,
                });
            }
        }
    }

    /// Runs the queued errands and webhook checks, then stops their workers.
    pub fn finish(&mut self) {
        if let Some(w) = &mut self.webhook {
            w.finish();
        }
        self.errands.finish();
    }
}
