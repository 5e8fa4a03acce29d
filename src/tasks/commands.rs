//! The `task` subcommands: how a dispatcher registers a long task and how an
//! operator looks at, cancels and checks the follow-up (SPEC §8).
//!
//! Parsing and validation happen before the registry is touched, so bad
//! input is exit 2 with the registry unchanged.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::alert::escalate::Escalator;
use crate::config::Config;
use crate::duration_flag::{self, Bounds};
use crate::error::{Error, Result};
use crate::sys::clock::{local_timestamp, Clock, SystemClock};
use crate::sys::fs::{create_private_dirs, read_bounded, TASK_FILE_MAX};
use crate::sys::process_table::{self, PROC_DIR};
use crate::sys::shutdown::Shutdown;
use crate::tasks::followup::FollowUp;
use crate::tasks::registry::{RegistryFile, Task, TaskStatus};
use crate::tasks::rules::{id_problem, MAX_ID_CHARS};
use crate::tasks::sign::{file_sha256, read_key, sign};

/// `--after`: zero (check at the next tick) up to about 31 years.
const AFTER_BOUNDS: Bounds = Bounds {
    zero_ok: true,
    max_s: 999_999_999.0,
};

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

/// A `task` subcommand.
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

fn usage(msg: impl std::fmt::Display) -> Error {
    Error::usage(format!("{msg}\n{TASK_USAGE}"))
}

/// Parses the words after `task`.
pub(crate) fn parse(mut words: Vec<OsString>) -> Result<TaskCommand> {
    let dashes = words.iter().position(|w| w == "--").unwrap_or(words.len());
    let tail = words.split_off(dashes);
    let command: Vec<String> = tail
        .iter()
        .skip(1)
        .map(|w| w.to_string_lossy().into())
        .collect();
    let has_command = !command.is_empty();
    if words.iter().any(|w| w == "-h" || w == "--help") {
        return Ok(TaskCommand::Help);
    }
    let mut args = pico_args::Arguments::from_vec(words);
    let sub: String = args
        .subcommand()
        .map_err(usage)?
        .ok_or_else(|| usage("task: missing subcommand"))?;
    let cmd = match sub.as_str() {
        "add" => {
            let file: PathBuf = args
                .value_from_str("--file")
                .map_err(|_| usage("task add: --file <task-file> is required"))?;
            let after: Option<String> = args.opt_value_from_str("--after").map_err(usage)?;
            let after_s = match after {
                Some(raw) => duration_flag::parse("--after", &raw, AFTER_BOUNDS)?,
                None => 1200.0,
            };
            let max_retry = args
                .opt_value_from_fn("--max-retry", |s: &str| s.parse::<u32>())
                .map_err(|_| usage("task add: --max-retry takes a whole number"))?
                .unwrap_or(2);
            let done = args.opt_value_from_str("--done").map_err(usage)?;
            let pid = args
                .opt_value_from_fn("--pid", |s: &str| s.parse::<u32>())
                .map_err(|_| usage("task add: --pid takes a process id"))?;
            let match_ = args.opt_value_from_str("--match").map_err(usage)?;
            let id = args
                .free_from_os_str(|s| Ok::<_, String>(s.to_owned()))
                .map_err(|_| usage("task add: missing <id>"))
                .and_then(checked_id)?;
            TaskCommand::Add(NewTask {
                id,
                file,
                after_s,
                max_retry,
                done,
                pid,
                match_,
                command,
            })
        }
        "list" => TaskCommand::List {
            json: args.contains("--json"),
        },
        "show" => {
            let json = args.contains("--json");
            let id = args
                .free_from_str()
                .map_err(|_| usage("task show: missing <id>"))?;
            TaskCommand::Show { id, json }
        }
        "cancel" => TaskCommand::Cancel {
            id: args
                .free_from_str()
                .map_err(|_| usage("task cancel: missing <id>"))?,
        },
        "check" => TaskCommand::Check,
        "sign" => TaskCommand::Sign {
            file: args
                .free_from_str()
                .map_err(|_| usage("task sign: missing <file>"))?,
        },
        other => return Err(usage(format!("task: unknown subcommand '{other}'"))),
    };
    let rest = args.finish();
    if let Some(extra) = rest.first() {
        return Err(usage(format!(
            "task {sub}: unexpected argument '{}'",
            extra.to_string_lossy()
        )));
    }
    if has_command && !matches!(cmd, TaskCommand::Add(_)) {
        return Err(usage(format!("task {sub}: takes no command after --")));
    }
    Ok(cmd)
}

/// The `<id>` of `task add`, if it may name a task (SPEC §11: it becomes
/// part of file names); otherwise a usage error showing the value.
fn checked_id(raw: OsString) -> Result<String> {
    let text = raw.to_string_lossy();
    let why = raw
        .to_str()
        .map_or(Some("is not valid UTF-8".into()), id_problem);
    let Some(why) = why else {
        return Ok(text.into_owned());
    };
    let head: String = text.chars().take(MAX_ID_CHARS).collect();
    let more = if head.len() < text.len() { "…" } else { "" };
    Err(usage(format!("task add: <id> {head:?}{more} {why}")))
}

/// Runs a `task` subcommand.
pub(crate) fn run(cmd: TaskCommand, cfg: &Config, dry_run: bool) -> Result<()> {
    let registry = RegistryFile::new(&cfg.task_timers_file);
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
    let pid = t.pid.map(|p| format!("pid {p} runs, or "));
    let alive = format!(
        "{}command line contains {:?}",
        pid.unwrap_or_default(),
        t.match_
    );
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

#[cfg(test)]
mod tests {
    use super::*;

    fn p(words: &[&str]) -> Result<TaskCommand> {
        parse(words.iter().map(OsString::from).collect())
    }

    #[test]
    fn add_parses_everything_and_keeps_the_command_verbatim() {
        let cmd = p(&[
            "add",
            "task-1707",
            "--file",
            "t.md",
            "--after",
            "20m",
            "--max-retry",
            "3",
            "--pid",
            "42",
            "--match",
            "lead",
            "--",
            "dispatch.sh",
            "--id",
            "{task_id}",
            "--",
        ])
        .unwrap();
        let TaskCommand::Add(t) = cmd else { panic!() };
        assert_eq!(t.id, "task-1707");
        assert_eq!(t.after_s, 1200.0);
        assert_eq!(t.max_retry, 3);
        assert_eq!(t.pid, Some(42));
        assert_eq!(t.match_.as_deref(), Some("lead"));
        assert_eq!(t.command, ["dispatch.sh", "--id", "{task_id}", "--"]);
    }

    #[test]
    fn add_defaults() {
        let TaskCommand::Add(t) = p(&["add", "t1", "--file", "t.md", "--", "x"]).unwrap() else {
            panic!()
        };
        assert_eq!((t.after_s, t.max_retry, t.pid), (1200.0, 2, None));
    }

    #[test]
    fn a_task_id_longer_than_64_characters_is_refused() {
        let ok = "t".repeat(64);
        assert!(p(&["add", &ok, "--file", "t.md", "--", "x"]).is_ok());
        for long in ["t".repeat(65), "t".repeat(252), "t".repeat(5000)] {
            let err = p(&["add", &long, "--file", "t.md", "--", "x"]).unwrap_err();
            assert_eq!(err.exit_code(), 2);
            let msg = err.to_string();
            let first = msg.lines().next().unwrap();
            assert!(first.contains("<id>"), "{first}");
            assert!(first.contains(&"t".repeat(64)), "{first}");
            assert!(
                first.contains(&format!("{} characters", long.len())),
                "{first}"
            );
            assert!(first.len() < 300, "the message shows a clipped value");
        }
    }

    #[test]
    fn a_task_id_outside_the_allowed_characters_is_refused() {
        use std::os::unix::ffi::OsStringExt;
        for bad in ["../evil", "a b", "tâche", "a\nb", ".x"] {
            let err = p(&["add", bad, "--file", "t.md", "--", "x"]).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad:?}");
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
        }
        let raw = OsString::from_vec(b"task-\xff".to_vec());
        let words = vec![
            "add".into(),
            raw,
            "--file".into(),
            "t.md".into(),
            "--".into(),
            "x".into(),
        ];
        let err = parse(words).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("not valid UTF-8"), "{err}");
    }

    #[test]
    fn mistakes_are_usage_errors() {
        for words in [
            &["add", "t1", "--", "x"][..],
            &["add", "--file", "f", "--", "x"],
            &["add", "t1", "--file", "f", "--after", "soon", "--", "x"],
            &["add", "t1", "--file", "f", "--max-retry", "-1", "--", "x"],
            &["frob"],
            &[],
            &["list", "extra"],
        ] {
            assert_eq!(p(words).unwrap_err().exit_code(), 2, "{words:?}");
        }
    }
}
