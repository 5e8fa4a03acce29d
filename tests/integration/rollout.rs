//! The rollout commands against the simulator: `doctor` on a healthy and a
//! broken install, and `drill` end to end (its kill goes through a `tmux` on
//! `PATH` that is the simulator's, which crashes the session whose tmux name
//! it is given, as a real kill looks to agent-deck).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::support::files::{all_files_text, write_hook};
use crate::support::fixtures::{conductor, session, CONDUCTOR};
use crate::support::output_within;
use crate::support::sim::write_tmux_script;
use crate::support::telegram::TelegramStub;
use crate::support::watchdog::{assert_ok, Wd};

const NAMES: [&str; 14] = [
    "agent-deck",
    "settings",
    "critical sessions",
    "clear_on_compact",
    "proactive clear",
    "hooks dir",
    "usage --json",
    "agent-deck's stored status",
    "kernel notifications",
    "service",
    "watchdog daemon",
    "escalate.sh",
    "Telegram",
    "watchdog dir",
];

fn doctor_json(wd: &Wd) -> (Option<i32>, Vec<Value>) {
    let out = wd.run(&["doctor", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    });
    (out.status.code(), v.as_array().unwrap().clone())
}

fn check<'a>(checks: &'a [Value], name: &str) -> &'a Value {
    checks.iter().find(|c| c["check"] == name).unwrap()
}

/// Every directory under `root`.
fn dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// A running conductor with the tmux name agent-deck gives it at creation.
fn live_conductor(id: &str, title: &str) -> Value {
    let mut c = conductor(id, title, "running");
    c["tmux_session"] = format!("agentdeck_{title}_ab12cd34").into();
    c
}

/// The tmux calls but the pane watch's read-only listing (`list-panes`).
fn tmux_writes(wd: &Wd) -> Vec<Vec<String>> {
    let calls = wd.sim.calls_with(&["tmux"]).into_iter();
    calls
        .filter(|c| !c.iter().any(|a| a == "list-panes"))
        .collect()
}

/// A tmux on PATH that is the simulator, and agent-deck's config.toml
/// naming socket `wd-drill`.
fn with_tmux(wd: Wd) -> Wd {
    let bin = wd.home.path().join("bin");
    write_tmux_script(&bin);
    let cfg = wd.home.path().join(".config/agent-deck/config.toml");
    fs::create_dir_all(cfg.parent().unwrap()).unwrap();
    fs::write(&cfg, "[tmux]\nsocket_name = \"wd-drill\"\n").unwrap();
    let path = format!("{}:{}", bin.display(), wd.env_value("PATH").unwrap());
    wd.env("PATH", &path)
}

#[test]
fn doctor_on_a_healthy_install_fails_nothing() {
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    write_hook(&wd.hooks, CONDUCTOR, "running");
    wd.escalate_script("");
    let d = wd.spawn(&[]);
    wd.wait_for_finished_tick();
    let (code, checks) = doctor_json(&wd);
    let names: Vec<&str> = checks
        .iter()
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    assert_eq!(names, NAMES);
    let failed: Vec<&Value> = checks.iter().filter(|c| c["status"] == "fail").collect();
    assert!(failed.is_empty(), "{failed:#?}");
    assert_eq!(code, Some(0));
    for c in &checks {
        assert_eq!(c["fix"].is_null(), c["status"] == "ok", "{c}");
    }
    assert_eq!(check(&checks, "agent-deck")["status"], "ok", "{checks:#?}");
    let critical = check(&checks, "critical sessions")["detail"]
        .as_str()
        .unwrap();
    assert!(
        critical.contains("conductor-ops (title conductor-*; running)"),
        "{critical}"
    );
    let daemon = check(&checks, "watchdog daemon");
    assert_eq!(daemon["status"], "ok");
    assert!(
        daemon["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("pid {}", d.pid())),
        "{daemon}"
    );
    assert_eq!(check(&checks, "escalate.sh")["status"], "ok");
    assert!(check(&checks, "hooks dir")["detail"]
        .as_str()
        .unwrap()
        .contains("newest hook"));
    // The plain report: one line per check, in the same order.
    let out = wd.run(&["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), NAMES.len(), "{text}");
    for (line, name) in lines.iter().zip(NAMES) {
        assert!(
            line[line.char_indices().nth(2).unwrap().0..].starts_with(name),
            "{line}"
        );
        assert_eq!(line.contains(" — fix: "), !line.starts_with('✓'), "{line}");
    }
}

#[test]
fn doctor_on_a_broken_install_names_each_problem_and_exits_1() {
    let wd = Wd::new()
        .env("AGENT_DECK_HOOKS_DIR", "/nonexistent/hooks")
        .env("RATE_LIMIT_MAX", "lots");
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let script = wd.watchdog_dir().join("escalate.sh");
    fs::create_dir_all(wd.watchdog_dir()).unwrap();
    fs::write(&script, "#!/bin/sh\n").unwrap();
    let (code, checks) = doctor_json(&wd);
    assert_eq!(code, Some(1));
    let status = |name| check(&checks, name)["status"].as_str().unwrap().to_owned();
    assert_eq!(status("hooks dir"), "fail");
    assert_eq!(status("settings"), "fail");
    assert!(check(&checks, "settings")["detail"]
        .as_str()
        .unwrap()
        .contains("RATE_LIMIT_MAX=\"lots\""));
    assert_eq!(status("watchdog daemon"), "warn");
    assert_eq!(status("escalate.sh"), "warn");
    assert!(check(&checks, "escalate.sh")["fix"]
        .as_str()
        .unwrap()
        .contains("chmod"));
    // The other checks still ran, with the default for the bad setting.
    assert_eq!(status("agent-deck"), "ok");
    assert!(check(&checks, "critical sessions")["detail"]
        .as_str()
        .unwrap()
        .contains("conductor-ops"));
}

#[test]
fn doctor_writes_nothing_and_flags_a_missing_or_unverified_agent_deck() {
    let wd = Wd::new();
    wd.sessions(vec![session(
        "a0b1c2d3-1755899999",
        "worker-1",
        "",
        "running",
    )]);
    wd.release(Some("1.7.63"));
    let before = (all_files_text(wd.home.path()), dirs(wd.home.path()));
    let (code, checks) = doctor_json(&wd);
    let after = (all_files_text(wd.home.path()), dirs(wd.home.path()));
    assert_eq!(after, before, "doctor wrote a file or made a directory");
    assert!(!wd.watchdog_dir().exists());
    assert_eq!(code, Some(0));
    let deck = check(&checks, "agent-deck");
    assert_eq!(deck["status"], "warn", "{deck}");
    assert!(deck["detail"].as_str().unwrap().contains("1.7.63"));
    assert_eq!(check(&checks, "critical sessions")["status"], "warn");
    let missing = Wd::new().env("AGENT_DECK_BIN", "/nonexistent/agent-deck");
    let (code, checks) = doctor_json(&missing);
    assert_eq!(code, Some(1));
    assert_eq!(check(&checks, "agent-deck")["status"], "fail");
}

#[test]
fn doctor_warns_of_a_claude_session_that_never_wrote_a_hook() {
    let wd = Wd::new();
    // Claude-compatible (the key is there, still empty) and no hook file.
    let mut c = conductor(CONDUCTOR, "conductor-new", "running");
    c["claude_session_id"] = "".into();
    wd.sessions(vec![c]);
    write_hook(&wd.hooks, "a0b1c2d3-1755899999", "running");
    let (_, checks) = doctor_json(&wd);
    let hooks = check(&checks, "hooks dir");
    assert_eq!(hooks["status"], "warn", "{hooks}");
    assert!(
        hooks["detail"]
            .as_str()
            .unwrap()
            .contains("no hook file ever from conductor-new"),
        "{hooks}"
    );
}

#[test]
fn doctor_asks_telegram_only_with_online() {
    let stub = TelegramStub::answering(|_, line| {
        let body = if line.contains("/getMe") {
            r#"{"ok":true,"result":{"id":1,"is_bot":true,"username":"deck_bot"}}"#
        } else {
            r#"{"ok":true,"result":{"id":42}}"#
        };
        ("200 OK", body.into())
    });
    let wd = Wd::new()
        .env("TELEGRAM_ESCALATION_CHAT_ID", "42")
        .env(
            "TELEGRAM_BOT_TOKEN",
            "123456789:AAHkexampleSECRETexampleSECRET12345",
        )
        .env("TELEGRAM_API_BASE", &stub.base);
    let (_, checks) = doctor_json(&wd);
    assert_eq!(check(&checks, "Telegram")["status"], "ok");
    assert!(stub.requests().is_empty(), "{:?}", stub.requests());
    let out = wd.run(&["doctor", "--json", "--online"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let telegram = check(v.as_array().unwrap(), "Telegram").clone();
    assert_eq!(telegram["status"], "ok", "{telegram}");
    assert!(
        telegram["detail"].as_str().unwrap().contains("@deck_bot"),
        "{telegram}"
    );
    let asked: Vec<String> = stub
        .requests()
        .iter()
        .map(|r| r.lines().next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(
        asked[0].contains("/getMe") && asked[1].contains("/getChat?chat_id=42"),
        "{asked:?}"
    );
}

#[test]
fn doctor_never_shows_the_telegram_token() {
    let token = "123456789:AAHkexampleSECRETexampleSECRET12345";
    let wd = Wd::new()
        .env("TELEGRAM_ESCALATION_CHAT_ID", "42")
        .env("TELEGRAM_BOT_TOKEN", token);
    let out = wd.run(&["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("AAHk") && text.contains("✓ Telegram"),
        "{text}"
    );
    let bad = Wd::new()
        .env("TELEGRAM_ESCALATION_CHAT_ID", "42")
        .env("TELEGRAM_BOT_TOKEN", "\"not-a-token\"");
    let (_, checks) = doctor_json(&bad);
    assert_eq!(check(&checks, "Telegram")["status"], "fail");
    assert!(!check(&checks, "Telegram")
        .to_string()
        .contains("not-a-token"));
}

#[test]
fn drill_kills_the_tmux_session_and_follows_it_back() {
    let wd = with_tmux(Wd::new()).env("RATE_LIMIT_MAX", "1");
    wd.sessions(vec![live_conductor(CONDUCTOR, "conductor-ops")]);
    let _d = wd.spawn(&[]);
    wd.wait_for_finished_tick();
    let tmux = wd.sim.session_state(CONDUCTOR).unwrap()["tmux_session"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = wd.run(&["drill", "conductor-ops", "--yes", "--timeout", "20s"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_ok(&out);
    let kills = tmux_writes(&wd);
    assert_eq!(
        kills,
        [vec![
            "tmux",
            "-L",
            "wd-drill",
            "kill-session",
            "-t",
            &format!("={tmux}")
        ]],
        "{text}"
    );
    assert!(text.contains("action: drill"), "{text}");
    assert!(text.contains("action: restarted"), "{text}");
    assert!(text.contains("recovered in "), "{text}");
    assert_eq!(wd.restarts_with("drill").len(), 1);
    assert_eq!(wd.sim.calls_with(&["session", "stop"]).len(), 0);
    // history shows it as a drill.
    let history = wd.run(&["history", CONDUCTOR]);
    assert!(String::from_utf8_lossy(&history.stdout).contains("action: drill"));
    // The budget is the daemon's (1, now spent), not this shell's.
    let mut again = wd.command(&["drill", CONDUCTOR, "--yes"]);
    again.env("RATE_LIMIT_MAX", "5");
    let out = output_within(again, Duration::from_secs(20));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no restart left"), "{err}");
}

#[test]
fn drill_refuses_with_exit_2_and_touches_nothing() {
    let wd = with_tmux(Wd::new());
    let worker = "a0b1c2d3-1755899999";
    let fresh = "5e5e5e5e-1755899999";
    let mut just_made = live_conductor(fresh, "conductor-fresh");
    just_made["created_at"] = crate::support::now().into();
    wd.sessions(vec![
        live_conductor(CONDUCTOR, "conductor-ops"),
        session(worker, "worker-1", "", "running"),
        just_made,
    ]);
    let refused = |wd: &Wd, args: &[&str], says: &str| {
        let out = wd.run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(tmux_writes(wd).is_empty());
        assert!(wd.restarts_with("drill").is_empty());
        for verb in ["restart", "start", "stop", "send", "remove"] {
            let by_drill = wd.sim.calls_with(&["session", verb]);
            assert!(by_drill.is_empty(), "{args:?}: {by_drill:?}");
        }
    };
    refused(&wd, &["drill", CONDUCTOR, "--yes"], "no watchdog daemon");
    let mut dry = wd.spawn(&["--dry-run"]);
    wd.wait_for_finished_tick();
    refused(&wd, &["drill", CONDUCTOR, "--yes"], "--dry-run");
    dry.signal_and_wait(libc::SIGTERM, Duration::from_secs(10));
    let _d = wd.spawn(&[]);
    wd.wait_for_more_ticks(1);
    refused(
        &wd,
        &["drill", "worker-1", "--yes"],
        "no restart-critical session",
    );
    refused(&wd, &["drill", worker, "--yes"], "not restart-critical");
    refused(
        &wd,
        &["drill", "nobody", "--yes"],
        "no restart-critical session",
    );
    refused(&wd, &["drill", CONDUCTOR], "pass --yes");
    // Started seconds ago and no TUI or notify-daemon: agent-deck would refuse.
    refused(
        &wd,
        &["drill", "conductor-fresh", "--yes"],
        "freshness guard",
    );
    wd.set_status("stopped");
    refused(&wd, &["drill", CONDUCTOR, "--yes"], "stopped now");
    for bad in [
        &["drill"][..],
        &["drill", CONDUCTOR, "--timeout", "soon"],
        &["drill", "a", "b"],
    ] {
        let out = wd.run(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}

#[test]
fn a_drill_that_does_not_recover_says_what_the_daemon_did() {
    let wd = with_tmux(Wd::new()).env("RATE_LIMIT_MAX", "1");
    let mut c = live_conductor(CONDUCTOR, "conductor-ops");
    c["on_restart"] = "no_effect".into();
    c["on_start"] = "already_running".into();
    wd.sessions(vec![c]);
    let _d = wd.spawn(&[]);
    wd.wait_for_finished_tick();
    let out = wd.run(&["drill", CONDUCTOR, "--yes", "--timeout", "10"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not recovered within 10 s"), "{err}");
    assert!(err.contains("the daemon's last record"), "{err}");
}

#[test]
fn doctor_notes_the_stop_hook_read_on_1_16_26_and_nothing_on_1_14_0() {
    const NOTE: &str =
        "a pane lost right after a Stop hook reads `stopped` (#2091): the watchdog will not revive it";
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let (_, checks) = doctor_json(&wd);
    assert!(
        checks.iter().all(|c| c["check"] != "agent-deck notes"),
        "{checks:#?}"
    );
    wd.release(Some("1.16.26"));
    let (_, checks) = doctor_json(&wd);
    let note = check(&checks, "agent-deck notes");
    assert_eq!(note["status"], "warn", "{note}");
    assert!(note["detail"].as_str().unwrap().contains(NOTE), "{note}");
    assert!(note["fix"].is_string(), "{note}");
    // Still a release nobody verified: the agent-deck line says so.
    assert_eq!(check(&checks, "agent-deck")["status"], "warn");
    let out = wd.run(&["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l.starts_with('!') && l.contains(NOTE)),
        "{text}"
    );
}

#[test]
fn doctor_says_whether_usage_json_gives_a_reset_and_never_asks_1_14_0() {
    let wd = Wd::new();
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let (_, checks) = doctor_json(&wd);
    let usage = check(&checks, "usage --json");
    assert_eq!(usage["status"], "ok", "{usage}");
    assert!(
        usage["detail"].as_str().unwrap().starts_with("not asked"),
        "{usage}"
    );
    assert!(
        wd.sim.calls_with(&["usage"]).is_empty(),
        "1.14.0 would open its TUI"
    );
    wd.release(Some("1.16.26"));
    let (_, checks) = doctor_json(&wd);
    assert_eq!(
        check(&checks, "usage --json")["status"],
        "warn",
        "no resets_at fed"
    );
    wd.sim.update_state(|s| {
        s["usage"] = serde_json::json!({"providers": [{"id": "claude", "stale": false,
            "windows": [{"kind": "five_hour", "used_percentage": 12, "resets_at": 1774760400}]}]})
    });
    let (_, checks) = doctor_json(&wd);
    assert_eq!(check(&checks, "usage --json")["status"], "ok");
}
