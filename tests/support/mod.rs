//! What the black-box tests share: the simulated agent-deck ([`sim`]), the
//! watchdog under test ([`watchdog`]), fleet fixtures, files written the way
//! agent-deck writes them, task set-ups, a Telegram stand-in, and waiting on
//! a condition or a process with a deadline (never a fixed sleep).

pub(crate) mod contract;
pub(crate) mod files;
pub(crate) mod fixtures;
pub(crate) mod sim;
pub(crate) mod tasks;
pub(crate) mod telegram;
pub(crate) mod watchdog;

use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The binary under test.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_agent-deck-watchdog");

/// Polls `cond` every 20 ms until it is true (returns true) or `timeout`
/// passes (returns false). `cond` is always tried at least once.
pub(crate) fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
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

/// Runs `cmd` to completion, failing the test if it takes longer than
/// `limit` (the process is then killed).
pub(crate) fn output_within(mut cmd: Command, limit: Duration) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id() as i32;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            kill(pid, libc::SIGKILL);
            panic!("{cmd:?} did not finish within {limit:?}");
        }
    }
}

/// Sends `sig` to `pid` (one the test started); a gone process is fine.
pub(crate) fn kill(pid: i32, sig: i32) {
    let target = rustix::process::Pid::from_raw(pid);
    let signal = rustix::process::Signal::from_named_raw(sig);
    if let (Some(target), Some(signal)) = (target, signal) {
        let _ = rustix::process::kill_process(target, signal);
    }
}

/// Wall-clock time in float Unix seconds, the unit of every record.
pub(crate) fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}
