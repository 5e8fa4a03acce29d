//! A task set up the way a dispatcher sets one up: a task file in `work/`,
//! a dispatch command that appends its arguments to a file, and `task …`
//! run against the watchdog under test, bounded in time so a hang fails the
//! test instead of stalling the run. The registry is read back typed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use agent_deck_watchdog::harness::Registry;
use agent_deck_watchdog::harness::{Task, TaskStatus};

use super::files::write_script;
use super::watchdog::{assert_ok, Wd};
use super::{output_within, wait_until};

/// The longest one `task …` run may take.
const TASK_RUN_LIMIT: Duration = Duration::from_secs(5);

/// A watchdog install with `work/task.md` and `work/record.sh`, which
/// appends `"$*"` to `work/dispatched.txt`.
pub(crate) struct TaskDir {
    pub wd: Wd,
    pub dir: PathBuf,
    pub task_file: PathBuf,
    pub out: PathBuf,
    pub record: PathBuf,
}

impl TaskDir {
    pub(crate) fn new(wd: Wd) -> TaskDir {
        let dir = wd.home.path().join("work");
        fs::create_dir_all(&dir).expect("task dir");
        let task_file = dir.join("task.md");
        fs::write(&task_file, "Refactor the parser.\n").expect("write task file");
        let out = dir.join("dispatched.txt");
        let record = dir.join("record.sh");
        write_script(
            &record,
            &format!("#!/bin/sh\necho \"$*\" >> '{}'\n", out.display()),
        );
        TaskDir {
            wd,
            dir,
            task_file,
            out,
            record,
        }
    }

    /// [`TaskDir::new`] with `TASK_PARTIAL_HMAC_KEY_FILE` naming `hmac.key`
    /// in the temp home, which `make_key` creates.
    pub(crate) fn signed(wd: Wd, make_key: impl FnOnce(&Path)) -> TaskDir {
        let key = wd.home.path().join("hmac.key");
        make_key(&key);
        let key = key.display().to_string();
        TaskDir::new(wd.env("TASK_PARTIAL_HMAC_KEY_FILE", &key))
    }

    /// `task <args>`, failing if it takes longer than five seconds.
    pub(crate) fn task(&self, args: &[&str]) -> Output {
        let mut all = vec!["task"];
        all.extend_from_slice(args);
        output_within(self.wd.command(&all), TASK_RUN_LIMIT)
    }

    /// `task add <id> --file task.md --after 0 <extra…> -- <command…>`.
    pub(crate) fn add(&self, id: &str, extra: &[&str], command: &[&str]) -> Output {
        let file = self.task_file.display().to_string();
        let mut args = vec!["add", id, "--file", &file, "--after", "0"];
        args.extend_from_slice(extra);
        args.push("--");
        args.extend_from_slice(command);
        self.task(&args)
    }

    /// `task check`, which must succeed; its stdout.
    pub(crate) fn check(&self) -> String {
        let out = self.task(&["check"]);
        assert_ok(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The registry as `task list --json` shows it.
    pub(crate) fn list(&self) -> Vec<Task> {
        let out = self.task(&["list", "--json"]);
        assert_ok(&out);
        serde_json::from_slice(&out.stdout).expect("task list --json parses")
    }

    /// The status `task list --json` shows for `id`, if it is registered.
    pub(crate) fn status(&self, id: &str) -> Option<TaskStatus> {
        self.list()
            .into_iter()
            .find(|t| t.id == id)
            .map(|t| t.status)
    }

    /// The task `id` as `task list --json` shows it; it must be registered.
    pub(crate) fn entry(&self, id: &str) -> Task {
        let found = self.list().into_iter().find(|t| t.id == id);
        found.unwrap_or_else(|| panic!("{id} is not registered"))
    }

    /// Every line the dispatch command was run with, in order.
    pub(crate) fn dispatched(&self) -> Vec<String> {
        fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Waits until the dispatch command has run at least `n` times.
    pub(crate) fn wait_dispatched(&self, n: usize) {
        let ran = wait_until(Duration::from_secs(10), || self.dispatched().len() >= n);
        assert!(ran, "dispatched only {:?}", self.dispatched());
    }

    /// Re-dispatch logs created: one per spawn, written before the spawn.
    pub(crate) fn spawn_logs(&self) -> usize {
        fs::read_dir(self.wd.watchdog_dir().join("tasks")).map_or(0, |d| d.count())
    }

    pub(crate) fn registry_path(&self) -> PathBuf {
        self.wd.watchdog_dir().join("task-timers.json")
    }

    /// The registry file as bytes; empty if it does not exist.
    pub(crate) fn registry_bytes(&self) -> Vec<u8> {
        fs::read(self.registry_path()).unwrap_or_default()
    }

    /// The tasks in the registry file, read directly.
    pub(crate) fn registry(&self) -> Vec<Task> {
        let reg: Registry =
            serde_json::from_slice(&self.registry_bytes()).expect("task-timers.json parses");
        reg.tasks
    }
}
