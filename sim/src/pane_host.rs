//! `sim pane-host`: the long-lived stand-in for agent-deck's tmux server, so
//! the panes of the simulated fleet are real processes a pane watch can wait
//! on. Not an agent-deck command, so not logged.
//!
//! It is the parent and only reaper of one sleeping child (`sim pane`, which
//! exits when its stdin, a pipe from the host, closes) per live session's
//! tmux name. Every [`TICK`] it carries out [`reconcile`]'s plan under the
//! state's lock and records itself as `pane_host`. It stops when its stdin
//! closes, on SIGTERM, SIGINT or SIGHUP, or when the state file is gone: it
//! then kills and reaps every child, drops `pane_host` and exits 0. Killed
//! outright, it leaves no orphan either: its children see their stdin close.
//! It signals nothing but its own children.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::RecvTimeoutError;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use super::file::transact_existing;
use super::reconcile::{reconcile, Held};
use super::reply::Reply;
use super::state::{PaneHost, SimState};
use super::{
    kill_first, state_path, SimEnv, ENTRY, LOG_ENV, PANE_COMMAND, PANE_HOST_COMMAND, STATE_ENV,
};

/// How often the host reads the state.
pub(super) const TICK: Duration = Duration::from_millis(20);

/// `sim pane`: a pane's process. It waits for its stdin to close (the host
/// keeps the other end of the pipe) and exits 0.
pub(super) fn pane(args: &[String]) -> Result<Reply, Reply> {
    if !args.is_empty() {
        return Err(Reply::err(2, format!("Usage: {PANE_COMMAND}\n")));
    }
    let _ = io::copy(&mut io::stdin().lock(), &mut io::sink());
    Ok(Reply::out(0, String::new()))
}

pub(super) fn run(args: &[String], env: &SimEnv) -> Result<Reply, Reply> {
    if !args.is_empty() {
        return Err(Reply::err(2, format!("Usage: {PANE_HOST_COMMAND}\n")));
    }
    let path = state_path(env)?;
    let exe = std::env::current_exe()
        .map_err(|e| Reply::err(1, format!("Error: cannot find this program: {e}\n")))?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [SIGTERM, SIGINT, SIGHUP] {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(&stop)) {
            eprintln!("warning: cannot catch signal {sig}: {e}; continuing");
        }
    }
    let stdin_open = watch_stdin();
    let mut host = Host {
        exe,
        ..Host::default()
    };
    loop {
        match transact_existing(path, |st| host.tick(st)) {
            Ok(Some(())) => host.warned = None,
            Ok(None) => break,
            Err(e) => host.warn(format!("{e}")),
        }
        if stop.load(Ordering::SeqCst) {
            break;
        }
        match stdin_open.recv_timeout(TICK) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    host.kill_all();
    if let Err(e) = transact_existing(path, |st| st.pane_host = None) {
        let shown = path.display();
        eprintln!("warning: cannot clear the pane host from {shown}: {e}");
    }
    Ok(Reply::out(0, String::new()))
}

/// A receiver that disconnects when this process's stdin reaches its end
/// (or fails).
fn watch_stdin() -> crossbeam_channel::Receiver<()> {
    let (tx, rx) = crossbeam_channel::bounded::<()>(0);
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        let mut stdin = io::stdin().lock();
        while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
        drop(tx);
    });
    rx
}

/// A pane's child, and the `last_started` it was spawned for.
struct HostedPane {
    child: Child,
    held: Held,
}

/// The children and what is needed to spawn more.
#[derive(Default)]
struct Host {
    exe: PathBuf,
    panes: BTreeMap<String, HostedPane>,
    orphans: BTreeMap<String, Child>,
    /// The last problem reported, so a lasting one is said once.
    warned: Option<String>,
}

impl Host {
    fn warn(&mut self, what: String) {
        if self.warned.as_ref() != Some(&what) {
            eprintln!("warning: pane host: {what}; retrying");
            self.warned = Some(what);
        }
    }

    /// One reconcile against the locked state, which it updates.
    fn tick(&mut self, st: &mut SimState) {
        for pane in self.panes.values_mut().filter(|p| !p.held.exited) {
            pane.held.exited = matches!(pane.child.try_wait(), Ok(Some(_)));
        }
        self.orphans
            .retain(|_, child| matches!(child.try_wait(), Ok(None)));
        let held = self.panes.iter().map(|(n, p)| (n.clone(), p.held));
        let orphans: BTreeSet<String> = self.orphans.keys().cloned().collect();
        let plan = reconcile(st, &held.collect(), &orphans);
        let to_kill = plan.kill_orphans.iter();
        to_kill.filter_map(|n| self.orphans.remove(n)).for_each(end);
        let panes = plan.kill.iter().filter_map(|n| self.panes.remove(n));
        panes.for_each(|pane| end(pane.child));
        for name in plan.orphan {
            if let Some(pane) = self.panes.remove(&name) {
                self.orphans.insert(name, pane.child);
            }
        }
        for (name, started) in plan.spawn {
            match self.spawn() {
                Ok(child) => {
                    let held = Held {
                        started,
                        exited: false,
                    };
                    self.panes.insert(name, HostedPane { child, held });
                }
                Err(e) => self.warn(format!("cannot start the pane of {name}: {e}")),
            }
        }
        for name in &plan.gone {
            kill_first(st, |s| s.tmux_session == *name && s.tmux_exists());
        }
        // Unchanged, the state is not written (`file.rs`).
        st.pane_host = Some(self.record());
    }

    fn spawn(&self) -> io::Result<Child> {
        Command::new(&self.exe)
            .args([ENTRY, PANE_COMMAND])
            .env_remove(STATE_ENV)
            .env_remove(LOG_ENV)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
    }

    fn record(&self) -> PaneHost {
        let panes = self.panes.iter().map(|(n, p)| (n.clone(), p.child.id()));
        let orphans = self.orphans.iter().map(|(n, c)| (n.clone(), c.id()));
        PaneHost {
            pid: std::process::id(),
            panes: panes.collect(),
            orphans: orphans.collect(),
        }
    }

    fn kill_all(&mut self) {
        let panes = std::mem::take(&mut self.panes).into_values();
        let orphans = std::mem::take(&mut self.orphans).into_values();
        panes.map(|p| p.child).chain(orphans).for_each(end);
    }
}

/// SIGKILL (a no-op for a child already reaped), then reap.
fn end(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}
