//! The patrols' actions, run on their own worker thread: nudging a child
//! that has waited too long, removing a session stuck in error.
//!
//! `session send` and `remove` can take seconds, so the main loop only
//! queues them here. Each errand writes one `restart.log` record with its own
//! `action`; in dry-run the record is written and nothing is run. A nudge
//! that agent-deck reports typed into the pane but not acted on
//! (`"delivery":"typed"`, a non-Claude tool) is a nudge with reason `typed`,
//! not a failure. No errand is retried here.

use std::sync::Arc;

use crate::decide::outcomes::RestartAction;
use crate::decide::patrol_rules::NUDGE_TEXT;
use crate::fleet::deck::{AgentDeck, CliResult, Delivery};
use crate::fleet::session::Session;
use crate::records::audit::RestartRecord;
use crate::records::writer::Records;
use crate::sys::clock::Clock;
use crate::sys::worker::Worker;

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
    fn record(&self, s: &Session, action: RestartAction, reason: String) -> RestartRecord {
        RestartRecord::new(self.clock.now(), s, action, Some(reason), self.dry_run)
    }

    /// Runs `call` (or, in dry-run, only says it would) and says how it
    /// went.
    fn act(
        &self,
        s: &Session,
        what: &str,
        reason: &str,
        retry: &str,
        call: impl FnOnce() -> CliResult<()>,
    ) -> Outcome {
        if self.dry_run {
            log::info!("dry-run: would {what} {} ({}): {reason}", s.id, s.title);
            return Outcome::Done;
        }
        match call() {
            Ok(()) => {
                log::info!("{what} {} ({}): done, {reason}", s.id, s.title);
                Outcome::Done
            }
            Err(e) if e.delivery().is_some_and(Delivery::arrived) => {
                log::info!(
                    "{what} {} ({}): typed into the pane, agent-deck saw no sign it was acted on ({e}); not sent again",
                    s.id,
                    s.title
                );
                Outcome::Typed
            }
            Err(e) => {
                log::warn!("{what} {} failed: {e}; {retry}", s.id);
                Outcome::Failed
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
                let retry = "the next one waits for the dedup window";
                let rec = match self.act(&s, "nudge", &reason, retry, send) {
                    Outcome::Done => self.record(&s, RestartAction::Nudge, reason),
                    Outcome::Typed => {
                        self.record(&s, RestartAction::Nudge, Delivery::Typed.to_string())
                    }
                    Outcome::Failed => self.record(&s, RestartAction::NudgeFailed, reason),
                };
                self.records.restart(&rec);
            }
            Errand::Remove {
                session: s,
                stuck_for_s,
            } => {
                let reason = format!("in error for {stuck_for_s:.0}s");
                let remove = || self.deck.remove(&s.profile, &s.id);
                let retry = "trying again in a minute";
                let action = match self.act(&s, "remove", &reason, retry, remove) {
                    Outcome::Done => RestartAction::StaleRemoved,
                    Outcome::Typed | Outcome::Failed => RestartAction::StaleRemoveFailed,
                };
                let mut rec = self.record(&s, action, reason);
                rec.stuck_for_s = Some(stuck_for_s);
                self.records.restart(&rec);
            }
        }
    }
}

/// How an errand's call went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Done,
    /// `session send` failed, but its text reached the pane
    /// (`"delivery":"typed"`): not a failure, and not sent again.
    Typed,
    Failed,
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::fake::{FakeDeck, Script, SendAnswer};
    use crate::fleet::parse::Delivery;
    use crate::records::audit::RESTART_LOG;
    use crate::records::read_back::read_lines;
    use crate::sys::clock::FakeClock;

    fn nudge_with(send: SendAnswer) -> (Vec<RestartRecord>, Arc<FakeDeck>) {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script {
            send,
            ..Script::default()
        }));
        let runner = Runner {
            deck: deck.clone(),
            records: Arc::new(Records::new(tmp.path())),
            clock: Arc::new(FakeClock::at(1000.0)),
            dry_run: false,
        };
        let session = Session {
            id: "a0b1c2d3-1755899999".into(),
            title: "worker-1".into(),
            profile: "default".into(),
            ..Session::default()
        };
        runner.run(Errand::Nudge {
            session,
            waited_s: 700.0,
        });
        (read_lines(&tmp.path().join(RESTART_LOG)), deck)
    }

    #[test]
    fn a_nudge_typed_into_a_non_claude_pane_is_a_nudge_not_a_failure() {
        let (records, deck) = nudge_with(SendAnswer::Undelivered(Delivery::Typed));
        assert_eq!(records.len(), 1, "{records:?}");
        assert_eq!(records[0].action, "nudge");
        assert_eq!(records[0].reason.as_deref(), Some("typed"));
        assert_eq!(deck.count("send"), 1, "not retried");
    }

    #[test]
    fn a_nudge_that_did_not_arrive_is_still_nudge_failed() {
        for delivery in [Delivery::SendFailed, Delivery::TypedNotSubmitted] {
            let (records, _) = nudge_with(SendAnswer::Undelivered(delivery));
            assert_eq!(records[0].action, "nudge-failed", "{delivery:?}");
        }
        let (records, _) = nudge_with(SendAnswer::Delivered);
        assert_eq!(records[0].action, "nudge");
        assert_eq!(
            records[0].reason.as_deref(),
            Some("waiting 700s with an unchanged pane")
        );
    }
}
