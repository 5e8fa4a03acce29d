//! The agent-deck CLI contract as checks over a command runner, one set of
//! bodies for both backends: the simulator (`tests/integration/
//! sim_contract.rs`, in every `cargo test`) and the real CLI (`tests/live/
//! contract.rs`). A check builds nothing and reads no state file; the caller
//! sets up the fleet it names and passes a function that runs one
//! agent-deck command line. Where the two backends disagree, the real CLI
//! is right and the simulator is changed.

use std::os::unix::process::ExitStatusExt;
use std::process::Output;

use serde_json::{json, Value};

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub(crate) fn code(o: &Output) -> i32 {
    o.status
        .code()
        .unwrap_or_else(|| panic!("killed by signal {:?}", o.status.signal()))
}

pub(crate) fn parse(o: &Output) -> Value {
    serde_json::from_str(&stdout(o))
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {:?}", stdout(o)))
}

pub(crate) fn keys(v: &Value) -> Vec<String> {
    v.as_object().expect("object").keys().cloned().collect()
}

/// Runs one agent-deck command line (without the program name).
pub(crate) type Run<'a> = &'a dyn Fn(&[&str]) -> Output;

/// `session show --json` of a session that exists.
pub(crate) fn show_json(run: Run, id: &str) -> Value {
    let out = run(&["session", "show", id, "--json"]);
    assert_eq!(code(&out), 0, "show {id}: {}{}", stdout(&out), stderr(&out));
    parse(&out)
}

/// `id` is a running session of a tool that is not Claude-family: a send of
/// 12 or more characters arrives but answers `DELIVERY_FAILED` with
/// `"delivery":"typed"`, exit 1; a shorter one succeeds unverified.
pub(crate) fn check_non_claude_send_of_twelve_characters_answers_typed(run: Run, id: &str) {
    let title = show_json(run, id)["title"].clone();
    let out = run(&["session", "send", id, "twelve chars", "--no-wait", "--json"]);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert_eq!(stderr(&out), "", "a JSON error goes to stdout");
    let v = parse(&out);
    assert_eq!(v["code"], "DELIVERY_FAILED");
    assert_eq!(v["delivery"], "typed");
    assert_eq!(v["submitted"], false);
    assert_eq!(v["success"], false);
    assert_eq!(v["session_id"], id);
    assert_eq!(v["session_title"], title);
    let out = run(&["session", "send", id, "short one", "--no-wait", "--json"]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let v = parse(&out);
    assert_eq!(v["success"], true);
    assert_eq!(v["delivery"], "unverified");
    assert_eq!(v["submitted"], false);
}

/// The status `-p P list --json` prints for `id` (profile "default").
pub(crate) fn listed_status(run: Run, id: &str) -> Value {
    let out = run(&["list", "--json"]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    parse(&out)
        .as_array()
        .and_then(|a| a.iter().find(|e| e["id"] == id).cloned())
        .unwrap_or_else(|| panic!("{id} not listed"))["status"]
        .clone()
}

/// `never` was added and never started, `killed` was started and its tmux
/// session killed: both read `error` everywhere, with the same keys, and
/// both carry the tmux name `add` gave them.
pub(crate) fn check_never_started_reads_error_like_a_killed_one(
    run: Run,
    never: &str,
    killed: &str,
) {
    let (a, b) = (show_json(run, never), show_json(run, killed));
    assert_eq!(
        (a["status"].clone(), b["status"].clone()),
        (json!("error"), json!("error"))
    );
    assert_eq!(keys(&a), keys(&b), "the same keys");
    for v in [&a, &b] {
        let name = v["tmux_session"].as_str().unwrap_or_default();
        assert!(name.starts_with("agentdeck_"), "tmux name printed: {v}");
    }
    assert_eq!(listed_status(run, never), "error");
    assert_eq!(listed_status(run, killed), "error");
}

/// `id` is a session whose tmux session is gone (and which holds no auth
/// hold): it reads `error`, a send is "not running", the pane cannot be
/// captured, and `session start` brings it back.
/// `run` is a caller whose `TMUX` names another tmux server than the one
/// the fleet is on (the default socket, no `socket_name`): on 1.14.0 it
/// reads a live session and a dead one alike as `error`, in `show` and in
/// `list`.
pub(crate) fn check_a_caller_inside_another_tmux_server_reads_error(
    run: Run,
    alive: &str,
    dead: &str,
) {
    let read = |id: &str| (show_json(run, id)["status"].clone(), listed_status(run, id));
    let (alive, dead) = (read(alive), read(dead));
    let error = (json!("error"), json!("error"));
    assert_eq!(
        (&alive, &dead),
        (&error, &error),
        "(show, list) of the live one, then the dead one"
    );
}

pub(crate) fn check_gone_tmux_reads_error(run: Run, id: &str) {
    let title = show_json(run, id)["title"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(show_json(run, id)["status"], "error");
    assert_eq!(listed_status(run, id), "error");
    let out = run(&["session", "send", id, "hello", "--no-wait"]);
    assert_eq!(code(&out), 1);
    assert_eq!(
        stderr(&out),
        format!("Error: session '{title}' is not running\n")
    );
    let out = run(&["session", "output", id, "--pane", "--json"]);
    assert_eq!(code(&out), 1);
    let v = parse(&out);
    assert_eq!(v["code"], "INVALID_OPERATION");
    let err = v["error"].as_str().unwrap_or_default();
    assert!(err.starts_with("failed to capture pane: "), "{err}");
    let out = run(&["session", "start", id, "--json"]);
    assert_eq!(
        code(&out),
        0,
        "start works once tmux is gone: {}",
        stdout(&out)
    );
    assert_eq!(parse(&out)["success"], true);
}

/// `id` is a dead session of a tool outside the Claude family: `session
/// output` without `--pane` exits 1.
pub(crate) fn check_dead_non_claude_output_exits_1(run: Run, id: &str) {
    let out = run(&["session", "output", id, "--json"]);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    let v = parse(&out);
    assert_eq!(v["code"], "INVALID_OPERATION");
    let err = v["error"].as_str().unwrap_or_default();
    assert!(err.starts_with("failed to get response: "), "{err}");
}

/// `id` is a shell or custom-command session: a forced restart gives it a
/// new tmux name `agentdeck_<title>_<8 hex>`.
pub(crate) fn check_restart_gives_a_new_tmux_name(run: Run, id: &str) {
    let before = show_json(run, id)["tmux_session"].clone();
    let out = run(&["session", "restart", id, "--force", "--json"]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let after = show_json(run, id)["tmux_session"].clone();
    assert_ne!(before, after, "a new tmux session");
    let name = after.as_str().unwrap_or_default();
    let hex = name.rsplit('_').next().unwrap_or_default();
    assert!(
        name.starts_with("agentdeck_")
            && hex.len() == 8
            && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        "{name}"
    );
}

/// `id` was started under a minute ago, nothing but the CLI writes the
/// stored status, and its tmux session is gone since: the freshness guard
/// still skips a restart, exit 0, with exactly these keys.
pub(crate) fn check_fresh_restart_is_skipped_even_when_dead(run: Run, id: &str) {
    assert_eq!(show_json(run, id)["status"], "error");
    let out = run(&["session", "restart", id, "--json"]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let v = parse(&out);
    assert_eq!(keys(&v), ["id", "reason", "skipped", "success", "title"]);
    assert_eq!(
        (v["skipped"].clone(), v["success"].clone()),
        (json!(true), json!(true))
    );
    let reason = v["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("session is ")
            && reason
                .ends_with(" ago (within 1m0s freshness window); use --force to restart anyway"),
        "{reason}"
    );
}

/// `id`'s pane has printed far more than 2000 lines, the last being `last`:
/// `output --pane` holds the last 2000 lines plus the screen.
pub(crate) fn check_pane_is_the_last_2000_lines_plus_the_screen(run: Run, id: &str, last: &str) {
    let out = run(&["session", "output", id, "--pane", "-q"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        (2000..=2200).contains(&lines.len()),
        "{} lines",
        lines.len()
    );
    let tail = lines.iter().rev().find(|l| !l.trim().is_empty());
    assert_eq!(tail.copied(), Some(last));
}

/// `list --all --json` carries `profile` on every row and no status at all;
/// `-p P list --json` carries `status` and `archived`; `session show --json`
/// prints its always-present keys, sorted. `id` is a session of profile
/// "default".
pub(crate) fn check_list_and_show_shapes(run: Run, id: &str) {
    let out = run(&["list", "--all", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("[\n  {\n    \"id\": "), "indent 2");
    let all = parse(&out);
    let rows = all.as_array().expect("list --all is an array");
    assert!(rows.iter().any(|r| r["id"] == id), "{id} not in --all");
    let allowed = [
        "id",
        "parent_session_id",
        "parent_project_path",
        "title",
        "path",
        "group",
        "tool",
        "command",
        "profile",
        "created_at",
        "ssh_host",
        "ssh_remote_path",
    ];
    for row in rows {
        assert!(row["profile"].is_string(), "every row has a profile: {row}");
        for k in keys(row) {
            assert!(allowed.contains(&k.as_str()), "--all carries {k}: {row}");
        }
    }
    let out = run(&["-p", "default", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = parse(&out);
    let row = listed
        .as_array()
        .and_then(|a| a.iter().find(|r| r["id"] == id))
        .unwrap_or_else(|| panic!("{id} not in -p default list"))
        .clone();
    for k in ["status", "profile", "archived", "archived_at", "created_at"] {
        assert!(row.get(k).is_some(), "-p P list lacks {k}: {row}");
    }
    assert_eq!(row["profile"], "default");
    let show = show_json(run, id);
    let ks = keys(&show);
    let mut sorted = ks.clone();
    sorted.sort();
    assert_eq!(ks, sorted, "show's keys are sorted");
    for k in [
        "id",
        "title",
        "path",
        "group",
        "tool",
        "status",
        "profile",
        "parent_session_id",
        "parent_project_path",
        "no_transition_notify",
        "title_locked",
        "created_at",
        "wrapper",
        "auto_name",
    ] {
        assert!(show.get(k).is_some(), "show lacks {k}: {show}");
    }
    assert_eq!(show["profile"], "", "show echoes an absent -p as \"\"");
    assert!(show.get("is_conductor").is_none() && show.get("env_file").is_none());
}

/// An unknown id is NOT_FOUND with exit 2: under `--json` the error object
/// on stdout and nothing on stderr, in human mode `Error: …` on stderr.
pub(crate) fn check_unknown_id_is_not_found_exit_2(run: Run) {
    let out = run(&["session", "show", "nosuch-id", "--json"]);
    assert_eq!(code(&out), 2);
    assert_eq!(stderr(&out), "", "--json errors leave stderr empty");
    assert_eq!(
        parse(&out),
        json!({"code": "NOT_FOUND", "error": "session 'nosuch-id' not found", "success": false})
    );
    let out = run(&["session", "show", "nosuch-id"]);
    assert_eq!(code(&out), 2);
    assert_eq!(stdout(&out), "");
    assert_eq!(stderr(&out), "Error: session 'nosuch-id' not found\n");
    let out = run(&["session", "restart", "nosuch-id", "--json"]);
    assert_eq!(code(&out), 2);
    assert_eq!(parse(&out)["code"], "NOT_FOUND");
}

/// `id` is running in a live tmux session: `session start` refuses, exit 1,
/// `session '<title>' is already running`, whatever its status says.
pub(crate) fn check_start_of_a_live_session_is_already_running(run: Run, id: &str) {
    let title = show_json(run, id)["title"].clone();
    let out = run(&["session", "start", id, "--json"]);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    let v = parse(&out);
    assert_eq!(v["success"], false);
    let want = format!(
        "session '{}' is already running",
        title.as_str().unwrap_or_default()
    );
    assert!(
        v["error"].as_str().unwrap_or_default().contains(&want),
        "{v}"
    );
}

/// `agent-deck version` names the release on stdout as `Agent Deck vX.Y.Z`
/// (what `doctor` reads), exit 0.
pub(crate) fn check_version_names_the_release(run: Run) {
    let out = run(&["version"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    let version = text
        .trim()
        .strip_prefix("Agent Deck v")
        .unwrap_or_else(|| panic!("{text:?}"));
    assert!(
        version.split('.').count() == 3 && version.split('.').all(|n| n.parse::<u32>().is_ok()),
        "{text:?}"
    );
}
