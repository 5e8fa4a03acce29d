//! Which finished tasks leave `task-timers.json` (`TASK_RETENTION_DAYS`,
//! SPEC §3 and §8), and which `watchdog/tasks/*.log` files go with them.
//!
//! - A lineage (a task added with `task add` and every re-dispatch numbered
//!   from it: the same [`Task::root`]) leaves whole or not at all: when none
//!   of its tasks is `pending` and each last changed more than the retention
//!   ago. So the `retried` ancestors of a task still followed up stay with
//!   it, and `task show` never names a parent that is gone.
//! - A task's last change is the newest of its events' `ts` and its
//!   `dispatched_at`. A time in the future (a clock stepped back) counts as
//!   recent: such a task waits, it is never pruned early.
//! - Pruning never touches the daily re-dispatch count (`redispatches`), so
//!   the cap still holds on a day whose re-dispatches were pruned.
//! - Logs: only the watchdog's own `tasks/<id>.log` (or the hashed name of
//!   `log_file_name`) of each pruned re-dispatch goes, and only when it is
//!   a regular file: a symlink there is neither followed nor removed, and a
//!   missing log is fine. The root's output belongs to its dispatcher. A log
//!   name still used by a task that stays (a hand-edited registry may repeat
//!   an id) is kept.
//!
//! [`prune`] and [`logs_to_remove`] are pure; [`remove_logs`] touches files.
//! The follow-up pass runs them under the registry lock, never in dry-run.

use std::collections::BTreeSet;
use std::path::Path;

use crate::tasks::registry::{Registry, Task, TaskStatus};
use crate::tasks::rules::log_file_name;

pub const DAY_S: f64 = 86_400.0;

/// When `t` last changed: its newest event, or its dispatch.
pub fn last_change(t: &Task) -> f64 {
    t.events
        .iter()
        .map(|h| h.ts)
        .fold(t.dispatched_at, f64::max)
}

/// Removes from `reg` every lineage that is wholly finished and last changed
/// more than `retention_s` before `now`; returns the removed tasks, in
/// registry order. The daily re-dispatch count stays as it is.
pub fn prune(reg: &mut Registry, now: f64, retention_s: f64) -> Vec<Task> {
    let cutoff = now - retention_s;
    let kept_roots: BTreeSet<String> = reg
        .tasks
        .iter()
        .filter(|t| {
            // False for a NaN too: such a lineage stays.
            let old = last_change(t) < cutoff;
            t.status == TaskStatus::Pending || !old
        })
        .map(|t| t.root().to_owned())
        .collect();
    let (gone, stay) = std::mem::take(&mut reg.tasks)
        .into_iter()
        .partition(|t| !kept_roots.contains(t.root()));
    reg.tasks = stay;
    gone
}

/// The names in `watchdog/tasks/` of the logs the watchdog wrote for the
/// `gone` tasks (its re-dispatches), minus any still named by a `kept` task.
pub fn logs_to_remove(gone: &[Task], kept: &[Task]) -> Vec<String> {
    let in_use: BTreeSet<String> = kept.iter().map(|t| log_file_name(&t.id)).collect();
    let names: BTreeSet<String> = gone
        .iter()
        .filter(|t| t.parent_task.is_some())
        .map(|t| log_file_name(&t.id))
        .filter(|name| !in_use.contains(name))
        .collect();
    names.into_iter().collect()
}

/// Removes each of `names` from `logs_dir` if it is a regular file (never
/// through or of a symlink); returns how many were removed.
pub fn remove_logs(logs_dir: &Path, names: &[String]) -> usize {
    names
        .iter()
        .map(|name| logs_dir.join(name))
        .filter(|path| {
            std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
                && std::fs::remove_file(path).is_ok()
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::registry::{Daily, TaskEvent};

    const NOW: f64 = 1_796_068_800.0;
    const MONTH: f64 = 30.0 * DAY_S;

    fn task(id: &str, parent: Option<&str>, status: TaskStatus, changed_days_ago: f64) -> Task {
        let changed = NOW - changed_days_ago * DAY_S;
        Task {
            id: id.into(),
            task_file: "/work/task.md".into(),
            task_sha256: "0".repeat(64),
            done_file: format!("/work/{id}.done").into(),
            partial_file: "/work/task.partial".into(),
            followup_s: 60.0,
            dispatched_at: changed - 3600.0,
            next_check_at: changed,
            retry_count: u32::from(parent.is_some()),
            max_retry: 2,
            parent_task: parent.map(str::to_owned),
            status,
            pid: None,
            pid_started: None,
            match_: id.into(),
            command: vec!["true".into()],
            events: vec![TaskEvent {
                ts: changed,
                event: status.as_str().into(),
                detail: None,
            }],
        }
    }

    fn ids(tasks: &[Task]) -> Vec<&str> {
        tasks.iter().map(|t| t.id.as_str()).collect()
    }

    #[test]
    fn an_old_finished_task_is_pruned_and_the_daily_count_kept() {
        let mut reg = Registry {
            tasks: vec![
                task("old-done", None, TaskStatus::Done, 40.0),
                task("young-done", None, TaskStatus::Done, 10.0),
                task("old-cancelled", None, TaskStatus::Cancelled, 31.0),
            ],
            redispatches: Daily {
                day: 20_000,
                count: 7,
            },
        };
        let gone = prune(&mut reg, NOW, MONTH);
        assert_eq!(ids(&gone), ["old-done", "old-cancelled"]);
        assert_eq!(ids(&reg.tasks), ["young-done"]);
        assert_eq!(
            reg.redispatches,
            Daily {
                day: 20_000,
                count: 7
            }
        );
    }

    #[test]
    fn an_open_task_keeps_its_whole_lineage() {
        let mut reg = Registry {
            tasks: vec![
                task("t-1", None, TaskStatus::Retried, 90.0),
                task("t-1.2", Some("t-1"), TaskStatus::Retried, 80.0),
                // Pending for a long time (capped, or a long follow-up).
                task("t-1.3", Some("t-1"), TaskStatus::Pending, 70.0),
            ],
            ..Registry::default()
        };
        assert!(prune(&mut reg, NOW, MONTH).is_empty());
        assert_eq!(ids(&reg.tasks), ["t-1", "t-1.2", "t-1.3"]);
    }

    #[test]
    fn a_finished_lineage_leaves_whole_once_its_newest_change_is_old() {
        let lineage = |last_days_ago: f64| Registry {
            tasks: vec![
                task("t-9", None, TaskStatus::Retried, 60.0),
                task("t-9.2", Some("t-9"), TaskStatus::Exhausted, last_days_ago),
                task("other", None, TaskStatus::Pending, 0.0),
            ],
            ..Registry::default()
        };
        let mut young = lineage(5.0);
        assert!(prune(&mut young, NOW, MONTH).is_empty());
        let mut old = lineage(45.0);
        assert_eq!(ids(&prune(&mut old, NOW, MONTH)), ["t-9", "t-9.2"]);
        assert_eq!(ids(&old.tasks), ["other"]);
    }

    #[test]
    fn the_last_change_is_the_newest_history_entry_and_the_future_counts_as_recent() {
        let mut t = task("t-5", None, TaskStatus::Done, 40.0);
        t.events.insert(
            0,
            TaskEvent {
                ts: NOW - DAY_S,
                event: "capped".into(),
                detail: None,
            },
        );
        assert_eq!(last_change(&t), NOW - DAY_S);
        let mut stepped = task("t-6", None, TaskStatus::Done, -400.0);
        stepped.events.clear();
        let mut reg = Registry {
            tasks: vec![t, stepped],
            ..Registry::default()
        };
        assert!(prune(&mut reg, NOW, MONTH).is_empty());
    }

    #[test]
    fn only_the_watchdogs_own_logs_go_and_never_through_a_symlink() {
        let gone = vec![
            task("t-1", None, TaskStatus::Retried, 90.0),
            task("t-1.2", Some("t-1"), TaskStatus::Retried, 80.0),
            task("t-1.3", Some("t-1"), TaskStatus::Done, 70.0),
            task("dup.2", Some("dup"), TaskStatus::Done, 70.0),
            task("gone-log.2", Some("gone-log"), TaskStatus::Done, 70.0),
        ];
        let kept = vec![task("dup.2", Some("dup"), TaskStatus::Pending, 0.0)];
        let names = logs_to_remove(&gone, &kept);
        assert_eq!(names, ["gone-log.2.log", "t-1.2.log", "t-1.3.log"]);
        let tmp = tempfile::tempdir().unwrap();
        let logs = tmp.path().join("tasks");
        std::fs::create_dir(&logs).unwrap();
        for name in ["t-1.log", "t-1.2.log", "dup.2.log"] {
            std::fs::write(logs.join(name), b"output\n").unwrap();
        }
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        std::os::unix::fs::symlink(&victim, logs.join("t-1.3.log")).unwrap();
        assert_eq!(remove_logs(&logs, &names), 1);
        assert!(!logs.join("t-1.2.log").exists());
        for name in ["t-1.log", "dup.2.log"] {
            assert!(logs.join(name).exists(), "{name}");
        }
        assert!(logs.join("t-1.3.log").symlink_metadata().is_ok());
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    }
}
