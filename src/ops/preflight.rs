//! What `doctor` and `drill` both ask before they trust the daemon to act:
//! why a session is restart-critical, how `session show` shows it, and
//! whether anything keeps agent-deck's stored status current.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde::Deserialize;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::fleet::session::Session;
use crate::sys::process::{self, Cmd};
use crate::sys::process_table::{self, PROC_DIR};
use crate::sys::shutdown::Shutdown;

/// The agent-deck process that keeps the stored status current for this
/// `HOME`: its TUI or `notify-daemon`, as `"notify-daemon (pid N)"`. Without
/// one, agent-deck's 60 s freshness guard refuses to restart a session that
/// started less than a minute ago, dead pane or not.
pub(crate) fn status_writer(cfg: &Config) -> Option<String> {
    let bin = cfg.bin.file_name()?;
    let home = cfg.home.as_os_str().as_bytes();
    process_table::processes(Path::new(PROC_DIR)).find_map(|p| {
        if p.program_name() != Some(bin) || p.env_value("HOME").as_deref() != Some(home) {
            return None;
        }
        let mut argv = p
            .cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .skip(1);
        // The global profile flag may come first: `-p work`, `--profile=work`.
        let command = loop {
            match argv.next() {
                Some(b"-p" | b"--profile") => {
                    argv.next();
                }
                Some(a) if a.starts_with(b"-p=") || a.starts_with(b"--profile=") => {}
                other => break other,
            }
        };
        let what = match command {
            None => "TUI",
            Some(b"notify-daemon") => "notify-daemon",
            Some(_) => return None,
        };
        Some(format!("{what} (pid {})", p.pid))
    })
}

/// The fields of `session show --json` that `doctor` and `drill` read and
/// the daemon's own reading leaves out.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Shown {
    pub status: String,
    pub tmux_session: String,
    pub created_at: String,
    /// Present, even empty, for Claude-compatible tools only: the ones
    /// that report through hooks.
    pub claude_session_id: Option<String>,
}

/// `-p P session show ID --json`, one read-only call.
pub(crate) fn show(cfg: &Config, s: &Session, shutdown: &Shutdown) -> Result<Shown> {
    let mut job = Cmd::new(&cfg.bin);
    if !s.profile.is_empty() {
        job = job.arg("-p").arg(&s.profile);
    }
    let job = job.args(["session", "show", s.id.as_str(), "--json"]);
    let fail = |why: String| Error::runtime(format!("session show {}: {why}", s.id));
    let out =
        process::run(&job, cfg.subprocess_timeout, shutdown).map_err(|e| fail(e.to_string()))?;
    if !out.success() {
        return Err(fail(format!("exit {:?}: {}", out.code, out.stderr.trim())));
    }
    serde_json::from_str(&out.stdout).map_err(|e| fail(e.to_string()))
}
