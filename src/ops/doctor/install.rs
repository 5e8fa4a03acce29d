//! The checks of what was installed: agent-deck, the settings, the service,
//! `escalate.sh` and the watchdog directory.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use super::{Check, VERIFIED_AGENT_DECK};
use crate::alert::escalate;
use crate::config::{Config, Env};
use crate::fleet::cache::Fleet;
use crate::fleet::cli::Cli;
use crate::fleet::version::Version;
use crate::sys::process::{self, Cmd};
use crate::sys::shutdown::Shutdown;

/// The unit `contrib/agent-deck-watchdog.service` installs, and the launchd
/// agent `contrib/com.agent-deck.watchdog.plist` loads.
const UNIT: &str = "agent-deck-watchdog.service";
const LAUNCHD_LABEL: &str = "com.agent-deck.watchdog";
/// How long a `systemctl`, `launchctl` or `agent-deck version` may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
const MIN_FREE_BYTES: u64 = 100 << 20;

/// Runs a read-only probe; `None` when it could not run at all.
fn probe(job: &Cmd, shutdown: &Shutdown) -> Option<process::Output> {
    process::run(job, PROBE_TIMEOUT, shutdown).ok()
}

/// `settings`: every setting valid, and the configuration the other checks
/// run with: each invalid setting is reported and dropped, so the rest run
/// with its default. `None` when even that leaves no configuration (no
/// `HOME`, say).
pub(super) fn settings(env: &Env) -> (Check, Option<Config>) {
    let (mut env, mut errors) = (env.clone(), Vec::new());
    let cfg = loop {
        let text = match Config::from_env(&env) {
            Ok(cfg) => break Some(cfg),
            Err(e) => e.to_string(),
        };
        let name: String = text
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        errors.push(text);
        if name.is_empty() || !env.remove(&name) {
            break None;
        }
    };
    let check = match errors.as_slice() {
        [] => Check::ok("settings", "every setting is valid"),
        [one] => Check::fail(
            "settings",
            one.clone(),
            "correct that variable: the daemon exits 2 on it",
        ),
        many => Check::fail(
            "settings",
            many.join("; "),
            "correct those variables: the daemon exits 2 on each",
        ),
    };
    (check, cfg)
}

/// `agent-deck`: runnable, its version (read by [`Version::parse`], as
/// the daemon reads it), and a readable `list --all --json` (the fleet it
/// lists, for the checks that follow).
pub(super) fn agent_deck(
    cfg: &Config,
    cli: &Cli,
    shutdown: &Shutdown,
) -> (Check, Option<Fleet>, Option<Version>) {
    const NAME: &str = "agent-deck";
    let bin = cfg.bin.display();
    let fix_bin = "install agent-deck, or point AGENT_DECK_BIN at it";
    let Some(out) = probe(&Cmd::new(&cfg.bin).arg("version"), shutdown) else {
        let check = Check::fail(NAME, format!("{bin} cannot be run"), fix_bin);
        return (check, None, None);
    };
    let answer = format!("{}{}", out.stdout, out.stderr);
    // An unreadable version is a version nobody verified: a warning below,
    // and the list still decides whether agent-deck works.
    let found = Version::parse(&answer).filter(|_| out.success());
    let verified = found.is_some_and(|v| VERIFIED_AGENT_DECK.contains(&v.to_string().as_str()));
    let version = found.map_or_else(
        || format!("of unknown version ({:?})", answer.trim()),
        |v| format!("v{v}"),
    );
    let mut fleet = Fleet::new(cfg.autorestart_dir());
    fleet.reload_markers();
    let check = match fleet.refresh(cli) {
        Ok(()) if verified => {
            let listed = format!("{bin} {version}, {} sessions listed", fleet.len());
            Check::ok(NAME, listed)
        }
        Ok(()) => Check::warn(
            NAME,
            format!(
                "{bin} {version} is not a release this watchdog was verified with ({})",
                VERIFIED_AGENT_DECK.join(", ")
            ),
            "run `agent-deck-watchdog --once --dry-run --verbose` and read what it decides before enabling it",
        ),
        Err(e) => {
            let detail = format!("{bin} {version}: `list --all --json` is unreadable: {e}");
            let fix = "run `agent-deck list --all --json` yourself and fix what it reports";
            return (Check::fail(NAME, detail, fix), None, found);
        }
    };
    (check, Some(fleet), found)
}

/// `service`: the systemd user unit (Linux) or launchd agent (macOS).
pub(super) fn service(shutdown: &Shutdown) -> Check {
    const NAME: &str = "service";
    if cfg!(target_os = "macos") {
        let launchctl = Cmd::new("launchctl").args(["list", LAUNCHD_LABEL]);
        let loaded = probe(&launchctl, shutdown).is_some_and(|o| o.success());
        return if loaded {
            Check::ok(NAME, format!("launchd agent {LAUNCHD_LABEL} is loaded"))
        } else {
            Check::warn(
                NAME,
                format!("launchd agent {LAUNCHD_LABEL} is not loaded"),
                "copy contrib/com.agent-deck.watchdog.plist to ~/Library/LaunchAgents/ and `launchctl load` it",
            )
        };
    }
    let props = "--property=LoadState,UnitFileState,ActiveState,ExecStart";
    let systemctl = Cmd::new("systemctl").args(["--user", "show", UNIT, props]);
    let Some(out) = probe(&systemctl, shutdown) else {
        return Check::warn(
            NAME,
            "systemctl cannot be run: no systemd here",
            "run the daemon under another supervisor that restarts it (contrib/ has a cron line)",
        );
    };
    if !out.success() {
        return Check::warn(
            NAME,
            format!("no systemd user manager answers: {}", out.stderr.trim()),
            "log in with a user session (or enable linger) so `systemctl --user` works",
        );
    }
    let unit = unit_state(&out.stdout);
    let uid = rustix::process::getuid().as_raw().to_string();
    let loginctl = Cmd::new("loginctl").args(["show-user", &uid, "--property=Linger", "--value"]);
    let linger =
        probe(&loginctl, shutdown).is_some_and(|o| o.success() && o.stdout.trim() == "yes");
    let ours = std::env::current_exe().and_then(std::fs::canonicalize).ok();
    let runs_us = unit
        .exec_path
        .as_deref()
        .and_then(|p| std::fs::canonicalize(p).ok())
        .is_some_and(|p| Some(p) == ours);
    let install = "install it: cp contrib/agent-deck-watchdog.service ~/.config/systemd/user/ && systemctl --user daemon-reload && systemctl --user enable --now agent-deck-watchdog.service";
    if unit.load != "loaded" {
        return Check::warn(NAME, format!("{UNIT} is not installed"), install);
    }
    let summary = format!(
        "{UNIT} {} and {}, ExecStart={}",
        unit.file_state,
        unit.active,
        unit.exec_path.as_deref().unwrap_or("?")
    );
    let enable = "systemctl --user enable --now agent-deck-watchdog.service";
    let (why, fix) = if unit.file_state != "enabled" || unit.active != "active" {
        ("", enable)
    } else if !runs_us {
        let fix = "point ExecStart= at this binary (or install this one there), then systemctl --user daemon-reload";
        (", which is not this binary", fix)
    } else if !linger {
        (
            "; linger is off, so it stops when you log out",
            "loginctl enable-linger \"$USER\"",
        )
    } else {
        return Check::ok(NAME, format!("{summary}, linger on"));
    };
    Check::warn(NAME, format!("{summary}{why}"), fix)
}

/// The lines of `systemctl show` that [`service`] looks at.
#[derive(Debug, Default, PartialEq)]
pub(super) struct UnitState {
    pub load: String,
    pub file_state: String,
    pub active: String,
    /// `path=` of the first `ExecStart`.
    pub exec_path: Option<String>,
}

pub(super) fn unit_state(text: &str) -> UnitState {
    // The last line of each key counts.
    let value = |key: &str| {
        let prefix = format!("{key}=");
        text.lines().rev().find_map(|l| l.strip_prefix(&prefix))
    };
    let field = |key: &str| value(key).unwrap_or_default().to_owned();
    UnitState {
        load: field("LoadState"),
        file_state: field("UnitFileState"),
        active: field("ActiveState"),
        exec_path: value("ExecStart").and_then(|v| {
            v.split(" ; ")
                .find_map(|f| f.trim_start_matches("{ ").strip_prefix("path="))
                .map(str::to_owned)
        }),
    }
}

/// `escalate.sh`: present and executable.
pub(super) fn escalate_script(cfg: &Config) -> Check {
    const NAME: &str = "escalate.sh";
    let path = escalate::script_path(cfg);
    let shown = path.display();
    match std::fs::metadata(&path) {
        Err(_) => Check::warn(
            NAME,
            format!("{shown} is missing: escalations reach the log and Telegram only"),
            format!("install -m 0700 contrib/escalate.sh {shown}"),
        ),
        Ok(_) if !escalate::is_runnable(&path) => Check::warn(
            NAME,
            format!("{shown} is not an executable file"),
            format!("chmod u+x {shown}"),
        ),
        Ok(_) => Check::ok(NAME, format!("{shown} is executable")),
    }
}

/// `watchdog dir`: ours, writable, private, with room.
pub(super) fn watchdog_dir(cfg: &Config) -> Check {
    const NAME: &str = "watchdog dir";
    let dir = &cfg.watchdog_dir;
    let shown = dir.display();
    let me = rustix::process::geteuid().as_raw();
    let Ok(meta) = std::fs::metadata(dir) else {
        let parent = dir.ancestors().skip(1).find(|p| p.exists());
        return match parent.filter(|p| writable(p)) {
            Some(_) => Check::ok(NAME, format!("{shown} does not exist yet; the daemon creates it 0700")),
            None => Check::fail(
                NAME,
                format!("{shown} does not exist and cannot be created by this user"),
                "create it (mkdir -m 0700 -p) as the user the daemon runs as, or set AGENT_DECK_ROOT",
            ),
        };
    };
    let (uid, mode) = (meta.uid(), meta.permissions().mode() & 0o777);
    if uid != me || !writable(dir) {
        return Check::fail(
            NAME,
            format!("{shown} is owned by uid {uid} or not writable by uid {me}"),
            format!("chown the directory to the user the daemon runs as: chown -R {me} {shown}"),
        );
    }
    let free = rustix::fs::statvfs(dir.as_path())
        .map(|s| s.f_bavail.saturating_mul(s.f_frsize))
        .ok();
    let detail = format!(
        "{shown}, mode {mode:04o}, {} free",
        free.map_or("?".to_owned(), |b| format!("{} MiB", b >> 20))
    );
    let fix = if mode & 0o077 != 0 {
        format!("chmod 0700 {shown}: its records name your sessions")
    } else if free.is_some_and(|b| b < MIN_FREE_BYTES) {
        "free some disk space: records are dropped when it is full".to_owned()
    } else {
        return Check::ok(NAME, detail);
    };
    Check::warn(NAME, detail, fix)
}

fn writable(p: &Path) -> bool {
    use rustix::fs::{access, Access};
    access(p, Access::WRITE_OK | Access::EXEC_OK).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_found_in_agent_decks_answer() {
        let v = |s| Version::parse(s).map(|v| v.to_string());
        assert_eq!(v("Agent Deck v1.14.0\n").as_deref(), Some("1.14.0"));
        assert_eq!(v("agent-deck 1.7.63").as_deref(), Some("1.7.63"));
        assert_eq!(v("usage: agent-deck …"), None);
    }

    #[test]
    fn systemctl_show_is_read_key_by_key() {
        let text = "LoadState=loaded\nUnitFileState=enabled\nActiveState=active\nExecStart={ path=/home/u/.cargo/bin/agent-deck-watchdog ; argv[]=/home/u/.cargo/bin/agent-deck-watchdog ; ignore_errors=no }\n";
        let u = unit_state(text);
        assert_eq!(
            (u.load.as_str(), u.file_state.as_str(), u.active.as_str()),
            ("loaded", "enabled", "active")
        );
        assert_eq!(
            u.exec_path.as_deref(),
            Some("/home/u/.cargo/bin/agent-deck-watchdog")
        );
        assert_eq!(
            unit_state("LoadState=not-found\nExecStart=\n").exec_path,
            None
        );
    }
}
