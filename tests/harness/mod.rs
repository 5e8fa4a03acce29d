//! Runs the real `agent-deck-watchdog` binary against the fake `agent-deck`:
//! a temp `HOME` and `AGENT_DECK_ROOT`, every interval shrunk so tests are
//! fast, the daemon's stderr captured to a file, and readers for the records
//! it writes.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{wait_until, Fake};

pub const BIN: &str = env!("CARGO_BIN_EXE_agent-deck-watchdog");

/// A conductor id in the real shape `<8 hex>-<unix secs>`.
pub const CONDUCTOR: &str = "3f9c2a1b-1755891234";

/// One watchdog installation: fake CLI, root, hooks dir, environment.
pub struct Wd {
    pub fake: Fake,
    pub home: tempfile::TempDir,
    pub root: PathBuf,
    pub hooks: PathBuf,
    env: Vec<(String, String)>,
}

impl Wd {
    pub fn new() -> Wd {
        let fake = Fake::new();
        let home = tempfile::tempdir().expect("temp home");
        let root = home.path().join(".agent-deck");
        let hooks = home.path().join("hooks");
        fs::create_dir_all(&hooks).expect("hooks dir");
        let mut env = fake.envs();
        let fast = [
            ("SAFETY_POLL_INTERVAL_S", "0.2"),
            ("LIVENESS_CONFIRM_GAP_S", "0.05"),
            ("MIN_GLOBAL_RESTART_INTERVAL_S", "0"),
            ("POST_RESTART_COOLDOWN_S", "0"),
            ("RESTART_VERIFY_S", "0.2"),
            ("START_VERIFY_S", "0.2"),
            ("SUBPROCESS_TIMEOUT_S", "5"),
            ("RATE_LIMIT_WINDOW_S", "300"),
        ];
        env.extend(fast.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        env.push(("HOME".into(), home.path().display().to_string()));
        env.push(("AGENT_DECK_ROOT".into(), root.display().to_string()));
        env.push(("AGENT_DECK_BIN".into(), fake.bin.display().to_string()));
        env.push(("AGENT_DECK_HOOKS_DIR".into(), hooks.display().to_string()));
        Wd {
            fake,
            home,
            root,
            hooks,
            env,
        }
    }

    /// Telegram escalation to the stub at `base`, chat 42.
    pub fn telegram(self, base: &str) -> Wd {
        self.env("TELEGRAM_ESCALATION_CHAT_ID", "42")
            .env("TELEGRAM_BOT_TOKEN", "1:tok")
            .env("TELEGRAM_API_BASE", base)
    }

    /// Sets (or replaces) an environment variable for the watchdog.
    pub fn env(mut self, key: &str, value: &str) -> Wd {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    pub fn without_env(mut self, key: &str) -> Wd {
        self.env.retain(|(k, _)| k != key);
        self
    }

    pub fn watchdog_dir(&self) -> PathBuf {
        self.root.join("watchdog")
    }

    pub fn sessions(&self, sessions: Vec<Value>) {
        self.fake
            .set_state(&json!({"profiles_exist": true, "sessions": sessions}));
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        c
    }

    /// Runs the binary to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run watchdog")
    }

    /// Starts the daemon; it is killed when the handle drops.
    pub fn spawn(&self, args: &[&str]) -> Daemon {
        let log = self.home.path().join(format!(
            "stderr-{}.log",
            Instant::now().elapsed().as_nanos()
        ));
        let child = self
            .command(args)
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).expect("stderr file"))
            .spawn()
            .expect("spawn watchdog");
        Daemon { child, log }
    }

    pub fn records(&self, file: &str) -> Vec<Value> {
        read_json_lines(&self.watchdog_dir().join(file))
    }

    pub fn restarts(&self) -> Vec<Value> {
        self.records("restart.log")
    }

    pub fn escalations(&self) -> Vec<Value> {
        self.records("escalations.log")
    }

    /// Waits until `n` escalations of `severity` are recorded, showing the
    /// daemon's stderr if they never are.
    pub fn wait_for_escalations(&self, d: &Daemon, severity: &str, n: usize) {
        assert!(
            wait_until(Duration::from_secs(20), || self.escalations_of(severity)
                >= n),
            "{n} {severity} escalation(s) never came; stderr:\n{}",
            d.stderr()
        );
    }

    pub fn escalations_of(&self, severity: &str) -> usize {
        self.escalations()
            .iter()
            .filter(|e| e["severity"] == severity)
            .count()
    }

    pub fn liveness(&self) -> Vec<Value> {
        self.records("liveness.log")
    }

    /// `liveness.log` records with this `reason`.
    pub fn liveness_with(&self, reason: &str) -> Vec<Value> {
        self.liveness()
            .into_iter()
            .filter(|r| r["reason"] == reason)
            .collect()
    }

    /// `restart.log` records with this `action`.
    pub fn restarts_with(&self, action: &str) -> Vec<Value> {
        self.restarts()
            .into_iter()
            .filter(|r| r["action"] == action)
            .collect()
    }

    /// `session restart` calls logged by the fake so far.
    pub fn restart_calls(&self) -> usize {
        self.fake.calls_with(&["session", "restart"]).len()
    }

    /// Waits until the daemon has finished at least one full safety poll
    /// (the fake saw a `list --all`).
    pub fn wait_for_first_tick(&self) {
        assert!(
            wait_until(Duration::from_secs(10), || !self
                .fake
                .calls_with(&["list", "--all"])
                .is_empty()),
            "the daemon never polled"
        );
    }

    /// Waits until the daemon has run `n` more safety polls than so far.
    pub fn wait_for_more_ticks(&self, n: usize) {
        let target = self.fake.calls_with(&["list", "--all"]).len() + n;
        assert!(
            wait_until(Duration::from_secs(20), || self
                .fake
                .calls_with(&["list", "--all"])
                .len()
                >= target),
            "the daemon stopped polling"
        );
    }

    /// Waits until the daemon has polled and then made no CLI call for half a
    /// second: the start-up ticks are over.
    pub fn wait_until_quiet(&self) {
        self.wait_for_first_tick();
        let mut seen = usize::MAX;
        let mut since = Instant::now();
        let quiet = wait_until(Duration::from_secs(10), || {
            let n = self.fake.calls().len();
            if n != seen {
                seen = n;
                since = Instant::now();
            }
            since.elapsed() >= Duration::from_millis(500)
        });
        assert!(quiet, "the daemon never went quiet");
    }

    /// Writes an executable escalate.sh that appends its arguments to a file.
    pub fn escalate_script(&self) -> PathBuf {
        let out = self.home.path().join("escalate.out");
        fs::create_dir_all(self.watchdog_dir()).expect("watchdog dir");
        let script = self.watchdog_dir().join("escalate.sh");
        fs::write(
            &script,
            format!("#!/bin/sh\necho \"$1|$2\" >> '{}'\n", out.display()),
        )
        .expect("write escalate.sh");
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).expect("chmod");
        out
    }
}

/// Asserts a run of the binary exited 0, showing its stderr if not.
pub fn assert_ok(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn read_json_lines(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{} has a bad line {l:?}: {e}", path.display()))
        })
        .collect()
}

/// A conductor in error whose restarts never take: `session restart` answers
/// success but nothing changes, and `session start` finds it already running.
pub fn crash_looping(id: &str, title: &str) -> Value {
    let mut c = conductor(id, title, "error");
    c["on_restart"] = json!("no_effect");
    c["on_start"] = json!("already_running");
    c
}

/// A conductor in error whose login expired: agent-deck holds its restarts.
pub fn auth_held(id: &str, title: &str) -> Value {
    let mut c = conductor(id, title, "error");
    c["substate"] = json!("auth-401");
    c["auth_hold"] = json!({"reason": "auth_death", "remedy": "log in again", "evidence": "API Error: 401",
                             "boot_attempts": 1, "ts": 1755891300});
    c
}

/// A conductor in the fake's state.
pub fn conductor(id: &str, title: &str, status: &str) -> Value {
    json!({"id": id, "title": title, "group": "conductor", "profile": "default", "status": status,
           "pane": "frozen pane", "transcript": ""})
}

/// A running daemon.
pub struct Daemon {
    pub child: Child,
    pub log: PathBuf,
}

impl Daemon {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends `sig` and waits up to `limit` for the exit; the exit code and
    /// how long it took.
    pub fn signal_and_wait(&mut self, sig: i32, limit: Duration) -> (Option<i32>, Duration) {
        let start = Instant::now();
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.pid(), sig);
        }
        let mut code = None;
        wait_until(limit, || match self.child.try_wait() {
            Ok(Some(status)) => {
                code = status.code();
                true
            }
            _ => false,
        });
        (code, start.elapsed())
    }

    /// Resident memory in KiB, from /proc.
    pub fn rss_kib(&self) -> u64 {
        let status = fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Pids of live processes whose environment points at this fake's state file.
pub fn fake_processes(fake: &Fake) -> Vec<i32> {
    let needle = format!("FAKE_AGENT_DECK_STATE={}", fake.state.display());
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
                && String::from_utf8_lossy(&cmdline).contains("fake-agent-deck")
                && fs::read(format!("/proc/{pid}/environ"))
                    .map(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
                    .unwrap_or(false)
        })
        .collect()
}

/// A stand-in for the Telegram Bot API on loopback: answers every request
/// with `{"ok":true}` and keeps what it received.
pub struct TelegramStub {
    pub base: String,
    requests: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl TelegramStub {
    pub fn start() -> TelegramStub {
        TelegramStub::start_with_429s(0)
    }

    /// Answers the first `n` requests `429 Too Many Requests` with
    /// `retry_after: 1`, then `200`.
    pub fn start_with_429s(n: usize) -> TelegramStub {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let base = format!("http://{}", listener.local_addr().expect("local addr"));
        let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream);
                let mut head = String::new();
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    head.push_str(&line);
                }
                let mut body = vec![0u8; length];
                let _ = reader.read_exact(&mut body);
                let count = {
                    let mut seen = seen.lock().unwrap();
                    seen.push(format!("{head}\n{}", String::from_utf8_lossy(&body)));
                    seen.len()
                };
                let (status, reply) = if count <= n {
                    (
                        "429 Too Many Requests",
                        "{\"ok\":false,\"error_code\":429,\"parameters\":{\"retry_after\":1}}",
                    )
                } else {
                    ("200 OK", "{\"ok\":true}")
                };
                let _ = write!(
                    reader.get_mut(),
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                    reply.len()
                );
            }
        });
        TelegramStub { base, requests }
    }

    /// Every request received so far: request line, headers, blank line, body.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// Every file below `dir`, read as text (lossily).
pub fn all_files_text(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = fs::read(&p) {
                out.push((p, String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    out
}
