//! The reads the daemon makes every tick (the session list, each profile's
//! statuses), told as outages when they fail ([`crate::sys::say_once`]):
//! one line when one starts, a summary every few minutes while it lasts
//! (instead of a warning a tick, 24 lines a minute at the default poll),
//! one line when it ends.

use std::time::Duration;

use crate::daemon::Daemon;
use crate::sys::say_once::Said;

/// How often a lasting outage is summed up.
const SUMMARY_EVERY: Duration = Duration::from_secs(300);

impl Daemon {
    /// Notes this tick's read of `what`: `failed`, the line that says how
    /// and what the daemon does meanwhile, or `None` when it read.
    pub(super) fn tell_outage(&mut self, what: &str, failed: Option<String>) {
        let (said, now) = (&self.memory.said, self.ctx.clock.now());
        let Some(line) = failed else {
            if let Some(Said::Ended { times, secs }) = said.end(what, now) {
                log::info!("{what}: readable again after {secs:.0}s and {times} failed reads");
            }
            return;
        };
        match said.note(what, now, SUMMARY_EVERY) {
            Some(Said::Started) => log::warn!("{line}"),
            Some(Said::Lasting { times, secs }) => log::warn!(
                "{what}: still unreadable after {secs:.0}s, {times} failed reads; the last: {line}"
            ),
            _ => {}
        }
    }
}
