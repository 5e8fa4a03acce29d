//! Black-box tests of operations (SPEC §7, §9): systemd notify, journald
//! lines, `status`, `metrics.prom`, the demo, and what `doctor` says of a
//! full context (SPEC §15).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use agent_deck_sim::scenario;
use serde_json::Value;

use crate::support::fixtures::{conductor, crash_looping, CONDUCTOR};
use crate::support::watchdog::{assert_ok, Wd};
use crate::support::{wait_until, BIN};

#[test]
fn systemd_gets_ready_watchdog_pings_and_stopping() {
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let (wd, sock) = wd.notify_socket(Duration::from_millis(200));
    let wd = wd.env("WATCHDOG_USEC", "400000");
    let mut d = wd.spawn(&[]);
    let mut got: Vec<String> = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline && got.iter().filter(|m| m.contains("WATCHDOG=1")).count() < 3 {
        if let Ok(n) = sock.recv(&mut buf) {
            got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    }
    assert!(got.first().is_some_and(|m| m == "READY=1\n"), "{got:?}");
    assert!(
        got.iter().filter(|m| m.contains("WATCHDOG=1")).count() >= 3,
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|m| m.starts_with("STATUS=") && m.contains("1 critical sessions")),
        "{got:?}"
    );
    d.signal_and_wait(libc::SIGTERM, Duration::from_secs(5));
    let mut stopping = false;
    while let Ok(n) = sock.recv(&mut buf) {
        stopping |= String::from_utf8_lossy(&buf[..n]).contains("STOPPING=1");
    }
    assert!(stopping, "no STOPPING=1 after SIGTERM");
}

#[test]
fn journal_lines_carry_priority_prefixes() {
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "error")]);
    let log = wd.home.path().join("journal.log");
    let file = fs::File::create(&log).unwrap();
    let meta = file.metadata().unwrap();
    let wd = wd.env("JOURNAL_STREAM", &format!("{}:{}", meta.dev(), meta.ino()));
    let status = wd
        .command(&["--once", "--verbose"])
        .stdout(Stdio::null())
        .stderr(file)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let text = fs::read_to_string(&log).unwrap();
    assert!(text.lines().count() > 3, "{text}");
    for line in text.lines() {
        let (prio, rest) = line
            .strip_prefix('<')
            .and_then(|r| r.split_once('>'))
            .unwrap_or(("", line));
        assert!(
            matches!(prio, "3" | "4" | "6" | "7"),
            "line without a priority prefix: {line:?}"
        );
        let stamped = rest
            .get(..4)
            .is_some_and(|y| y.bytes().all(|b| b.is_ascii_digit()))
            && rest.get(4..5) == Some("-")
            && rest.get(10..11) == Some("T");
        assert!(!stamped, "journal lines carry no timestamp: {line:?}");
    }
    assert!(text.contains("<6>"), "{text}");
}

#[test]
fn status_json_reports_a_spent_budget() {
    let wd = Wd::new().env("RATE_LIMIT_MAX", "2");
    let c = crash_looping(CONDUCTOR, "conductor-ops");
    wd.sessions(vec![c]);
    let d = wd.spawn(&[]);
    wd.wait_for_escalations(&d, "rate-limit", 1);
    let v = wd.status_json();
    assert_eq!(v["daemon"]["running"], true);
    assert_eq!(v["daemon"]["pid"], d.pid());
    let s = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == CONDUCTOR)
        .unwrap()
        .clone();
    assert_eq!(s["restarts_in_window"], 2);
    assert_eq!(s["budget_left"], 0);
    assert_eq!(s["last_status"], "error");
    assert_eq!(s["title"], "conductor-ops");
    assert_eq!(v["breaker"]["open"], false);
    let table = wd.run(&["status"]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("daemon: running") && text.contains(CONDUCTOR),
        "{text}"
    );
}

#[test]
fn status_finds_the_daemon_by_the_pid_in_its_lock_file() {
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let mut d = wd.spawn(&["--dry-run"]);
    wd.wait_for_first_tick();
    let lock: Value =
        serde_json::from_str(&fs::read_to_string(wd.watchdog_dir().join("watchdog.lock")).unwrap())
            .unwrap();
    assert_eq!(lock["pid"], d.pid());
    assert_eq!(
        (lock["dry_run"].clone(), lock["once"].clone()),
        (Value::Bool(true), Value::Bool(false))
    );
    assert!(lock["started_at"].as_f64().unwrap() > 1.0e9, "{lock}");
    let running = |wd: &Wd| {
        let v: Value = serde_json::from_slice(&wd.run(&["status", "--json"]).stdout).unwrap();
        v["daemon"].clone()
    };
    assert_eq!(running(&wd)["pid"], d.pid());
    // Killed outright: its lock file stays behind, naming a dead pid.
    d.signal_and_wait(libc::SIGKILL, Duration::from_secs(10));
    assert!(wd.watchdog_dir().join("watchdog.lock").exists());
    assert_eq!(
        running(&wd),
        serde_json::json!({"pid": null, "running": false})
    );
}

/// A small parser of the Prometheus text exposition format: every line is a
/// `# HELP`/`# TYPE` comment or `name{label="value",…} number`; each sample's
/// family has a TYPE. Returns `name{labels}` → value.
fn parse_prometheus(text: &str) -> BTreeMap<String, f64> {
    let mut types = BTreeMap::new();
    let mut samples = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut words = rest.splitn(3, ' ');
            let (kind, name, tail) = (
                words.next().unwrap(),
                words.next().unwrap(),
                words.next().unwrap_or(""),
            );
            assert!(kind == "HELP" || kind == "TYPE", "{line}");
            if kind == "TYPE" {
                assert!(matches!(tail, "counter" | "gauge"), "{line}");
                types.insert(name.to_owned(), tail.to_owned());
            }
            continue;
        }
        let (key, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad sample {line:?}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value in {line:?}"));
        let name = key.split('{').next().unwrap();
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{line}"
        );
        if let Some(labels) = key.strip_prefix(name) {
            if !labels.is_empty() {
                let inner = labels
                    .strip_prefix('{')
                    .and_then(|l| l.strip_suffix('}'))
                    .unwrap_or_else(|| panic!("{line}"));
                for pair in inner.split(',') {
                    let (k, v) = pair.split_once('=').unwrap_or_else(|| panic!("{line}"));
                    assert!(
                        k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                            && v.starts_with('"')
                            && v.ends_with('"'),
                        "{line}"
                    );
                }
            }
        }
        assert!(types.contains_key(name), "sample before its TYPE: {line}");
        samples.insert(key.to_owned(), value);
    }
    samples
}

#[test]
fn metrics_parse_and_restart_counters_match_restart_log() {
    let wd = Wd::new().env("RATE_LIMIT_MAX", "3");
    let failing = crash_looping("b1b2c3d4-1755890000", "conductor-b");
    wd.sessions(vec![
        conductor(CONDUCTOR, "conductor-ops", "error"),
        failing,
    ]);
    let d = wd.spawn(&[]);
    wd.wait_for_escalations(&d, "rate-limit", 1);
    let metrics = wd.watchdog_dir().join("metrics.prom");
    // Wait for a tick after the last record so the file has caught up.
    let settled = wait_until(Duration::from_secs(10), || {
        let m = parse_prometheus(&fs::read_to_string(&metrics).unwrap_or_default());
        let mut by_action: BTreeMap<String, f64> = BTreeMap::new();
        for r in wd.restarts() {
            *by_action.entry(r.action.to_string()).or_default() += 1.0;
        }
        by_action.iter().all(|(a, n)| {
            m.get(&format!(
                "agent_deck_watchdog_restarts_total{{result=\"{a}\"}}"
            )) == Some(n)
        })
    });
    assert!(
        settled,
        "metrics never matched restart.log:\n{}",
        fs::read_to_string(&metrics).unwrap_or_default()
    );
    let m = parse_prometheus(&fs::read_to_string(&metrics).unwrap());
    assert_eq!(
        m["agent_deck_watchdog_restarts_total{result=\"restarted\"}"],
        1.0
    );
    assert_eq!(
        m["agent_deck_watchdog_restarts_total{result=\"restart-failed\"}"],
        3.0
    );
    assert_eq!(
        m["agent_deck_watchdog_escalations_total{severity=\"rate-limit\"}"],
        1.0
    );
    assert!(m["agent_deck_watchdog_cli_calls_total{command=\"list-all\"}"] >= 1.0);
    assert_eq!(m["agent_deck_watchdog_sessions{kind=\"critical\"}"], 2.0);
    assert!(m.contains_key("agent_deck_watchdog_queue_drops_total"));
    assert!(m.contains_key("agent_deck_watchdog_tick_duration_seconds"));
}

/// The seconds of the demo's first timeline line holding `what`.
fn demo_at(text: &str, what: &str) -> f64 {
    let line = text.lines().find(|l| l.contains(what));
    let secs = line.and_then(|l| {
        l.trim()
            .strip_prefix('+')?
            .split_once("s ")?
            .0
            .trim()
            .parse()
            .ok()
    });
    secs.unwrap_or_else(|| panic!("no timeline line with {what:?}: {text}"))
}

#[test]
fn demo_runs_on_a_fresh_machine_and_tells_the_story() {
    // A tmux that says when it is run: the demo never lists the operator's server.
    let bin = tempfile::tempdir().unwrap();
    let asked = bin.path().join("tmux-was-run");
    let tmux = bin.path().join("tmux");
    std::fs::write(
        &tmux,
        format!("#!/bin/sh\necho \"$@\" >> '{}'\n", asked.display()),
    )
    .unwrap();
    std::fs::set_permissions(&tmux, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = std::process::Command::new(BIN)
        .arg("demo")
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.path().display()))
        .env("TMPDIR", std::env::temp_dir())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("conductor-ops")
            && text.contains("confirmed_dead")
            && text.contains("back up"),
        "{text}"
    );
    assert!(
        text.contains("conductor-busy") && text.contains("pane_active"),
        "{text}"
    );
    assert!(text.contains("ESCALATION [auth-hold]"), "{text}");
    assert!(text.contains("restarted 0 times"), "{text}");
    // Resumed once its named reset and the 1 s grace passed, within a tick or
    // two (a loaded machine).
    assert!(
        text.contains("conductor-limit: stalled: usage-limit") && text.contains("(from banner)"),
        "{text}"
    );
    let reset = demo_at(&text, "conductor-limit's usage limit resets");
    let resumed = demo_at(&text, "conductor-limit: resume message sent");
    assert!(
        (0.9..=6.0).contains(&(resumed - reset)),
        "resumed at +{resumed}, the reset at +{reset}: {text}"
    );
    assert!(demo_at(&text, "conductor-limit: verified") >= resumed);
    // Cleared, then re-briefed, on a new conversation.
    assert!(
        text.contains("conductor-full: stalled: context-exhausted")
            && text.contains("→ /clear then re-brief (clear_on_compact)"),
        "{text}"
    );
    let cleared = demo_at(&text, "conductor-full: /clear sent");
    let rebriefed = demo_at(&text, "conductor-full: re-brief sent");
    let verified = demo_at(
        &text,
        "conductor-full: verified: a new turn, in a new conversation",
    );
    assert!(cleared <= rebriefed && rebriefed <= verified, "{text}");
    let dir = text
        .lines()
        .find_map(|l| l.strip_prefix("records: "))
        .expect("names its records dir");
    assert!(std::path::Path::new(dir).join("restart.log").exists());
    let files = text
        .lines()
        .find_map(|l| l.strip_prefix("(the demo's files, simulated fleet included, are in "))
        .and_then(|l| l.strip_suffix(')'))
        .expect("names its files");
    let calls = fs::read_to_string(std::path::Path::new(files).join("sim-calls.log")).unwrap();
    for id in [scenario::LIMITED, scenario::FULL] {
        let restarts = calls
            .lines()
            .filter(|l| l.contains(id) && l.contains("\"restart\""));
        assert_eq!(restarts.count(), 0, "a stall is never restarted: {calls}");
    }
    let clears = calls.lines().filter(|l| l.contains("\"/clear\""));
    assert_eq!(clears.count(), 1, "one /clear: {calls}");
    let ran = std::fs::read_to_string(&asked).unwrap_or_default();
    assert!(ran.is_empty(), "the demo ran tmux: {ran}");
}

#[test]
fn the_pane_sample_passes_primary_on_1_16_26_and_never_on_1_14_0() {
    for (version, primary) in [(Some("1.16.26"), true), (None, false)] {
        let wd = Wd::new();
        wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "error")]);
        wd.release(version);
        let out = wd.run(&["--once"]);
        assert_ok(&out);
        let calls = wd.sim.calls();
        assert_eq!(calls[0], ["version"], "{calls:?}");
        assert_eq!(wd.sim.calls_with(&["version"]).len(), 1, "{calls:?}");
        let samples = wd.sim.calls_with(&["output", CONDUCTOR, "--pane"]);
        assert!(
            !samples.is_empty(),
            "{version:?}: no pane sample: {calls:?}"
        );
        for argv in &samples {
            let has = argv.iter().any(|a| a == "--primary");
            assert_eq!(has, primary, "{version:?}: {argv:?}");
        }
        // No sample was refused as an unknown flag: the restart went ahead.
        assert_eq!(wd.restart_calls(), 1, "{version:?}: {calls:?}");
    }
}

#[test]
fn the_version_read_at_start_is_in_daemon_status_and_status() {
    for (version, shown) in [(Some("1.16.26"), "1.16.26"), (None, "1.14.0")] {
        let wd = Wd::new();
        wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
        wd.release(version);
        assert_ok(&wd.run(&["--once"]));
        assert_eq!(wd.daemon_status()["agent_deck_version"], shown);
        let prom = fs::read_to_string(wd.watchdog_dir().join("metrics.prom")).unwrap();
        let info = format!("agent_deck_watchdog_agent_deck_info{{version=\"{shown}\"}} 1\n");
        assert!(prom.contains(&info), "{prom}");
        assert_eq!(wd.status_json()["agent_deck_version"], shown);
        let text = wd.run(&["status"]);
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(
            text.contains(&format!("agent-deck: {shown} (as the daemon read it last)")),
            "{text}"
        );
    }
    // Unreadable: null in the record, `unknown` in the table.
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    wd.release(Some("dev"));
    assert_ok(&wd.run(&["--once"]));
    assert!(wd.daemon_status()["agent_deck_version"].is_null());
    let text = wd.run(&["status"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("agent-deck: unknown"));
}

/// The re-read is triggered the way the daemon would meet an update: a call
/// that should not fail fails (a `-p P list` exits 1 once) just after the
/// binary changed. No setting shortens the hourly re-read.
#[test]
fn a_version_change_is_picked_up_after_a_call_that_should_not_fail() {
    let wd = Wd::new().env("SAFETY_POLL_INTERVAL_S", "1");
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "error")]);
    wd.set_status("running");
    let d = wd.spawn(&[]);
    wd.wait_for_first_tick();
    d.wait_for(
        Duration::from_secs(10),
        "the version was never read",
        || wd.daemon_status()["agent_deck_version"] == "1.14.0",
    );
    wd.sim.update_state(|s| {
        s["version"] = serde_json::json!("1.16.26");
        s["faults"] = serde_json::json!({"list": {"mode": "exit1", "count": 1}});
    });
    d.wait_for(
        Duration::from_secs(15),
        "the new version was never read",
        || wd.daemon_status()["agent_deck_version"] == "1.16.26",
    );
    assert_eq!(wd.sim.calls_with(&["version"]).len(), 2);
    assert!(
        d.stderr()
            .contains("agent-deck version changed from 1.14.0 to 1.16.26"),
        "stderr:\n{}",
        d.stderr()
    );
    // Gated calls follow it: the next pane sample carries `--primary`.
    wd.set_status("error");
    assert!(
        wait_until(Duration::from_secs(15), || !wd
            .sim
            .calls_with(&["output", CONDUCTOR, "--pane", "--primary"])
            .is_empty()),
        "no --primary sample; calls: {:?}",
        wd.sim.calls()
    );
}

/// An update in place renames the binary away for a moment: the re-read a
/// failed call asks for gets no answer then. The release read before is kept,
/// marked unconfirmed, and read again after the next call that works.
#[test]
fn the_version_survives_the_binary_missing_for_a_moment() {
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    wd.release(Some("1.16.26"));
    let d = wd.spawn(&[]);
    let limit = Duration::from_secs(10);
    let status = || wd.daemon_status();
    d.wait_for(limit, "the version was never read", || {
        status()["agent_deck_version"] == "1.16.26"
    });
    let away = wd.sim.bin.with_extension("away");
    fs::rename(&wd.sim.bin, &away).unwrap();
    d.wait_for(limit, "the version was never found unconfirmed", || {
        status()["agent_deck_version_unconfirmed"] == true
    });
    assert_eq!(status()["agent_deck_version"], "1.16.26");
    assert!(wd.status_json()["agent_deck_version_unconfirmed"] == true);
    fs::rename(&away, &wd.sim.bin).unwrap();
    d.wait_for(limit, "the version was never confirmed", || {
        status()["agent_deck_version_unconfirmed"] == false
    });
    assert_eq!(status()["agent_deck_version"], "1.16.26");
    assert_eq!(wd.sim.calls_with(&["version"]).len(), 2);
    let err = d.stderr();
    assert!(
        err.contains("keep following 1.16.26 (unconfirmed)"),
        "{err}"
    );
    assert!(err.contains("agent-deck 1.16.26 confirmed"), "{err}");
    assert!(!err.contains("not known"), "{err}");
}

#[test]
fn the_store_warning_on_stderr_is_no_failure_and_logged_once() {
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    wd.sim.update_state(|s| {
        s["version"] = serde_json::json!("1.16.26");
        s["both_store_roots"] = serde_json::json!(true);
    });
    let out = wd.run(&["--once"]);
    assert_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("succeeded but printed on stderr: \"WARNING: profile stores exist under both")
            .count(),
        1,
        "{err}"
    );
    let st = wd.daemon_status();
    assert_eq!(st["cli"]["failures"], serde_json::json!({}), "{st}");
    assert!(st["cli"]["calls"]["list"].as_u64() >= Some(1), "{st}");
}

#[test]
fn an_empty_fleet_of_1_16_26_is_no_failure() {
    // `list --all --json` with profiles and no sessions is `[]` from 1.16.11.
    let wd = Wd::new();
    wd.release(Some("1.16.26"));
    let out = wd.run(&["--once"]);
    assert_ok(&out);
    assert_eq!(wd.sim.run(&["list", "--all", "--json"]).stdout, b"[]\n");
    let st = wd.daemon_status();
    assert_eq!(st["cli"]["failures"], serde_json::json!({}), "{st}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("unreadable"), "{err}");
}

#[test]
fn doctor_says_which_conductors_agent_deck_clears_and_whether_the_proactive_clear_is_on() {
    let wd = Wd::new();
    let mut codex = conductor("c0dec000-1755891234", "conductor-cx", "running");
    codex["tool"] = "codex".into();
    wd.sessions(vec![
        conductor(CONDUCTOR, "conductor-ops", "running"),
        conductor("2b0c4d6e-1755891234", "conductor-two", "running"),
        codex,
    ]);
    // agent-deck's legacy conductor dir, as `conductor setup --no-clear-on-compact` leaves it.
    let meta = wd.root.join("conductor/two/meta.json");
    fs::create_dir_all(meta.parent().unwrap()).unwrap();
    fs::write(
        &meta,
        r#"{"name":"two","profile":"default","clear_on_compact":false}"#,
    )
    .unwrap();
    let doctor = |wd: &Wd| {
        let out = wd.run(&["doctor"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = doctor(&wd);
    let line = |name: &str| {
        let line = text.lines().find(|l| l.starts_with(&format!("✓ {name}: ")));
        line.unwrap_or_else(|| panic!("no ✓ {name}: {text}"))
            .to_owned()
    };
    let policy = line("clear_on_compact");
    let ops = "conductor-ops yes (no meta.json: the default)";
    let two = format!("conductor-two no ({})", meta.display());
    assert!(policy.contains(ops) && policy.contains(&two), "{policy}");
    assert!(!policy.contains("conductor-cx"), "{policy}");
    assert_eq!(
        line("proactive clear"),
        "✓ proactive clear: off (CONTEXT_CLEAR_AT_PCT unset)"
    );
    let wd = wd
        .env("CONTEXT_CLEAR_AT_PCT", "80")
        .env("CONTEXT_WINDOW_TOKENS", "200000");
    let text = doctor(&wd);
    assert!(
        text.contains("✓ proactive clear: at 80% of 200000 tokens (CONTEXT_WINDOW_TOKENS)"),
        "{text}"
    );
}

/// A `tmux` first on `PATH` that logs each call to `tmux.log` and prints
/// the file `listing` when it exists (else says no server runs, as tmux
/// does); the paths of both files.
fn fake_tmux(wd: Wd) -> (Wd, std::path::PathBuf, std::path::PathBuf) {
    let bin = wd.home.path().join("bin");
    let (listing, log) = (
        wd.home.path().join("listing"),
        wd.home.path().join("tmux.log"),
    );
    crate::support::files::write_script(
        &bin.join("tmux"),
        &format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nif [ -f '{}' ]; then cat '{}'; exit 0; fi\necho 'no server running on /tmp/tmux-0/default' >&2\nexit 1\n",
            log.display(),
            listing.display(),
            listing.display()
        ),
    );
    let path = format!("{}:{}", bin.display(), wd.env_value("PATH").unwrap());
    (wd.env("PATH", &path), listing, log)
}

/// A running conductor in the tmux session `agentdeck_conductor-ops_ab12cd34`.
fn conductor_in_tmux() -> Value {
    let mut c = conductor(CONDUCTOR, "conductor-ops", "running");
    c["tmux_session"] = "agentdeck_conductor-ops_ab12cd34".into();
    c
}

#[test]
fn with_pane_watch_off_the_cli_calls_are_todays_and_tmux_is_never_run() {
    let (wd, _listing, log) = fake_tmux(Wd::new().env("PANE_WATCH", "off"));
    wd.sessions(vec![conductor_in_tmux()]);
    let d = wd.spawn(&[]);
    wd.wait_for_first_tick();
    wd.wait_for_more_ticks(3);
    drop(d);
    let calls = wd.sim.calls();
    assert_eq!(calls[0], ["version"], "{calls:?}");
    let ticks = wd.sim.calls_with(&["list", "--all"]).len();
    let profile_lists = calls.iter().filter(|c| c[0] == "-p").count();
    // A healthy tick is `list --all` and one `-p P list`; the daemon may
    // have been stopped between the two.
    assert!(
        calls[1..]
            .iter()
            .all(|c| c[..2] == ["list", "--all"] || c[0] == "-p"),
        "{calls:?}"
    );
    assert!(
        profile_lists == ticks || profile_lists + 1 == ticks,
        "{calls:?}"
    );
    assert!(!log.exists(), "PANE_WATCH=off ran tmux");
    assert_eq!(
        wd.daemon_status()["pane_watch"]["why_not"],
        "PANE_WATCH=off"
    );
    let status = wd.run(&["status"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("pane watch: not armed (PANE_WATCH=off)"),
        "{text}"
    );
}

#[test]
fn with_no_tmux_on_path_the_daemon_says_once_why_and_polls_at_the_safety_interval() {
    let wd = Wd::new()
        .env("PATH", "/nonexistent-bin")
        .env("ARMED_POLL_INTERVAL_S", "3600")
        .env("PANE_LIST_INTERVAL_S", "0.05");
    wd.sessions(vec![conductor_in_tmux()]);
    let d = wd.spawn(&[]);
    wd.wait_for_first_tick();
    // At 0.2 s, not the armed hour.
    wd.wait_for_more_ticks(5);
    let err = d.stderr();
    let said = err
        .matches("pane watch not armed: tmux cannot be run")
        .count();
    assert_eq!(said, 1, "{err}");
    let st = wd.daemon_status();
    assert_eq!(st["pane_watch"]["armed"], false, "{st}");
    let why = st["pane_watch"]["why_not"].as_str().unwrap_or_default();
    assert!(why.contains("tmux cannot be run"), "{st}");
    assert_eq!(wd.restart_calls(), 0);
}

#[test]
fn a_pane_process_that_dies_is_seen_by_the_pane_watch_and_its_session_restarted() {
    pane_death_is_seen(&[]);
}

#[test]
fn in_dry_run_the_pane_watch_runs_and_its_restart_is_only_recorded() {
    pane_death_is_seen(&["--dry-run"]);
}

/// A pane process dies (a child of this test, which plays the tmux
/// server): the watch sees it, and the session is restarted (or, in
/// `--dry-run`, the restart recorded and not made).
fn pane_death_is_seen(args: &[&str]) {
    let dry_run = args.contains(&"--dry-run");
    let (wd, listing, log) = fake_tmux(
        Wd::new()
            .env("ARMED_POLL_INTERVAL_S", "3600")
            .env("PANE_LIST_INTERVAL_S", "3600"),
    );
    // The pane process: a child of this test, which plays the tmux server.
    let mut pane = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let row = format!(
        "0:0:{}:0:{}:agentdeck_conductor-ops_ab12cd34\n",
        pane.id(),
        std::process::id()
    );
    fs::write(&listing, row).unwrap();
    wd.sessions(vec![conductor_in_tmux()]);
    let d = wd.spawn(args);
    let armed = "the pane watch covers every critical session: polling agent-deck every 3600.0s";
    let ok = wait_until(Duration::from_secs(10), || d.stderr().contains(armed));
    if !ok && d.stderr().contains("pane watch off") {
        // A sandbox without pidfd: it said why, and polls as without it.
        let _ = pane.kill();
        let _ = pane.wait();
        return;
    }
    assert!(ok, "never armed: {}", d.stderr());
    // Armed: the CLI poll waits for its hour.
    let ticks = wd.sim.calls_with(&["list", "--all"]).len();
    assert!(!wait_until(Duration::from_millis(800), || {
        wd.sim.calls_with(&["list", "--all"]).len() > ticks
    }));
    // The agent dies as a crash would: agent-deck reads error, tmux shows
    // the session gone.
    wd.set_status("error");
    fs::remove_file(&listing).unwrap();
    pane.kill().unwrap();
    let _ = pane.wait();
    let decided = || {
        let made = wd.restart_calls() == 1;
        let recorded = wd.restarts().iter().any(|r| r.dry_run);
        if dry_run {
            recorded
        } else {
            made
        }
    };
    assert!(
        wait_until(Duration::from_secs(10), decided),
        "not restarted: {}",
        d.stderr()
    );
    if dry_run {
        assert_eq!(wd.restart_calls(), 0, "--dry-run restarted");
    }
    let err = d.stderr();
    assert!(
        err.contains(&format!("pane watch: {CONDUCTOR} (process_exited) dead")),
        "{err}"
    );
    let calls = fs::read_to_string(&log).unwrap();
    assert!(
        calls
            .lines()
            .all(|l| l == format!("-u list-panes -a -F {}", PANE_FORMAT)),
        "only list-panes, on the default socket: {calls}"
    );
}

/// The fields the pane watch asks tmux for.
const PANE_FORMAT: &str =
    "#{window_index}:#{pane_index}:#{pane_pid}:#{pane_dead}:#{pid}:#{session_name}";
