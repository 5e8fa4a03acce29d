//! The thread that reads agent-deck's version again when it is due: hourly,
//! soon after a call failed in a way a replaced binary explains (at most
//! once in ten minutes), and after the first call that works once a read
//! got no answer (`fleet/version_watch.rs` decides). It runs beside
//! the main loop, so a slow or hanging `agent-deck version` never delays a
//! tick or a restart; it holds no lock across the call.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::select;

use crate::error::{Error, Result};
use crate::fleet::cli::Cli;
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
    spawn_looking_every(cli, clock, shutdown, LOOK_EVERY)
}

/// [`spawn`], asking whether a read is due every `look_every`, and at once
/// when a failed call asks for one.
fn spawn_looking_every(
    cli: Arc<Cli>,
    clock: Arc<dyn Clock>,
    shutdown: Shutdown,
    look_every: Duration,
) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("version-reread".into())
        .spawn(move || loop {
            select! {
                recv(cli.nudged()) -> _ => {}
                recv(shutdown.receiver()) -> _ => {}
                default(look_every) => {}
            }
            if shutdown.is_set() {
                break;
            }
            if cli.version_due(clock.now()) {
                cli.read_version(clock.now());
            }
        })
        .map_err(|e| Error::runtime(format!("cannot start the version-reread thread: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::deck::AgentDeck;
    use crate::fleet::version::Version;
    use crate::fleet::version_watch::{REREAD_EVERY, REREAD_FLOOR};
    use crate::sys::clock::FakeClock;
    use std::time::Instant;

    /// A CLI whose `version` prints the file `release` and whose every
    /// other command fails; written by a child shell (no ETXTBSY).
    fn cli(dir: &std::path::Path) -> Arc<Cli> {
        let bin = dir.join("agent-deck");
        let body = format!(
            "#!/bin/sh\ncase \"$*\" in version) cat '{}' ;; *) exit 1 ;; esac\n",
            dir.join("release").display()
        );
        crate::testing::write_script(&bin, &body);
        let shutdown = Shutdown::new().unwrap();
        Arc::new(Cli::new(bin, Duration::from_secs(10), shutdown))
    }

    fn release(dir: &std::path::Path, v: &str) {
        std::fs::write(dir.join("release"), format!("Agent Deck v{v}\n")).unwrap();
    }

    /// Waits for `done`, with a deadline.
    fn within(done: impl Fn() -> bool) -> bool {
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if done() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        done()
    }

    #[test]
    fn the_version_is_read_again_once_the_clock_passes_the_hour() {
        let tmp = tempfile::tempdir().unwrap();
        let (cli, clock) = (cli(tmp.path()), Arc::new(FakeClock::at(1000.0)));
        release(tmp.path(), "1.14.0");
        cli.read_version(clock.now());
        let shutdown = Shutdown::new().unwrap();
        let looks = Duration::from_millis(2);
        let h = spawn_looking_every(cli.clone(), clock.clone(), shutdown.clone(), looks).unwrap();
        release(tmp.path(), "1.16.26");
        clock.advance(REREAD_EVERY);
        assert!(within(|| cli.version() == Some(Version::new(1, 16, 26))));
        assert_eq!(cli.stats().calls.get("version"), Some(&2));
        shutdown.trigger();
        h.join().unwrap();
    }

    #[test]
    fn a_failed_list_wakes_the_thread_for_a_reread_and_the_floor_holds_the_next() {
        let tmp = tempfile::tempdir().unwrap();
        let (cli, clock) = (cli(tmp.path()), Arc::new(FakeClock::at(1000.0)));
        release(tmp.path(), "1.14.0");
        cli.read_version(clock.now());
        let shutdown = Shutdown::new().unwrap();
        // Only the wake-up of a failed call makes it look before the end.
        let looks = Duration::from_secs(3600);
        let h = spawn_looking_every(cli.clone(), clock.clone(), shutdown.clone(), looks).unwrap();
        release(tmp.path(), "1.16.26");
        assert!(cli.list_profile("default", &mut |_| {}).is_err());
        assert!(within(|| cli.version() == Some(Version::new(1, 16, 26))));
        let versions = || cli.stats().calls.get("version").copied();
        assert_eq!(versions(), Some(2));
        // A second failure inside the floor is owed, not read.
        clock.advance(REREAD_FLOOR / 2.0);
        assert!(cli.list_profile("default", &mut |_| {}).is_err());
        assert!(!cli.version_due(clock.now()));
        clock.advance(REREAD_FLOOR / 2.0);
        assert!(cli.version_due(clock.now()), "owed once the floor passed");
        shutdown.trigger();
        h.join().unwrap();
    }
}
