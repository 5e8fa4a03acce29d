//! Signals: SIGTERM and SIGINT trigger shutdown, SIGHUP asks the main loop
//! to re-read the marker files. Handled on a named thread, never in a handler.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use crate::sys::shutdown::Shutdown;

/// SIGTERM/SIGINT trigger shutdown; SIGHUP asks for a reload.
pub(super) struct Signals {
    handle: signal_hook::iterator::Handle,
    thread: JoinHandle<()>,
}

impl Signals {
    pub(super) fn install(shutdown: Shutdown, reload: Arc<AtomicBool>) -> Result<Signals> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])
            .map_err(|e| Error::runtime(format!("cannot install signal handlers: {e}")))?;
        let handle = signals.handle();
        let thread = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    if sig == SIGHUP {
                        reload.store(true, Ordering::SeqCst);
                    } else {
                        log::info!("signal {sig} received, shutting down");
                        shutdown.trigger();
                    }
                }
            })
            .map_err(|e| Error::runtime(format!("cannot start the signal thread: {e}")))?;
        Ok(Signals { handle, thread })
    }

    pub(super) fn close(self) {
        self.handle.close();
        let _ = self.thread.join();
    }
}
