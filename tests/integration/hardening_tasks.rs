//! Black-box tests of the hardening rules for task ids and for the fleet
//! lists (SPEC §4, §8, §11): `task add` refuses ids that cannot be file
//! names, a re-dispatch that cannot start still ends `exhausted`, and one
//! malformed `list` row never hides the rest of the fleet.

use std::fs;

use agent_deck_watchdog::harness::TaskStatus;

use crate::support::files::write_script;
use crate::support::fixtures::{conductor, CONDUCTOR};
use crate::support::sim::shell_command;
use crate::support::tasks::TaskDir;
use crate::support::watchdog::{assert_ok, Wd};

/// `task add <id> --file task.md --after 0 --max-retry N -- <command…>`.
fn add(t: &TaskDir, id: &str, max_retry: &str, command: &[&str]) -> std::process::Output {
    t.add(id, &["--max-retry", max_retry], command)
}

/// Every task in the registry file as (id, status), in order.
fn ids_and_statuses(t: &TaskDir) -> Vec<(String, TaskStatus)> {
    t.registry().into_iter().map(|t| (t.id, t.status)).collect()
}

#[test]
fn a_task_id_longer_than_64_characters_is_refused_with_exit_2_and_changes_nothing() {
    let t = TaskDir::new(Wd::new());
    assert_ok(&add(&t, "task-1", "2", &["true"]));
    let before = t.registry_bytes();
    for id in [
        "t".repeat(65),
        "t".repeat(252),
        "t".repeat(5000),
        "task 1".to_owned(),
        "task/1".to_owned(),
    ] {
        let out = add(&t, &id, "2", &["true"]);
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
    assert_ok(&add(&t, &"t".repeat(64), "2", &["true"]));
}

#[test]
fn a_redispatch_that_cannot_spawn_counts_as_an_attempt_and_escalates() {
    let t = TaskDir::new(Wd::new());
    assert_ok(&add(
        &t,
        "task-1707",
        "2",
        &["/nonexistent/dispatch.sh", "{task_id}"],
    ));
    let first = t.check();
    assert!(first.contains("could not start task-1707.2"), "{first}");
    for _ in 0..4 {
        t.check();
    }
    let want = [
        ("task-1707", TaskStatus::Retried),
        ("task-1707.2", TaskStatus::Retried),
        ("task-1707.3", TaskStatus::Exhausted),
    ];
    let got = ids_and_statuses(&t);
    assert_eq!(
        got,
        want.map(|(i, s)| (i.to_owned(), s)),
        "{:#?}",
        t.registry()
    );
    let child = &t.registry()[1];
    assert_eq!(child.retry_count, 1);
    assert_eq!(child.events[0].event, "spawn-failed");
    assert_eq!(t.wd.escalations_of("task-retry"), 2);
    assert_eq!(t.wd.escalations_of("task-exhausted"), 1);
    let history: usize = t.registry().iter().map(|t| t.events.len()).sum();
    assert!(history <= 8, "history keeps growing: {:#?}", t.registry());
}

#[test]
fn a_hand_edited_task_id_too_long_for_a_file_name_still_ends_exhausted() {
    let t = TaskDir::new(Wd::new());
    assert_ok(&add(&t, "task-2", "1", &["true", "{task_id}"]));
    let long = "t".repeat(5000);
    let text = String::from_utf8(t.registry_bytes()).unwrap();
    fs::write(t.registry_path(), text.replace("task-2", &long)).unwrap();
    for _ in 0..3 {
        t.check();
    }
    let got = ids_and_statuses(&t);
    assert_eq!(
        got,
        [
            (long.clone(), TaskStatus::Retried),
            (format!("{long}.2"), TaskStatus::Exhausted)
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
    /// `list --all` with one row whose title has a byte that is not UTF-8.
    NotUtf8,
}

/// An `agent-deck` that is the simulator, except that the chosen list answer
/// starts with rows without an id, with a numeric id, with a title of the
/// wrong type, and a row that is not an object (for [`Broken::NotUtf8`]: one
/// critical-looking row whose title holds the byte 0xff).
fn with_malformed_rows(wd: Wd, broken: Broken) -> Wd {
    let pattern = match broken {
        Broken::AllProfiles | Broken::NotUtf8 => "*\" list --all \"*",
        Broken::OneProfile => "*\" -p \"*\" list --json \"*",
    };
    let rows = match broken {
        Broken::NotUtf8 => {
            r#"{"id":"b0000000-1","title":"conductor-'"$bad"'","group":"conductor"},"#
        }
        _ => {
            r#"{"title":"conductor-no-id","group":"conductor","status":"error"},{"id":42,"title":"conductor-numeric","status":"error"},{"id":"w-1","title":["x"],"status":"error"},"not a row","#
        }
    };
    let script = wd.home.path().join("agent-deck-malformed");
    write_script(
        &script,
        &format!(
            r#"#!/bin/sh
case " $* " in
  {pattern}) ;;
  *) exec {sim} "$@" ;;
esac
out=$({sim} "$@")
code=$?
bad=$(printf '\377')
printf '%s\n' "$out" | LC_ALL=C sed '1s/^\[/[{rows}/'
exit $code
"#,
            sim = shell_command(),
            rows = rows,
        ),
    );
    let bin = script.display().to_string();
    wd.env("AGENT_DECK_BIN", &bin)
}

fn malformed_rows_do_not_hide_the_errored_conductor(broken: Broken) -> String {
    let wd = with_malformed_rows(Wd::new(), broken);
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "error")]);
    let out = wd.run(&["--once"]);
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        wd.sim.calls_with(&["session", "restart", CONDUCTOR]).len(),
        1,
        "stderr:\n{stderr}"
    );
    assert_eq!(wd.restarts_with("restarted").len(), 1, "stderr:\n{stderr}");
    assert_eq!(
        stderr.matches("unreadable row").count(),
        1,
        "one warning for the skipped rows:\n{stderr}"
    );
    stderr.into_owned()
}

#[test]
fn a_list_all_row_without_an_id_is_skipped_not_blinding() {
    malformed_rows_do_not_hide_the_errored_conductor(Broken::AllProfiles);
}

#[test]
fn a_list_row_that_is_not_utf8_is_skipped_alone_not_blinding() {
    let stderr = malformed_rows_do_not_hide_the_errored_conductor(Broken::NotUtf8);
    assert!(
        stderr.contains(r#"skipped: row 1 (id "b0000000-1"): not UTF-8"#),
        "{stderr}"
    );
}

#[test]
fn a_profile_list_row_without_an_id_is_skipped_not_blinding() {
    malformed_rows_do_not_hide_the_errored_conductor(Broken::OneProfile);
}
