//! The instance lock: one watchdog (daemon or `--once`) at a time.
//!
//! `flock` on `watchdog.lock` in the watchdog directory, held for the life of
//! the returned [`InstanceLock`]; the kernel drops it if the process dies, so a
//! crash never leaves a stale lock. The file carries the holder's pid so the
//! refusal can say who holds it. A symlink or FIFO in its place is refused,
//! never truncated or waited on.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::Path;

use crate::error::{Error, Result};
use crate::sys::flock::{self, LockError, LockMode};
use crate::sys::fs::{open_lock_file, open_regular, read_text, SMALL_FILE_MAX};

pub const LOCK_FILE: &str = "watchdog.lock";

/// Held while alive.
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
}

/// Takes the lock without waiting, or says which pid holds it.
pub fn acquire(dir: &Path) -> Result<InstanceLock> {
    let path = dir.join(LOCK_FILE);
    let mut file = open_lock_file(&path)
        .map_err(|e| Error::runtime(format!("cannot open lock file {}: {e}", path.display())))?;
    match flock::try_lock(&file, LockMode::Exclusive) {
        Ok(()) => {}
        Err(LockError::Busy) => {
            let mut holder = String::new();
            let _ = (&file).take(64).read_to_string(&mut holder);
            let holder = holder.trim();
            let who = if holder.is_empty() {
                "another process".to_owned()
            } else {
                format!("pid {holder}")
            };
            return Err(Error::Locked(format!(
                "another watchdog is already running ({who} holds {}); not starting a second one",
                path.display()
            )));
        }
        Err(LockError::Io(err)) => {
            return Err(Error::runtime(format!(
                "cannot lock {}: {err}",
                path.display()
            )))
        }
    }
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = writeln!(file, "{}", std::process::id());
    Ok(InstanceLock { _file: file })
}

/// The pid recorded in the lock file if some process holds the lock now.
pub fn holder(dir: &Path) -> Option<u32> {
    let path = dir.join(LOCK_FILE);
    let file = open_regular(&path).ok()?;
    // A shared probe, released when `file` drops.
    if flock::try_lock(&file, LockMode::Shared).is_ok() {
        return None;
    }
    read_text(&path, SMALL_FILE_MAX).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_names_the_holder() {
        let tmp = tempfile::tempdir().unwrap();
        let first = acquire(tmp.path()).unwrap();
        let err = acquire(tmp.path()).unwrap_err();
        assert_eq!(err.exit_code(), 3);
        assert!(
            err.to_string().contains(&std::process::id().to_string()),
            "{err}"
        );
        assert_eq!(holder(tmp.path()), Some(std::process::id()));
        drop(first);
        assert_eq!(holder(tmp.path()), None);
        acquire(tmp.path()).unwrap();
    }

    #[test]
    fn a_symlinked_lock_file_target_is_never_truncated() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        std::os::unix::fs::symlink(&victim, tmp.path().join(LOCK_FILE)).unwrap();
        let err = acquire(tmp.path()).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    }

    #[test]
    fn a_fifo_lock_file_is_refused_without_waiting() {
        let tmp = tempfile::tempdir().unwrap();
        crate::sys::fs::mkfifo(&tmp.path().join(LOCK_FILE));
        assert!(acquire(tmp.path()).is_err());
        assert_eq!(holder(tmp.path()), None);
    }
}
