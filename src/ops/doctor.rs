//! `agent-deck-watchdog doctor [--json] [--online]`: a read-only preflight of
//! the live install, one line per check (SPEC §13): this file runs the checks
//! in their fixed order, prints them and picks the exit code. Nothing writes
//! a file or takes a lock (the daemon is found by the pid in its lock file);
//! agent-deck gets the daemon's read-only calls and `agent-deck version`.

mod context;
mod fleet;
mod host;
mod install;
mod notes;

use serde::Serialize;

use crate::config::Env;
use crate::error::{Error, Result};
use crate::fleet::cli::Cli;
use crate::sys::shutdown::Shutdown;

/// The agent-deck releases this release was verified against by the live
/// suite (`tests/live/`).
pub(crate) const VERIFIED_AGENT_DECK: &[&str] = &["1.14.0"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CheckStatus {
    Ok,
    Warn,
    Fail,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Check {
    pub check: &'static str,
    pub status: CheckStatus,
    pub detail: String,
    /// What to do, in one sentence; on every warning and failure.
    pub fix: Option<String>,
}

impl Check {
    pub(crate) fn ok(check: &'static str, detail: impl Into<String>) -> Check {
        Check {
            check,
            status: CheckStatus::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    pub(crate) fn warn(
        check: &'static str,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check {
            status: CheckStatus::Warn,
            fix: Some(fix.into()),
            ..Check::ok(check, detail)
        }
    }

    pub(crate) fn fail(
        check: &'static str,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check {
            status: CheckStatus::Fail,
            ..Check::warn(check, detail, fix)
        }
    }

    /// `✓ name: detail`, or with ` — fix: …` after a warning or failure.
    pub(crate) fn line(&self) -> String {
        let detail = crate::daemon::logging::one_line(&self.detail);
        let fix = self
            .fix
            .as_ref()
            .map_or(String::new(), |f| format!(" — fix: {f}"));
        let mark = match self.status {
            CheckStatus::Ok => '✓',
            CheckStatus::Warn => '!',
            CheckStatus::Fail => '✗',
        };
        format!("{mark} {}: {detail}{fix}", self.check)
    }
}

/// Every check, in the order they print. Without a usable configuration
/// (no `HOME`, say) there is only the settings line.
pub(crate) fn checks(env: &Env, online: bool) -> Vec<Check> {
    let (settings, cfg) = install::settings(env);
    let Some(cfg) = cfg else {
        return vec![settings];
    };
    // One interrupt pipe for every process doctor runs.
    let Ok(shutdown) = Shutdown::new() else {
        let deck = Check::fail(
            "agent-deck",
            "cannot make the pipe that interrupts a hanging call, so nothing can be run",
            "raise the open-files limit (ulimit -n) and run doctor again",
        );
        return vec![deck, settings];
    };
    let cli = Cli::new(cfg.bin.clone(), cfg.subprocess_timeout, shutdown.clone());
    let (deck, listed, found) = install::agent_deck(&cfg, &cli, &shutdown);
    let (critical, claude) = fleet::critical_sessions(&cfg, listed.as_ref(), &shutdown);
    let mut checks = vec![deck];
    checks.extend(notes::for_version(found));
    checks.extend([
        settings,
        critical,
        context::clear_on_compact(&cfg, listed.as_ref()),
        context::proactive_clear(&cfg),
        fleet::hooks_dir(&cfg, &claude),
        fleet::usage(&cli, found),
        fleet::stored_status(&cfg),
        host::kernel_notifications(),
        install::service(&shutdown),
        fleet::daemon(&cfg),
        install::escalate_script(&cfg),
        host::telegram(&cfg, online),
        install::watchdog_dir(&cfg),
    ]);
    checks
}

/// Prints the report; exit 1 when a check failed.
pub(crate) fn run(env: &Env, json: bool, online: bool) -> Result<()> {
    let checks = checks(env, online);
    if json {
        let text =
            serde_json::to_string_pretty(&checks).map_err(|e| Error::runtime(e.to_string()))?;
        println!("{text}");
    } else {
        for c in &checks {
            println!("{}", c.line());
        }
    }
    let failed = checks.iter().filter(|c| c.status == CheckStatus::Fail);
    match failed.count() {
        0 => Ok(()),
        n => Err(Error::runtime(format!("doctor: {n} check(s) failed"))),
    }
}
