//! Black-box tests of SPEC §11 "Reading" and "Writing": a FIFO, a symlink, a
//! huge file or a hostile umask in the spool, the task dir or the watchdog
//! dir never stalls, bloats or redirects the real daemon.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::Duration;

use agent_deck_watchdog::harness::TaskStatus;

use crate::support::files::mkfifo;
use crate::support::fixtures::{conductor, CONDUCTOR};
use crate::support::output_within;
use crate::support::tasks::TaskDir;
use crate::support::watchdog::{assert_ok, Daemon, Wd};

const SECS_10: Duration = Duration::from_secs(10);

/// Puts a FIFO at `dir/<id>.json` the way a hook file arrives (rename onto
/// the name), so inotify reports it.
fn fifo_hook(dir: &Path, id: &str) {
    let tmp = dir.join(format!(".{id}.json.tmp-fifo"));
    mkfifo(&tmp);
    fs::rename(&tmp, dir.join(format!("{id}.json"))).unwrap();
}

/// SIGTERM ends the daemon within two seconds, exit 0.
fn stops_promptly(d: &mut Daemon) {
    let (code, took) = d.signal_and_wait(libc::SIGTERM, Duration::from_secs(5));
    assert_eq!(code, Some(0), "stderr:\n{}", d.stderr());
    assert!(took < Duration::from_secs(2), "SIGTERM took {took:?}");
}

/// Peak resident memory of a process in KiB, from /proc.
fn peak_rss_kib(pid: i32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .mode()
        & 0o7777
}

#[test]
fn a_fifo_hook_file_does_not_stall_the_daemon() {
    let stderr = a_fifo_hook_does_not_stall(false);
    assert!(
        stderr.contains(&format!("{CONDUCTOR}.json is a FIFO")),
        "stderr:\n{stderr}"
    );
}

#[test]
fn a_fifo_sandbox_hook_file_does_not_stall_the_daemon() {
    a_fifo_hook_does_not_stall(true);
}

/// A conductor dies and a FIFO arrives as its hook file (in its sandbox
/// dir if `sandboxed`): it is restarted all the same and SIGTERM still
/// works. The daemon's stderr.
fn a_fifo_hook_does_not_stall(sandboxed: bool) -> String {
    let wd = Wd::new().env("SAFETY_POLL_INTERVAL_S", "30");
    let dir = if sandboxed {
        wd.hooks.join("sandbox").join(CONDUCTOR)
    } else {
        wd.hooks.clone()
    };
    fs::create_dir_all(&dir).unwrap();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let mut d = wd.spawn(&[]);
    wd.wait_until_quiet();
    wd.set_status("error");
    fifo_hook(&dir, CONDUCTOR);
    d.wait_for(SECS_10, "the errored conductor was never restarted", || {
        wd.restart_calls() == 1
    });
    let stderr = d.stderr();
    stops_promptly(&mut d);
    stderr
}

#[test]
fn a_100_mb_hook_file_costs_no_memory() {
    let wd = Wd::new().env("SAFETY_POLL_INTERVAL_S", "30");
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let mut d = wd.spawn(&[]);
    wd.wait_until_quiet();
    let before = peak_rss_kib(d.pid());
    // Sparse: 100 MB that cost the test no disk and no time.
    let tmp = wd.hooks.join(format!(".{CONDUCTOR}.json.tmp-big"));
    fs::File::create(&tmp).unwrap().set_len(100 << 20).unwrap();
    fs::rename(&tmp, wd.hooks.join(format!("{CONDUCTOR}.json"))).unwrap();
    // The hook is unreadable, so the status is asked for: the file was looked at.
    d.wait_for(SECS_10, "the hook was never handled", || {
        !wd.sim
            .calls_with(&["session", "show", CONDUCTOR])
            .is_empty()
    });
    let grew_mib = peak_rss_kib(d.pid()).saturating_sub(before) / 1024;
    assert!(grew_mib < 20, "peak memory grew by {grew_mib} MiB");
    assert!(d.alive());
}

#[test]
fn a_fifo_in_place_of_restart_log_does_not_stop_restarts() {
    let wd = Wd::new();
    fs::create_dir_all(wd.watchdog_dir()).unwrap();
    let log = wd.watchdog_dir().join("restart.log");
    mkfifo(&log);
    let other = "7d0e4b2c-1755891299";
    wd.sessions(vec![
        conductor(CONDUCTOR, "conductor-ops", "error"),
        conductor(other, "conductor-travel", "error"),
    ]);
    let mut d = wd.spawn(&[]);
    d.wait_for(SECS_10, "restarts stopped after the first record", || {
        wd.restart_calls() == 2
    });
    assert!(
        d.stderr().contains("restart.log") && d.stderr().contains("FIFO"),
        "stderr:\n{}",
        d.stderr()
    );
    assert!(fs::symlink_metadata(&log).unwrap().file_type().is_fifo());
    stops_promptly(&mut d);
}

#[test]
fn a_symlinked_restart_log_is_never_written_through() {
    let wd = Wd::new();
    fs::create_dir_all(wd.watchdog_dir()).unwrap();
    let victim = wd.home.path().join("victim.txt");
    fs::write(&victim, "precious\n").unwrap();
    std::os::unix::fs::symlink(&victim, wd.watchdog_dir().join("restart.log")).unwrap();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "error")]);
    let out = wd.run(&["--once"]);
    assert_ok(&out);
    assert_eq!(wd.restart_calls(), 1);
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("symbolic link"), "stderr:\n{stderr}");
}

#[test]
fn a_symlinked_lock_file_target_is_never_truncated() {
    let wd = Wd::new();
    fs::create_dir_all(wd.watchdog_dir()).unwrap();
    let victim = wd.home.path().join("victim.txt");
    fs::write(&victim, "precious\n").unwrap();
    std::os::unix::fs::symlink(&victim, wd.watchdog_dir().join("watchdog.lock")).unwrap();
    let out = wd.run(&["--once"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("watchdog.lock") && stderr.contains("symbolic link"),
        "stderr:\n{stderr}"
    );
}

#[test]
fn files_and_directories_are_private_whatever_the_umask() {
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "error")]);
    let mut cmd = wd.command(&["--once"]);
    // SAFETY: the hook runs in the forked child before exec; umask is
    // async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::umask(rustix::fs::Mode::empty());
            Ok(())
        });
    }
    let out = output_within(cmd, SECS_10);
    assert_ok(&out);
    assert_eq!(wd.restart_calls(), 1);
    let w = wd.watchdog_dir();
    for (path, want) in [
        (wd.root.clone(), 0o700),
        (w.clone(), 0o700),
        (w.join("autorestart"), 0o700),
        (w.join("watchdog.lock"), 0o600),
        (w.join("restart.log"), 0o600),
        (w.join("liveness.log"), 0o600),
        (w.join("state.json"), 0o600),
        (w.join("metrics.prom"), 0o644),
        (w.join("daemon-status.json"), 0o600),
    ] {
        assert_eq!(mode(&path), want, "{}", path.display());
    }
}

#[test]
fn temp_files_left_by_a_killed_run_are_removed_at_start() {
    let wd = Wd::new();
    let w = wd.watchdog_dir();
    fs::create_dir_all(&w).unwrap();
    let victim = wd.home.path().join("victim.txt");
    fs::write(&victim, "precious\n").unwrap();
    for name in [
        ".state.json.tmp-4242",
        ".metrics.prom.tmp-4242",
        ".daemon-status.json.tmp-4242",
        ".task-timers.json.tmp-4242-00ff00ff00ff00ff",
        "notes.tmp-1",
    ] {
        fs::write(w.join(name), "left over").unwrap();
    }
    std::os::unix::fs::symlink(&victim, w.join(".state.json.tmp-link")).unwrap();
    assert_ok(&wd.run(&["--once"]));
    let mut left: Vec<String> = fs::read_dir(&w)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    left.sort();
    assert_eq!(left, [".state.json.tmp-link", "notes.tmp-1"]);
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
}

/// `task add <id> --file task.md --after 0 -- record.sh {task_id} {partial_file}`.
fn add(t: &TaskDir, id: &str) {
    let record = t.record.display().to_string();
    assert_ok(&t.add(id, &[], &[&record, "{task_id}", "{partial_file}"]));
}

#[test]
fn a_fifo_task_file_does_not_hang_task_list_or_the_daemon() {
    let t = TaskDir::new(Wd::new());
    add(&t, "task-fifo-4101");
    fs::remove_file(&t.task_file).unwrap();
    mkfifo(&t.task_file);
    let mut d = t.wd.spawn(&[]);
    t.wd.wait_for_first_tick();
    d.wait_for(SECS_10, "never tampered", || {
        t.status("task-fifo-4101") == Some(TaskStatus::Tampered)
    });
    let escalations = t.wd.escalations();
    let msg = escalations
        .iter()
        .find(|e| e.severity == "task-tampered")
        .map(|e| e.message.as_str())
        .unwrap_or_default();
    assert!(msg.contains("is a FIFO"), "{escalations:?}");
    t.wd.wait_for_more_ticks(2);
    assert_ok(&t.task(&["cancel", "task-fifo-4101"]));
    stops_promptly(&mut d);
}

#[test]
fn a_fifo_partial_file_is_skipped_and_the_task_redispatched() {
    let t = TaskDir::new(Wd::new());
    add(&t, "task-fifo-4201");
    mkfifo(&t.dir.join("task-fifo-4201.partial"));
    t.check();
    t.wait_dispatched(1);
    assert_eq!(t.dispatched(), ["task-fifo-4201.2 "]);
}

#[test]
fn a_fifo_signature_file_does_not_hang_the_follow_up() {
    let t = TaskDir::signed(Wd::new(), |key| fs::write(key, "sekrit\n").unwrap());
    add(&t, "task-fifo-4301");
    fs::write(t.dir.join("task-fifo-4301.partial"), "step 3 of 7\n").unwrap();
    mkfifo(&t.dir.join("task-fifo-4301.partial.sig"));
    t.check();
    t.wait_dispatched(1);
    assert_eq!(t.dispatched(), ["task-fifo-4301.2 "]);
    assert_eq!(t.wd.escalations_of("partial-tampered"), 1);
}

#[test]
fn a_fifo_hmac_key_does_not_hang_the_follow_up() {
    let t = TaskDir::signed(Wd::new(), mkfifo);
    add(&t, "task-fifo-4401");
    fs::write(t.dir.join("task-fifo-4401.partial"), "step 3 of 7\n").unwrap();
    fs::write(t.dir.join("task-fifo-4401.partial.sig"), "00").unwrap();
    t.check();
    t.wait_dispatched(1);
    assert_eq!(t.dispatched(), ["task-fifo-4401.2 "]);
}

#[test]
fn a_fifo_in_place_of_a_redispatch_log_does_not_hang_the_follow_up() {
    let t = TaskDir::new(Wd::new());
    add(&t, "task-fifo-4501");
    let logs = t.wd.watchdog_dir().join("tasks");
    fs::create_dir_all(&logs).unwrap();
    mkfifo(&logs.join("task-fifo-4501.2.log"));
    // Whatever the pass makes of the failed spawn, it ends, and runs nothing.
    t.check();
    assert!(t.dispatched().is_empty());
    assert_ok(&t.task(&["list"]));
}

/// agent-deck's own files in the hooks dir (1.16.11's event history by
/// appends, generation and sid files, locks, dot temp files, and its
/// pruning's deletes, #2283/#2287) never wake a status check; a real hook
/// of another conductor, written after them, does.
#[test]
fn agent_decks_other_hooks_dir_files_wake_no_status_check() {
    for backend in ["auto", "scan"] {
        other_hooks_dir_files_wake_nothing(backend);
    }
}

/// The test above with `WATCH_BACKEND=backend`.
fn other_hooks_dir_files_wake_nothing(backend: &str) {
    use std::io::Write;
    const OTHER: &str = "a0b1c2d3-1755899999";
    let wd = Wd::new()
        .env("SAFETY_POLL_INTERVAL_S", "30")
        .env("WATCH_BACKEND", backend);
    wd.sessions(vec![
        conductor(CONDUCTOR, "conductor-ops", "running"),
        conductor(OTHER, "conductor-b", "running"),
    ]);
    let pruned = wd.hooks.join(format!("{CONDUCTOR}.json"));
    fs::write(&pruned, r#"{"status":"idle","ts":1}"#).unwrap();
    let mut d = wd.spawn(&[]);
    wd.wait_until_quiet();
    let shows = |id: &str| wd.sim.calls_with(&["session", "show", id]).len();
    assert_eq!(shows(CONDUCTOR), 0);
    let events = wd.hooks.join(format!("{CONDUCTOR}.events.jsonl"));
    for i in 0..5 {
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&events)
            .unwrap();
        writeln!(f, r#"{{"ts":{i},"event":"Stop","status":"idle"}}"#).unwrap();
    }
    for name in [
        ".generation.json".to_owned(),
        format!("{CONDUCTOR}.generation.json"),
        format!("{CONDUCTOR}.sid"),
        format!("{CONDUCTOR}.lock"),
        format!("{CONDUCTOR}.json.lock"),
    ] {
        fs::write(wd.hooks.join(name), "{}").unwrap();
    }
    let tmp = wd.hooks.join(format!(".{CONDUCTOR}.json.tmp-7"));
    fs::write(&tmp, r#"{"status":"idle"}"#).unwrap();
    fs::remove_file(&tmp).unwrap();
    fs::remove_file(&pruned).unwrap();
    // The control: a real hook, after the rest.
    fs::write(
        wd.hooks.join(format!("{OTHER}.json")),
        r#"{"status":"idle","ts":2}"#,
    )
    .unwrap();
    d.wait_for(
        SECS_10,
        &format!("{backend}: the real hook woke nothing"),
        || shows(OTHER) == 1,
    );
    // A batch's hooks are checked one after another: once the daemon is
    // quiet, every file above has been handled.
    wd.wait_until_quiet();
    assert_eq!(
        shows(CONDUCTOR),
        0,
        "{backend}: a file that is no hook woke a status check: {:?}",
        wd.sim.calls()
    );
    stops_promptly(&mut d);
}
