//! Helpers shared by the integration tests: a handle on the fake `agent-deck`
//! (tests/fake-agent-deck), hook-file writing exactly like agent-deck does it,
//! and polling.
#![allow(dead_code)]

use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

/// Path of the fake CLI script.
pub const FAKE_BIN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fake-agent-deck");

/// A private state file + call log for one fake `agent-deck`.
pub struct Fake {
    pub dir: tempfile::TempDir,
    pub state: PathBuf,
    pub log: PathBuf,
    pub bin: PathBuf,
}

impl Fake {
    /// Creates a temp dir holding `state.json` (profiles exist, no sessions)
    /// and the path of an (initially missing) `calls.log`.
    pub fn new() -> Fake {
        let dir = tempfile::tempdir().expect("create temp dir");
        install_python_shortcut(&dir.path().join("pybin"));
        let state = dir.path().join("state.json");
        let log = dir.path().join("calls.log");
        let fake = Fake {
            state,
            log,
            bin: PathBuf::from(FAKE_BIN),
            dir,
        };
        fake.set_state(&json!({"profiles_exist": true, "sessions": []}));
        fake
    }

    /// The environment the fake needs; pass it to anything that spawns it.
    /// Besides the two FAKE_AGENT_DECK_* paths it carries a PATH whose first
    /// entry holds only a `python3` (see `install_python_shortcut`) that makes
    /// each fake call about twice as cheap.
    pub fn envs(&self) -> Vec<(String, String)> {
        vec![
            (
                "FAKE_AGENT_DECK_STATE".to_string(),
                self.state.display().to_string(),
            ),
            (
                "FAKE_AGENT_DECK_LOG".to_string(),
                self.log.display().to_string(),
            ),
            ("PATH".to_string(), self.path_env()),
        ]
    }

    /// `$PATH` with the python3 shortcut dir (if any) in front.
    pub fn path_env(&self) -> String {
        let inherited = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_string());
        let pybin = self.dir.path().join("pybin");
        if pybin.join("python3").is_file() {
            format!("{}:{inherited}", pybin.display())
        } else {
            inherited
        }
    }

    /// Replaces the state file atomically (temp file + rename), holding the
    /// same lock the fake holds for its read-modify-write.
    pub fn set_state(&self, v: &Value) {
        let _lock = self.lock();
        self.write_state_unlocked(v);
    }

    /// Read-modify-write of the state under the fake's lock, so a concurrent
    /// fake invocation cannot lose the change.
    pub fn update_state(&self, f: impl FnOnce(&mut Value)) {
        let _lock = self.lock();
        let mut v = self.state();
        f(&mut v);
        self.write_state_unlocked(&v);
    }

    /// The current state file, parsed.
    pub fn state(&self) -> Value {
        let text = fs::read_to_string(&self.state).expect("read fake state");
        serde_json::from_str(&text).expect("parse fake state")
    }

    /// The session with this id in the current state, if any.
    pub fn session_state(&self, id: &str) -> Option<Value> {
        self.state()["sessions"]
            .as_array()?
            .iter()
            .find(|s| s["id"] == id)
            .cloned()
    }

    /// argv (after the program name) of every logged invocation, in order.
    /// A missing log means no calls yet.
    pub fn calls(&self) -> Vec<Vec<String>> {
        let text = match fs::read_to_string(&self.log) {
            Ok(t) => t,
            Err(_) => return Vec::new(),
        };
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|v| {
                v["argv"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|s| s.as_str().unwrap_or_default().to_string())
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect()
    }

    /// Logged calls whose argv contains every one of `words` (in any position).
    pub fn calls_with(&self, words: &[&str]) -> Vec<Vec<String>> {
        self.calls()
            .into_iter()
            .filter(|argv| words.iter().all(|w| argv.iter().any(|a| a == w)))
            .collect()
    }

    /// Runs the fake once with its environment set.
    pub fn run(&self, args: &[&str]) -> Output {
        Command::new(&self.bin)
            .args(args)
            .env("FAKE_AGENT_DECK_STATE", &self.state)
            .env("FAKE_AGENT_DECK_LOG", &self.log)
            .env("PATH", self.path_env())
            .env_remove("AGENTDECK_PROFILE")
            .output()
            .expect("run fake agent-deck")
    }

    fn lock(&self) -> StateLock {
        let mut name = self.state.as_os_str().to_owned();
        name.push(".lock");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(PathBuf::from(name))
            .expect("open fake state lock");
        // SAFETY: flock on a file descriptor we own for the guard's lifetime.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        assert_eq!(rc, 0, "flock fake state lock");
        StateLock { _file: file }
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

/// Holds the flock until dropped (closing the descriptor releases it).
struct StateLock {
    _file: File,
}

fn unique() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    format!("{:016x}", h.finish())
}

/// Puts into `pybin` a `python3` that runs the real interpreter (the one
/// `python3` on PATH resolves to) with `-S`. The fake's
/// `#!/usr/bin/env python3` then skips version-manager shims (a pyenv shim is
/// a bash script) and site-packages `.pth` imports; the fake needs only the
/// stdlib. Best effort: without it the fake still runs, just slower.
///
/// The script is written by a child shell, never through a descriptor of this
/// process: a writable descriptor inherited by a concurrently forked child
/// would make exec of the script fail with ETXTBSY.
fn install_python_shortcut(pybin: &Path) {
    let Some(python) = real_python() else { return };
    let python = python.display().to_string();
    if python.contains('\'') || fs::create_dir(pybin).is_err() {
        return;
    }
    let script = format!("#!/bin/sh\nexec '{python}' -S \"$@\"\n");
    let ok = Command::new("/bin/sh")
        .args([
            "-c",
            "printf '%s' \"$2\" > \"$1\" && chmod 755 \"$1\"",
            "sh",
        ])
        .arg(pybin.join("python3"))
        .arg(script)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        let _ = fs::remove_dir_all(pybin);
    }
}

/// The interpreter `python3` on PATH really is (found once per test binary),
/// or None if it cannot be asked.
fn real_python() -> Option<&'static PathBuf> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let out = Command::new("python3")
                .args(["-c", "import sys; print(sys.executable)"])
                .output()
                .ok()?;
            let exe = String::from_utf8(out.stdout).ok()?;
            let exe = PathBuf::from(exe.trim());
            (out.status.success() && exe.is_absolute() && exe.is_file()).then_some(exe)
        })
        .as_ref()
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// Writes a hook status file the way agent-deck's atomicHookWrite does:
/// `.<id>.json.tmp-<random>` in `dir`, written and closed, then renamed onto
/// `<id>.json` (inotify: CLOSE_WRITE on the temp name, then MOVED_TO).
pub fn write_hook(dir: &Path, id: &str, status: &str) {
    let tmp = dir.join(format!(".{id}.json.tmp-{}", unique()));
    // Field order of the Go struct: status, event, ts.
    let body = format!(
        "{{\"status\":{},\"event\":\"Stop\",\"ts\":{}}}",
        Value::from(status),
        now_secs()
    );
    {
        let mut f = File::create(&tmp).expect("create hook temp file");
        f.write_all(body.as_bytes()).expect("write hook temp file");
    }
    fs::rename(&tmp, dir.join(format!("{id}.json"))).expect("rename hook file");
}

/// Polls `cond` every 20 ms until it is true (returns true) or `timeout`
/// passes (returns false). `cond` is always tried at least once.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A fake-state session in profile "default"; other keys take the fake's defaults.
pub fn session(id: &str, title: &str, group: &str, status: &str) -> Value {
    json!({
        "id": id,
        "title": title,
        "group": group,
        "profile": "default",
        "status": status,
    })
}
