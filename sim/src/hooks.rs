//! Hook files as agent-deck's CLI reads them when it loads a session:
//! `<hooks>/sandbox/<id>/<id>.json` when that is a regular file, else
//! `<hooks>/<id>.json`, never through a symlink, and only its `status` and
//! `ts` (unix seconds; absent or 0 means "now"). Reading never fails a call:
//! a missing, oversized, non-regular or unparsable file, or one with an
//! empty status, is no hook. Where the hooks directory is, when the tests
//! do not name it, is [`resolve_dir`]: agent-deck's rule.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The largest hook file read; a larger one is no hook.
const HOOK_FILE_MAX: u64 = 64 << 10;

#[derive(Deserialize)]
struct Raw {
    status: Option<String>,
    ts: Option<i64>,
}

/// The hook for session `id` under `dir` at `now`: its status and unix seconds.
pub(super) fn read(dir: &Path, id: &str, now: f64) -> Option<(String, f64)> {
    if id.trim().is_empty() || id.contains('/') {
        return None;
    }
    let scoped = dir.join("sandbox").join(id).join(format!("{id}.json"));
    let path = [scoped, dir.join(format!("{id}.json"))]
        .into_iter()
        .find(|p| regular(p))?;
    let bytes = read_bounded(&path)?;
    let raw: Raw = serde_json::from_slice(&bytes).ok()?;
    let status = raw.status.filter(|s| !s.trim().is_empty())?;
    let ts = match raw.ts {
        Some(ts) if ts > 0 => ts as f64,
        _ => now,
    };
    Some((status, ts))
}

/// A regular file, not a symlink (so never a FIFO that would block).
fn regular(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

/// The file's bytes, or None when it cannot be read or is over the bound.
fn read_bounded(path: &Path) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    let file = fs::File::open(path).ok()?;
    file.take(HOOK_FILE_MAX + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= HOOK_FILE_MAX).then_some(bytes)
}

/// The hooks directory as agent-deck resolves it: XDG if it exists, else the
/// legacy directory under the root if it exists, else XDG.
pub(super) fn resolve_dir(home: &Path, xdg_data_home: Option<&str>, root: &Path) -> PathBuf {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_dir_prefers_existing_xdg_then_legacy() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let home = tmp.path();
        let root = home.join(".agent-deck");
        let xdg_default = home.join(".local/share/agent-deck/hooks");
        assert_eq!(resolve_dir(home, None, &root), xdg_default);
        fs::create_dir_all(root.join("hooks")).expect("legacy dir");
        assert_eq!(resolve_dir(home, None, &root), root.join("hooks"));
        fs::create_dir_all(&xdg_default).expect("xdg dir");
        assert_eq!(resolve_dir(home, None, &root), xdg_default);
        let xdg = home.join("xdg");
        fs::create_dir_all(xdg.join("agent-deck/hooks")).expect("named xdg dir");
        let named = resolve_dir(home, xdg.to_str(), &root);
        assert_eq!(named, xdg.join("agent-deck/hooks"));
    }

    #[test]
    fn a_hook_file_over_64_kib_is_no_hook() {
        let dir = tempfile::tempdir().expect("temp dir");
        let hook = r#"{"status":"waiting","ts":7}"#;
        fs::write(dir.path().join("a.json"), hook).expect("hook");
        assert_eq!(read(dir.path(), "a", 1.0), Some(("waiting".into(), 7.0)));
        let big = format!("{hook}{}", " ".repeat(64 << 10));
        fs::write(dir.path().join("a.json"), big).expect("big hook");
        assert_eq!(read(dir.path(), "a", 1.0), None);
    }
}
