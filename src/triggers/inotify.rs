//! Thread A: watches the hooks directory with inotify and reports which
//! session wrote a hook file.
//!
//! agent-deck renames `.<id>.json.tmp-*` onto `<id>.json`, so `MOVED_TO` is
//! the main signal (`CLOSE_WRITE` covers in-place writers). Sandboxed sessions
//! write `sandbox/<id>/<id>.json`, so those directories are watched too. A
//! missing or deleted hooks directory is waited for and re-armed, never given
//! up on; a kernel queue overflow becomes a full rescan. The thread sleeps in
//! `poll()` on the inotify fd and the shutdown eventfd, so it wakes for
//! shutdown at once. It only reports; it never calls agent-deck.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};

use crate::sys::shutdown::Shutdown;
use crate::triggers::hook_file::hook_id;
use crate::triggers::queue::{EventQueue, Trigger};

/// How often a missing hooks directory is looked for again, in ms, on top of
/// the watch on its parent.
const MISSING_RECHECK_MS: i32 = 1000;

/// Starts the watcher thread.
pub fn spawn(
    dir: PathBuf,
    queue: Arc<EventQueue>,
    shutdown: Shutdown,
) -> io::Result<JoinHandle<()>> {
    let mut w = Watcher {
        inotify: Inotify::init()?,
        dir,
        queue,
        kinds: HashMap::new(),
        warned_missing: false,
        tried_before: false,
    };
    // Armed (or waiting for the directory, watching its parent) before this returns.
    w.try_arm();
    std::thread::Builder::new()
        .name("inotify".into())
        .spawn(move || w.run(&shutdown))
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// The hooks directory itself.
    Root,
    /// The parent of a hooks directory that does not exist yet.
    Parent,
    /// `hooks/sandbox`.
    Sandbox,
    /// `hooks/sandbox/<id>`.
    SandboxSession,
}

struct Watcher {
    inotify: Inotify,
    dir: PathBuf,
    queue: Arc<EventQueue>,
    kinds: HashMap<WatchDescriptor, Kind>,
    warned_missing: bool,
    /// Not the first arming attempt: arming now may follow missed files.
    tried_before: bool,
}

impl Watcher {
    fn run(&mut self, shutdown: &Shutdown) {
        let mut buffer = vec![0u8; 64 * 1024];
        while !shutdown.is_set() {
            if !self.armed() {
                self.try_arm();
            }
            let timeout = if self.armed() { -1 } else { MISSING_RECHECK_MS };
            if !wait_readable(self.inotify.as_raw_fd(), shutdown.fd(), timeout) {
                continue;
            }
            if shutdown.is_set() {
                break;
            }
            self.read_all(&mut buffer);
        }
        log::debug!("inotify watcher stopped");
    }

    fn armed(&self) -> bool {
        self.kinds.values().any(|k| *k == Kind::Root)
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
                self.drop_kind(&Kind::Parent);
                self.kinds.insert(wd, Kind::Root);
                log::info!("watching hooks directory {}", self.dir.display());
                self.warned_missing = false;
                self.watch_sandbox();
                // Anything written while we were not watching is picked up by a
                // rescan; arming at start needs none, the daemon's first poll runs now.
                if tried_before {
                    self.queue.send(Trigger::Rescan);
                }
            }
            Err(e) => {
                if !self.warned_missing {
                    log::warn!(
                        "hooks directory {} is not watchable ({e}); waiting for it to appear, the safety poll covers the gap",
                        self.dir.display()
                    );
                    self.warned_missing = true;
                }
                if !self.kinds.values().any(|k| *k == Kind::Parent) {
                    if let Some(parent) = self.dir.parent() {
                        let pmask = WatchMask::CREATE | WatchMask::MOVED_TO | WatchMask::ONLYDIR;
                        if let Ok(wd) = self.inotify.watches().add(parent, pmask) {
                            self.kinds.insert(wd, Kind::Parent);
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
        let Ok(wd) = self.inotify.watches().add(&sandbox, mask) else {
            return;
        };
        self.kinds.insert(wd, Kind::Sandbox);
        if let Ok(entries) = std::fs::read_dir(&sandbox) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    self.watch_sandbox_session(&entry.path());
                }
            }
        }
    }

    fn watch_sandbox_session(&mut self, path: &Path) {
        let mask = WatchMask::MOVED_TO
            | WatchMask::CLOSE_WRITE
            | WatchMask::ONLYDIR
            | WatchMask::DELETE_SELF;
        if let Ok(wd) = self.inotify.watches().add(path, mask) {
            self.kinds.insert(wd, Kind::SandboxSession);
            // A file may have landed before the watch existed.
            if let Ok(entries) = std::fs::read_dir(path) {
                for entry in entries.flatten() {
                    self.report(&entry.file_name());
                }
            }
        }
    }

    fn drop_kind(&mut self, kind: &Kind) {
        let wds: Vec<_> = self
            .kinds
            .iter()
            .filter(|(_, k)| *k == kind)
            .map(|(wd, _)| wd.clone())
            .collect();
        for wd in wds {
            let _ = self.inotify.watches().remove(wd.clone());
            self.kinds.remove(&wd);
        }
    }

    fn disarm(&mut self) {
        for kind in [Kind::Root, Kind::Sandbox, Kind::SandboxSession] {
            self.drop_kind(&kind);
        }
        log::warn!(
            "hooks directory {} went away; waiting for it to come back",
            self.dir.display()
        );
        self.queue.send(Trigger::Rescan);
    }

    fn report(&self, name: &OsStr) {
        if let Some(id) = name.to_str().and_then(hook_id) {
            self.queue.send(Trigger::Hook(id.to_owned()));
        }
    }

    fn read_all(&mut self, buffer: &mut [u8]) {
        loop {
            let events: Vec<(WatchDescriptor, EventMask, Option<std::ffi::OsString>)> =
                match self.inotify.read_events(buffer) {
                    Ok(events) => events
                        .map(|e| (e.wd, e.mask, e.name.map(OsStr::to_os_string)))
                        .collect(),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        log::warn!("reading inotify events failed ({e}); rescanning and re-arming");
                        self.disarm();
                        return;
                    }
                };
            if events.is_empty() {
                return;
            }
            for (wd, mask, name) in events {
                self.handle(wd, mask, name.as_deref());
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
            Kind::Root if gone => self.disarm(),
            Kind::Root if is_dir && created && name == Some(OsStr::new("sandbox")) => {
                self.watch_sandbox()
            }
            Kind::Root if !is_dir && file_written => {
                if let Some(n) = name {
                    self.report(n);
                }
            }
            Kind::Parent if created && is_dir && name == self.dir.file_name() => self.try_arm(),
            Kind::Parent if gone => {
                self.kinds.remove(&wd);
            }
            Kind::Sandbox if gone => {
                self.kinds.remove(&wd);
            }
            Kind::Sandbox if is_dir && created => {
                if let Some(n) = name {
                    let path = self.dir.join("sandbox").join(n);
                    self.watch_sandbox_session(&path);
                }
            }
            Kind::SandboxSession if gone => {
                self.kinds.remove(&wd);
            }
            Kind::SandboxSession if !is_dir && file_written => {
                if let Some(n) = name {
                    self.report(n);
                }
            }
            _ => {}
        }
    }
}

/// Blocks until `fd` is readable (true), or `stop_fd` is readable or the
/// timeout passes (false).
fn wait_readable(fd: i32, stop_fd: i32, timeout_ms: i32) -> bool {
    let mut fds = [
        libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: stop_fd,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: fds is a valid array of two pollfd structs for the duration of the call.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout_ms) };
    n > 0 && fds[0].revents & libc::POLLIN != 0 && fds[1].revents == 0
}
