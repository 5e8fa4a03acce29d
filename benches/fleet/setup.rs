//! Setting up what the bench measures: a watchdog installation (simulated
//! fleet, call log, hooks dir, `agent-deck` wrapper, an environment with
//! nothing inherited but `PATH`), hook files written the way agent-deck
//! writes them, and the daemon, stopped with SIGTERM or killed on drop.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agent_deck_sim::{self as sim, SimSession, SimState};

use super::probe::now;
use super::{Res, BIN, SIM_ENTRY};

/// One watchdog installation under the work dir: simulated fleet, call
/// log, hooks dir, `agent-deck` wrapper.
pub(crate) struct Install {
    pub dir: PathBuf,
    pub state: PathBuf,
    pub log: PathBuf,
    pub hooks: PathBuf,
}

impl Install {
    pub(crate) fn new(work: &Path, name: &str, sessions: Vec<SimSession>) -> Res<Install> {
        let dir = work.join(name);
        let hooks = dir.join("hooks");
        for d in [&hooks, &dir.join("home")] {
            fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        }
        let i = Install {
            state: dir.join("state.json"),
            log: dir.join("calls.log"),
            hooks,
            dir,
        };
        set_fleet(&i.state, sessions)?;
        let wrapper = i.wrapper();
        let script = format!("#!/bin/sh\nexec '{BIN}' {SIM_ENTRY} \"$@\"\n");
        fs::write(&wrapper, script)
            .and_then(|()| {
                use std::os::unix::fs::PermissionsExt;
                fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755))
            })
            .map_err(|e| format!("cannot write {}: {e}", wrapper.display()))?;
        Ok(i)
    }

    pub(crate) fn wrapper(&self) -> PathBuf {
        self.dir.join("agent-deck")
    }

    /// The watchdog with nothing inherited but `PATH`, plus `settings`.
    pub(crate) fn command(&self, args: &[&str], settings: &[(&str, &str)]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.join("home"))
            .env("AGENT_DECK_ROOT", self.dir.join("root"))
            .env("AGENT_DECK_HOOKS_DIR", &self.hooks)
            .env("AGENT_DECK_BIN", self.wrapper())
            .env(sim::STATE_ENV, &self.state)
            .env(sim::LOG_ENV, &self.log)
            .envs(settings.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        c
    }

    pub(crate) fn daemon_log(&self) -> PathBuf {
        self.dir.join("daemon.log")
    }
}

pub(crate) fn set_fleet(state: &Path, sessions: Vec<SimSession>) -> Res<()> {
    let fleet = SimState {
        sessions,
        ..SimState::default()
    };
    sim::transact(state, |s| *s = fleet).map_err(|e| e.to_string())
}

pub(crate) fn set_status(state: &Path, id: &str, status: &str) -> Res<()> {
    sim::transact(state, |s| {
        for c in s.sessions.iter_mut().filter(|c| c.id == id) {
            c.status = Some(status.into());
        }
    })
    .map_err(|e| e.to_string())
}

pub(crate) fn conductor(i: u32, profile: &str) -> SimSession {
    SimSession {
        id: format!("{:08x}-{}", 0x3f9c_2a00 + i, 1_755_891_200 + i),
        title: format!("conductor-{i}"),
        group: "conductor".into(),
        profile: profile.into(),
        status: Some("running".into()),
        pane: Some("frozen pane".into()),
        ..SimSession::default()
    }
}

/// Writes a hook file the way agent-deck does (`.<id>.json.tmp-<random>`,
/// then a rename onto `<id>.json`); returns the wall time right after.
pub(crate) fn write_hook(hooks: &Path, id: &str, n: usize) -> Res<f64> {
    let tmp = hooks.join(format!(".{id}.json.tmp-{}-{n}", std::process::id()));
    let body = format!(
        "{{\"status\":\"dead\",\"event\":\"Stop\",\"ts\":{}}}",
        now() as u64
    );
    fs::write(&tmp, body)
        .and_then(|()| fs::rename(&tmp, hooks.join(format!("{id}.json"))))
        .map_err(|e| format!("cannot write a hook file in {}: {e}", hooks.display()))?;
    Ok(now())
}

pub(crate) fn log_file(path: &Path) -> Res<fs::File> {
    fs::File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))
}

/// The daemon under measurement; SIGKILLed if still running when dropped.
pub(crate) struct Daemon(pub Child);

impl Daemon {
    pub(crate) fn pid(&self) -> u32 {
        self.0.id()
    }

    pub(crate) fn alive(&mut self) -> Res<()> {
        match self.0.try_wait() {
            Ok(None) => Ok(()),
            _ => Err("the daemon exited early; see its daemon.log".into()),
        }
    }

    /// SIGTERM, then how long until it exited (None: not within 5 s).
    pub(crate) fn stop(mut self) -> Option<Duration> {
        let started = Instant::now();
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.pid() as i32, libc::SIGTERM);
        }
        while started.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.0.try_wait() {
                return Some(started.elapsed());
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        None
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
