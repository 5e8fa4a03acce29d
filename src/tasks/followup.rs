//! The follow-up pass of SPEC §8: for each task that is due, done → `done`;
//! alive → look again later; died without `.done` → exhausted, tampered,
//! capped or re-dispatched, in that order ([`decide`] is the rule).
//!
//! [`FollowUp::pass`] gathers the facts (done file, process table, task-file
//! checksum), applies the rule under the registry lock, checks the done file
//! once more right before spawning, and re-dispatches. A re-dispatch that
//! cannot start counts as an attempt, like one that died, so a task that can
//! never be spawned still ends `exhausted`. The same pass then prunes old
//! finished lineages ([`crate::tasks::retention`]), removing their logs once
//! the registry is written without them. In dry-run it decides and reports
//! but spawns, prunes and writes nothing.
//!
//! The registry lock is held across the pass, so no step under it may block:
//! the task file, `.partial`, `.sig` and key are read without blocking and up
//! to a bound; a FIFO or device there is unreadable (a task file that is
//! unreadable counts as tampered), never a hang of `task list/add/cancel`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::alert::escalate::Escalator;
use crate::config::Config;
use crate::decide::outcomes::Severity;
use crate::error::Result;
use crate::sys::clock::{local_day, Clock};
use crate::sys::fs::{read_bounded, read_text, warn_unreadable, SMALL_FILE_MAX, TASK_FILE_MAX};
use crate::sys::process::{self, Cmd};
use crate::sys::process_table::{self, pid_alive, PROC_DIR};
use crate::tasks::registry::{Registry, RegistryFile, Task, TaskStatus};
use crate::tasks::retention::{self, DAY_S};
use crate::tasks::rules::{
    contains_word, decide, log_file_name, next_id, render, successor_path, Step, TaskFacts,
};
use crate::tasks::sign::{file_sha256, read_key, verify};

pub(crate) struct FollowUp {
    pub registry: RegistryFile,
    pub escalator: Arc<Escalator>,
    pub clock: Arc<dyn Clock>,
    pub dry_run: bool,
    /// The daily cap, the key, the retention and the watchdog dir.
    cfg: Config,
    /// Where re-dispatches write their output.
    logs_dir: PathBuf,
    pub proc_dir: PathBuf,
    /// Why the daemon's last pass could not run, said once until it changes.
    last_error: Option<String>,
}

/// How a pass went, for logs and `task check`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Summary {
    pub checked: usize,
    pub redispatched: Vec<String>,
    /// Re-dispatches registered whose process could not be started.
    pub not_started: Vec<String>,
    /// Finished tasks pruned from the registry, and their logs removed.
    pub pruned: usize,
    pub logs_removed: usize,
}

impl FollowUp {
    /// The follow-up pass as the daemon and `task check` run it. `patience`:
    /// how long to wait for the registry lock (`None`: as long as it takes).
    pub(crate) fn from_config(
        cfg: &Config,
        dry_run: bool,
        escalator: Arc<Escalator>,
        clock: Arc<dyn Clock>,
        patience: Option<Duration>,
    ) -> FollowUp {
        let path = &cfg.task_timers_file;
        FollowUp {
            registry: RegistryFile::new(path, patience),
            escalator,
            clock,
            dry_run,
            cfg: cfg.clone(),
            logs_dir: cfg.watchdog_dir.join("tasks"),
            proc_dir: PROC_DIR.into(),
            last_error: None,
        }
    }

    /// The daemon's pass after each safety poll: one when a registry exists,
    /// the tasks it re-dispatched said, and a pass that cannot run said once
    /// until its reason changes.
    pub(crate) fn run(&mut self) {
        if !self.registry.path.exists() {
            return;
        }
        match self.pass() {
            Ok(summary) => {
                self.last_error = None;
                if !summary.redispatched.is_empty() {
                    let ids = summary.redispatched.join(", ");
                    log::info!("task follow-up re-dispatched {ids}");
                }
            }
            Err(e) => {
                let msg = e.to_string();
                if self.last_error.as_deref() != Some(msg.as_str()) {
                    log::warn!("task follow-up skipped: {msg}");
                    self.last_error = Some(msg);
                }
            }
        }
    }

    /// What the rule needs, gathered in the order it asks: a done task costs
    /// no process scan, a live or exhausted one no checksum of its file.
    fn facts(&self, t: &Task) -> TaskFacts {
        let proc = &self.proc_dir;
        // A pid reused by another program (another start time) is not the task.
        let runs = |p| {
            pid_alive(proc, p)
                && t.pid_started
                    .is_none_or(|s| process_table::start_time(proc, p) == Some(s))
        };
        let done = t.done_file.exists();
        let alive = !done && (t.pid.is_some_and(runs) || command_line_running(proc, &t.match_));
        let checksum_decides = !done && !alive && t.retry_count < t.max_retry;
        TaskFacts {
            done,
            alive,
            sha_now: checksum_decides
                .then(|| file_sha256(&t.task_file).ok())
                .flatten(),
        }
    }

    /// One pass over every due task, then the pruning of old finished ones.
    pub(crate) fn pass(&self) -> Result<Summary> {
        let now = self.clock.now();
        if self.dry_run {
            let mut reg = self.registry.load()?;
            return Ok(self.walk(&mut reg, now));
        }
        let (summary, _) = self.registry.update_then(
            |reg| {
                let mut summary = self.walk(reg, now);
                let kept_s = f64::from(self.cfg.task_retention_days) * DAY_S;
                let gone = retention::prune(reg, now, kept_s);
                summary.pruned = gone.len();
                Ok((summary, retention::logs_to_remove(&gone, &reg.tasks)))
            },
            |(summary, logs)| summary.logs_removed = retention::remove_logs(&self.logs_dir, logs),
        )?;
        if summary.pruned > 0 {
            let (pruned, logs) = (summary.pruned, summary.logs_removed);
            let (days, path) = (self.cfg.task_retention_days, self.registry.path.display());
            log::info!(
                "pruned {pruned} task(s) finished more than {days} days ago from {path}, and {logs} of their logs"
            );
        }
        Ok(summary)
    }

    fn walk(&self, reg: &mut Registry, now: f64) -> Summary {
        let mut summary = Summary::default();
        // By position, not by id: a hand-edited registry may hold an id twice.
        // The re-dispatches this pass appends wait for the next one.
        for i in 0..reg.tasks.len() {
            let t = &reg.tasks[i];
            if t.status == TaskStatus::Pending && t.next_check_at <= now {
                summary.checked += 1;
                self.follow(reg, i, now, &mut summary);
            }
        }
        summary
    }

    /// Follows up the task at `i`, noting a re-dispatch in `summary`.
    fn follow(&self, reg: &mut Registry, i: usize, now: f64, summary: &mut Summary) {
        let t = reg.tasks[i].clone();
        let (id, file) = (t.id.as_str(), t.task_file.display());
        let facts = self.facts(&t);
        let cap = self.cfg.task_daily_redispatch_cap;
        let step = decide(&t, &facts, reg.redispatched_on(local_day(now)), cap);
        let task = &mut reg.tasks[i];
        let (severity, msg, sid) = match step {
            Step::Done => {
                let dry = if self.dry_run { " (dry-run)" } else { "" };
                log::info!("task {id} is done{dry}");
                task.status = TaskStatus::Done;
                task.note(now, "done", None);
                return;
            }
            Step::Wait => {
                let every = t.followup_s;
                log::debug!("task {id} is still running; checking again in {every:.0}s");
                task.next_check_at = now + every;
                return;
            }
            Step::Exhausted => {
                task.status = TaskStatus::Exhausted;
                task.note(now, "exhausted", None);
                let msg = format!(
                    "task {id} died without .done and its {} retries are spent — needs a human (task file {file})",
                    t.max_retry
                );
                (Severity::TaskExhausted, msg, Some(id))
            }
            Step::Tampered => {
                task.status = TaskStatus::Tampered;
                task.note(now, "tampered", None);
                let what = match facts.sha_now {
                    Some(_) => "changed since it was registered".to_owned(),
                    None => match read_bounded(&t.task_file, TASK_FILE_MAX) {
                        Err(e) if !e.is_missing() => e.reason(),
                        _ => "is gone".to_owned(),
                    },
                };
                let msg = format!(
                    "task {id} died without .done, but its task file {file} {what}; not re-dispatching"
                );
                (Severity::TaskTampered, msg, Some(id))
            }
            Step::Capped => {
                task.next_check_at = crate::sys::clock::next_local_midnight(now);
                task.note(now, "capped", None);
                let msg = format!(
                    "task {id} died without .done, but {cap} re-dispatches already ran today (TASK_DAILY_REDISPATCH_CAP); trying again tomorrow"
                );
                (Severity::RedispatchCap, msg, None)
            }
            Step::Redispatch => return self.redispatch(reg, i, &t, now, summary),
        };
        self.escalator.escalate(severity, &msg, sid, false);
    }

    /// Re-dispatches the dead task `t` (at `i`) as its next sub-number. One
    /// that cannot start is registered without a process: the next look
    /// finds it dead, like any attempt that died.
    fn redispatch(&self, reg: &mut Registry, i: usize, t: &Task, now: f64, summary: &mut Summary) {
        let id = t.id.as_str();
        // The race the meeting named: `.done` may have landed since the first look.
        if t.done_file.exists() {
            let task = &mut reg.tasks[i];
            task.status = TaskStatus::Done;
            task.note(now, "done", Some("found just before re-dispatch".into()));
            return;
        }
        let new_id = next_id(t);
        let partial = self.usable_partial(t).map(|p| p.display().to_string());
        let vars = [
            ("task_id", new_id.clone()),
            ("task_file", t.task_file.display().to_string()),
            ("parent_task", t.root().to_owned()),
            ("retry", (t.retry_count + 1).to_string()),
            ("partial_file", partial.unwrap_or_default()),
        ];
        let argv = render(&t.command, &vars);
        let log_path = self.logs_dir.join(log_file_name(&new_id));
        let spawned = if self.dry_run {
            log::info!("dry-run: would re-dispatch task {id} as {new_id}: {argv:?}");
            Ok(None)
        } else if let Some((program, args)) = argv.split_first() {
            process::spawn_detached(&Cmd::new(program).args(args), &log_path)
                .map(Some)
                .map_err(|e| e.to_string())
        } else {
            Err("the command is empty".to_owned())
        };
        let attempt = format!("retry {}/{}", t.retry_count + 1, t.max_retry);
        reg.count_redispatch(local_day(now));
        let old = &mut reg.tasks[i];
        old.status = TaskStatus::Retried;
        let mut child = Task {
            id: new_id.clone(),
            // The done file follows the new id; the checkpoint stays one file per lineage.
            done_file: successor_path(&t.done_file, id, &new_id),
            dispatched_at: now,
            next_check_at: now + t.followup_s,
            retry_count: t.retry_count + 1,
            parent_task: Some(t.root().to_owned()),
            status: TaskStatus::Pending,
            pid: None,
            pid_started: None,
            match_: new_id.clone(),
            events: Vec::new(),
            ..t.clone()
        };
        let msg = match spawned {
            Ok(pid) => {
                old.note(now, "retried", Some(format!("re-dispatched as {new_id}")));
                child.pid = pid;
                child.pid_started = pid.and_then(|p| process_table::start_time(&self.proc_dir, p));
                let detail = format!("re-dispatch of {id}, output in {}", log_path.display());
                child.note(now, "dispatched", Some(detail));
                summary.redispatched.push(new_id.clone());
                format!("task {id} died without .done; re-dispatched as {new_id} ({attempt})")
            }
            Err(e) => {
                log::warn!(
                    "re-dispatch of task {id} as {new_id} failed to start ({e}); it counts as {attempt}"
                );
                let detail = format!("re-dispatch as {new_id} failed to start: {e}");
                old.note(now, "redispatch-failed", Some(detail));
                let detail = format!(
                    "re-dispatch of {id} failed to start ({e}); counted as an attempt that died"
                );
                child.note(now, "spawn-failed", Some(detail));
                summary.not_started.push(new_id.clone());
                format!(
                    "task {id} died without .done; its re-dispatch as {new_id} failed to start ({e}) and counts as {attempt}"
                )
            }
        };
        reg.tasks.push(child);
        self.escalator
            .escalate(Severity::TaskRetry, &msg, Some(id), false);
    }

    /// The `.partial` checkpoint, if present and (with a key configured)
    /// correctly signed; a bad signature escalates and is not used.
    fn usable_partial(&self, t: &Task) -> Option<PathBuf> {
        let (id, partial) = (t.id.as_str(), &t.partial_file);
        let bytes = match read_bounded(partial, TASK_FILE_MAX) {
            Ok(bytes) => bytes,
            Err(e) if e.is_missing() => return None,
            Err(e) => {
                warn_unreadable(&e, &format!("re-dispatching task {id} without it"));
                return None;
            }
        };
        let Some(key_file) = &self.cfg.task_partial_hmac_key_file else {
            return Some(partial.clone());
        };
        let mut sig_path = partial.as_os_str().to_owned();
        sig_path.push(".sig");
        // An unreadable signature is no signature: the partial is not used.
        let sig = read_text(&PathBuf::from(sig_path), SMALL_FILE_MAX).unwrap_or_default();
        match read_key(key_file) {
            Ok(key) if verify(&key, &bytes, &sig) => Some(partial.clone()),
            Ok(_) => {
                let msg = format!(
                    "task {id}: {} has no valid signature; re-dispatching without it",
                    partial.display()
                );
                self.escalator
                    .escalate(Severity::PartialTampered, &msg, Some(id), false);
                None
            }
            Err(e) => {
                let next = format!("the HMAC key is unusable; not using the partial of task {id}");
                warn_unreadable(&e, &next);
                None
            }
        }
    }
}

/// Whether any process other than a watchdog has `needle` in its command line.
fn command_line_running(proc_dir: &Path, needle: &str) -> bool {
    !needle.is_empty()
        && process_table::processes(proc_dir).any(|p| {
            !p.is_watchdog()
                && contains_word(&p.command_text(), needle)
                && pid_alive(proc_dir, p.pid)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::clock::FakeClock;
    use crate::sys::shutdown::Shutdown;
    use crate::tasks::sign::sha256_hex;

    const T0: f64 = 1_796_068_800.0;

    struct Bench {
        tmp: tempfile::TempDir,
        cfg: Config,
        clock: Arc<FakeClock>,
        task_file: PathBuf,
        sha: String,
    }

    impl Bench {
        fn new() -> Bench {
            let tmp = tempfile::tempdir().unwrap();
            let cfg = crate::config::test_config(tmp.path());
            let task_file = tmp.path().join("task.md");
            std::fs::write(&task_file, "Refactor the parser.\n").unwrap();
            let sha = sha256_hex(b"Refactor the parser.\n");
            std::fs::create_dir_all(tmp.path().join("proc")).unwrap();
            Bench {
                tmp,
                cfg,
                clock: Arc::new(FakeClock::at(T0)),
                task_file,
                sha,
            }
        }

        fn task(&self, id: &str, max_retry: u32, command: &[&str]) -> Task {
            Task {
                id: id.into(),
                task_file: self.task_file.clone(),
                task_sha256: self.sha.clone(),
                done_file: self.tmp.path().join("never.done"),
                partial_file: self.tmp.path().join("never.partial"),
                followup_s: 60.0,
                dispatched_at: T0 - 120.0,
                next_check_at: T0 - 60.0,
                retry_count: 0,
                max_retry,
                parent_task: None,
                status: TaskStatus::Pending,
                pid: None,
                pid_started: None,
                match_: id.into(),
                command: command.iter().map(|w| w.to_string()).collect(),
                events: Vec::new(),
            }
        }

        fn register(&self, tasks: Vec<Task>) {
            let reg = Registry {
                tasks,
                ..Registry::default()
            };
            std::fs::create_dir_all(&self.cfg.watchdog_dir).unwrap();
            std::fs::write(
                &self.cfg.task_timers_file,
                serde_json::to_vec(&reg).unwrap(),
            )
            .unwrap();
        }

        /// One pass as `task check` runs it, with a process table where
        /// nothing runs.
        fn pass(&self) -> Summary {
            self.pass_as(false)
        }

        fn pass_as(&self, dry_run: bool) -> Summary {
            let shutdown = Shutdown::new().unwrap();
            let clock: Arc<dyn Clock> = self.clock.clone();
            let escalator = Escalator::standalone(&self.cfg, dry_run, clock.clone(), &shutdown);
            let mut f = FollowUp::from_config(&self.cfg, dry_run, escalator.clone(), clock, None);
            f.proc_dir = self.tmp.path().join("proc");
            let summary = f.pass().unwrap();
            escalator.drain();
            summary
        }

        fn tasks(&self) -> Vec<Task> {
            RegistryFile::new(&self.cfg.task_timers_file, None)
                .load()
                .unwrap()
                .tasks
        }

        fn escalations_of(&self, severity: &str) -> usize {
            std::fs::read_to_string(self.cfg.watchdog_dir.join("escalations.log"))
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter(|e| e["severity"] == severity)
                .count()
        }
    }

    #[test]
    fn a_redispatch_that_cannot_spawn_counts_as_an_attempt_and_escalates() {
        let b = Bench::new();
        b.register(vec![b.task(
            "task-1707",
            2,
            &["/nonexistent/dispatch.sh", "{task_id}"],
        )]);
        b.pass();
        let tasks = b.tasks();
        assert_eq!(tasks.len(), 2, "{tasks:#?}");
        assert_eq!(tasks[0].status, TaskStatus::Retried);
        assert_eq!(
            (tasks[1].id.as_str(), tasks[1].retry_count, tasks[1].status),
            ("task-1707.2", 1, TaskStatus::Pending)
        );
        assert_eq!(tasks[1].events[0].event, "spawn-failed");
        assert_eq!(b.escalations_of("task-retry"), 1);
        b.clock.advance(61.0);
        b.pass();
        b.clock.advance(61.0);
        b.pass();
        b.clock.advance(61.0);
        b.pass();
        let tasks = b.tasks();
        let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["task-1707", "task-1707.2", "task-1707.3"]);
        assert_eq!(tasks[2].status, TaskStatus::Exhausted);
        assert_eq!(b.escalations_of("task-retry"), 2);
        assert_eq!(b.escalations_of("task-exhausted"), 1);
        assert!(
            tasks.iter().all(|t| t.events.len() <= 3),
            "history stays bounded: {tasks:#?}"
        );
    }

    #[test]
    fn an_old_finished_lineage_and_its_log_are_pruned_while_an_open_lineage_and_the_daily_count_stay(
    ) {
        let b = Bench::new();
        let days_ago = |d: f64| T0 - d * 86_400.0;
        let finished = |id: &str, parent: Option<&str>, status, at: f64| {
            let mut t = b.task(id, 2, &["true"]);
            t.parent_task = parent.map(str::to_owned);
            t.status = status;
            t.dispatched_at = at;
            t.note(at, status.as_str(), None);
            t
        };
        let mut open = b.task("open-1.2", 2, &["true"]);
        open.parent_task = Some("open-1".into());
        open.dispatched_at = days_ago(50.0);
        open.next_check_at = T0 + 3600.0;
        let tasks = vec![
            finished("old-1", None, TaskStatus::Retried, days_ago(41.0)),
            finished("old-1.2", Some("old-1"), TaskStatus::Done, days_ago(40.0)),
            finished("open-1", None, TaskStatus::Retried, days_ago(50.0)),
            open,
            finished("recent", None, TaskStatus::Cancelled, days_ago(29.0)),
        ];
        let reg = Registry {
            tasks,
            redispatches: crate::tasks::registry::Daily {
                day: local_day(T0),
                count: 5,
            },
        };
        std::fs::create_dir_all(&b.cfg.watchdog_dir).unwrap();
        std::fs::write(&b.cfg.task_timers_file, serde_json::to_vec(&reg).unwrap()).unwrap();
        let logs = b.cfg.watchdog_dir.join("tasks");
        std::fs::create_dir_all(&logs).unwrap();
        for name in ["old-1.2.log", "open-1.2.log"] {
            std::fs::write(logs.join(name), b"output\n").unwrap();
        }
        // Dry-run prunes nothing.
        assert_eq!(b.pass_as(true).pruned, 0);
        assert_eq!(b.tasks().len(), 5);
        let summary = b.pass();
        assert_eq!((summary.pruned, summary.logs_removed), (2, 1));
        let ids: Vec<String> = b.tasks().into_iter().map(|t| t.id).collect();
        assert_eq!(ids, ["open-1", "open-1.2", "recent"]);
        assert!(!logs.join("old-1.2.log").exists());
        assert!(logs.join("open-1.2.log").exists());
        let kept = RegistryFile::new(&b.cfg.task_timers_file, None)
            .load()
            .unwrap();
        assert_eq!(kept.redispatched_on(local_day(T0)), 5);
        // Nothing more to prune: the registry is left as it is.
        assert_eq!(b.pass().pruned, 0);
    }

    #[test]
    fn a_task_id_too_long_for_a_file_name_in_the_registry_still_ends() {
        let b = Bench::new();
        let long = "t".repeat(5000);
        b.register(vec![b.task(&long, 1, &["true"])]);
        b.pass();
        let tasks = b.tasks();
        assert_eq!(tasks.len(), 2);
        assert_eq!(tasks[1].id, format!("{long}.2"));
        assert!(tasks[1].pid.is_some(), "spawned: {:?}", tasks[1].events);
        let logs: Vec<_> = std::fs::read_dir(b.cfg.watchdog_dir.join("tasks"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(logs.len(), 1);
        assert!(logs[0].len() < 64, "{logs:?}");
        b.clock.advance(61.0);
        b.pass();
        assert_eq!(b.tasks()[1].status, TaskStatus::Exhausted);
        assert_eq!(b.escalations_of("task-exhausted"), 1);
    }

    #[test]
    fn a_task_id_that_names_another_directory_keeps_its_log_in_the_log_dir() {
        let b = Bench::new();
        b.register(vec![b.task("../../escaped", 1, &["true"])]);
        b.pass();
        assert!(b.tasks()[1].pid.is_some());
        assert_eq!(
            std::fs::read_dir(b.cfg.watchdog_dir.join("tasks"))
                .unwrap()
                .count(),
            1
        );
        assert!(!b.cfg.watchdog_dir.join("../escaped.2.log").exists());
    }

    #[test]
    fn a_duplicated_id_in_a_hand_edited_registry_is_not_redispatched_every_pass() {
        let b = Bench::new();
        b.register(vec![
            b.task("task-2000", 2, &["true"]),
            b.task("task-2000", 2, &["true"]),
        ]);
        b.pass();
        b.pass();
        b.pass();
        let tasks = b.tasks();
        assert_eq!(tasks.len(), 4, "{tasks:#?}");
        assert_eq!(tasks[0].status, TaskStatus::Retried);
        assert_eq!(tasks[1].status, TaskStatus::Retried);
    }

    /// A process in the bench's fake `/proc` that started at `started`.
    #[cfg(target_os = "linux")]
    fn fake_process(b: &Bench, pid: u32, started: u64) {
        let dir = b.tmp.path().join("proc").join(pid.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cmdline"), b"some-program\0").unwrap();
        let fields: Vec<String> = (1..=18).map(|n| n.to_string()).collect();
        let stat = format!("{pid} (prog) S {} {started} 20", fields.join(" "));
        std::fs::write(dir.join("stat"), stat).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_reused_pid_is_not_mistaken_for_the_task() {
        let b = Bench::new();
        let mut alive = b.task("t-alive", 2, &["true"]);
        (alive.pid, alive.pid_started) = (Some(500), Some(1000));
        let mut reused = b.task("t-reused", 2, &["true"]);
        (reused.pid, reused.pid_started) = (Some(501), Some(1000));
        fake_process(&b, 500, 1000);
        fake_process(&b, 501, 2000);
        b.register(vec![alive, reused]);
        b.pass();
        let tasks = b.tasks();
        let status = |id: &str| tasks.iter().find(|t| t.id == id).map(|t| t.status);
        assert_eq!(
            status("t-alive"),
            Some(TaskStatus::Pending),
            "same start time: still running"
        );
        assert_eq!(
            status("t-reused"),
            Some(TaskStatus::Retried),
            "another program holds the pid: the task died"
        );
    }
}
