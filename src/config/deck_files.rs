//! agent-deck's own files and where it keeps them: its data directories
//! (hooks, conductors), `config.toml` (its tmux socket, its conductor dir),
//! and small files (`env_file`, `meta.json`, `.env`), parsed the way
//! agent-deck parses them. A leaf: it knows agent-deck's layout and nothing
//! of ours.

use std::path::{Path, PathBuf};

use crate::sys::fs::{read_text, warn_unreadable, SMALL_FILE_MAX};

/// A directory of agent-deck's data dir as agent-deck resolves it
/// (`agentpaths.EffectiveDataPath`): under XDG if it exists there, else
/// under the root if it exists there, else under XDG.
pub(crate) fn data_path(
    home: &Path,
    xdg_data_home: Option<&Path>,
    root: &Path,
    name: &str,
) -> PathBuf {
    let data = xdg_data_home.map_or_else(|| home.join(".local/share"), Path::to_path_buf);
    let xdg = data.join("agent-deck").join(name);
    let legacy = root.join(name);
    if !xdg.exists() && legacy.exists() {
        legacy
    } else {
        xdg
    }
}

/// The directory of agent-deck's conductors (`ConductorDir`): `[conductor]
/// dir` of its `config.toml` when set, else `conductor` in its data dir.
pub(crate) fn conductor_dir(
    home: &Path,
    xdg_config_home: Option<&Path>,
    xdg_data_home: Option<&Path>,
    root: &Path,
) -> PathBuf {
    let config = find(home, xdg_config_home, root)
        .and_then(|path| read_small(&path, "using agent-deck's default conductor dir"));
    config
        .and_then(|text| conductor_dir_setting(&text, home))
        .unwrap_or_else(|| data_path(home, xdg_data_home, root, "conductor"))
}

/// `[conductor] dir`, trimmed, `~` expanded; `None` when unset, blank or
/// the text does not parse (agent-deck then uses its default too). The
/// `$VAR`s agent-deck also expands are left as they are: whose environment
/// it would be is not ours to know.
fn conductor_dir_setting(text: &str, home: &Path) -> Option<PathBuf> {
    let table: toml::Table = toml::from_str(text).ok()?;
    let dir = table.get("conductor")?.get("dir")?.as_str()?.trim();
    match dir {
        "" => None,
        "~" => Some(home.to_path_buf()),
        _ => Some(
            dir.strip_prefix("~/")
                .map_or_else(|| dir.into(), |rest| home.join(rest)),
        ),
    }
}

/// Whether a conductor's `meta.json` leaves agent-deck's `clear_on_compact`
/// on (`GetClearOnCompact`): only `false` turns it off; absent, `null`, or
/// text that does not parse as JSON is agent-deck's default, on.
pub(crate) fn clear_on_compact(meta: &str) -> bool {
    let v: serde_json::Value = serde_json::from_str(meta).unwrap_or_default();
    v.get("clear_on_compact")
        .and_then(serde_json::Value::as_bool)
        != Some(false)
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
        let resolve_hooks_dir = |home: &Path, xdg: Option<&str>, root: &Path| {
            data_path(home, xdg.map(Path::new), root, "hooks")
        };
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
    fn the_conductor_dir_setting_is_trimmed_and_tilde_expanded() {
        let home = Path::new("/home/u");
        let read = |t: &str| conductor_dir_setting(t, home);
        let dir = |d: &str| read(&format!("[conductor]\ndir = \"{d}\"\n"));
        assert_eq!(dir(" /srv/c "), Some(PathBuf::from("/srv/c")));
        assert_eq!(dir("~/c"), Some(home.join("c")));
        assert_eq!(dir("~"), Some(home.to_path_buf()));
        assert_eq!(dir("$HOME/c"), Some(PathBuf::from("$HOME/c")));
        assert_eq!(dir("  "), None);
        assert_eq!(read("[conductor]\nheartbeat = 1\n"), None);
        assert_eq!(read("[tmux]\nsocket_name = \"x\"\n"), None);
        assert_eq!(read("[conductor\ndir = \"/srv/c\"\n"), None);
    }

    #[test]
    fn conductor_dir_is_the_config_setting_else_xdg_else_legacy() {
        let tmp = tempfile::tempdir().unwrap();
        let (home, root) = (tmp.path(), tmp.path().join(".agent-deck"));
        let xdg = home.join("xdg");
        let dir = |xdg: Option<&Path>| conductor_dir(home, None, xdg, &root);
        let default_xdg = home.join(".local/share/agent-deck/conductor");
        assert_eq!(dir(None), default_xdg);
        std::fs::create_dir_all(root.join("conductor")).unwrap();
        assert_eq!(dir(None), root.join("conductor"));
        std::fs::create_dir_all(xdg.join("agent-deck/conductor")).unwrap();
        assert_eq!(dir(Some(&xdg)), xdg.join("agent-deck/conductor"));
        // A config.toml without the setting, or unparsable: the default.
        let config = root.join("config.toml");
        std::fs::write(&config, "[tmux]\nsocket_name = \"x\"\n").unwrap();
        assert_eq!(dir(None), root.join("conductor"));
        std::fs::write(&config, "[conductor\n").unwrap();
        assert_eq!(dir(None), root.join("conductor"));
        std::fs::write(&config, "[conductor]\ndir = \"~/mine\"\n").unwrap();
        assert_eq!(dir(Some(&xdg)), home.join("mine"));
    }

    #[test]
    fn only_false_turns_clear_on_compact_off() {
        let cases = [
            (r#"{"name":"ops","clear_on_compact":false}"#, false),
            (r#"{"name":"ops","clear_on_compact":true}"#, true),
            (r#"{"name":"ops"}"#, true),
            (r#"{"clear_on_compact":null}"#, true),
            (r#"{"clear_on_compact":"false"}"#, true),
            (r#"[false]"#, true),
            ("{\"clear_on_compact\":fal", true),
            ("", true),
        ];
        for (text, want) in cases {
            assert_eq!(clear_on_compact(text), want, "{text}");
        }
    }
}
