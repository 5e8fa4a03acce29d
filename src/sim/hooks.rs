//! Hook files as agent-deck's CLI reads them when it loads a session:
//! `<hooks>/sandbox/<id>/<id>.json` when that is a regular file, else
//! `<hooks>/<id>.json`, never through a symlink, and only its `status` and
//! `ts` (unix seconds; absent or 0 means "now"). Reading never fails a call:
//! a missing, oversized, non-regular or unparsable file, or one with an
//! empty status, is no hook.

use std::fs;
use std::path::Path;

use serde::Deserialize;

use crate::sys::fs::{read_bounded, HOOK_FILE_MAX};

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
    let bytes = read_bounded(&path, HOOK_FILE_MAX).ok()?;
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
