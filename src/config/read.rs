//! The table of settings: each variable with its default and bounds, read in
//! `--print-config` order, each value noted with where it came from. Numeric
//! settings: unset is the default, set (even to nothing) must parse; for the
//! others unset and empty are the same. The error for a bad value names the
//! variable and shows the value exactly as given.

use std::ffi::OsStr;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Config, Env, PaneWatchMode, ResumeScope, Secret, Source, WatchBackend};
use crate::error::{Error, Result};
use crate::sys::process::is_pane_env;

const DEFAULT_CONTINUITY_MESSAGE: &str = "[agent-deck-watchdog] This session was restarted \
automatically at {timestamp} after it was found in error. If you were in the middle of a task, \
re-read your notes and continue from where you left off.";

const DEFAULT_RESUME_MESSAGE: &str = "[agent-deck-watchdog] continue: your previous turn \
stopped ({kind}), which has cleared; resume the task where it stopped.";

const DEFAULT_REBRIEF_MESSAGE: &str = "[agent-deck-watchdog] your context was cleared to \
free its window: run your startup checklist, re-read your notes, and carry on.";

const TELEGRAM_API: &str = "https://api.telegram.org";

/// The upper bound of one wait (a poll interval, a timeout): an hour.
const MAX_WAIT_S: f64 = 3600.0;
/// The upper bound of a window, pause or dedup the daemon remembers: a week.
const MAX_WINDOW_S: f64 = 7.0 * 86_400.0;
/// The least positive duration: less rounds to nothing and makes a loop spin.
const MIN_POSITIVE_S: f64 = 0.001;
/// The upper bound of a count (a budget, a threshold, a daily cap).
const MAX_COUNT: u32 = 10_000;
/// A few records must fit before a rotation.
const MIN_RECORD_BYTES: u32 = 64 * 1024;
const MAX_RETENTION_DAYS: u32 = 3650;
/// SPEC §11.
const MAX_EVENT_QUEUE: u32 = 1_000_000;

// Zero is off, or no wait; a positive setting is at least MIN_POSITIVE_S.
const WAIT: RangeInclusive<f64> = 0.0..=MAX_WAIT_S;
const POSITIVE_WAIT: RangeInclusive<f64> = MIN_POSITIVE_S..=MAX_WAIT_S;
const WINDOW: RangeInclusive<f64> = 0.0..=MAX_WINDOW_S;
const POSITIVE_WINDOW: RangeInclusive<f64> = MIN_POSITIVE_S..=MAX_WINDOW_S;

/// Every setting, in `--print-config` order.
pub(super) fn read(env: &Env) -> Result<Config> {
    let mut r = Reader {
        env,
        sources: Vec::new(),
    };
    let home = env.value("HOME")?.map(PathBuf::from);
    let home_or = |what: &str| {
        home.clone().ok_or_else(|| {
            Error::usage(format!(
                "HOME is not set, so {what} has no default: set HOME or {what}"
            ))
        })
    };
    let root = r.path("AGENT_DECK_ROOT", "default", || {
        Ok(home_or("AGENT_DECK_ROOT")?.join(".agent-deck"))
    })?;
    let watchdog_dir = root.join("watchdog");
    let xdg_data_home = env
        .value("XDG_DATA_HOME")?
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    Ok(Config {
        bin: r.path("AGENT_DECK_BIN", "default", || {
            Ok(default_bin(env.os("PATH")))
        })?,
        hooks_dir: r.path("AGENT_DECK_HOOKS_DIR", "resolved like agent-deck", || {
            let home = home_or("AGENT_DECK_HOOKS_DIR")?;
            Ok(super::deck_files::data_path(
                &home,
                xdg_data_home.as_deref(),
                &root,
                "hooks",
            ))
        })?,
        telegram_chat_id: r
            .optional("TELEGRAM_ESCALATION_CHAT_ID", "(empty: Telegram off)")?
            .map(str::to_owned),
        telegram_token: r.telegram_token(home.as_deref())?,
        telegram_api_base: r
            .optional("TELEGRAM_API_BASE", TELEGRAM_API)?
            .map_or(TELEGRAM_API, |b| b.trim_end_matches('/'))
            .to_owned(),
        rate_limit_max: r.count("RATE_LIMIT_MAX", 3, 1..=MAX_COUNT)?,
        rate_limit_window: r.seconds("RATE_LIMIT_WINDOW_S", 300.0, POSITIVE_WINDOW)?,
        post_restart_cooldown: r.seconds("POST_RESTART_COOLDOWN_S", 30.0, WINDOW)?,
        min_global_restart_interval: r.seconds("MIN_GLOBAL_RESTART_INTERVAL_S", 60.0, WAIT)?,
        cascade_threshold: r.count("CASCADE_THRESHOLD", 5, 2..=MAX_COUNT)?,
        cascade_window: r.seconds("CASCADE_WINDOW_S", 10.0, WINDOW)?,
        cascade_pause: r.seconds("CASCADE_PAUSE_S", 60.0, WINDOW)?,
        cascade_wait: r.seconds("CASCADE_WAIT_S", 30.0, WAIT)?,
        safety_poll_interval: r.seconds("SAFETY_POLL_INTERVAL_S", 5.0, POSITIVE_WAIT)?,
        subprocess_timeout: r.seconds("SUBPROCESS_TIMEOUT_S", 30.0, POSITIVE_WAIT)?,
        event_queue_maxsize: r.count("EVENT_QUEUE_MAXSIZE", 100, 1..=MAX_EVENT_QUEUE)? as usize,
        liveness_confirm_gap: r.seconds("LIVENESS_CONFIRM_GAP_S", 2.0, WAIT)?,
        liveness_skip_escalate_after: r.count("LIVENESS_SKIP_ESCALATE_AFTER", 3, 1..=MAX_COUNT)?,
        restart_verify: r.seconds("RESTART_VERIFY_S", 4.0, WAIT)?,
        start_verify: r.seconds("START_VERIFY_S", 15.0, WAIT)?,
        escalation_dedup: r.seconds("ESCALATION_DEDUP_S", 300.0, WINDOW)?,
        api_429_backoff: r.seconds("API_429_BACKOFF_S", 180.0, WINDOW)?,
        breaker_threshold: r.count("CIRCUIT_BREAKER_429_THRESHOLD", 3, 1..=MAX_COUNT)?,
        breaker_window: r.seconds("CIRCUIT_BREAKER_429_WINDOW_S", 600.0, WINDOW)?,
        breaker_pause: r.seconds("CIRCUIT_BREAKER_PAUSE_S", 600.0, WINDOW)?,
        continuity_message: r.continuity_message()?,
        stale_error_cleanup: r.seconds("STALE_ERROR_CLEANUP_S", 0.0, WINDOW)?,
        poller_check_interval: r.seconds("POLLER_CHECK_INTERVAL_S", 60.0, POSITIVE_WINDOW)?,
        poller_restart_dedup: r.seconds("POLLER_RESTART_DEDUP_S", 3600.0, WINDOW)?,
        poller_deaf_checks: r.count("POLLER_DEAF_CHECKS", 0, 0..=MAX_COUNT)?,
        waiting_patrol_threshold: r.seconds(
            "WAITING_PATROL_THRESHOLD_S",
            600.0,
            POSITIVE_WINDOW,
        )?,
        waiting_patrol_nudge_dedup: r.seconds("WAITING_PATROL_NUDGE_DEDUP_S", 3600.0, WINDOW)?,
        prompt_resume_profiles: parse_profile_map(
            r.optional("PROMPT_RESUME_PROFILES", "(empty: off)")?
                .unwrap_or(""),
        )?,
        task_timers_file: r.path("TASK_TIMERS_FILE", "default", || {
            Ok(watchdog_dir.join("task-timers.json"))
        })?,
        task_daily_redispatch_cap: r.count("TASK_DAILY_REDISPATCH_CAP", 20, 0..=MAX_COUNT)?,
        task_partial_hmac_key_file: r
            .optional("TASK_PARTIAL_HMAC_KEY_FILE", "(empty: no signature check)")?
            .map(PathBuf::from),
        record_max_bytes: u64::from(r.count(
            "RECORD_MAX_BYTES",
            16 * 1024 * 1024,
            MIN_RECORD_BYTES..=u32::MAX,
        )?),
        task_retention_days: r.count("TASK_RETENTION_DAYS", 30, 1..=MAX_RETENTION_DAYS)?,
        watch_backend: r.word(
            "WATCH_BACKEND",
            [("auto", WatchBackend::Auto), ("scan", WatchBackend::Scan)],
            "auto (kernel notifications, scanning while they cannot be had) or scan",
        )?,
        pane_watch: r.word(
            "PANE_WATCH",
            [("auto", PaneWatchMode::Auto), ("off", PaneWatchMode::Off)],
            "auto (watch agent-deck's tmux panes where it can) or off",
        )?,
        pane_list_interval: r.seconds("PANE_LIST_INTERVAL_S", 5.0, POSITIVE_WAIT)?,
        armed_poll_interval: r.armed_poll_interval()?,
        resume_scope: r.word(
            "RESUME_SCOPE",
            [
                ("critical", ResumeScope::Critical),
                ("all", ResumeScope::All),
                ("off", ResumeScope::Off),
            ],
            "critical (the restart-critical sessions), all (every Claude session) or off",
        )?,
        resume_grace: r.seconds("RESUME_GRACE_S", 120.0, WINDOW)?,
        resume_probe: r.seconds("RESUME_PROBE_S", 1200.0, POSITIVE_WINDOW)?,
        resume_dwell: r.seconds("RESUME_DWELL_S", 60.0, WINDOW)?,
        model_unavailable_backoff: r.seconds(
            "MODEL_UNAVAILABLE_BACKOFF_S",
            300.0,
            POSITIVE_WINDOW,
        )?,
        resume_verify: r.seconds("RESUME_VERIFY_S", 90.0, POSITIVE_WAIT)?,
        resume_max_attempts: r.count("RESUME_MAX_ATTEMPTS", 3, 1..=MAX_COUNT)?,
        resume_stagger: r.seconds("RESUME_STAGGER_S", 30.0, WAIT)?,
        resume_fleet_max_per_hour: r.count("RESUME_FLEET_MAX_PER_HOUR", 12, 1..=MAX_COUNT)?,
        resume_message: r.one_line(
            "RESUME_MESSAGE",
            DEFAULT_RESUME_MESSAGE,
            " ({kind} names the stall)",
        )?,
        context_rebrief_message: r.one_line(
            "CONTEXT_REBRIEF_MESSAGE",
            DEFAULT_REBRIEF_MESSAGE,
            "",
        )?,
        context_compact: r.seconds("CONTEXT_COMPACT_S", 300.0, POSITIVE_WAIT)?,
        context_clear_at_pct: r.optional_count("CONTEXT_CLEAR_AT_PCT", "(off)", 50..=95)?,
        context_window_tokens: r
            .optional_count(
                "CONTEXT_WINDOW_TOKENS",
                "(the largest the model may have)",
                1000..=100_000_000,
            )?
            .map(u64::from),
        watchdog_usec: r.watchdog_usec()?,
        notify_socket: env.value("NOTIFY_SOCKET")?.map(str::to_owned),
        journal_stream: env.value("JOURNAL_STREAM")?.map(str::to_owned),
        pane_env: env
            .names()
            .filter(|n| is_pane_env(n))
            .map(str::to_owned)
            .collect(),
        claude_config_dir_from_pane: env.os("CLAUDE_CONFIG_DIR").is_some()
            && env.os("AGENTDECK_INSTANCE_ID").is_some(),
        xdg_config_home: env
            .value("XDG_CONFIG_HOME")?
            .map(PathBuf::from)
            .filter(|p| p.is_absolute()),
        xdg_data_home,
        home: home.unwrap_or_else(|| PathBuf::from("/")),
        root,
        watchdog_dir,
        sources: r.sources,
    })
}

/// Walks the table of settings, recording where each value came from.
struct Reader<'a> {
    env: &'a Env,
    sources: Vec<Source>,
}

impl<'a> Reader<'a> {
    fn note(&mut self, name: &'static str, value: impl Into<String>, origin: &'static str) {
        self.sources.push(Source {
            name,
            value: value.into(),
            origin,
        });
    }

    /// A setting that may be off: its value, or `unset` shown in its place.
    fn optional(&mut self, name: &'static str, unset: &'static str) -> Result<Option<&'a str>> {
        let value = self.env.value(name)?;
        let (shown, origin) = value.map_or((unset, "default"), |v| (v, "environment"));
        self.note(name, shown, origin);
        Ok(value)
    }

    /// A path setting: its value, else `default()` noted with `origin`.
    fn path(
        &mut self,
        name: &'static str,
        origin: &'static str,
        default: impl FnOnce() -> Result<PathBuf>,
    ) -> Result<PathBuf> {
        let (p, origin) = match self.env.value(name)? {
            Some(raw) => (PathBuf::from(raw), "environment"),
            None => (default()?, origin),
        };
        self.note(name, p.display().to_string(), origin);
        Ok(p)
    }

    fn seconds(
        &mut self,
        name: &'static str,
        default: f64,
        span: RangeInclusive<f64>,
    ) -> Result<Duration> {
        let (secs, origin) = match self.env.text(name)? {
            None => (default, "default"),
            Some(raw) => (parse_seconds(name, raw, span)?, "environment"),
        };
        self.note(name, format!("{secs}s"), origin);
        Ok(Duration::from_secs_f64(secs))
    }

    fn count(
        &mut self,
        name: &'static str,
        default: u32,
        span: RangeInclusive<u32>,
    ) -> Result<u32> {
        let (lo, hi) = (span.start(), span.end());
        let (n, origin) = match self.env.text(name)? {
            None => (default, "default"),
            Some(raw) => match raw.trim().parse::<u32>() {
                Ok(v) if span.contains(&v) => (v, "environment"),
                _ => {
                    return Err(Error::usage(format!(
                        "{name}={raw:?} is invalid: expected a whole number from {lo} to {hi}"
                    )))
                }
            },
        };
        self.note(name, n.to_string(), origin);
        Ok(n)
    }

    fn telegram_token(&mut self, home: Option<&Path>) -> Result<Option<Secret>> {
        let (token, origin) = match (self.env.value("TELEGRAM_BOT_TOKEN")?, home) {
            (Some(t), _) => (Some(Secret(t.to_owned())), "environment"),
            (None, Some(h)) => (
                read_token_file(&h.join(".claude/channels/telegram/.env")),
                "~/.claude/channels/telegram/.env",
            ),
            (None, None) => (None, "default"),
        };
        let shown = token.as_ref().map_or("(not set)", |_| "(set, not shown)");
        self.note("TELEGRAM_BOT_TOKEN", shown, origin);
        Ok(token)
    }

    /// Set to nothing, it is off; unlike the other texts, empty is not unset.
    fn continuity_message(&mut self) -> Result<String> {
        let default = DEFAULT_CONTINUITY_MESSAGE;
        let (message, shown, origin) = match self.env.text("CONTINUITY_MESSAGE")? {
            Some("") => ("", "(empty: disabled)", "environment"),
            Some(m) => (m, m, "environment"),
            None => (default, default, "default"),
        };
        self.note("CONTINUITY_MESSAGE", shown, origin);
        Ok(message.to_owned())
    }

    /// A message that must be one line; set to nothing, it is refused.
    fn one_line(&mut self, name: &'static str, default: &str, hint: &str) -> Result<String> {
        let (message, origin) = match self.env.text(name)? {
            Some(m) if m.trim().is_empty() || m.contains(['\n', '\r']) => {
                return Err(Error::usage(format!(
                    "{name}={m:?} is invalid: expected one line of text{hint}"
                )))
            }
            Some(m) => (m, "environment"),
            None => (default, "default"),
        };
        self.note(name, message, origin);
        Ok(message.to_owned())
    }

    /// A whole number in `span` that may be off: unset or empty is `None`,
    /// shown as `unset`.
    fn optional_count(
        &mut self,
        name: &'static str,
        unset: &'static str,
        span: RangeInclusive<u32>,
    ) -> Result<Option<u32>> {
        let raw = self.env.text(name)?.filter(|r| !r.trim().is_empty());
        let Some(raw) = raw else {
            self.note(name, unset, "default");
            return Ok(None);
        };
        match raw.trim().parse::<u32>() {
            Ok(v) if span.contains(&v) => {
                self.note(name, v.to_string(), "environment");
                Ok(Some(v))
            }
            _ => Err(Error::usage(format!(
                "{name}={raw:?} is invalid: expected a whole number from {} to {}, or nothing (off)",
                span.start(),
                span.end()
            ))),
        }
    }

    /// One of `words` (trimmed), unset the first; any other is refused.
    fn word<T: Copy, const N: usize>(
        &mut self,
        name: &'static str,
        words: [(&'static str, T); N],
        expected: &str,
    ) -> Result<T> {
        let raw = self.env.value(name)?;
        let given = raw.map_or(words[0].0, str::trim);
        let Some(&(shown, value)) = words.iter().find(|(w, _)| *w == given) else {
            let raw = raw.unwrap_or_default();
            return Err(Error::usage(format!(
                "{name}={raw:?} is invalid: expected {expected}"
            )));
        };
        self.note(name, shown, raw.map_or("default", |_| "environment"));
        Ok(value)
    }

    /// `ARMED_POLL_INTERVAL_S`: as set; else, when the operator set
    /// `SAFETY_POLL_INTERVAL_S`, that interval (theirs is kept); else 30 s.
    fn armed_poll_interval(&mut self) -> Result<Duration> {
        const NAME: &str = "ARMED_POLL_INTERVAL_S";
        let (secs, origin) = match (
            self.env.text(NAME)?,
            self.env.text("SAFETY_POLL_INTERVAL_S")?,
        ) {
            (Some(raw), _) => (parse_seconds(NAME, raw, POSITIVE_WAIT)?, "environment"),
            (None, Some(safety)) => (
                parse_seconds("SAFETY_POLL_INTERVAL_S", safety, POSITIVE_WAIT)?,
                "SAFETY_POLL_INTERVAL_S",
            ),
            (None, None) => (30.0, "default"),
        };
        self.note(NAME, format!("{secs}s"), origin);
        Ok(Duration::from_secs_f64(secs))
    }

    /// `WATCHDOG_USEC`, when systemd meant it for this process (`WATCHDOG_PID`).
    fn watchdog_usec(&self) -> Result<Option<u64>> {
        let Some(raw) = self.env.value("WATCHDOG_USEC")? else {
            return Ok(None);
        };
        let usec = raw.trim().parse::<u64>().map_err(|_| {
            Error::usage(format!(
                "WATCHDOG_USEC={raw:?} is invalid: expected microseconds (set by systemd)"
            ))
        })?;
        let for_us = self
            .env
            .value("WATCHDOG_PID")?
            .is_none_or(|p| p.trim() == std::process::id().to_string());
        Ok(for_us.then_some(usec))
    }
}

fn parse_seconds(name: &str, raw: &str, span: RangeInclusive<f64>) -> Result<f64> {
    let Ok(v) = raw.trim().parse::<f64>() else {
        return Err(Error::usage(format!(
            "{name}={raw:?} is invalid: expected a number of seconds such as 30 or 0.5"
        )));
    };
    if span.contains(&v) {
        return Ok(v);
    }
    let least = if *span.start() > 0.0 {
        format!("more than 0 (at least {})", span.start())
    } else {
        "0".to_owned()
    };
    let max = *span.end();
    let spoken = if max >= MAX_WINDOW_S {
        "a week"
    } else {
        "an hour"
    };
    Err(Error::usage(format!(
        "{name}={raw:?} is invalid: expected a number of seconds from {least} to {max} ({spoken})"
    )))
}

/// `agent-deck` on `PATH`, else `/usr/local/bin/agent-deck`.
fn default_bin(path: Option<&OsStr>) -> PathBuf {
    path.into_iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("agent-deck"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("/usr/local/bin/agent-deck"))
}

/// The `TELEGRAM_BOT_TOKEN=` of an env file, as agent-deck reads it.
fn read_token_file(path: &Path) -> Option<Secret> {
    let text = crate::sys::fs::read_text(path, crate::sys::fs::SMALL_FILE_MAX).ok()?;
    super::deck_files::env_value(&text, "TELEGRAM_BOT_TOKEN").map(Secret)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

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
    const DURATIONS: [(&str, bool); 23] = [
        ("CONTEXT_COMPACT_S", true),
        ("PANE_LIST_INTERVAL_S", true),
        ("ARMED_POLL_INTERVAL_S", true),
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
    const COUNTS: [(&str, u32, u32); 11] = [
        ("CONTEXT_CLEAR_AT_PCT", 50, 95),
        ("CONTEXT_WINDOW_TOKENS", 1000, 100_000_000),
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
    fn the_context_settings_are_off_or_one_line_by_default_and_refused_otherwise() {
        let c = Config::from_env(&env(&[])).unwrap();
        assert_eq!(
            (c.context_clear_at_pct, c.context_window_tokens),
            (None, None)
        );
        assert_eq!(c.context_compact, Duration::from_secs(300));
        assert!(!c.context_rebrief_message.contains('\n'));
        let c = Config::from_env(&env(&[("CONTEXT_CLEAR_AT_PCT", " ")])).unwrap();
        assert_eq!(c.context_clear_at_pct, None, "empty is off");
        for name in ["CONTEXT_REBRIEF_MESSAGE", "RESUME_MESSAGE"] {
            for raw in ["", "two\nlines"] {
                let msg = refusal(name, raw).to_string();
                assert!(msg.contains(name) && msg.contains("one line"), "{msg}");
            }
        }
        let msg = refusal("CONTEXT_CLEAR_AT_PCT", "80%").to_string();
        assert!(msg.contains("from 50 to 95"), "{msg}");
    }

    #[test]
    fn the_pane_watch_is_auto_by_default_or_off() {
        let c = Config::from_env(&env(&[])).unwrap();
        assert_eq!(c.pane_watch, PaneWatchMode::Auto);
        assert_eq!(c.pane_list_interval, Duration::from_secs(5));
        let c = Config::from_env(&env(&[("PANE_WATCH", "off")])).unwrap();
        assert_eq!(c.pane_watch, PaneWatchMode::Off);
        let e = refusal("PANE_WATCH", "on");
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("PANE_WATCH=\"on\""), "{e}");
        assert!(c.describe().contains("PANE_WATCH"));
    }

    #[test]
    fn the_armed_poll_defaults_to_30s_only_when_the_safety_poll_is_not_set() {
        let interval = |pairs: &[(&str, &str)]| {
            let c = Config::from_env(&env(pairs)).unwrap();
            let line = c
                .describe()
                .lines()
                .find(|l| l.starts_with("ARMED_POLL_INTERVAL_S"))
                .unwrap()
                .to_owned();
            (c.armed_poll_interval, line)
        };
        let (d, line) = interval(&[]);
        assert_eq!(d, Duration::from_secs(30));
        assert!(line.ends_with("(default)"), "{line}");
        let (d, line) = interval(&[("SAFETY_POLL_INTERVAL_S", "2")]);
        assert_eq!(d, Duration::from_secs(2), "the operator's interval is kept");
        assert!(line.ends_with("(SAFETY_POLL_INTERVAL_S)"), "{line}");
        let (d, line) = interval(&[
            ("SAFETY_POLL_INTERVAL_S", "2"),
            ("ARMED_POLL_INTERVAL_S", "45"),
        ]);
        assert_eq!(d, Duration::from_secs(45));
        assert!(line.ends_with("(environment)"), "{line}");
        let e = refusal("ARMED_POLL_INTERVAL_S", "soon");
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("ARMED_POLL_INTERVAL_S"), "{e}");
    }

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
        // Parsed as agent-deck and the poller check parse it: the last line wins.
        std::fs::write(
            dir.join(".env"),
            "TELEGRAM_BOT_TOKEN=111:old\nexport TELEGRAM_BOT_TOKEN='222:new'\n",
        )
        .unwrap();
        let c = Config::from_env(&env(&[("HOME", tmp.path().to_str().unwrap())])).unwrap();
        assert_eq!(c.telegram_token.as_ref().unwrap().expose(), "222:new");
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

#[cfg(test)]
mod props {
    //! Whatever the environment holds, reading it never panics: the settings,
    //! or a usage error of bounded length.

    use proptest::prelude::*;

    use super::*;
    use crate::testing::CASES;

    fn env_of(pairs: Vec<(String, String)>) -> Env {
        pairs.into_iter().collect()
    }

    /// Every variable the settings are read from, as `--print-config` lists
    /// them, plus those read outside that table.
    fn variable_names() -> Vec<String> {
        let home = vec![("HOME".to_owned(), "/nonexistent".to_owned())];
        let cfg = Config::from_env(&env_of(home)).unwrap();
        let mut names: Vec<String> = cfg.sources.iter().map(|s| s.name.to_owned()).collect();
        for extra in [
            "HOME",
            "PATH",
            "XDG_CONFIG_HOME",
            "XDG_DATA_HOME",
            "JOURNAL_STREAM",
            "NOTIFY_SOCKET",
            "WATCHDOG_USEC",
            "WATCHDOG_PID",
            "TELEGRAM_BOT_TOKEN",
        ] {
            names.push(extra.to_owned());
        }
        names.sort();
        names.dedup();
        names
    }

    fn env_value() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            "[-+]?[0-9]{0,12}(\\.[0-9]{0,6})?(e[-+]?[0-9]{1,3})?[smh]?",
            "[a-z]{1,8}=[/a-z]{0,12}(,[a-z]{1,8}=[/a-z]{0,12}){0,3}",
            prop::sample::select(vec![
                "",
                "0",
                "1e-10",
                "inf",
                "NaN",
                "-0",
                "4294967295",
                "1e9",
                " 5 ",
            ])
            .prop_map(str::to_owned),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(CASES))]

        #[test]
        fn environment_values_never_panic_and_errors_are_bounded(
            picks in prop::collection::vec((prop::sample::select(variable_names()), env_value()), 0..6)
        ) {
            let given: usize = picks.iter().map(|(_, v)| v.len()).sum();
            let mut pairs = vec![("HOME".to_owned(), "/nonexistent".to_owned())];
            pairs.extend(picks);
            match Config::from_env(&env_of(pairs)) {
                Ok(cfg) => prop_assert!(cfg.describe().len() <= 10 * given + 16_384),
                Err(e) => {
                    prop_assert_eq!(e.exit_code(), 2);
                    prop_assert!(e.to_string().len() <= 10 * given + 4096);
                }
            }
        }
    }
}
