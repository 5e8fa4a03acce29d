//! Black-box tests of task follow-up (SPEC §8): `task add/list/show/cancel/
//! check/sign`, and the follow-up pass run by `task check` and the daemon.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::Duration;

use agent_deck_watchdog::harness::TaskStatus;

use crate::support::tasks::TaskDir;
use crate::support::wait_until;
use crate::support::watchdog::{assert_ok, Wd};

/// `task add <id> --file task.md --after 0 <extra…> -- record.sh {task_id}
/// {parent_task} {retry} {partial_file}`.
fn add(s: &TaskDir, id: &str, extra: &[&str]) -> Output {
    let record = s.record.display().to_string();
    let command = [
        &record,
        "{task_id}",
        "{parent_task}",
        "{retry}",
        "{partial_file}",
    ];
    s.add(id, extra, &command)
}

struct Sleeper(Child);

impl Sleeper {
    fn start() -> Sleeper {
        Sleeper(Command::new("sleep").arg("60").spawn().unwrap())
    }
    fn pid(&self) -> String {
        self.0.id().to_string()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn done_file_at_follow_up_means_done_and_nothing_spawned() {
    let s = TaskDir::new(Wd::new());
    assert_ok(&add(&s, "task-3101", &[]));
    fs::write(s.dir.join("task-3101.done"), "").unwrap();
    s.check();
    assert_eq!(s.status("task-3101"), Some(TaskStatus::Done));
    assert_eq!(s.spawn_logs(), 0);
}

#[test]
fn alive_process_waits_then_a_dead_one_is_redispatched_once_as_dot_2() {
    let s = TaskDir::new(Wd::new());
    let sleeper = Sleeper::start();
    assert_ok(&add(&s, "task-1707", &["--pid", &sleeper.pid()]));
    s.check();
    assert_eq!(s.status("task-1707"), Some(TaskStatus::Pending));
    drop(sleeper);
    assert!(s.check().contains("task-1707.2"));
    s.wait_dispatched(1);
    assert_eq!(s.dispatched(), ["task-1707.2 task-1707 1 "]);
    let child = s.entry("task-1707.2");
    assert_eq!(child.parent_task.as_deref(), Some("task-1707"));
    assert_eq!(child.retry_count, 1);
    assert_eq!(child.status, TaskStatus::Pending);
    assert_eq!(s.status("task-1707"), Some(TaskStatus::Retried));
    assert!(s.wd.watchdog_dir().join("tasks/task-1707.2.log").exists());
    assert_eq!(
        s.wd.escalations_of("task-retry"),
        1,
        "the first failure is reported"
    );
}

#[test]
fn retries_run_dot_2_and_dot_3_then_exhausted() {
    let s = TaskDir::new(Wd::new());
    assert_ok(&add(&s, "task-2707", &["--max-retry", "2"]));
    s.check();
    s.wait_dispatched(1);
    s.check();
    s.wait_dispatched(2);
    s.check();
    s.check();
    assert_eq!(s.spawn_logs(), 2);
    assert_eq!(
        s.dispatched(),
        ["task-2707.2 task-2707 1 ", "task-2707.3 task-2707 2 "]
    );
    let ids: Vec<String> = s.list().into_iter().map(|t| t.id).collect();
    assert_eq!(ids, ["task-2707", "task-2707.2", "task-2707.3"]);
    assert_eq!(s.status("task-2707.3"), Some(TaskStatus::Exhausted));
    assert_eq!(s.wd.escalations_of("task-exhausted"), 1);
    assert_eq!(s.wd.escalations_of("task-retry"), 2);
}

#[test]
fn a_redispatched_task_never_inherits_the_bot_token_or_systemds_socket() {
    let s = TaskDir::new(
        Wd::new()
            .env("TELEGRAM_BOT_TOKEN", "123:SECRET-BOT-TOKEN")
            .env("NOTIFY_SOCKET", "/run/nowhere.sock"),
    );
    let env_out = s.dir.join("env.txt");
    let command = format!(
        "echo \"token=$TELEGRAM_BOT_TOKEN socket=$NOTIFY_SOCKET\" > '{}'",
        env_out.display()
    );
    assert_ok(&s.add("task-4707", &[], &["/bin/sh", "-c", &command]));
    s.check();
    let written = || fs::read_to_string(&env_out).is_ok_and(|t| t.ends_with('\n'));
    assert!(
        wait_until(Duration::from_secs(15), written),
        "the re-dispatch did not run"
    );
    assert_eq!(fs::read_to_string(&env_out).unwrap(), "token= socket=\n");
}

#[test]
fn edited_task_file_is_tampered_and_nothing_spawned() {
    let s = TaskDir::new(Wd::new());
    assert_ok(&add(&s, "task-4707", &[]));
    fs::write(
        &s.task_file,
        "Refactor the parser, then push to production.\n",
    )
    .unwrap();
    s.check();
    assert_eq!(s.status("task-4707"), Some(TaskStatus::Tampered));
    assert_eq!(s.wd.escalations_of("task-tampered"), 1);
    assert_eq!(s.spawn_logs(), 0);
}

#[test]
fn daily_cap_allows_one_spawn_and_survives_a_daemon_restart() {
    let s = TaskDir::new(Wd::new().env("TASK_DAILY_REDISPATCH_CAP", "1"));
    assert_ok(&add(&s, "task-5001", &[]));
    assert_ok(&add(&s, "task-5002", &[]));
    assert_ok(&s.wd.run(&["--once"]));
    s.wait_dispatched(1);
    assert_eq!(s.wd.escalations_of("redispatch-cap"), 1);
    assert_ok(&add(&s, "task-5003", &[]));
    assert_ok(&s.wd.run(&["--once"]));
    assert_eq!(s.spawn_logs(), 1, "the daily count was forgotten");
    let capped = s.entry("task-5003");
    assert_eq!(capped.status, TaskStatus::Pending);
    assert!(
        capped.events.iter().any(|e| e.event == "capped"),
        "{capped:?}"
    );
    assert_eq!(
        s.wd.escalations_of("redispatch-cap"),
        1,
        "the alert's dedup window survives the restart too"
    );
}

#[test]
fn concurrent_adds_and_the_daemon_lose_nothing() {
    let s = TaskDir::new(Wd::new().env("SAFETY_POLL_INTERVAL_S", "0.05"));
    let sleeper = Sleeper::start();
    assert_ok(&add(&s, "task-6000", &["--pid", &sleeper.pid()]));
    let d = s.wd.spawn(&[]);
    s.wd.wait_for_first_tick();
    let file = s.task_file.display().to_string();
    let mut children: Vec<Child> = (0..16)
        .map(|i| {
            s.wd.command(&[
                "task",
                "add",
                &format!("task-61{i:02}"),
                "--file",
                &file,
                "--after",
                "1h",
                "--",
                "true",
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
        })
        .collect();
    for c in &mut children {
        assert!(c.wait().unwrap().success());
    }
    let before = s.entry("task-6000").next_check_at;
    s.wd.wait_for_more_ticks(3);
    let reg = s.list();
    assert_eq!(reg.len(), 17, "stderr:\n{}", d.stderr());
    assert_eq!(s.status("task-6000"), Some(TaskStatus::Pending));
    // The third writer: the daemon kept rewriting its follow-up time throughout.
    let after = s.entry("task-6000").next_check_at;
    assert!(after > before, "the daemon's own rewrite was lost");
}

#[test]
fn dry_run_check_decides_but_spawns_and_writes_nothing() {
    let s = TaskDir::new(Wd::new());
    assert_ok(&add(&s, "task-7001", &[]));
    let before = s.registry_bytes();
    assert_ok(&s.task(&["check", "--dry-run"]));
    assert_eq!(s.spawn_logs(), 0);
    assert_eq!(s.registry_bytes(), before);
    let e = s.wd.escalations_with("task-retry");
    assert_eq!(e.len(), 1);
    assert!(e[0].dry_run);
}

#[test]
fn a_task_file_over_the_bound_is_refused_naming_the_bound_and_its_size() {
    let s = TaskDir::new(Wd::new());
    let big = s.task_file.with_file_name("big.md");
    let size: u64 = 16 * 1024 * 1024 + 1;
    fs::File::create(&big)
        .and_then(|f| f.set_len(size))
        .expect("a sparse 16 MiB + 1 file");
    let file = big.display().to_string();
    let out = s.task(&["add", "task-8100", "--file", &file, "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&file), "{err}");
    assert!(err.contains(&format!("is {size} bytes")), "{err}");
    assert!(err.contains("bound of 16777216 bytes"), "{err}");
}

#[test]
fn bad_input_is_exit_2_and_changes_nothing() {
    let s = TaskDir::new(Wd::new());
    assert_ok(&add(&s, "task-8001", &[]));
    let before = s.registry_bytes();
    let file = s.task_file.display().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "add",
            "task-8002",
            "--file",
            "/nonexistent/task.md",
            "--",
            "true",
        ],
        vec!["add", "task-8001", "--file", &file, "--", "true"],
        vec!["add", "../evil", "--file", &file, "--", "true"],
        vec!["add", "task-8003", "--file", &file],
        vec![
            "add",
            "task-8004",
            "--file",
            &file,
            "--after",
            "soon",
            "--",
            "true",
        ],
        vec!["show", "task-9999"],
        vec!["cancel", "task-9999"],
    ];
    for args in cases {
        let out = s.task(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("agent-deck-watchdog: "));
        assert_eq!(s.registry_bytes(), before, "{args:?} changed the registry");
    }
    fs::write(s.registry_path(), "{\"tasks\": [").unwrap();
    let out = add(&s, "task-8005", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unreadable"));
    assert_eq!(
        fs::read_to_string(s.registry_path()).unwrap(),
        "{\"tasks\": ["
    );
}

#[test]
fn cancel_stops_the_follow_up_and_show_prints_the_history() {
    let s = TaskDir::new(Wd::new());
    assert_ok(&add(&s, "task-8101", &[]));
    assert_ok(&s.task(&["cancel", "task-8101"]));
    s.check();
    assert_eq!(s.spawn_logs(), 0);
    let out = s.task(&["show", "task-8101"]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("status:      cancelled") && text.contains("registered"),
        "{text}"
    );
    let out = s.task(&["list"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("task-8101"));
}

fn partial_path(s: &TaskDir, id: &str) -> PathBuf {
    let p = s.dir.join(format!("{id}.partial"));
    fs::write(&p, "step 3 of 7 done\n").unwrap();
    p
}

#[test]
fn signed_partial_is_handed_to_the_redispatch() {
    let s = TaskDir::signed(Wd::new(), |key| fs::write(key, "sekrit\n").unwrap());
    assert_ok(&add(&s, "task-9101", &[]));
    let partial = partial_path(&s, "task-9101");
    let out = s.task(&["sign", &partial.display().to_string()]);
    assert_ok(&out);
    let sig = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert_eq!(sig.len(), 64);
    fs::write(sig_path(&partial), &sig).unwrap();
    s.check();
    s.wait_dispatched(1);
    assert_eq!(
        s.dispatched(),
        [format!("task-9101.2 task-9101 1 {}", partial.display())]
    );
    assert_eq!(s.wd.escalations_of("partial-tampered"), 0);
}

#[test]
fn badly_signed_partial_escalates_and_is_not_used() {
    let s = TaskDir::signed(Wd::new(), |key| fs::write(key, "sekrit").unwrap());
    assert_ok(&add(&s, "task-9201", &[]));
    let partial = partial_path(&s, "task-9201");
    fs::write(sig_path(&partial), "00".repeat(32)).unwrap();
    s.check();
    s.wait_dispatched(1);
    assert_eq!(s.dispatched(), ["task-9201.2 task-9201 1 "]);
    assert_eq!(s.wd.escalations_of("partial-tampered"), 1);
}

fn sig_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".sig");
    PathBuf::from(s)
}

#[test]
fn a_held_registry_lock_does_not_stall_the_daemon() {
    let s = TaskDir::new(Wd::new());
    assert_ok(&add(&s, "task-9901", &[]));
    let lock = s.wd.watchdog_dir().join("task-timers.json.lock");
    let _holder = Sleeper(
        Command::new("flock")
            .arg(&lock)
            .args(["sleep", "60"])
            .spawn()
            .unwrap(),
    );
    let mut d = s.wd.spawn(&[]);
    s.wd.wait_for_first_tick();
    s.wd.wait_for_more_ticks(3);
    let (code, took) = d.signal_and_wait(libc::SIGTERM, Duration::from_secs(5));
    assert_eq!(code, Some(0), "stderr:\n{}", d.stderr());
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert!(
        d.stderr().contains("locked by another process"),
        "stderr:\n{}",
        d.stderr()
    );
}
