//! The watchdog under test: the real binary with a temp `HOME` and
//! `AGENT_DECK_ROOT`, the simulated agent-deck as `AGENT_DECK_BIN`, every
//! interval shrunk so tests are fast, its stderr captured to a file, and
//! its records read back as typed values.

use std::fs;
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use agent_deck_watchdog::harness::{
    Detail, EscalationRecord, LivenessRecord, RestartRecord, StallDetail,
};
use serde_json::{json, Value};

use super::files::{read_lines, unique, write_script};
use super::sim::Sim;
use super::{wait_until, BIN};

/// One watchdog installation: simulated CLI, root, hooks dir, environment.
pub(crate) struct Wd {
    pub sim: Sim,
    pub home: tempfile::TempDir,
    pub root: PathBuf,
    pub hooks: PathBuf,
    env: Vec<(String, String)>,
}

impl Wd {
    pub(crate) fn new() -> Wd {
        let sim = Sim::new();
        let home = tempfile::tempdir().expect("temp home");
        let root = home.path().join(".agent-deck");
        let hooks = home.path().join("hooks");
        fs::create_dir_all(&hooks).expect("hooks dir");
        let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
        let mut env: Vec<(String, String)> = sim
            .envs()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
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
        env.push(("PATH".into(), path));
        env.push(("HOME".into(), home.path().display().to_string()));
        env.push(("AGENT_DECK_ROOT".into(), root.display().to_string()));
        env.push(("AGENT_DECK_BIN".into(), sim.bin.display().to_string()));
        env.push(("AGENT_DECK_HOOKS_DIR".into(), hooks.display().to_string()));
        // A real tmux on PATH finds no server of the machine's: the pane
        // watch sees only the tmux a test puts first on PATH.
        env.push(("TMUX_TMPDIR".into(), home.path().display().to_string()));
        Wd {
            sim,
            home,
            root,
            hooks,
            env,
        }
    }

    /// Telegram escalation to the stub at `base`, chat 42.
    pub(crate) fn telegram(self, base: &str) -> Wd {
        self.env("TELEGRAM_ESCALATION_CHAT_ID", "42")
            .env("TELEGRAM_BOT_TOKEN", "1:tok")
            .env("TELEGRAM_API_BASE", base)
    }

    /// A stand-in for systemd's notify socket: binds `notify.sock` in the
    /// temp home, with reads that give up after `read_timeout`, and names
    /// it to the watchdog as `NOTIFY_SOCKET`.
    pub(crate) fn notify_socket(self, read_timeout: Duration) -> (Wd, UnixDatagram) {
        let path = self.home.path().join("notify.sock");
        let sock = UnixDatagram::bind(&path).expect("bind the notify socket");
        sock.set_read_timeout(Some(read_timeout))
            .expect("notify socket read timeout");
        let wd = self.env("NOTIFY_SOCKET", &path.display().to_string());
        (wd, sock)
    }

    /// Sets (or replaces) an environment variable for the watchdog.
    pub(crate) fn env(mut self, key: &str, value: &str) -> Wd {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// The value the watchdog gets for `key`.
    pub(crate) fn env_value(&self, key: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn watchdog_dir(&self) -> PathBuf {
        self.root.join("watchdog")
    }

    /// Replaces the simulated fleet.
    pub(crate) fn sessions(&self, sessions: Vec<Value>) {
        self.sim
            .set_state(&json!({"profiles_exist": true, "sessions": sessions}));
    }

    /// Sets the `status` of the fleet's first session.
    pub(crate) fn set_status(&self, status: &str) {
        self.sim
            .update_state(|s| s["sessions"][0]["status"] = json!(status));
    }

    /// The simulator answers as release `version` (None: no key, 1.14.0).
    pub(crate) fn release(&self, version: Option<&str>) {
        if let Some(v) = version {
            self.sim.update_state(|s| s["version"] = json!(v));
        }
    }

    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        c
    }

    /// Runs the binary to completion; a run that hangs fails the test
    /// within a minute instead of hanging the suite.
    pub(crate) fn run(&self, args: &[&str]) -> Output {
        super::output_within(self.command(args), Duration::from_secs(60))
    }

    /// Starts the daemon; it is killed when the handle drops.
    pub(crate) fn spawn(&self, args: &[&str]) -> Daemon {
        let log = self.home.path().join(format!("stderr-{}.log", unique()));
        let child = self
            .command(args)
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).expect("stderr file"))
            .spawn()
            .expect("spawn watchdog");
        Daemon { child, log }
    }

    /// `status --json`, which must succeed, parsed.
    pub(crate) fn status_json(&self) -> Value {
        let out = self.run(&["status", "--json"]);
        assert_ok(&out);
        serde_json::from_slice(&out.stdout).expect("status --json parses")
    }

    /// `daemon-status.json`, parsed; null while it is missing or unreadable.
    pub(crate) fn daemon_status(&self) -> Value {
        let bytes = fs::read(self.watchdog_dir().join("daemon-status.json")).unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    }

    pub(crate) fn restarts(&self) -> Vec<RestartRecord> {
        read_lines(&self.watchdog_dir().join("restart.log"))
    }

    pub(crate) fn escalations(&self) -> Vec<EscalationRecord> {
        read_lines(&self.watchdog_dir().join("escalations.log"))
    }

    pub(crate) fn liveness(&self) -> Vec<LivenessRecord> {
        read_lines(&self.watchdog_dir().join("liveness.log"))
    }

    /// `restart.log` records with this `action`.
    pub(crate) fn restarts_with(&self, action: &str) -> Vec<RestartRecord> {
        self.restarts()
            .into_iter()
            .filter(|r| r.action == action)
            .collect()
    }

    /// `liveness.log` records with this `reason`.
    pub(crate) fn liveness_with(&self, reason: &str) -> Vec<LivenessRecord> {
        self.liveness()
            .into_iter()
            .filter(|r| r.reason.as_str() == reason)
            .collect()
    }

    /// `escalations.log` records with this `severity`.
    pub(crate) fn escalations_with(&self, severity: &str) -> Vec<EscalationRecord> {
        self.escalations()
            .into_iter()
            .filter(|e| e.severity == severity)
            .collect()
    }

    pub(crate) fn escalations_of(&self, severity: &str) -> usize {
        self.escalations_with(severity).len()
    }

    /// Waits until `n` escalations of `severity` are recorded, showing the
    /// daemon's stderr if they never are.
    pub(crate) fn wait_for_escalations(&self, d: &Daemon, severity: &str, n: usize) {
        let what = format!("{n} {severity} escalation(s) never came");
        d.wait_for(Duration::from_secs(20), &what, || {
            self.escalations_of(severity) >= n
        });
    }

    /// Waits up to `limit` until the simulator has logged a call with
    /// `words`, failing with `what` and the daemon's stderr if none comes.
    pub(crate) fn wait_for_call(&self, d: &Daemon, words: &[&str], limit: Duration, what: &str) {
        let what = format!("{what}: no call with {words:?} within {limit:?}");
        d.wait_for(limit, &what, || !self.sim.calls_with(words).is_empty());
    }

    /// `session restart` calls logged by the simulator so far.
    pub(crate) fn restart_calls(&self) -> usize {
        self.sim.calls_with(&["session", "restart"]).len()
    }

    /// Waits until the daemon has finished at least one full safety poll
    /// (the simulator saw a `list --all`).
    pub(crate) fn wait_for_first_tick(&self) {
        assert!(
            wait_until(Duration::from_secs(10), || !self
                .sim
                .calls_with(&["list", "--all"])
                .is_empty()),
            "the daemon never polled"
        );
    }

    /// Waits until the pane watch covers every critical session, as the
    /// ticker says once the reuse guard kept each pid (true), or, when the
    /// kernel gave no pidfd (ENOSYS, EPERM in a sandbox), checks that the
    /// daemon said why and did not claim to be armed (false). An open
    /// pidfd alone is no proof: the guard's second listing comes after it.
    pub(crate) fn pane_watch_armed(&self, d: &Daemon) -> bool {
        const ARMED: &str = "the pane watch covers every critical session";
        const OFF: &str = "pane watch off:";
        let said = wait_until(Duration::from_secs(10), || {
            let err = d.stderr();
            err.contains(ARMED) || err.contains(OFF)
        });
        let err = d.stderr();
        assert!(said, "the watch never armed nor said why: {err}");
        if err.contains(OFF) {
            assert!(!err.contains(ARMED), "{err}");
            assert!(
                err.contains("deaths are seen by hooks and the safety poll"),
                "{err}"
            );
            return false;
        }
        self.wait_for_first_tick();
        true
    }

    /// Waits until the daemon has finished its first safety poll: the poll
    /// has begun and its `daemon-status.json`, written at its end, is there
    /// (what `drill` and `status` read).
    pub(crate) fn wait_for_finished_tick(&self) {
        self.wait_for_first_tick();
        let status = self.watchdog_dir().join("daemon-status.json");
        assert!(
            wait_until(Duration::from_secs(10), || status.exists()),
            "the first poll never finished"
        );
    }

    /// Waits until the daemon has run `n` more safety polls than so far.
    pub(crate) fn wait_for_more_ticks(&self, n: usize) {
        let polls = || self.sim.calls_with(&["list", "--all"]).len();
        let target = polls() + n;
        assert!(
            wait_until(Duration::from_secs(20), || polls() >= target),
            "the daemon stopped polling"
        );
    }

    /// Waits until the daemon has polled and then made no CLI call for half a
    /// second: the start-up ticks are over.
    pub(crate) fn wait_until_quiet(&self) {
        self.wait_for_first_tick();
        let mut seen = usize::MAX;
        let mut since = Instant::now();
        let quiet = wait_until(Duration::from_secs(10), || {
            let n = self.sim.calls().len();
            if n != seen {
                seen = n;
                since = Instant::now();
            }
            since.elapsed() >= Duration::from_millis(500)
        });
        assert!(quiet, "the daemon never went quiet");
    }

    /// Writes an executable escalate.sh that appends `<severity>|<message>`
    /// to a file, and returns that file; `more` is appended to the script.
    pub(crate) fn escalate_script(&self, more: &str) -> PathBuf {
        let out = self.home.path().join("escalate.out");
        let script = format!("#!/bin/sh\necho \"$1|$2\" >> '{}'\n{more}", out.display());
        write_script(&self.watchdog_dir().join("escalate.sh"), &script);
        out
    }
}

/// Asserts a run of the binary exited 0, showing its stderr if not.
pub(crate) fn assert_ok(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A running daemon.
pub(crate) struct Daemon {
    pub child: Child,
    pub log: PathBuf,
}

impl Daemon {
    pub(crate) fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub(crate) fn stderr(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub(crate) fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits up to `limit` until `cond` holds, failing with `what` and the
    /// daemon's stderr if it never does.
    pub(crate) fn wait_for(&self, limit: Duration, what: &str, cond: impl FnMut() -> bool) {
        assert!(
            wait_until(limit, cond),
            "{what}; stderr:\n{}",
            self.stderr()
        );
    }

    /// Sends `sig` and waits up to `limit` for the exit; the exit code and
    /// how long it took.
    pub(crate) fn signal_and_wait(&mut self, sig: i32, limit: Duration) -> (Option<i32>, Duration) {
        let start = Instant::now();
        super::kill(self.pid(), sig);
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
    pub(crate) fn rss_kib(&self) -> u64 {
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

/// The stall `r` is about; fails the test when it says of none.
pub(crate) fn stall(r: &RestartRecord) -> &StallDetail {
    match &r.detail {
        Detail::Stall(d) => d,
        _ => panic!("a record of no stall: {r:?}"),
    }
}
