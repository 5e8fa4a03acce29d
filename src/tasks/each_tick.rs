//! The task follow-up as the daemon runs it after each safety poll (SPEC
//! §8): one pass when a registry exists, the tasks it re-dispatched said,
//! and a pass that cannot run said once until its reason changes.

use crate::tasks::followup::FollowUp;

/// The daemon's follow-up, and the last reason a pass could not run.
pub(crate) struct TickFollowUp {
    followup: FollowUp,
    last_error: Option<String>,
}

impl TickFollowUp {
    pub(crate) fn new(followup: FollowUp) -> TickFollowUp {
        TickFollowUp {
            followup,
            last_error: None,
        }
    }

    /// One pass, when a registry exists.
    pub(crate) fn run(&mut self) {
        if !self.followup.registry.path.exists() {
            return;
        }
        match self.followup.pass() {
            Ok(summary) => {
                self.last_error = None;
                if !summary.redispatched.is_empty() {
                    let ids = summary.redispatched.join(", ");
                    log::info!("task follow-up re-dispatched {ids}");
                }
            }
            Err(e) => {
                let msg = e.to_string();
                if self.last_error.as_deref() != Some(msg.as_str()) {
                    log::warn!("task follow-up skipped: {msg}");
                    self.last_error = Some(msg);
                }
            }
        }
    }
}
