//! `task-timers.json`: the registry of tasks the watchdog follows up on.
//!
//! Every change is a read-modify-write under an exclusive `flock` on
//! `<registry>.lock`, ending in an atomic rewrite (temp file + rename), so a
//! dispatcher's `task add` and the daemon's follow-up never lose each other's
//! writes. A registry that does not parse is an error, never silently
//! replaced. It is read without blocking and up to 64 MiB, written `0600`
//! and never through a symlink; its directory is created `0700`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::spelled::spelled;
use crate::sys::file_lock::{self, LockError, LockMode};
use crate::sys::fs::{self, ReadError, PRIVATE_FILE, STATE_FILE_MAX};

/// One thing that happened to a task (`registered`, `retried`, `done`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskEvent {
    pub ts: f64,
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

spelled! {
    /// Where a task stands, spelled as `task-timers.json` and `task list` write it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    pub enum TaskStatus {
        /// Followed up: checked again at `next_check_at`.
        Pending = "pending",
        Done = "done",
        /// Re-dispatched under a new id; this entry is history.
        Retried = "retried",
        Exhausted = "exhausted",
        Tampered = "tampered",
        Cancelled = "cancelled",
    }
}

/// One registered task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    pub task_file: PathBuf,
    pub task_sha256: String,
    pub done_file: PathBuf,
    pub partial_file: PathBuf,
    pub followup_s: f64,
    pub dispatched_at: f64,
    pub next_check_at: f64,
    pub retry_count: u32,
    pub max_retry: u32,
    pub parent_task: Option<String>,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// When `pid` started (platform ticks, see `sys::process_table`), so a
    /// reused pid is not mistaken for the task's process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_started: Option<u64>,
    #[serde(rename = "match")]
    pub match_: String,
    pub command: Vec<String>,
    /// What happened to it, in order (`history` in the file).
    #[serde(default, rename = "history")]
    pub events: Vec<TaskEvent>,
}

impl Task {
    /// The id every re-dispatch is numbered from.
    pub fn root(&self) -> &str {
        self.parent_task.as_deref().unwrap_or(&self.id)
    }

    pub fn note(&mut self, ts: f64, event: &str, detail: Option<String>) {
        self.events.push(TaskEvent {
            ts,
            event: event.to_owned(),
            detail,
        });
    }
}

/// Re-dispatches counted per local calendar day, across all tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Daily {
    /// Days since the Unix epoch (UTC).
    pub day: i64,
    pub count: u32,
}

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Registry {
    #[serde(default)]
    pub tasks: Vec<Task>,
    #[serde(default)]
    pub redispatches: Daily,
}

impl Registry {
    pub fn get(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    pub fn get_mut(&mut self, id: &str) -> Option<&mut Task> {
        self.tasks.iter_mut().find(|t| t.id == id)
    }

    /// Re-dispatches already made on `day`.
    pub fn redispatched_on(&self, day: i64) -> u32 {
        if self.redispatches.day == day {
            self.redispatches.count
        } else {
            0
        }
    }

    pub fn count_redispatch(&mut self, day: i64) {
        if self.redispatches.day != day {
            self.redispatches = Daily { day, count: 0 };
        }
        self.redispatches.count += 1;
    }
}

/// The registry file and its lock.
pub struct RegistryFile {
    pub path: PathBuf,
    /// How long to wait for the lock; `None` waits as long as it takes (the
    /// command line), the daemon gives up and tries again next tick.
    patience: Option<Duration>,
}

impl RegistryFile {
    pub fn new(path: &Path, patience: Option<Duration>) -> RegistryFile {
        RegistryFile {
            path: path.to_owned(),
            patience,
        }
    }

    /// The registry lock, held until the file is dropped.
    fn lock(&self, mode: LockMode) -> Result<File> {
        if let Some(dir) = self.path.parent() {
            fs::create_private_dirs(dir)
                .map_err(|e| Error::runtime(format!("cannot create {}: {e}", dir.display())))?;
        }
        let mut name = self.path.as_os_str().to_owned();
        name.push(".lock");
        let name = PathBuf::from(name);
        let file = fs::open_lock_file(&name)
            .map_err(|e| Error::runtime(format!("cannot open {}: {e}", name.display())))?;
        let shown = self.path.display();
        match file_lock::lock(&file, mode, self.patience) {
            Ok(()) => Ok(file),
            Err(LockError::Busy) => Err(Error::runtime(format!(
                "task registry {shown} is locked by another process; trying again next tick"
            ))),
            Err(LockError::Io(err)) => Err(Error::runtime(format!("cannot lock {shown}: {err}"))),
        }
    }

    /// A snapshot without the lock (the file is only ever replaced whole),
    /// for readers that must never wait on a writer.
    pub fn peek(&self) -> Result<Registry> {
        match fs::read_bounded(&self.path, STATE_FILE_MAX) {
            Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(Registry::default()),
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                let shown = self.path.display();
                Error::usage(format!(
                    "task registry {shown} is unreadable ({e}); fix or move it aside, it was left untouched"
                ))
            }),
            Err(ReadError::Missing(_)) => Ok(Registry::default()),
            Err(e) => Err(Error::usage(format!(
                "cannot read the task registry: {e}; it was left untouched"
            ))),
        }
    }

    /// A consistent snapshot.
    pub fn load(&self) -> Result<Registry> {
        let _lock = self.lock(LockMode::Shared)?;
        self.peek()
    }

    /// Runs `change` on the registry under the exclusive lock and writes the
    /// result if `change` succeeded and changed something.
    pub fn update<T>(&self, change: impl FnOnce(&mut Registry) -> Result<T>) -> Result<T> {
        self.update_then(change, |_| {})
    }

    /// [`update`](Self::update), then `after` on its outcome once the new
    /// registry is in place, still under the lock: for files that may go
    /// only once the registry no longer names them.
    pub fn update_then<T>(
        &self,
        change: impl FnOnce(&mut Registry) -> Result<T>,
        after: impl FnOnce(&mut T),
    ) -> Result<T> {
        let _lock = self.lock(LockMode::Exclusive)?;
        let mut reg = self.peek()?;
        let before = reg.clone();
        let mut out = change(&mut reg)?;
        if reg != before {
            let mut bytes =
                serde_json::to_vec_pretty(&reg).map_err(|e| Error::runtime(e.to_string()))?;
            bytes.push(b'\n');
            fs::write_atomically(&self.path, &bytes, PRIVATE_FILE).map_err(|e| {
                let shown = self.path.display();
                Error::runtime(format!("cannot write task registry {shown}: {e}"))
            })?;
        }
        after(&mut out);
        Ok(out)
    }

    /// Removes the temp files a writer killed mid-write left next to the
    /// registry, under the exclusive lock so no live writer loses its own.
    /// How many were removed.
    pub fn remove_stale_temps(&self) -> Result<usize> {
        if fs::stale_temps(&self.path).is_empty() {
            return Ok(0);
        }
        let _lock = self.lock(LockMode::Exclusive)?;
        Ok(fs::remove_stale_temps(&self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrupt_registry_is_an_error_and_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("task-timers.json");
        std::fs::write(&path, "{\"tasks\": [").unwrap();
        let f = RegistryFile::new(&path, None);
        let err = f.update(|r| {
            r.redispatches.count = 9;
            Ok(())
        });
        assert_eq!(err.unwrap_err().exit_code(), 2);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"tasks\": [");
    }

    #[test]
    fn an_impatient_reader_gives_up_on_a_held_lock() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("task-timers.json");
        let holder = RegistryFile::new(&path, None);
        let _held = holder.lock(LockMode::Exclusive).unwrap();
        let waiter = RegistryFile::new(&path, Some(Duration::from_millis(100)));
        let err = waiter.update(|_| Ok(())).unwrap_err();
        assert!(
            err.to_string().contains("locked by another process"),
            "{err}"
        );
    }

    #[test]
    fn a_fifo_registry_is_an_error_not_a_hang() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("task-timers.json");
        crate::sys::fs::mkfifo(&path);
        let err = RegistryFile::new(&path, None).load().unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
    }

    #[test]
    fn stale_temps_go_only_under_the_lock() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("task-timers.json");
        std::fs::write(tmp.path().join(".task-timers.json.tmp-1"), b"x").unwrap();
        let f = RegistryFile::new(&path, Some(Duration::from_millis(50)));
        {
            let _held = RegistryFile::new(&path, None)
                .lock(LockMode::Exclusive)
                .unwrap();
            assert!(f.remove_stale_temps().is_err());
        }
        assert_eq!(f.remove_stale_temps().unwrap(), 1);
    }

    #[test]
    fn daily_counter_rolls_over() {
        let mut r = Registry::default();
        r.count_redispatch(100);
        r.count_redispatch(100);
        assert_eq!(r.redispatched_on(100), 2);
        assert_eq!(r.redispatched_on(101), 0);
        r.count_redispatch(101);
        assert_eq!(r.redispatched_on(101), 1);
    }

    #[test]
    fn task_statuses_are_written_as_before() {
        use TaskStatus::*;
        for (st, text) in [
            (Pending, "pending"),
            (Done, "done"),
            (Retried, "retried"),
            (Exhausted, "exhausted"),
            (Tampered, "tampered"),
            (Cancelled, "cancelled"),
        ] {
            assert_eq!(st.to_string(), text);
            assert_eq!(serde_json::to_string(&st).unwrap(), format!("\"{text}\""));
            assert_eq!(
                serde_json::from_str::<TaskStatus>(&format!("\"{text}\"")).unwrap(),
                st
            );
        }
        assert_eq!(format!("{:<8}|", Done), "done    |");
    }
}

#[cfg(test)]
mod props {
    //! Whatever `task-timers.json` holds, loading it never panics: it is a
    //! registry bounded by the file's size, or a usage error of bounded length.

    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;
    use crate::testing::{
        bytes_of, count, input, list_of, shaped, shaped_with, string, time, word, CASES,
    };

    /// One task of `task-timers.json`.
    fn task_row() -> BoxedStrategy<Value> {
        let statuses = &[
            "pending",
            "done",
            "retried",
            "exhausted",
            "tampered",
            "cancelled",
        ];
        let event = vec![("ts", time()), ("event", string()), ("detail", string())];
        shaped_with(
            80,
            vec![
                ("id", string()),
                ("task_file", string()),
                ("task_sha256", string()),
                ("done_file", string()),
                ("partial_file", string()),
                ("followup_s", time()),
                ("dispatched_at", time()),
                ("next_check_at", time()),
                ("retry_count", count()),
                ("max_retry", count()),
                ("parent_task", string()),
                ("status", word(statuses)),
                ("pid", count()),
                ("match", string()),
                ("command", list_of(string())),
                ("history", list_of(shaped_with(80, event))),
            ],
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(CASES))]

        #[test]
        fn task_registries_never_panic_and_load_bounded(
            bytes in prop_oneof![
                1 => input(),
                3 => shaped(vec![
                    ("tasks", list_of(task_row())),
                    ("redispatches", shaped(vec![("day", count()), ("count", count())])),
                ])
                .prop_map(bytes_of),
            ]
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let path = tmp.path().join("task-timers.json");
            std::fs::write(&path, &bytes).unwrap();
            match RegistryFile::new(&path, None).load() {
                Ok(reg) => {
                    prop_assert!(reg.tasks.len() <= bytes.len());
                    let events: usize = reg.tasks.iter().map(|t| t.events.len()).sum();
                    prop_assert!(events <= bytes.len());
                    prop_assert!(reg.tasks.iter().all(|t| t.id.len() <= bytes.len()));
                }
                Err(e) => {
                    prop_assert_eq!(e.exit_code(), 2);
                    prop_assert!(e.to_string().len() <= 10 * bytes.len() + 4096);
                }
            }
        }
    }
}
