//! The words after `task`, validated into a [`TaskCommand`] before the
//! registry is touched: bad input is exit 2 with the registry unchanged.

use std::ffi::OsString;
use std::path::PathBuf;

use super::duration::{self, Bounds};
use crate::error::{Error, Result};
use crate::tasks::commands::{NewTask, TaskCommand, TASK_USAGE};
use crate::tasks::rules::{id_problem, MAX_ID_CHARS};

/// `--after`: zero (check at the next tick) up to about 31 years.
const AFTER_BOUNDS: Bounds = Bounds {
    zero_ok: true,
    max_s: 999_999_999.0,
};

fn usage(msg: impl std::fmt::Display) -> Error {
    Error::usage(format!("{msg}\n{TASK_USAGE}"))
}

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
    let missing = |what: &str| usage(format!("task {sub}: missing <{what}>"));
    let cmd = match sub.as_str() {
        "add" => {
            let file: PathBuf = args
                .value_from_str("--file")
                .map_err(|_| usage("task add: --file <task-file> is required"))?;
            let after: Option<String> = args.opt_value_from_str("--after").map_err(usage)?;
            let after_s = match after {
                Some(raw) => duration::parse("--after", &raw, AFTER_BOUNDS)?,
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
                .map_err(|_| missing("id"))
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
            let id = args.free_from_str().map_err(|_| missing("id"))?;
            TaskCommand::Show { id, json }
        }
        "cancel" => TaskCommand::Cancel {
            id: args.free_from_str().map_err(|_| missing("id"))?,
        },
        "check" => TaskCommand::Check,
        "sign" => TaskCommand::Sign {
            file: args.free_from_str().map_err(|_| missing("file"))?,
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
