//! The one place that starts child processes. Every child gets a null stdin
//! and its own process group; both pipes are read on the calling thread with
//! `poll(2)`, so neither can fill and no helper thread outlives the call, and
//! reading stops a short grace after the child exits, whatever a grandchild
//! still holds. On timeout or shutdown the group is killed and the child
//! reaped. "Could not start", "exited", "killed by signal", "timed out",
//! "interrupted" and "printed too much" stay distinct. [`run`] keeps a bounded
//! copy of both streams, [`run_whole`] all of stdout up to a ceiling.
//! Interpreting output is the caller's job.

use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
use rustix::process::{kill_process_group, Pid, Signal};

use crate::sys::shutdown::Shutdown;

/// At most this much of each stream is kept; the rest is drained and dropped.
const MAX_CAPTURE: usize = 8 * 1024 * 1024;
/// [`run_whole`] keeps at most this much of stderr (for an error message).
const WHOLE_STDERR: usize = 64 * 1024;
/// The size of one read (a Linux pipe's capacity).
const PIECE: usize = 64 * 1024;
/// How long to keep reading after the child exited, for a grandchild's output.
const PIPE_GRACE: Duration = Duration::from_millis(500);
/// The longest nap between checks whether a child with no open pipe exited.
const MAX_NAP: Duration = Duration::from_millis(25);
/// How long a killed child may take to be reaped before a thread waits instead.
const REAP_PATIENCE: Duration = Duration::from_secs(1);
/// At most this many reads from one pipe per wake-up, so a child that writes
/// without pause cannot keep the loop from seeing its deadline.
const READS_PER_WAKE: usize = 16;

/// What no child inherits: systemd's channel to the daemon, and the Telegram
/// bot token (a tmux server started by a restart would hand it to every agent).
const PRIVATE_ENV: [&str; 4] = [
    "NOTIFY_SOCKET",
    "WATCHDOG_USEC",
    "WATCHDOG_PID",
    "TELEGRAM_BOT_TOKEN",
];

/// What no child inherits either: a tmux client's variables, and those
/// agent-deck sets in its own panes (`internal/session/instance.go` and
/// `hermes.go` at 47bb2103). Handed to agent-deck, `TMUX` makes it ask
/// another tmux server, which reads every session `unknown` (1.14.0) or
/// `error` (1.16.0–1.16.16), and from 1.16.25 `AGENTDECK_INSTANCE_ID` tags a
/// `session send` as from that pane. `TMUX_TMPDIR`, `AGENTDECK_PROFILE` and
/// `CLAUDE_CONFIG_DIR` are kept: they say where, not from inside what.
const PANE_ENV: [&str; 7] = [
    "TMUX",
    "TMUX_PANE",
    "AGENTDECK_INSTANCE_ID",
    "AGENTDECK_TITLE",
    "AGENTDECK_TOOL",
    "AGENTDECK_HOOK_GENERATION",
    "AGENTDECK_TOOL_SESSION_ID",
];
/// Names that begin so are [`PANE_ENV`] too.
const PANE_ENV_PREFIX: &str = "AGENTDECK_RESOLVED_";

/// Whether `name` belongs to a tmux client or an agent-deck pane.
pub(crate) fn is_pane_env(name: &str) -> bool {
    PANE_ENV.contains(&name) || name.starts_with(PANE_ENV_PREFIX)
}

/// A command: program, arguments, and environment changes (`None` removes).
#[derive(Debug, Clone, Default)]
pub(crate) struct Cmd {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, Option<OsString>)>,
}

impl Cmd {
    pub(crate) fn new(program: impl Into<PathBuf>) -> Cmd {
        Cmd {
            program: program.into(),
            ..Cmd::default()
        }
    }

    pub(crate) fn arg(self, a: impl Into<OsString>) -> Cmd {
        self.args([a])
    }

    pub(crate) fn args(mut self, args: impl IntoIterator<Item = impl Into<OsString>>) -> Cmd {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub(crate) fn env(mut self, k: impl Into<OsString>, v: impl Into<OsString>) -> Cmd {
        self.env.push((k.into(), Some(v.into())));
        self
    }

    pub(crate) fn env_remove(mut self, k: impl Into<OsString>) -> Cmd {
        self.env.push((k.into(), None));
        self
    }

    /// The program with its arguments and a null stdin; the private and pane
    /// variables scrubbed, then this command's own changes.
    fn base(&self) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.args).stdin(Stdio::null());
        for k in PRIVATE_ENV {
            c.env_remove(k);
        }
        // The names are read where they are dropped: `Command` inherits the
        // whole environment, so only it knows which prefixed names exist.
        for (k, _) in std::env::vars_os() {
            if k.to_str().is_some_and(is_pane_env) {
                c.env_remove(k);
            }
        }
        for (k, v) in &self.env {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        c
    }
}

/// What a child that ran to the end produced, each stream lossily decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Output {
    /// The exit code, or `None` when a signal ended it.
    pub code: Option<i32>,
    pub signal: Option<i32>,
    /// Empty after [`run_whole`], which hands the bytes back beside it.
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub(crate) fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// Why a child produced no [`Output`].
#[derive(Debug)]
pub(crate) enum RunError {
    /// The program could not be started (missing, not executable, …).
    Spawn(std::io::Error),
    /// It ran past the timeout; its process group was killed and reaped.
    TimedOut(Duration),
    /// Shutdown came first; its process group was killed and reaped.
    Interrupted,
    /// More than this many bytes on stdout; its process group was killed.
    TooLong(usize),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Spawn(e) => write!(f, "could not start: {e}"),
            RunError::TimedOut(d) => {
                write!(f, "timed out after {:.1}s and was killed", d.as_secs_f64())
            }
            RunError::Interrupted => f.write_str("interrupted by shutdown and killed"),
            RunError::TooLong(n) => write!(f, "printed more than {} MiB and was killed", n >> 20),
        }
    }
}

/// Runs `job` within `timeout`, keeping [`MAX_CAPTURE`] bytes of each stream.
pub(crate) fn run(job: &Cmd, timeout: Duration, shutdown: &Shutdown) -> Result<Output, RunError> {
    let limits = (usize::MAX, MAX_CAPTURE, MAX_CAPTURE);
    let (mut ended, stdout) = supervised(job, timeout, shutdown, limits)?;
    ended.stdout = String::from_utf8_lossy(&stdout).into_owned();
    Ok(ended)
}

/// Runs `job` like [`run`], but keeps all of its stdout, as bytes, killing it
/// past `ceiling` ([`RunError::TooLong`]); stderr up to [`WHOLE_STDERR`].
pub(crate) fn run_whole(
    job: &Cmd,
    timeout: Duration,
    shutdown: &Shutdown,
    ceiling: usize,
) -> Result<(Output, Vec<u8>), RunError> {
    // One byte past the ceiling is kept, to tell an answer that passed it.
    let limits = (ceiling, ceiling.saturating_add(1), WHOLE_STDERR);
    supervised(job, timeout, shutdown, limits)
}

/// [`run`] and [`run_whole`]: stdout past `ceiling` kills, `*_kept` is kept.
fn supervised(
    job: &Cmd,
    timeout: Duration,
    shutdown: &Shutdown,
    (ceiling, stdout_kept, stderr_kept): (usize, usize, usize),
) -> Result<(Output, Vec<u8>), RunError> {
    if shutdown.is_set() {
        return Err(RunError::Interrupted);
    }
    let started = Instant::now();
    let mut c = job.base();
    c.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = c.spawn().map_err(RunError::Spawn)?;
    // Both pipes close when this call returns, whoever else holds their
    // other ends: nothing of ours is left waiting on a grandchild.
    let pipes = nonblocking(child.stdout.take())
        .and_then(|out| Ok((out, nonblocking(child.stderr.take())?)));
    let (out, err) = match pipes {
        Ok(p) => p,
        Err(e) => {
            stop(child);
            return Err(RunError::Spawn(e));
        }
    };
    let mut io = Streams {
        out: Pipe::new(out, stdout_kept),
        err: Pipe::new(err, stderr_kept),
        ceiling,
        buf: vec![0u8; PIECE],
    };
    let deadline = started
        .checked_add(timeout)
        .unwrap_or(started + Duration::from_secs(365 * 24 * 3600));
    match supervise(&mut child, &mut io, (deadline, timeout), shutdown) {
        Ok(status) => Ok((
            Output {
                code: status.code(),
                signal: status.signal(),
                stdout: String::new(),
                stderr: String::from_utf8_lossy(&io.err.kept).into_owned(),
            },
            io.out.kept,
        )),
        Err((e, reaped)) => {
            // A child reaped already is not killed: its pid may name another
            // process by now.
            if !reaped {
                stop(child);
            }
            Err(e)
        }
    }
}

/// Reads both pipes until the child has exited and they closed or the grace
/// passed; or the deadline or shutdown came first; or stdout passed the
/// ceiling. Never kills: an error says whether the child was reaped.
fn supervise(
    child: &mut Child,
    io: &mut Streams,
    (deadline, timeout): (Instant, Duration),
    shutdown: &Shutdown,
) -> Result<ExitStatus, (RunError, bool)> {
    let mut nap = Duration::from_millis(1);
    let mut exited: Option<(ExitStatus, Instant)> = None;
    loop {
        if exited.is_none() {
            match child.try_wait() {
                Ok(Some(status)) => exited = Some((status, Instant::now() + PIPE_GRACE)),
                Ok(None) => {}
                Err(e) => return Err((RunError::Spawn(e), false)),
            }
        }
        if io.out.kept.len() > io.ceiling {
            return Err((RunError::TooLong(io.ceiling), exited.is_some()));
        }
        let now = Instant::now();
        let until = match exited {
            // The answer is complete; a shutdown need not wait for stragglers.
            Some((status, grace_end)) => {
                let open = io.out.file.is_some() || io.err.file.is_some();
                if !open || now >= grace_end || shutdown.is_set() {
                    return Ok(status);
                }
                grace_end
            }
            None if shutdown.is_set() => return Err((RunError::Interrupted, false)),
            None if now >= deadline => return Err((RunError::TimedOut(timeout), false)),
            // Pipes held open by a grandchild, or closed early by the child,
            // do not tell when the child exits: look again soon.
            None => deadline.min(now + nap),
        };
        let pipes = [
            io.out.file.as_ref().map(AsFd::as_fd),
            io.err.file.as_ref().map(AsFd::as_fd),
        ];
        let woke = shutdown.wait_readable(&pipes, Some(until - now));
        nap = if woke && io.read_available() {
            Duration::from_millis(1)
        } else {
            (nap * 2).min(MAX_NAP)
        };
    }
}

/// Both pipes of one child.
struct Streams {
    out: Pipe,
    err: Pipe,
    /// Stdout past this many bytes ends the call.
    ceiling: usize,
    /// One read buffer for both pipes, reused for the whole call.
    buf: Vec<u8>,
}

impl Streams {
    /// Reads what both pipes have; true when anything happened (bytes, EOF).
    fn read_available(&mut self) -> bool {
        let from_out = self.out.read_available(&mut self.buf);
        self.err.read_available(&mut self.buf) | from_out
    }
}

/// One pipe of a child, non-blocking (`None` at EOF), and what is kept of
/// what it gave: at most `cap` bytes, the rest is read and dropped.
struct Pipe {
    file: Option<File>,
    kept: Vec<u8>,
    cap: usize,
}

impl Pipe {
    fn new(file: Option<File>, cap: usize) -> Pipe {
        Pipe {
            file,
            kept: Vec::new(),
            cap,
        }
    }

    /// Reads what the pipe has; true on bytes or EOF.
    fn read_available(&mut self, buf: &mut [u8]) -> bool {
        let Some(file) = self.file.as_mut() else {
            return false;
        };
        let mut read_any = false;
        for _ in 0..READS_PER_WAKE {
            match file.read(buf) {
                Ok(n) if n > 0 => {
                    read_any = true;
                    let room = self.cap.saturating_sub(self.kept.len());
                    self.kept.extend_from_slice(&buf[..n.min(room)]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return read_any,
                // EOF, or a pipe that cannot be read: closed either way.
                _ => {
                    self.file = None;
                    return true;
                }
            }
        }
        true
    }
}

/// A child's pipe end, made non-blocking.
fn nonblocking(pipe: Option<impl Into<OwnedFd>>) -> std::io::Result<Option<File>> {
    let Some(fd) = pipe.map(Into::into) else {
        return Ok(None);
    };
    fcntl_setfl(&fd, fcntl_getfl(&fd)? | OFlags::NONBLOCK)?;
    Ok(Some(File::from(fd)))
}

/// Kills the child's whole group and reaps the child; one that SIGKILL
/// cannot end at once (uninterruptible sleep) is left to a helper thread.
fn stop(mut child: Child) {
    let pid = child.id();
    // The child is not reaped yet, so its pid still names its group.
    if let Some(pgid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = kill_process_group(pgid, Signal::KILL);
    }
    let give_up = Instant::now() + REAP_PATIENCE;
    let mut nap = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return,
            Ok(None) if Instant::now() >= give_up => break,
            Ok(None) => {
                std::thread::sleep(nap);
                nap = (nap * 2).min(MAX_NAP);
            }
        }
    }
    log::warn!("child {pid} outlived SIGKILL for a second; it is reaped in the background");
    reap_in_background(child, "child-reaper");
}

/// A named thread that waits for `child`, so it never lingers as a zombie.
fn reap_in_background(mut child: Child, name: &str) {
    let _ = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let _ = child.wait();
        });
}

/// Starts `job` in its own session, output appended to `log`; returns its pid
/// (the child is reaped when it exits).
pub(crate) fn spawn_detached(job: &Cmd, log: &std::path::Path) -> std::io::Result<u32> {
    if let Some(dir) = log.parent() {
        crate::sys::fs::create_private_dirs(dir)?;
    }
    let out = crate::sys::fs::open_append(log)?;
    let mut c = job.base();
    c.stderr(out.try_clone()?).stdout(out);
    // SAFETY: the hook runs in the forked child before exec; setsid is
    // async-signal-safe and touches no memory of the parent.
    unsafe {
        c.pre_exec(|| rustix::process::setsid().map(drop).map_err(Into::into));
    }
    let child = c.spawn()?;
    let pid = child.id();
    reap_in_background(child, "task-reaper");
    Ok(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Cmd {
        Cmd::new("/bin/sh").arg("-c").arg(script)
    }

    fn quiet() -> Shutdown {
        Shutdown::new().unwrap()
    }

    fn run_sh(script: &str, timeout: Duration) -> Result<Output, RunError> {
        run(&sh(script), timeout, &quiet())
    }

    #[test]
    fn captures_both_streams_and_exit_code() {
        let out = run_sh("echo out; echo err >&2; exit 3", Duration::from_secs(10)).unwrap();
        assert_eq!(out.code, Some(3));
        assert_eq!(out.stdout, "out\n");
        assert_eq!(out.stderr, "err\n");
    }

    #[test]
    fn the_variables_of_a_tmux_client_and_an_agent_deck_pane_are_told_apart() {
        for name in [
            "TMUX",
            "TMUX_PANE",
            "AGENTDECK_INSTANCE_ID",
            "AGENTDECK_TITLE",
            "AGENTDECK_TOOL",
            "AGENTDECK_HOOK_GENERATION",
            "AGENTDECK_RESOLVED_CONFIG_DIR",
            "AGENTDECK_RESOLVED_GROUP",
            "AGENTDECK_RESOLVED_SOURCE",
            "AGENTDECK_TOOL_SESSION_ID",
        ] {
            assert!(is_pane_env(name), "{name}");
        }
        for name in [
            "TMUX_TMPDIR",
            "AGENTDECK_PROFILE",
            "CLAUDE_CONFIG_DIR",
            "AGENTDECK_TOOLS",
            "TMUXP",
            "HOME",
        ] {
            assert!(!is_pane_env(name), "{name}");
        }
    }

    #[test]
    fn stdin_is_null() {
        let out = run_sh("cat; echo done", Duration::from_secs(10)).unwrap();
        assert_eq!(out.stdout, "done\n");
    }

    #[test]
    fn large_output_does_not_deadlock() {
        let out = run_sh(
            "head -c 3000000 /dev/zero; head -c 3000000 /dev/zero >&2",
            Duration::from_secs(20),
        )
        .unwrap();
        assert_eq!(out.stdout.len(), 3_000_000);
        assert_eq!(out.stderr.len(), 3_000_000);
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let tmp = tempfile::tempdir().unwrap();
        let pidfile = tmp.path().join("pid");
        let script = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
        let start = Instant::now();
        let err = run_sh(&script, Duration::from_millis(300)).unwrap_err();
        assert!(matches!(err, RunError::TimedOut(_)), "{err}");
        assert!(start.elapsed() < Duration::from_secs(5));
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The grandchild was in the group: it must be gone (or a zombie being reaped by init).
        let gone = (0..100).any(|_| {
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| !s.contains(") Z "))
                .unwrap_or(false);
            if alive {
                std::thread::sleep(Duration::from_millis(20));
            }
            !alive
        });
        assert!(gone, "grandchild {pid} survived the timeout");
    }

    #[test]
    fn shutdown_stops_a_running_child_within_a_second() {
        let tmp = tempfile::tempdir().unwrap();
        let started = tmp.path().join("started");
        let script = format!("touch {}; sleep 30", started.display());
        let s = quiet();
        let s2 = s.clone();
        let t = std::thread::spawn(move || run(&sh(&script), Duration::from_secs(60), &s2));
        let deadline = Instant::now() + Duration::from_secs(10);
        while !started.exists() {
            assert!(Instant::now() < deadline, "the child never started");
            std::thread::sleep(Duration::from_millis(5));
        }
        let asked = Instant::now();
        s.trigger();
        assert!(matches!(t.join().unwrap(), Err(RunError::Interrupted)));
        assert!(
            asked.elapsed() < Duration::from_secs(1),
            "{:?}",
            asked.elapsed()
        );
    }

    /// Children that leave a `sleep 30` behind holding both pipes; the
    /// sleeps are killed when this drops.
    struct Lingering {
        pids: std::path::PathBuf,
        _dir: tempfile::TempDir,
    }

    impl Lingering {
        fn new() -> Lingering {
            let dir = tempfile::tempdir().unwrap();
            Lingering {
                pids: dir.path().join("pids"),
                _dir: dir,
            }
        }

        /// Prints `answer` on stdout and `note` on stderr, exits 0, and
        /// leaves a grandchild with both pipes open.
        fn cmd(&self, answer: &str, note: &str) -> Cmd {
            sh(&format!(
                "echo '{answer}'; echo '{note}' >&2; sleep 30 & echo $! >> {}",
                self.pids.display()
            ))
        }
    }

    impl Drop for Lingering {
        fn drop(&mut self) {
            let pids = std::fs::read_to_string(&self.pids).unwrap_or_default();
            for pid in pids.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                if let Some(pid) = Pid::from_raw(pid) {
                    let _ = rustix::process::kill_process(pid, Signal::KILL);
                }
            }
        }
    }

    #[test]
    fn a_grandchild_holding_stdout_keeps_the_output_already_read() {
        let lingering = Lingering::new();
        let start = Instant::now();
        let out = run(
            &lingering.cmd(r#"[{"id":"a"}]"#, "note"),
            Duration::from_secs(20),
            &quiet(),
        )
        .unwrap();
        assert_eq!(out.code, Some(0));
        assert_eq!(out.stdout, "[{\"id\":\"a\"}]\n");
        assert_eq!(out.stderr, "note\n");
        let took = start.elapsed();
        assert!(took < PIPE_GRACE + Duration::from_secs(1), "took {took:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn no_thread_outlives_a_call_whose_grandchild_holds_the_pipes() {
        const PROBE: &str = "AGENT_DECK_WATCHDOG_THREAD_PROBE";
        let name = "no_thread_outlives_a_call_whose_grandchild_holds_the_pipes";
        if std::env::var_os(PROBE).is_none() {
            // Other tests start threads in this process: count in a process of our own.
            let module = module_path!().split_once("::").map_or("", |(_, m)| m);
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([&format!("{module}::{name}"), "--exact", "--test-threads=1"])
                .env(PROBE, "1")
                .output()
                .unwrap();
            let report = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && report.contains("1 passed"),
                "{report}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            return;
        }
        let threads = || std::fs::read_dir("/proc/self/task").unwrap().count();
        let lingering = Lingering::new();
        let before = threads();
        let answers: Vec<String> = (0..4)
            .map(|i| {
                let job = lingering.cmd(&format!("answer {i}"), "note");
                run(&job, Duration::from_secs(20), &quiet()).unwrap().stdout
            })
            .collect();
        assert_eq!(threads(), before, "threads left behind by 4 calls");
        assert_eq!(
            answers,
            ["answer 0\n", "answer 1\n", "answer 2\n", "answer 3\n"]
        );
    }

    #[test]
    fn a_child_that_closes_its_pipes_still_times_out() {
        let start = Instant::now();
        let err = run_sh("exec >&- 2>&-; sleep 30", Duration::from_millis(300)).unwrap_err();
        assert!(matches!(err, RunError::TimedOut(_)), "{err}");
        assert!(start.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn output_beyond_the_cap_is_dropped_and_the_child_not_blocked() {
        let out = run_sh(
            &format!("head -c {} /dev/zero; echo done >&2", MAX_CAPTURE + 100_000),
            Duration::from_secs(20),
        )
        .unwrap();
        assert_eq!(out.code, Some(0));
        assert_eq!(out.stdout.len(), MAX_CAPTURE);
        assert_eq!(out.stderr, "done\n");
    }

    #[test]
    fn a_whole_call_keeps_all_of_stdout_as_bytes_and_a_bounded_stderr() {
        let (done, stdout) = run_whole(
            &sh("head -c 9000000 /dev/zero; printf '\\377'; head -c 1000000 /dev/zero >&2; exit 4"),
            Duration::from_secs(20),
            &quiet(),
            10_000_000,
        )
        .unwrap();
        assert_eq!(done.code, Some(4));
        assert_eq!(
            (done.stdout.as_str(), done.stderr.len()),
            ("", WHOLE_STDERR)
        );
        assert_eq!(
            stdout.len(),
            9_000_001,
            "past the {MAX_CAPTURE} bytes `run` keeps"
        );
        assert_eq!(stdout.last(), Some(&0xff));
    }

    #[test]
    fn an_answer_past_the_ceiling_is_cut_and_killed() {
        let start = Instant::now();
        let result = run_whole(
            &sh("cat /dev/zero"),
            Duration::from_secs(60),
            &quiet(),
            1 << 20,
        );
        assert!(
            matches!(result, Err(RunError::TooLong(n)) if n == 1 << 20),
            "{result:?}"
        );
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn missing_program_is_a_spawn_error() {
        let err = run(
            &Cmd::new("/nonexistent/agent-deck"),
            Duration::from_secs(1),
            &quiet(),
        )
        .unwrap_err();
        assert!(matches!(err, RunError::Spawn(_)));
        assert!(err.to_string().starts_with("could not start"));
    }

    #[test]
    fn killed_by_signal_is_reported() {
        let out = run_sh("kill -9 $$", Duration::from_secs(10)).unwrap();
        assert_eq!(out.code, None);
        assert_eq!(out.signal, Some(9));
    }
}
