//! Thread A: reports hook files as agent-deck writes them.
//!
//! The kernel tells us where it can: inotify on Linux, kqueue on macOS. When
//! neither can be armed (on Linux, `max_user_instances` or `max_user_watches`
//! exhausted) or `WATCH_BACKEND=scan` asks for it, the thread scans the hook
//! directories every [`SCAN_EVERY`] instead, logs that once, and tries the
//! kernel again every [`RETRY_KERNEL`]. Every switch sends a rescan, so
//! nothing written in between is lost. It only reports; it never calls
//! agent-deck.

use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config::WatchBackend;
use crate::sys::say_once::{SayOnce, ONCE};
use crate::sys::shutdown::Shutdown;
use crate::triggers::dir_scan::HookDirs;
use crate::triggers::event_queue::{EventQueue, Trigger};
use crate::triggers::WatchEnd;

#[cfg(target_os = "linux")]
use crate::triggers::inotify::Watcher as Kernel;
#[cfg(target_os = "macos")]
use crate::triggers::kqueue::Watcher as Kernel;

/// How often the fallback looks at the hook directories.
pub(crate) const SCAN_EVERY: Duration = Duration::from_millis(250);
/// How often the fallback tries to arm the kernel's notifications again.
const RETRY_KERNEL: Duration = Duration::from_secs(60);

/// Starts thread A. The hooks directory is watched (or its absence noted)
/// before this returns.
pub(crate) fn spawn(
    dir: PathBuf,
    queue: Arc<EventQueue>,
    shutdown: Shutdown,
    backend: WatchBackend,
) -> std::io::Result<JoinHandle<()>> {
    let mut watch = HookWatch {
        dir,
        queue,
        backend,
        fallback: SayOnce::new(),
    };
    let kernel = watch.arm_kernel();
    let scan = kernel.is_none().then(|| watch.primed_scan());
    std::thread::Builder::new()
        .name("hooks-watch".into())
        .spawn(move || watch.run(kernel, scan, &shutdown))
}

/// Thread A: the hooks directory it watches and the queue it reports to.
struct HookWatch {
    dir: PathBuf,
    queue: Arc<EventQueue>,
    backend: WatchBackend,
    /// The fallback, announced once until the kernel is back.
    fallback: SayOnce<()>,
}

impl HookWatch {
    fn run(&mut self, mut kernel: Option<Kernel>, mut scan: Option<HookDirs>, shutdown: &Shutdown) {
        loop {
            if let Some(mut k) = kernel.take() {
                if k.run(shutdown) == WatchEnd::Shutdown {
                    return;
                }
                self.announce_fallback("the kernel's watch limit is reached");
                self.queue.send(Trigger::Rescan);
            }
            let mut dirs = scan.take().unwrap_or_else(|| self.primed_scan());
            if !self.scan(&mut dirs, shutdown) {
                return;
            }
            kernel = self.arm_kernel();
            if kernel.is_some() {
                log::info!(
                    "kernel notifications for {} are back; scanning stops",
                    self.dir.display()
                );
                self.fallback.end(&(), Instant::now());
                self.queue.send(Trigger::Rescan);
            } else {
                scan = Some(dirs);
            }
        }
    }

    /// The kernel watcher, unless scanning was asked for or it cannot be had.
    fn arm_kernel(&mut self) -> Option<Kernel> {
        if self.backend == WatchBackend::Scan {
            return None;
        }
        Kernel::start(self.dir.clone(), self.queue.clone())
            .inspect_err(|e| self.announce_fallback(&e.to_string()))
            .ok()
    }

    /// Says once, until the kernel is back, that scanning stands in for it.
    fn announce_fallback(&mut self, why: &str) {
        if self.fallback.allows(&(), ONCE) {
            log::warn!(
                "cannot watch {} with kernel notifications ({why}); scanning it every {}ms instead and trying again every {}s",
                self.dir.display(),
                SCAN_EVERY.as_millis(),
                RETRY_KERNEL.as_secs()
            );
        }
    }

    /// The hook directories, looked at once.
    fn primed_scan(&mut self) -> HookDirs {
        if self.backend == WatchBackend::Scan {
            log::info!(
                "WATCH_BACKEND=scan: scanning {} every {}ms",
                self.dir.display(),
                SCAN_EVERY.as_millis()
            );
        }
        let mut dirs = HookDirs::new(self.dir.clone());
        dirs.look(&self.queue);
        dirs
    }

    /// Scans until it is time to try the kernel again (true) or shutdown
    /// (false).
    fn scan(&self, dirs: &mut HookDirs, shutdown: &Shutdown) -> bool {
        let until = Instant::now() + RETRY_KERNEL;
        while self.backend == WatchBackend::Scan || Instant::now() < until {
            if !shutdown.sleep(SCAN_EVERY) {
                return false;
            }
            dirs.look(&self.queue);
        }
        true
    }
}
