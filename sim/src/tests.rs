//! Unit tests of the simulator, run in-process through [`run`]; the
//! black-box contract tests (tests/integration/sim_contract.rs) run it as a
//! program, faults and signals included.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::PathBuf;

use serde_json::{json, Value};
use tempfile::TempDir;

use super::reconcile::{reconcile, Held, Plan};
use super::state::{Delivery, Full, OnCompact, OnRestart, OnSend, OnStart, PaneHost};
use super::tmux::expand;
use super::*;

struct Sim {
    _dir: TempDir,
    state: PathBuf,
    log: PathBuf,
}

fn session(id: &str, title: &str, status: &str) -> SimSession {
    SimSession {
        id: id.into(),
        title: title.into(),
        status: Some(status.into()),
        ..SimSession::default()
    }
}

fn sim(sessions: Vec<SimSession>) -> Sim {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state.json");
    let log = dir.path().join("calls.log");
    fs::write(&state, "{}").expect("write state");
    transact(&state, |st| st.sessions = sessions).expect("write state");
    Sim {
        _dir: dir,
        state,
        log,
    }
}

impl Sim {
    fn env(&self) -> SimEnv {
        SimEnv {
            state: Some(self.state.clone()),
            log: Some(self.log.clone()),
            ..SimEnv::default()
        }
    }

    fn call_in(&self, env: &SimEnv, args: &[&str]) -> (i32, String, String) {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run(&args, env, &mut out, &mut err);
        let text = |b: Vec<u8>| String::from_utf8(b).expect("utf-8 output");
        (code, text(out), text(err))
    }

    fn call(&self, args: &[&str]) -> (i32, String, String) {
        self.call_in(&self.env(), args)
    }

    fn json(&self, args: &[&str]) -> Value {
        let (code, out, err) = self.call(args);
        assert_eq!((code, err.as_str()), (0, ""), "{args:?} printed {out}");
        serde_json::from_str(&out).expect("stdout is JSON")
    }

    fn session(&self, id: &str) -> SimSession {
        let state = load(&self.state).expect("load state");
        state
            .sessions
            .into_iter()
            .find(|s| s.id == id)
            .expect("session present")
    }
}

const ID: &str = "3f9c2a1b-1755891234";

fn held(status: &str) -> SimSession {
    let hold = json!({"reason": "auth_death", "remedy": "log in again", "evidence": "401",
                      "boot_attempts": 1, "ts": 1});
    SimSession {
        auth_hold: Some(hold),
        ..session(ID, "conductor-ops", status)
    }
}

#[test]
fn list_all_has_no_status_and_is_null_when_empty() {
    let mut worker = session("a0b1c2d3-1755899999", "worker-1", "running");
    (worker.profile, worker.parent_session_id) = ("work".into(), ID.into());
    let s = sim(vec![worker, session(ID, "conductor-ops", "error")]);
    let list = s.json(&["-p", "work", "list", "--all", "--json"]);
    let entries = list.as_array().expect("array");
    assert_eq!(entries.len(), 2, "--all ignores -p");
    assert_eq!(
        entries[0]["profile"], "default",
        "profiles walk in sorted order"
    );
    assert_eq!(entries[1]["parent_session_id"], ID);
    assert!(
        entries[0].get("parent_session_id").is_none(),
        "empty parent omitted"
    );
    assert!(entries
        .iter()
        .all(|e| e.get("status").is_none() && e.get("channels").is_none()));
    assert_eq!(entries[0]["path"], "/tmp");
    assert_eq!(entries[0]["created_at"], "2025-08-22T19:33:54Z");
    assert_eq!(
        sim(vec![]).call(&["list", "--all", "--json"]),
        (0, "null\n".into(), String::new())
    );
}

#[test]
fn profile_list_has_status_and_maps_starting_to_unknown() {
    let mut boot = session("b0b1c2d3-1755899999", "boot", "starting");
    boot.channels = vec!["plugin:telegram@claude-plugins-official".into()];
    let s = sim(vec![session(ID, "conductor-ops", "error"), boot]);
    let list = s.json(&["list", "--json"]);
    assert_eq!(list[0]["status"], "error");
    assert_eq!(list[1]["status"], "unknown");
    assert_eq!(
        list[1]["channels"][0],
        "plugin:telegram@claude-plugins-official"
    );
    assert!(list[0].get("channels").is_none() && list[0].get("substate").is_none());
    assert_eq!(list[0]["archived"], false);
    let (code, out, _) = s.call(&["-p", "work", "list", "--json"]);
    assert_eq!(
        (code, out.as_str()),
        (0, "No sessions found in profile 'work'.\n")
    );
}

#[test]
fn agentdeck_profile_is_the_profile_when_no_p_is_given() {
    let mut worker = session("a0b1c2d3-1755899999", "worker-1", "idle");
    worker.profile = "work".into();
    let s = sim(vec![worker]);
    let env = SimEnv {
        profile: "work".into(),
        ..s.env()
    };
    let (code, out, _) = s.call_in(&env, &["session", "show", "worker-1", "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["profile"], "", "profile echoes -p, not the environment");
    let (code, _, _) = s.call_in(&env, &["-p", "default", "session", "show", "worker-1"]);
    assert_eq!(code, 2, "-p wins over the environment");
}

#[test]
fn human_show_starts_with_session_not_simsession() {
    let s = sim(vec![session(ID, "conductor-ops", "idle")]);
    let (code, out, _) = s.call(&["session", "show", ID]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("Session: conductor-ops\nID:      "),
        "{out}"
    );
}

#[test]
fn show_keys_are_sorted_and_profile_echoes_the_p_argument() {
    let mut s0 = held("error");
    s0.substate = "auth-401".into();
    let s = sim(vec![s0]);
    let (code, out, _) = s.call(&["session", "show", ID, "--json"]);
    assert_eq!(code, 0);
    let keys: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("  \"")?.split('"').next())
        .collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert_eq!(keys, sorted);
    for key in [
        "id",
        "wrapper",
        "parent_project_path",
        "substate",
        "auth_hold",
        "created_at",
    ] {
        assert!(keys.contains(&key), "{key} missing from {out}");
    }
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["profile"], "", "no -p given");
    assert_eq!(v["auth_hold"]["remedy"], "log in again");
    assert_eq!(
        s.json(&["-p=default", "session", "show", "conductor-ops", "--json"])["profile"],
        "default"
    );
}

#[test]
fn ambiguous_id_lists_the_candidates_and_exits_1() {
    let s = sim(vec![
        session(ID, "a", "idle"),
        session("3f9c2a77-1755890000", "b", "idle"),
    ]);
    let (code, _, err) = s.call(&["session", "show", "3f9c2a"]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "Error: '3f9c2a' matches multiple sessions:\n  - a (3f9c2a1b-175)\n  - b (3f9c2a77-175)\n\
         Use full ID or more specific title.\n"
    );
}

#[test]
fn profile_flag_counts_only_before_the_subcommand() {
    let s = sim(vec![session(ID, "t", "idle")]);
    let (code, _, err) = s.call(&["session", "show", "-p", "default", ID]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("flag provided but not defined: -p"),
        "{err}"
    );
    assert_eq!(s.call(&["session", "show", ID, "--bogus"]).0, 2);
    assert_eq!(
        s.call(&["--profile", "default", "session", "show", ID]).0,
        0
    );
    assert_eq!(
        s.call(&["session", "show", ID, "-h"]),
        (
            0,
            String::new(),
            "Usage: agent-deck session show [options]\n".into()
        )
    );
    assert_eq!(s.call(&["session", "show", ID, "--json=maybe"]).0, 2);
    assert_eq!(s.call(&["session", "show", ID, "---json"]).0, 2);
}

#[test]
fn restart_of_auth_held_session_is_skipped() {
    let s = sim(vec![held("error")]);
    let v = s.json(&["session", "restart", ID, "--json"]);
    let reason = "log in again (use --force to restart anyway)";
    let want = json!({"id": ID, "reason": reason, "skipped": true, "success": true,
                      "title": "conductor-ops"});
    assert_eq!(v, want);
    assert_eq!(s.session(ID), held("error"), "a skip changes nothing");
    assert_eq!(
        s.json(&["session", "restart", ID, "--json", "--env", "K=V"])["skipped"],
        Value::Null,
        "--env bypasses the guard like --force"
    );
    assert_eq!(s.session(ID).status.as_deref(), Some("running"));
}

#[test]
fn restart_flips_error_to_running_and_appends_to_the_pane() {
    // A Claude session with a known id whose tmux is alive keeps its pane.
    let mut s0 = session(ID, "conductor-ops", "error");
    s0.substate = "usage-limit".into();
    s0.pane = Some("old".into());
    s0.claude_session_id = "c-1".into();
    s0.tmux_session = "agentdeck_conductor-ops_0badf00d".into();
    let s = sim(vec![s0]);
    let v = s.json(&["session", "restart", ID, "--json"]);
    assert_eq!(
        v,
        json!({"id": ID, "success": true, "title": "conductor-ops"})
    );
    let after = s.session(ID);
    assert_eq!(
        (after.status.as_deref(), after.substate.as_str()),
        (Some("running"), "")
    );
    assert_eq!(
        (after.restarts, after.pane.as_deref()),
        (1, Some("old\nrestarted 1"))
    );
    assert_eq!(after.tmux_session, "agentdeck_conductor-ops_0badf00d");
}

#[test]
fn start_that_finds_the_session_running_exits_1() {
    let mut running = session(ID, "conductor-ops", "error");
    running.on_start = Some(OnStart::AlreadyRunning);
    let s = sim(vec![running, session("b0b1c2d3-1", "dead", "stopped")]);
    let (code, out, err) = s.call(&["session", "start", ID]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(err, "Error: session 'conductor-ops' is already running\n");
    assert_eq!(s.session(ID).starts, 0);
    assert_eq!(
        s.call(&["session", "start", "dead"]),
        (0, "\u{2713} Started session: dead\n".into(), String::new())
    );
    let dead = s.session("b0b1c2d3-1");
    assert_eq!((dead.status.as_deref(), dead.starts), (Some("running"), 1));
}

#[test]
fn moving_pane_changes_between_reads() {
    let mut s0 = session(ID, "conductor-ops", "running");
    (s0.pane, s0.pane_moving) = (Some("banner".into()), true);
    s0.transcript = "last answer".into();
    let s = sim(vec![s0]);
    let first = s.call(&["session", "output", ID, "--pane", "-q"]);
    let second = s.call(&["session", "output", ID, "--pane", "-q"]);
    assert_eq!(first, (0, "banner\ntick 1\n".into(), String::new()));
    assert_eq!(second.1, "banner\ntick 1\ntick 2\n");
    assert_eq!(s.session(ID).pane_ticks, 2);
    assert_eq!(
        s.call(&["session", "output", ID, "-quiet"]),
        (0, "last answer\n".into(), String::new())
    );
}

#[test]
fn gone_pane_shows_the_auth_hold_block_or_fails() {
    let s = sim(vec![held("error"), session("b0b1c2d3-1", "gone", "error")]);
    let (code, out, _) = s.call(&["session", "output", ID, "--pane", "-q"]);
    assert_eq!(
        (code, out.as_str()),
        (0, "[auth hold] auth_death\nlog in again\n401\n")
    );
    let (code, out, err) = s.call(&["session", "output", "gone", "--pane", "--json"]);
    assert_eq!((code, err.as_str()), (1, ""));
    assert!(
        out.contains(
            "\"error\": \"failed to capture pane: failed to capture history: exit status 1\""
        ),
        "{out}"
    );
}

#[test]
fn send_records_the_message() {
    let s = sim(vec![session(ID, "worker-1", "waiting")]);
    let (code, out, _) = s.call(&["session", "send", ID, " -report", "status?", "--no-wait"]);
    assert_eq!(
        (code, out.as_str()),
        (0, "\u{2713} Sent message to 'worker-1'\n")
    );
    assert_eq!(s.session(ID).sent, vec![" -report status?".to_string()]);
    assert_eq!(
        s.call(&["session", "send", ID, "--quiet", "x"]).0,
        2,
        "send has -q only"
    );
    assert_eq!(
        s.call(&["session", "send", ID]),
        (
            1,
            "Usage: agent-deck session send <id|title> <message> [options]\n".into(),
            String::new()
        )
    );
}

#[test]
fn a_non_claude_send_of_twelve_characters_answers_typed() {
    let mut s0 = session(ID, "shell-1", "idle");
    s0.tool = Some("shell".into());
    let s = sim(vec![s0]);
    let (code, out, err) = s.call(&["session", "send", ID, "twelve chars", "--no-wait", "--json"]);
    assert_eq!((code, err.as_str()), (1, ""));
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["code"], "DELIVERY_FAILED");
    assert_eq!(v["delivery"], "typed");
    assert_eq!(v["submitted"], false);
    assert_eq!(v["success"], false);
    assert_eq!(v["session_id"], ID);
    assert_eq!(v["session_title"], "shell-1");
    let (code, _, err) = s.call(&["session", "send", ID, "  padded twelve  "]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("Error: message reached 'shell-1' but was never confirmed submitted"),
        "{err}"
    );
    assert_eq!(
        s.session(ID).sent,
        vec!["twelve chars".to_string(), "  padded twelve  ".to_string()],
        "the text arrived"
    );
}

#[test]
fn a_non_claude_send_under_twelve_characters_succeeds_unverified() {
    let mut s0 = session(ID, "shell-1", "idle");
    s0.tool = Some("shell".into());
    let s = sim(vec![s0]);
    let v = s.json(&[
        "session",
        "send",
        ID,
        "  eleven ch  ",
        "--no-wait",
        "--json",
    ]);
    assert_eq!(v["success"], true);
    assert_eq!(v["delivery"], "unverified");
    assert_eq!(v["submitted"], false);
}

#[test]
fn a_claude_compatible_tool_is_checked_like_claude() {
    let mut s0 = session(ID, "wrapped", "idle");
    s0.tool = Some("my-claude".into());
    s0.compatible_with = "Claude".into();
    let s = sim(vec![s0]);
    let v = s.json(&["session", "send", ID, "a long enough message", "--json"]);
    assert_eq!(
        (v["delivery"].clone(), v["submitted"].clone()),
        (json!("submitted"), json!(true))
    );
}

#[test]
fn failed_send_carries_the_delivery_keys() {
    let mut s0 = session(ID, "worker-1", "waiting");
    s0.on_send = Some(OnSend::Fail);
    let s = sim(vec![s0]);
    let (code, out, _) = s.call(&["session", "send", ID, "hi", "--json"]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        v,
        json!({"code": "DELIVERY_FAILED", "delivery": "send_failed",
               "error": "message was not delivered to 'worker-1': simulated",
               "session_id": ID, "session_title": "worker-1", "submitted": false,
               "success": false})
    );
    assert!(s.session(ID).sent.is_empty());
}

#[test]
fn remove_deletes_the_session() {
    let s = sim(vec![session(ID, "worker-1", "idle")]);
    let (code, out, _) = s.call(&["remove", ID]);
    assert_eq!(
        (code, out.as_str()),
        (
            0,
            "\u{2713} Removed session: worker-1 (from profile 'default')\n"
        )
    );
    assert!(load(&s.state).expect("state").sessions.is_empty());
    assert_eq!(
        s.call(&["remove", ID]).2,
        format!("Error: session '{ID}' not found (profile 'default')\n")
    );
}

#[test]
fn call_log_has_one_json_line_per_call() {
    let s = sim(vec![]);
    s.call(&["-p", "work", "list", "--json"]);
    s.call(&["frobnicate"]);
    let text = fs::read_to_string(&s.log).expect("log");
    assert!(text.starts_with("{\"ts\":"), "{text}");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["argv"], json!(["-p", "work", "list", "--json"]));
    assert_eq!(lines[1]["argv"], json!(["frobnicate"]));
    assert!(lines
        .iter()
        .all(|l| l["ts"].as_f64().is_some_and(|t| t > 1.0e9)));
    assert_eq!(lines[0]["pid"], std::process::id());
}

#[test]
fn unknown_command_exits_1() {
    let s = sim(vec![]);
    assert_eq!(
        s.call(&["frobnicate"]),
        (1, String::new(), "Error: unknown command\n".into())
    );
    assert_eq!(s.call(&["session", "frob", ID]).0, 1);
    assert_eq!(s.call(&[]).0, 1);
    assert_eq!(s.call(&["-p"]).2, "Error: -p requires a profile name\n");
}

#[test]
fn bad_state_is_an_error_and_a_missing_one_an_empty_fleet() {
    let s = sim(vec![]);
    fs::write(&s.state, "{\"sessions\": [").expect("write garbage");
    let (code, _, err) = s.call(&["list", "--json"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("Error: fake state file unreadable: "),
        "{err}"
    );
    fs::write(&s.state, "[]").expect("write an array");
    let (code, _, err) = s.call(&["list", "--json"]);
    assert!(
        code == 1 && err.starts_with("Error: fake state file is not a JSON object"),
        "{err}"
    );
    let typo = json!({"sessions": [{"id": ID, "title": "t", "on_restart": "sometimes"}]});
    fs::write(&s.state, typo.to_string()).expect("write a typo");
    let (code, _, err) = s.call(&["session", "restart", ID]);
    assert!(code == 1 && err.contains("sometimes"), "{err}");
    fs::remove_file(&s.state).expect("remove state");
    assert_eq!(
        s.call(&["list", "--all", "--json"]),
        (0, "null\n".into(), String::new())
    );
    assert!(!s.state.exists(), "a read never creates the state file");
    let env = SimEnv::default();
    let (code, _, err) = s.call_in(&env, &["list"]);
    assert_eq!(
        (code, err.as_str()),
        (1, "Error: FAKE_AGENT_DECK_STATE not set\n")
    );
}

#[test]
fn counted_fault_wears_off_and_unknown_keys_survive() {
    let s = sim(vec![session(ID, "t", "error")]);
    let mut v: Value =
        serde_json::from_str(&fs::read_to_string(&s.state).expect("read")).expect("JSON state");
    v["faults"] = json!({"restart": {"mode": "exit1", "count": 2}});
    v["note"] = json!("kept");
    v["sessions"][0]["colour"] = json!("blue");
    fs::write(&s.state, v.to_string()).expect("write state");
    let failed = (1, String::new(), "Error: simulated failure\n".to_string());
    assert_eq!(s.call(&["session", "restart", ID]), failed);
    assert_eq!(s.call(&["session", "restart", ID]), failed);
    assert_eq!(s.call(&["session", "restart", ID]).0, 0);
    let back: Value =
        serde_json::from_str(&fs::read_to_string(&s.state).expect("read")).expect("JSON state");
    assert!(back["faults"].get("restart").is_none(), "{back}");
    assert_eq!(
        (&back["note"], &back["sessions"][0]["colour"]),
        (&json!("kept"), &json!("blue"))
    );
}

#[test]
fn transact_creates_the_state_file_and_writes_atomically() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("state.json");
    transact(&path, |st| st.sessions.push(session(ID, "t", "error"))).expect("create");
    assert_eq!(load(&path).expect("load").sessions.len(), 1);
    transact(&path, |st| st.sessions[0].status = None).expect("update");
    assert_eq!(load(&path).expect("load").sessions[0].status, None);
    let mut names: Vec<_> = fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["state.json", "state.json.lock"],
        "no temp file left behind"
    );
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn status_of(s: &Sim, id: &str) -> String {
    s.json(&["session", "show", id, "--json"])["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_never_started_session_reads_unknown_for_its_first_one_and_a_half_seconds() {
    let mut young = session(ID, "young", "idle");
    young.started = Some(false);
    young.created_at = Some(now());
    let mut old = session("a0b1c2d3-1755899999", "old", "idle");
    old.started = Some(false);
    let s = sim(vec![young, old]);
    assert_eq!(status_of(&s, ID), "unknown");
    assert_eq!(status_of(&s, "old"), "error");
    let v = s.json(&["list", "--json"]);
    assert_eq!(
        (v[0]["status"].clone(), v[1]["status"].clone()),
        (json!("unknown"), json!("error"))
    );
}

#[test]
fn a_never_started_claude_session_shows_no_claude_id_and_starts_as_usual() {
    let mut s0 = session(ID, "fresh", "idle");
    s0.started = Some(false);
    s0.claude_session_id = "left-over".into();
    s0.tmux_session = "agentdeck_fresh_12345678".into();
    let s = sim(vec![s0]);
    let v = s.json(&["session", "show", ID, "--json"]);
    assert_eq!(
        (v["claude_session_id"].clone(), v["can_fork"].clone()),
        (json!(""), json!(false))
    );
    assert_eq!(v["tmux_session"], "agentdeck_fresh_12345678");
    let v = s.json(&["session", "start", ID, "--json"]);
    assert_eq!(
        v["tmux"], "agentdeck_fresh_12345678",
        "start keeps the name from add"
    );
    assert_eq!(status_of(&s, ID), "running");
    let after = s.session(ID);
    assert_eq!(
        (after.started, after.stored_status.as_deref()),
        (Some(true), Some("starting"))
    );
    assert!(after.last_started.is_some());
}

#[test]
fn crash_kills_the_tmux_session_and_is_not_logged() {
    let s = sim(vec![session(ID, "worker-1", "running")]);
    assert_eq!(
        s.call(&["crash", ID]),
        (0, format!("crashed {ID}\n"), String::new())
    );
    assert_eq!(s.session(ID).tmux_alive, Some(false));
    assert_eq!(
        s.session(ID).status.as_deref(),
        Some("running"),
        "stored status kept"
    );
    assert_eq!(s.call(&["crash", "nosuch"]).0, 2);
    assert_eq!(s.call(&["crash"]).0, 2);
    assert!(!s.log.exists(), "crash is not an agent-deck call");
}

#[test]
fn a_crashed_session_reads_error_but_a_stopped_one_stays_stopped() {
    let mut stopped = session("a0b1c2d3-1755899999", "stopped-1", "stopped");
    stopped.tmux_alive = Some(false);
    let s = sim(vec![session(ID, "worker-1", "waiting"), stopped]);
    s.call(&["crash", ID]);
    assert_eq!(status_of(&s, ID), "error");
    assert_eq!(status_of(&s, "stopped-1"), "stopped");
    let (code, _, err) = s.call(&["session", "send", ID, "hello"]);
    assert_eq!(
        (code, err.as_str()),
        (1, "Error: session 'worker-1' is not running\n")
    );
    assert_eq!(
        s.call(&["session", "start", ID]).0,
        0,
        "start succeeds: tmux is gone"
    );
    assert_eq!(status_of(&s, ID), "running");
    assert_eq!(s.session(ID).tmux_alive, Some(true));
}

#[test]
fn a_session_crashed_within_a_second_and_a_half_of_its_start_reads_unknown() {
    let mut w = session(ID, "worker-1", "waiting");
    w.tmux_alive = Some(false);
    let s = sim(vec![w]);
    assert_eq!(s.call(&["session", "start", ID]).0, 0);
    s.call(&["crash", ID]);
    assert_eq!(status_of(&s, ID), "unknown", "the real CLI's start grace");
}

#[test]
fn a_dead_non_claude_session_fails_output_without_pane() {
    let mut shell = session(ID, "shell-1", "running");
    shell.tool = Some("shell".into());
    shell.tmux_alive = Some(false);
    let mut claude = session("a0b1c2d3-1755899999", "claude-1", "running");
    claude.tmux_alive = Some(false);
    claude.transcript = "last".into();
    let s = sim(vec![shell, claude]);
    let (code, _, err) = s.call(&["session", "output", ID]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "Error: failed to get response: failed to capture terminal output: \
         failed to capture history: exit status 1\n"
    );
    assert_eq!(s.call(&["session", "output", "claude-1", "-q"]).1, "last\n");
}

#[test]
fn a_shell_restart_gets_a_new_tmux_name_and_a_fresh_pane() {
    let mut s0 = session(ID, "my shell_1", "error");
    s0.tool = Some("shell".into());
    s0.pane = Some("old scrollback".into());
    s0.tmux_session = "agentdeck_my-shell-1_00000000".into();
    let s = sim(vec![s0]);
    s.json(&["session", "restart", ID, "--json"]);
    let after = s.session(ID);
    let name = after.tmux_session.clone();
    let suffix = name
        .strip_prefix("agentdeck_my-shell-1_")
        .expect("name shape");
    assert!(
        suffix.len() == 8 && suffix.bytes().all(|b| b.is_ascii_hexdigit()),
        "{name}"
    );
    assert_ne!(name, "agentdeck_my-shell-1_00000000");
    assert_eq!(
        after.pane.as_deref(),
        Some("restarted 1"),
        "scrollback lost"
    );
    assert_eq!(after.stored_status.as_deref(), Some("waiting"));
}

#[test]
fn a_claude_restart_after_a_crash_gets_a_new_tmux_name() {
    let mut s0 = session(ID, "conductor-ops", "running");
    s0.claude_session_id = "c-1".into();
    s0.tmux_session = "agentdeck_conductor-ops_0badf00d".into();
    s0.pane = Some("old".into());
    let s = sim(vec![s0]);
    s.call(&["crash", ID]);
    s.json(&["session", "restart", ID, "--json"]);
    let after = s.session(ID);
    assert_ne!(after.tmux_session, "agentdeck_conductor-ops_0badf00d");
    assert_eq!(after.tmux_alive, Some(true));
    assert_eq!(status_of(&s, ID), "running");
}

#[test]
fn the_pane_is_clipped_to_its_last_2000_lines_plus_the_screen_with_escapes_kept() {
    let mut s0 = session(ID, "worker-1", "running");
    let lines: Vec<String> = (1..=3000)
        .map(|n| format!("\u{1b}[32mline {n}\u{1b}[0m"))
        .collect();
    s0.pane = Some(lines.join("\n"));
    let s = sim(vec![s0]);
    let (code, out, _) = s.call(&["session", "output", ID, "--pane", "-q"]);
    assert_eq!(code, 0);
    let got: Vec<&str> = out.lines().collect();
    assert_eq!(got.len(), 2024);
    assert_eq!(got[0], "\u{1b}[32mline 977\u{1b}[0m");
    assert_eq!(got[2023], "\u{1b}[32mline 3000\u{1b}[0m");
}

#[test]
fn show_leaves_out_an_empty_command() {
    let mut with = session("a0b1c2d3-1755899999", "with", "idle");
    with.command = "claude --resume".into();
    let s = sim(vec![session(ID, "without", "idle"), with]);
    assert!(s
        .json(&["session", "show", ID, "--json"])
        .get("command")
        .is_none());
    assert_eq!(
        s.json(&["session", "show", "with", "--json"])["command"],
        "claude --resume"
    );
}

#[test]
fn a_load_error_fault_answers_not_found_with_exit_1() {
    let s = sim(vec![session(ID, "worker-1", "running")]);
    for kind in [
        "show", "restart", "start", "send", "output", "remove", "list",
    ] {
        transact(&s.state, |st| {
            st.faults = Some(json!({kind: {"mode": "load_error", "count": 1}}));
        })
        .expect("set fault");
        let args: &[&str] = match kind {
            "show" => &["session", "show", ID, "--json"],
            "restart" => &["session", "restart", ID, "--json"],
            "start" => &["session", "start", ID, "--json"],
            "send" => &["session", "send", ID, "hi", "--json"],
            "output" => &["session", "output", ID, "--json"],
            "remove" => &["remove", ID, "--json"],
            _ => &["list", "--json"],
        };
        let (code, out, err) = s.call(args);
        assert_eq!((code, err.as_str()), (1, ""), "{kind}");
        if kind == "list" {
            assert_eq!(out, "Error: failed to load sessions: simulated\n");
            continue;
        }
        let v: Value = serde_json::from_str(&out).expect("JSON");
        let want = if kind == "remove" {
            "INVALID_OPERATION"
        } else {
            "NOT_FOUND"
        };
        assert_eq!(v["code"], want, "{kind}");
        assert!(v["error"]
            .as_str()
            .unwrap_or_default()
            .starts_with("failed to load sessions: "));
    }
    assert_eq!(s.session(ID).restarts, 0);
}

#[test]
fn remove_without_an_id_is_not_found_with_exit_1() {
    let s = sim(vec![session(ID, "worker-1", "running")]);
    let (code, out, _) = s.call(&["remove", "--json"]);
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!((code, v["code"].clone()), (1, json!("NOT_FOUND")));
    let (code, out, err) = s.call(&["remove"]);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (
            1,
            "Usage: agent-deck remove <id|title>\n",
            "Error: session ID or title is required\n"
        )
    );
}

fn hooked(sessions: Vec<SimSession>) -> (Sim, TempDir) {
    let s = sim(sessions);
    let hooks = tempfile::tempdir().expect("hooks dir");
    transact(&s.state, |st| st.read_hooks = true).expect("read_hooks");
    (s, hooks)
}

fn hook(dir: &TempDir, id: &str, status: &str, age: f64) {
    let body = json!({"status": status, "event": "Stop", "ts": (now() - age) as i64});
    fs::write(dir.path().join(format!("{id}.json")), body.to_string()).expect("write hook");
}

fn status_with_hooks(s: &Sim, hooks: &TempDir, id: &str) -> String {
    let env = SimEnv {
        hooks: Some(hooks.path().to_path_buf()),
        ..s.env()
    };
    let (code, out, _) = s.call_in(&env, &["session", "show", id, "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).expect("JSON");
    v["status"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn a_fresh_hook_moves_a_claude_status_and_dead_reads_error() {
    let (s, dir) = hooked(vec![session(ID, "c", "idle")]);
    for (hook_status, want) in [
        ("running", "running"),
        ("waiting", "waiting"),
        ("dead", "error"),
    ] {
        hook(&dir, ID, hook_status, 5.0);
        assert_eq!(status_with_hooks(&s, &dir, ID), want, "hook {hook_status}");
    }
    hook(&dir, ID, "dead", 121.0);
    assert_eq!(
        status_with_hooks(&s, &dir, ID),
        "idle",
        "a hook over 120 s old is ignored"
    );
}

#[test]
fn hooks_do_not_move_a_shell_a_crashed_session_or_a_state_without_read_hooks() {
    let mut shell = session(ID, "sh", "idle");
    shell.tool = Some("shell".into());
    let mut crashed = session("a0b1c2d3-1755899999", "gone", "running");
    crashed.tmux_alive = Some(false);
    let (s, dir) = hooked(vec![shell, crashed]);
    hook(&dir, ID, "dead", 1.0);
    hook(&dir, "a0b1c2d3-1755899999", "running", 1.0);
    assert_eq!(status_with_hooks(&s, &dir, ID), "idle");
    assert_eq!(status_with_hooks(&s, &dir, "gone"), "error");
    transact(&s.state, |st| {
        st.read_hooks = false;
        st.sessions[0].tool = None;
    })
    .expect("edit");
    assert_eq!(status_with_hooks(&s, &dir, ID), "idle", "hooks unread");
}

#[test]
fn a_dead_hook_outlives_a_restart_for_its_120_seconds() {
    let mut s0 = session(ID, "conductor-ops", "error");
    s0.claude_session_id = "c-1".into();
    let (s, dir) = hooked(vec![s0]);
    hook(&dir, ID, "dead", 10.0);
    let env = SimEnv {
        hooks: Some(dir.path().to_path_buf()),
        ..s.env()
    };
    let (code, _, _) = s.call_in(&env, &["session", "restart", ID, "--force"]);
    assert_eq!(code, 0);
    assert!(
        dir.path().join(format!("{ID}.json")).exists(),
        "restart keeps the hook"
    );
    assert_eq!(
        status_with_hooks(&s, &dir, ID),
        "error",
        "tmux alive, hook still dead"
    );
    hook(&dir, ID, "dead", 120.5);
    assert_eq!(status_with_hooks(&s, &dir, ID), "running");
}

/// A session in error whose tmux session is gone, so a start can run.
fn dead_session(id: &str, title: &str) -> SimSession {
    let mut s = session(id, title, "error");
    s.tmux_alive = Some(false);
    s
}

/// Moves the session's last start `secs` into the past: past the start
/// grace, still inside the freshness window.
fn started_seconds_ago(s: &Sim, secs: f64) {
    transact(&s.state, |st| {
        for x in &mut st.sessions {
            x.last_started = x.last_started.map(|t| t - secs);
        }
    })
    .expect("move last_started");
}

#[test]
fn without_a_status_writer_a_fresh_restart_is_skipped_even_when_dead() {
    let s = sim(vec![dead_session(ID, "worker-1")]);
    transact(&s.state, |st| st.status_writer = Some(false)).expect("flag");
    assert_eq!(s.call(&["session", "start", ID]).0, 0);
    started_seconds_ago(&s, 5.0);
    s.call(&["crash", ID]);
    assert_eq!(status_of(&s, ID), "error");
    let v = s.json(&["session", "restart", ID, "--json"]);
    let keys: Vec<&String> = v.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["id", "reason", "skipped", "success", "title"]);
    assert_eq!(v["skipped"], true);
    let reason = v["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("session is starting and was started ")
            && reason
                .ends_with("s ago (within 1m0s freshness window); use --force to restart anyway"),
        "{reason}"
    );
    assert_eq!(s.session(ID).restarts, 0);
    assert_eq!(s.call(&["session", "restart", ID, "--force"]).0, 0);
    assert_eq!(s.session(ID).restarts, 1);
}

#[test]
fn the_freshness_reason_prints_go_durations_and_the_window_in_force() {
    let reason = |s: &Sim| {
        let v = s.json(&["session", "restart", ID, "--json"]);
        v["reason"].as_str().unwrap_or_default().to_owned()
    };
    let s = sim(vec![session(ID, "worker-1", "running")]);
    transact(&s.state, |st| {
        st.sessions[0].last_started = Some(now() - 59.6)
    })
    .expect("age");
    assert!(
        reason(&s).contains("was started 1m0s ago (within 1m0s freshness window)"),
        "{}",
        reason(&s)
    );
    transact(&s.state, |st| {
        st.freshness_window_s = Some(5.0);
        st.sessions[0].last_started = Some(now() - 2.2);
    })
    .expect("window");
    assert!(
        reason(&s).contains("was started 2s ago (within 5s freshness window)"),
        "{}",
        reason(&s)
    );
    started_seconds_ago(&s, 3.0);
    let v = s.json(&["session", "restart", ID, "--json"]);
    assert_eq!(
        v.get("skipped"),
        None,
        "past the window in force: restarted"
    );
}

#[test]
fn with_a_status_writer_the_guard_reads_the_live_status() {
    let s = sim(vec![dead_session(ID, "worker-1")]);
    assert_eq!(s.call(&["session", "start", ID]).0, 0);
    started_seconds_ago(&s, 5.0);
    s.call(&["crash", ID]);
    let v = s.json(&["session", "restart", ID, "--json"]);
    assert_eq!(v.get("skipped"), None, "dead now: restarted");
    let v = s.json(&["session", "restart", ID, "--json"]);
    assert_eq!(
        v["skipped"], true,
        "running and restarted just now: skipped"
    );
    assert!(v["reason"]
        .as_str()
        .unwrap_or_default()
        .starts_with("session is running and was started 0s ago"));
    let mut s1 = session("a0b1c2d3-1755899999", "old", "running");
    s1.last_started = Some(now() - 61.0);
    s1.on_restart = Some(OnRestart::Ok);
    let s = sim(vec![s1]);
    assert_eq!(
        s.json(&["session", "restart", "old", "--json"])
            .get("skipped"),
        None
    );
}

#[test]
fn profiles_exist_null_reads_false_but_absent_reads_true() {
    let s = sim(vec![]);
    fs::write(&s.state, r#"{"profiles_exist": null}"#).expect("write state");
    assert_eq!(s.call(&["list", "--all"]).1, "No profiles found.\n");
    fs::write(&s.state, "{}").expect("write state");
    assert_eq!(s.call(&["list", "--all", "--json"]).1, "null\n");
}

/// A session in error whose restarts and starts fail saying `reason`, in a
/// simulator answering as `version` (None: 1.14.0).
fn spawn_failing(reason: &str, came_up: bool, version: Option<&str>) -> Sim {
    let mut s0 = session(ID, "conductor-ops", "error");
    s0.on_restart = Some(OnRestart::Fail);
    s0.on_start = Some(OnStart::Fail);
    s0.spawn_failure = Some(super::state::SpawnFailure {
        reason: reason.into(),
        dying_output: "No conversation found to continue\n".into(),
        elapsed_ms: Some(980),
        came_up,
    });
    let s = sim(vec![s0]);
    transact(&s.state, |st| st.version = version.map(str::to_owned)).expect("write state");
    s
}

#[test]
fn from_1_16_10_a_spawn_that_died_fast_answers_its_reason_and_dying_output() {
    for verb in ["restart", "start"] {
        let s = spawn_failing("spawn_died_fast", false, Some(NEWEST));
        let (code, out, err) = s.call(&["session", verb, ID, "--json"]);
        assert_eq!((code, err.as_str()), (1, ""), "{out}");
        let v: Value = serde_json::from_str(&out).expect("stdout is JSON");
        assert_eq!(v["success"], false);
        assert_eq!(v["code"], "INVALID_OPERATION");
        assert_eq!(
            (v["id"].as_str(), v["title"].as_str()),
            (Some(ID), Some("conductor-ops"))
        );
        assert_eq!(v["reason"], "spawn_died_fast");
        assert_eq!(v["spawn_failure"]["elapsed_ms"], 980);
        assert_eq!(v["spawn_failure"]["reason"], "spawn_died_fast");
        assert_eq!(
            v["spawn_failure"]["dying_output"],
            "No conversation found to continue\n"
        );
        let tmux = v["tmux"].as_str().expect("tmux");
        let error = v["error"].as_str().expect("error");
        assert_eq!(
            error,
            format!("failed to {verb} session: tmux session \"{tmux}\" is gone: spawn_died_fast (exited after 980ms): No conversation found to continue")
        );
        assert_eq!(status_of(&s, ID), "error", "{verb}");
        assert_eq!(s.session(ID).tmux_alive, Some(false));
        // Human mode: the error line on stderr.
        let (code, out, err) = s.call(&["session", verb, ID]);
        assert_eq!((code, out.as_str()), (1, ""));
        assert!(
            err.starts_with(&format!("Error: failed to {verb} session: tmux session")),
            "{err}"
        );
    }
}

#[test]
fn from_1_16_10_each_spawn_reason_has_its_own_keys() {
    let s = spawn_failing("tmux_session_missing", false, Some(NEWEST));
    let v: Value = serde_json::from_str(&s.call(&["session", "restart", ID, "--json"]).1).unwrap();
    assert_eq!(v["reason"], "tmux_session_missing");
    assert!(
        v["tmux"].is_string() && v.get("spawn_failure").is_none(),
        "{v}"
    );
    let s = spawn_failing("tmux_start_failed", false, Some(NEWEST));
    let v: Value = serde_json::from_str(&s.call(&["session", "start", ID, "--json"]).1).unwrap();
    assert_eq!(v["reason"], "tmux_start_failed");
    assert_eq!(v["spawn_failure"]["reason"], "tmux_start_failed");
    for came_up in [false, true] {
        let s = spawn_failing("spawn_unverified", came_up, Some(NEWEST));
        let (code, out, _) = s.call(&["session", "restart", ID, "--json"]);
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!((code, v["reason"].as_str()), (1, Some("spawn_unverified")));
        assert!(
            v.get("tmux").is_none() && v.get("spawn_failure").is_none(),
            "{v}"
        );
        let status = if came_up { "running" } else { "error" };
        assert_eq!(status_of(&s, ID), status, "came_up {came_up}");
    }
}

#[test]
fn before_1_16_10_a_failed_spawn_answers_as_1_14_0_does() {
    for version in [None, Some("1.16.9")] {
        let s = spawn_failing("spawn_died_fast", false, version);
        for verb in ["restart", "start"] {
            let (code, out, err) = s.call(&["session", verb, ID, "--json"]);
            assert_eq!((code, err.as_str()), (1, ""));
            let v: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(
                v,
                json!({"code": "INVALID_OPERATION", "success": false,
                       "error": format!("failed to {verb} session: simulated")}),
                "{version:?}"
            );
        }
        assert_eq!(s.session(ID).tmux_alive, None, "nothing changed");
    }
}

/// The simulator at `version` (state key `version`).
fn at(s: &Sim, version: &str) {
    transact(&s.state, |st| st.version = Some(version.into())).expect("write state");
}

#[test]
fn primary_is_an_unknown_flag_before_1_16_11_and_a_pane_sample_after() {
    let s = sim(vec![session(ID, "conductor-ops", "running")]);
    transact(&s.state, |st| st.sessions[0].pane = Some("❯ ".into())).expect("write state");
    let args = ["session", "output", ID, "--pane", "--primary", "-q"];
    let (code, out, err) = s.call(&args);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.starts_with("flag provided but not defined: -primary\n"),
        "{err}"
    );
    at(&s, "1.16.10");
    assert_eq!(s.call(&args).0, 2);
    at(&s, "1.16.11");
    let (code, out, err) = s.call(&args);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    assert!(out.starts_with("❯"), "{out}");
}

#[test]
fn empty_lists_are_an_empty_array_from_1_16_11() {
    let s = sim(vec![session(ID, "conductor-ops", "running")]);
    assert!(s
        .call(&["-p", "work", "list", "--json"])
        .1
        .starts_with("No sessions found in profile 'work'"));
    at(&s, "1.16.11");
    assert_eq!(s.call(&["-p", "work", "list", "--json"]).1, "[]\n");
    transact(&s.state, |st| st.sessions.clear()).expect("write state");
    assert_eq!(s.call(&["list", "--all", "--json"]).1, "[]\n");
    at(&s, "1.16.10");
    assert_eq!(s.call(&["list", "--all", "--json"]).1, "null\n");
    transact(&s.state, |st| st.profiles_exist = false).expect("write state");
    at(&s, "1.16.26");
    assert_eq!(
        s.call(&["list", "--all", "--json"]).1,
        "No profiles found.\n"
    );
}

#[test]
fn rows_carry_the_keys_of_the_release_that_added_them() {
    let mut codex = session("a0b1c2d3-1755899999", "worker", "running");
    codex.tool = Some("codex".into());
    let s = sim(vec![session(ID, "conductor-ops", "running"), codex]);
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    let old = s.json(&["list", "--json"]);
    assert!(!keys(&old[0]).contains(&"account".to_owned()));
    let show_old = s.json(&["session", "show", ID, "--json"]);
    assert!(show_old.get("hook_status").is_none());
    at(&s, "1.16.11");
    let row = &s.json(&["list", "--json"])[0];
    for k in ["account", "last_activity_at", "viewers"] {
        assert!(row.get(k).is_some(), "{k}: {row}");
    }
    assert!(row.get("status_source").is_none() && row.get("background_work").is_none());
    let all = s.json(&["list", "--all", "--json"]);
    assert!(all[0].get("account").is_some(), "{all}");
    assert!(all[1].get("codex_session_id").is_some(), "{all}");
    let show = s.json(&["session", "show", ID, "--json"]);
    for k in [
        "account",
        "order",
        "pin",
        "hook_status",
        "hook_status_fresh",
        "wrapper",
    ] {
        assert!(show.get(k).is_some(), "{k}: {show}");
    }
    at(&s, "1.16.26");
    let row = &s.json(&["list", "--json"])[0];
    assert!(
        row["background_work"].is_object() && row["status_source"].is_string(),
        "{row}"
    );
    assert!(s
        .json(&["session", "show", ID, "--json"])
        .get("background_work")
        .is_some());
}

#[test]
fn both_store_roots_print_the_warning_on_every_call_from_1_16_14() {
    let s = sim(vec![session(ID, "conductor-ops", "running")]);
    transact(&s.state, |st| st.both_store_roots = true).expect("write state");
    assert_eq!(
        s.call(&["list", "--all", "--json"]).2,
        "",
        "1.14.0 has no such rule"
    );
    at(&s, "1.16.14");
    for args in [
        &["list", "--all", "--json"][..],
        &["version"],
        &["session", "show", ID, "--json"],
    ] {
        let (code, _, err) = s.call(args);
        assert_eq!(code, 0, "{args:?}");
        assert!(
            err.starts_with("WARNING: profile stores exist under both "),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// A Codex session at its usage-limit banner, as 1.16.11+ reads it.
fn codex_at_limit() -> SimSession {
    SimSession {
        tool: Some("codex".into()),
        substate: "usage-limit".into(),
        substate_detail: "try again at Oct 10th, 2026 8:03 AM".into(),
        ..session(ID, "conductor-codex", "error")
    }
}

#[test]
fn substate_detail_is_printed_from_1_16_11_on_and_never_before() {
    let s = sim(vec![codex_at_limit()]);
    let list = s.json(&["list", "--json"]);
    assert_eq!(list[0]["substate"], "usage-limit");
    assert!(
        list[0].get("substate_detail").is_none(),
        "1.14.0 has no such key"
    );
    let show = s.json(&["session", "show", ID, "--json"]);
    assert!(show.get("substate_detail").is_none());
    assert_eq!(
        (show["tool"].as_str(), show["status"].as_str()),
        (Some("codex"), Some("error"))
    );
    transact(&s.state, |st| st.version = Some(NEWEST.into())).expect("write state");
    let list = s.json(&["list", "--json"]);
    assert_eq!(
        list[0]["substate_detail"],
        "try again at Oct 10th, 2026 8:03 AM"
    );
    let keys: Vec<&String> = list[0].as_object().unwrap().keys().collect();
    let at = |k: &str| keys.iter().position(|x| *x == k).unwrap();
    assert_eq!(at("substate_detail"), at("substate") + 1, "beside substate");
    let show = s.json(&["session", "show", ID, "--json"]);
    assert_eq!(
        show["substate_detail"],
        "try again at Oct 10th, 2026 8:03 AM"
    );
    // Empty: omitted, as Go's omitempty does.
    transact(&s.state, |st| st.sessions[0].substate_detail.clear()).expect("write state");
    assert!(s.json(&["list", "--json"])[0]
        .get("substate_detail")
        .is_none());
    assert!(s
        .json(&["session", "show", ID, "--json"])
        .get("substate_detail")
        .is_none());
}

// The simulator as tmux, and the pane host's decisions.

const PANES_FORMAT: &str =
    "#{session_name}\t#{window_index}\t#{pane_index}\t#{pane_pid}\t#{pane_dead}\t#{pid}";

fn live(id: &str, tmux: &str, started: f64) -> SimSession {
    let mut s = session(id, id, "running");
    s.tmux_session = tmux.into();
    s.last_started = Some(started);
    s
}

/// This process plays the pane host: a pid that is alive.
fn host_pid() -> u32 {
    std::process::id()
}

fn hosted(s: &Sim, panes: &[(&str, u32)]) {
    hosted_by(s, host_pid(), panes);
}

fn hosted_by(s: &Sim, pid: u32, panes: &[(&str, u32)]) {
    transact(&s.state, |st| {
        st.pane_host = Some(PaneHost {
            pid,
            panes: panes.iter().map(|(n, p)| (n.to_string(), *p)).collect(),
            orphans: BTreeMap::new(),
        })
    })
    .expect("write state");
}

fn uid() -> u32 {
    rustix::process::getuid().as_raw()
}

#[test]
fn expand_fills_known_variables_and_empties_the_rest() {
    let var = |v: &str| match v {
        "a" => Some("1"),
        "bb" => Some("two"),
        _ => None,
    };
    assert_eq!(expand("#{a}|#{bb}#{a}", var), "1|two1");
    assert_eq!(expand("x#{nope}y", var), "xy", "unknown: empty");
    assert_eq!(expand("no vars", var), "no vars");
    assert_eq!(expand("#{a} #{open", var), "1 #{open", "unclosed kept");
    assert_eq!(expand("# {a} #a", var), "# {a} #a");
}

#[test]
fn list_panes_prints_a_line_per_hosted_pane_with_the_server_pid() {
    let s = sim(vec![live(ID, "agentdeck_b_2", 1.0)]);
    hosted(&s, &[("agentdeck_b_2", 501), ("agentdeck_a_1", 500)]);
    let (code, out, err) = s.call(&[
        "tmux",
        "-u",
        "-L",
        "S",
        "list-panes",
        "-a",
        "-F",
        PANES_FORMAT,
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    let h = host_pid();
    assert_eq!(
        out,
        format!("agentdeck_a_1\t0\t0\t500\t0\t{h}\nagentdeck_b_2\t0\t0\t501\t0\t{h}\n")
    );
    // Flags in either order; an unknown variable is empty.
    let (code, out, _) = s.call(&["tmux", "list-panes", "-F", "#{pane_pid}:#{x}", "-a"]);
    assert_eq!((code, out.as_str()), (0, "500:\n501:\n"));
    assert_eq!(
        s.call(&["tmux", "display", "-p", "#{pid}"]),
        (0, format!("{h}\n"), String::new())
    );
    let (_, out, _) = s.call(&[
        "tmux",
        "-L",
        "S",
        "display-message",
        "-p",
        "[#{pid}]#{session_name}",
    ]);
    assert_eq!(out, format!("[{h}]\n"));
    // Logged as calls, as the drill's kill is.
    let logged = fs::read_to_string(&s.log).unwrap_or_default();
    assert_eq!(logged.lines().count(), 4, "{logged}");
}

#[test]
fn without_a_pane_host_or_with_the_server_down_tmux_finds_no_server() {
    let s = sim(vec![live(ID, "agentdeck_a_1", 1.0)]);
    let list = ["tmux", "-u", "list-panes", "-a", "-F", "#{pid}"];
    let nothing = format!("no server running on /tmp/tmux-{}/default\n", uid());
    assert_eq!(s.call(&list), (1, String::new(), nothing.clone()));
    assert_eq!(
        s.call(&["tmux", "display", "-p", "#{pid}"]),
        (1, String::new(), nothing)
    );
    let env = SimEnv {
        tmux_tmpdir: Some(PathBuf::from("/run/t")),
        ..s.env()
    };
    let socketed = ["tmux", "-L", "wd", "list-panes", "-a", "-F", "#{pid}"];
    let expected = format!("no server running on /run/t/tmux-{}/wd\n", uid());
    assert_eq!(s.call_in(&env, &socketed), (1, String::new(), expected));
    hosted(&s, &[("agentdeck_a_1", 500)]);
    assert_eq!(s.call(&list).0, 0);
    transact(&s.state, |st| st.tmux_server = Some("down".into())).expect("write state");
    let (code, out, err) = s.call(&list);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.starts_with("no server running on "), "{err}");
    // kill-session too finds no server, and changes nothing.
    let before = std::fs::read_to_string(&s.state).expect("state");
    let (code, _, err) = s.call(&["tmux", "kill-session", "-t", "=agentdeck_a_1"]);
    assert_eq!(code, 1);
    assert!(err.starts_with("no server running on "), "{err}");
    assert_eq!(std::fs::read_to_string(&s.state).expect("state"), before);
    // The server took the session with it: agent-deck reads a crash.
    assert_eq!(s.session(ID).tmux_alive, Some(false));
    let (code, out, _) = s.call(&["session", "show", ID, "--json"]);
    assert_eq!(code, 0);
    assert!(out.contains("\"status\": \"error\""), "{out}");
}

#[test]
fn a_recorded_pane_host_that_is_gone_is_no_server() {
    let s = sim(vec![live(ID, "agentdeck_a_1", 1.0)]);
    // Pid 0 is no process: the record of a host that was killed outright.
    hosted_by(&s, 0, &[("agentdeck_a_1", 500)]);
    let (code, out, err) = s.call(&["tmux", "list-panes", "-a", "-F", "#{pane_pid}"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.starts_with("no server running on "), "{err}");
    assert_eq!(s.call(&["tmux", "display", "-p", "#{pid}"]).0, 1);
    assert_eq!(
        s.call(&["tmux", "kill-session", "-t", "agentdeck_a_1"]).0,
        1
    );
    assert_eq!(s.session(ID).tmux_alive, None, "nothing killed");
}

#[test]
fn tmux_usage_errors_keep_their_words() {
    let s = sim(vec![live(ID, "agentdeck_a_1", 1.0)]);
    let usage = "usage: tmux [-L socket] kill-session -t name\n";
    assert_eq!(
        s.call(&["tmux", "kill-session"]),
        (1, String::new(), usage.into())
    );
    assert_eq!(
        s.call(&["tmux", "-L", "x", "rename", "-t", "y"]),
        (1, String::new(), "unknown command: rename\n".into())
    );
    let (code, _, err) = s.call(&["tmux", "list-panes", "-F"]);
    assert_eq!(
        (code, err.as_str()),
        (1, "usage: tmux [-L socket] list-panes -a -F format\n")
    );
    assert_eq!(s.call(&["tmux", "display", "#{pid}"]).0, 1);
    // `-u` is taken before the command, as tmux takes it.
    assert_eq!(
        s.call(&[
            "tmux",
            "-u",
            "-L",
            "x",
            "kill-session",
            "-t",
            "=agentdeck_a_1"
        ])
        .0,
        0
    );
    assert_eq!(s.session(ID).tmux_alive, Some(false));
}

#[test]
fn new_keys_are_not_written_into_a_state_that_has_none() {
    let s = sim(vec![live(ID, "agentdeck_a_1", 1.0)]);
    transact(&s.state, |st| st.sessions[0].restarts = 1).expect("write state");
    let text = fs::read_to_string(&s.state).expect("read state");
    for key in ["pane_host", "tmux_server", "ignores_sighup", "orphans"] {
        assert!(!text.contains(key), "{key} written: {text}");
    }
}

fn child(started: f64) -> Held {
    Held {
        started: Some(started),
        exited: false,
    }
}

fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn state_of(sessions: Vec<SimSession>) -> SimState {
    SimState {
        sessions,
        ..SimState::default()
    }
}

#[test]
fn reconcile_spawns_a_child_per_live_named_session_only() {
    let mut never = live("n", "agentdeck_n_1", 1.0);
    never.started = Some(false);
    let mut crashed = live("c", "agentdeck_c_1", 1.0);
    crashed.tmux_alive = Some(false);
    let mut stopped = live("s", "agentdeck_s_1", 1.0);
    stopped.status = Some("stopped".into());
    let unnamed = live("u", "", 1.0);
    let twin = live("t", "agentdeck_a_1", 9.0);
    let st = state_of(vec![
        live("a", "agentdeck_a_1", 1.0),
        never,
        crashed,
        stopped,
        unnamed,
        twin,
    ]);
    let plan = reconcile(&st, &BTreeMap::new(), &BTreeSet::new());
    assert_eq!(
        plan,
        Plan {
            spawn: vec![("agentdeck_a_1".into(), Some(1.0))],
            ..Plan::default()
        },
        "the first session of a name owns it"
    );
}

#[test]
fn reconcile_keeps_a_child_until_its_session_restarts_or_dies() {
    let panes = BTreeMap::from([("agentdeck_a_1".to_string(), child(1.0))]);
    let st = state_of(vec![live("a", "agentdeck_a_1", 1.0)]);
    assert_eq!(
        reconcile(&st, &panes, &BTreeSet::new()),
        Plan::default(),
        "nothing to do"
    );
    // A restart that keeps the name: the old child goes, a new one comes.
    let st = state_of(vec![live("a", "agentdeck_a_1", 2.0)]);
    assert_eq!(
        reconcile(&st, &panes, &BTreeSet::new()),
        Plan {
            kill: names(&["agentdeck_a_1"]),
            spawn: vec![("agentdeck_a_1".into(), Some(2.0))],
            ..Plan::default()
        }
    );
    // One that renames: the old name's child goes, the new name gets one.
    let st = state_of(vec![live("a", "agentdeck_a_2", 2.0)]);
    assert_eq!(
        reconcile(&st, &panes, &BTreeSet::new()),
        Plan {
            kill: names(&["agentdeck_a_1"]),
            spawn: vec![("agentdeck_a_2".into(), Some(2.0))],
            ..Plan::default()
        }
    );
    // Crashed, stopped, removed: killed.
    let mut crashed = live("a", "agentdeck_a_1", 1.0);
    crashed.tmux_alive = Some(false);
    let mut stopped = live("a", "agentdeck_a_1", 1.0);
    stopped.status = Some("stopped".into());
    for st in [
        state_of(vec![crashed]),
        state_of(vec![stopped]),
        state_of(vec![]),
    ] {
        let plan = reconcile(&st, &panes, &BTreeSet::new());
        assert_eq!(
            plan,
            Plan {
                kill: names(&["agentdeck_a_1"]),
                ..Plan::default()
            }
        );
    }
}

#[test]
fn reconcile_orphans_a_sighup_ignoring_agent_whose_tmux_session_was_killed() {
    let panes = BTreeMap::from([("agentdeck_a_1".to_string(), child(1.0))]);
    let mut killed = live("a", "agentdeck_a_1", 1.0);
    killed.ignores_sighup = true;
    killed.tmux_alive = Some(false);
    let st = state_of(vec![killed.clone()]);
    let orphaned = Plan {
        orphan: names(&["agentdeck_a_1"]),
        ..Plan::default()
    };
    assert_eq!(reconcile(&st, &panes, &BTreeSet::new()), orphaned);
    // An older orphan of that name gives way.
    let older = BTreeSet::from(["agentdeck_a_1".to_string()]);
    assert_eq!(
        reconcile(&st, &panes, &older),
        Plan {
            kill_orphans: names(&["agentdeck_a_1"]),
            ..orphaned
        }
    );
    // A stop ends it all the same.
    let mut stopped = killed.clone();
    stopped.status = Some("stopped".into());
    let plan = reconcile(&state_of(vec![stopped]), &panes, &BTreeSet::new());
    assert_eq!(plan.kill, names(&["agentdeck_a_1"]));
    // An orphan outlives its session's start under the same name.
    let st = state_of(vec![live("a", "agentdeck_a_1", 2.0)]);
    let plan = reconcile(&st, &BTreeMap::new(), &older);
    assert!(plan.kill_orphans.is_empty(), "{plan:?}");
}

#[test]
fn reconcile_kills_everything_when_the_server_is_down() {
    let panes = BTreeMap::from([
        ("agentdeck_a_1".to_string(), child(1.0)),
        ("agentdeck_b_1".to_string(), child(1.0)),
    ]);
    let mut killed = live("b", "agentdeck_b_1", 1.0);
    killed.ignores_sighup = true;
    killed.tmux_alive = Some(false);
    let mut st = state_of(vec![live("a", "agentdeck_a_1", 1.0), killed]);
    st.tmux_server = Some("down".into());
    let orphans = BTreeSet::from(["agentdeck_o_1".to_string()]);
    assert_eq!(
        reconcile(&st, &panes, &orphans),
        Plan {
            kill_orphans: names(&["agentdeck_o_1"]),
            kill: names(&["agentdeck_a_1", "agentdeck_b_1"]),
            ..Plan::default()
        }
    );
    st.tmux_server = Some("up".into());
    assert_eq!(reconcile(&st, &panes, &orphans).kill, Vec::<String>::new());
}

#[test]
fn reconcile_takes_a_child_that_exited_as_its_tmux_session_gone() {
    let exited = Held {
        started: Some(1.0),
        exited: true,
    };
    let panes = BTreeMap::from([("agentdeck_a_1".to_string(), exited)]);
    let st = state_of(vec![live("a", "agentdeck_a_1", 1.0)]);
    assert_eq!(
        reconcile(&st, &panes, &BTreeSet::new()),
        Plan {
            kill: names(&["agentdeck_a_1"]),
            gone: names(&["agentdeck_a_1"]),
            ..Plan::default()
        },
        "not respawned: the agent died"
    );
    // Restarted meanwhile: a new child, no death.
    let st = state_of(vec![live("a", "agentdeck_a_1", 2.0)]);
    let plan = reconcile(&st, &panes, &BTreeSet::new());
    assert_eq!(plan.gone, Vec::<String>::new());
    assert_eq!(plan.spawn, vec![("agentdeck_a_1".into(), Some(2.0))]);
    // An exited child of a SIGHUP-ignoring agent is no orphan.
    let mut killed = live("a", "agentdeck_a_1", 1.0);
    killed.ignores_sighup = true;
    killed.tmux_alive = Some(false);
    let plan = reconcile(&state_of(vec![killed]), &panes, &BTreeSet::new());
    assert_eq!(
        (plan.kill, plan.orphan),
        (names(&["agentdeck_a_1"]), vec![])
    );
}

/// A Claude conductor whose context window is full, ending its turns on `how`.
fn full(how: Full) -> Sim {
    sim(vec![SimSession {
        full: Some(how),
        pane: Some("frozen pane".into()),
        claude_session_id: "c1a0de00-old".into(),
        substate: "idle-at-empty-prompt".into(),
        ..session(ID, "conductor-ops", "running")
    }])
}

fn pane_of(s: &Sim) -> String {
    s.call(&["session", "output", ID, "--pane", "-q"]).1
}

fn transcript_of(s: &Sim) -> String {
    s.call(&["session", "output", ID, "-q"]).1
}

fn send_json(s: &Sim, message: &str) -> (i32, Value) {
    let (code, out, err) = s.call(&["session", "send", ID, message, "--no-wait", "--json"]);
    assert_eq!(err, "", "{message}");
    (code, serde_json::from_str(&out).expect("JSON"))
}

fn reading(s: &Sim) -> (String, String) {
    let v = s.json(&["session", "show", ID, "--json"]);
    let text = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
    (text("status"), text("substate"))
}

const LIMIT_TURN: &str = "❯ Check the sessions in your group.\n⏺ Reading the rest of the logs.\n  \
⎿  Context limit reached · /compact or /clear to continue\n❯ \n";
const COMPACTION: &str = "  ⎿  Error: Error during compaction: Error: Conversation too long. \
Press esc twice to go up a few messages and try again.";
const COMPACTED: &str = "══ Conversation compacted · ctrl+o for history ══\n  ⎿  Compacted \
(ctrl+o to see full summary)\n";
const THRASHING: &str = "Autocompact is thrashing: the context refilled to the limit within 3 \
turns of the previous compact, 3 times in a row. A file being read or a tool output is likely \
too large for the context window. Try reading in smaller chunks, or use /clear to start fresh.";

/// The error turn, its empty prompt taken by what is typed next.
fn typed_over() -> &'static str {
    LIMIT_TURN.trim_end_matches("❯ \n")
}

#[test]
fn a_full_session_shows_its_error_turn_and_a_read_does_not_grow_the_pane() {
    let s = full(Full::Limit);
    assert_eq!(pane_of(&s), format!("frozen pane\n{LIMIT_TURN}"));
    assert_eq!(pane_of(&s), format!("frozen pane\n{LIMIT_TURN}"));
    assert_eq!(s.session(ID).pane.as_deref(), Some("frozen pane"));
    assert_eq!(transcript_of(&s), "Prompt is too long\n");
    let tail = |how| pane_of(&full(how)).lines().rev().nth(1).map(str::to_owned);
    assert_eq!(
        tail(Full::Prompt).as_deref(),
        Some("  ⎿  Prompt is too long")
    );
    assert_eq!(tail(Full::Compaction).as_deref(), Some(COMPACTION));
    assert_eq!(tail(Full::Thrashing), Some(format!("  ⎿  {THRASHING}")));
    assert_eq!(
        transcript_of(&full(Full::Thrashing)),
        format!("{THRASHING}\n")
    );
    // A transcript the test set is what it reads; `""` is not full.
    transact(&s.state, |st| st.sessions[0].transcript = "mine".into()).expect("state");
    assert_eq!(transcript_of(&s), "mine\n");
    let blank: SimSession = serde_json::from_value(json!({"id": ID, "full": ""})).expect("");
    assert_eq!(blank.full, None);
}

#[test]
fn clear_wipes_the_screen_moves_the_id_at_once_and_answers_no_evidence() {
    let s = full(Full::Limit);
    let (code, v) = send_json(&s, "/clear");
    assert_eq!(code, 1);
    assert_eq!(
        (&v["code"], &v["delivery"], &v["submitted"], &v["success"]),
        (
            &json!("DELIVERY_FAILED"),
            &json!("no_evidence"),
            &json!(false),
            &json!(false)
        )
    );
    assert!(v["error"]
        .as_str()
        .is_some_and(|e| e.contains("no evidence of delivery after 30 checks")));
    let after = s.session(ID);
    assert_eq!(
        (after.pane.as_deref(), after.full, after.sent),
        (Some("❯ \n"), None, vec!["/clear".to_string()])
    );
    assert_eq!(transcript_of(&s), "\n");
    let id = s.json(&["session", "show", ID, "--json"])["claude_session_id"].clone();
    assert!(
        id.as_str()
            .is_some_and(|id| id.len() == 36 && id != "c1a0de00-old"),
        "{id}"
    );
    assert_eq!(
        reading(&s),
        ("waiting".into(), "idle-at-empty-prompt".into())
    );
}

#[test]
fn clear_delivery_submitted_answers_the_minority_exit_0() {
    let s = full(Full::Prompt);
    transact(&s.state, |st| {
        st.sessions[0].clear_delivery = Some(Delivery::Submitted)
    })
    .expect("state");
    let (code, v) = send_json(&s, "/clear");
    assert_eq!((code, &v["delivery"]), (0, &json!("submitted")));
    assert_eq!(s.session(ID).full, None);
}

fn compacting(on: OnCompact) -> Sim {
    let s = full(Full::Limit);
    transact(&s.state, |st| st.sessions[0].on_compact = Some(on)).expect("state");
    let (code, v) = send_json(&s, "/compact");
    assert_eq!((code, &v["delivery"]), (0, &json!("submitted")), "{on:?}");
    s
}

#[test]
fn a_compact_that_works_wipes_to_the_compacted_lines_and_ends_the_full_state() {
    let s = compacting(OnCompact::Compacts);
    assert_eq!(pane_of(&s), format!("{COMPACTED}❯ \n"));
    assert_eq!(s.session(ID).full, None);
    assert_eq!(
        transcript_of(&s),
        "Prompt is too long\n",
        "no new assistant record"
    );
    assert_eq!(
        reading(&s),
        ("waiting".into(), "idle-at-empty-prompt".into())
    );
}

#[test]
fn a_compact_that_fails_stays_full_on_the_compaction_error() {
    let s = compacting(OnCompact::Fails);
    let want = format!(
        "frozen pane\n{}❯ /compact\n{COMPACTION}\n❯ \n",
        typed_over()
    );
    assert_eq!(pane_of(&s), want);
    assert_eq!(pane_of(&s), want, "a read adds nothing");
    assert_eq!(s.session(ID).full, Some(Full::Compaction));
    assert_eq!(transcript_of(&s), "Prompt is too long\n");
    assert_eq!(
        reading(&s),
        ("running".into(), "idle-at-empty-prompt".into())
    );
}

#[test]
fn a_compact_that_hangs_shows_the_busy_line_for_good() {
    let s = compacting(OnCompact::Hangs);
    let want = format!(
        "frozen pane\n{}❯ /compact\n✻ Compacting conversation… (3s · esc to interrupt)\n",
        typed_over()
    );
    assert_eq!(pane_of(&s), want);
    assert_eq!(pane_of(&s), want, "a read adds nothing");
    assert_eq!(s.session(ID).full, Some(Full::Limit));
    assert_eq!(reading(&s).0, "running");
}

#[test]
fn any_other_message_to_a_full_session_fails_the_same_way() {
    let s = full(Full::Limit);
    let (code, v) = send_json(&s, "Heartbeat: check your group.");
    assert_eq!((code, &v["delivery"]), (0, &json!("submitted")));
    let again = LIMIT_TURN.replace(
        "Check the sessions in your group.",
        "Heartbeat: check your group.",
    );
    assert_eq!(pane_of(&s), format!("frozen pane\n{}{again}", typed_over()));
    assert_eq!(transcript_of(&s), "Prompt is too long\n");
    assert_eq!(s.session(ID).full, Some(Full::Limit));
}

#[test]
fn after_a_clear_or_a_compact_a_message_gets_a_normal_turn() {
    for (via, before) in [("/clear", ""), ("/compact", COMPACTED)] {
        let s = full(Full::Limit);
        send_json(&s, via);
        let (code, v) = send_json(&s, "Run your Startup Checklist.");
        assert_eq!((code, &v["delivery"]), (0, &json!("submitted")), "{via}");
        assert_eq!(
            pane_of(&s),
            format!("{before}❯ Run your Startup Checklist.\n⏺ Resumed.\n❯ \n"),
            "{via}"
        );
        assert_eq!(transcript_of(&s), "Resumed.\n", "{via}");
    }
}

#[test]
fn session_set_stores_a_claude_session_id_and_names_the_old_one() {
    let mut s = session(ID, "conductor-ops", "waiting");
    s.claude_session_id = "old-id".into();
    let sim = sim(vec![s]);
    let (code, out, err) = sim.call(&["session", "set", ID, "claude-session-id", "new-id"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(r#"Updated claude-session-id: "old-id" -> "new-id""#),
        "{out}"
    );
    assert_eq!(sim.session(ID).claude_session_id, "new-id");
    let (code, _, _) = sim.call(&["session", "set", ID, "title", "x"]);
    assert_eq!(code, 1, "only the field the watchdog sets");
}

#[test]
fn a_send_answered_no_evidence_still_takes_its_turn() {
    let mut s = session(ID, "conductor-ops", "idle");
    s.substate = "usage-limit".into();
    s.on_send = Some(OnSend::NoEvidence);
    let sim = sim(vec![s]);
    let (code, out, _) = sim.call(&["session", "send", ID, "continue", "--no-wait", "--json"]);
    assert_eq!(code, 1, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (&v["delivery"], &v["code"]),
        (&json!("no_evidence"), &json!("DELIVERY_FAILED"))
    );
    assert_eq!(sim.session(ID).sent, ["continue"]);
    assert_eq!(sim.session(ID).substate, "", "the turn went through");
}
