//! A snapshot of the process environment, the one input of the settings,
//! kept as the OS gives it: a setting that is not UTF-8 is an error naming
//! it, never a lossy conversion (that would name another file).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

use crate::error::{Error, Result};

#[derive(Debug, Clone, Default)]
pub(crate) struct Env(BTreeMap<String, OsString>);

#[cfg(test)]
impl Env {
    pub(crate) fn new() -> Env {
        Env::default()
    }

    pub(crate) fn insert(&mut self, name: String, value: String) {
        self.0.insert(name, value.into());
    }

    /// A value as the OS gives it, text or not.
    pub(crate) fn insert_os(&mut self, name: String, value: OsString) {
        self.0.insert(name, value);
    }
}

impl Env {
    /// Unsets a variable; whether it was set.
    pub(crate) fn remove(&mut self, name: &str) -> bool {
        self.0.remove(name).is_some()
    }

    /// The variable's text, `None` when unset; an error when not UTF-8.
    pub(super) fn text(&self, name: &str) -> Result<Option<&str>> {
        let Some(raw) = self.0.get(name) else {
            return Ok(None);
        };
        raw.to_str().map(Some).ok_or_else(|| {
            // The secret setting is never shown, not even when it is broken.
            let shown = if name == "TELEGRAM_BOT_TOKEN" {
                "(not shown)".to_owned()
            } else {
                format!("{raw:?}")
            };
            Error::usage(format!(
                "{name}={shown} is invalid: it is not valid UTF-8; set it to a UTF-8 value"
            ))
        })
    }

    /// The variable's text when it is set and not empty.
    pub(super) fn value(&self, name: &str) -> Result<Option<&str>> {
        Ok(self.text(name)?.filter(|v| !v.is_empty()))
    }

    /// The names of every variable set, in order.
    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// The variable's raw value, text or not (`PATH` is only searched).
    pub(super) fn os(&self, name: &str) -> Option<&OsStr> {
        self.0.get(name).map(OsString::as_os_str)
    }
}

impl FromIterator<(String, String)> for Env {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Env {
        Env(iter.into_iter().map(|(k, v)| (k, v.into())).collect())
    }
}

/// Reads the real environment, but for names that are not text (no setting).
pub(crate) fn process_env() -> Env {
    let vars =
        std::env::vars_os().filter_map(|(name, value)| Some((name.into_string().ok()?, value)));
    Env(vars.collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    #[test]
    fn a_broken_secret_is_named_but_not_shown() {
        let mut env = Env::new();
        let raw = OsString::from_vec(b"123:AAsecret\xff".to_vec());
        env.insert_os("TELEGRAM_BOT_TOKEN".into(), raw.clone());
        env.insert_os("AGENT_DECK_ROOT".into(), raw);
        let token = env.text("TELEGRAM_BOT_TOKEN").unwrap_err().to_string();
        assert!(
            token.starts_with("TELEGRAM_BOT_TOKEN=(not shown) is invalid"),
            "{token}"
        );
        assert!(!token.contains("secret"), "{token}");
        let root = env.text("AGENT_DECK_ROOT").unwrap_err().to_string();
        assert!(root.contains("AAsecret"), "{root}");
    }
}
