//! Black-box tests of bounded disk use over time (SPEC §3 `RECORD_MAX_BYTES`
//! and `TASK_RETENTION_DAYS`): record files rotate to `<name>.1` between
//! whole lines, and old finished tasks leave the registry with their logs.

use std::fs;
use std::os::unix::fs::MetadataExt;

use agent_deck_watchdog::harness::RestartRecord;
use serde_json::{json, Value};

use crate::support::files::read_lines;
use crate::support::fixtures::{conductor, CONDUCTOR};
use crate::support::watchdog::{assert_ok, Wd};

const LIMIT: usize = 65_536;

/// Valid `restart.log` lines of another session, 40 bytes short of `LIMIT`
/// together: the next record cannot fit.
fn nearly_full_restart_log() -> Vec<u8> {
    let line = |n: u32, reason: &str| {
        let mut l = serde_json::to_vec(&json!({
            "ts": 1_755_000_000.0 + f64::from(n), "id": "0a0b0c0d-1755000000",
            "title": "conductor-old", "profile": "default", "action": "skipped",
            "reason": reason, "dry_run": false}))
        .unwrap();
        l.push(b'\n');
        l
    };
    let target = LIMIT - 40;
    let mut text = Vec::new();
    let mut n = 0;
    while target - text.len() > 1000 {
        text.extend(line(n, "cascade_pause"));
        n += 1;
    }
    // The last line, padded to land exactly on the target.
    let overhead = line(n, "").len();
    text.extend(line(n, &"p".repeat(target - text.len() - overhead)));
    assert_eq!(text.len(), target);
    text
}

#[test]
fn a_record_file_rotates_at_the_limit_with_no_torn_line() {
    let wd = Wd::new().env("RECORD_MAX_BYTES", &LIMIT.to_string());
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "error")]);
    let dir = wd.watchdog_dir();
    fs::create_dir_all(&dir).unwrap();
    let log = dir.join("restart.log");
    let rotated = dir.join("restart.log.1");
    let before = nearly_full_restart_log();
    fs::write(&log, &before).unwrap();
    fs::write(&rotated, b"{\"from\":\"the rotation before\"}\n").unwrap();

    // Dry-run records its decisions too, so it rotates like a real run.
    let out = wd.run(&["--once", "--dry-run"]);
    assert_ok(&out);

    // Everything written before is in `.1`, byte for byte; the `.1` from
    // before is gone.
    assert_eq!(fs::read(&rotated).unwrap(), before);
    // The fresh file holds whole lines only, the new record among them.
    let fresh = fs::read(&log).unwrap();
    assert!(fresh.ends_with(b"\n") && fresh.len() < LIMIT, "{fresh:?}");
    // Every line parses back as a typed record: none is torn.
    let records: Vec<RestartRecord> = read_lines(&log);
    assert!(
        records
            .iter()
            .any(|r| r.id == CONDUCTOR && r.action == "restart" && r.dry_run),
        "{records:?}"
    );
    assert_eq!(fs::metadata(&log).unwrap().mode() & 0o777, 0o600);

    // `status` sees both files.
    let v = wd.status_json();
    let file = v["records"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "restart.log")
        .unwrap()
        .clone();
    assert_eq!(file["rotated_bytes"], before.len());
    assert_eq!(file["bytes"], fresh.len());
    assert_eq!(v["records"]["max_bytes"], LIMIT);
}

/// A registry task as `task add` and the follow-up write it.
fn task(wd: &Wd, id: &str, parent: Option<&str>, status: &str, changed: f64) -> Value {
    let work = wd.home.path().join("work");
    json!({
        "id": id,
        "task_file": work.join("task.md"),
        "task_sha256": "0".repeat(64),
        "done_file": work.join(format!("{id}.done")),
        "partial_file": work.join("task.partial"),
        "followup_s": 1200.0,
        "dispatched_at": changed - 60.0,
        // Not due during the test: nothing is re-dispatched.
        "next_check_at": crate::support::now() + 3600.0,
        "retry_count": u32::from(parent.is_some()),
        "max_retry": 2,
        "parent_task": parent,
        "status": status,
        "match": id,
        "command": ["/bin/true", "{task_id}"],
        "history": [{"ts": changed, "event": status}],
    })
}

#[test]
fn an_old_finished_task_and_its_log_are_pruned_while_an_open_one_is_kept() {
    let wd = Wd::new();
    let dir = wd.watchdog_dir();
    let logs = dir.join("tasks");
    fs::create_dir_all(&logs).unwrap();
    let day = 86_400.0;
    let forty_days_ago = crate::support::now() - 40.0 * day;
    let tasks = vec![
        // A finished lineage, 40 days old: it goes, with the re-dispatch's log.
        task(&wd, "task-100", None, "retried", forty_days_ago - 600.0),
        task(&wd, "task-100.2", Some("task-100"), "done", forty_days_ago),
        // Still followed up: it stays.
        task(&wd, "task-200", None, "pending", forty_days_ago),
        // An old retried root whose re-dispatch is still open: both stay.
        task(&wd, "task-300", None, "retried", forty_days_ago),
        task(
            &wd,
            "task-300.2",
            Some("task-300"),
            "pending",
            forty_days_ago,
        ),
        // Finished, but within the retention.
        task(
            &wd,
            "task-400",
            None,
            "cancelled",
            crate::support::now() - 29.0 * day,
        ),
    ];
    let registry = dir.join("task-timers.json");
    let redispatches = json!({"day": 20_000, "count": 4});
    fs::write(
        &registry,
        serde_json::to_vec_pretty(&json!({"tasks": tasks, "redispatches": redispatches})).unwrap(),
    )
    .unwrap();
    for name in ["task-100.2.log", "task-300.2.log"] {
        fs::write(logs.join(name), b"agent output\n").unwrap();
    }
    // The dispatcher's own output is not the watchdog's to remove.
    fs::write(logs.join("task-100.log"), b"dispatcher output\n").unwrap();
    let ids = || -> Vec<String> {
        let v: Value = serde_json::from_slice(&fs::read(&registry).unwrap()).unwrap();
        v["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned())
            .collect()
    };

    // Dry-run writes nothing to the registry, so it prunes nothing.
    assert_ok(&wd.run(&["task", "check", "--dry-run"]));
    assert_eq!(ids().len(), 6);
    assert!(logs.join("task-100.2.log").exists());

    let out = wd.run(&["task", "check"]);
    assert_ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("pruned 2 finished task(s)"), "{stdout}");
    assert_eq!(ids(), ["task-200", "task-300", "task-300.2", "task-400"]);
    assert!(!logs.join("task-100.2.log").exists());
    assert!(logs.join("task-300.2.log").exists());
    assert!(logs.join("task-100.log").exists());
    let v: Value = serde_json::from_slice(&fs::read(&registry).unwrap()).unwrap();
    assert_eq!(v["redispatches"], redispatches);

    // `task show` of what stays still finds the whole lineage.
    let out = wd.run(&["task", "show", "task-300.2"]);
    assert_ok(&out);
    let out = wd.run(&["task", "list", "--json"]);
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("task-300"));
}
