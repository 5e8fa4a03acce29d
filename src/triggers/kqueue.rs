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
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustix::event::kqueue::{self, Event, EventFilter, EventFlags, VnodeEvents};

use crate::sys::shutdown::Shutdown;
use crate::triggers::dir_scan::HookDirs;
use crate::triggers::event_queue::EventQueue;
use crate::triggers::{WatchEnd, MISSING_RECHECK};

pub(crate) struct Watcher {
    kq: OwnedFd,
    dirs: HookDirs,
    queue: Arc<EventQueue>,
    /// The open directory behind each watch; closing it ends the watch.
    watched: BTreeMap<PathBuf, OwnedFd>,
}

impl Watcher {
    /// A kqueue armed on `dir`'s directories as they are now. Fails when no
    /// kqueue can be had.
    pub(crate) fn start(dir: PathBuf, queue: Arc<EventQueue>) -> io::Result<Watcher> {
        let mut w = Watcher {
            kq: kqueue::kqueue()?,
            dirs: HookDirs::new(dir),
            queue,
            watched: BTreeMap::new(),
        };
        w.dirs.look(&w.queue);
        w.sync()?;
        Ok(w)
    }

    /// Reports hook files until shutdown, or until kqueue refuses a watch.
    pub(crate) fn run(&mut self, shutdown: &Shutdown) -> WatchEnd {
        let wake = Event::new(
            EventFilter::Read(shutdown.fd().as_raw_fd()),
            EventFlags::ADD | EventFlags::CLEAR,
            std::ptr::null_mut(),
        );
        if let Err(e) = self.change(&wake) {
            log::warn!("kqueue cannot wait for shutdown ({e}); scanning instead");
            return WatchEnd::LimitReached;
        }
        while !shutdown.is_set() {
            // Nothing watched (no hooks directory yet): look again soon.
            let timeout = self.watched.is_empty().then_some(MISSING_RECHECK);
            match self.kevent(&[], 16, timeout) {
                Err(e) if e.kind() != io::ErrorKind::Interrupted => {
                    log::warn!("kqueue wait failed ({e}); scanning instead");
                    return WatchEnd::LimitReached;
                }
                _ => {}
            }
            if shutdown.is_set() {
                break;
            }
            self.dirs.look(&self.queue);
            if let Err(e) = self.sync() {
                log::warn!("kqueue cannot watch one more directory ({e}); scanning instead");
                return WatchEnd::LimitReached;
            }
        }
        log::debug!("kqueue watcher stopped");
        WatchEnd::Shutdown
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
            let watch = Event::new(
                EventFilter::Vnode {
                    vnode: dir.as_raw_fd(),
                    flags: VnodeEvents::WRITE
                        | VnodeEvents::DELETE
                        | VnodeEvents::RENAME
                        | VnodeEvents::REVOKE,
                },
                EventFlags::ADD | EventFlags::CLEAR,
                std::ptr::null_mut(),
            );
            self.change(&watch)?;
            self.watched.insert(path, dir);
        }
        Ok(())
    }

    /// Adds `event` to the kqueue, taking none of the pending events.
    fn change(&self, event: &Event) -> io::Result<()> {
        self.kevent(std::slice::from_ref(event), 0, Some(Duration::ZERO))
    }

    /// Applies `changes`, then waits up to `timeout` for up to `room` events
    /// and drops them: a wake-up only means "look again".
    fn kevent(&self, changes: &[Event], room: usize, timeout: Option<Duration>) -> io::Result<()> {
        let mut events: Vec<Event> = Vec::with_capacity(room);
        // SAFETY: every fd named by an event is the shutdown pipe (alive as
        // long as the daemon) or a watched directory kept open in `watched`;
        // closing one removes its knote, and any event that still names a
        // reused fd only causes one more look, which is harmless.
        unsafe { kqueue::kevent(self.kq.as_fd(), changes, &mut events, timeout) }?;
        Ok(())
    }
}
