//! agent-deck's own `config.toml`: where agent-deck looks for it, and the
//! keys the watchdog reads from it.

use std::path::{Path, PathBuf};

/// Where agent-deck looks for `config.toml`, in its order: XDG first
/// (`$XDG_CONFIG_HOME/agent-deck/`, default `~/.config/agent-deck/`), then
/// the legacy locations under the root and `~/.agent-deck/`.
pub(crate) fn candidates(home: &Path, xdg_config_home: Option<&Path>, root: &Path) -> Vec<PathBuf> {
    let xdg = xdg_config_home.map_or_else(|| home.join(".config"), Path::to_path_buf);
    vec![
        xdg.join("agent-deck/config.toml"),
        root.join("config.toml"),
        home.join(".agent-deck/config.toml"),
    ]
}

/// The first of the [`candidates`] that is a file.
pub(crate) fn find(home: &Path, xdg_config_home: Option<&Path>, root: &Path) -> Option<PathBuf> {
    candidates(home, xdg_config_home, root)
        .into_iter()
        .find(|c| c.is_file())
}

/// `[tmux] socket_name`, trimmed as agent-deck trims it; `None` when unset
/// or blank (the default tmux socket).
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
        let c = candidates(Path::new("/h"), None, Path::new("/h/.agent-deck"));
        assert_eq!(c[0], Path::new("/h/.config/agent-deck/config.toml"));
        assert_eq!(c[1], Path::new("/h/.agent-deck/config.toml"));
    }
}
