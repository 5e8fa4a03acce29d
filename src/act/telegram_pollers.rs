//! The Telegram pollers of the live conductors (SPEC §6.1): which have a
//! Telegram channel, which `TELEGRAM_STATE_DIR` each serves, and whether a
//! poller process runs for it.
//!
//! The conductor's `env_file` is found the way agent-deck finds it
//! (`config.toml` table `[conductors.<name>.claude]`, else its `meta.json`).
//! Unreadable files and processes are skipped, never fatal; a FIFO or a
//! device among agent-deck's files costs a rate-limited warning, not a hang.
//! It only looks: the patrol decides, [`crate::act::poller_restart`] restarts.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use crate::act::snapshot::Snapshot;
use crate::config::deck_files::{env_value, read_small};
use crate::config::Config;
use crate::decide::patrol_rules;
use crate::fleet::session::Session;
use crate::sys::process_table;

/// What happens instead when one of agent-deck's files is unreadable.
const SKIPPED: &str = "skipping it in the Telegram poller check";

/// Whether the session subscribes to a Telegram channel plugin.
pub(crate) fn has_telegram_channel(channels: &[String]) -> bool {
    channels.iter().any(|c| c.starts_with("plugin:telegram@"))
}

/// `~/x` → `<home>/x`; anything else unchanged.
fn expand(home: &Path, raw: &str) -> PathBuf {
    raw.strip_prefix("~/")
        .map_or_else(|| raw.into(), |rest| home.join(rest))
}

/// `TELEGRAM_STATE_DIR` from env-file text ([`env_value`]), a leading `~/`
/// expanded.
pub(crate) fn state_dir_from_env_file(text: &str, home: &Path) -> Option<PathBuf> {
    env_value(text, "TELEGRAM_STATE_DIR").map(|v| expand(home, &v))
}

/// The conductor's `env_file` in agent-deck's `config.toml` (XDG first,
/// then the legacy locations).
fn env_file_from_config(p: &Config, name: &str) -> Option<String> {
    let path = crate::config::deck_files::find(&p.home, p.xdg_config_home.as_deref(), &p.root)?;
    let text = read_small(&path, SKIPPED)?;
    let table: toml::Table = toml::from_str(&text)
        .inspect_err(|e| {
            log::warn!(
                "cannot parse {} ({e}); looking for the env file in meta.json instead",
                path.display()
            )
        })
        .ok()?;
    table
        .get("conductors")?
        .get(name)?
        .get("claude")?
        .get("env_file")?
        .as_str()
        .map(str::to_owned)
}

/// The conductor's `env_file` in its `meta.json`, and the directory it is
/// relative to.
fn env_file_from_meta(p: &Config, name: &str, session_path: &str) -> Option<(String, PathBuf)> {
    let own = (!session_path.is_empty()).then(|| PathBuf::from(session_path));
    let mut dirs = own.into_iter().chain([p.root.join("conductor").join(name)]);
    dirs.find_map(|dir| {
        let text = read_small(&dir.join("meta.json"), SKIPPED)?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        let file = v.get("env_file")?.as_str()?.to_owned();
        Some((file, dir))
    })
}

/// The conductor's `TELEGRAM_STATE_DIR`, if its env file declares one.
pub(crate) fn conductor_state_dir(p: &Config, title: &str, session_path: &str) -> Option<PathBuf> {
    let name = title.strip_prefix("conductor-").unwrap_or(title);
    let (raw, base) = match env_file_from_config(p, name) {
        Some(f) => (f, p.home.clone()),
        None => env_file_from_meta(p, name, session_path)?,
    };
    // Relative to `base`; joining an absolute path yields that path.
    let file = base.join(expand(&p.home, raw.trim()));
    let text = read_small(&file, SKIPPED)?;
    state_dir_from_env_file(&text, &p.home)
}

/// Whether a command line looks like `bun … telegram`.
fn is_telegram_poller(text: &str) -> bool {
    text.find("bun")
        .is_some_and(|i| text[i + 3..].contains("telegram"))
}

/// The `TELEGRAM_STATE_DIR`s that running `bun … telegram` processes
/// serve: one walk of the process table for every conductor of a check.
pub(crate) fn served_state_dirs(proc_dir: &Path) -> BTreeSet<PathBuf> {
    process_table::processes(proc_dir)
        .filter(|p| is_telegram_poller(&p.command_text()))
        .filter_map(|p| p.env_value("TELEGRAM_STATE_DIR"))
        .map(|dir| PathBuf::from(OsString::from_vec(dir)))
        .collect()
}

/// A live conductor with a Telegram channel, as one poller check found it.
pub(crate) struct PollerSeen {
    pub session: Session,
    /// Its `TELEGRAM_STATE_DIR`.
    pub state_dir: PathBuf,
    /// Whether a `bun … telegram` process serves that directory.
    pub running: bool,
}

/// The live conductors of this tick that have a Telegram channel and a
/// `TELEGRAM_STATE_DIR` (agent-deck's files found from `cfg`), and whether
/// a poller process in `proc_dir` serves it. The channel is checked first:
/// a conductor without one costs no file or process read.
pub(crate) fn telegram_pollers(snap: &Snapshot, cfg: &Config, proc_dir: &Path) -> Vec<PollerSeen> {
    let mut seen = Vec::new();
    let mut served: Option<BTreeSet<PathBuf>> = None;
    let sessions = snap.sessions.iter().copied();
    for s in sessions.filter(|s| is_live_telegram_conductor(snap, s)) {
        let Some(dir) = conductor_state_dir(cfg, &s.title, &s.path) else {
            log::debug!(
                "{} has a Telegram channel but no TELEGRAM_STATE_DIR in its env file; not checked",
                s.id
            );
            continue;
        };
        let served = served.get_or_insert_with(|| served_state_dirs(proc_dir));
        seen.push(PollerSeen {
            session: s.clone(),
            running: served.contains(&dir),
            state_dir: dir,
        });
    }
    seen
}

/// Whether the session is a conductor this tick saw healthy with a Telegram
/// channel.
pub(crate) fn is_live_telegram_conductor(snap: &Snapshot, s: &Session) -> bool {
    let live = snap.live.get(&s.id);
    patrol_rules::is_conductor(s)
        && live.is_some_and(|l| l.status().is_healthy() && has_telegram_channel(&l.channels))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_file_parsing_like_agent_deck() {
        let home = Path::new("/home/u");
        let text = "# comment\nOTHER=1\n  export TELEGRAM_STATE_DIR=\"~/.claude/channels/telegram-ops\"  \n";
        assert_eq!(
            state_dir_from_env_file(text, home),
            Some(PathBuf::from("/home/u/.claude/channels/telegram-ops"))
        );
        assert_eq!(
            state_dir_from_env_file("TELEGRAM_STATE_DIR='/srv/tg'", home),
            Some(PathBuf::from("/srv/tg"))
        );
        assert_eq!(state_dir_from_env_file("TELEGRAM_STATE_DIR=", home), None);
        assert_eq!(
            state_dir_from_env_file("XTELEGRAM_STATE_DIR=/a", home),
            None
        );
        assert_eq!(
            state_dir_from_env_file("TELEGRAM_STATE_DIRX=/a", home),
            None
        );
        assert_eq!(
            env_value(
                "TELEGRAM_BOT_TOKEN=1:a\nTELEGRAM_BOT_TOKEN = 2:b\nTELEGRAM_BOT_TOKEN=\"3:c\"\n",
                "TELEGRAM_BOT_TOKEN"
            ),
            Some("3:c".to_owned())
        );
    }

    #[test]
    fn any_telegram_plugin_channel_counts() {
        assert!(has_telegram_channel(&[
            "plugin:telegram@claude-plugins-official".into()
        ]));
        assert!(has_telegram_channel(&[
            "x".into(),
            "plugin:telegram@other".into()
        ]));
        assert!(!has_telegram_channel(&["plugin:slack@x".into()]));
    }

    #[test]
    fn poller_command_lines() {
        assert!(is_telegram_poller("bun run telegram start "));
        assert!(is_telegram_poller(
            "/usr/bin/bun /x/telegram-plugin/server.ts "
        ));
        assert!(!is_telegram_poller("node telegram "));
        assert!(!is_telegram_poller("telegram bun "));
    }

    /// The settings of a test whose home is `tmp/home`.
    fn places(tmp: &Path) -> Config {
        let mut cfg = crate::config::test_config(&tmp.join("home"));
        cfg.root = tmp.join("home/.agent-deck");
        cfg
    }

    #[test]
    fn env_file_from_config_toml_then_meta_json() {
        let tmp = tempfile::tempdir().unwrap();
        let p = places(tmp.path());
        std::fs::create_dir_all(p.home.join(".config/agent-deck")).unwrap();
        std::fs::write(p.home.join("ops.env"), "TELEGRAM_STATE_DIR=~/tg-ops\n").unwrap();
        std::fs::write(
            p.home.join(".config/agent-deck/config.toml"),
            "[conductors.ops.claude]\nenv_file = \"~/ops.env\"\n",
        )
        .unwrap();
        assert_eq!(
            conductor_state_dir(&p, "conductor-ops", ""),
            Some(p.home.join("tg-ops"))
        );
        let meta_dir = p.root.join("conductor/travel");
        std::fs::create_dir_all(&meta_dir).unwrap();
        std::fs::write(
            meta_dir.join("travel.env"),
            "export TELEGRAM_STATE_DIR=/srv/tg-travel\n",
        )
        .unwrap();
        std::fs::write(meta_dir.join("meta.json"), r#"{"env_file": "travel.env"}"#).unwrap();
        assert_eq!(
            conductor_state_dir(&p, "conductor-travel", ""),
            Some(PathBuf::from("/srv/tg-travel"))
        );
        assert_eq!(conductor_state_dir(&p, "conductor-none", ""), None);
    }

    #[test]
    fn a_fifo_env_file_or_meta_json_is_skipped_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        let p = places(tmp.path());
        let dir = p.root.join("conductor/ops");
        std::fs::create_dir_all(&dir).unwrap();
        crate::sys::fs::mkfifo(&dir.join("meta.json"));
        assert_eq!(conductor_state_dir(&p, "conductor-ops", ""), None);
        std::fs::remove_file(dir.join("meta.json")).unwrap();
        std::fs::write(dir.join("meta.json"), r#"{"env_file": "ops.env"}"#).unwrap();
        crate::sys::fs::mkfifo(&dir.join("ops.env"));
        assert_eq!(conductor_state_dir(&p, "conductor-ops", ""), None);
    }

    #[test]
    fn proc_scan_matches_command_and_environment() {
        let tmp = tempfile::tempdir().unwrap();
        let proc_dir = tmp.path();
        let add = |pid: &str, cmd: &[u8], env: &[u8]| {
            std::fs::create_dir_all(proc_dir.join(pid)).unwrap();
            std::fs::write(proc_dir.join(pid).join("cmdline"), cmd).unwrap();
            std::fs::write(proc_dir.join(pid).join("environ"), env).unwrap();
        };
        add(
            "10",
            b"bun\0telegram\0",
            b"A=1\0TELEGRAM_STATE_DIR=/tg/other\0",
        );
        add("11", b"vim\0telegram\0", b"TELEGRAM_STATE_DIR=/tg/ops\0");
        std::fs::create_dir_all(proc_dir.join("self")).unwrap();
        assert!(!served_state_dirs(proc_dir).contains(Path::new("/tg/ops")));
        add(
            "12",
            b"bun\0run\0telegram\0start\0",
            b"TELEGRAM_STATE_DIR=/tg/ops\0",
        );
        assert!(served_state_dirs(proc_dir).contains(Path::new("/tg/ops")));
        assert!(served_state_dirs(Path::new("/nonexistent")).is_empty());
    }
}
