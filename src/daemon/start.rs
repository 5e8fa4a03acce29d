//! Start-up: the instance lock, the temp files a killed run left, the CLI
//! and its version, then one `--once` pass or the long-running daemon.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::config::Config;
use crate::daemon::{signals, version_reread, Daemon, RunFlags};
use crate::decide::outcomes::RestartAction;
use crate::error::{Error, Result};
use crate::fleet::cli::Cli;
use crate::fleet::deck::{AgentDeck, ReadOnly};
use crate::records::audit::RESTART_LOG;
use crate::records::{instance_lock, read_back};
use crate::sys::clock::{Clock, SystemClock};
use crate::sys::shutdown::Shutdown;

/// Runs the daemon (or one pass with `--once`) until done or signalled.
pub(crate) fn run(cfg: Config, flags: RunFlags) -> Result<()> {
    let shutdown = Shutdown::new()
        .map_err(|e| Error::runtime(format!("cannot create the shutdown wake-up pipe: {e}")))?;
    let reload = Arc::new(AtomicBool::new(false));
    let signals = signals::Signals::install(shutdown.clone(), reload.clone())?;
    let result = run_with(&cfg, flags, shutdown, &reload);
    signals.close();
    result
}

/// The daemon with the caller's shutdown token (signals, or the demo).
pub(crate) fn run_with(
    cfg: &Config,
    flags: RunFlags,
    shutdown: Shutdown,
    reload: &AtomicBool,
) -> Result<()> {
    let dir = cfg.autorestart_dir();
    crate::sys::fs::create_private_dirs(&dir)
        .map_err(|e| Error::runtime(format!("cannot create {}: {e}", dir.display())))?;
    let me = instance_lock::Holder {
        pid: std::process::id(),
        dry_run: flags.dry_run,
        once: flags.once,
        started_at: Some(crate::sys::clock::unix_now()),
    };
    let _lock = instance_lock::acquire(&cfg.watchdog_dir, &me)?;
    remove_stale_temps(cfg);
    let cli = Arc::new(Cli::new(
        cfg.bin.clone(),
        cfg.subprocess_timeout,
        shutdown.clone(),
    ));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let deck: Arc<dyn AgentDeck> = if flags.dry_run {
        Arc::new(ReadOnly(cli.clone()))
    } else {
        cli.clone()
    };
    log::info!(
        "agent-deck-watchdog {} starting: dry_run={} once={} cli={} hooks={}",
        env!("CARGO_PKG_VERSION"),
        flags.dry_run,
        flags.once,
        cfg.bin.display(),
        cfg.hooks_dir.display()
    );
    log_setting_notes(cfg);
    // Before the first tick: the pane sample's flags follow it.
    cli.read_version(clock.now());
    let mut daemon = Daemon::new(cfg, flags, deck, clock.clone(), shutdown.clone())?;
    if flags.once {
        daemon.tick();
        // Read while the CLI may still be called: finish() shuts it down.
        let others = flags.verbose.then(|| daemon.other_sessions());
        daemon.finish();
        daemon.print_pass_summary(flags.json, others)?;
    } else {
        let reread = version_reread::spawn(cli, clock, shutdown)?;
        daemon.triggers.threads.push(reread);
        daemon.serve(cfg, reload)?;
    }
    log::info!("agent-deck-watchdog stopped");
    Ok(())
}

/// Says once which variables of a tmux client or an agent-deck pane were
/// set and are not handed to agent-deck, tmux or any other child, and
/// which settings may surprise.
fn log_setting_notes(cfg: &Config) {
    if !cfg.pane_env.is_empty() {
        log::info!(
            "not handing {} to agent-deck or any other child: they belong to the tmux client or agent-deck pane this daemon was started from",
            cfg.pane_env.join(", ")
        );
    }
    if cfg.claude_config_dir_from_pane {
        log::warn!(
            "CLAUDE_CONFIG_DIR looks inherited from an agent-deck pane (AGENTDECK_INSTANCE_ID is set too); it is kept, so every session a restart spawns uses that Claude account: start the watchdog outside agent-deck if that is not meant"
        );
    }
}

/// The sessions whose newest `restart.log` record is a restart call with no
/// outcome after it (a watchdog stopped during the call), with its time.
pub(super) fn interrupted_restarts(dir: &std::path::Path) -> BTreeMap<String, f64> {
    #[derive(serde::Deserialize)]
    struct Newest {
        action: RestartAction,
        ts: f64,
        #[serde(default)]
        dry_run: bool,
    }
    let log = dir.join(RESTART_LOG);
    let newest = read_back::newest_by_id::<Newest>(&log, |_| true).into_iter();
    let cut_short = newest.filter(|(_, r)| r.action == RestartAction::Restart && !r.dry_run);
    cut_short.map(|(id, r)| (id, r.ts)).collect()
}

/// Removes the temp files a killed run left behind (the instance lock is
/// held, so none of them belongs to a live writer; the registry's are
/// removed under its own lock).
fn remove_stale_temps(cfg: &Config) {
    use crate::records::metrics::DAEMON_STATUS_FILE;
    use crate::records::{metrics::METRICS_FILE, state_file::STATE_FILE};
    use crate::tasks::registry::RegistryFile;
    let mut removed = [STATE_FILE, METRICS_FILE, DAEMON_STATUS_FILE]
        .iter()
        .map(|f| crate::sys::fs::remove_stale_temps(&cfg.watchdog_dir.join(f)))
        .sum::<usize>();
    let registry = RegistryFile::new(&cfg.task_timers_file, Some(Duration::from_secs(1)));
    match registry.remove_stale_temps() {
        Ok(n) => removed += n,
        Err(e) => log::warn!("temp files next to the task registry stay until the next start: {e}"),
    }
    if removed > 0 {
        log::info!("removed {removed} temp file(s) left by an earlier run that was killed");
    }
}
