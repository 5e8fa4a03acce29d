//! The shutdown token every loop and wait checks.
//!
//! One trigger reaches three kinds of waiter at once: a flag for loops, a
//! channel that disconnects for `select!` and interruptible sleeps, and an
//! eventfd that turns readable for `poll()`-based threads. It never blocks.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

/// Cheap to clone; every clone sees the same trigger.
#[derive(Clone)]
pub struct Shutdown {
    inner: Arc<Inner>,
}

struct Inner {
    flag: AtomicBool,
    closer: Mutex<Option<Sender<()>>>,
    rx: Receiver<()>,
    efd: OwnedFd,
}

impl Shutdown {
    pub fn new() -> std::io::Result<Shutdown> {
        // SAFETY: eventfd has no memory-safety preconditions; we check the result.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor that nothing else owns.
        let efd = unsafe { OwnedFd::from_raw_fd(fd) };
        let (tx, rx) = crossbeam_channel::bounded(0);
        Ok(Shutdown {
            inner: Arc::new(Inner {
                flag: AtomicBool::new(false),
                closer: Mutex::new(Some(tx)),
                rx,
                efd,
            }),
        })
    }

    /// Asks everything to stop. Idempotent.
    pub fn trigger(&self) {
        self.inner.flag.store(true, Ordering::SeqCst);
        self.inner.closer.lock().take();
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our own eventfd.
        unsafe {
            libc::write(self.inner.efd.as_raw_fd(), (&one as *const u64).cast(), 8);
        }
    }

    pub fn is_set(&self) -> bool {
        self.inner.flag.load(Ordering::SeqCst)
    }

    /// Sleeps for `d` unless shutdown comes first. Returns false on shutdown.
    pub fn sleep(&self, d: Duration) -> bool {
        if self.is_set() {
            return false;
        }
        match self.inner.rx.recv_timeout(d) {
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => !self.is_set(),
            _ => false,
        }
    }

    /// Disconnects (so `recv` returns at once) when shutdown is triggered.
    pub fn receiver(&self) -> &Receiver<()> {
        &self.inner.rx
    }

    /// Turns readable when shutdown is triggered; for `poll()`.
    pub fn fd(&self) -> RawFd {
        self.inner.efd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn trigger_interrupts_sleep() {
        let s = Shutdown::new().unwrap();
        let s2 = s.clone();
        let t = std::thread::spawn(move || s2.sleep(Duration::from_secs(30)));
        s.trigger();
        let start = Instant::now();
        assert!(!t.join().unwrap());
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(s.is_set());
        assert!(!s.sleep(Duration::from_secs(30)));
    }

    #[test]
    fn short_sleep_completes() {
        let s = Shutdown::new().unwrap();
        assert!(s.sleep(Duration::from_millis(1)));
    }
}
