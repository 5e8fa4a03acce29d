//! agent-deck's own files and where it keeps them: the hooks directory,
//! `config.toml` (and its tmux socket), and small files (`env_file`,
//! `meta.json`, `.env`), parsed the way agent-deck parses them. A leaf: it
//! knows agent-deck's layout and nothing of ours.

use std::path::{Path, PathBuf};

use crate::sys::fs::{read_text, warn_unreadable, SMALL_FILE_MAX};

/// The hooks directory as agent-deck resolves it: XDG if it exists, else the
/// legacy directory under the root if it exists, else XDG.
pub(crate) fn resolve_hooks_dir(home: &Path, xdg_data_home: Option<&str>, root: &Path) -> PathBuf {
    let data = match xdg_data_home {
        Some(x) if Path::new(x).is_absolute() => PathBuf::from(x),
        _ => home.join(".local/share"),
    };
    let xdg = data.join("agent-deck/hooks");
    let legacy = root.join("hooks");
    if !xdg.is_dir() && legacy.is_dir() {
        legacy
    } else {
        xdg
    }
}

/// agent-deck's `config.toml`, the first file of its order: XDG (default
/// `~/.config/agent-deck/`), then under the root, then `~/.agent-deck/`.
pub(crate) fn find(home: &Path, xdg_config_home: Option<&Path>, root: &Path) -> Option<PathBuf> {
    let xdg = xdg_config_home.map_or_else(|| home.join(".config"), Path::to_path_buf);
    [
        xdg.join("agent-deck/config.toml"),
        root.join("config.toml"),
        home.join(".agent-deck/config.toml"),
    ]
    .into_iter()
    .find(|c| c.is_file())
}

/// `[tmux] socket_name`, trimmed; `None` when unset or blank (the default).
pub(crate) fn tmux_socket_name(text: &str) -> Result<Option<String>, String> {
    let table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    let name = table
        .get("tmux")
        .and_then(|t| t.get("socket_name"))
        .and_then(toml::Value::as_str)
        .map(str::trim)
        .filter(|n| !n.is_empty());
    Ok(name.map(str::to_owned))
}

/// The text of one of agent-deck's small files; a missing one is silent, an
/// unreadable one warned about, with `next` saying what happens instead.
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

/// The value of `key` in env-file text, parsed like agent-deck does (`export `
/// dropped, quotes stripped); the last one wins, an empty value is none.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_name_is_trimmed_and_blank_is_the_default() {
        let read = |t: &str| tmux_socket_name(t).unwrap();
        assert_eq!(read("[tmux]\nsocket_name = \" ad \"\n"), Some("ad".into()));
        assert_eq!(read("[tmux]\nsocket_name = \"  \"\n"), None);
        assert_eq!(read("[claude]\ncommand = \"x\"\n"), None);
        assert!(tmux_socket_name("[tmux\n").is_err());
    }

    #[test]
    fn xdg_comes_before_the_legacy_places() {
        let tmp = tempfile::tempdir().unwrap();
        let (home, root) = (tmp.path(), tmp.path().join("root"));
        assert_eq!(find(home, None, &root), None);
        for dir in [".agent-deck", "root", ".config/agent-deck"].map(|d| home.join(d)) {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("config.toml"), "").unwrap();
            assert_eq!(find(home, None, &root), Some(dir.join("config.toml")));
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
}
