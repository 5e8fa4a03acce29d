//! `state.json`: the restart book saved across the watchdog's own restarts.
//! Loaded once at start, pruned (a corrupt file is moved aside with a
//! warning, never fatal), and saved atomically, mode `0600`, whenever it
//! changed; the state mutex is held only for the snapshot, never across the
//! write. A failing write is warned about once per episode (a full disk
//! would say it every tick). A dry run reads the state but never writes it.

use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use crate::decide::book::prune;
use crate::decide::book::State;
use crate::decide::limits::Limits;
use crate::records::failed_writes::FailedWrites;
use crate::sys::fs::{self, ReadError, PRIVATE_FILE, STATE_FILE_MAX};

pub(crate) const STATE_FILE: &str = "state.json";

pub(crate) struct Store {
    path: PathBuf,
    writable: bool,
    /// What is on disk now, to skip writes that change nothing, and the
    /// writes failed since the last that worked.
    last: Mutex<(Vec<u8>, FailedWrites)>,
}

impl Store {
    pub(crate) fn new(dir: &Path, writable: bool) -> Store {
        Store {
            path: dir.join(STATE_FILE),
            writable,
            last: Mutex::default(),
        }
    }

    /// Reads the saved state, pruned to what still matters at `now`.
    pub(crate) fn load(&self, lim: &Limits, now: f64) -> State {
        let bytes = match fs::read_bounded(&self.path, STATE_FILE_MAX) {
            Ok(b) => b,
            Err(ReadError::Missing(_)) => return State::default(),
            Err(e) => {
                log::warn!("{e}; starting with empty restart history");
                return State::default();
            }
        };
        match serde_json::from_slice::<State>(&bytes) {
            Ok(mut state) => {
                prune::backfill_ran(&mut state);
                prune::prune_state(&mut state, lim, now);
                self.last.lock().0 = bytes;
                state
            }
            Err(e) => {
                let aside = self
                    .path
                    .with_file_name(format!("{STATE_FILE}.corrupt-{}", now as u64));
                match fs::move_aside(&self.path, &aside) {
                    Ok(aside) => log::warn!(
                        "{} is corrupt ({e}); moved it to {} and starting with empty restart history",
                        self.path.display(),
                        aside.display()
                    ),
                    Err(re) => log::warn!(
                        "{} is corrupt ({e}) and could not be moved aside ({re}); starting with empty restart history",
                        self.path.display()
                    ),
                }
                State::default()
            }
        }
    }

    /// Writes the state if it changed since the last write.
    pub(crate) fn save(&self, state: &Mutex<State>) {
        if !self.writable {
            return;
        }
        // The writer lock first: two savers cannot write their snapshots out of order.
        let mut last = self.last.lock();
        let snapshot = state.lock().clone();
        let bytes = match serde_json::to_vec_pretty(&snapshot) {
            Ok(b) => b,
            Err(e) => return log::warn!("cannot serialize the state ({e}); not saved"),
        };
        if last.0 == bytes {
            return;
        }
        let written = fs::write_atomically(&self.path, &bytes, PRIVATE_FILE);
        let meanwhile = "the restart history lives in memory until a write works";
        last.1.note(&self.path, &written, meanwhile);
        if written.is_ok() {
            last.0 = bytes;
        }
    }
}

/// The saved state as it is on disk, for the commands that only look
/// (`status`, `drill`); `None` when there is none yet.
pub(crate) fn peek(dir: &Path) -> Result<Option<State>, String> {
    match fs::read_bounded(&dir.join(STATE_FILE), STATE_FILE_MAX) {
        Err(ReadError::Missing(_)) => Ok(None),
        Err(e) => Err(format!("{STATE_FILE} {}", e.reason())),
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("{STATE_FILE} does not parse ({e})")),
    }
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_from_before_the_ran_set_gets_it_on_load() {
        let tmp = tempfile::tempdir().unwrap();
        let mut old = State::default();
        old.sessions.entry("a-1".into()).or_default().last_status = Some("running".into());
        old.sessions.entry("e-1".into()).or_default().last_status = Some("error".into());
        std::fs::write(
            tmp.path().join(STATE_FILE),
            serde_json::to_vec(&old).unwrap(),
        )
        .unwrap();
        let st = Store::new(tmp.path(), false).load(&lim(), crate::sys::clock::unix_now());
        assert_eq!(st.ran.iter().collect::<Vec<_>>(), ["a-1"]);
    }

    #[test]
    fn peek_tells_none_from_unreadable_and_changes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(peek(tmp.path()), Ok(None));
        let path = tmp.path().join(STATE_FILE);
        std::fs::write(&path, b"{torn").unwrap();
        assert!(peek(tmp.path()).unwrap_err().contains("does not parse"));
        assert_eq!(std::fs::read(&path).unwrap(), b"{torn", "never moved aside");
        std::fs::write(&path, b"{}").unwrap();
        assert_eq!(peek(tmp.path()), Ok(Some(State::default())));
    }
    use crate::decide::{book::dedup, restart::gates};

    fn lim() -> Limits {
        Limits::from_config(&crate::config::test_config(Path::new("/nonexistent")))
    }

    #[test]
    fn round_trip_keeps_what_is_inside_its_window() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::new(tmp.path(), true);
        let l = lim();
        let state = Mutex::new(State::default());
        {
            let mut s = state.lock();
            gates::reserve(&mut s, &l, "a-1", 1000.0);
            gates::reserve(&mut s, &l, "old-1", 100.0);
            dedup::may_escalate(&mut s, &l, Some("a-1"), "rate-limit", 1000.0);
        }
        store.save(&state);
        let back = Store::new(tmp.path(), true).load(&l, 1010.0);
        assert_eq!(back.sessions["a-1"].restarts, vec![1000.0]);
        assert!(!back.sessions.contains_key("old-1"));
        assert!(back.escalated.contains_key("a-1|rate-limit"));
        assert!(back.in_flight.is_empty(), "in-flight marks are not saved");
    }

    #[test]
    fn a_spawn_hold_outlives_every_window_and_the_watchdog_restart() {
        let tmp = tempfile::tempdir().unwrap();
        let state = Mutex::new(State::default());
        crate::decide::book::notes::note_spawn_died_fast(&mut state.lock(), "a-1", 1000.0);
        Store::new(tmp.path(), true).save(&state);
        let mut back = Store::new(tmp.path(), true).load(&lim(), 1000.0 + 30.0 * 86400.0);
        assert_eq!(back.sessions["a-1"].spawn_died_fast_at, Some(1000.0));
        assert_eq!(
            gates::recheck(&mut back, "a-1", 1000.0 + 30.0 * 86400.0, None),
            Some(gates::Hold::SpawnDiedFast)
        );
    }

    #[test]
    fn corrupt_file_is_moved_aside() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(STATE_FILE), b"{\"sessions\": {\"a\": [tru").unwrap();
        let state = Store::new(tmp.path(), true).load(&lim(), 5000.0);
        assert_eq!(state, State::default());
        let aside = tmp.path().join("state.json.corrupt-5000");
        assert_eq!(
            std::fs::read(aside).unwrap(),
            b"{\"sessions\": {\"a\": [tru"
        );
        assert!(!tmp.path().join(STATE_FILE).exists());
    }

    #[test]
    fn a_second_corrupt_file_in_the_same_second_keeps_the_first_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(STATE_FILE);
        std::fs::write(&path, b"first garbage").unwrap();
        Store::new(tmp.path(), true).load(&lim(), 5000.2);
        std::fs::write(&path, b"second garbage").unwrap();
        Store::new(tmp.path(), true).load(&lim(), 5000.7);
        assert_eq!(
            std::fs::read(tmp.path().join("state.json.corrupt-5000")).unwrap(),
            b"first garbage"
        );
        assert_eq!(
            std::fs::read(tmp.path().join("state.json.corrupt-5000-1")).unwrap(),
            b"second garbage"
        );
    }

    #[test]
    fn a_fifo_or_oversize_state_file_is_unreadable_not_a_hang() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(STATE_FILE);
        crate::sys::fs::mkfifo(&path);
        assert_eq!(
            Store::new(tmp.path(), true).load(&lim(), 1.0),
            State::default()
        );
        std::fs::remove_file(&path).unwrap();
        std::fs::File::create(&path)
            .unwrap()
            .set_len(STATE_FILE_MAX + 1)
            .unwrap();
        assert_eq!(
            Store::new(tmp.path(), true).load(&lim(), 1.0),
            State::default()
        );
    }

    #[test]
    fn the_state_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let state = Mutex::new(State::default());
        gates::reserve(&mut state.lock(), &lim(), "a-1", 1000.0);
        Store::new(tmp.path(), true).save(&state);
        let meta = std::fs::metadata(tmp.path().join(STATE_FILE)).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn a_failing_state_write_is_one_episode_until_a_write_works() {
        let tmp = tempfile::tempdir().unwrap();
        let gone = tmp.path().join("not-yet");
        let (store, state) = (Store::new(&gone, true), Mutex::new(State::default()));
        for tick in 1..=3u32 {
            gates::reserve(&mut state.lock(), &lim(), "a-1", f64::from(tick));
            store.save(&state);
            // Warned at the first only; the rest are counted.
            assert_eq!(store.last.lock().1.failed(), u64::from(tick));
        }
        std::fs::create_dir(&gone).unwrap();
        store.save(&state);
        assert_eq!(
            store.last.lock().1.failed(),
            0,
            "a write that works ends it"
        );
        let back = Store::new(&gone, true).load(&lim(), 3.0);
        assert_eq!(back.sessions, state.lock().sessions);
    }

    #[test]
    fn dry_run_never_writes() {
        let tmp = tempfile::tempdir().unwrap();
        Store::new(tmp.path(), false).save(&Mutex::new(State::default()));
        assert!(!tmp.path().join(STATE_FILE).exists());
    }
}
