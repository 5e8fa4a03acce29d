//! Triggers: what wakes the main loop. Thread A reports hook files as they
//! are written, thread B ticks the safety poll, and both feed one bounded
//! queue. Nothing here decides or acts.

pub(crate) mod hook_file;
pub(crate) mod inotify;
pub(crate) mod queue;
pub(crate) mod ticker;
