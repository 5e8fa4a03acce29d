//! Settings: every environment variable the watchdog reads, validated once
//! into a [`Config`]. The only module that looks at the environment, through
//! an [`Env`] snapshot tests can fill; the table is `read.rs`. A bad value is
//! a usage error, never silently replaced.

pub(crate) mod deck_files;
mod env;
mod read;

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

pub(crate) use env::{process_env, Env};

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::spelled::spelled;

/// How thread A (`hooks-watch`) learns about hook files (`WATCH_BACKEND`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchBackend {
    /// The kernel's notifications, or scanning while they cannot be had.
    Auto,
    Scan,
}

spelled! {
    /// Whether the pane watch (thread C, `panes-watch`) runs (`PANE_WATCH`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    pub(crate) enum PaneWatchMode {
        /// Where it can (tmux, a server, pidfd or kqueue).
        Auto = "auto",
        Off = "off",
    }
}

spelled! {
    /// Which sessions a stall is looked for in (`RESUME_SCOPE`, SPEC §14).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    pub(crate) enum ResumeScope {
        /// The restart-critical sessions.
        Critical = "critical",
        /// Every Claude session (its `list --all` row's `tool`).
        All = "all",
        Off = "off",
    }
}

/// A value that must never reach a log line.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Where a setting's value came from, for `--print-config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Source {
    pub name: &'static str,
    pub value: String,
    pub origin: &'static str,
}

/// Every setting, validated.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub home: PathBuf,
    /// `XDG_CONFIG_HOME` when set to an absolute path (agent-deck's config.toml).
    pub xdg_config_home: Option<PathBuf>,
    /// `XDG_DATA_HOME` when set to an absolute path (agent-deck's data dir).
    pub xdg_data_home: Option<PathBuf>,
    pub root: PathBuf,
    pub watchdog_dir: PathBuf,
    pub bin: PathBuf,
    pub hooks_dir: PathBuf,
    pub telegram_chat_id: Option<String>,
    pub telegram_token: Option<Secret>,
    pub telegram_api_base: String,
    pub rate_limit_max: u32,
    pub rate_limit_window: Duration,
    pub post_restart_cooldown: Duration,
    pub min_global_restart_interval: Duration,
    pub cascade_threshold: u32,
    pub cascade_window: Duration,
    pub cascade_pause: Duration,
    pub cascade_wait: Duration,
    pub safety_poll_interval: Duration,
    pub subprocess_timeout: Duration,
    pub event_queue_maxsize: usize,
    pub liveness_confirm_gap: Duration,
    pub liveness_skip_escalate_after: u32,
    pub restart_verify: Duration,
    pub start_verify: Duration,
    pub escalation_dedup: Duration,
    pub api_429_backoff: Duration,
    pub breaker_threshold: u32,
    pub breaker_window: Duration,
    pub breaker_pause: Duration,
    pub continuity_message: String,
    pub stale_error_cleanup: Duration,
    pub poller_check_interval: Duration,
    pub poller_restart_dedup: Duration,
    /// Checks with pending Telegram updates before a deaf poller's conductor
    /// is restarted (SPEC §6.5); 0 is off.
    pub poller_deaf_checks: u32,
    pub waiting_patrol_threshold: Duration,
    pub waiting_patrol_nudge_dedup: Duration,
    pub prompt_resume_profiles: Vec<(String, PathBuf)>,
    pub task_timers_file: PathBuf,
    pub task_daily_redispatch_cap: u32,
    pub task_partial_hmac_key_file: Option<PathBuf>,
    pub record_max_bytes: u64,
    pub task_retention_days: u32,
    pub watch_backend: WatchBackend,
    pub pane_watch: PaneWatchMode,
    pub pane_list_interval: Duration,
    pub armed_poll_interval: Duration,
    pub resume_scope: ResumeScope,
    pub resume_grace: Duration,
    pub resume_probe: Duration,
    pub resume_dwell: Duration,
    pub model_unavailable_backoff: Duration,
    pub resume_verify: Duration,
    pub resume_max_attempts: u32,
    pub resume_stagger: Duration,
    pub resume_fleet_max_per_hour: u32,
    /// The resume message, `{kind}` not yet replaced.
    pub resume_message: String,
    /// The message sent after a `/clear` of a full context (SPEC §15).
    pub context_rebrief_message: String,
    /// How long a `/compact` has to show that it compacted.
    pub context_compact: Duration,
    /// The proactive clear's threshold, a percent of the window; `None`: off.
    pub context_clear_at_pct: Option<u32>,
    /// The window the proactive clear measures against; `None`: the largest
    /// the model may have.
    pub context_window_tokens: Option<u64>,
    /// systemd's notify socket, when started by systemd with `Type=notify`.
    pub notify_socket: Option<String>,
    /// systemd's watchdog interval in µs, when it is meant for this process.
    pub watchdog_usec: Option<u64>,
    /// stderr is the journal (`JOURNAL_STREAM`), decided by the logger.
    pub journal_stream: Option<String>,
    /// The tmux-client and agent-deck-pane variables set here, which no child
    /// is handed (`sys::process::is_pane_env`), in name order.
    pub pane_env: Vec<String>,
    /// `CLAUDE_CONFIG_DIR` is set beside `AGENTDECK_INSTANCE_ID` (inherited
    /// from a pane, it looks); still handed on: it picks the Claude account.
    pub claude_config_dir_from_pane: bool,
    /// Each setting with its effective value and origin, in table order.
    pub sources: Vec<Source>,
}

impl Config {
    pub(crate) fn from_env(env: &Env) -> Result<Config> {
        read::read(env)
    }

    pub(crate) fn autorestart_dir(&self) -> PathBuf {
        self.watchdog_dir.join("autorestart")
    }

    /// The table printed by `--print-config`.
    pub(crate) fn describe(&self) -> String {
        let width = self.sources.iter().map(|s| s.name.len()).max().unwrap_or(0);
        self.sources
            .iter()
            .map(|s| format!("{:width$}  {}  ({})\n", s.name, s.value, s.origin))
            .collect()
    }
}

/// The `meta.json` of conductor `name` (SPEC §15): in agent-deck's conductor
/// dir; when none is there, in the session's own path if that is a dir
/// named `name` (agent-deck set the conductor up there, perhaps under a
/// conductor dir our environment does not resolve to). `None`: neither has
/// one.
pub(crate) fn conductor_meta(cfg: &Config, name: &str, session_path: &str) -> Option<PathBuf> {
    let dir = deck_files::conductor_dir(
        &cfg.home,
        cfg.xdg_config_home.as_deref(),
        cfg.xdg_data_home.as_deref(),
        &cfg.root,
    );
    let own = std::path::Path::new(session_path);
    let own = (own.file_name() == Some(name.as_ref())).then_some(own);
    [dir.join(name).as_path()]
        .into_iter()
        .chain(own)
        .map(|d| d.join("meta.json"))
        .find(|m| m.exists())
}

/// Whether agent-deck's policy for conductor `name` is `clear_on_compact`
/// (SPEC §15): on unless its `meta.json` says `false`; a missing or
/// unreadable one is agent-deck's default, on (a FIFO does not block).
pub(crate) fn clears_on_compact(cfg: &Config, name: &str, session_path: &str) -> bool {
    clears_on_compact_at(conductor_meta(cfg, name, session_path).as_deref())
}

/// What the `meta.json` at `meta` (where [`conductor_meta`] found it, if
/// anywhere) says of `clear_on_compact`.
pub(crate) fn clears_on_compact_at(meta: Option<&std::path::Path>) -> bool {
    let next = "taking clear_on_compact as on, agent-deck's default";
    meta.and_then(|meta| deck_files::read_small(meta, next))
        .is_none_or(|text| deck_files::clear_on_compact(&text))
}

/// The default settings with `HOME` in `home` and `AGENT_DECK_ROOT` at
/// `home/root`, for unit tests that need files of their own.
#[cfg(test)]
pub(crate) fn test_config(home: &std::path::Path) -> Config {
    let mut env = Env::new();
    env.insert("HOME".into(), home.display().to_string());
    env.insert(
        "AGENT_DECK_ROOT".into(),
        home.join("root").display().to_string(),
    );
    Config::from_env(&env).expect("the defaults are valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `text` to `path`, its directories made.
    fn write(path: &std::path::Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn clear_on_compact_is_read_from_the_conductor_dir_agent_deck_uses() {
        let tmp = tempfile::tempdir().unwrap();
        let mut cfg = test_config(tmp.path());
        let legacy = cfg.root.join("conductor");
        let off = r#"{"name":"ops","clear_on_compact":false}"#;
        // No meta.json anywhere: agent-deck's default.
        assert!(clears_on_compact(&cfg, "ops", ""));
        write(&legacy.join("ops/meta.json"), off);
        write(
            &legacy.join("two/meta.json"),
            r#"{"clear_on_compact":true}"#,
        );
        write(&legacy.join("bad/meta.json"), "{garbage");
        assert!(!clears_on_compact(&cfg, "ops", ""));
        assert!(clears_on_compact(&cfg, "two", ""));
        assert!(clears_on_compact(&cfg, "bad", ""));
        assert!(clears_on_compact(&cfg, "none", ""));
        // An XDG conductor dir that exists wins over the legacy one.
        let xdg = tmp.path().join("xdg");
        cfg.xdg_data_home = Some(xdg.clone());
        write(&xdg.join("agent-deck/conductor/other/meta.json"), "{}");
        assert!(clears_on_compact(&cfg, "ops", ""));
        write(&xdg.join("agent-deck/conductor/ops/meta.json"), off);
        assert!(!clears_on_compact(&cfg, "ops", ""));
        // config.toml's [conductor] dir wins over both.
        let config = tmp.path().join(".config/agent-deck/config.toml");
        write(&config, "[conductor]\ndir = \"~/mine\"\n");
        assert!(clears_on_compact(&cfg, "ops", ""));
        write(&tmp.path().join("mine/ops/meta.json"), off);
        assert!(!clears_on_compact(&cfg, "ops", ""));
        write(&config, "[tmux]\nsocket_name = \"x\"\n");
        assert_eq!(
            conductor_meta(&cfg, "ops", ""),
            Some(xdg.join("agent-deck/conductor/ops/meta.json"))
        );
    }

    #[test]
    fn the_session_path_is_read_only_when_the_conductor_dir_has_no_meta_json() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = test_config(tmp.path());
        let own = tmp.path().join("elsewhere/ops");
        write(&own.join("meta.json"), r#"{"clear_on_compact":false}"#);
        let own_path = own.to_str().unwrap();
        assert!(!clears_on_compact(&cfg, "ops", own_path));
        // A path not named after the conductor is some project's dir.
        assert!(clears_on_compact(&cfg, "two", own_path));
        write(&cfg.root.join("conductor/ops/meta.json"), "{}");
        assert!(clears_on_compact(&cfg, "ops", own_path));
    }

    #[test]
    fn a_fifo_meta_json_does_not_stall_the_daemon() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = test_config(tmp.path());
        let dir = cfg.root.join("conductor/ops");
        std::fs::create_dir_all(&dir).unwrap();
        crate::sys::fs::mkfifo(&dir.join("meta.json"));
        assert!(clears_on_compact(&cfg, "ops", ""));
    }
}
