//! Settings: every environment variable the watchdog reads, validated once into a
//! [`Config`].
//!
//! This is the only module that looks at the environment. It works on an
//! [`Env`] snapshot so tests can hand it any map; a bad value is an
//! [`Error::Usage`] naming the variable and the value, never silently replaced.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};

/// A snapshot of the process environment: the variables whose values are
/// text, and apart from them the values that are not. A setting read from
/// the second kind is an error naming it, never a lossy conversion (a path
/// converted lossily names a different file).
#[derive(Debug, Clone, Default)]
pub struct Env {
    text: BTreeMap<String, String>,
    not_text: BTreeMap<String, OsString>,
}

impl Env {
    pub fn new() -> Env {
        Env::default()
    }

    pub fn insert(&mut self, name: String, value: String) {
        self.not_text.remove(&name);
        self.text.insert(name, value);
    }

    /// A value as the OS gives it: kept as text when it is valid UTF-8,
    /// apart otherwise.
    pub fn insert_os(&mut self, name: String, value: OsString) {
        match value.into_string() {
            Ok(v) => self.insert(name, v),
            Err(v) => {
                self.text.remove(&name);
                self.not_text.insert(name, v);
            }
        }
    }

    /// The variable's text, `None` when unset; an error naming it when its
    /// value is not valid UTF-8.
    fn text(&self, name: &str) -> Result<Option<&str>> {
        if let Some(raw) = self.not_text.get(name) {
            return Err(Error::usage(format!(
                "{name}={raw:?} is invalid: it is not valid UTF-8; set it to a UTF-8 value"
            )));
        }
        Ok(self.text.get(name).map(String::as_str))
    }

    /// The variable's raw value, text or not (for `PATH`, which is only
    /// searched and never rewritten).
    fn os(&self, name: &str) -> Option<&OsStr> {
        self.text
            .get(name)
            .map(OsStr::new)
            .or_else(|| self.not_text.get(name).map(OsString::as_os_str))
    }
}

impl FromIterator<(String, String)> for Env {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Env {
        let mut env = Env::new();
        for (k, v) in iter {
            env.insert(k, v);
        }
        env
    }
}

/// Reads the real environment. A variable whose name is not text is no
/// setting of ours and is left out; a value that is not text is kept apart
/// (see [`Env`]).
pub fn process_env() -> Env {
    let mut env = Env::new();
    for (name, value) in std::env::vars_os() {
        if let Ok(name) = name.into_string() {
            env.insert_os(name, value);
        }
    }
    env
}

/// A value that must never reach a log line.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
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
pub struct Source {
    pub name: &'static str,
    pub value: String,
    pub origin: &'static str,
}

pub const DEFAULT_CONTINUITY_MESSAGE: &str = "[agent-deck-watchdog] This session was restarted \
automatically at {timestamp} after it was found in error. If you were in the middle of a task, \
re-read your notes and continue from where you left off.";

/// Every setting, validated.
#[derive(Debug, Clone)]
pub struct Config {
    pub home: PathBuf,
    /// `XDG_CONFIG_HOME` when set to an absolute path (agent-deck's config.toml).
    pub xdg_config_home: Option<PathBuf>,
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
    /// SPEC §6.5: consecutive checks with pending Telegram updates before a
    /// deaf poller's conductor is restarted; 0 is off.
    pub poller_deaf_checks: u32,
    pub waiting_patrol_threshold: Duration,
    pub waiting_patrol_nudge_dedup: Duration,
    pub prompt_resume_profiles: Vec<(String, PathBuf)>,
    pub task_timers_file: PathBuf,
    pub task_daily_redispatch_cap: u32,
    pub task_partial_hmac_key_file: Option<PathBuf>,
    /// A record file past this many bytes is rotated to `<name>.1`.
    pub record_max_bytes: u64,
    /// Finished tasks and their logs older than this many days are pruned.
    pub task_retention_days: u32,
    /// How thread A learns about hook files (`WATCH_BACKEND`).
    pub watch_backend: WatchBackend,
    /// systemd's notify socket, when started by systemd with `Type=notify`.
    pub notify_socket: Option<String>,
    /// systemd's watchdog interval in µs, when it is meant for this process.
    pub watchdog_usec: Option<u64>,
    /// stderr is the journal (`JOURNAL_STREAM`), decided by the logger.
    pub journal_stream: Option<String>,
    /// Each setting with its effective value and origin, in table order.
    pub sources: Vec<Source>,
}

impl Config {
    /// Reads and validates every setting from `env`.
    pub fn from_env(env: &Env) -> Result<Config> {
        Reader::new(env).read()
    }

    pub fn autorestart_dir(&self) -> PathBuf {
        self.watchdog_dir.join("autorestart")
    }

    /// The table printed by `--print-config`.
    pub fn describe(&self) -> String {
        let width = self.sources.iter().map(|s| s.name.len()).max().unwrap_or(0);
        let mut out = String::new();
        for s in &self.sources {
            out.push_str(&format!("{:width$}  {}  ({})\n", s.name, s.value, s.origin));
        }
        out
    }
}

pub use crate::triggers::watch::Backend as WatchBackend;

/// The upper bound of a wait that holds the main loop or a worker in one go
/// (a poll interval, a CLI timeout, a verification): an hour.
const MAX_WAIT_S: f64 = 3600.0;
/// The upper bound of a window, pause or dedup the daemon remembers: a week.
const MAX_WINDOW_S: f64 = 7.0 * 86_400.0;
/// The least a must-be-positive duration may be: a millisecond (less rounds
/// to nothing and makes a loop spin).
const MIN_POSITIVE_S: f64 = 0.001;
/// The upper bound of a count (a budget, a threshold, a daily cap).
const MAX_COUNT: u32 = 10_000;
/// The least `RECORD_MAX_BYTES`: a few records must fit before a rotation.
const MIN_RECORD_BYTES: u32 = 64 * 1024;
/// The upper bound of `TASK_RETENTION_DAYS`: ten years.
const MAX_RETENTION_DAYS: u32 = 3650;
/// The upper bound of `EVENT_QUEUE_MAXSIZE` (SPEC §11).
const MAX_EVENT_QUEUE: u32 = 1_000_000;

/// What a duration setting may be: its least value and its greatest.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    min: f64,
    max: f64,
}

/// Zero (off, or no wait) up to an hour.
const WAIT: Bounds = Bounds {
    min: 0.0,
    max: MAX_WAIT_S,
};
/// More than zero, up to an hour.
const POSITIVE_WAIT: Bounds = Bounds {
    min: MIN_POSITIVE_S,
    max: MAX_WAIT_S,
};
/// Zero up to a week.
const WINDOW: Bounds = Bounds {
    min: 0.0,
    max: MAX_WINDOW_S,
};
/// More than zero, up to a week.
const POSITIVE_WINDOW: Bounds = Bounds {
    min: MIN_POSITIVE_S,
    max: MAX_WINDOW_S,
};

/// Walks the table of settings, recording where each value came from.
struct Reader<'a> {
    env: &'a Env,
    sources: Vec<Source>,
}

impl<'a> Reader<'a> {
    fn new(env: &'a Env) -> Reader<'a> {
        Reader {
            env,
            sources: Vec::new(),
        }
    }

    /// The variable's value when it is set and not empty.
    fn get(&self, name: &str) -> Result<Option<&'a str>> {
        Ok(self.env.text(name)?.filter(|v| !v.is_empty()))
    }

    fn note(&mut self, name: &'static str, value: impl Into<String>, origin: &'static str) {
        self.sources.push(Source {
            name,
            value: value.into(),
            origin,
        });
    }

    /// A numeric setting: unset is the default, set (even to nothing) must parse.
    fn raw_number(&self, name: &str) -> Result<Option<&'a str>> {
        self.env.text(name)
    }

    fn seconds(&mut self, name: &'static str, default: f64, span: Bounds) -> Result<Duration> {
        let (secs, origin) = match self.raw_number(name)? {
            None => (default, "default"),
            Some(raw) => (parse_seconds(name, raw, span)?, "environment"),
        };
        self.note(name, format_seconds(secs), origin);
        Ok(Duration::from_secs_f64(secs))
    }

    fn count(&mut self, name: &'static str, default: u32, min: u32, max: u32) -> Result<u32> {
        let (n, origin) = match self.raw_number(name)? {
            None => (default, "default"),
            Some(raw) => (parse_count(name, raw, min, max)?, "environment"),
        };
        self.note(name, n.to_string(), origin);
        Ok(n)
    }

    fn path(&mut self, name: &'static str, default: PathBuf) -> Result<PathBuf> {
        let (p, origin) = match self.get(name)? {
            None => (default, "default"),
            Some(raw) => (PathBuf::from(raw), "environment"),
        };
        self.note(name, p.display().to_string(), origin);
        Ok(p)
    }

    fn watch_backend(&mut self) -> Result<WatchBackend> {
        let (backend, origin) = match self.get("WATCH_BACKEND")? {
            None => (WatchBackend::Auto, "default"),
            Some(raw) => match raw.trim() {
                "auto" => (WatchBackend::Auto, "environment"),
                "scan" => (WatchBackend::Scan, "environment"),
                _ => {
                    return Err(Error::usage(format!(
                        "WATCH_BACKEND={raw:?} is invalid: expected auto (kernel notifications, scanning while they cannot be had) or scan"
                    )))
                }
            },
        };
        let shown = match backend {
            WatchBackend::Auto => "auto",
            WatchBackend::Scan => "scan",
        };
        self.note("WATCH_BACKEND", shown, origin);
        Ok(backend)
    }

    fn read(mut self) -> Result<Config> {
        let home = self.get("HOME")?.map(PathBuf::from);
        let home_or = |what: &str| -> Result<PathBuf> {
            home.clone().ok_or_else(|| {
                Error::usage(format!(
                    "HOME is not set, so {what} has no default: set HOME or {what}"
                ))
            })
        };
        let root = match self.get("AGENT_DECK_ROOT")? {
            Some(_) => self.path("AGENT_DECK_ROOT", PathBuf::new())?,
            None => self.path(
                "AGENT_DECK_ROOT",
                home_or("AGENT_DECK_ROOT")?.join(".agent-deck"),
            )?,
        };
        let watchdog_dir = root.join("watchdog");
        let bin = match self.get("AGENT_DECK_BIN")? {
            Some(_) => self.path("AGENT_DECK_BIN", PathBuf::new())?,
            None => self.path("AGENT_DECK_BIN", default_bin(self.env.os("PATH")))?,
        };
        let hooks_dir = match self.get("AGENT_DECK_HOOKS_DIR")? {
            Some(dir) => {
                self.note("AGENT_DECK_HOOKS_DIR", dir, "environment");
                PathBuf::from(dir)
            }
            None => {
                let dir = resolve_hooks_dir(
                    &home_or("AGENT_DECK_HOOKS_DIR")?,
                    self.get("XDG_DATA_HOME")?,
                    &root,
                );
                self.note(
                    "AGENT_DECK_HOOKS_DIR",
                    dir.display().to_string(),
                    "resolved like agent-deck",
                );
                dir
            }
        };
        let telegram_chat_id = self.get("TELEGRAM_ESCALATION_CHAT_ID")?.map(str::to_owned);
        self.note(
            "TELEGRAM_ESCALATION_CHAT_ID",
            telegram_chat_id
                .clone()
                .unwrap_or_else(|| "(empty: Telegram off)".into()),
            if telegram_chat_id.is_some() {
                "environment"
            } else {
                "default"
            },
        );
        let (telegram_token, token_origin) = match self.get("TELEGRAM_BOT_TOKEN")? {
            Some(t) => (Some(Secret(t.to_owned())), "environment"),
            None => match &home {
                Some(h) => (
                    read_token_file(&h.join(".claude/channels/telegram/.env")),
                    "~/.claude/channels/telegram/.env",
                ),
                None => (None, "default"),
            },
        };
        let shown = if telegram_token.is_some() {
            "(set, not shown)"
        } else {
            "(not set)"
        };
        self.note("TELEGRAM_BOT_TOKEN", shown, token_origin);
        let telegram_api_base = match self.get("TELEGRAM_API_BASE")? {
            Some(b) => {
                self.note("TELEGRAM_API_BASE", b, "environment");
                b.trim_end_matches('/').to_owned()
            }
            None => {
                self.note("TELEGRAM_API_BASE", "https://api.telegram.org", "default");
                "https://api.telegram.org".to_owned()
            }
        };
        let rate_limit_max = self.count("RATE_LIMIT_MAX", 3, 1, MAX_COUNT)?;
        let rate_limit_window = self.seconds("RATE_LIMIT_WINDOW_S", 300.0, POSITIVE_WINDOW)?;
        let post_restart_cooldown = self.seconds("POST_RESTART_COOLDOWN_S", 30.0, WINDOW)?;
        let min_global_restart_interval =
            self.seconds("MIN_GLOBAL_RESTART_INTERVAL_S", 60.0, WAIT)?;
        let cascade_threshold = self.count("CASCADE_THRESHOLD", 5, 2, MAX_COUNT)?;
        let cascade_window = self.seconds("CASCADE_WINDOW_S", 10.0, WINDOW)?;
        let cascade_pause = self.seconds("CASCADE_PAUSE_S", 60.0, WINDOW)?;
        let cascade_wait = self.seconds("CASCADE_WAIT_S", 30.0, WAIT)?;
        let safety_poll_interval = self.seconds("SAFETY_POLL_INTERVAL_S", 5.0, POSITIVE_WAIT)?;
        let subprocess_timeout = self.seconds("SUBPROCESS_TIMEOUT_S", 30.0, POSITIVE_WAIT)?;
        let event_queue_maxsize =
            self.count("EVENT_QUEUE_MAXSIZE", 100, 1, MAX_EVENT_QUEUE)? as usize;
        let liveness_confirm_gap = self.seconds("LIVENESS_CONFIRM_GAP_S", 2.0, WAIT)?;
        let liveness_skip_escalate_after =
            self.count("LIVENESS_SKIP_ESCALATE_AFTER", 3, 1, MAX_COUNT)?;
        let restart_verify = self.seconds("RESTART_VERIFY_S", 4.0, WAIT)?;
        let start_verify = self.seconds("START_VERIFY_S", 15.0, WAIT)?;
        let escalation_dedup = self.seconds("ESCALATION_DEDUP_S", 300.0, WINDOW)?;
        let api_429_backoff = self.seconds("API_429_BACKOFF_S", 180.0, WINDOW)?;
        let breaker_threshold = self.count("CIRCUIT_BREAKER_429_THRESHOLD", 3, 1, MAX_COUNT)?;
        let breaker_window = self.seconds("CIRCUIT_BREAKER_429_WINDOW_S", 600.0, WINDOW)?;
        let breaker_pause = self.seconds("CIRCUIT_BREAKER_PAUSE_S", 600.0, WINDOW)?;
        let continuity_message = match self.env.text("CONTINUITY_MESSAGE")? {
            Some(m) => {
                self.note(
                    "CONTINUITY_MESSAGE",
                    if m.is_empty() { "(empty: disabled)" } else { m },
                    "environment",
                );
                m.to_owned()
            }
            None => {
                self.note("CONTINUITY_MESSAGE", DEFAULT_CONTINUITY_MESSAGE, "default");
                DEFAULT_CONTINUITY_MESSAGE.to_owned()
            }
        };
        let stale_error_cleanup = self.seconds("STALE_ERROR_CLEANUP_S", 0.0, WINDOW)?;
        let poller_check_interval =
            self.seconds("POLLER_CHECK_INTERVAL_S", 60.0, POSITIVE_WINDOW)?;
        let poller_restart_dedup = self.seconds("POLLER_RESTART_DEDUP_S", 3600.0, WINDOW)?;
        let poller_deaf_checks = self.count("POLLER_DEAF_CHECKS", 0, 0, MAX_COUNT)?;
        let waiting_patrol_threshold =
            self.seconds("WAITING_PATROL_THRESHOLD_S", 600.0, POSITIVE_WINDOW)?;
        let waiting_patrol_nudge_dedup =
            self.seconds("WAITING_PATROL_NUDGE_DEDUP_S", 3600.0, WINDOW)?;
        let raw_profiles = self.get("PROMPT_RESUME_PROFILES")?.unwrap_or("");
        let prompt_resume_profiles = parse_profile_map(raw_profiles)?;
        self.note(
            "PROMPT_RESUME_PROFILES",
            if raw_profiles.is_empty() {
                "(empty: off)"
            } else {
                raw_profiles
            },
            if raw_profiles.is_empty() {
                "default"
            } else {
                "environment"
            },
        );
        let task_timers_file =
            self.path("TASK_TIMERS_FILE", watchdog_dir.join("task-timers.json"))?;
        let task_daily_redispatch_cap =
            self.count("TASK_DAILY_REDISPATCH_CAP", 20, 0, MAX_COUNT)?;
        let task_partial_hmac_key_file = self.get("TASK_PARTIAL_HMAC_KEY_FILE")?.map(PathBuf::from);
        self.note(
            "TASK_PARTIAL_HMAC_KEY_FILE",
            task_partial_hmac_key_file
                .as_ref()
                .map_or("(empty: no signature check)".into(), |p| {
                    p.display().to_string()
                }),
            if task_partial_hmac_key_file.is_some() {
                "environment"
            } else {
                "default"
            },
        );
        let record_max_bytes = u64::from(self.count(
            "RECORD_MAX_BYTES",
            16 * 1024 * 1024,
            MIN_RECORD_BYTES,
            u32::MAX,
        )?);
        let task_retention_days = self.count("TASK_RETENTION_DAYS", 30, 1, MAX_RETENTION_DAYS)?;
        let watch_backend = self.watch_backend()?;
        let watchdog_usec = match self.get("WATCHDOG_USEC")? {
            None => None,
            Some(raw) => {
                let usec = raw.trim().parse::<u64>().map_err(|_| {
                    Error::usage(format!(
                        "WATCHDOG_USEC={raw:?} is invalid: expected microseconds (set by systemd)"
                    ))
                })?;
                let for_us = self
                    .get("WATCHDOG_PID")?
                    .is_none_or(|p| p.trim() == std::process::id().to_string());
                for_us.then_some(usec)
            }
        };
        Ok(Config {
            notify_socket: self.get("NOTIFY_SOCKET")?.map(str::to_owned),
            watchdog_usec,
            journal_stream: self.get("JOURNAL_STREAM")?.map(str::to_owned),
            home: home.unwrap_or_else(|| PathBuf::from("/")),
            xdg_config_home: self
                .get("XDG_CONFIG_HOME")?
                .map(PathBuf::from)
                .filter(|p| p.is_absolute()),
            root,
            watchdog_dir,
            bin,
            hooks_dir,
            telegram_chat_id,
            telegram_token,
            telegram_api_base,
            rate_limit_max,
            rate_limit_window,
            post_restart_cooldown,
            min_global_restart_interval,
            cascade_threshold,
            cascade_window,
            cascade_pause,
            cascade_wait,
            safety_poll_interval,
            subprocess_timeout,
            event_queue_maxsize,
            liveness_confirm_gap,
            liveness_skip_escalate_after,
            restart_verify,
            start_verify,
            escalation_dedup,
            api_429_backoff,
            breaker_threshold,
            breaker_window,
            breaker_pause,
            continuity_message,
            stale_error_cleanup,
            poller_check_interval,
            poller_restart_dedup,
            poller_deaf_checks,
            waiting_patrol_threshold,
            waiting_patrol_nudge_dedup,
            prompt_resume_profiles,
            task_timers_file,
            task_daily_redispatch_cap,
            task_partial_hmac_key_file,
            record_max_bytes,
            task_retention_days,
            watch_backend,
            sources: self.sources,
        })
    }
}

/// Parses a decimal number of seconds within `span`. The error shows the
/// value exactly as given.
fn parse_seconds(name: &str, raw: &str, span: Bounds) -> Result<f64> {
    let Ok(v) = raw.trim().parse::<f64>() else {
        return Err(Error::usage(format!(
            "{name}={raw:?} is invalid: expected a number of seconds such as 30 or 0.5"
        )));
    };
    if v.is_finite() && (span.min..=span.max).contains(&v) {
        return Ok(v);
    }
    let least = if span.min > 0.0 {
        format!("more than 0 (at least {})", span.min)
    } else {
        "0".to_owned()
    };
    Err(Error::usage(format!(
        "{name}={raw:?} is invalid: expected a number of seconds from {least} to {} ({})",
        span.max,
        if span.max >= MAX_WINDOW_S {
            "a week"
        } else {
            "an hour"
        }
    )))
}

fn parse_count(name: &str, raw: &str, min: u32, max: u32) -> Result<u32> {
    match raw.trim().parse::<u32>() {
        Ok(v) if (min..=max).contains(&v) => Ok(v),
        _ => Err(Error::usage(format!(
            "{name}={raw:?} is invalid: expected a whole number from {min} to {max}"
        ))),
    }
}

fn format_seconds(secs: f64) -> String {
    format!("{secs}s")
}

/// `agent-deck` on `PATH`, else `/usr/local/bin/agent-deck`.
fn default_bin(path: Option<&OsStr>) -> PathBuf {
    path.into_iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("agent-deck"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("/usr/local/bin/agent-deck"))
}

/// The hooks directory as agent-deck resolves it: XDG if it exists, else the
/// legacy directory under the root if it exists, else XDG.
pub fn resolve_hooks_dir(home: &Path, xdg_data_home: Option<&str>, root: &Path) -> PathBuf {
    let data = match xdg_data_home {
        Some(x) if Path::new(x).is_absolute() => PathBuf::from(x),
        _ => home.join(".local/share"),
    };
    let xdg = data.join("agent-deck/hooks");
    let legacy = root.join("hooks");
    if xdg.is_dir() {
        xdg
    } else if legacy.is_dir() {
        legacy
    } else {
        xdg
    }
}

/// Reads the `TELEGRAM_BOT_TOKEN=` line of an env file, if any.
fn read_token_file(path: &Path) -> Option<Secret> {
    let text = crate::sys::fs::read_text(path, crate::sys::fs::SMALL_FILE_MAX).ok()?;
    text.lines().find_map(|line| {
        let line = line.trim();
        let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
        let value = line.strip_prefix("TELEGRAM_BOT_TOKEN=")?;
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
        (!value.is_empty()).then(|| Secret(value.to_owned()))
    })
}

/// Parses `profile=CLAUDE_CONFIG_DIR,…`.
fn parse_profile_map(raw: &str) -> Result<Vec<(String, PathBuf)>> {
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|entry| match entry.split_once('=') {
            Some((p, d)) if !p.trim().is_empty() && !d.trim().is_empty() => {
                Ok((p.trim().to_owned(), PathBuf::from(d.trim())))
            }
            _ => Err(Error::usage(format!(
                "PROMPT_RESUME_PROFILES entry {entry:?} is invalid: expected profile=CLAUDE_CONFIG_DIR"
            ))),
        })
        .collect()
}

/// The default settings with `HOME` in `home` and `AGENT_DECK_ROOT` at
/// `home/root`, for unit tests that need files of their own.
#[cfg(test)]
pub(crate) fn test_config(home: &Path) -> Config {
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

    fn env(pairs: &[(&str, &str)]) -> Env {
        [("HOME", "/nonexistent-home")]
            .iter()
            .chain(pairs)
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The error `Config::from_env` gives for `name=raw`.
    fn refusal(name: &str, raw: &str) -> Error {
        match Config::from_env(&env(&[(name, raw)])) {
            Ok(_) => panic!("{name}={raw} was accepted"),
            Err(e) => e,
        }
    }

    /// Every duration setting, and whether it must be more than 0.
    const DURATIONS: [(&str, bool); 20] = [
        ("RATE_LIMIT_WINDOW_S", true),
        ("POST_RESTART_COOLDOWN_S", false),
        ("MIN_GLOBAL_RESTART_INTERVAL_S", false),
        ("CASCADE_WINDOW_S", false),
        ("CASCADE_PAUSE_S", false),
        ("CASCADE_WAIT_S", false),
        ("SAFETY_POLL_INTERVAL_S", true),
        ("SUBPROCESS_TIMEOUT_S", true),
        ("LIVENESS_CONFIRM_GAP_S", false),
        ("RESTART_VERIFY_S", false),
        ("START_VERIFY_S", false),
        ("ESCALATION_DEDUP_S", false),
        ("API_429_BACKOFF_S", false),
        ("CIRCUIT_BREAKER_429_WINDOW_S", false),
        ("CIRCUIT_BREAKER_PAUSE_S", false),
        ("STALE_ERROR_CLEANUP_S", false),
        ("POLLER_CHECK_INTERVAL_S", true),
        ("POLLER_RESTART_DEDUP_S", false),
        ("WAITING_PATROL_THRESHOLD_S", true),
        ("WAITING_PATROL_NUDGE_DEDUP_S", false),
    ];

    /// Every count setting with its least and greatest value.
    const COUNTS: [(&str, u32, u32); 9] = [
        ("POLLER_DEAF_CHECKS", 0, MAX_COUNT),
        ("RECORD_MAX_BYTES", MIN_RECORD_BYTES, u32::MAX),
        ("TASK_RETENTION_DAYS", 1, MAX_RETENTION_DAYS),
        ("RATE_LIMIT_MAX", 1, MAX_COUNT),
        ("CASCADE_THRESHOLD", 2, MAX_COUNT),
        ("EVENT_QUEUE_MAXSIZE", 1, MAX_EVENT_QUEUE),
        ("LIVENESS_SKIP_ESCALATE_AFTER", 1, MAX_COUNT),
        ("CIRCUIT_BREAKER_429_THRESHOLD", 1, MAX_COUNT),
        ("TASK_DAILY_REDISPATCH_CAP", 0, MAX_COUNT),
    ];

    #[test]
    fn watch_backend_is_auto_or_scan() {
        let c = Config::from_env(&env(&[])).unwrap();
        assert_eq!(c.watch_backend, WatchBackend::Auto);
        let c = Config::from_env(&env(&[("WATCH_BACKEND", "scan")])).unwrap();
        assert_eq!(c.watch_backend, WatchBackend::Scan);
        let e = refusal("WATCH_BACKEND", "inotify!").to_string();
        assert!(e.contains("WATCH_BACKEND=\"inotify!\""), "{e}");
        assert_eq!(refusal("WATCH_BACKEND", "x").exit_code(), 2);
    }

    #[test]
    fn the_new_settings_have_the_spec_defaults() {
        let c = Config::from_env(&env(&[])).unwrap();
        assert_eq!(c.poller_deaf_checks, 0);
        assert_eq!(c.record_max_bytes, 16_777_216);
        assert_eq!(c.task_retention_days, 30);
    }

    #[test]
    fn defaults_match_the_spec() {
        let c = Config::from_env(&env(&[])).unwrap();
        assert_eq!(c.root, PathBuf::from("/nonexistent-home/.agent-deck"));
        assert_eq!(c.rate_limit_max, 3);
        assert_eq!(c.rate_limit_window, Duration::from_secs(300));
        assert_eq!(c.min_global_restart_interval, Duration::from_secs(60));
        assert_eq!(c.cascade_threshold, 5);
        assert_eq!(c.safety_poll_interval, Duration::from_secs(5));
        assert_eq!(c.event_queue_maxsize, 100);
        assert_eq!(c.liveness_confirm_gap, Duration::from_secs(2));
        assert_eq!(c.escalation_dedup, Duration::from_secs(300));
        assert_eq!(
            c.hooks_dir,
            PathBuf::from("/nonexistent-home/.local/share/agent-deck/hooks")
        );
        assert_eq!(
            c.task_timers_file,
            PathBuf::from("/nonexistent-home/.agent-deck/watchdog/task-timers.json")
        );
        assert!(c.continuity_message.contains("{timestamp}"));
    }

    #[test]
    fn decimal_seconds_are_accepted() {
        let c = Config::from_env(&env(&[("SAFETY_POLL_INTERVAL_S", "0.25")])).unwrap();
        assert_eq!(c.safety_poll_interval, Duration::from_millis(250));
    }

    #[test]
    fn bad_values_name_the_variable_and_value() {
        for (k, v) in [
            ("RATE_LIMIT_MAX", "three"),
            ("RATE_LIMIT_MAX", "0"),
            ("SAFETY_POLL_INTERVAL_S", "-1"),
            ("SAFETY_POLL_INTERVAL_S", "0"),
            ("CASCADE_WAIT_S", "nan"),
            ("EVENT_QUEUE_MAXSIZE", "1.5"),
            ("PROMPT_RESUME_PROFILES", "personal"),
            ("RATE_LIMIT_MAX", ""),
            ("CASCADE_WAIT_S", ""),
        ] {
            let err = Config::from_env(&env(&[(k, v)])).unwrap_err();
            assert_eq!(err.exit_code(), 2);
            let msg = err.to_string();
            assert!(msg.contains(k) && msg.contains(v), "{msg}");
        }
    }

    #[test]
    fn hooks_dir_prefers_existing_xdg_then_legacy() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path();
        let root = home.join(".agent-deck");
        assert_eq!(
            resolve_hooks_dir(home, None, &root),
            home.join(".local/share/agent-deck/hooks")
        );
        std::fs::create_dir_all(root.join("hooks")).unwrap();
        assert_eq!(resolve_hooks_dir(home, None, &root), root.join("hooks"));
        std::fs::create_dir_all(home.join(".local/share/agent-deck/hooks")).unwrap();
        assert_eq!(
            resolve_hooks_dir(home, None, &root),
            home.join(".local/share/agent-deck/hooks")
        );
        let xdg = home.join("xdg");
        std::fs::create_dir_all(xdg.join("agent-deck/hooks")).unwrap();
        assert_eq!(
            resolve_hooks_dir(home, xdg.to_str(), &root),
            xdg.join("agent-deck/hooks")
        );
    }

    #[test]
    fn token_is_read_from_file_and_never_printed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(".claude/channels/telegram");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(".env"),
            "OTHER=1\nTELEGRAM_BOT_TOKEN=\"123:abc\"\n",
        )
        .unwrap();
        let c = Config::from_env(&env(&[("HOME", tmp.path().to_str().unwrap())])).unwrap();
        assert_eq!(c.telegram_token.as_ref().unwrap().expose(), "123:abc");
        assert!(!c.describe().contains("123:abc"));
        assert!(!format!("{c:?}").contains("123:abc"));
    }

    #[test]
    fn event_queue_maxsize_has_an_upper_bound() {
        for raw in ["4294967295", "50000000", "1000001", "99999999999999999999"] {
            let e = refusal("EVENT_QUEUE_MAXSIZE", raw);
            assert_eq!(e.exit_code(), 2);
            let msg = e.to_string();
            assert!(
                msg.contains("EVENT_QUEUE_MAXSIZE") && msg.contains(raw),
                "{msg}"
            );
        }
        let c = Config::from_env(&env(&[("EVENT_QUEUE_MAXSIZE", "1000000")])).unwrap();
        assert_eq!(c.event_queue_maxsize, 1_000_000);
    }

    #[test]
    fn every_numeric_setting_has_an_upper_bound() {
        for (name, _) in DURATIONS {
            for raw in ["604801", "1e9", "1e300", "inf"] {
                let msg = refusal(name, raw).to_string();
                assert!(msg.contains(name) && msg.contains(raw), "{msg}");
            }
            assert!(Config::from_env(&env(&[(name, "3600")])).is_ok(), "{name}");
        }
        for name in [
            "SAFETY_POLL_INTERVAL_S",
            "SUBPROCESS_TIMEOUT_S",
            "LIVENESS_CONFIRM_GAP_S",
            "RESTART_VERIFY_S",
            "START_VERIFY_S",
            "CASCADE_WAIT_S",
            "MIN_GLOBAL_RESTART_INTERVAL_S",
        ] {
            let msg = refusal(name, "3601").to_string();
            assert!(msg.contains("3601") && msg.contains("3600"), "{msg}");
        }
        for (name, min, max) in COUNTS {
            let c = Config::from_env(&env(&[(name, &max.to_string())]));
            assert!(c.is_ok(), "{name}={max}");
            let c = Config::from_env(&env(&[(name, &min.to_string())]));
            assert!(c.is_ok(), "{name}={min}");
            let over = (u64::from(max) + 1).to_string();
            let msg = refusal(name, &over).to_string();
            assert!(msg.contains(name) && msg.contains(&over), "{msg}");
            if min > 0 {
                let under = (min - 1).to_string();
                let err = refusal(name, &under);
                assert_eq!(err.exit_code(), 2, "{name}={under}");
                let msg = err.to_string();
                assert!(msg.contains(name) && msg.contains(&under), "{msg}");
            }
        }
    }

    #[test]
    fn a_tiny_positive_setting_is_refused_showing_the_value_as_given() {
        for (name, positive) in DURATIONS {
            if !positive {
                let c = Config::from_env(&env(&[(name, "0")])).unwrap();
                assert_eq!(
                    c.describe().lines().filter(|l| l.starts_with(name)).count(),
                    1
                );
                continue;
            }
            for raw in ["1e-10", " 0.0000001", "0", "0.0", "-0"] {
                let e = refusal(name, raw);
                assert_eq!(e.exit_code(), 2);
                let msg = e.to_string();
                assert!(
                    msg.contains(&format!("{name}={raw:?}")) && msg.contains("more than 0"),
                    "{msg}"
                );
            }
        }
        let c = Config::from_env(&env(&[("SAFETY_POLL_INTERVAL_S", "0.001")])).unwrap();
        assert_eq!(c.safety_poll_interval, Duration::from_millis(1));
    }

    #[test]
    fn a_non_utf8_path_setting_is_refused_naming_it() {
        use std::os::unix::ffi::OsStringExt;
        for name in [
            "HOME",
            "AGENT_DECK_ROOT",
            "AGENT_DECK_BIN",
            "AGENT_DECK_HOOKS_DIR",
            "XDG_DATA_HOME",
            "XDG_CONFIG_HOME",
            "TASK_TIMERS_FILE",
            "TASK_PARTIAL_HMAC_KEY_FILE",
            "PROMPT_RESUME_PROFILES",
        ] {
            let mut e = env(&[]);
            e.insert_os(name.into(), OsString::from_vec(b"/tmp/r\xffoot".to_vec()));
            let err = Config::from_env(&e).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{name}");
            let msg = err.to_string();
            assert!(
                msg.contains(name) && msg.contains("UTF-8") && msg.contains(r"/tmp/r\xFFoot"),
                "{msg}"
            );
        }
        // PATH is only searched, never rewritten: its bytes are used as they are.
        let mut e = env(&[]);
        e.insert_os(
            "PATH".into(),
            OsString::from_vec(b"/nowhere\xff:/bin".to_vec()),
        );
        assert!(Config::from_env(&e).is_ok());
    }
}
