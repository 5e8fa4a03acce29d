//! The one place that starts child processes.
//!
//! Every child gets a null stdin and its own process group. Its stdout and
//! stderr are drained on helper threads so neither pipe can fill and deadlock.
//! On timeout or shutdown the whole group is killed and the child reaped; the
//! outcomes "could not start", "exited", "killed by signal", "timed out" and
//! "interrupted" stay distinct. Interpreting output is the caller's job.

use std::ffi::OsString;
use std::fmt;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crossbeam_channel::{after, bounded, select, Receiver};

use crate::sys::shutdown::Shutdown;

/// At most this much of each stream is kept; the rest is drained and dropped.
const MAX_CAPTURE: usize = 8 * 1024 * 1024;
/// How long to wait for the pipes to close after the child itself exited
/// (a grandchild that escaped the group may hold them open).
const PIPE_GRACE: Duration = Duration::from_secs(2);

/// A command to run: program, arguments, and changes to the inherited
/// environment.
#[derive(Debug, Clone)]
pub struct Cmd {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env_set: Vec<(OsString, OsString)>,
    pub env_remove: Vec<OsString>,
}

impl Cmd {
    pub fn new(program: impl Into<PathBuf>) -> Cmd {
        Cmd {
            program: program.into(),
            args: Vec::new(),
            env_set: Vec::new(),
            env_remove: Vec::new(),
        }
    }

    pub fn arg(mut self, a: impl Into<OsString>) -> Cmd {
        self.args.push(a.into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, k: impl Into<OsString>, v: impl Into<OsString>) -> Cmd {
        self.env_set.push((k.into(), v.into()));
        self
    }

    pub fn env_remove(mut self, k: impl Into<OsString>) -> Cmd {
        self.env_remove.push(k.into());
        self
    }

    fn command(&self) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        scrub(&mut c);
        for k in &self.env_remove {
            c.env_remove(k);
        }
        for (k, v) in &self.env_set {
            c.env(k, v);
        }
        c
    }
}

/// What a child that ran to the end produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// The exit code, or `None` when a signal ended it.
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// Why a child produced no [`Output`].
#[derive(Debug)]
pub enum RunError {
    /// The program could not be started (missing, not executable, …).
    Spawn(std::io::Error),
    /// It ran past the timeout; its process group was killed and reaped.
    TimedOut(Duration),
    /// Shutdown came first; its process group was killed and reaped.
    Interrupted,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Spawn(e) => write!(f, "could not start: {e}"),
            RunError::TimedOut(d) => {
                write!(f, "timed out after {:.1}s and was killed", d.as_secs_f64())
            }
            RunError::Interrupted => f.write_str("interrupted by shutdown and killed"),
        }
    }
}

/// Runs `job` to completion, within `timeout`, or until `shutdown`.
pub fn run(job: &Cmd, timeout: Duration, shutdown: &Shutdown) -> Result<Output, RunError> {
    if shutdown.is_set() {
        return Err(RunError::Interrupted);
    }
    let mut child = job.command().spawn().map_err(RunError::Spawn)?;
    let pid = child.id() as libc::pid_t;
    let out_rx = drain(child.stdout.take());
    let err_rx = drain(child.stderr.take());
    let (done_tx, done_rx) = bounded(1);
    let waiter = std::thread::Builder::new()
        .name("child-wait".into())
        .spawn(move || {
            let _ = done_tx.send(child.wait());
        });
    if waiter.is_err() {
        kill_group(pid);
        return Err(RunError::Spawn(std::io::Error::other(
            "could not start a waiter thread",
        )));
    }
    let deadline = after(timeout);
    let status = select! {
        recv(done_rx) -> r => r.ok(),
        recv(shutdown.receiver()) -> _ => { kill_group(pid); let _ = done_rx.recv(); return Err(RunError::Interrupted) }
        recv(deadline) -> _ => { kill_group(pid); let _ = done_rx.recv(); return Err(RunError::TimedOut(timeout)) }
    };
    let status = match status {
        Some(Ok(s)) => s,
        Some(Err(e)) => return Err(RunError::Spawn(e)),
        None => {
            return Err(RunError::Spawn(std::io::Error::other(
                "waiter thread vanished",
            )))
        }
    };
    let grace = Instant::now() + PIPE_GRACE;
    Ok(Output {
        code: status.code(),
        signal: status.signal(),
        stdout: collect(&out_rx, grace),
        stderr: collect(&err_rx, grace),
    })
}

/// Starts `job` detached in its own session, stdin null, stdout and stderr
/// appended to `log`, and returns its pid. A helper thread reaps it when it
/// exits, so it never lingers as a zombie of a long-running daemon.
pub fn spawn_detached(job: &Cmd, log: &std::path::Path) -> std::io::Result<u32> {
    if let Some(dir) = log.parent() {
        crate::sys::fs::create_private_dirs(dir)?;
    }
    let out = crate::sys::fs::open_append(log)?;
    let err = out.try_clone()?;
    let mut c = Command::new(&job.program);
    c.args(&job.args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    for k in &job.env_remove {
        c.env_remove(k);
    }
    for (k, v) in &job.env_set {
        c.env(k, v);
    }
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        c.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    scrub(&mut c);
    let mut child = c.spawn()?;
    let pid = child.id();
    let _ = std::thread::Builder::new()
        .name("task-reaper".into())
        .spawn(move || {
            let _ = child.wait();
        });
    Ok(pid)
}

/// What no child inherits: systemd's channel to the daemon, and the Telegram
/// bot token (a tmux server started by a restart would hand it to every agent).
const PRIVATE_ENV: [&str; 4] = [
    "NOTIFY_SOCKET",
    "WATCHDOG_USEC",
    "WATCHDOG_PID",
    "TELEGRAM_BOT_TOKEN",
];

fn scrub(c: &mut Command) {
    for k in PRIVATE_ENV {
        c.env_remove(k);
    }
}

/// Reads a pipe to its end on a helper thread.
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> Receiver<Vec<u8>> {
    let (tx, rx) = bounded(1);
    if let Some(mut pipe) = pipe {
        let _ = std::thread::Builder::new()
            .name("child-pipe".into())
            .spawn(move || {
                let mut kept = Vec::new();
                let mut buf = [0u8; 16 * 1024];
                loop {
                    match pipe.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            let room = MAX_CAPTURE.saturating_sub(kept.len());
                            kept.extend_from_slice(&buf[..n.min(room)]);
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(_) => break,
                    }
                }
                let _ = tx.send(kept);
            });
    }
    rx
}

fn collect(rx: &Receiver<Vec<u8>>, until: Instant) -> String {
    let bytes = rx.recv_deadline(until).unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// SIGKILL to the child's whole process group. Harmless if it is gone.
fn kill_group(pgid: libc::pid_t) {
    // SAFETY: kill(2) with a negative pid addresses a process group; no memory is involved.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
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

    #[test]
    fn captures_both_streams_and_exit_code() {
        let out = run(
            &sh("echo out; echo err >&2; exit 3"),
            Duration::from_secs(10),
            &quiet(),
        )
        .unwrap();
        assert_eq!(out.code, Some(3));
        assert_eq!(out.stdout, "out\n");
        assert_eq!(out.stderr, "err\n");
    }

    #[test]
    fn stdin_is_null() {
        let out = run(&sh("cat; echo done"), Duration::from_secs(10), &quiet()).unwrap();
        assert_eq!(out.stdout, "done\n");
    }

    #[test]
    fn large_output_does_not_deadlock() {
        let out = run(
            &sh("head -c 3000000 /dev/zero; head -c 3000000 /dev/zero >&2"),
            Duration::from_secs(20),
            &quiet(),
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
        let err = run(&sh(&script), Duration::from_millis(300), &quiet()).unwrap_err();
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
    fn shutdown_interrupts_a_running_child() {
        let s = quiet();
        let s2 = s.clone();
        let t = std::thread::spawn(move || run(&sh("sleep 30"), Duration::from_secs(60), &s2));
        s.trigger();
        assert!(matches!(t.join().unwrap(), Err(RunError::Interrupted)));
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
        let out = run(&sh("kill -9 $$"), Duration::from_secs(10), &quiet()).unwrap();
        assert_eq!(out.code, None);
        assert_eq!(out.signal, Some(9));
    }
}
