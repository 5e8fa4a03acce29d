//! Escalation: telling a human what only a human can fix, once.
//! [`Escalator::escalate`] decides under the state mutex whether the alert is
//! a duplicate, writes `escalations.log`, and hands `escalate.sh` and
//! Telegram to its worker thread, so neither a caller nor the mutex waits on
//! them. In dry-run the record is written and nothing is run or sent.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::alert::telegram::Telegram;
use crate::config::Config;
use crate::decide::book::dedup;
use crate::decide::book::State;
use crate::decide::limits::Limits;
use crate::decide::outcomes::Severity;
use crate::records::audit::EscalationRecord;
use crate::records::state_file::Store;
use crate::records::writer::Records;
use crate::sys::clock::Clock;
use crate::sys::process::{self, Cmd};
use crate::sys::shutdown::Shutdown;
use crate::sys::worker::Worker;

/// What an escalator shares with its owner: the records and the restart book.
pub(crate) struct Shared {
    pub records: Arc<Records>,
    pub state: Arc<Mutex<State>>,
    /// Where the dedup memory is saved, so it survives a crash right after.
    pub store: Option<Arc<Store>>,
}

pub(crate) struct Escalator {
    shared: Shared,
    limits: Limits,
    clock: Arc<dyn Clock>,
    dry_run: bool,
    /// Whether Telegram is configured.
    telegram: bool,
    worker: Mutex<Option<Worker<EscalationRecord>>>,
}

impl Escalator {
    /// An escalator outside the daemon (`task check`), with its own dedup memory.
    pub(crate) fn standalone(
        cfg: &Config,
        dry_run: bool,
        clock: Arc<dyn Clock>,
        shutdown: &Shutdown,
    ) -> Arc<Escalator> {
        let shared = Shared {
            records: Arc::new(Records::from_config(cfg)),
            state: Arc::default(),
            store: None,
        };
        Arc::new(Escalator::new(cfg, shared, dry_run, clock, shutdown))
    }

    pub(crate) fn new(
        cfg: &Config,
        shared: Shared,
        dry_run: bool,
        clock: Arc<dyn Clock>,
        shutdown: &Shutdown,
    ) -> Escalator {
        let (script, timeout) = (script_path(cfg), cfg.subprocess_timeout);
        let messenger = Telegram::from_config(cfg, shutdown.clone());
        let (telegram, shutdown) = (messenger.is_some(), shutdown.clone());
        let worker = Worker::spawn("escalate", move |alert: EscalationRecord| {
            deliver(&alert, &script, timeout, messenger.as_ref(), &shutdown)
        });
        if let Err(e) = &worker {
            log::error!(
                "could not start the escalation thread ({e}); escalations are recorded only"
            );
        }
        Escalator {
            shared,
            limits: Limits::from_config(cfg),
            clock,
            dry_run,
            telegram,
            worker: Mutex::new(worker.ok()),
        }
    }

    /// Raises an alert unless the same (session, severity) went out within
    /// the dedup window. `wants_telegram`: the session is escalation-critical,
    /// or the alert is fleet-wide. Returns whether it went out.
    pub(crate) fn escalate(
        &self,
        severity: Severity,
        message: &str,
        sid: Option<&str>,
        wants_telegram: bool,
    ) -> bool {
        let (now, kind) = (self.clock.now(), severity.as_str());
        if !dedup::may_escalate(&mut self.shared.state.lock(), &self.limits, sid, kind, now) {
            log::debug!(
                "escalation {severity} for {} suppressed: already sent within the dedup window",
                sid.unwrap_or("the fleet")
            );
            return false;
        }
        // Saved before anything goes out: a watchdog killed right after must not alert again.
        if let Some(store) = &self.shared.store {
            store.save(&self.shared.state);
        }
        let telegram = wants_telegram && self.telegram && !self.dry_run;
        log::warn!("escalation [{severity}] {message}");
        let alert = EscalationRecord {
            ts: now,
            severity,
            message: message.to_owned(),
            sid: sid.map(str::to_owned),
            telegram,
            dry_run: self.dry_run,
        };
        self.shared.records.escalation(&alert);
        if self.dry_run {
            log::info!(
                "dry-run: not running escalate.sh and not sending Telegram for [{}]",
                alert.severity
            );
        } else if let Some(w) = self.worker.lock().as_ref() {
            w.submit(alert);
        }
        true
    }

    /// Delivers what is queued, then stops the worker: dropping it finishes it.
    pub(crate) fn drain(&self) {
        drop(self.worker.lock().take());
    }
}

pub(crate) fn script_path(cfg: &Config) -> PathBuf {
    cfg.watchdog_dir.join("escalate.sh")
}

/// Whether the script is run: a regular file with an execute bit.
pub(crate) fn is_runnable(script: &Path) -> bool {
    std::fs::metadata(script).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn deliver(
    alert: &EscalationRecord,
    script: &Path,
    timeout: Duration,
    telegram: Option<&Arc<Telegram>>,
    shutdown: &Shutdown,
) {
    let (severity, message, shown) = (&alert.severity, &alert.message, script.display());
    if is_runnable(script) {
        let job = Cmd::new(script).arg(severity.as_str()).arg(message);
        match process::run(&job, timeout, shutdown) {
            Ok(out) if out.success() => log::debug!("{shown} {severity} ran"),
            Ok(out) => log::warn!(
                "{shown} {severity} exited {:?}; the alert is in escalations.log regardless",
                out.code
            ),
            Err(e) => {
                log::warn!("{shown} {severity}: {e}; the alert is in escalations.log regardless")
            }
        }
    }
    if let Some(t) = telegram.filter(|_| alert.telegram) {
        t.notify(&format!("[agent-deck watchdog] {severity}: {message}"));
    }
}
