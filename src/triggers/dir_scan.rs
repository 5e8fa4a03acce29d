//! The hook spool as directory listings: what changed since the last look.
//!
//! Used where the kernel does not name the file that changed: kqueue (macOS)
//! says only "this directory was written", and the scan fallback has no
//! kernel help at all. [`HookDirs::look`] stats the hooks dir, `sandbox/` and
//! each `sandbox/<id>/`; only a directory whose mtime moved (or moved very
//! recently) is listed again, so an idle look costs one `stat` per directory.
//! A listing is diffed against the previous one by (inode, mtime, size): a
//! hook renamed into place gets a new inode, a rewrite a new mtime or size.
//! It reports hook ids and rescans into the queue; it never calls agent-deck.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::triggers::event_queue::{EventQueue, Trigger};

/// A directory's listing is read again while its mtime is this recent: two
/// changes inside one timestamp tick must not hide the second one.
const RECENT: Duration = Duration::from_secs(2);

/// What identifies one version of a directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub ino: u64,
    pub mtime_ns: i128,
    pub size: u64,
    /// A directory (not a symlink to one): a `sandbox/<id>/`.
    pub is_dir: bool,
}

pub(crate) type Entries = BTreeMap<OsString, Stamp>;

/// The names that are new in `now` or whose stamp changed since `before`.
pub(crate) fn changed(before: &Entries, now: &Entries) -> Vec<OsString> {
    now.iter()
        .filter(|(name, stamp)| before.get(*name) != Some(stamp))
        .map(|(name, _)| name.clone())
        .collect()
}

fn stamp(meta: &std::fs::Metadata) -> Stamp {
    Stamp {
        ino: meta.ino(),
        mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        size: meta.size(),
        is_dir: meta.is_dir(),
    }
}

/// One watched directory: its own stamp when last listed, and the listing.
#[derive(Debug, Default)]
struct Seen {
    dir_stamp: Option<Stamp>,
    listed_at: Option<SystemTime>,
    listing: Entries,
}

impl Seen {
    /// The entries changed since the last look, or `None` if the directory is
    /// gone (or not a directory).
    fn look(&mut self, dir: &Path) -> Option<Vec<OsString>> {
        let meta = std::fs::metadata(dir).ok().filter(|m| m.is_dir())?;
        let now_stamp = stamp(&meta);
        let recent = meta.modified().ok().is_some_and(|m| {
            self.listed_at
                .is_none_or(|at| at.duration_since(m).unwrap_or_default() < RECENT)
        });
        if self.dir_stamp == Some(now_stamp) && !recent {
            return Some(Vec::new());
        }
        // Symlinks in `dir` are not followed; an entry that vanishes while
        // being listed is left out.
        let listing: Entries = std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .filter_map(|e| Some((e.file_name(), stamp(&e.metadata().ok()?))))
            .collect();
        let names = changed(&self.listing, &listing);
        self.dir_stamp = Some(now_stamp);
        self.listed_at = Some(SystemTime::now());
        self.listing = listing;
        Some(names)
    }
}

/// The hooks directory, `sandbox/` and every `sandbox/<id>/`, looked at
/// together.
#[derive(Debug, Default)]
pub(crate) struct HookDirs {
    root: PathBuf,
    hooks: Option<Seen>,
    sandbox: Option<Seen>,
    sessions: BTreeMap<OsString, Seen>,
    /// The first look only learns what is there: the daemon's first poll
    /// covers it.
    primed: bool,
}

impl HookDirs {
    pub(crate) fn new(root: PathBuf) -> HookDirs {
        HookDirs {
            root,
            ..HookDirs::default()
        }
    }

    /// The directories that existed at the last look (for kqueue to watch).
    #[cfg_attr(not(target_os = "macos"), allow(dead_code, reason = "kqueue only"))]
    pub(crate) fn dirs(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        if self.hooks.is_some() {
            out.push(self.root.clone());
        }
        if self.sandbox.is_some() {
            let sandbox = self.root.join("sandbox");
            out.extend(self.sessions.keys().map(|id| sandbox.join(id)));
            out.push(sandbox);
        }
        out
    }

    /// Looks at every directory once and reports what changed: a hook per
    /// changed `<id>.json`, a rescan when the hooks directory comes or goes.
    pub(crate) fn look(&mut self, queue: &EventQueue) {
        let primed = std::mem::replace(&mut self.primed, true);
        let was_present = self.hooks.is_some();
        let mut hooks = self.hooks.take().unwrap_or_default();
        let Some(names) = hooks.look(&self.root) else {
            if was_present {
                log::warn!(
                    "hooks directory {} went away; waiting for it to come back",
                    self.root.display()
                );
                queue.send(Trigger::Rescan);
            }
            self.sandbox = None;
            self.sessions.clear();
            return;
        };
        self.hooks = Some(hooks);
        if primed && !was_present {
            log::info!(
                "hooks directory {} appeared; rescanning",
                self.root.display()
            );
            queue.send(Trigger::Rescan);
        } else if primed {
            names.iter().for_each(|n| queue.send_hook(n));
        }
        self.look_sandbox(queue, primed);
    }

    fn look_sandbox(&mut self, queue: &EventQueue, primed: bool) {
        let sandbox = self.root.join("sandbox");
        let mut seen = self.sandbox.take().unwrap_or_default();
        if seen.look(&sandbox).is_none() {
            self.sessions.clear();
            return;
        }
        // The listing's own stamps: an idle look stats no entry.
        let subdirs: BTreeSet<OsString> = seen
            .listing
            .iter()
            .filter(|(_, stamp)| stamp.is_dir)
            .map(|(name, _)| name.clone())
            .collect();
        self.sandbox = Some(seen);
        self.sessions.retain(|id, _| subdirs.contains(id));
        for id in subdirs {
            let fresh = !self.sessions.contains_key(&id);
            let session = self.sessions.entry(id.clone()).or_default();
            if let Some(names) = session.look(&sandbox.join(&id)) {
                // A file may have landed in a new sandbox before it was seen.
                if primed || !fresh {
                    names.iter().for_each(|n| queue.send_hook(n));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp_of(ino: u64, mtime_ns: i128, size: u64) -> Stamp {
        Stamp {
            ino,
            mtime_ns,
            size,
            is_dir: false,
        }
    }

    #[test]
    fn a_diff_names_new_and_changed_entries_only() {
        let before: Entries = [
            ("a.json".into(), stamp_of(1, 10, 5)),
            ("b.json".into(), stamp_of(2, 10, 5)),
            ("gone.json".into(), stamp_of(3, 10, 5)),
        ]
        .into_iter()
        .collect();
        let now: Entries = [
            ("a.json".into(), stamp_of(1, 10, 5)),
            ("b.json".into(), stamp_of(9, 10, 5)),
            ("c.json".into(), stamp_of(4, 11, 5)),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            changed(&before, &now),
            vec![OsString::from("b.json"), "c.json".into()]
        );
        assert!(changed(&now, &now).is_empty());
    }

    fn drain(q: &EventQueue) -> (Vec<String>, bool) {
        let b = q
            .next_batch(
                &crate::sys::shutdown::Shutdown::new().unwrap(),
                Duration::from_millis(1),
            )
            .unwrap_or_default();
        (b.hooks.into_iter().collect(), b.rescan)
    }

    fn rename_hook(dir: &Path, id: &str, body: &str) {
        let tmp = dir.join(format!(".{id}.json.tmp-1"));
        std::fs::write(&tmp, body).unwrap();
        std::fs::rename(&tmp, dir.join(format!("{id}.json"))).unwrap();
    }

    #[test]
    fn a_hook_renamed_into_place_is_reported_once() {
        let tmp = tempfile::tempdir().unwrap();
        let q = EventQueue::new(100);
        rename_hook(tmp.path(), "old-1", "{}");
        let mut dirs = HookDirs::new(tmp.path().to_owned());
        dirs.look(&q);
        assert_eq!(drain(&q), (vec![], false), "the first look only learns");
        rename_hook(tmp.path(), "a-1", r#"{"status":"dead"}"#);
        rename_hook(tmp.path(), "old-1", r#"{"status":"dead"}"#);
        dirs.look(&q);
        assert_eq!(drain(&q).0, vec!["a-1".to_string(), "old-1".to_string()]);
        dirs.look(&q);
        assert_eq!(drain(&q), (vec![], false));
    }

    #[test]
    fn sandbox_hooks_and_late_dirs_are_seen() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("hooks");
        let q = EventQueue::new(100);
        let mut dirs = HookDirs::new(root.clone());
        dirs.look(&q);
        assert!(dirs.dirs().is_empty());
        std::fs::create_dir_all(root.join("sandbox/s-1")).unwrap();
        rename_hook(&root.join("sandbox/s-1"), "s-1", "{}");
        dirs.look(&q);
        let (hooks, rescan) = drain(&q);
        assert!(rescan, "a hooks dir that appears is rescanned");
        assert_eq!(
            hooks,
            vec!["s-1".to_string()],
            "a new sandbox's hook counts"
        );
        assert_eq!(dirs.dirs().len(), 3);
        std::fs::remove_dir_all(&root).unwrap();
        dirs.look(&q);
        assert_eq!(
            drain(&q),
            (vec![], true),
            "a hooks dir that goes is rescanned"
        );
        assert!(dirs.dirs().is_empty());
    }

    #[test]
    fn an_idle_look_lists_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let q = EventQueue::new(100);
        let mut dirs = HookDirs::new(tmp.path().to_owned());
        dirs.look(&q);
        let mut seen = Seen::default();
        seen.look(tmp.path());
        // Pretend the listing is old: the dir's mtime is then not "recent".
        seen.listed_at = Some(SystemTime::now() + RECENT);
        seen.listing.insert("marker".into(), stamp_of(0, 0, 0));
        assert_eq!(seen.look(tmp.path()), Some(vec![]));
        assert!(
            seen.listing.contains_key(&OsString::from("marker")),
            "not listed again"
        );
    }
}
