//! The follow-up pass of SPEC §8: for each task that is due, done → `done`;
//! alive → look again later; died without `.done` → exhausted, tampered,
//! capped or re-dispatched, in that order.
//!
//! [`decide`](crate::tasks::rules::decide) is the pure rule; [`FollowUp::pass`] gathers the facts (done
//! file, process table, task-file checksum), applies the rule under the
//! registry lock, checks the done file once more right before spawning, and
//! re-dispatches through [`crate::sys::process::spawn_detached`]. In dry-run it
//! decides and reports but spawns nothing and writes nothing.
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
use crate::error::Result;
use crate::sys::clock::Clock;
use crate::sys::fs::{read_bounded, read_text, warn_unreadable, SMALL_FILE_MAX, TASK_FILE_MAX};
use crate::sys::process::{self, Cmd};
use crate::sys::process_table::{self, pid_alive};
use crate::tasks::registry::{Registry, RegistryFile, Task, TaskStatus};
use crate::tasks::rules::{
    contains_word, day_of, decide, next_id, render, successor_path, Facts, Step,
};
use crate::tasks::sign::{file_sha256, read_key, verify};

/// Runs follow-up passes.
pub struct FollowUp {
    pub registry: RegistryFile,
    pub escalator: Arc<Escalator>,
    pub clock: Arc<dyn Clock>,
    pub dry_run: bool,
    pub cap: u32,
    pub logs_dir: PathBuf,
    pub hmac_key_file: Option<PathBuf>,
    pub proc_dir: PathBuf,
}

/// How a pass went, for logs and `task check`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    pub checked: usize,
    pub redispatched: Vec<String>,
}

impl FollowUp {
    /// The follow-up pass as the daemon and `task check` run it. `patience`:
    /// how long to wait for the registry lock (`None`: as long as it takes).
    pub fn from_config(
        cfg: &Config,
        dry_run: bool,
        escalator: Arc<Escalator>,
        clock: Arc<dyn Clock>,
        patience: Option<Duration>,
    ) -> FollowUp {
        let path = &cfg.task_timers_file;
        FollowUp {
            registry: patience.map_or_else(
                || RegistryFile::new(path),
                |p| RegistryFile::impatient(path, p),
            ),
            escalator,
            clock,
            dry_run,
            cap: cfg.task_daily_redispatch_cap,
            logs_dir: cfg.watchdog_dir.join("tasks"),
            hmac_key_file: cfg.task_partial_hmac_key_file.clone(),
            proc_dir: "/proc".into(),
        }
    }

    fn facts(&self, t: &Task) -> Facts {
        Facts {
            done: t.done_file.exists(),
            alive: t.pid.is_some_and(|p| pid_alive(&self.proc_dir, p))
                || command_line_running(&self.proc_dir, &t.match_),
            sha_now: file_sha256(&t.task_file),
        }
    }

    /// One pass over every due task.
    pub fn pass(&self) -> Result<Summary> {
        let now = self.clock.now();
        if self.dry_run {
            let mut reg = self.registry.load()?;
            return Ok(self.walk(&mut reg, now));
        }
        self.registry.update(|reg| Ok(self.walk(reg, now)))
    }

    fn walk(&self, reg: &mut Registry, now: f64) -> Summary {
        let mut summary = Summary::default();
        let due: Vec<String> = reg
            .tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Pending && t.next_check_at <= now)
            .map(|t| t.id.clone())
            .collect();
        for id in due {
            summary.checked += 1;
            if let Some(new_id) = self.follow(reg, &id, now) {
                summary.redispatched.push(new_id);
            }
        }
        summary
    }

    /// Follows up one task; the new task's id if it was re-dispatched.
    fn follow(&self, reg: &mut Registry, id: &str, now: f64) -> Option<String> {
        let t = reg.get(id)?.clone();
        let facts = self.facts(&t);
        let today = day_of(now);
        let step = decide(&t, &facts, reg.redispatched_on(today), self.cap);
        let dry = if self.dry_run { " (dry-run)" } else { "" };
        let task = reg.get_mut(id)?;
        match step {
            Step::Done => {
                log::info!("task {id} is done{dry}");
                task.status = TaskStatus::Done;
                task.note(now, "done", None);
            }
            Step::Wait => {
                log::debug!(
                    "task {id} is still running; checking again in {:.0}s",
                    t.followup_s
                );
                task.next_check_at = now + t.followup_s;
            }
            Step::Exhausted => {
                task.status = TaskStatus::Exhausted;
                task.note(now, "exhausted", None);
                let msg = format!(
                    "task {id} died without .done and its {} retries are spent — needs a human (task file {})",
                    t.max_retry,
                    t.task_file.display()
                );
                self.escalator
                    .escalate("task-exhausted", &msg, Some(id), false);
            }
            Step::Tampered => {
                task.status = TaskStatus::Tampered;
                task.note(now, "tampered", None);
                let what = if facts.sha_now.is_some() {
                    "changed since it was registered".to_owned()
                } else {
                    match read_bounded(&t.task_file, TASK_FILE_MAX) {
                        Err(e) if !e.is_missing() => e.reason(),
                        _ => "is gone".to_owned(),
                    }
                };
                let msg = format!(
                    "task {id} died without .done, but its task file {} {what}; not re-dispatching",
                    t.task_file.display()
                );
                self.escalator
                    .escalate("task-tampered", &msg, Some(id), false);
            }
            Step::Capped => {
                task.next_check_at = crate::sys::clock::next_local_midnight(now);
                task.note(now, "capped", None);
                let msg = format!(
                    "task {id} died without .done, but {} re-dispatches already ran today (TASK_DAILY_REDISPATCH_CAP); trying again tomorrow",
                    self.cap
                );
                self.escalator.escalate("redispatch-cap", &msg, None, false);
            }
            Step::Redispatch => return self.redispatch(reg, &t, now),
        }
        None
    }

    fn redispatch(&self, reg: &mut Registry, t: &Task, now: f64) -> Option<String> {
        // The race the meeting named: `.done` may have landed since the first look.
        if t.done_file.exists() {
            let task = reg.get_mut(&t.id)?;
            task.status = TaskStatus::Done;
            task.note(now, "done", Some("found just before re-dispatch".into()));
            return None;
        }
        let new_id = next_id(t);
        let partial = self.usable_partial(t);
        // The checkpoint stays one file per lineage; the done file follows the new id.
        let (done_file, partial_file) = (
            successor_path(&t.done_file, &t.id, &new_id),
            t.partial_file.clone(),
        );
        let vars = [
            ("task_id", new_id.clone()),
            ("task_file", t.task_file.display().to_string()),
            ("parent_task", t.root().to_owned()),
            ("retry", (t.retry_count + 1).to_string()),
            (
                "partial_file",
                partial.map(|p| p.display().to_string()).unwrap_or_default(),
            ),
        ];
        let argv = render(&t.command, &vars);
        let log_path = self.logs_dir.join(format!("{new_id}.log"));
        let pid = if self.dry_run {
            log::info!(
                "dry-run: would re-dispatch task {} as {new_id}: {argv:?}",
                t.id
            );
            None
        } else {
            let (program, args) = argv.split_first()?;
            match process::spawn_detached(&Cmd::new(program).args(args), &log_path) {
                Ok(pid) => Some(pid),
                Err(e) => {
                    log::warn!("re-dispatch of task {} as {new_id} failed to start ({e}); trying again next pass", t.id);
                    let task = reg.get_mut(&t.id)?;
                    task.note(now, "redispatch-failed", Some(e.to_string()));
                    task.next_check_at = now + t.followup_s;
                    return None;
                }
            }
        };
        reg.count_redispatch(day_of(now));
        let old = reg.get_mut(&t.id)?;
        old.status = TaskStatus::Retried;
        old.note(now, "retried", Some(format!("re-dispatched as {new_id}")));
        let mut child = Task {
            id: new_id.clone(),
            done_file,
            partial_file,
            dispatched_at: now,
            next_check_at: now + t.followup_s,
            retry_count: t.retry_count + 1,
            parent_task: Some(t.root().to_owned()),
            status: TaskStatus::Pending,
            pid,
            match_: new_id.clone(),
            history: Vec::new(),
            ..t.clone()
        };
        child.note(
            now,
            "dispatched",
            Some(format!(
                "re-dispatch of {}, output in {}",
                t.id,
                log_path.display()
            )),
        );
        reg.tasks.push(child);
        let msg = format!(
            "task {} died without .done; re-dispatched as {new_id} (retry {}/{})",
            t.id,
            t.retry_count + 1,
            t.max_retry
        );
        self.escalator
            .escalate("task-retry", &msg, Some(&t.id), false);
        Some(new_id)
    }

    /// The `.partial` checkpoint, if present and (with a key configured)
    /// correctly signed; a bad signature escalates and is not used.
    fn usable_partial(&self, t: &Task) -> Option<PathBuf> {
        let bytes = match read_bounded(&t.partial_file, TASK_FILE_MAX) {
            Ok(bytes) => bytes,
            Err(e) if e.is_missing() => return None,
            Err(e) => {
                warn_unreadable(&e, &format!("re-dispatching task {} without it", t.id));
                return None;
            }
        };
        let Some(key_file) = &self.hmac_key_file else {
            return Some(t.partial_file.clone());
        };
        let mut sig_path = t.partial_file.as_os_str().to_owned();
        sig_path.push(".sig");
        // An unreadable signature is no signature: the partial is not used.
        let sig = read_text(&PathBuf::from(sig_path), SMALL_FILE_MAX).unwrap_or_default();
        match read_key(key_file) {
            Ok(key) if verify(&key, &bytes, &sig) => Some(t.partial_file.clone()),
            Ok(_) => {
                let msg = format!(
                    "task {}: {} has no valid signature; re-dispatching without it",
                    t.id,
                    t.partial_file.display()
                );
                self.escalator
                    .escalate("partial-tampered", &msg, Some(&t.id), false);
                None
            }
            Err(e) => {
                warn_unreadable(
                    &e,
                    &format!(
                        "the HMAC key is unusable; not using the partial of task {}",
                        t.id
                    ),
                );
                None
            }
        }
    }
}

/// Whether any process other than a watchdog has `needle` in its command line.
fn command_line_running(proc_dir: &Path, needle: &str) -> bool {
    !needle.is_empty()
        && process_table::processes(proc_dir).any(|p| {
            let ours = p
                .cmdline
                .split(|b| *b == 0)
                .next()
                .is_some_and(|a0| a0.ends_with(b"agent-deck-watchdog"));
            !ours && contains_word(&p.command_text(), needle) && pid_alive(proc_dir, p.pid)
        })
}
