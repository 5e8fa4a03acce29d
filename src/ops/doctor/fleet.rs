//! The checks of the fleet and of the daemon watching it: the critical
//! sessions, the hooks dir, agent-deck's stored status, the daemon.

use std::path::Path;

use super::Check;
use crate::config::Config;
use crate::fleet::cache::Fleet;
use crate::fleet::deck::AgentDeck;
use crate::fleet::session::{Session, Status};
use crate::fleet::usage;
use crate::fleet::version::Version;
use crate::ops::preflight::{show, status_writer};
use crate::records::{instance_lock, metrics};
use crate::sys::clock::unix_now;
use crate::sys::shutdown::Shutdown;
use crate::triggers::hook_file::hook_file_exists;
use crate::triggers::pane_share::WatchStatus;

/// `critical sessions`: each, why, and whether it is in `error` now (one
/// `session show` each, the call the daemon makes); and the Claude-family
/// ones among them, which report through hooks.
pub(super) fn critical_sessions(
    cfg: &Config,
    fleet: Option<&Fleet>,
    shutdown: &Shutdown,
) -> (Check, Vec<Session>) {
    const NAME: &str = "critical sessions";
    let Some(fleet) = fleet else {
        let unknown = "unknown: agent-deck could not list the fleet";
        let check = Check::warn(NAME, unknown, "fix the agent-deck check first");
        return (check, Vec::new());
    };
    let critical = fleet.critical();
    if critical.is_empty() {
        let check = Check::warn(
            NAME,
            format!("none among {} sessions: the watchdog has nothing to keep alive", fleet.len()),
            format!(
                "name a conductor `conductor-…` or put it in group conductor or watchers, or create {}/<id>",
                cfg.autorestart_dir().display()
            ),
        );
        return (check, Vec::new());
    }
    let mut claude = Vec::new();
    let shown: Vec<String> = critical
        .iter()
        .map(|s| {
            let why = fleet.critical_reason(s).unwrap_or_default();
            let status = match show(cfg, s, shutdown) {
                Ok(shown) => {
                    if shown.claude_session_id.is_some() {
                        claude.push(s.clone());
                    }
                    match Status::parse(&shown.status) {
                        Status::Error => "in error now".to_owned(),
                        other => other.as_str().to_owned(),
                    }
                }
                Err(e) => format!("status unreadable: {e}"),
            };
            format!("{} ({why}; {status})", s.title)
        })
        .collect();
    let check = Check::ok(NAME, format!("{}: {}", critical.len(), shown.join(", ")));
    (check, claude)
}

/// `usage --json`: whether this agent-deck can say when a usage limit
/// resets (1.16.11+; never asked of an older one, where the word opens the
/// TUI), and whether Claude's statusLine feeds it a `resets_at`.
pub(super) fn usage(deck: &dyn AgentDeck, found: Option<Version>) -> Check {
    const NAME: &str = "usage --json";
    let fallback = "a usage limit's resume time comes from Claude's rejection text, else a probe";
    let Some(release) = found.filter(|v| v.at_least(Version::USAGE_JSON)) else {
        let why = format!(
            "not asked: agent-deck before {} has no usage command; {fallback}",
            Version::USAGE_JSON
        );
        return Check::ok(NAME, why);
    };
    let windows = deck.usage("").map_err(|e| e.to_string());
    match windows.and_then(|text| usage::parse(&text)) {
        Ok(w) if w.iter().any(|w| w.resets_at.is_some()) => {
            Check::ok(NAME, format!("{release}: Claude's plan windows and their resets are fed"))
        }
        Ok(_) => Check::warn(
            NAME,
            format!("{release} answers, but no Claude window has a resets_at; {fallback}"),
            "feed agent-deck's usage from Claude Code's statusLine (agent-deck's usage docs say how), so a reset time is known",
        ),
        Err(e) => Check::warn(
            NAME,
            format!("{release} did not answer usable JSON ({e}); {fallback}"),
            "run `agent-deck usage --json` by hand to see why",
        ),
    }
}

/// `hooks dir`: where agent-deck writes hooks, and whether they come.
pub(super) fn hooks_dir(cfg: &Config, claude: &[Session]) -> Check {
    const NAME: &str = "hooks dir";
    let (dir, shown) = (&cfg.hooks_dir, cfg.hooks_dir.display());
    if !dir.is_dir() {
        return Check::fail(
            NAME,
            format!("{shown} is missing: only the safety poll would see a death"),
            "install agent-deck's hooks (`agent-deck hooks install`) or set AGENT_DECK_HOOKS_DIR to where they are written",
        );
    }
    let silent: Vec<&str> = claude
        .iter()
        .filter(|s| !hook_file_exists(dir, &s.id))
        .map(|s| s.title.as_str())
        .collect();
    let newest = newest_hook_age(dir).map_or("no hook file yet".to_owned(), |age| {
        format!("newest hook {age:.0} s ago")
    });
    if !silent.is_empty() {
        return Check::warn(
            NAME,
            format!("{shown}: {newest}; no hook file ever from {}", silent.join(", ")),
            "install agent-deck's Claude hooks (`agent-deck hooks install`) so a death is seen in seconds, not at the next poll",
        );
    }
    Check::ok(NAME, format!("{shown}: {newest}"))
}

/// Seconds since the newest `*.json` in the hooks dir or its sandboxes.
fn newest_hook_age(dir: &Path) -> Option<f64> {
    let entries = |d: &Path| std::fs::read_dir(d).into_iter().flatten().flatten();
    let sandboxes = entries(&dir.join("sandbox")).map(|e| e.path());
    let newest = std::iter::once(dir.to_path_buf())
        .chain(sandboxes)
        .flat_map(|d| entries(&d))
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| e.metadata().ok()?.modified().ok())
        .max()?;
    Some(newest.elapsed().map_or(0.0, |d| d.as_secs_f64()))
}

/// What the pane watch covered, in words.
fn pane_watch(w: &WatchStatus) -> String {
    if w.armed {
        let n = w.covered;
        return format!("pane watch armed on {n} critical sessions (the CLI poll runs at ARMED_POLL_INTERVAL_S)");
    }
    let why = (w.why_not.as_ref()).map_or(String::new(), |why| format!(" ({why})"));
    format!("pane watch not armed{why}: the CLI poll runs at SAFETY_POLL_INTERVAL_S")
}

/// `agent-deck's stored status`: a TUI or `notify-daemon` keeps it current.
pub(super) fn stored_status(cfg: &Config) -> Check {
    const NAME: &str = "agent-deck's stored status";
    match status_writer(cfg) {
        Some(writer) => Check::ok(NAME, format!("kept current by its {writer}")),
        None => Check::warn(
            NAME,
            "no TUI and no notify-daemon runs, so agent-deck's freshness guard refuses to restart a session that started less than 60 s ago, dead or not: a crash loop gets one restart a minute, each recorded cli-refused",
            "run `agent-deck notify-daemon` beside the watchdog (a user unit of its own, or the TUI in a tmux pane)",
        ),
    }
}

/// `watchdog daemon`: which pid holds the lock, whether it is a dry run,
/// how old its last tick is, and what its pane watch covered then.
pub(super) fn daemon(cfg: &Config) -> Check {
    const NAME: &str = "watchdog daemon";
    let Some(h) = instance_lock::holder(&cfg.watchdog_dir) else {
        return Check::warn(
            NAME,
            format!(
                "none running (no live watchdog named in {})",
                cfg.watchdog_dir.join(instance_lock::LOCK_FILE).display()
            ),
            "systemctl --user enable --now agent-deck-watchdog.service; if it runs already, give doctor the unit's environment (AGENT_DECK_ROOT)",
        );
    };
    let tick = metrics::read_of(&cfg.watchdog_dir, &h).map_or("no tick yet".to_owned(), |s| {
        let age = (unix_now() - s.last_tick).max(0.0);
        format!("last tick {age:.0} s ago; {}", pane_watch(&s.pane_watch))
    });
    let detail = format!("pid {}, {tick}", h.pid);
    let (why, fix) = if h.once {
        (
            ": a --once pass, not a daemon",
            "start the daemon once that pass is over: systemctl --user start agent-deck-watchdog.service",
        )
    } else if h.dry_run {
        (
            ", in --dry-run: it decides but restarts nothing",
            "when its decisions look right, drop --dry-run from ExecStart= and restart the unit",
        )
    } else {
        return Check::ok(NAME, detail);
    };
    Check::warn(NAME, format!("{detail}{why}"), fix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_daemon_check_says_what_the_pane_watch_covers_and_why_not() {
        let armed = WatchStatus {
            armed: true,
            covered: 3,
            why_not: None,
        };
        assert!(pane_watch(&armed).starts_with("pane watch armed on 3 critical sessions"));
        let off = WatchStatus {
            why_not: Some("PANE_WATCH=off".into()),
            ..WatchStatus::default()
        };
        assert!(pane_watch(&off).starts_with("pane watch not armed (PANE_WATCH=off)"));
    }
}
