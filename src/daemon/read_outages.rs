//! The reads the daemon makes every tick (the session list, each profile's
//! statuses), told as outages ([`crate::decide::outage`]) when they fail:
//! one line when one starts, a summary every few minutes while it lasts,
//! one line when it ends.

use crate::daemon::Daemon;
use crate::decide::outage::Said;

impl Daemon {
    /// Notes this tick's read of `what`: `failed`, the line that says how
    /// and what the daemon does meanwhile, or `None` when it read.
    pub(super) fn tell_outage(&mut self, what: &str, failed: Option<String>) {
        let now = self.ctx.clock.now();
        let outage = self.memory.outages.entry(what.to_owned()).or_default();
        match (outage.note(failed.is_some(), now), failed) {
            (Some(Said::Started), Some(line)) => log::warn!("{line}"),
            (Some(Said::Lasting { failures, secs }), Some(line)) => log::warn!(
                "{what}: still unreadable after {secs:.0}s, {failures} failed reads; the last: {line}"
            ),
            (Some(Said::Ended { failures, secs }), _) => {
                log::info!("{what}: readable again after {secs:.0}s and {failures} failed reads");
            }
            _ => {}
        }
    }
}
