//! The shutdown token every loop and wait checks. One trigger, which never
//! blocks, reaches three kinds of waiter: a flag for loops, a channel that
//! disconnects for `select!` and sleeps, and a pipe (not an eventfd: the same
//! on macOS) that turns readable for `poll()`.

use std::io::{PipeReader, PipeWriter, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;
use rustix::event::{poll, PollFd, PollFlags, Timespec};

/// The longest nap after a failed `poll`.
const POLL_NAP: Duration = Duration::from_millis(25);

/// Cheap to clone; every clone sees the same trigger.
#[derive(Clone)]
pub(crate) struct Shutdown {
    inner: Arc<Inner>,
}

struct Inner {
    flag: AtomicBool,
    closer: Mutex<Option<Sender<()>>>,
    rx: Receiver<()>,
    /// Never read from: once written, it stays readable.
    wake_rx: PipeReader,
    wake_tx: PipeWriter,
}

impl Shutdown {
    pub(crate) fn new() -> std::io::Result<Shutdown> {
        let (wake_rx, wake_tx) = std::io::pipe()?;
        let (tx, rx) = crossbeam_channel::bounded(0);
        Ok(Shutdown {
            inner: Arc::new(Inner {
                flag: AtomicBool::new(false),
                closer: Mutex::new(Some(tx)),
                rx,
                wake_rx,
                wake_tx,
            }),
        })
    }

    /// Asks everything to stop. Idempotent.
    pub(crate) fn trigger(&self) {
        if self.inner.flag.swap(true, Ordering::SeqCst) {
            return;
        }
        self.inner.closer.lock().take();
        // One byte in an empty pipe never blocks; nobody reads it, so the pipe
        // stays readable for every later poll.
        if let Err(e) = (&self.inner.wake_tx).write_all(&[1]) {
            log::warn!("cannot wake the poll()-based threads for shutdown ({e}); they notice within their timeout");
        }
    }

    pub(crate) fn is_set(&self) -> bool {
        self.inner.flag.load(Ordering::SeqCst)
    }

    /// Sleeps for `d` unless shutdown comes first. Returns false on shutdown.
    pub(crate) fn sleep(&self, d: Duration) -> bool {
        !self.is_set()
            && self.inner.rx.recv_timeout(d) == Err(RecvTimeoutError::Timeout)
            && !self.is_set()
    }

    /// Disconnects (so `recv` returns at once) when shutdown is triggered.
    pub(crate) fn receiver(&self) -> &Receiver<()> {
        &self.inner.rx
    }

    /// Turns readable when shutdown is triggered; for `poll()` and kqueue.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.inner.wake_rx.as_fd()
    }

    /// Waits up to `wait` (`None`: no bound) for any `fds` or shutdown to turn
    /// readable; false when none did, or `poll` failed (then it naps).
    pub(crate) fn wait_readable(
        &self,
        fds: &[Option<BorrowedFd<'_>>],
        wait: Option<Duration>,
    ) -> bool {
        let fds = fds.iter().flatten().copied().chain([self.fd()]);
        let mut polled: Vec<_> = fds
            .map(|fd| PollFd::from_borrowed_fd(fd, PollFlags::IN))
            .collect();
        let timeout = wait.and_then(|w| Timespec::try_from(w).ok());
        match poll(&mut polled, timeout.as_ref()) {
            Ok(n) => n > 0,
            Err(rustix::io::Errno::INTR) => false,
            Err(_) => {
                std::thread::sleep(wait.unwrap_or(POLL_NAP).min(POLL_NAP));
                false
            }
        }
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

    #[test]
    fn trigger_makes_the_wake_fd_readable_for_poll() {
        let s = Shutdown::new().unwrap();
        let readable = |s: &Shutdown| s.wait_readable(&[], Some(Duration::ZERO));
        assert!(!readable(&s));
        s.trigger();
        s.trigger();
        assert!(readable(&s));
        assert!(readable(&s), "stays readable for every waiter");
    }
}
