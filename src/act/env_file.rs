//! Env-file text (a conductor's `env_file`, the Telegram plugin's `.env`)
//! read the way agent-deck reads it. Text in, value out; no file access.

/// The value of `key` in env-file text, parsed like agent-deck does: each
/// line trimmed, an optional `export ` dropped, quotes stripped. The last
/// one wins; an empty value is none.
pub fn env_value(text: &str, key: &str) -> Option<String> {
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
