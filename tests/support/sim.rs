//! A handle on one simulated agent-deck: its state file, its call log, and
//! the `agent-deck` wrapper script that runs the binary under test as the
//! simulator.
//!
//! The state file is changed the way the simulator changes it: under an
//! exclusive `flock` on `<state>.lock`, written to a temp file and renamed
//! into place, so a test's edit and a concurrent simulated call never lose
//! each other's changes.

use std::fs::{self, File, OpenOptions};
use std::path::PathBuf;
use std::process::{Command, Output};

use serde::Deserialize;
use serde_json::{json, Value};

use super::files::{read_lines, unique, write_script};
use super::BIN;

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
