//! Thread B: the safety-poll ticker. It sends one tick at once and then one
//! every `SAFETY_POLL_INTERVAL_S` into the same queue as thread A, and wakes
//! for shutdown at once. It only reports; the main loop does the tick.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::sys::shutdown::Shutdown;
use crate::triggers::event_queue::{EventQueue, Trigger};

/// Thread B: a tick now, then one every `interval`.
pub(crate) fn spawn(
    interval: Duration,
    queue: Arc<EventQueue>,
    shutdown: Shutdown,
) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("ticker".into())
        .spawn(move || {
            queue.send(Trigger::Tick);
            while shutdown.sleep(interval) {
                queue.send(Trigger::Tick);
            }
        })
        .map_err(|e| Error::runtime(format!("cannot start the ticker thread: {e}")))
}
