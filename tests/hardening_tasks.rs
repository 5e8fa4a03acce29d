//! Black-box tests of the hardening rules for task ids and for the fleet
//! lists (SPEC §4, §8, §11): `task add` refuses ids that cannot be file
//! names, a re-dispatch that cannot start still ends `exhausted`, and one
//! malformed `list` row never hides the rest of the fleet.

mod common;
mod harness;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use harness::{assert_ok, conductor, Wd, CONDUCTOR};
use serde_json::Value;

/// A watchdog install with a task file in `work/`.
struct Tasks {
    wd: Wd,
    task_file: PathBuf,
}

impl Tasks {
    fn new() -> Tasks {
        let wd = Wd::new();
        let dir = wd.home.path().join("work");
        fs::create_dir_all(&dir).unwrap();
        let task_file = dir.join("task.md");
        fs::write(&task_file, "Refactor the parser.\n").unwrap();
        Tasks { wd, task_file }
    }

    fn task(&self, args: &[&str]) -> std::process::Output {
        let mut all = vec!["task"];
        all.extend_from_slice(args);
        self.wd.run(&all)
    }

    /// `task add <id> --file task.md --after 0 --max-retry N -- <command…>`.
    fn add(&self, id: &str, max_retry: &str, command: &[&str]) -> std::process::Output {
        let file = self.task_file.display().to_string();
        let mut args = vec![
            "add",
            id,
            "--file",
            &file,
            "--after",
            "0",
            "--max-retry",
            max_retry,
            "--",
        ];
        args.extend_from_slice(command);
        self.task(&args)
    }

    fn check(&self) -> String {
        let out = self.task(&["check"]);
        assert_ok(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn registry_path(&self) -> PathBuf {
        self.wd.watchdog_dir().join("task-timers.json")
    }

    fn registry_bytes(&self) -> Vec<u8> {
        fs::read(self.registry_path()).unwrap_or_default()
    }

    fn tasks(&self) -> Vec<Value> {
        let v: Value = serde_json::from_slice(&self.registry_bytes()).unwrap();
        v["tasks"].as_array().unwrap().clone()
    }

    fn ids_and_statuses(&self) -> Vec<(String, String)> {
        self.tasks()
            .iter()
            .map(|t| {
                (
                    t["id"].as_str().unwrap().to_owned(),
                    t["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }
}

#[test]
fn a_task_id_longer_than_64_characters_is_refused_with_exit_2_and_changes_nothing() {
    let t = Tasks::new();
    assert_ok(&t.add("task-1", "2", &["true"]));
    let before = t.registry_bytes();
    for id in [
        "t".repeat(65),
        "t".repeat(252),
        "t".repeat(5000),
        "task 1".to_owned(),
        "task/1".to_owned(),
    ] {
        let out = t.add(&id, "2", &["true"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {stderr}", id.len());
        let first = stderr.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("agent-deck-watchdog: task add: <id>"),
            "{first}"
        );
        let shown: String = id.chars().take(64).collect();
        assert!(first.contains(&format!("{shown:?}")), "{first}");
        assert_eq!(
            t.registry_bytes(),
            before,
            "a refused add changed the registry"
        );
    }
    assert_ok(&t.add(&"t".repeat(64), "2", &["true"]));
}

#[test]
fn a_redispatch_that_cannot_spawn_counts_as_an_attempt_and_escalates() {
    let t = Tasks::new();
    assert_ok(&t.add("task-1707", "2", &["/nonexistent/dispatch.sh", "{task_id}"]));
    let first = t.check();
    assert!(first.contains("could not start task-1707.2"), "{first}");
    for _ in 0..4 {
        t.check();
    }
    let want = [
        ("task-1707", "retried"),
        ("task-1707.2", "retried"),
        ("task-1707.3", "exhausted"),
    ];
    let got = t.ids_and_statuses();
    assert_eq!(
        got,
        want.map(|(i, s)| (i.to_owned(), s.to_owned())),
        "{:#?}",
        t.tasks()
    );
    let child = &t.tasks()[1];
    assert_eq!(child["retry_count"], 1);
    assert_eq!(child["history"][0]["event"], "spawn-failed");
    assert_eq!(t.wd.escalations_of("task-retry"), 2);
    assert_eq!(t.wd.escalations_of("task-exhausted"), 1);
    let history: usize = t
        .tasks()
        .iter()
        .map(|t| t["history"].as_array().unwrap().len())
        .sum();
    assert!(history <= 8, "history keeps growing: {:#?}", t.tasks());
}

#[test]
fn a_hand_edited_task_id_too_long_for_a_file_name_still_ends_exhausted() {
    let t = Tasks::new();
    assert_ok(&t.add("task-2", "1", &["true", "{task_id}"]));
    let long = "t".repeat(5000);
    let text = String::from_utf8(t.registry_bytes()).unwrap();
    fs::write(t.registry_path(), text.replace("task-2", &long)).unwrap();
    for _ in 0..3 {
        t.check();
    }
    let got = t.ids_and_statuses();
    assert_eq!(
        got,
        [
            (long.clone(), "retried".to_owned()),
            (format!("{long}.2"), "exhausted".to_owned())
        ]
    );
    assert_eq!(t.wd.escalations_of("task-exhausted"), 1);
    let logs: Vec<String> = fs::read_dir(t.wd.watchdog_dir().join("tasks"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert!(logs[0].len() < 64, "{logs:?}");
}

/// Which list answers get malformed rows in front of the real ones.
#[derive(Clone, Copy)]
enum Broken {
    AllProfiles,
    OneProfile,
}

/// An `agent-deck` that is the fake, except that the chosen list answer
/// starts with rows without an id, with a numeric id, with a title of the
/// wrong type, and a row that is not an object.
fn with_malformed_rows(wd: Wd, broken: Broken) -> Wd {
    let pattern = match broken {
        Broken::AllProfiles => "*\" list --all \"*",
        Broken::OneProfile => "*\" -p \"*\" list --json \"*",
    };
    let script = wd.home.path().join("agent-deck-malformed");
    fs::write(
        &script,
        format!(
            r#"#!/bin/sh
real='{real}'
case " $* " in
  {pattern}) ;;
  *) exec "$real" "$@" ;;
esac
out=$("$real" "$@")
code=$?
printf '%s\n' "$out" | sed '1s/^\[/[{{"title":"conductor-no-id","group":"conductor","status":"error"}},{{"id":42,"title":"conductor-numeric","status":"error"}},{{"id":"w-1","title":["x"],"status":"error"}},"not a row",/'
exit $code
"#,
            real = wd.fake.bin.display(),
        ),
    )
    .unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let bin = script.display().to_string();
    wd.env("AGENT_DECK_BIN", &bin)
}

fn malformed_rows_do_not_hide_the_errored_conductor(broken: Broken) {
    let wd = with_malformed_rows(Wd::new(), broken);
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "error")]);
    let out = wd.run(&["--once"]);
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        wd.fake.calls_with(&["session", "restart", CONDUCTOR]).len(),
        1,
        "stderr:\n{stderr}"
    );
    assert_eq!(wd.restarts_with("restarted").len(), 1, "stderr:\n{stderr}");
    assert_eq!(
        stderr.matches("unreadable row").count(),
        1,
        "one warning for the skipped rows:\n{stderr}"
    );
}

#[test]
fn a_list_all_row_without_an_id_is_skipped_not_blinding() {
    malformed_rows_do_not_hide_the_errored_conductor(Broken::AllProfiles);
}

#[test]
fn a_profile_list_row_without_an_id_is_skipped_not_blinding() {
    malformed_rows_do_not_hide_the_errored_conductor(Broken::OneProfile);
}
