//! Black-box tests of a watchdog dir that refuses writes for a while (a full
//! disk, an unwritable file), SPEC §5.6: a record is whole or absent and
//! counted per file where `status` and the metrics show it, the next record
//! is whole whatever an older run left, and the state write says so once per
//! episode and once more when it works again.

use std::fs;
use std::time::Duration;

use agent_deck_watchdog::harness::RestartRecord;
use serde_json::Value;

use crate::support::fixtures::{conductor, CONDUCTOR};
use crate::support::watchdog::{assert_ok, Wd};

#[test]
fn a_lost_record_is_counted_per_file_and_the_next_lands_whole_after_a_fragment() {
    let wd = Wd::new();
    let log = wd.watchdog_dir().join("restart.log");
    fs::create_dir_all(&log).unwrap();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "error")]);
    let d = wd.spawn(&[]);
    let lost_restarts = || wd.daemon_status()["tally"]["records_lost"]["restart.log"].as_u64();
    d.wait_for(Duration::from_secs(10), "no lost record counted", || {
        lost_restarts() >= Some(1)
            && wd.sim.session_state(CONDUCTOR).unwrap()["status"] == "running"
    });
    // Settled: the revived session writes no more restart records.
    wd.wait_for_more_ticks(3);
    assert_eq!(wd.restart_calls(), 1);
    let stderr = d.stderr();
    assert!(
        stderr.contains("could not append to") && stderr.contains("restart.log"),
        "{stderr}"
    );
    let lost = &wd.daemon_status()["tally"]["records_lost"];
    assert!(lost["liveness.log"].is_null(), "{lost}");
    let files = &wd.status_json()["records"]["files"];
    assert_eq!(files[0]["name"], "restart.log");
    assert_eq!(files[0]["records_lost"], lost["restart.log"]);
    let prom = fs::read_to_string(wd.watchdog_dir().join("metrics.prom")).unwrap();
    let sample = format!(
        "agent_deck_watchdog_records_lost_total{{file=\"restart.log\"}} {}\n",
        lost["restart.log"]
    );
    assert!(prom.contains(&sample), "{prom}");

    drop(d);

    // Writable again, ending in what an older run's full disk left.
    fs::remove_dir(&log).unwrap();
    fs::write(&log, "{\"ts\":1.0,\"id\":\"3f9c").unwrap();
    wd.set_status("error");
    assert_ok(&wd.run(&["--once"]));
    assert_eq!(wd.restart_calls(), 2);
    let text = fs::read_to_string(&log).unwrap();
    assert!(text.starts_with("{\"ts\":1.0,\"id\":\"3f9c\n{"), "{text}");
    // After the fragment's own line, every line is a whole record.
    let records: Vec<RestartRecord> = (text.lines().skip(1))
        .map(|l| serde_json::from_str(l).expect("a whole record"))
        .collect();
    assert!(records.iter().any(|r| r.action == "restarted"), "{text}");
    let history = wd.run(&["history", "--json"]);
    let restarts = String::from_utf8_lossy(&history.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["log"] == "restart" && v["id"] == CONDUCTOR)
        .count();
    assert_eq!(restarts, records.len(), "history reads every record");
}

#[test]
fn a_state_write_that_keeps_failing_is_said_once_and_its_recovery_too() {
    let wd = Wd::new();
    let state = wd.watchdog_dir().join("state.json");
    fs::create_dir_all(&state).unwrap();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let d = wd.spawn(&[]);
    let said = |what: &str| {
        let err = d.stderr();
        err.lines()
            .filter(|l| l.contains(what) && l.contains("state.json"))
            .count()
    };
    d.wait_for(Duration::from_secs(10), "no failed state write", || {
        said("cannot write") == 1
    });
    wd.wait_for_more_ticks(5);
    assert_eq!(said("cannot write"), 1, "{}", d.stderr());
    fs::remove_dir(&state).unwrap();
    d.wait_for(
        Duration::from_secs(10),
        "no word of the state written again",
        || said("written again after") == 1,
    );
    assert!(fs::metadata(&state).unwrap().is_file());
}
