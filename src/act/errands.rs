//! The patrols' actions, run on their own worker thread: nudging a child
//! that has waited too long, removing a session stuck in error.
//!
//! `session send` and `remove` can take seconds, so the main loop only
//! queues them here. Each errand writes one `restart.log` record with its own
//! `action`; in dry-run the record is written and nothing is run.

use std::sync::Arc;

use crate::act::worker::Worker;
use crate::decide::patrol_rules::NUDGE_TEXT;
use crate::fleet::deck::{AgentDeck, CliResult};
use crate::fleet::session::Session;
use crate::records::audit::{Records, RestartRecord};
use crate::sys::clock::Clock;

/// One thing to do.
#[derive(Debug, Clone)]
pub enum Errand {
    /// `session send <id> "report status?" --no-wait`.
    Nudge { session: Session, waited_s: f64 },
    /// `remove <id>`: stuck in error for `stuck_for_s`.
    Remove { session: Session, stuck_for_s: f64 },
}

/// What the errand worker needs.
pub struct Runner {
    pub deck: Arc<dyn AgentDeck>,
    pub records: Arc<Records>,
    pub clock: Arc<dyn Clock>,
    pub dry_run: bool,
}

pub fn spawn(r: Runner) -> std::io::Result<Worker<Errand>> {
    Worker::spawn("errands", move |e: Errand| r.run(e))
}

impl Runner {
    fn record(&self, s: &Session, action: &str, reason: String) -> RestartRecord {
        RestartRecord::new(self.clock.now(), s, action, Some(reason), self.dry_run)
    }

    /// Runs `call` (or, in dry-run, only says it would) and returns the
    /// record's action: `done` or `failed`.
    fn act(
        &self,
        s: &Session,
        what: &str,
        reason: &str,
        (done, failed): (&'static str, &'static str),
        call: impl FnOnce() -> CliResult<()>,
    ) -> &'static str {
        if self.dry_run {
            log::info!("dry-run: would {what} {} ({}): {reason}", s.id, s.title);
            return done;
        }
        match call() {
            Ok(()) => {
                log::info!("{what} {} ({}): done, {reason}", s.id, s.title);
                done
            }
            Err(e) => {
                log::warn!("{what} {} failed: {e}; {}", s.id, retry_note(failed));
                failed
            }
        }
    }

    fn run(&self, errand: Errand) {
        match errand {
            Errand::Nudge {
                session: s,
                waited_s,
            } => {
                let reason = format!("waiting {waited_s:.0}s with an unchanged pane");
                let send = || self.deck.send(&s.profile, &s.id, NUDGE_TEXT);
                let action = self.act(&s, "nudge", &reason, ("nudge", "nudge-failed"), send);
                self.records.restart(&self.record(&s, action, reason));
            }
            Errand::Remove {
                session: s,
                stuck_for_s,
            } => {
                let reason = format!("in error for {stuck_for_s:.0}s");
                let remove = || self.deck.remove(&s.profile, &s.id);
                let action = self.act(
                    &s,
                    "remove",
                    &reason,
                    ("stale-removed", "stale-remove-failed"),
                    remove,
                );
                let mut rec = self.record(&s, action, reason);
                rec.stuck_for_s = Some(stuck_for_s);
                self.records.restart(&rec);
            }
        }
    }
}

/// What happens after a failed errand.
fn retry_note(failed_action: &str) -> &'static str {
    if failed_action == "nudge-failed" {
        "the next one waits for the dedup window"
    } else {
        "trying again in a minute"
    }
}
