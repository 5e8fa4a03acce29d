//! Thread A's Linux backend: watches the hooks directory with inotify and
//! reports which session wrote a hook file.
//!
//! agent-deck renames `.<id>.json.tmp-*` onto `<id>.json`, so `MOVED_TO` is
//! the main signal (`CLOSE_WRITE` covers in-place writers). Sandboxed sessions
//! write `sandbox/<id>/<id>.json`, so those directories are watched too. A
//! missing or deleted hooks directory is waited for and re-armed, never given
//! up on; a kernel queue overflow becomes a full rescan. The thread sleeps in
//! `poll()` on the inotify fd and the shutdown wake-up fd, so it wakes for
//! shutdown at once. When the kernel's inotify limits are reached it ends,
//! and [`crate::triggers::watch`] falls back to scanning. It only reports; it
//! never calls agent-deck.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};

use crate::sys::say_once::{SayOnce, ONCE};
use crate::sys::shutdown::Shutdown;
use crate::triggers::event_queue::{EventQueue, Trigger};
use crate::triggers::{WatchEnd, MISSING_RECHECK};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Watched {
    /// The hooks directory itself.
    Root,
    /// The parent of a hooks directory that does not exist yet.
    Parent,
    /// `hooks/sandbox`.
    Sandbox,
    /// `hooks/sandbox/<id>`.
    SandboxSession,
}

pub(crate) struct Watcher {
    inotify: Inotify,
    dir: PathBuf,
    queue: Arc<EventQueue>,
    kinds: HashMap<WatchDescriptor, Watched>,
    missing: SayOnce<()>,
    /// Not the first arming attempt: arming now may follow missed files.
    tried_before: bool,
    /// A watch could not be added because the kernel's watch limit is
    /// reached (`max_user_watches`): the caller falls back to scanning.
    exhausted: bool,
}

/// Whether adding a watch failed for the kernel's watch limit.
fn limit_reached(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENOSPC)
}

impl Watcher {
    /// An inotify instance armed on `dir` (or on its parent while `dir` does
    /// not exist). Fails when no inotify instance can be had.
    pub(crate) fn start(dir: PathBuf, queue: Arc<EventQueue>) -> io::Result<Watcher> {
        let mut w = Watcher {
            inotify: Inotify::init()?,
            dir,
            queue,
            kinds: HashMap::new(),
            missing: SayOnce::new(),
            tried_before: false,
            exhausted: false,
        };
        w.try_arm();
        if w.exhausted {
            return Err(io::Error::other("the inotify watch limit is reached"));
        }
        Ok(w)
    }

    /// Reports hook files until shutdown ([`WatchEnd::Shutdown`]) or until the
    /// watch limit keeps it from watching every directory.
    pub(crate) fn run(&mut self, shutdown: &Shutdown) -> WatchEnd {
        let mut buffer = vec![0u8; 64 * 1024];
        while !shutdown.is_set() {
            if self.exhausted {
                return WatchEnd::LimitReached;
            }
            if !self.armed() {
                self.try_arm();
            }
            let timeout = (!self.armed()).then_some(MISSING_RECHECK);
            let readable = shutdown.wait_readable(&[Some(self.inotify.as_fd())], timeout);
            if readable && !shutdown.is_set() {
                self.read_all(&mut buffer);
            }
        }
        log::debug!("inotify watcher stopped");
        WatchEnd::Shutdown
    }

    fn armed(&self) -> bool {
        self.kinds.values().any(|k| *k == Watched::Root)
    }

    /// Watches the hooks directory (and its sandboxes) if it exists now,
    /// otherwise its parent, so its creation is noticed.
    fn try_arm(&mut self) {
        let tried_before = std::mem::replace(&mut self.tried_before, true);
        let mask = WatchMask::MOVED_TO
            | WatchMask::CLOSE_WRITE
            | WatchMask::CREATE
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
            | WatchMask::ONLYDIR;
        match self.inotify.watches().add(&self.dir, mask) {
            Ok(wd) => {
                self.unwatch(|k| *k == Watched::Parent);
                self.kinds.insert(wd, Watched::Root);
                log::info!("watching hooks directory {}", self.dir.display());
                self.missing.end(&(), std::time::Instant::now());
                self.watch_sandbox();
                // Anything written while we were not watching is picked up by a
                // rescan; arming at start needs none, the daemon's first poll runs now.
                if tried_before {
                    self.queue.send(Trigger::Rescan);
                }
            }
            Err(e) if limit_reached(&e) => self.exhausted = true,
            Err(e) => {
                if self.missing.allows(&(), ONCE) {
                    log::warn!(
                        "hooks directory {} is not watchable ({e}); waiting for it to appear, the safety poll covers the gap",
                        self.dir.display()
                    );
                }
                if !self.kinds.values().any(|k| *k == Watched::Parent) {
                    if let Some(parent) = self.dir.parent() {
                        let pmask = WatchMask::CREATE | WatchMask::MOVED_TO | WatchMask::ONLYDIR;
                        if let Ok(wd) = self.inotify.watches().add(parent, pmask) {
                            self.kinds.insert(wd, Watched::Parent);
                        }
                    }
                }
            }
        }
    }

    fn watch_sandbox(&mut self) {
        let sandbox = self.dir.join("sandbox");
        let mask =
            WatchMask::CREATE | WatchMask::MOVED_TO | WatchMask::ONLYDIR | WatchMask::DELETE_SELF;
        let wd = match self.inotify.watches().add(&sandbox, mask) {
            Ok(wd) => wd,
            Err(e) => {
                self.exhausted |= limit_reached(&e);
                return;
            }
        };
        self.kinds.insert(wd, Watched::Sandbox);
        let entries = std::fs::read_dir(&sandbox).into_iter().flatten().flatten();
        for entry in entries.filter(|e| e.file_type().is_ok_and(|t| t.is_dir())) {
            self.watch_sandbox_session(&entry.path());
        }
    }

    fn watch_sandbox_session(&mut self, path: &Path) {
        let mask = WatchMask::MOVED_TO
            | WatchMask::CLOSE_WRITE
            | WatchMask::ONLYDIR
            | WatchMask::DELETE_SELF;
        match self.inotify.watches().add(path, mask) {
            Ok(wd) => {
                self.kinds.insert(wd, Watched::SandboxSession);
                // A file may have landed before the watch existed.
                for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
                    self.queue.send_hook(&entry.file_name());
                }
            }
            Err(e) => self.exhausted |= limit_reached(&e),
        }
    }

    /// Removes the watches of the kinds `drop` picks.
    fn unwatch(&mut self, drop: impl Fn(&Watched) -> bool) {
        let mut watches = self.inotify.watches();
        self.kinds.retain(|wd, kind| {
            let keep = !drop(kind);
            if !keep {
                let _ = watches.remove(wd.clone());
            }
            keep
        });
    }

    fn disarm(&mut self) {
        self.unwatch(|k| *k != Watched::Parent);
        log::warn!(
            "hooks directory {} went away; waiting for it to come back",
            self.dir.display()
        );
        self.queue.send(Trigger::Rescan);
    }

    fn read_all(&mut self, buffer: &mut [u8]) {
        loop {
            match self.inotify.read_events(buffer) {
                Ok(events) => events.for_each(|e| self.handle(e.wd, e.mask, e.name)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    log::warn!("reading inotify events failed ({e}); rescanning and re-arming");
                    self.disarm();
                    return;
                }
            }
        }
    }

    fn handle(&mut self, wd: WatchDescriptor, mask: EventMask, name: Option<&OsStr>) {
        if mask.contains(EventMask::Q_OVERFLOW) {
            log::warn!("inotify queue overflowed; scheduling a full rescan");
            self.queue.send(Trigger::Rescan);
            return;
        }
        let Some(kind) = self.kinds.get(&wd).cloned() else {
            return;
        };
        let gone =
            mask.intersects(EventMask::DELETE_SELF | EventMask::MOVE_SELF | EventMask::IGNORED);
        let is_dir = mask.contains(EventMask::ISDIR);
        let file_written = mask.intersects(EventMask::MOVED_TO | EventMask::CLOSE_WRITE);
        let created = mask.intersects(EventMask::CREATE | EventMask::MOVED_TO);
        match kind {
            Watched::Root if gone => self.disarm(),
            Watched::Root if is_dir && created && name == Some(OsStr::new("sandbox")) => {
                self.watch_sandbox()
            }
            Watched::Parent if created && is_dir && name == self.dir.file_name() => self.try_arm(),
            Watched::Parent | Watched::Sandbox | Watched::SandboxSession if gone => {
                self.kinds.remove(&wd);
            }
            Watched::Sandbox if is_dir && created => {
                if let Some(n) = name {
                    self.watch_sandbox_session(&self.dir.join("sandbox").join(n));
                }
            }
            Watched::Root | Watched::SandboxSession if !is_dir && file_written => {
                name.into_iter().for_each(|n| self.queue.send_hook(n))
            }
            _ => {}
        }
    }
}
