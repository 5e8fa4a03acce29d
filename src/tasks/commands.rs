//! The `task` subcommands: how a dispatcher registers a long task and how an
//! operator looks at, cancels and checks the follow-up (SPEC §8).
//!
//! Parsing and validation happen before the registry is touched, so bad
//! input is exit 2 with the registry unchanged.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::alert::escalate::Escalator;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::sys::clock::{local_timestamp, Clock, SystemClock};
use crate::sys::fs::{create_private_dirs, read_bounded, TASK_FILE_MAX};
use crate::sys::process_table::{self, PROC_DIR};
use crate::sys::shutdown::Shutdown;
use crate::tasks::followup::FollowUp;
use crate::tasks::registry::{RegistryFile, Task, TaskStatus};
use crate::tasks::sign::{file_sha256, read_key, sign};

/// What `task add` registers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NewTask {
    pub id: String,
    pub file: PathBuf,
    pub after_s: f64,
    pub max_retry: u32,
    pub done: Option<PathBuf>,
    pub pid: Option<u32>,
    pub match_: Option<String>,
    pub command: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TaskCommand {
    Add(NewTask),
    List { json: bool },
    Show { id: String, json: bool },
    Cancel { id: String },
    Check,
    Sign { file: PathBuf },
    Help,
}

pub(crate) const TASK_USAGE: &str = "\
usage:
  agent-deck-watchdog task add <id> --file <task-file> [--after 20m] [--max-retry 2]
                               [--done <path>] [--pid N] [--match STR] -- <command…>
  agent-deck-watchdog task list [--json]
  agent-deck-watchdog task show <id> [--json]
  agent-deck-watchdog task cancel <id>
  agent-deck-watchdog task check [--dry-run]
  agent-deck-watchdog task sign <file>
--after DUR: a decimal number with an optional unit s, m, h or d (90, 20m, 1.5h, 2d)";

pub(crate) fn run(cmd: TaskCommand, cfg: &Config, dry_run: bool) -> Result<()> {
    let registry = RegistryFile::new(&cfg.task_timers_file, None);
    let clock = SystemClock;
    match cmd {
        TaskCommand::Add(new) => add(&registry, new, clock.now()),
        TaskCommand::List { json } => list(&registry, json),
        TaskCommand::Show { id, json } => show(&registry, &id, json),
        TaskCommand::Cancel { id } => {
            registry.update(|reg| {
                let t = reg
                    .get_mut(&id)
                    .ok_or_else(|| Error::usage(format!("task cancel: no task '{id}'")))?;
                t.status = TaskStatus::Cancelled;
                t.note(clock.now(), "cancelled", None);
                Ok(())
            })?;
            // Printed after the lock is released: a blocked stdout must not hold it.
            println!("task {id} cancelled: the watchdog no longer follows it up");
            Ok(())
        }
        TaskCommand::Check => check(cfg, dry_run),
        TaskCommand::Help => {
            println!("{TASK_USAGE}");
            Ok(())
        }
        TaskCommand::Sign { file } => {
            let key_file = cfg.task_partial_hmac_key_file.as_ref().ok_or_else(|| {
                Error::usage("task sign: TASK_PARTIAL_HMAC_KEY_FILE is not set, so there is no key to sign with")
            })?;
            let (key_shown, shown) = (key_file.display(), file.display());
            let key = read_key(key_file).map_err(|e| {
                Error::usage(format!("task sign: cannot read key {key_shown}: {e}"))
            })?;
            let bytes = read_bounded(&file, TASK_FILE_MAX)
                .map_err(|e| Error::usage(format!("task sign: cannot read {shown}: {e}")))?;
            println!("{}", sign(&key, &bytes));
            Ok(())
        }
    }
}

fn add(registry: &RegistryFile, new: NewTask, now: f64) -> Result<()> {
    if new.command.is_empty() || new.command[0].is_empty() {
        return Err(Error::usage(
            "task add: empty command: give it after --, e.g. -- dispatch.sh {task_id}",
        ));
    }
    let task_file = std::path::absolute(&new.file).unwrap_or(new.file.clone());
    let sha = file_sha256(&task_file)
        .map_err(|e| Error::usage(format!("task add: cannot read task file {e}")))?;
    let dir = task_file.parent().unwrap_or(Path::new("/")).to_owned();
    let id = new.id;
    let mut task = Task {
        id: id.clone(),
        task_sha256: sha,
        done_file: new.done.unwrap_or_else(|| dir.join(format!("{id}.done"))),
        partial_file: dir.join(format!("{id}.partial")),
        task_file,
        followup_s: new.after_s,
        dispatched_at: now,
        next_check_at: now + new.after_s,
        retry_count: 0,
        max_retry: new.max_retry,
        parent_task: None,
        status: TaskStatus::Pending,
        pid: new.pid,
        pid_started: new
            .pid
            .and_then(|p| process_table::start_time(Path::new(PROC_DIR), p)),
        match_: new.match_.unwrap_or_else(|| id.clone()),
        command: new.command,
        events: Vec::new(),
    };
    task.note(now, "registered", None);
    let next = local_timestamp(task.next_check_at);
    registry.update(|reg| {
        if reg.get(&id).is_some() {
            let why = format!("task add: a task '{id}' is already registered");
            return Err(Error::usage(why));
        }
        reg.tasks.push(task);
        Ok(())
    })?;
    // Printed after the lock is released: a blocked stdout must not hold it.
    println!("task {id} registered: follow-up at {next}");
    Ok(())
}

fn list(registry: &RegistryFile, json: bool) -> Result<()> {
    let reg = registry.load()?;
    if json {
        return print_json(&reg.tasks);
    }
    println!(
        "{:<24} {:<10} {:<6} {:<26} {:<18} TASK FILE",
        "ID", "STATUS", "RETRY", "NEXT CHECK", "PARENT"
    );
    for t in &reg.tasks {
        let next = match t.status {
            TaskStatus::Pending => local_timestamp(t.next_check_at),
            _ => "-".into(),
        };
        let (id, status, file) = (&t.id, t.status, t.task_file.display());
        let retry = format!("{}/{}", t.retry_count, t.max_retry);
        let parent = t.parent_task.as_deref().unwrap_or("-");
        println!("{id:<24} {status:<10} {retry:<6} {next:<26} {parent:<18} {file}");
    }
    Ok(())
}

fn show(registry: &RegistryFile, id: &str, json: bool) -> Result<()> {
    let reg = registry.load()?;
    let t = reg
        .get(id)
        .ok_or_else(|| Error::usage(format!("task show: no task '{id}'")))?;
    if json {
        return print_json(t);
    }
    let pid = t
        .pid
        .map_or(String::new(), |p| format!("pid {p} runs, or "));
    let alive = format!("{pid}command line contains {:?}", t.match_);
    let file = format!("{} (sha256 {})", t.task_file.display(), t.task_sha256);
    for (label, value) in [
        ("id", t.id.clone()),
        ("status", t.status.to_string()),
        ("retry", format!("{}/{}", t.retry_count, t.max_retry)),
        ("parent", t.parent_task.clone().unwrap_or("-".into())),
        ("task file", file),
        ("done file", t.done_file.display().to_string()),
        ("partial", t.partial_file.display().to_string()),
        ("dispatched", local_timestamp(t.dispatched_at)),
        ("next check", local_timestamp(t.next_check_at)),
        ("follow-up", format!("every {:.0}s", t.followup_s)),
        ("alive if", alive),
        ("command", format!("{:?}", t.command)),
    ] {
        println!("{:<13}{value}", format!("{label}:"));
    }
    for e in &t.events {
        let detail = e.detail.as_ref().map(|d| format!(": {d}"));
        let (at, event) = (local_timestamp(e.ts), &e.event);
        println!("  {at}  {event}{}", detail.unwrap_or_default());
    }
    Ok(())
}

fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Error::runtime(e.to_string()))?;
    println!("{text}");
    Ok(())
}

fn check(cfg: &Config, dry_run: bool) -> Result<()> {
    create_private_dirs(&cfg.watchdog_dir).map_err(|e| {
        Error::runtime(format!("cannot create {}: {e}", cfg.watchdog_dir.display()))
    })?;
    let shutdown = Shutdown::new().map_err(|e| Error::runtime(e.to_string()))?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let escalator = Escalator::standalone(cfg, dry_run, clock.clone(), &shutdown);
    let summary = FollowUp::from_config(cfg, dry_run, escalator.clone(), clock, None).pass();
    escalator.drain();
    let summary = summary?;
    let redispatched = Some(summary.redispatched.join(", ")).filter(|ids| !ids.is_empty());
    let redispatched = redispatched.as_deref().unwrap_or("none");
    let mut line = format!(
        "checked {} due task(s); re-dispatched {redispatched}",
        summary.checked
    );
    if !summary.not_started.is_empty() {
        let ids = summary.not_started.join(", ");
        line += &format!("; could not start {ids} (each counts as an attempt)");
    }
    if summary.pruned > 0 {
        line += &format!(
            "; pruned {} finished task(s) older than {} days and {} log(s)",
            summary.pruned, cfg.task_retention_days, summary.logs_removed
        );
    }
    println!("{line}");
    Ok(())
}
