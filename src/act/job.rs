//! A restart job, the context every kind of restart runs in, and the steps
//! they share: reading the status, writing the record, giving a budget slot
//! back, waiting for the session to leave `error`, and noting a success.
//!
//! The kinds themselves live in [`crate::act::restart`] (a revival),
//! [`crate::act::deaf_conductor`] and [`crate::act::prompt_resume`]; they all
//! build on this file and this file on none of them.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::alert::escalate::Escalator;
use crate::decide::book::State;
use crate::decide::limits::Limits;
use crate::decide::{gates, notes};
use crate::fleet::deck::{AgentDeck, Delivery};
use crate::fleet::session::{Live, Session, Status};
use crate::records::audit::{Records, RestartRecord};
use crate::records::state_file::Store;
use crate::sys::clock::{local_timestamp, Clock};
use crate::sys::shutdown::Shutdown;

/// Why a session is being restarted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestartKind {
    /// It is in error: confirm it is dead, restart, verify, fall back.
    Revive,
    /// It is alive but its Telegram poller is missing (SPEC §6.1).
    DeafConductor,
    /// It is alive, its poller process too, but Telegram updates stayed
    /// unread on this many checks in a row (SPEC §6.5).
    DeafPoller { pending: Vec<u64> },
}

/// A session the main loop has cleared for restart, with the budget slot it
/// reserved (revivals only).
#[derive(Debug, Clone)]
pub struct RestartJob {
    pub session: Session,
    pub escalation_critical: bool,
    pub slot: Option<f64>,
    pub kind: RestartKind,
}

/// The timings and switches a restart needs.
#[derive(Debug, Clone)]
pub struct RestartSettings {
    pub dry_run: bool,
    pub gap: Duration,
    pub restart_verify: Duration,
    pub start_verify: Duration,
    pub continuity_message: String,
    /// `profile` → `CLAUDE_CONFIG_DIR` for prompt-resume (SPEC §6.4).
    pub prompt_resume: Vec<(String, std::path::PathBuf)>,
    /// How long the `claude --resume` call may take.
    pub prompt_resume_timeout: Duration,
    /// The hook spool, to tell a stale `dead` hook from a new death.
    pub hooks_dir: std::path::PathBuf,
}

impl RestartSettings {
    pub fn from_config(cfg: &crate::config::Config, dry_run: bool) -> RestartSettings {
        RestartSettings {
            dry_run,
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

/// Everything a restart touches.
pub struct Context {
    pub deck: Arc<dyn AgentDeck>,
    pub state: Arc<Mutex<State>>,
    pub limits: Limits,
    pub settings: RestartSettings,
    pub records: Arc<Records>,
    pub escalator: Arc<Escalator>,
    pub store: Arc<Store>,
    pub clock: Arc<dyn Clock>,
    pub shutdown: Shutdown,
}

impl Context {
    pub(super) fn read_status(&self, s: &Session) -> Option<Live> {
        match self.deck.show(&s.profile, &s.id) {
            Ok(live) => Some(live),
            Err(e) => {
                log::warn!("status of {} is unreadable: {e}", s.id);
                None
            }
        }
    }

    pub(super) fn record(
        &self,
        s: &Session,
        action: &str,
        reason: Option<String>,
    ) -> RestartRecord {
        RestartRecord::new(self.clock.now(), s, action, reason, self.settings.dry_run)
    }

    pub(super) fn give_back(&self, job: &RestartJob) {
        if let Some(slot) = job.slot {
            gates::give_back(&mut self.state.lock(), &job.session.id, slot);
        }
    }

    /// Polls the status for up to `within`; the last status read, if any.
    pub(super) fn verify(&self, s: &Session, within: Duration) -> Option<Status> {
        let step = (within / 4).min(Duration::from_secs(1));
        let deadline = self.clock.now() + within.as_secs_f64();
        let mut last = None;
        loop {
            if !step.is_zero() && !self.shutdown.sleep(step) {
                return last;
            }
            if let Some(live) = self.read_status(s) {
                last = live.status;
                if live.status() != Status::Error {
                    return last;
                }
            }
            if self.clock.now() >= deadline || step.is_zero() {
                return last;
            }
        }
    }

    pub(super) fn succeeded(&self, s: &Session, status: Status) {
        log::info!(
            "restart of {} ({}) worked: status {}",
            s.id,
            s.title,
            status.as_str()
        );
        notes::note_success(&mut self.state.lock(), &s.id);
        let mut rec = self.record(s, "restarted", None);
        rec.final_status = Some(status.as_str().into());
        self.records.restart(&rec);
        let template = &self.settings.continuity_message;
        if !template.is_empty() {
            let text = template.replace("{timestamp}", &local_timestamp(self.clock.now()));
            match self.deck.send(&s.profile, &s.id, &text) {
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
