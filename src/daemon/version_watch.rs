//! The thread that reads agent-deck's version again when it is due: hourly,
//! and soon after a call failed in a way a replaced binary explains (at most
//! once in ten minutes; `fleet/version_watch.rs` decides). It runs beside
//! the main loop, so a slow or hanging `agent-deck version` never delays a
//! tick or a restart; it holds no lock across the call.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::select;

use crate::error::{Error, Result};
use crate::fleet::deck::Cli;
use crate::sys::clock::Clock;
use crate::sys::shutdown::Shutdown;

/// How often the thread asks whether the hourly read is due.
const LOOK_EVERY: Duration = Duration::from_secs(30);

/// Starts the thread; it stops on shutdown.
pub(crate) fn spawn(
    cli: Arc<Cli>,
    clock: Arc<dyn Clock>,
    shutdown: Shutdown,
) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("version-watch".into())
        .spawn(move || loop {
            select! {
                recv(cli.nudged()) -> _ => {}
                recv(shutdown.receiver()) -> _ => {}
                default(LOOK_EVERY) => {}
            }
            if shutdown.is_set() {
                break;
            }
            if cli.version_due(clock.now()) {
                cli.read_version(clock.now());
            }
        })
        .map_err(|e| Error::runtime(format!("cannot start the version-watch thread: {e}")))
}
