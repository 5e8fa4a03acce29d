//! Hook files as agent-deck's CLI reads them when it loads a session:
//! `<hooks>/sandbox/<id>/<id>.json` when that is a regular file, else
//! `<hooks>/<id>.json`, never through a symlink, and only its `status` and
//! `ts` (unix seconds; absent or 0 means "now").
//!
//! What a hook does to the status is `live.rs`'s business; this file only
//! reads. Reading never fails a call: a missing, oversized, non-regular or
//! unparsable file, or one with an empty status, is no hook.

use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A hook file larger than this is ignored.
const MAX_HOOK_BYTES: u64 = 64 * 1024;

/// The part of a hook file the status reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    pub status: String,
    /// Unix seconds of the event.
    pub ts: f64,
}

#[derive(Deserialize)]
struct Raw {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    ts: Option<i64>,
}

/// The hook for session `id` under `dir`, read at `now` (unix seconds).
pub fn read(dir: &Path, id: &str, now: f64) -> Option<Hook> {
    if id.trim().is_empty() || id.contains('/') {
        return None;
    }
    let scoped = dir.join("sandbox").join(id).join(format!("{id}.json"));
    let path = if regular(&scoped) {
        scoped
    } else {
        dir.join(format!("{id}.json"))
    };
    if !regular(&path) {
        return None;
    }
    let mut text = String::new();
    File::open(&path)
        .ok()?
        .take(MAX_HOOK_BYTES + 1)
        .read_to_string(&mut text)
        .ok()?;
    if text.len() as u64 > MAX_HOOK_BYTES {
        return None;
    }
    let raw: Raw = serde_json::from_str(&text).ok()?;
    let status = raw.status.filter(|s| !s.trim().is_empty())?;
    let ts = match raw.ts {
        Some(ts) if ts > 0 => ts as f64,
        _ => now,
    };
    Some(Hook { status, ts })
}

/// A regular file, not a symlink (so never a FIFO that would block).
fn regular(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

/// The hooks directory: `AGENT_DECK_HOOKS_DIR` when given, else resolved
/// like agent-deck: `$XDG_DATA_HOME/agent-deck/hooks` (XDG_DATA_HOME
/// defaulting to `~/.local/share`) if it exists, else `~/.agent-deck/hooks`.
pub fn resolve_dir(
    explicit: Option<PathBuf>,
    xdg_data_home: Option<PathBuf>,
    home: Option<PathBuf>,
) -> Option<PathBuf> {
    if explicit.is_some() {
        return explicit;
    }
    let xdg = xdg_data_home.or_else(|| home.as_ref().map(|h| h.join(".local/share")));
    if let Some(dir) = xdg.map(|d| d.join("agent-deck").join("hooks")) {
        if dir.is_dir() {
            return Some(dir);
        }
    }
    home.map(|h| h.join(".agent-deck").join("hooks"))
}
