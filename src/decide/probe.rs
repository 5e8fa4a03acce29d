//! Where the readings of one session come from, when a decision needs more
//! than a list row: the liveness confirmation before a restart
//! ([`crate::decide::restart::liveness`]) and the evidence that a session
//! ever ran ([`crate::decide::book::first_run`]). The daemon reads through
//! the CLI; tests script the answers.

use std::time::Duration;

use crate::fleet::session::Live;

/// The reads, the wait and the clock of one session's look.
pub(crate) trait Probe {
    /// `session show`; `None` when unreadable.
    fn read(&self) -> Option<Live>;
    /// Whether a hook file exists for the session (a `stat`, no CLI call).
    fn hook_file(&self) -> bool;
    /// `session output --pane -q`; `None` when it could not be captured.
    fn pane(&self) -> Option<String>;
    /// Waits the gap; false if shutdown came first.
    fn wait(&self, gap: Duration) -> bool;
    fn now(&self) -> f64;
}
