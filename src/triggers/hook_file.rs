//! Hook files: which names in the spool stand for a session (agent-deck's id
//! rule), whether a session has one, and what its hook file says. Both thread A and
//! the main loop's hook check use these; nothing else reads the spool.
//! A hook file is read without blocking and only up to 64 KiB: a FIFO, a
//! device or a huge file there is "no status" with a rate-limited warning.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::fleet::session::is_valid_id;
use crate::sys::fs::{read_bounded, warn_unreadable, HOOK_FILE_MAX};

/// The session id a hook file name stands for, if it is a status file:
/// `<id>.json`, not `<id>.generation.json`, and an id that passes
/// agent-deck's rule (which refuses a dot-file's leading dot).
pub(crate) fn hook_id(name: &str) -> Option<&str> {
    let id = name.strip_suffix(".json")?;
    (!id.ends_with(".generation") && is_valid_id(id)).then_some(id)
}

/// What a hook file's `status` says, spelled as agent-deck writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum HookStatus {
    Running,
    Waiting,
    /// The agent ended (`SessionEnd`): agent-deck reads the session `error`
    /// while the hook is fresh and tmux is alive.
    Dead,
    /// A value this release does not know.
    #[serde(other)]
    Other,
}

/// The fields of a hook file the watchdog uses.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Hook {
    pub status: HookStatus,
    /// When it was written, in unix seconds.
    #[serde(default)]
    pub ts: Option<f64>,
}

/// Where a session's hook file may be: `<dir>/<id>.json` or
/// `<dir>/sandbox/<id>/<id>.json`. None for an id that fails agent-deck's
/// rule, which has no hook file.
fn hook_paths(dir: &Path, id: &str) -> Option<[PathBuf; 2]> {
    let name = format!("{id}.json");
    is_valid_id(id).then(|| [dir.join(&name), dir.join("sandbox").join(id).join(&name)])
}

/// A session's hook file with its status and time. `None` when there is no
/// readable file or it has no `status`.
pub(crate) fn read_hook(dir: &Path, id: &str) -> Option<Hook> {
    hook_paths(dir, id)?
        .iter()
        .find_map(|p| match read_bounded(p, HOOK_FILE_MAX) {
            Ok(bytes) => serde_json::from_slice(&bytes).ok(),
            Err(e) if e.is_missing() => None,
            Err(e) => {
                warn_unreadable(&e, "ignoring it; the status check decides");
                None
            }
        })
}

/// Whether a session's hook file exists as a regular file: one or two
/// `stat`s, nothing opened or read.
pub(crate) fn hook_file_exists(dir: &Path, id: &str) -> bool {
    hook_paths(dir, id).is_some_and(|paths| {
        paths
            .iter()
            .any(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()))
    })
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_status_from_root_or_sandbox() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(read_hook(tmp.path(), "a-1"), None);
        std::fs::write(
            tmp.path().join("a-1.json"),
            r#"{"status":"waiting","event":"Stop","ts":1}"#,
        )
        .unwrap();
        assert_eq!(
            read_hook(tmp.path(), "a-1").map(|h| h.status),
            Some(HookStatus::Waiting)
        );
        std::fs::create_dir_all(tmp.path().join("sandbox/b-1")).unwrap();
        std::fs::write(
            tmp.path().join("sandbox/b-1/b-1.json"),
            r#"{"status":"dead"}"#,
        )
        .unwrap();
        assert_eq!(
            read_hook(tmp.path(), "b-1").map(|h| h.status),
            Some(HookStatus::Dead)
        );
        std::fs::write(tmp.path().join("c-1.json"), "garbage").unwrap();
        assert_eq!(read_hook(tmp.path(), "c-1"), None);
    }

    #[test]
    fn a_fifo_or_oversize_hook_file_is_no_status_and_does_not_block() {
        let tmp = tempfile::tempdir().unwrap();
        crate::sys::fs::mkfifo(&tmp.path().join("a-1.json"));
        assert_eq!(read_hook(tmp.path(), "a-1"), None);
        std::fs::create_dir_all(tmp.path().join("sandbox/b-1")).unwrap();
        crate::sys::fs::mkfifo(&tmp.path().join("sandbox/b-1/b-1.json"));
        assert_eq!(read_hook(tmp.path(), "b-1"), None);
        // 100 MB, sparse: it must cost neither disk nor memory.
        let big = std::fs::File::create(tmp.path().join("c-1.json")).unwrap();
        big.set_len(100 << 20).unwrap();
        assert_eq!(read_hook(tmp.path(), "c-1"), None);
        std::os::unix::fs::symlink("/dev/zero", tmp.path().join("d-1.json")).unwrap();
        assert_eq!(read_hook(tmp.path(), "d-1"), None);
    }

    #[test]
    fn a_hook_file_is_found_in_the_root_or_the_sandbox_without_reading_it() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(!hook_file_exists(tmp.path(), "a-1"));
        std::fs::write(tmp.path().join("a-1.json"), "").unwrap();
        assert!(hook_file_exists(tmp.path(), "a-1"));
        std::fs::create_dir_all(tmp.path().join("sandbox/b-1")).unwrap();
        crate::sys::fs::mkfifo(&tmp.path().join("sandbox/b-1/b-1.json"));
        assert!(!hook_file_exists(tmp.path(), "b-1"), "not a regular file");
        std::fs::write(tmp.path().join("sandbox/b-1/b-1.json.x"), "").unwrap();
        std::fs::remove_file(tmp.path().join("sandbox/b-1/b-1.json")).unwrap();
        std::fs::write(tmp.path().join("sandbox/b-1/b-1.json"), "{}").unwrap();
        assert!(hook_file_exists(tmp.path(), "b-1"));
        assert!(!hook_file_exists(tmp.path(), "../a-1"));
    }

    #[test]
    fn a_hook_is_read_with_its_status_and_time() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(read_hook(tmp.path(), "a-1"), None);
        std::fs::write(
            tmp.path().join("a-1.json"),
            r#"{"status":"dead","event":"SessionEnd","ts":1755891300,"cwd":"/srv"}"#,
        )
        .unwrap();
        let hook = read_hook(tmp.path(), "a-1").unwrap();
        assert_eq!(hook.status, HookStatus::Dead);
        assert_eq!(hook.ts, Some(1_755_891_300.0));
        std::fs::write(tmp.path().join("b-1.json"), r#"{"status":"starting"}"#).unwrap();
        let hook = read_hook(tmp.path(), "b-1").unwrap();
        assert_eq!((hook.status, hook.ts), (HookStatus::Other, None));
        std::fs::write(tmp.path().join("c-1.json"), r#"{"ts":1}"#).unwrap();
        assert_eq!(read_hook(tmp.path(), "c-1"), None);
        std::fs::write(tmp.path().join("d-1.json"), r#"{"status":"dead","ts":"x"}"#).unwrap();
        assert_eq!(read_hook(tmp.path(), "d-1"), None);
        assert_eq!(read_hook(tmp.path(), "../a-1"), None);
    }

    #[test]
    fn hook_names() {
        assert_eq!(
            hook_id("3f9c2a1b-1755891234.json"),
            Some("3f9c2a1b-1755891234")
        );
        assert_eq!(hook_id("3f9c2a1b-1755891234.generation.json"), None);
        assert_eq!(hook_id(".3f9c2a1b-1755891234.json.tmp-123"), None);
        assert_eq!(hook_id(".hidden.json"), None);
        assert_eq!(hook_id("3f9c2a1b-1755891234.lock"), None);
        assert_eq!(hook_id("3f9c2a1b-1755891234.sid"), None);
        assert_eq!(hook_id("3f9c2a1b-1755891234.projectdir-missing"), None);
        assert_eq!(hook_id("a..b.json"), None);
        assert_eq!(hook_id(".json"), None);
        assert_eq!(hook_id("-x.json"), None);
    }

    #[test]
    fn agent_decks_other_files_in_the_hooks_dir_are_no_hooks() {
        const ID: &str = "3f9c2a1b-1755891234";
        for name in [
            // 1.16.11: the append-only hook event history.
            format!("{ID}.events.jsonl"),
            ".generation.json".to_owned(),
            format!("{ID}.generation.json"),
            format!("{ID}.sid"),
            format!("{ID}.lock"),
            format!("{ID}.json.lock"),
            format!(".{ID}.json"),
            format!(".{ID}.json.tmp"),
            format!(".{ID}.events.jsonl.tmp-42"),
            format!("{ID}.json.tmp"),
            ".codex-consumed".to_owned(),
        ] {
            assert_eq!(hook_id(&name), None, "{name}");
        }
        assert_eq!(hook_id(&format!("{ID}.json")), Some(ID));
    }
}
