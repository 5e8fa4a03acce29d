//! The follow-up rules of SPEC §8 as pure functions: what a task id may be,
//! what to do with a due task, the next sub-numbered id and its log file
//! name, the argv template, and whether a command line names a task.
//!
//! Nothing here reads a file, the process table or the clock.

use std::path::{Path, PathBuf};

use crate::fleet::session::is_valid_id;
use crate::tasks::registry::Task;
use crate::tasks::sign::sha256_hex;

/// The longest task id `task add` accepts (SPEC §11).
pub(crate) const MAX_ID_CHARS: usize = 64;

/// Why `id` cannot name a new task, or `None` if it can: at most
/// [`MAX_ID_CHARS`] of letters, digits, `.`, `_` and `-`, starting with a
/// letter or digit, no `..` (the id becomes part of file names).
pub(crate) fn id_problem(id: &str) -> Option<String> {
    let chars = id.chars().count();
    if chars > MAX_ID_CHARS {
        Some(format!(
            "is {chars} characters long; at most {MAX_ID_CHARS} are allowed"
        ))
    } else if !is_valid_id(id) {
        Some(
            "may hold only letters, digits, '.', '_' and '-', start with a letter or digit and contain no '..'"
                .into(),
        )
    } else {
        None
    }
}

/// The name of a re-dispatch's output file in `watchdog/tasks/`: `<id>.log`,
/// or, for an id that cannot be a file name (a hand-edited registry may hold
/// any string), `task-<sha256 of the id, 16 hex>.log`.
pub(crate) fn log_file_name(id: &str) -> String {
    const ROOM: usize = 128;
    if id.len() <= ROOM && is_valid_id(id) {
        format!("{id}.log")
    } else {
        format!("task-{}.log", &sha256_hex(id.as_bytes())[..16])
    }
}

/// What the pass observed about one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskFacts {
    pub done: bool,
    pub alive: bool,
    /// SHA-256 of the task file now; `None` when it is gone.
    pub sha_now: Option<String>,
}

/// What to do with a due task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    Done,
    Wait,
    Exhausted,
    Tampered,
    Capped,
    Redispatch,
}

/// The rule, in the order the meeting agreed on.
pub(crate) fn decide(t: &Task, f: &TaskFacts, redispatched_today: u32, cap: u32) -> Step {
    if f.done {
        Step::Done
    } else if f.alive {
        Step::Wait
    } else if t.retry_count >= t.max_retry {
        Step::Exhausted
    } else if f.sha_now.as_deref() != Some(t.task_sha256.as_str()) {
        Step::Tampered
    } else if redispatched_today >= cap {
        Step::Capped
    } else {
        Step::Redispatch
    }
}

/// The id of the next re-dispatch: always numbered from the root,
/// `task-1707` → `task-1707.2` → `task-1707.3`.
pub(crate) fn next_id(t: &Task) -> String {
    format!("{}.{}", t.root(), t.retry_count + 2)
}

/// Fills `{task_id}`, `{task_file}`, `{parent_task}`, `{retry}` and
/// `{partial_file}` into each argv word.
pub(crate) fn render(template: &[String], vars: &[(&str, String)]) -> Vec<String> {
    template
        .iter()
        .map(|word| {
            vars.iter()
                .fold(word.clone(), |w, (k, v)| w.replace(&format!("{{{k}}}"), v))
        })
        .collect()
}

/// Whether `needle` occurs in `text` not as part of a longer id: `task-1` is
/// not in `task-10` nor in `task-1.2`.
pub(crate) fn contains_word(text: &str, needle: &str) -> bool {
    let id_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_');
    text.match_indices(needle).any(|(i, _)| {
        let clear_before = !text[..i].chars().next_back().is_some_and(id_char);
        let mut after = text[i + needle.len()..].chars();
        let clear_after = match after.next() {
            None => true,
            // `task-1.` ends a sentence; `task-1.2` is another id.
            Some('.') => !after.next().is_some_and(|c| c.is_ascii_alphanumeric()),
            Some(c) => !id_char(c),
        };
        clear_before && clear_after
    })
}

/// A re-dispatch's done file: the default `<dir>/<id>.done` follows the new
/// id; a path the dispatcher chose is kept.
pub(crate) fn successor_path(path: &Path, old_id: &str, new_id: &str) -> PathBuf {
    match path.file_name().and_then(|n| n.to_str()) {
        Some(name) if name == format!("{old_id}.done") => {
            path.with_file_name(format!("{new_id}.done"))
        }
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::registry::TaskStatus;

    fn task(retry: u32, max: u32) -> Task {
        Task {
            id: if retry == 0 {
                "task-1707".into()
            } else {
                format!("task-1707.{}", retry + 1)
            },
            task_file: "/t/task.md".into(),
            task_sha256: "abc".into(),
            done_file: "/t/task-1707.done".into(),
            partial_file: "/t/task-1707.partial".into(),
            followup_s: 1200.0,
            dispatched_at: 0.0,
            next_check_at: 0.0,
            retry_count: retry,
            max_retry: max,
            parent_task: (retry > 0).then(|| "task-1707".into()),
            status: TaskStatus::Pending,
            pid: None,
            pid_started: None,
            match_: "task-1707".into(),
            command: vec![],
            events: vec![],
        }
    }

    fn facts(done: bool, alive: bool, sha: Option<&str>) -> TaskFacts {
        TaskFacts {
            done,
            alive,
            sha_now: sha.map(str::to_owned),
        }
    }

    #[test]
    fn a_task_id_longer_than_64_characters_is_refused() {
        assert_eq!(id_problem(&"a".repeat(64)), None);
        for long in ["a".repeat(65), "t".repeat(252), "x".repeat(5000)] {
            let why = id_problem(&long).expect("refused");
            assert!(why.contains("at most 64"), "{why}");
        }
    }

    #[test]
    fn a_task_id_outside_the_allowed_characters_is_refused() {
        for ok in ["task-1707", "a.b_c-D9", "7"] {
            assert_eq!(id_problem(ok), None, "{ok}");
        }
        for bad in [
            "", "../evil", "a/b", "a b", "a..b", ".hidden", "-x", "tâche", "a\nb", "a\0b",
        ] {
            assert!(id_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn log_names_stay_inside_the_log_dir_and_short() {
        assert_eq!(log_file_name("task-1707.2"), "task-1707.2.log");
        for bad in [
            "x".repeat(5000) + ".2",
            "../../etc/passwd.2".into(),
            "a/b.2".into(),
            String::new(),
        ] {
            let name = log_file_name(&bad);
            assert!(
                name.starts_with("task-") && name.ends_with(".log"),
                "{name}"
            );
            assert!(!name.contains('/') && name.len() < 64, "{name}");
        }
        assert_ne!(log_file_name("a/b"), log_file_name("a/c"));
    }

    #[test]
    fn rule_order() {
        let t = task(0, 2);
        assert_eq!(decide(&t, &facts(true, true, None), 99, 20), Step::Done);
        assert_eq!(decide(&t, &facts(false, true, None), 99, 20), Step::Wait);
        assert_eq!(
            decide(&task(2, 2), &facts(false, false, None), 99, 20),
            Step::Exhausted
        );
        assert_eq!(
            decide(&t, &facts(false, false, None), 0, 20),
            Step::Tampered
        );
        assert_eq!(
            decide(&t, &facts(false, false, Some("other")), 0, 20),
            Step::Tampered
        );
        assert_eq!(
            decide(&t, &facts(false, false, Some("abc")), 20, 20),
            Step::Capped
        );
        assert_eq!(
            decide(&t, &facts(false, false, Some("abc")), 19, 20),
            Step::Redispatch
        );
    }

    #[test]
    fn sub_numbers_always_come_from_the_root() {
        assert_eq!(next_id(&task(0, 2)), "task-1707.2");
        assert_eq!(next_id(&task(1, 2)), "task-1707.3");
        assert_eq!(
            successor_path(Path::new("/t/task-1707.done"), "task-1707", "task-1707.2"),
            PathBuf::from("/t/task-1707.2.done")
        );
        assert_eq!(
            successor_path(Path::new("/t/custom.done"), "task-1707", "task-1707.2"),
            PathBuf::from("/t/custom.done")
        );
    }

    #[test]
    fn template_rendering() {
        let argv = render(
            &[
                "run".into(),
                "--id={task_id}".into(),
                "{task_file}".into(),
                "{parent_task}/{retry}".into(),
            ],
            &[
                ("task_id", "t.2".into()),
                ("task_file", "/f".into()),
                ("parent_task", "t".into()),
                ("retry", "1".into()),
            ],
        );
        assert_eq!(argv, ["run", "--id=t.2", "/f", "t/1"]);
    }

    #[test]
    fn task_match_is_a_whole_id() {
        assert!(contains_word("dispatch.sh --task task-1 --go", "task-1"));
        assert!(contains_word("claude -p 'work on task-1.'", "task-1"));
        assert!(!contains_word("dispatch.sh task-10", "task-1"));
        assert!(!contains_word("dispatch.sh task-1.2", "task-1"));
        assert!(!contains_word("dispatch.sh xtask-1", "task-1"));
    }

    #[test]
    fn the_daily_cap_counts_whole_days() {
        use crate::sys::clock::local_day;
        let t = 1_796_068_800.0;
        assert_eq!(local_day(t + 86_400.0), local_day(t) + 1);
        assert!(local_day(t + 1.0) - local_day(t) <= 1);
    }
}
