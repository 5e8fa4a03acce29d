//! A handle on one simulated agent-deck: its state file, its call log, and
//! the `agent-deck` wrapper script that runs the binary under test as the
//! simulator; the simulator's pane host ([`Sim::pane_host`]), whose children
//! are the simulated panes' processes; and a `tmux` script that is the
//! simulator as tmux ([`write_tmux_script`]).
//!
//! The state file is changed the way the simulator changes it: under an
//! exclusive `flock` on `<state>.lock`, written to a temp file and renamed
//! into place, so a test's edit and a concurrent simulated call never lose
//! each other's changes.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{json, Value};

use super::files::{read_lines, unique, write_script};
use super::{kill, wait_until, BIN};

/// How long the pane host may take to record itself, to follow the state,
/// and to exit once its stdin closes.
pub(crate) const PANE_HOST_DEADLINE: Duration = Duration::from_secs(5);

/// The argument that makes the binary the simulated agent-deck.
pub(crate) const SIM_ENTRY: &str = "sim";
/// Env var naming the simulator's state file.
pub(crate) const STATE_ENV: &str = "FAKE_AGENT_DECK_STATE";
/// Env var naming the simulator's call log.
pub(crate) const LOG_ENV: &str = "FAKE_AGENT_DECK_LOG";

/// The simulator as words for a `/bin/sh` script (`'<binary>' sim`), to be
/// followed by its arguments (`"$@"`). It finds its state file and call log
/// in the environment the script inherits ([`Sim::envs`]; the watchdog under
/// test passes them on), as the [`Sim::bin`] wrapper does.
pub(crate) fn shell_command() -> String {
    assert!(!BIN.contains('\''), "binary path with a quote: {BIN}");
    format!("'{BIN}' {SIM_ENTRY}")
}

/// Writes `<dir>/tmux`, the simulator as tmux (`sim tmux "$@"`), for a
/// test to put `dir` first on `PATH`; returns its path.
pub(crate) fn write_tmux_script(dir: &Path) -> PathBuf {
    let path = dir.join("tmux");
    write_script(
        &path,
        &format!("#!/bin/sh\nexec {} tmux \"$@\"\n", shell_command()),
    );
    path
}

/// A running `sim pane-host`: on drop, its stdin is closed and it is waited
/// for (killed, and the test failed, when it outlives the deadline).
pub(crate) struct PaneHost {
    child: Option<Child>,
    /// Its pid: the simulated tmux server's, the parent of every pane.
    pub pid: i32,
}

impl PaneHost {
    /// Closes its stdin and waits for it to exit; its exit status.
    pub(crate) fn close(mut self) -> ExitStatus {
        let child = self.child.take().expect("pane host not yet closed");
        finish(child)
    }
}

impl Drop for PaneHost {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            if std::thread::panicking() {
                let _ = close_within(child, PANE_HOST_DEADLINE);
            } else {
                finish(child);
            }
        }
    }
}

/// [`close_within`] the deadline, failing the test when it is missed.
fn finish(child: Child) -> ExitStatus {
    let pid = child.id();
    close_within(child, PANE_HOST_DEADLINE).unwrap_or_else(|| {
        panic!("pane host {pid} still ran {PANE_HOST_DEADLINE:?} after its stdin closed")
    })
}

/// Closes the child's stdin and waits for it until `limit`; None (and
/// the child killed) when it is still running then.
fn close_within(mut child: Child, limit: Duration) -> Option<ExitStatus> {
    drop(child.stdin.take());
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            kill(child.id() as i32, libc::SIGKILL);
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One line of the call log.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Call {
    pub ts: f64,
    pub argv: Vec<String>,
    pub pid: u32,
}

/// A private state file, call log and `agent-deck` wrapper in a temp dir.
pub(crate) struct Sim {
    pub dir: tempfile::TempDir,
    pub state: PathBuf,
    pub log: PathBuf,
    /// The `agent-deck` wrapper script.
    pub bin: PathBuf,
}

impl Sim {
    /// A temp dir holding `state.json` (profiles exist, no sessions), the
    /// path of an (initially missing) `calls.log`, and the wrapper.
    pub(crate) fn new() -> Sim {
        let dir = tempfile::tempdir().expect("create temp dir");
        let bin = dir.path().join("agent-deck");
        write_script(
            &bin,
            &format!("#!/bin/sh\nexec {} \"$@\"\n", shell_command()),
        );
        let sim = Sim {
            state: dir.path().join("state.json"),
            log: dir.path().join("calls.log"),
            bin,
            dir,
        };
        sim.set_state(&json!({"profiles_exist": true, "sessions": []}));
        sim
    }

    /// The environment the simulator needs; pass it to anything that runs it.
    pub(crate) fn envs(&self) -> [(&'static str, String); 2] {
        [
            (STATE_ENV, self.state.display().to_string()),
            (LOG_ENV, self.log.display().to_string()),
        ]
    }

    /// Replaces the state file, under the simulator's lock.
    pub(crate) fn set_state(&self, v: &Value) {
        let _lock = self.lock();
        self.write_state_unlocked(v);
    }

    /// Read-modify-write of the state under the simulator's lock.
    pub(crate) fn update_state(&self, f: impl FnOnce(&mut Value)) {
        let _lock = self.lock();
        let mut v = self.state();
        f(&mut v);
        self.write_state_unlocked(&v);
    }

    /// The current state file, parsed.
    pub(crate) fn state(&self) -> Value {
        let text = fs::read_to_string(&self.state).expect("read sim state");
        serde_json::from_str(&text).expect("parse sim state")
    }

    /// The session with this id in the current state, if any.
    pub(crate) fn session_state(&self, id: &str) -> Option<Value> {
        self.state()["sessions"]
            .as_array()?
            .iter()
            .find(|s| s["id"] == id)
            .cloned()
    }

    /// Every logged invocation, in order; a missing log means no calls yet.
    pub(crate) fn call_log(&self) -> Vec<Call> {
        read_lines(&self.log)
    }

    /// argv (after the program name) of every logged invocation, in order.
    pub(crate) fn calls(&self) -> Vec<Vec<String>> {
        self.call_log().into_iter().map(|c| c.argv).collect()
    }

    /// Logged calls whose argv contains every one of `words` (in any position).
    pub(crate) fn calls_with(&self, words: &[&str]) -> Vec<Vec<String>> {
        self.calls()
            .into_iter()
            .filter(|argv| words.iter().all(|w| argv.iter().any(|a| a == w)))
            .collect()
    }

    /// Runs the simulator once through the wrapper, with its environment set.
    pub(crate) fn run(&self, args: &[&str]) -> Output {
        Command::new(&self.bin)
            .args(args)
            .envs(self.envs())
            .env_remove("AGENTDECK_PROFILE")
            // A test run from inside tmux must not read the fleet through it.
            .env_remove("TMUX")
            .output()
            .expect("run the simulated agent-deck")
    }

    /// Starts `sim pane-host` on this state (stdin a pipe the handle holds,
    /// `TMUX` removed) and waits until it has recorded itself. Start it
    /// after the state's sessions are set: a test that replaces the whole
    /// state drops the record until the host's next look.
    pub(crate) fn pane_host(&self) -> PaneHost {
        let child = Command::new(BIN)
            .args([SIM_ENTRY, "pane-host"])
            .envs(self.envs())
            .env_remove("TMUX")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("start the pane host");
        let pid = child.id() as i32;
        let host = PaneHost {
            child: Some(child),
            pid,
        };
        let recorded = wait_until(PANE_HOST_DEADLINE, || {
            self.state()["pane_host"]["pid"].as_i64() == Some(i64::from(pid))
        });
        assert!(
            recorded,
            "pane host {pid} never recorded itself: {}",
            self.state()
        );
        host
    }

    /// The pane host's `panes` (tmux name → pid); empty without a host.
    pub(crate) fn panes(&self) -> BTreeMap<String, i32> {
        self.pane_map("panes")
    }

    /// The pane host's `orphans` (tmux name → pid).
    pub(crate) fn orphans(&self) -> BTreeMap<String, i32> {
        self.pane_map("orphans")
    }

    fn pane_map(&self, key: &str) -> BTreeMap<String, i32> {
        let state = self.state();
        let Some(map) = state["pane_host"][key].as_object() else {
            return BTreeMap::new();
        };
        map.iter()
            .filter_map(|(name, pid)| Some((name.clone(), i32::try_from(pid.as_i64()?).ok()?)))
            .collect()
    }

    /// Waits until the pane host's `panes` names exactly `names`; returns them.
    pub(crate) fn wait_for_panes(&self, names: &[&str]) -> BTreeMap<String, i32> {
        let mut wanted: Vec<&str> = names.to_vec();
        wanted.sort_unstable();
        let mut panes = BTreeMap::new();
        let reached = wait_until(PANE_HOST_DEADLINE, || {
            panes = self.panes();
            panes.keys().map(String::as_str).eq(wanted.iter().copied())
        });
        assert!(reached, "panes never became {wanted:?}: {}", self.state());
        panes
    }

    /// Pids of live simulator processes working on this state file.
    pub(crate) fn processes(&self) -> Vec<i32> {
        let needle = format!("{STATE_ENV}={}", self.state.display());
        let Ok(entries) = fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                !stat.contains(") Z ")
                    && cmdline
                        .split(|b| *b == 0)
                        .any(|arg| arg == SIM_ENTRY.as_bytes())
                    && fs::read(format!("/proc/{pid}/environ"))
                        .map(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
                        .unwrap_or(false)
            })
            .collect()
    }

    /// Holds `<state>.lock` until the returned file drops.
    fn lock(&self) -> File {
        let mut name = self.state.as_os_str().to_owned();
        name.push(".lock");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(PathBuf::from(name))
            .expect("open sim state lock");
        file.lock().expect("lock the sim state");
        file
    }

    fn write_state_unlocked(&self, v: &Value) {
        let tmp = self
            .dir
            .path()
            .join(format!(".state.json.tmp-{}", unique()));
        let mut text = serde_json::to_string_pretty(v).expect("serialize state");
        text.push('\n');
        fs::write(&tmp, text).expect("write temp state");
        fs::rename(&tmp, &self.state).expect("rename state into place");
    }
}
