//! One throw-away agent-deck installation per live test: its own `HOME` and
//! XDG dirs, its own tmux server (on a socket of its own under a
//! `TMUX_TMPDIR` of its own), no network, and nothing inherited that could
//! reach the operator's fleet (`TMUX*`, `AGENTDECK_*`, `AGENT_DECK_*`,
//! `CLAUDE_CONFIG_DIR`, `TELEGRAM_*`: the environment is cleared).
//!
//! The fleet is built through the real CLI (`add`, `session start`), runs
//! the fake agent of `fake_agent.rs`, and has `agent-deck notify-daemon`
//! beside it unless a test asks for none. The watchdog under test runs in
//! the same environment, with `AGENT_DECK_BIN` pointing at a wrapper that
//! logs every call before it runs the real CLI. Dropping the sandbox stops
//! the notify-daemon, kills its tmux server and every process left in its
//! `HOME`, and deletes the directory, also when the test failed.

use std::cell::Cell;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use agent_deck_watchdog::harness::{EscalationRecord, LivenessRecord, RestartRecord};
use serde_json::Value;

use super::fake_agent;
use crate::support::files::{read_lines, unique, write_script};
use crate::support::watchdog::Daemon;
use crate::support::{kill, output_within, wait_until, BIN};

/// Why a live test is ignored, and what it says when it cannot find its peer.
pub(crate) const NEEDS: &str = "needs a real agent-deck: set AGENT_DECK_BIN";

/// How long one CLI call may take before the test fails.
const CALL_LIMIT: Duration = Duration::from_secs(60);

/// The real agent-deck named by `AGENT_DECK_BIN`; fails the test loudly
/// when it is unset or cannot run, so a live test never passes by doing
/// nothing.
pub(crate) fn agent_deck_bin() -> PathBuf {
    let bin = match std::env::var_os("AGENT_DECK_BIN") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!("{NEEDS}"),
    };
    let runs = Command::new(&bin)
        .arg("version")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("AGENTDECK_SKIP_UPDATE_CHECK", "1")
        .env("HOME", "/nonexistent")
        .stdin(Stdio::null())
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(runs, "{NEEDS} (cannot run {} version)", bin.display());
    bin
}

/// Whether the sandbox keeps agent-deck's stored status current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatusWriter {
    /// `agent-deck notify-daemon` runs beside the fleet.
    NotifyDaemon,
    /// Nothing does: only start, restart and stop write the stored status.
    None,
}

/// Which tmux socket the sandbox fleet is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Socket {
    /// A socket of its own (`[tmux] socket_name`).
    Own,
    /// The default socket under the sandbox's `TMUX_TMPDIR`.
    Default,
}

/// Which agent a session runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tool {
    /// `-c claude`, the fake as `[claude] command`.
    Claude,
    /// `-c fakeagent`, the fake as a custom tool.
    Custom,
}

/// One session of the sandbox fleet.
#[derive(Debug, Clone)]
pub(crate) struct Agent {
    pub id: String,
    pub title: String,
    /// Its project dir, the fake's working directory.
    pub dir: PathBuf,
    /// `None`: the default profile.
    pub profile: Option<String>,
    /// When the test last started it through the CLI.
    started: Cell<Option<Instant>>,
}

impl Agent {
    /// How many times the fake has booted in this session.
    pub(crate) fn boots(&self) -> u32 {
        fs::read_to_string(self.dir.join("boots"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Sets the fake's mode for its next boot (and the test's reference).
    pub(crate) fn set_mode(&self, mode: &str) {
        fs::write(self.dir.join("fake-mode"), format!("{mode}\n")).expect("write fake-mode");
    }

    /// Notes that the session was (re)started just now, by the watchdog
    /// rather than the test, so [`Sandbox::age_past_freshness`] waits from here.
    pub(crate) fn started_now(&self) {
        self.started.set(Some(Instant::now()));
    }

    /// The fake's boot log: one line per boot with its argv.
    pub(crate) fn fake_log(&self) -> String {
        fs::read_to_string(self.dir.join("fake.log")).unwrap_or_default()
    }
}

pub(crate) struct Sandbox {
    pub dir: tempfile::TempDir,
    pub home: PathBuf,
    /// agent-deck's `[tmux] socket_name`; `default` (no `socket_name` in its
    /// config) for a fleet on the default socket, which is the sandbox's
    /// own since `TMUX_TMPDIR` is.
    pub socket: String,
    /// The real CLI.
    pub real: PathBuf,
    /// The wrapper the watchdog gets as `AGENT_DECK_BIN`; logs each call.
    pub logged: PathBuf,
    pub calls_log: PathBuf,
    notify: Option<Child>,
}

impl Sandbox {
    /// A sandbox with `notify-daemon` running beside the fleet.
    pub(crate) fn new() -> Sandbox {
        Sandbox::with(StatusWriter::NotifyDaemon)
    }

    pub(crate) fn with(writer: StatusWriter) -> Sandbox {
        Sandbox::build(writer, Socket::Own)
    }

    /// A sandbox whose fleet is on the default tmux socket (no
    /// `[tmux] socket_name`), under the sandbox's own `TMUX_TMPDIR`.
    pub(crate) fn on_default_socket() -> Sandbox {
        Sandbox::build(StatusWriter::NotifyDaemon, Socket::Default)
    }

    fn build(writer: StatusWriter, socket: Socket) -> Sandbox {
        let real = agent_deck_bin();
        let dir = tempfile::Builder::new()
            .prefix("adwd-live")
            .tempdir()
            .expect("sandbox dir");
        let root = dir.path().to_path_buf();
        let home = root.join("home");
        for sub in [
            ".config/agent-deck",
            ".local/share",
            ".local/state",
            ".cache",
        ] {
            fs::create_dir_all(home.join(sub)).expect("sandbox home");
        }
        fs::create_dir_all(root.join("tmux")).expect("sandbox tmux dir");
        let (socket, socket_line) = match socket {
            Socket::Own => {
                let name = format!("adwd-{}", &unique()[..10]);
                let line = format!("socket_name = \"{name}\"\n");
                (name, line)
            }
            // `tmux -L default` is the default socket.
            Socket::Default => ("default".to_owned(), String::new()),
        };
        let fake = root.join("bin/fake-agent");
        fake_agent::install(&fake, &real);
        let config = format!(
            "[tmux]\n{socket_line}launch_as = \"direct\"\n\
             inject_status_line = false\n\n\
             [updates]\ncheck_enabled = false\nnotify_in_cli = false\n\n\
             [claude]\ncommand = \"{fake}\"\n\n\
             [tools.{tool}]\ncommand = \"{fake}\"\n",
            fake = fake.display(),
            tool = fake_agent::TOOL,
        );
        fs::write(home.join(".config/agent-deck/config.toml"), config).expect("config.toml");
        let calls_log = root.join("calls.log");
        let logged = root.join("bin/agent-deck");
        write_script(
            &logged,
            &format!(
                "#!/bin/sh\nprintf '%s %s\\n' \"$(date +%s.%N)\" \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
                calls_log.display(),
                real.display()
            ),
        );
        let mut sb = Sandbox {
            dir,
            home,
            socket,
            real,
            logged,
            calls_log,
            notify: None,
        };
        if writer == StatusWriter::NotifyDaemon {
            sb.notify = Some(sb.spawn_notify_daemon());
        }
        sb
    }

    /// The environment of everything in the sandbox: the fleet, the CLI
    /// calls of the test, and the watchdog.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        let root = self.dir.path();
        let h = |sub: &str| self.home.join(sub).display().to_string();
        let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
        vec![
            ("PATH".into(), path),
            ("HOME".into(), self.home.display().to_string()),
            (
                "USER".into(),
                std::env::var("USER").unwrap_or_else(|_| "root".into()),
            ),
            ("SHELL".into(), "/bin/bash".into()),
            ("TERM".into(), "xterm-256color".into()),
            ("LANG".into(), "C.UTF-8".into()),
            ("XDG_CONFIG_HOME".into(), h(".config")),
            ("XDG_DATA_HOME".into(), h(".local/share")),
            ("XDG_STATE_HOME".into(), h(".local/state")),
            ("XDG_CACHE_HOME".into(), h(".cache")),
            (
                "TMUX_TMPDIR".into(),
                root.join("tmux").display().to_string(),
            ),
            ("AGENTDECK_SKIP_UPDATE_CHECK".into(), "1".into()),
            // No network: anything that tries goes to a closed local port.
            ("HTTP_PROXY".into(), "http://127.0.0.1:9".into()),
            ("HTTPS_PROXY".into(), "http://127.0.0.1:9".into()),
            ("http_proxy".into(), "http://127.0.0.1:9".into()),
            ("https_proxy".into(), "http://127.0.0.1:9".into()),
        ]
    }

    /// A command in the sandbox environment, and nothing else of ours.
    pub(crate) fn command(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        c.env_clear()
            .envs(self.env())
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        c
    }

    /// One call of the real CLI.
    pub(crate) fn cli(&self, args: &[&str]) -> Output {
        let mut c = self.command(&self.real);
        c.args(args);
        output_within(c, CALL_LIMIT)
    }

    /// One `--json` call that must succeed, parsed.
    pub(crate) fn cli_json(&self, args: &[&str]) -> Value {
        let out = self.cli(args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "agent-deck {args:?} failed ({:?}): {text}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("agent-deck {args:?}: {e}: {text}"))
    }

    /// `[-p P] <args>`: the global profile flag goes first.
    fn profiled<'a>(profile: &'a Option<String>, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = Vec::new();
        if let Some(p) = profile {
            all.extend(["-p", p.as_str()]);
        }
        all.extend_from_slice(args);
        all
    }

    /// Adds a session through the CLI, without starting it.
    pub(crate) fn add(&self, title: &str, group: &str, tool: Tool, profile: Option<&str>) -> Agent {
        let dir = self.dir.path().join("projects").join(title);
        fs::create_dir_all(&dir).expect("project dir");
        let profile = profile.map(str::to_string);
        let dir_s = dir.display().to_string();
        let c = match tool {
            Tool::Claude => "claude",
            Tool::Custom => fake_agent::TOOL,
        };
        let args = ["add", &dir_s, "-t", title, "-g", group, "-c", c, "--json"];
        let v = self.cli_json(&Self::profiled(&profile, &args));
        let id = v["id"].as_str().expect("add --json has an id").to_string();
        Agent {
            id,
            title: title.into(),
            dir,
            profile,
            started: Cell::new(None),
        }
    }

    /// Adds a session and starts it, waiting until the fake has booted and
    /// the CLI reads it healthy.
    pub(crate) fn launch(
        &self,
        title: &str,
        group: &str,
        tool: Tool,
        profile: Option<&str>,
    ) -> Agent {
        let a = self.add(title, group, tool, profile);
        self.start(&a);
        a
    }

    pub(crate) fn start(&self, a: &Agent) {
        let before = a.boots();
        self.start_only(a);
        let booted = wait_until(Duration::from_secs(20), || {
            a.boots() > before && is_healthy(&self.status(a))
        });
        assert!(booted, "{} never booted: {}", a.title, self.show(a));
    }

    /// `session start`, without waiting for the agent.
    pub(crate) fn start_only(&self, a: &Agent) {
        self.cli_json(&Self::profiled(
            &a.profile,
            &["session", "start", &a.id, "--json"],
        ));
        a.started.set(Some(Instant::now()));
    }

    /// Waits until the session's last start is past agent-deck's 60 s
    /// freshness window, so its guard no longer refuses a restart: the
    /// session is one that has run a while, like a conductor at 3 a.m.
    pub(crate) fn age_past_freshness(&self, a: &Agent) {
        let started = a.started.get().expect("the session was started");
        let window = Duration::from_secs(61);
        if let Some(left) = window.checked_sub(started.elapsed()) {
            std::thread::sleep(left);
        }
    }

    /// `session stop`.
    pub(crate) fn stop(&self, a: &Agent) {
        self.cli_json(&Self::profiled(
            &a.profile,
            &["session", "stop", &a.id, "--json"],
        ));
    }

    /// `session show --json`.
    pub(crate) fn show(&self, a: &Agent) -> Value {
        self.cli_json(&Self::profiled(
            &a.profile,
            &["session", "show", &a.id, "--json"],
        ))
    }

    pub(crate) fn status(&self, a: &Agent) -> String {
        self.show(a)["status"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub(crate) fn tmux_session(&self, a: &Agent) -> String {
        self.show(a)["tmux_session"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The row of `[-p P] list --json` for this session.
    pub(crate) fn list_row(&self, a: &Agent) -> Value {
        let rows = self.cli_json(&Self::profiled(&a.profile, &["list", "--json"]));
        rows.as_array()
            .and_then(|r| r.iter().find(|row| row["id"] == a.id.as_str()).cloned())
            .unwrap_or(Value::Null)
    }

    /// `tmux -L <socket> <args>`, on the sandbox's own server only.
    pub(crate) fn tmux(&self, args: &[&str]) -> Output {
        let mut c = self.command(Path::new("tmux"));
        c.arg("-L").arg(&self.socket).args(args);
        output_within(c, CALL_LIMIT)
    }

    /// The tmux session names alive on the sandbox's server, sorted.
    pub(crate) fn tmux_sessions(&self) -> Vec<String> {
        session_names(&self.tmux(&["list-sessions", "-F", "#{session_name}"]))
    }

    /// The pid of the session's pane process (`=NAME:` is the session's
    /// current window; a bare `=NAME` resolves no pane for `display`).
    pub(crate) fn pane_pid(&self, a: &Agent) -> i32 {
        let name = self.tmux_session(a);
        let target = format!("={name}:");
        let out = self.tmux(&["display", "-p", "-t", &target, "#{pane_pid}"]);
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("pane_pid of {name}: {e}: {out:?}"))
    }

    /// Kills the session's whole tmux session, the way a crash looks.
    pub(crate) fn kill_tmux_session(&self, a: &Agent) {
        let name = self.tmux_session(a);
        assert!(!name.is_empty(), "{} has no tmux session", a.title);
        let out = self.tmux(&["kill-session", "-t", &name]);
        assert!(out.status.success(), "kill-session {name}: {out:?}");
    }

    /// Runs `agent-deck hook-handler` for the session, as Claude's hooks do.
    pub(crate) fn hook(&self, a: &Agent, event: &str) {
        let sid = self.show(a)["claude_session_id"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let mut c = self.command(&self.real);
        c.arg("hook-handler")
            .env("AGENTDECK_INSTANCE_ID", &a.id)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = c.spawn().expect("run hook-handler");
        let payload = format!(
            "{{\"hook_event_name\":\"{event}\",\"session_id\":\"{sid}\",\"cwd\":\"{}\"}}",
            a.dir.display()
        );
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write;
            let _ = stdin.write_all(payload.as_bytes());
        }
        let done = wait_until(CALL_LIMIT, || matches!(child.try_wait(), Ok(Some(_))));
        assert!(done, "hook-handler did not finish");
    }

    /// agent-deck's hooks dir as it resolves it here (the XDG path).
    pub(crate) fn hooks_dir(&self) -> PathBuf {
        self.home.join(".local/share/agent-deck/hooks")
    }

    /// The watchdog's dir, at its default place under this `HOME`.
    pub(crate) fn watchdog_dir(&self) -> PathBuf {
        self.home.join(".agent-deck/watchdog")
    }

    /// The watchdog under test, in the sandbox environment, with the
    /// logging wrapper as its CLI and the given settings on top of ours.
    pub(crate) fn watchdog_command(&self, args: &[&str], settings: &[(&str, &str)]) -> Command {
        let mut c = self.command(Path::new(BIN));
        c.args(args)
            .env("AGENT_DECK_BIN", &self.logged)
            .env("TELEGRAM_API_BASE", "http://127.0.0.1:9");
        for (k, v) in TEST_SETTINGS.iter().chain(settings) {
            c.env(k, v);
        }
        c
    }

    /// Starts the daemon; it is killed when the handle drops.
    pub(crate) fn spawn_watchdog(&self, settings: &[(&str, &str)]) -> Daemon {
        let log = self.dir.path().join(format!("watchdog-{}.log", unique()));
        let child = self
            .watchdog_command(&["--verbose"], settings)
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).expect("watchdog log"))
            .spawn()
            .expect("spawn the watchdog");
        Daemon { child, log }
    }

    /// Runs the watchdog to completion (`--once`, a subcommand, …).
    pub(crate) fn run_watchdog(&self, args: &[&str], settings: &[(&str, &str)]) -> Output {
        output_within(self.watchdog_command(args, settings), CALL_LIMIT)
    }

    /// Every CLI call the watchdog made, one line each: `<ts> <argv…>`.
    pub(crate) fn watchdog_calls(&self) -> Vec<String> {
        fs::read_to_string(&self.calls_log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The watchdog's calls whose argv holds every one of `words`.
    pub(crate) fn watchdog_calls_with(&self, words: &[&str]) -> Vec<String> {
        self.watchdog_calls()
            .into_iter()
            .filter(|line| {
                let argv: Vec<&str> = line.split_whitespace().skip(1).collect();
                words.iter().all(|w| argv.contains(w))
            })
            .collect()
    }

    pub(crate) fn restarts(&self) -> Vec<RestartRecord> {
        read_lines(&self.watchdog_dir().join("restart.log"))
    }

    pub(crate) fn restarts_of(&self, a: &Agent, action: &str) -> Vec<RestartRecord> {
        self.restarts()
            .into_iter()
            .filter(|r| r.id == a.id && r.action == action)
            .collect()
    }

    pub(crate) fn liveness(&self) -> Vec<LivenessRecord> {
        read_lines(&self.watchdog_dir().join("liveness.log"))
    }

    pub(crate) fn escalations(&self) -> Vec<EscalationRecord> {
        read_lines(&self.watchdog_dir().join("escalations.log"))
    }

    fn spawn_notify_daemon(&self) -> Child {
        let log = fs::File::create(self.dir.path().join("notify-daemon.log")).expect("log");
        let err = log.try_clone().expect("log");
        self.command(&self.real)
            .arg("notify-daemon")
            .stdout(log)
            .stderr(err)
            .spawn()
            .expect("spawn notify-daemon")
    }

    /// Pids of processes still running with this sandbox's `HOME`.
    fn leftovers(&self) -> Vec<i32> {
        let needle = format!("HOME={}", self.home.display());
        let me = std::process::id() as i32;
        fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|&pid| pid != me)
            .filter(|pid| {
                fs::read(format!("/proc/{pid}/environ"))
                    .map(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
                    .unwrap_or(false)
            })
            .collect()
    }
}

/// Settings the live watchdog runs with: the defaults, but restarts spaced
/// a second apart and a short cooldown, so a test needs no minute-long wait.
const TEST_SETTINGS: [(&str, &str); 5] = [
    ("SAFETY_POLL_INTERVAL_S", "2"),
    ("MIN_GLOBAL_RESTART_INTERVAL_S", "1"),
    ("POST_RESTART_COOLDOWN_S", "3"),
    ("LIVENESS_CONFIRM_GAP_S", "0.5"),
    ("SUBPROCESS_TIMEOUT_S", "30"),
];

/// A status the watchdog leaves alone.
pub(crate) fn is_healthy(status: &str) -> bool {
    matches!(status, "running" | "waiting" | "idle")
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Some(mut n) = self.notify.take() {
            let _ = n.kill();
            let _ = n.wait();
        }
        let _ = self.tmux(&["kill-server"]);
        for pid in self.leftovers() {
            kill(pid, libc::SIGKILL);
        }
    }
}

impl Sandbox {
    /// Waits until the watchdog has made `n` more safety polls (`list
    /// --all`) than it had when called.
    pub(crate) fn wait_for_polls(&self, d: &Daemon, n: usize, limit: Duration) {
        let polls = || self.watchdog_calls_with(&["list", "--all"]).len();
        let target = polls() + n;
        let polled = wait_until(limit, || polls() >= target);
        assert!(
            polled,
            "the watchdog stopped polling; stderr:\n{}",
            d.stderr()
        );
    }

    /// The watchdog's calls of `session <verb>` for this session.
    pub(crate) fn session_calls(&self, a: &Agent, verb: &str) -> Vec<String> {
        self.watchdog_calls_with(&["session", verb, &a.id])
    }
}

/// The names `list-sessions -F '#{session_name}'` printed, sorted.
fn session_names(out: &Output) -> Vec<String> {
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    names.sort();
    names
}

/// A second tmux server in the sandbox, with one session, as the server of
/// the shell a watchdog is started from. Killed when dropped.
pub(crate) struct OtherServer {
    socket: PathBuf,
    pid: String,
    env: Vec<(String, String)>,
}

impl OtherServer {
    /// `TMUX` and `TMUX_PANE` as a shell in its pane has them.
    pub(crate) fn client_env(&self) -> [(&'static str, String); 2] {
        let tmux = format!("{},{},0", self.socket.display(), self.pid);
        [("TMUX", tmux), ("TMUX_PANE", "%0".to_owned())]
    }

    pub(crate) fn tmux(&self, args: &[&str]) -> Output {
        let mut c = Command::new("tmux");
        c.env_clear()
            .envs(self.env.iter().cloned())
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .stdin(Stdio::null());
        output_within(c, CALL_LIMIT)
    }

    /// The names of its sessions, sorted.
    pub(crate) fn sessions(&self) -> Vec<String> {
        session_names(&self.tmux(&["list-sessions", "-F", "#{session_name}"]))
    }
}

impl Drop for OtherServer {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

impl Sandbox {
    /// Starts a second tmux server on a socket in the sandbox dir, holding
    /// one session `bystander`.
    pub(crate) fn other_tmux_server(&self) -> OtherServer {
        let mut other = OtherServer {
            socket: self.dir.path().join("other-tmux.sock"),
            pid: String::new(),
            env: self.env(),
        };
        let made = other.tmux(&["new-session", "-d", "-s", "bystander", "sleep", "3600"]);
        assert!(made.status.success(), "{made:?}");
        let pid = other.tmux(&["display-message", "-p", "-t", "bystander", "#{pid}"]);
        other.pid = String::from_utf8_lossy(&pid.stdout).trim().to_owned();
        assert!(!other.pid.is_empty(), "{pid:?}");
        other
    }
}

/// For `benches/live.rs`: daemons run at their own defaults.
impl Sandbox {
    /// Starts `program args` in the sandbox environment with the logging
    /// wrapper as its `AGENT_DECK_BIN` and nothing else of ours (none of
    /// `TEST_SETTINGS`): our watchdog at its defaults, or another daemon to
    /// compare it with. Its stdout and stderr go to a log in the sandbox; it
    /// is killed when the handle drops.
    #[allow(dead_code)] // used by the bench, not by the live tests
    pub(crate) fn spawn_daemon(
        &self,
        program: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Daemon {
        let log = self.dir.path().join(format!("daemon-{}.log", unique()));
        let out = fs::File::create(&log).expect("daemon log");
        let err = out.try_clone().expect("daemon log");
        let child = self
            .command(program)
            .args(args)
            .env("AGENT_DECK_BIN", &self.logged)
            .envs(env.iter().copied())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", program.display()));
        Daemon { child, log }
    }
}
