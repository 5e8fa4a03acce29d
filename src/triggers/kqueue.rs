//! Thread A's macOS backend: kqueue `EVFILT_VNODE` watches on the hooks
//! directory, `sandbox/` and each `sandbox/<id>/`.
//!
//! Each directory is opened with `O_EVTONLY` (it does not keep a volume busy)
//! and watched for `NOTE_WRITE` (an entry was added, renamed or removed) and
//! for its own deletion or rename. kqueue names the directory, not the file,
//! so every wake-up is followed by [`HookDirs::look`], which diffs the
//! listings of the directories that changed; the set of watched directories
//! then follows what the look found. A missing hooks directory is looked for
//! again every second. The shutdown wake-up fd is in the same kqueue, so the
//! thread wakes for shutdown at once. It only reports; it never calls
//! agent-deck.

use std::collections::BTreeMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::sys::shutdown::Shutdown;
use crate::triggers::dir_scan::HookDirs;
use crate::triggers::queue::EventQueue;
use crate::triggers::watch::Ended;

/// How often a missing hooks directory is looked for again.
const MISSING_RECHECK: libc::timespec = libc::timespec {
    tv_sec: 1,
    tv_nsec: 0,
};

pub struct Watcher {
    kq: OwnedFd,
    dirs: HookDirs,
    queue: Arc<EventQueue>,
    /// The open directory behind each watch; closing it ends the watch.
    watched: BTreeMap<PathBuf, OwnedFd>,
}

impl Watcher {
    /// A kqueue armed on `dir`'s directories as they are now. Fails when no
    /// kqueue can be had.
    pub fn start(dir: PathBuf, queue: Arc<EventQueue>) -> io::Result<Watcher> {
        // SAFETY: kqueue() takes no arguments; the result is checked below.
        let fd = unsafe { libc::kqueue() };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        let kq = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut w = Watcher {
            kq,
            dirs: HookDirs::new(dir),
            queue,
            watched: BTreeMap::new(),
        };
        w.dirs.look(&w.queue);
        w.sync()?;
        Ok(w)
    }

    /// Reports hook files until shutdown, or until kqueue refuses a watch.
    pub fn run(&mut self, shutdown: &Shutdown) -> Ended {
        if let Err(e) = self.register(shutdown.fd(), libc::EVFILT_READ, 0) {
            log::warn!("kqueue cannot wait for shutdown ({e}); scanning instead");
            return Ended::LimitReached;
        }
        while !shutdown.is_set() {
            let timeout = (!self.dirs.present()).then_some(MISSING_RECHECK);
            if let Err(e) = self.wait(timeout) {
                log::warn!("kqueue wait failed ({e}); scanning instead");
                return Ended::LimitReached;
            }
            if shutdown.is_set() {
                break;
            }
            self.dirs.look(&self.queue);
            if let Err(e) = self.sync() {
                log::warn!("kqueue cannot watch one more directory ({e}); scanning instead");
                return Ended::LimitReached;
            }
        }
        log::debug!("kqueue watcher stopped");
        Ended::Shutdown
    }

    /// Watches exactly the directories the last look found.
    fn sync(&mut self) -> io::Result<()> {
        let wanted = self.dirs.dirs();
        self.watched.retain(|path, _| wanted.contains(path));
        for path in wanted {
            if self.watched.contains_key(&path) {
                continue;
            }
            let dir = match std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_EVTONLY | libc::O_DIRECTORY)
                .open(&path)
            {
                Ok(f) => OwnedFd::from(f),
                // Gone between the look and now: the next look notices.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            let flags =
                libc::NOTE_WRITE | libc::NOTE_DELETE | libc::NOTE_RENAME | libc::NOTE_REVOKE;
            self.register(dir.as_raw_fd(), libc::EVFILT_VNODE, flags)?;
            self.watched.insert(path, dir);
        }
        Ok(())
    }

    fn register(&self, fd: RawFd, filter: i16, fflags: u32) -> io::Result<()> {
        let change = event(fd, filter, libc::EV_ADD | libc::EV_CLEAR, fflags);
        // SAFETY: one valid change record in, no event buffer out; the kqueue
        // and `fd` are open for the duration of the call.
        let n = unsafe {
            libc::kevent(
                self.kq.as_raw_fd(),
                &change,
                1,
                std::ptr::null_mut(),
                0,
                std::ptr::null(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Blocks until something happened or `timeout` passed.
    fn wait(&self, timeout: Option<libc::timespec>) -> io::Result<()> {
        let mut events = [event(0, 0, 0, 0); 16];
        let timeout_ptr = timeout
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `events` is a writable buffer of the length passed; the
        // timeout, if any, lives until the call returns.
        let n = unsafe {
            libc::kevent(
                self.kq.as_raw_fd(),
                std::ptr::null(),
                0,
                events.as_mut_ptr(),
                events.len() as i32,
                timeout_ptr,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        Ok(())
    }
}

fn event(fd: RawFd, filter: i16, flags: u16, fflags: u32) -> libc::kevent {
    libc::kevent {
        ident: fd as usize,
        filter,
        flags,
        fflags,
        data: 0,
        udata: std::ptr::null_mut(),
    }
}
