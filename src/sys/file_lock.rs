//! Advisory file locks (`flock`, through `std::fs::File::lock`), the one
//! place that takes them. A lock lives as long as its `File`.

use std::fs::{File, TryLockError};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockMode {
    Shared,
    Exclusive,
}

/// Why a lock was not taken.
#[derive(Debug)]
pub(crate) enum LockError {
    /// Someone else holds it.
    Busy,
    Io(std::io::Error),
}

/// How often a bounded wait looks again.
const RETRY: Duration = Duration::from_millis(20);

/// Takes the lock at once, or says it is busy.
pub(crate) fn try_lock(file: &File, mode: LockMode) -> Result<(), LockError> {
    let taken = match mode {
        LockMode::Shared => file.try_lock_shared(),
        LockMode::Exclusive => file.try_lock(),
    };
    taken.map_err(|e| match e {
        TryLockError::WouldBlock => LockError::Busy,
        TryLockError::Error(e) => LockError::Io(e),
    })
}

/// Takes the lock, waiting at most `patience` (`None`: as long as it takes).
pub(crate) fn lock(
    file: &File,
    mode: LockMode,
    patience: Option<Duration>,
) -> Result<(), LockError> {
    let Some(patience) = patience else {
        let taken = match mode {
            LockMode::Shared => file.lock_shared(),
            LockMode::Exclusive => file.lock(),
        };
        return taken.map_err(LockError::Io);
    };
    let deadline = Instant::now() + patience;
    loop {
        match try_lock(file, mode) {
            Err(LockError::Busy) if Instant::now() < deadline => std::thread::sleep(RETRY),
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exclusive_lock_keeps_others_out_until_dropped() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("l");
        let first = File::create(&path).unwrap();
        lock(&first, LockMode::Exclusive, None).unwrap();
        let second = File::open(&path).unwrap();
        assert!(matches!(
            try_lock(&second, LockMode::Shared),
            Err(LockError::Busy)
        ));
        let started = Instant::now();
        let waited = lock(
            &second,
            LockMode::Exclusive,
            Some(Duration::from_millis(60)),
        );
        assert!(matches!(waited, Err(LockError::Busy)));
        assert!(started.elapsed() >= Duration::from_millis(60));
        drop(first);
        // A test that forks meanwhile holds a copy of `first` until its exec.
        lock(&second, LockMode::Exclusive, Some(Duration::from_secs(5))).unwrap();
    }

    #[test]
    fn shared_locks_coexist() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("l");
        let a = File::create(&path).unwrap();
        let b = File::open(&path).unwrap();
        try_lock(&a, LockMode::Shared).unwrap();
        try_lock(&b, LockMode::Shared).unwrap();
    }
}
