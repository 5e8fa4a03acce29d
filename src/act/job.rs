//! A restart job, the runner every kind of restart runs on, and the steps
//! they share: giving a budget slot back, waiting for the session to leave
//! `error`, and noting a success.
//!
//! The kinds themselves live in [`crate::act::restart`] (a revival),
//! [`crate::act::poller_restart`] and [`crate::act::prompt_resume`]; they all
//! build on this file and this file on none of them.

use std::path::PathBuf;
use std::time::Duration;

use crate::act::context::Context;
use crate::config::Config;
use crate::decide::{gates, notes};
use crate::fleet::deck::Delivery;
use crate::fleet::session::{is_escalation_critical, Session, Status};
use crate::sys::clock::local_timestamp;

/// Why a session is being restarted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestartKind {
    /// It is in error: confirm it is dead, restart, verify, fall back.
    Revive,
    /// It is alive but its Telegram poller process is missing (SPEC §6.1).
    PollerMissing,
    /// It is alive, its poller process too, but Telegram updates stayed
    /// unread on this many checks in a row (SPEC §6.5).
    PollerDeaf { pending: Vec<u64> },
}

/// A session cleared for restart, with the budget slot it reserved
/// (revivals only).
#[derive(Debug, Clone)]
pub struct RestartJob {
    pub session: Session,
    pub slot: Option<f64>,
    pub kind: RestartKind,
}

impl RestartJob {
    /// A poller restart of `s`, which takes no budget slot.
    pub fn poller(s: &Session, kind: RestartKind) -> RestartJob {
        RestartJob {
            session: s.clone(),
            slot: None,
            kind,
        }
    }

    /// Whether its alerts also go to Telegram.
    pub fn escalation_critical(&self) -> bool {
        is_escalation_critical(&self.session)
    }
}

/// The timings and switches a restart needs.
#[derive(Debug, Clone)]
pub struct RestartSettings {
    pub gap: Duration,
    pub restart_verify: Duration,
    pub start_verify: Duration,
    pub continuity_message: String,
    /// `profile` → `CLAUDE_CONFIG_DIR` for prompt-resume (SPEC §6.4).
    pub prompt_resume: Vec<(String, PathBuf)>,
    /// How long the `claude --resume` call may take.
    pub prompt_resume_timeout: Duration,
    /// The hook spool, to tell a stale `dead` hook from a new death.
    pub hooks_dir: PathBuf,
}

impl RestartSettings {
    pub fn from_config(cfg: &Config) -> RestartSettings {
        RestartSettings {
            gap: cfg.liveness_confirm_gap,
            restart_verify: cfg.restart_verify,
            start_verify: cfg.start_verify,
            continuity_message: cfg.continuity_message.clone(),
            prompt_resume: cfg.prompt_resume_profiles.clone(),
            // A resumed conversation may take a while to answer.
            prompt_resume_timeout: cfg.subprocess_timeout.max(Duration::from_secs(120)),
            hooks_dir: cfg.hooks_dir.clone(),
        }
    }
}

/// What the restart worker runs its jobs with.
pub struct RestartRunner {
    pub ctx: Context,
    pub settings: RestartSettings,
}

impl RestartRunner {
    pub(super) fn give_back(&self, job: &RestartJob) {
        if let Some(slot) = job.slot {
            gates::give_back(&mut self.ctx.state.lock(), &job.session.id, slot);
        }
    }

    /// Polls the status for up to `within`; the last status read, if any.
    pub(super) fn verify(&self, s: &Session, within: Duration) -> Option<Status> {
        let step = (within / 4).min(Duration::from_secs(1));
        let deadline = self.ctx.clock.now() + within.as_secs_f64();
        let mut last = None;
        loop {
            if !step.is_zero() && !self.ctx.shutdown.sleep(step) {
                return last;
            }
            if let Some(live) = self.ctx.read_status(s) {
                last = live.status;
                if live.status() != Status::Error {
                    return last;
                }
            }
            if self.ctx.clock.now() >= deadline || step.is_zero() {
                return last;
            }
        }
    }

    pub(super) fn succeeded(&self, s: &Session, status: Status) {
        let ctx = &self.ctx;
        log::info!(
            "restart of {} ({}) worked: status {}",
            s.id,
            s.title,
            status.as_str()
        );
        notes::note_success(&mut ctx.state.lock(), &s.id);
        let mut rec = ctx.record(s, "restarted", None);
        rec.final_status = Some(status.as_str().into());
        ctx.records.restart(&rec);
        let template = &self.settings.continuity_message;
        if !template.is_empty() {
            let text = template.replace("{timestamp}", &local_timestamp(ctx.clock.now()));
            match ctx.deck.send(&s.profile, &s.id, &text) {
                Ok(()) => log::info!("continuity message sent to {}", s.id),
                Err(e) if e.delivery().is_some_and(Delivery::arrived) => log::info!(
                    "continuity message typed into the pane of {}, agent-deck saw no sign it was acted on ({e}); not sent again",
                    s.id
                ),
                Err(e) => log::warn!(
                    "continuity message to {} failed: {e}; the session runs without it",
                    s.id
                ),
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::act::context::tests::{config, context};
    use crate::fleet::fake::FakeDeck;

    /// The restart settings of a test under `home`: every wait zero.
    pub(crate) fn settings(home: &std::path::Path) -> RestartSettings {
        let mut settings = RestartSettings::from_config(&config(home));
        settings.gap = Duration::ZERO;
        settings.restart_verify = Duration::ZERO;
        settings.start_verify = Duration::ZERO;
        settings.hooks_dir = home.join("hooks");
        std::fs::create_dir_all(&settings.hooks_dir).unwrap();
        settings
    }

    /// A restart runner over `deck` in `home`, every wait zero and restarts
    /// back to back (the fake clock never moves on).
    pub(crate) fn runner(home: &std::path::Path, deck: Arc<FakeDeck>) -> RestartRunner {
        let (mut ctx, _) = context(home, deck);
        ctx.limits.min_interval = 0.0;
        let settings = settings(home);
        RestartRunner { ctx, settings }
    }
}
