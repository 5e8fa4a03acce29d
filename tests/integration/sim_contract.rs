//! Pins the simulated agent-deck (`agent-deck-watchdog sim`, run through
//! its `agent-deck` wrapper) to the agent-deck CLI contract
//! (agent-deck-contract.md, kept beside the project), so the test double
//! cannot drift.
//!
//! The `check_*` functions at the end hold contract promises as plain
//! checks over a command runner: they build nothing and read no state
//! file, so the same bodies can run against the real CLI once a fleet is
//! set up there. The `#[test]`s set up a simulated fleet and call them.

use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::contract::*;
use crate::support::files::write_hook;
use crate::support::fixtures::{full_conductor, session};
use crate::support::sim::{Sim, LOG_ENV, STATE_ENV};
use crate::support::wait_until;

const ID_A: &str = "3f9c2a1b-1755891234";
const ID_B: &str = "a0b1c2d3-1755899999";
const ID_C: &str = "3f9c2a77-1755890000";

/// Keys in the order they appear in the raw JSON text (one key per line).
fn raw_key_order(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            l.strip_prefix('"')
                .and_then(|rest| rest.split_once("\": "))
                .map(|(k, _)| k.to_string())
        })
        .collect()
}

/// Two profiles: a conductor in "default" and a worker in "work".
fn fleet() -> Sim {
    let sim = Sim::new();
    let mut worker = session(ID_B, "worker-1", "srv", "waiting");
    worker["profile"] = json!("work");
    worker["parent_session_id"] = json!(ID_A);
    worker["channels"] = json!(["plugin:telegram@claude-plugins-official"]);
    worker["substate"] = json!("idle-at-empty-prompt");
    let mut cond = session(ID_A, "conductor-ops", "conductor", "error");
    cond["command"] = json!("claude");
    sim.set_state(&json!({"profiles_exist": true, "sessions": [worker, cond]}));
    sim
}

#[test]
fn list_all_has_profile_and_no_status_keys() {
    let sim = fleet();
    // -p is ignored by --all.
    let out = sim.run(&["-p", "work", "list", "--all", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("[\n  {\n    \"id\": "), "indent 2");
    let v = parse(&out);
    let arr = v.as_array().expect("array");
    assert_eq!(arr.len(), 2);
    // Profiles walk in sorted order: default before work.
    assert_eq!(arr[0]["profile"], "default");
    assert_eq!(arr[1]["profile"], "work");
    assert_eq!(
        keys(&arr[0]),
        [
            "command",
            "created_at",
            "group",
            "id",
            "path",
            "profile",
            "title",
            "tool"
        ]
    );
    assert_eq!(
        keys(&arr[1]),
        [
            "created_at",
            "group",
            "id",
            "parent_session_id",
            "path",
            "profile",
            "title",
            "tool"
        ]
    );
    for e in arr {
        for k in ["status", "substate", "channels", "archived", "is_conductor"] {
            assert!(e.get(k).is_none(), "--all must not carry {k}: {e}");
        }
    }
    assert_eq!(arr[0]["group"], "conductor");
    assert_eq!(arr[0]["created_at"], "2025-08-22T19:33:54Z");
}

#[test]
fn single_profile_list_has_status_and_extras() {
    let sim = fleet();
    let out = sim.run(&["-p", "work", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v = parse(&out);
    let arr = v.as_array().expect("array");
    assert_eq!(arr.len(), 1, "only profile work");
    let e = &arr[0];
    assert_eq!(e["id"], ID_B);
    assert_eq!(e["status"], "waiting");
    assert_eq!(e["substate"], "idle-at-empty-prompt");
    assert_eq!(e["channels"][0], "plugin:telegram@claude-plugins-official");
    assert_eq!(e["archived"], false);
    assert_eq!(e["archived_at"], "0001-01-01T00:00:00Z");
    assert_eq!(e["profile"], "work");

    // No -p means profile "default"; empty substate/channels are omitted.
    let out = sim.run(&["list", "--json"]);
    let v = parse(&out);
    assert_eq!(v[0]["id"], ID_A);
    assert_eq!(v[0]["status"], "error");
    assert!(v[0].get("substate").is_none());
    assert!(v[0].get("channels").is_none());
}

#[test]
fn empty_list_edge_outputs() {
    let sim = Sim::new();
    // Profiles exist, no sessions: a marshalled nil slice.
    let out = sim.run(&["list", "--all", "--json"]);
    assert_eq!((code(&out), stdout(&out).as_str()), (0, "null\n"));

    sim.set_state(&json!({"profiles_exist": false, "sessions": []}));
    let out = sim.run(&["list", "--all", "--json"]);
    assert_eq!(
        (code(&out), stdout(&out).as_str()),
        (0, "No profiles found.\n")
    );

    let sim = fleet();
    let out = sim.run(&["-p", "x", "list", "--json"]);
    assert_eq!(
        (code(&out), stdout(&out).as_str()),
        (0, "No sessions found in profile 'x'.\n")
    );
}

#[test]
fn show_sorted_keys_and_profile_echo() {
    let sim = fleet();
    let out = sim.run(&["session", "show", ID_A, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let order = raw_key_order(&text);
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted, "show prints sorted keys");
    let v = parse(&out);
    check_list_and_show_shapes(&|a| sim.run(a), ID_A);
    for k in ["command", "claude_session_id"] {
        assert!(
            v.get(k).is_some(),
            "this claude session's show carries {k}: {v}"
        );
    }
    assert_eq!(v["profile"], "", "profile echoes -p, empty without it");
    assert_eq!(v["status"], "error");
    assert_eq!(v["parent_session_id"], "");
    assert!(v.get("substate").is_none());
    assert!(v.get("channels").is_none());
    assert!(v.get("auth_hold").is_none());
    assert!(v.get("is_conductor").is_none());

    let out = sim.run(&["-p", "work", "session", "show", ID_B, "--json"]);
    let v = parse(&out);
    assert_eq!(v["profile"], "work");
    assert_eq!(v["substate"], "idle-at-empty-prompt");
    assert_eq!(v["channels"][0], "plugin:telegram@claude-plugins-official");
    assert_eq!(v["parent_session_id"], ID_A);

    // --profile=NAME form, and a prefix of 6 characters.
    let out = sim.run(&["--profile=work", "session", "show", "a0b1c2", "--json"]);
    assert_eq!(parse(&out)["id"], ID_B);
}

#[test]
fn show_maps_unknown_status_and_carries_auth_hold() {
    let sim = Sim::new();
    let mut s = session(ID_A, "conductor-ops", "conductor", "starting");
    s["auth_hold"] = json!({"reason": "auth_death", "remedy": "log in again",
        "evidence": "API Error: 401", "boot_attempts": 1, "ts": 1755891300});
    sim.set_state(&json!({"sessions": [s]}));
    let v = parse(&sim.run(&["session", "show", ID_A, "--json"]));
    assert_eq!(v["status"], "unknown", "starting prints as unknown");
    assert_eq!(v["auth_hold"]["reason"], "auth_death");
    assert_eq!(v["auth_hold"]["boot_attempts"], 1);
}

#[test]
fn profile_flag_after_subcommand_is_a_flag_error() {
    let sim = fleet();
    let out = sim.run(&["session", "show", "-p", "work", ID_B, "--json"]);
    assert_eq!(code(&out), 2);
    assert!(stdout(&out).is_empty());
    assert!(stderr(&out).contains("flag provided but not defined: -p"));
}

#[test]
fn a_start_of_a_live_tmux_session_is_already_running() {
    let sim = fleet();
    check_start_of_a_live_session_is_already_running(&|a| sim.run(a), ID_A);
}

#[test]
fn not_found_exits_2_with_json_error_on_stdout() {
    let sim = fleet();
    check_unknown_id_is_not_found_exit_2(&|a| sim.run(a));
    check_version_names_the_release(&|a| sim.run(a));

    // The worker lives in "work", so the default profile does not see it.
    let out = sim.run(&["session", "restart", ID_B, "--json"]);
    assert_eq!(code(&out), 2);
    // A nonexistent -p profile is created, not refused: still NOT_FOUND.
    let out = sim.run(&["-p", "nosuch", "session", "output", ID_A, "--pane", "-q"]);
    assert_eq!(code(&out), 2);
    let out = sim.run(&["-p", "work", "remove", ID_A]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).ends_with("(profile 'work')\n"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn lookup_title_first_then_prefix_then_ambiguous() {
    let sim = Sim::new();
    // A title that is also a prefix of another session's id: the title wins.
    sim.set_state(&json!({"sessions": [
        session(ID_A, "alpha", "", "idle"),
        session(ID_C, "3f9c2a1b", "", "idle"),
        session("bbbbbbbb-1755890001", "dup", "", "idle"),
        session("cccccccc-1755890002", "dup", "", "idle"),
    ]}));
    let v = parse(&sim.run(&["session", "show", "3f9c2a1b", "--json"]));
    assert_eq!(v["id"], ID_C);
    // Two ids share the 6-char prefix 3f9c2a.
    let out = sim.run(&["session", "show", "3f9c2a", "--json"]);
    assert_eq!(code(&out), 1);
    assert_eq!(parse(&out)["code"], "AMBIGUOUS");
    // Duplicate titles are ambiguous too.
    let out = sim.run(&["session", "show", "dup", "--json"]);
    assert_eq!(code(&out), 1);
    // Prefixes shorter than 6 characters never match.
    let out = sim.run(&["session", "show", "bbbbb", "--json"]);
    assert_eq!(code(&out), 2);
    let v = parse(&sim.run(&["session", "show", "bbbbbb", "--json"]));
    assert_eq!(v["title"], "dup");
}

#[test]
fn restart_outcomes() {
    let sim = Sim::new();
    let mut skip = session(ID_A, "conductor-ops", "conductor", "running");
    skip["on_restart"] = json!("skipped");
    let mut ok = session(ID_B, "worker-1", "srv", "error");
    ok["substate"] = json!("auth-401");
    ok["pane"] = json!("old pane");
    let mut fail = session(ID_C, "worker-2", "srv", "error");
    fail["on_restart"] = json!("fail");
    sim.set_state(&json!({"sessions": [skip, ok, fail]}));

    let out = sim.run(&["session", "restart", ID_A, "--json"]);
    assert_eq!(code(&out), 0, "a refusal exits 0");
    let v = parse(&out);
    assert_eq!(v["skipped"], true);
    assert_eq!(v["success"], true);
    assert_eq!(keys(&v), ["id", "reason", "skipped", "success", "title"]);
    assert!(v["reason"].as_str().unwrap().contains("freshness window"));

    let out = sim.run(&["session", "restart", ID_B, "--json"]);
    assert_eq!(code(&out), 0);
    assert_eq!(
        parse(&out),
        json!({"id": ID_B, "success": true, "title": "worker-1"})
    );
    let st = sim.session_state(ID_B).unwrap();
    assert_eq!(st["status"], "running");
    assert_eq!(st["substate"], "");
    assert_ne!(st["pane"], "old pane");

    let out = sim.run(&["session", "restart", ID_C, "--json"]);
    assert_eq!(code(&out), 1);
    assert_eq!(stderr(&out), "");
    let v = parse(&out);
    assert_eq!(v["code"], "INVALID_OPERATION");
    assert_eq!(v["error"], "failed to restart session: simulated");
    assert_eq!(sim.session_state(ID_C).unwrap()["status"], "error");

    // Human mode of a refusal.
    let out = sim.run(&["session", "restart", "conductor-ops"]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).starts_with("✓ Skipped restart of conductor-ops: "));
}

#[test]
fn restart_no_effect_and_auth_hold_guard() {
    let sim = Sim::new();
    let mut held = session(ID_A, "conductor-ops", "conductor", "error");
    held["auth_hold"] = json!({"reason": "auth_death", "remedy": "log in again",
        "evidence": "401", "boot_attempts": 2, "ts": 1755891300});
    let mut inert = session(ID_B, "worker-1", "srv", "error");
    inert["on_restart"] = json!("no_effect");
    sim.set_state(&json!({"sessions": [held, inert]}));

    let v = parse(&sim.run(&["session", "restart", ID_A, "--json"]));
    assert_eq!(v["skipped"], true);
    assert_eq!(v["reason"], "log in again (use --force to restart anyway)");
    assert_eq!(sim.session_state(ID_A).unwrap()["status"], "error");
    // --force bypasses the guard.
    let v = parse(&sim.run(&["session", "restart", ID_A, "--json", "--force"]));
    assert!(v.get("skipped").is_none());
    assert_eq!(sim.session_state(ID_A).unwrap()["status"], "running");

    let out = sim.run(&["session", "restart", ID_B, "--json"]);
    assert_eq!(parse(&out)["success"], true);
    assert_eq!(sim.session_state(ID_B).unwrap()["status"], "error");
}

#[test]
fn start_outcomes() {
    let sim = Sim::new();
    let mut busy = session(ID_A, "conductor-ops", "conductor", "error");
    busy["on_start"] = json!("already_running");
    let dead = session(ID_B, "worker-1", "srv", "stopped");
    sim.set_state(&json!({"sessions": [busy, dead]}));

    let out = sim.run(&["session", "start", ID_A]);
    assert_eq!(code(&out), 1);
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        "Error: session 'conductor-ops' is already running\n"
    );

    let out = sim.run(&["session", "start", ID_B]);
    assert_eq!(code(&out), 0);
    assert_eq!(stdout(&out), "✓ Started session: worker-1\n");
    assert_eq!(sim.session_state(ID_B).unwrap()["status"], "running");
}

#[test]
fn send_records_message_and_parses_flags_like_go() {
    let sim = Sim::new();
    sim.set_state(&json!({"sessions": [session(ID_A, "conductor-ops", "conductor", "waiting")]}));
    let out = sim.run(&[
        "session",
        "send",
        ID_A,
        "report",
        "status?",
        "--no-wait",
        "-q",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "-q prints nothing");
    let out = sim.run(&["session", "send", ID_A, "hello", "--json"]);
    let v = parse(&out);
    assert_eq!(v["delivery"], "submitted");
    assert_eq!(v["message"], "hello");
    assert_eq!(
        sim.session_state(ID_A).unwrap()["sent"],
        json!(["report status?", "hello"])
    );
    // session send has -q but no --quiet; a word starting with '-' is a flag.
    assert_eq!(
        code(&sim.run(&["session", "send", ID_A, "hi", "--quiet"])),
        2
    );
    assert_eq!(code(&sim.run(&["session", "send", ID_A, "-1", "left"])), 2);
}

#[test]
fn pane_moving_samples_differ_and_transcript_path() {
    let sim = Sim::new();
    let mut s = session(ID_A, "conductor-ops", "conductor", "waiting");
    s["pane"] = json!("prompt >");
    s["pane_moving"] = json!(true);
    s["transcript"] = json!("last answer");
    let mut gone = session(ID_B, "worker-1", "srv", "error");
    gone["pane"] = Value::Null;
    sim.set_state(&json!({"sessions": [s, gone]}));

    let a = sim.run(&["session", "output", ID_A, "--pane", "-q"]);
    let b = sim.run(&["session", "output", ID_A, "--pane", "-q"]);
    assert_eq!((code(&a), code(&b)), (0, 0));
    assert!(stdout(&a).starts_with("prompt >\n"));
    assert!(stdout(&a).ends_with('\n'));
    assert_ne!(
        stdout(&a),
        stdout(&b),
        "a moving pane changes between samples"
    );

    let out = sim.run(&["session", "output", ID_A, "-quiet"]);
    assert_eq!(stdout(&out), "last answer\n");

    let out = sim.run(&["session", "output", ID_B, "--pane", "-q"]);
    assert_eq!(code(&out), 1);
    assert_eq!(
        stderr(&out),
        "Error: failed to capture pane: failed to capture history: exit status 1\n"
    );
}

#[test]
fn remove_deletes_the_session() {
    let sim = fleet();
    let out = sim.run(&["-p", "work", "remove", ID_B]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "✓ Removed session: worker-1 (from profile 'work')\n"
    );
    assert!(sim.session_state(ID_B).is_none());
    assert!(sim.session_state(ID_A).is_some());
}

#[test]
fn call_log_has_one_line_per_call() {
    let sim = fleet();
    assert!(sim.calls().is_empty(), "missing log means no calls");
    sim.run(&["list", "--all", "--json"]);
    sim.run(&["session", "show", ID_A, "--json"]);
    sim.run(&["bogus"]);
    let calls = sim.calls();
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[0], ["list", "--all", "--json"]);
    assert_eq!(calls[1], ["session", "show", ID_A, "--json"]);
    assert_eq!(calls[2], ["bogus"]);
    let first = &sim.call_log()[0];
    assert!(first.ts > 1.0e9);
    assert!(first.pid > 0);
}

#[test]
fn hang_fault_sleeps_then_answers_and_counts_down() {
    let sim = fleet();
    sim.update_state(|s| {
        s["faults"] = json!({"show": {"mode": "hang", "seconds": 0.2, "count": 1}});
    });
    let t0 = Instant::now();
    let out = sim.run(&["session", "show", ID_A, "--json"]);
    assert!(t0.elapsed() >= Duration::from_millis(200));
    assert_eq!(code(&out), 0);
    assert_eq!(parse(&out)["id"], ID_A);
    assert!(
        sim.state()["faults"].get("show").is_none(),
        "count exhausted"
    );
    // The call was logged at its start, not after the hang.
    assert_eq!(sim.calls().len(), 1);
}

#[test]
fn output_faults() {
    let sim = fleet();
    sim.update_state(|s| {
        s["faults"] = json!({
            "list_all": {"mode": "garbage"},
            "list": {"mode": "null"},
            "restart": {"mode": "exit1", "count": 2},
            "start": {"mode": "empty"},
            "output_pane": {"mode": "crash"},
        });
    });
    let out = sim.run(&["list", "--all", "--json"]);
    assert_eq!(
        (code(&out), stdout(&out).as_str()),
        (0, "{\"id\": \"oops\n")
    );
    assert!(serde_json::from_str::<Value>(&stdout(&out)).is_err());
    let out = sim.run(&["list", "--json"]);
    assert_eq!((code(&out), stdout(&out).as_str()), (0, "null\n"));
    let out = sim.run(&["session", "start", ID_A]);
    assert_eq!((code(&out), stdout(&out).as_str()), (0, ""));

    let out = sim.run(&["session", "restart", ID_A, "--json"]);
    assert_eq!(code(&out), 1);
    assert_eq!(parse(&out)["error"], "simulated failure");
    let out = sim.run(&["session", "restart", ID_A]);
    assert_eq!(code(&out), 1);
    assert_eq!(stderr(&out), "Error: simulated failure\n");
    // Count of 2 used up: the next restart is real.
    let out = sim.run(&["session", "restart", ID_A, "--json"]);
    assert_eq!(code(&out), 0);

    let out = sim.run(&["session", "output", ID_A, "--pane", "-q"]);
    assert_eq!(out.status.signal(), Some(9), "crash is SIGKILL");
}

#[test]
fn unknown_commands_and_flags() {
    let sim = fleet();
    let out = sim.run(&["frobnicate"]);
    assert_eq!(code(&out), 1);
    assert_eq!(stderr(&out), "Error: unknown command\n");
    assert_eq!(code(&sim.run(&["session", "frob", ID_A])), 1);
    assert_eq!(code(&sim.run(&["list", "--all", "--json", "--bogus"])), 2);
    // Flags after positionals are fine (normalizeArgs).
    assert_eq!(code(&sim.run(&["session", "show", ID_A, "-quiet"])), 0);

    let out = Command::new(&sim.bin)
        .args(["list", "--all", "--json"])
        .env_remove(STATE_ENV)
        .env_remove(LOG_ENV)
        .output()
        .unwrap();
    assert_eq!(code(&out), 1);
    assert_eq!(stderr(&out), "Error: FAKE_AGENT_DECK_STATE not set\n");
}

#[test]
fn delay_sleeps_outside_the_lock() {
    let sim = fleet();
    sim.update_state(|s| s["delay_s"] = json!({"show": 1.0}));
    let mut slow = Command::new(&sim.bin)
        .args(["session", "show", ID_A, "--json"])
        .envs(sim.envs())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The slow call logs itself at its start, before the delay.
    assert!(wait_until(Duration::from_secs(3), || sim.calls().len() == 1));
    // A second call is not blocked by the sleeping one.
    let out = sim.run(&["list", "--json"]);
    assert_eq!(code(&out), 0);
    assert!(
        slow.try_wait().unwrap().is_none(),
        "the delayed call should still be sleeping"
    );
    let slow = slow.wait_with_output().unwrap();
    assert_eq!(parse(&slow)["id"], ID_A, "answers normally after the delay");
}

#[test]
fn hook_writer_and_wait_until() {
    let sim = Sim::new();
    let dir = sim.dir.path().join("hooks");
    std::fs::create_dir(&dir).unwrap();
    write_hook(&dir, ID_A, "waiting");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [format!("{ID_A}.json")], "temp file renamed away");
    let text = std::fs::read_to_string(dir.join(format!("{ID_A}.json"))).unwrap();
    assert!(text.starts_with("{\"status\":\"waiting\",\"event\":\"Stop\",\"ts\":"));
    assert!(wait_until(Duration::from_millis(200), || true));
    assert!(!wait_until(Duration::from_millis(50), || false));
}

#[test]
fn a_non_claude_send_of_twelve_characters_answers_typed() {
    let sim = Sim::new();
    let mut shell = session(ID_A, "shell-1", "", "idle");
    shell["tool"] = json!("shell");
    sim.set_state(&json!({"sessions": [shell]}));
    check_non_claude_send_of_twelve_characters_answers_typed(&|a| sim.run(a), ID_A);
    assert_eq!(
        sim.session_state(ID_A).unwrap()["sent"],
        json!(["twelve chars", "short one"]),
        "the typed text arrived"
    );
}

#[test]
fn on_send_typed_answers_typed_for_a_claude_session() {
    let sim = Sim::new();
    let mut cond = session(ID_A, "conductor-ops", "conductor", "waiting");
    cond["on_send"] = json!("typed");
    sim.set_state(&json!({"sessions": [cond]}));
    let out = sim.run(&["session", "send", ID_A, "hi", "--no-wait", "--json"]);
    assert_eq!(code(&out), 1);
    let v = parse(&out);
    assert_eq!(
        (
            v["code"].clone(),
            v["delivery"].clone(),
            v["submitted"].clone()
        ),
        (json!("DELIVERY_FAILED"), json!("typed"), json!(false))
    );
    assert_eq!(sim.session_state(ID_A).unwrap()["sent"], json!(["hi"]));
}

/// A fleet of never-started, killed and shell sessions for the checks above.
fn dead_fleet() -> Sim {
    let sim = Sim::new();
    let mut never = session(ID_A, "never started", "", "idle");
    never["started"] = json!(false);
    never["tmux_session"] = json!("agentdeck_never-started_121c9b47");
    let mut killed = session(ID_B, "killed", "", "running");
    killed["tmux_session"] = json!("agentdeck_killed_91e6072c");
    let mut shell = session(ID_C, "shell one", "", "running");
    shell["tool"] = json!("shell");
    shell["command"] = json!("shell");
    shell["tmux_session"] = json!("agentdeck_shell-one_d4b39d86");
    sim.set_state(&json!({"sessions": [never, killed, shell]}));
    assert_eq!(code(&sim.run(&["crash", ID_B])), 0);
    sim
}

#[test]
fn a_never_started_session_reads_error_like_a_killed_one() {
    let sim = dead_fleet();
    check_never_started_reads_error_like_a_killed_one(&|a| sim.run(a), ID_A, ID_B);
    let out = sim.run(&["session", "start", ID_A, "--json"]);
    assert_eq!(parse(&out)["tmux"], "agentdeck_never-started_121c9b47");
    assert_eq!(show_json(&|a| sim.run(a), ID_A)["status"], "running");
}

#[test]
fn a_caller_inside_another_tmux_server_reads_every_session_error() {
    let sim = dead_fleet();
    let foreign = |args: &[&str]| {
        let mut c = Command::new(&sim.bin);
        c.args(args)
            .envs(sim.envs())
            .env_remove("AGENTDECK_PROFILE")
            .env("TMUX", "/tmp/tmux-1000/other,4242,0")
            .env("TMUX_PANE", "%0");
        c.output().expect("run the simulated agent-deck")
    };
    check_a_caller_inside_another_tmux_server_reads_error(&foreign, ID_C, ID_B);
    // Without `TMUX` the same sessions read as they are.
    assert_eq!(show_json(&|a| sim.run(a), ID_C)["status"], "running");
    assert_eq!(show_json(&|a| sim.run(a), ID_B)["status"], "error");
}

#[test]
fn a_gone_tmux_session_reads_error_with_no_exit_code() {
    let sim = dead_fleet();
    check_gone_tmux_reads_error(&|a| sim.run(a), ID_B);
    assert_eq!(show_json(&|a| sim.run(a), ID_B)["status"], "running");
}

#[test]
fn a_dead_shell_session_fails_output_without_pane() {
    let sim = dead_fleet();
    assert_eq!(code(&sim.run(&["crash", ID_C])), 0);
    check_dead_non_claude_output_exits_1(&|a| sim.run(a), ID_C);
}

#[test]
fn a_shell_restart_creates_a_new_tmux_name() {
    let sim = dead_fleet();
    check_restart_gives_a_new_tmux_name(&|a| sim.run(a), ID_C);
    let name = sim.session_state(ID_C).unwrap()["tmux_session"].clone();
    assert!(name.as_str().unwrap().starts_with("agentdeck_shell-one_"));
}

#[test]
fn without_a_status_writer_a_fresh_restart_of_a_dead_pane_is_skipped() {
    let sim = dead_fleet();
    sim.update_state(|v| v["status_writer"] = json!(false));
    // Dead, then started again (a start of a live tmux session is refused).
    assert_eq!(code(&sim.run(&["crash", ID_C])), 0);
    assert_eq!(code(&sim.run(&["session", "start", ID_C])), 0);
    // Past the 1.5 s start grace, in which a gone pane reads `unknown`.
    sim.update_state(|v| {
        for s in v["sessions"].as_array_mut().unwrap() {
            if let Some(t) = s["last_started"].as_f64() {
                s["last_started"] = json!(t - 5.0);
            }
        }
    });
    assert_eq!(code(&sim.run(&["crash", ID_C])), 0);
    check_fresh_restart_is_skipped_even_when_dead(&|a| sim.run(a), ID_C);
    assert!(sim.session_state(ID_C).unwrap().get("restarts").is_none());
}

#[test]
fn the_pane_is_the_last_2000_lines_plus_the_screen() {
    let sim = Sim::new();
    let mut s = session(ID_A, "busy", "", "running");
    let lines: Vec<String> = (1..=5000).map(|n| format!("line {n}")).collect();
    s["pane"] = json!(lines.join("\n"));
    sim.set_state(&json!({"sessions": [s]}));
    check_pane_is_the_last_2000_lines_plus_the_screen(&|a| sim.run(a), ID_A, "line 5000");
}

#[test]
fn a_load_error_answers_not_found_with_exit_1() {
    let sim = fleet();
    sim.update_state(|v| v["faults"] = json!({"show": {"mode": "load_error", "count": 1}}));
    let out = sim.run(&["session", "show", ID_A, "--json"]);
    assert_eq!(code(&out), 1);
    assert_eq!(parse(&out)["code"], "NOT_FOUND");
    assert_eq!(
        code(&sim.run(&["session", "show", ID_A, "--json"])),
        0,
        "worn off"
    );
}

#[test]
fn a_stale_dead_hook_keeps_a_restarted_claude_session_in_error() {
    let sim = Sim::new();
    let hooks = sim.dir.path().join("hooks");
    std::fs::create_dir(&hooks).unwrap();
    let mut c = session(ID_A, "conductor-ops", "conductor", "error");
    c["claude_session_id"] = json!("c-1");
    sim.set_state(&json!({"read_hooks": true, "sessions": [c]}));
    write_hook(&hooks, ID_A, "dead");
    let run = |args: &[&str]| {
        Command::new(&sim.bin)
            .args(args)
            .envs(sim.envs())
            .env("AGENT_DECK_HOOKS_DIR", &hooks)
            .output()
            .unwrap()
    };
    assert_eq!(
        parse(&run(&["session", "show", ID_A, "--json"]))["status"],
        "error"
    );
    assert_eq!(code(&run(&["session", "restart", ID_A, "--json"])), 0);
    assert_eq!(
        parse(&run(&["session", "show", ID_A, "--json"]))["status"],
        "error",
        "the dead hook outlives the restart"
    );
    write_hook(&hooks, ID_A, "running");
    assert_eq!(
        parse(&run(&["session", "show", ID_A, "--json"]))["status"],
        "running"
    );
    // Without AGENT_DECK_HOOKS_DIR and read_hooks, hooks are not read.
    assert_eq!(show_json(&|a| sim.run(a), ID_A)["status"], "running");
}

#[test]
fn a_full_conductor_reads_and_clears_as_agent_deck_1_14_0_did_live() {
    // The assertions of tests/live/context.rs, on the simulator.
    let sim = Sim::new();
    sim.set_state(&json!({"sessions": [full_conductor(ID_A, "conductor-cx", "limit")]}));
    let reading = |sim: &Sim| {
        let v = show_json(&|a| sim.run(a), ID_A);
        (
            v["status"].clone(),
            v["substate"].clone(),
            v["claude_session_id"].clone(),
        )
    };
    let (status, substate, old) = reading(&sim);
    assert_eq!(
        (status, substate),
        (json!("running"), json!("idle-at-empty-prompt"))
    );
    let out = sim.run(&["session", "output", ID_A, "-q"]);
    assert_eq!(stdout(&out), "Prompt is too long\n");
    let pane = stdout(&sim.run(&["session", "output", ID_A, "--pane", "-q"]));
    assert!(
        pane.ends_with("  ⎿  Context limit reached · /compact or /clear to continue\n❯ \n"),
        "{pane}"
    );
    let out = sim.run(&["session", "send", ID_A, "/clear", "--no-wait", "--json"]);
    assert_eq!((code(&out), stderr(&out).as_str()), (1, ""));
    let v = parse(&out);
    assert_eq!(
        (&v["success"], &v["submitted"], &v["code"], &v["delivery"]),
        (
            &json!(false),
            &json!(false),
            &json!("DELIVERY_FAILED"),
            &json!("no_evidence")
        )
    );
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("no evidence of delivery"),
        "{v}"
    );
    let (status, substate, new) = reading(&sim);
    assert_eq!(
        (status, substate),
        (json!("waiting"), json!("idle-at-empty-prompt"))
    );
    assert_ne!(new, old, "the new id at once");
    let out = sim.run(&[
        "session",
        "send",
        ID_A,
        "Run your Startup Checklist.",
        "--no-wait",
        "--json",
    ]);
    assert_eq!(code(&out), 0);
    assert_eq!(parse(&out)["delivery"], "submitted");
    assert_eq!(
        sim.session_state(ID_A).unwrap()["sent"],
        json!(["/clear", "Run your Startup Checklist."])
    );
}
