//! agent-deck's small files (`config.toml`, `meta.json`, a conductor's
//! `env_file`, the Telegram plugin's `.env`), read without blocking and up to
//! 1 MiB, and env-file text parsed the way agent-deck parses it.

use std::path::Path;

use crate::sys::fs::{read_text, warn_unreadable, SMALL_FILE_MAX};

/// The text of one of agent-deck's small files; a missing one is silent, an
/// unreadable one (a FIFO, a device, too big) warned about, rate-limited,
/// with `next` saying what happens instead.
pub(crate) fn read_small(path: &Path, next: &str) -> Option<String> {
    match read_text(path, SMALL_FILE_MAX) {
        Ok(text) => Some(text),
        Err(e) if e.is_missing() => None,
        Err(e) => {
            warn_unreadable(&e, next);
            None
        }
    }
}

/// The value of `key` in env-file text, parsed like agent-deck does: each
/// line trimmed, an optional `export ` dropped, quotes stripped. The last
/// one wins; an empty value is none.
pub(crate) fn env_value(text: &str, key: &str) -> Option<String> {
    text.lines().rev().find_map(|line| {
        let line = line.trim();
        let line = line
            .strip_prefix("export ")
            .map(str::trim_start)
            .unwrap_or(line);
        let value = line.strip_prefix(key)?.strip_prefix('=')?;
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
        (!value.is_empty()).then(|| value.to_owned())
    })
}
