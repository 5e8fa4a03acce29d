//! Waiting for processes to exit, as the kernel tells it (a pidfd per pid on
//! Linux 5.3+, a kqueue `NOTE_EXIT` on macOS): "watch these pids; wait until
//! one exits, or shutdown, or a timeout". Either handle is bound to the
//! process when taken, so a reused pid can never fire it; the gap before is
//! the caller's to guard. Nothing here signals a process.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::sys::shutdown::Shutdown;

/// Why a pid could not be watched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArmError {
    /// It has exited already (a zombie included, on macOS).
    Gone,
    /// This kernel cannot watch a process (ENOSYS), or a sandbox forbids it.
    Unsupported(String),
    /// Anything else (out of fds, …).
    Failed(String),
}

impl std::fmt::Display for ArmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArmError::Gone => f.write_str("the process has exited"),
            ArmError::Unsupported(e) | ArmError::Failed(e) => f.write_str(e),
        }
    }
}

/// What ended a [`PidWatch::wait`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Woken {
    /// These pids exited and are no longer watched.
    Exited(BTreeSet<u32>),
    TimedOut,
    Shutdown,
}

/// A failed wait: said, then a nap, so a caller's loop never spins.
fn failed_wait(what: &str, e: impl std::fmt::Display) -> Woken {
    log::debug!("{what} failed ({e}); waiting again");
    std::thread::sleep(Duration::from_millis(50));
    Woken::TimedOut
}

#[cfg(target_os = "linux")]
pub(crate) use linux::PidWatch;
#[cfg(target_os = "macos")]
pub(crate) use macos::PidWatch;

#[cfg(target_os = "linux")]
mod linux {
    use super::*;
    use std::collections::BTreeMap;
    use std::os::fd::OwnedFd;

    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    use rustix::io::Errno;
    use rustix::process::{pidfd_open, Pid, PidfdFlags};

    /// One pidfd per watched pid.
    pub(crate) struct PidWatch {
        shutdown: Shutdown,
        fds: BTreeMap<u32, OwnedFd>,
    }

    fn open(pid: u32) -> Result<OwnedFd, ArmError> {
        let raw = i32::try_from(pid).ok().and_then(Pid::from_raw);
        let pid = raw.ok_or(ArmError::Gone)?;
        pidfd_open(pid, PidfdFlags::empty()).map_err(|e| match e {
            Errno::SRCH => ArmError::Gone,
            Errno::NOSYS => ArmError::Unsupported(format!(
                "this kernel has no pidfd_open (Linux 5.3+ is needed): {e}"
            )),
            Errno::PERM | Errno::ACCESS => {
                ArmError::Unsupported(format!("pidfd_open is not permitted here: {e}"))
            }
            e => ArmError::Failed(format!("pidfd_open failed: {e}")),
        })
    }

    impl PidWatch {
        /// A watch that wakes for `shutdown` too, if this kernel can watch one.
        pub(crate) fn new(shutdown: Shutdown) -> Result<PidWatch, ArmError> {
            if let Err(e @ ArmError::Unsupported(_)) = open(std::process::id()) {
                return Err(e);
            }
            Ok(PidWatch {
                shutdown,
                fds: BTreeMap::new(),
            })
        }

        /// Watches `pid` (again: a no-op).
        pub(crate) fn arm(&mut self, pid: u32) -> Result<(), ArmError> {
            if let std::collections::btree_map::Entry::Vacant(slot) = self.fds.entry(pid) {
                slot.insert(open(pid)?);
            }
            Ok(())
        }

        pub(crate) fn disarm(&mut self, pid: u32) {
            self.fds.remove(&pid);
        }

        #[cfg(test)]
        pub(crate) fn is_armed(&self, pid: u32) -> bool {
            self.fds.contains_key(&pid)
        }

        /// Waits up to `timeout` for a watched pid to exit or shutdown.
        pub(crate) fn wait(&mut self, timeout: Duration) -> Woken {
            if self.shutdown.is_set() {
                return Woken::Shutdown;
            }
            let mut polled: Vec<PollFd> = self
                .fds
                .values()
                .map(|fd| PollFd::new(fd, PollFlags::IN))
                .chain([PollFd::from_borrowed_fd(self.shutdown.fd(), PollFlags::IN)])
                .collect();
            let timeout = Timespec::try_from(timeout).ok();
            match poll(&mut polled, timeout.as_ref()) {
                Ok(0) | Err(Errno::INTR) => return Woken::TimedOut,
                Ok(_) => {}
                Err(e) => return failed_wait("poll on the pidfds", e),
            }
            if self.shutdown.is_set() {
                return Woken::Shutdown;
            }
            let exited: BTreeSet<u32> = (self.fds.keys())
                .zip(&polled)
                .filter(|(_, p)| !p.revents().is_empty())
                .map(|(pid, _)| *pid)
                .collect();
            drop(polled);
            for pid in &exited {
                self.fds.remove(pid);
            }
            Woken::Exited(exited)
        }
    }
}

#[cfg(target_os = "macos")]
mod macos {
    use super::*;
    use std::os::fd::{AsFd, AsRawFd, OwnedFd};

    use rustix::event::kqueue::{self, Event, EventFilter, EventFlags, ProcessEvents};
    use rustix::io::Errno;
    use rustix::process::Pid;

    /// One kqueue: a `NOTE_EXIT` filter per pid, and the shutdown pipe.
    pub(crate) struct PidWatch {
        shutdown: Shutdown,
        kq: OwnedFd,
        pids: BTreeSet<u32>,
    }

    fn proc_event(pid: Pid, flags: EventFlags) -> Event {
        let filter = EventFilter::Proc {
            pid,
            flags: ProcessEvents::EXIT,
        };
        Event::new(filter, flags, std::ptr::null_mut())
    }

    impl PidWatch {
        /// A watch that wakes for `shutdown` too, if a kqueue can be had.
        pub(crate) fn new(shutdown: Shutdown) -> Result<PidWatch, ArmError> {
            let kq =
                kqueue::kqueue().map_err(|e| ArmError::Unsupported(format!("no kqueue: {e}")))?;
            let wake = Event::new(
                EventFilter::Read(shutdown.fd().as_raw_fd()),
                EventFlags::ADD | EventFlags::CLEAR,
                std::ptr::null_mut(),
            );
            let w = PidWatch {
                shutdown,
                kq,
                pids: BTreeSet::new(),
            };
            w.change(&wake).map_err(|e| {
                ArmError::Unsupported(format!("kqueue cannot wait for shutdown: {e}"))
            })?;
            Ok(w)
        }

        /// Applies one change, taking no event.
        fn change(&self, event: &Event) -> Result<(), Errno> {
            let mut none: Vec<Event> = Vec::new();
            // SAFETY: the only fd an event names is the shutdown pipe, which
            // `self.shutdown` keeps open as long as this kqueue.
            unsafe {
                kqueue::kevent(
                    self.kq.as_fd(),
                    std::slice::from_ref(event),
                    &mut none,
                    Some(Duration::ZERO),
                )
            }
            .map(|_| ())
        }

        /// Watches `pid` (again: a no-op). ESRCH: it has exited already.
        pub(crate) fn arm(&mut self, pid: u32) -> Result<(), ArmError> {
            if self.pids.contains(&pid) {
                return Ok(());
            }
            let raw = i32::try_from(pid).ok().and_then(Pid::from_raw);
            let p = raw.ok_or(ArmError::Gone)?;
            match self.change(&proc_event(p, EventFlags::ADD | EventFlags::ONESHOT)) {
                Ok(()) => {
                    self.pids.insert(pid);
                    Ok(())
                }
                Err(Errno::SRCH) => Err(ArmError::Gone),
                Err(e @ (Errno::PERM | Errno::ACCESS)) => Err(ArmError::Unsupported(format!(
                    "kqueue may not watch processes here: {e}"
                ))),
                Err(e) => Err(ArmError::Failed(format!("kqueue EVFILT_PROC failed: {e}"))),
            }
        }

        pub(crate) fn disarm(&mut self, pid: u32) {
            if self.pids.remove(&pid) {
                if let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
                    let _ = self.change(&proc_event(p, EventFlags::DELETE));
                }
            }
        }

        #[cfg(test)]
        pub(crate) fn is_armed(&self, pid: u32) -> bool {
            self.pids.contains(&pid)
        }

        /// Waits up to `timeout` for a watched pid to exit or shutdown.
        pub(crate) fn wait(&mut self, timeout: Duration) -> Woken {
            if self.shutdown.is_set() {
                return Woken::Shutdown;
            }
            let mut events: Vec<Event> = Vec::with_capacity(64);
            // SAFETY: as in `change`.
            let got = unsafe { kqueue::kevent(self.kq.as_fd(), &[], &mut events, Some(timeout)) };
            match got {
                Ok(_) => {}
                Err(Errno::INTR) => return Woken::TimedOut,
                Err(e) => return failed_wait("kqueue wait", e),
            }
            if self.shutdown.is_set() {
                return Woken::Shutdown;
            }
            let exited: BTreeSet<u32> = events
                .iter()
                .filter_map(|e| match e.filter() {
                    EventFilter::Proc { pid, .. } => u32::try_from(pid.as_raw_nonzero().get()).ok(),
                    _ => None,
                })
                .collect();
            if events.is_empty() {
                return Woken::TimedOut;
            }
            for pid in &exited {
                // ONESHOT: the kernel dropped the filter already.
                self.pids.remove(pid);
            }
            Woken::Exited(exited)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn watch() -> Option<(PidWatch, Shutdown)> {
        let s = Shutdown::new().unwrap();
        match PidWatch::new(s.clone()) {
            Ok(w) => Some((w, s)),
            // A sandbox without pidfd: what the daemon then does is tested
            // black-box; here there is nothing to wait on.
            Err(ArmError::Unsupported(e)) => {
                eprintln!("skipped: {e}");
                None
            }
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_killed_child_wakes_the_wait_with_its_pid() {
        let Some((mut w, _s)) = watch() else { return };
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        w.arm(child.id()).unwrap();
        w.arm(other.id()).unwrap();
        assert_eq!(w.wait(Duration::from_millis(20)), Woken::TimedOut);
        child.kill().unwrap();
        let started = Instant::now();
        let woken = loop {
            match w.wait(Duration::from_secs(10)) {
                Woken::TimedOut if started.elapsed() < Duration::from_secs(10) => continue,
                other => break other,
            }
        };
        assert_eq!(woken, Woken::Exited([child.id()].into()));
        assert!(!w.is_armed(child.id()) && w.is_armed(other.id()));
        let _ = child.wait();
        let _ = other.kill();
        let _ = other.wait();
        assert_eq!(w.arm(child.id()), Err(ArmError::Gone), "reaped: gone");
    }

    #[test]
    fn the_wait_returns_on_shutdown_in_bounded_time() {
        let Some((mut w, s)) = watch() else { return };
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        w.arm(child.id()).unwrap();
        let s2 = s.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            s2.trigger();
        });
        let started = Instant::now();
        assert_eq!(w.wait(Duration::from_secs(60)), Woken::Shutdown);
        assert!(started.elapsed() < Duration::from_secs(5));
        t.join().unwrap();
        let _ = child.kill();
        let _ = child.wait();
    }
}
