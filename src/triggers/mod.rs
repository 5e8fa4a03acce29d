//! Triggers: what wakes the main loop. Thread A reports hook files as they
//! are written (inotify on Linux, kqueue on macOS, a directory scan when
//! neither can be had), thread B ticks the safety poll, thread C (the pane
//! watch) reports panes that died and what each of its listings found, and
//! all three feed one bounded queue. Nothing here decides or acts.

pub(crate) mod dir_scan;
pub(crate) mod event_queue;
pub(crate) mod hook_file;
#[cfg(target_os = "linux")]
pub(crate) mod inotify;
#[cfg(target_os = "macos")]
pub(crate) mod kqueue;
pub(crate) mod pane_share;
pub(crate) mod panes_watch;
pub(crate) mod ticker;
pub(crate) mod watch;

/// How often a kernel watcher looks again for a missing hooks directory
/// (inotify also watches its parent).
pub(crate) const MISSING_RECHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// Why a kernel watcher (inotify or kqueue) stopped; [`watch`] acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchEnd {
    Shutdown,
    /// The kernel will not watch one more directory.
    LimitReached,
}
