//! The simulator's pane host, run for real: one child process per live
//! session, parented by the host (the simulated tmux server), killed when
//! its session dies, replaced when it restarts, all gone when the server is
//! killed or the host ends; and `tmux list-panes`/`display` answered through
//! a `tmux` script, as a pane watch on `PATH` would run it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fixtures::conductor;
use crate::support::sim::{write_tmux_script, Sim, PANE_HOST_DEADLINE};
use crate::support::{kill, wait_until};

const ID_A: &str = "a1b2c3d4-1755891234";
const ID_B: &str = "b1b2c3d4-1755891234";
const NAME_A: &str = "agentdeck_conductor-a_0badf00d";
const NAME_B: &str = "agentdeck_tool-b_12345678";
const FORMAT: &str =
    "#{session_name}\t#{window_index}\t#{pane_index}\t#{pane_pid}\t#{pane_dead}\t#{pid}";

/// A running Claude conductor with a tmux name.
fn claude(id: &str, title: &str, tmux: &str) -> Value {
    let mut c = conductor(id, title, "running");
    c["tmux_session"] = json!(tmux);
    c
}

/// A running session of a custom tool, whose restart renames its tmux session.
fn custom(id: &str, title: &str, tmux: &str) -> Value {
    let mut c = claude(id, title, tmux);
    c["tool"] = json!("my-agent");
    c
}

fn fleet(sessions: Vec<Value>) -> Sim {
    let sim = Sim::new();
    sim.set_state(&json!({"profiles_exist": true, "sessions": sessions}));
    sim
}

/// The parent pid of `pid`, None when there is no such process.
fn ppid(pid: i32) -> Option<i32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// `pid` is no child of `host` any more (gone and reaped, or reused).
fn gone(pid: i32, host: i32) -> bool {
    wait_until(PANE_HOST_DEADLINE, || ppid(pid) != Some(host))
}

/// A `tmux` script in its own bin dir.
fn tmux_bin(sim: &Sim) -> PathBuf {
    write_tmux_script(&sim.dir.path().join("bin"))
}

/// Runs the `tmux` script with the simulator's environment.
fn tmux(sim: &Sim, script: &Path, args: &[&str]) -> Output {
    Command::new(script)
        .args(args)
        .envs(sim.envs())
        .env_remove("TMUX")
        .env_remove("TMUX_TMPDIR")
        .output()
        .expect("run the tmux script")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_live_session_gets_a_child_of_the_host_that_tmux_lists() {
    let mut stopped = claude(ID_B, "stopped-b", NAME_B);
    stopped["status"] = json!("stopped");
    let sim = fleet(vec![claude(ID_A, "conductor-a", NAME_A), stopped]);
    let host = sim.pane_host();
    let panes = sim.wait_for_panes(&[NAME_A]);
    let pid = panes[NAME_A];
    assert_eq!(ppid(pid), Some(host.pid), "the host is the pane's parent");
    let script = tmux_bin(&sim);
    let out = tmux(
        &sim,
        &script,
        &["-u", "-L", "wd", "list-panes", "-a", "-F", FORMAT],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("{NAME_A}\t0\t0\t{pid}\t0\t{}\n", host.pid)
    );
    let out = tmux(&sim, &script, &["display", "-p", "#{pid}"]);
    assert_eq!(text(&out.stdout), format!("{}\n", host.pid));
    assert!(host.close().success());
}

#[test]
fn crash_and_kill_session_kill_the_pane() {
    let sim = fleet(vec![
        claude(ID_A, "conductor-a", NAME_A),
        custom(ID_B, "tool-b", NAME_B),
    ]);
    let host = sim.pane_host();
    let panes = sim.wait_for_panes(&[NAME_A, NAME_B]);
    assert!(sim.run(&["crash", ID_A]).status.success());
    sim.wait_for_panes(&[NAME_B]);
    assert!(gone(panes[NAME_A], host.pid), "killed and reaped");
    let script = tmux_bin(&sim);
    let out = tmux(
        &sim,
        &script,
        &["-L", "wd", "kill-session", "-t", &format!("={NAME_B}")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    sim.wait_for_panes(&[]);
    assert!(gone(panes[NAME_B], host.pid));
    // A server with no panes lists nothing.
    let out = tmux(&sim, &script, &["list-panes", "-a", "-F", FORMAT]);
    assert_eq!(
        (out.status.code(), text(&out.stdout)),
        (Some(0), String::new())
    );
}

#[test]
fn a_claude_restart_keeps_the_name_with_a_new_pid() {
    let sim = fleet(vec![claude(ID_A, "conductor-a", NAME_A)]);
    let host = sim.pane_host();
    let before = sim.wait_for_panes(&[NAME_A])[NAME_A];
    assert!(sim.run(&["session", "restart", ID_A]).status.success());
    let reached = wait_until(PANE_HOST_DEADLINE, || {
        sim.panes().get(NAME_A).is_some_and(|p| *p != before)
    });
    assert!(reached, "a new pid under the same name: {}", sim.state());
    let after = sim.wait_for_panes(&[NAME_A])[NAME_A];
    assert_eq!(ppid(after), Some(host.pid));
    assert!(gone(before, host.pid), "the old pane's process is gone");
}

#[test]
fn a_custom_tool_restart_changes_the_name_and_the_pid() {
    let sim = fleet(vec![custom(ID_B, "tool-b", NAME_B)]);
    let host = sim.pane_host();
    let before = sim.wait_for_panes(&[NAME_B])[NAME_B];
    assert!(sim.run(&["session", "restart", ID_B]).status.success());
    let renamed = sim.session_state(ID_B).unwrap()["tmux_session"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(renamed, NAME_B);
    let after = sim.wait_for_panes(&[&renamed])[&renamed];
    assert_ne!(after, before);
    assert_eq!(ppid(after), Some(host.pid));
    assert!(gone(before, host.pid));
}

#[test]
fn a_killed_server_kills_every_pane_and_lists_no_server() {
    let sim = fleet(vec![
        claude(ID_A, "conductor-a", NAME_A),
        custom(ID_B, "tool-b", NAME_B),
    ]);
    let host = sim.pane_host();
    let panes = sim.wait_for_panes(&[NAME_A, NAME_B]);
    sim.update_state(|st| st["tmux_server"] = json!("down"));
    sim.wait_for_panes(&[]);
    for pid in panes.values() {
        assert!(gone(*pid, host.pid), "{pid} outlived the server");
    }
    let script = tmux_bin(&sim);
    let out = tmux(
        &sim,
        &script,
        &["-u", "-L", "wd", "list-panes", "-a", "-F", FORMAT],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("no server running on /tmp/tmux-") && err.ends_with("/wd\n"),
        "{err}"
    );
    // agent-deck reads every session as crashed; a restart brings a server
    // up again, with that session's pane alone.
    for id in [ID_A, ID_B] {
        assert_eq!(show_status(&sim, id), "error", "{id}");
    }
    let out = sim.run(&["session", "restart", ID_B, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(sim.state().get("tmux_server"), None);
    assert_eq!(
        (show_status(&sim, ID_A), show_status(&sim, ID_B)),
        ("error".into(), "running".into())
    );
    let name_b = sim.session_state(ID_B).unwrap()["tmux_session"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(sim.wait_for_panes(&[&name_b]).len(), 1);
}

/// The status `session show` prints for `id`.
fn show_status(sim: &Sim, id: &str) -> String {
    let out = sim.run(&["session", "show", id, "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("show JSON");
    v["status"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn an_agent_ignoring_sighup_outlives_kill_session_until_the_host_ends() {
    let mut stubborn = claude(ID_A, "conductor-a", NAME_A);
    stubborn["ignores_sighup"] = json!(true);
    let sim = fleet(vec![stubborn]);
    let host = sim.pane_host();
    let pid = sim.wait_for_panes(&[NAME_A])[NAME_A];
    let script = tmux_bin(&sim);
    let out = tmux(
        &sim,
        &script,
        &["kill-session", "-t", &format!("={NAME_A}")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    sim.wait_for_panes(&[]);
    assert_eq!(sim.orphans().get(NAME_A), Some(&pid), "{}", sim.state());
    assert_eq!(ppid(pid), Some(host.pid), "still alive");
    let listed = tmux(&sim, &script, &["list-panes", "-a", "-F", FORMAT]);
    assert_eq!(text(&listed.stdout), "", "in no pane");
    let host_pid = host.pid;
    assert!(host.close().success());
    assert!(gone(pid, host_pid), "the host's end takes the orphan too");
}

#[test]
fn an_agent_that_exits_takes_its_tmux_session_with_it() {
    let sim = fleet(vec![claude(ID_A, "conductor-a", NAME_A)]);
    let host = sim.pane_host();
    let pid = sim.wait_for_panes(&[NAME_A])[NAME_A];
    kill(pid, libc::SIGKILL);
    sim.wait_for_panes(&[]);
    assert!(gone(pid, host.pid), "reaped");
    let session = sim.session_state(ID_A).unwrap();
    assert_eq!(session["tmux_alive"], false, "{session}");
    let out = sim.run(&["session", "show", ID_A, "--json"]);
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["status"], "error");
    // `session start` brings it back under its name, with a new process.
    assert!(sim.run(&["session", "start", ID_A]).status.success());
    let again = sim.wait_for_panes(&[NAME_A])[NAME_A];
    assert_eq!(ppid(again), Some(host.pid));
}

#[test]
fn closing_its_stdin_ends_the_host_and_every_child() {
    let mut stubborn = custom(ID_B, "tool-b", NAME_B);
    stubborn["ignores_sighup"] = json!(true);
    let sim = fleet(vec![claude(ID_A, "conductor-a", NAME_A), stubborn]);
    let host = sim.pane_host();
    let panes = sim.wait_for_panes(&[NAME_A, NAME_B]);
    assert!(sim.run(&["crash", ID_B]).status.success());
    sim.wait_for_panes(&[NAME_A]);
    let host_pid = host.pid;
    assert!(host.close().success(), "exit 0");
    for pid in panes.values() {
        assert_eq!(ppid(*pid), None, "{pid} left behind");
    }
    assert!(sim.state().get("pane_host").is_none(), "{}", sim.state());
    let script = tmux_bin(&sim);
    let out = tmux(&sim, &script, &["list-panes", "-a", "-F", FORMAT]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "no server once the host is gone"
    );
    assert_eq!(ppid(host_pid), None);
}

#[test]
fn a_terminated_host_ends_every_child() {
    let sim = fleet(vec![claude(ID_A, "conductor-a", NAME_A)]);
    let host = sim.pane_host();
    let pid = sim.wait_for_panes(&[NAME_A])[NAME_A];
    kill(host.pid, libc::SIGTERM);
    let cleared = wait_until(PANE_HOST_DEADLINE, || {
        sim.state().get("pane_host").is_none()
    });
    assert!(
        cleared,
        "the host took itself out of the state: {}",
        sim.state()
    );
    assert!(gone(pid, host.pid));
    assert!(host.close().success(), "a clean exit");
    assert_eq!(ppid(pid), None);
}

/// `pid` runs (it is neither gone nor a zombie).
fn running(pid: i32) -> bool {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rfind(')')
        .and_then(|at| stat[at + 1..].split_whitespace().next())
        .is_some_and(|state| state != "Z" && state != "X")
}

#[test]
fn a_host_killed_outright_is_a_dead_server_and_leaves_no_pane_running() {
    let sim = fleet(vec![
        claude(ID_A, "conductor-a", NAME_A),
        custom(ID_B, "tool-b", NAME_B),
    ]);
    let host = sim.pane_host();
    let panes = sim.wait_for_panes(&[NAME_A, NAME_B]);
    kill(host.pid, libc::SIGKILL);
    for pid in panes.values() {
        let ended = wait_until(PANE_HOST_DEADLINE, || !running(*pid));
        assert!(ended, "{pid} outlived its host");
    }
    let script = tmux_bin(&sim);
    let out = tmux(&sim, &script, &["list-panes", "-a", "-F", FORMAT]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stderr).starts_with("no server running on "));
    assert!(!host.close().success(), "it was killed");
}

#[test]
fn the_host_ends_when_its_state_file_is_gone() {
    let sim = fleet(vec![claude(ID_A, "conductor-a", NAME_A)]);
    let host = sim.pane_host();
    let pid = sim.wait_for_panes(&[NAME_A])[NAME_A];
    fs::remove_file(&sim.state).unwrap();
    assert!(gone(pid, host.pid));
    assert!(!sim.state.exists(), "not written back");
    assert!(host.close().success());
}

#[test]
fn the_host_writes_the_state_only_when_something_changed() {
    use std::os::unix::fs::MetadataExt;
    let sim = fleet(vec![claude(ID_A, "conductor-a", NAME_A)]);
    let _host = sim.pane_host();
    sim.wait_for_panes(&[NAME_A]);
    let inode = || fs::metadata(&sim.state).unwrap().ino();
    let before = inode();
    // Ten looks of the host or more (a claim that nothing happens has no
    // condition to wait on); every write is a rename, so a new inode.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(inode(), before, "rewritten with nothing changed");
    // A replaced state loses the record; the host puts it back.
    sim.set_state(&json!({"sessions": [claude(ID_A, "conductor-a", NAME_A)]}));
    sim.wait_for_panes(&[NAME_A]);
}
