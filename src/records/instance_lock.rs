//! The instance lock: one watchdog (daemon or `--once`) at a time, by `flock`
//! on `watchdog.lock` for the life of the [`InstanceLock`] (the kernel drops
//! it with the process). The file names the holder as one JSON line
//! `{"pid":…,"dry_run":…,"once":…,"started_at":…}`, so `status`, `doctor` and
//! `drill` find the daemon without touching the lock: a probing `flock` would
//! make a daemon starting at that moment exit 3.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::sys::file_lock::{self, LockError, LockMode};
use crate::sys::fs::{open_lock_file, read_text, SMALL_FILE_MAX};
use crate::sys::process_table::{self, PROC_DIR};

pub(crate) const LOCK_FILE: &str = "watchdog.lock";

/// Who holds the lock, as its file says.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Holder {
    pub pid: u32,
    #[serde(default)]
    pub dry_run: bool,
    /// A `--once` pass rather than a daemon.
    #[serde(default)]
    pub once: bool,
    /// Unix time the holder took the lock.
    #[serde(default)]
    pub started_at: Option<f64>,
}

impl Holder {
    /// What the holder wrote: this line, or a bare pid from an older release.
    fn parse(text: &str) -> Option<Holder> {
        let text = text.trim();
        serde_json::from_str(text).ok().or_else(|| {
            Some(Holder {
                pid: text.parse().ok()?,
                ..Holder::default()
            })
        })
    }
}

/// Held while alive; on drop the file is emptied before the lock goes.
#[derive(Debug)]
pub(crate) struct InstanceLock {
    file: File,
}

impl Drop for InstanceLock {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
    }
}

/// Takes the lock without waiting and writes `me` into it, or names the holder.
pub(crate) fn acquire(dir: &Path, me: &Holder) -> Result<InstanceLock> {
    let path = dir.join(LOCK_FILE);
    let shown = path.display();
    let mut file = open_lock_file(&path)
        .map_err(|e| Error::runtime(format!("cannot open lock file {shown}: {e}")))?;
    match file_lock::try_lock(&file, LockMode::Exclusive) {
        Ok(()) => {}
        Err(LockError::Busy) => {
            // The file found locked, not the path again: it may name another by now.
            let mut text = String::new();
            let _ = (&file).take(4096).read_to_string(&mut text);
            let who = Holder::parse(&text).map_or_else(
                || "another process".to_owned(),
                |h| format!("pid {}", h.pid),
            );
            return Err(Error::Locked(format!(
                "another watchdog is already running ({who} holds {shown}); not starting a second one"
            )));
        }
        Err(LockError::Io(err)) => {
            return Err(Error::runtime(format!("cannot lock {shown}: {err}")))
        }
    }
    let _ = file.set_len(0);
    let _ = file.rewind();
    let line = serde_json::to_string(me).unwrap_or_else(|_| me.pid.to_string());
    let _ = writeln!(file, "{line}");
    Ok(InstanceLock { file })
}

/// The holder the lock file names, if that pid is a live watchdog now (a dead
/// holder leaves its file behind). The lock itself is never touched.
pub(crate) fn holder(dir: &Path) -> Option<Holder> {
    let read = || Holder::parse(&read_text(&dir.join(LOCK_FILE), SMALL_FILE_MAX).ok()?);
    // A daemon that has just taken the lock empties the file before it
    // writes its line: one more look a moment later.
    let h = read().or_else(|| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        read()
    })?;
    is_watchdog(h.pid).then_some(h)
}

fn is_watchdog(pid: u32) -> bool {
    let proc_dir = Path::new(PROC_DIR);
    pid == std::process::id()
        || (process_table::pid_alive(proc_dir, pid)
            && process_table::process(proc_dir, pid).is_some_and(|p| p.is_watchdog()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me(dry_run: bool) -> Holder {
        Holder {
            pid: std::process::id(),
            dry_run,
            once: false,
            started_at: Some(1_700_000_000.0),
        }
    }

    #[test]
    fn second_lock_names_the_holder() {
        let tmp = tempfile::tempdir().unwrap();
        let first = acquire(tmp.path(), &me(true)).unwrap();
        let err = acquire(tmp.path(), &me(false)).unwrap_err();
        assert_eq!(err.exit_code(), 3);
        assert!(
            err.to_string()
                .contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        assert_eq!(holder(tmp.path()), Some(me(true)));
        drop(first);
        assert_eq!(holder(tmp.path()), None, "a released lock names nobody");
        acquire(tmp.path(), &me(false)).unwrap();
    }

    #[test]
    fn a_lock_file_padded_past_its_bound_still_names_the_holder() {
        let tmp = tempfile::tempdir().unwrap();
        let _first = acquire(tmp.path(), &me(false)).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(tmp.path().join(LOCK_FILE))
            .unwrap();
        f.write_all(&vec![b' '; 2 << 20]).unwrap();
        let err = acquire(tmp.path(), &me(false)).unwrap_err();
        let pid = format!("pid {}", std::process::id());
        assert!(err.to_string().contains(&pid), "{err}");
    }

    #[test]
    fn finding_the_holder_never_takes_the_lock() {
        let tmp = tempfile::tempdir().unwrap();
        let _held = acquire(tmp.path(), &me(false)).unwrap();
        // Another open file description: a probing flock on it would fail
        // while the lock is held, and succeed (taking it) otherwise.
        let other = std::fs::File::open(tmp.path().join(LOCK_FILE)).unwrap();
        for _ in 0..3 {
            assert!(holder(tmp.path()).is_some());
        }
        assert!(matches!(
            file_lock::try_lock(&other, LockMode::Exclusive),
            Err(LockError::Busy)
        ));
        // Found by its pid alone, whatever the lock's state.
        let other_dir = tempfile::tempdir().unwrap();
        let line = serde_json::to_string(&me(true)).unwrap();
        std::fs::write(other_dir.path().join(LOCK_FILE), line).unwrap();
        assert_eq!(holder(other_dir.path()), Some(me(true)));
    }

    #[test]
    fn a_dead_or_foreign_pid_in_the_file_is_no_holder() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(LOCK_FILE);
        // A shell whose command line names the watchdog is still a shell.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30; :", "agent-deck-watchdog"])
            .spawn()
            .unwrap();
        std::fs::write(&path, format!("{{\"pid\":{}}}\n", child.id())).unwrap();
        assert_eq!(holder(tmp.path()), None, "sh is not a watchdog");
        child.kill().unwrap();
        child.wait().unwrap();
        std::fs::write(&path, format!("{}\n", child.id())).unwrap();
        assert_eq!(holder(tmp.path()), None, "a dead pid holds nothing");
    }

    #[test]
    fn an_older_releases_bare_pid_still_parses() {
        let h = Holder::parse("4242\n").unwrap();
        assert_eq!((h.pid, h.dry_run, h.started_at), (4242, false, None));
        assert_eq!(Holder::parse("garbage"), None);
        let line = serde_json::to_string(&me(true)).unwrap();
        assert_eq!(Holder::parse(&line), Some(me(true)));
    }

    #[test]
    fn a_symlinked_lock_file_target_is_never_truncated() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        std::os::unix::fs::symlink(&victim, tmp.path().join(LOCK_FILE)).unwrap();
        let err = acquire(tmp.path(), &me(false)).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    }

    #[test]
    fn a_fifo_lock_file_is_refused_without_waiting() {
        let tmp = tempfile::tempdir().unwrap();
        crate::sys::fs::mkfifo(&tmp.path().join(LOCK_FILE));
        assert!(acquire(tmp.path(), &me(false)).is_err());
        assert_eq!(holder(tmp.path()), None);
    }
}
