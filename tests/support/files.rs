//! Files the tests write and read: hook files written the way agent-deck
//! writes them, executable scripts, and JSON-lines records read back into
//! typed values.

use std::fs::{self, File};
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde_json::Value;

/// A name no other call in this test run returns.
pub(crate) fn unique() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    format!("{:016x}", h.finish())
}

/// Writes a hook status file the way agent-deck's atomicHookWrite does:
/// `.<id>.json.tmp-<random>` in `dir`, written and closed, then renamed onto
/// `<id>.json` (inotify: CLOSE_WRITE on the temp name, then MOVED_TO).
pub(crate) fn write_hook(dir: &Path, id: &str, status: &str) {
    let tmp = dir.join(format!(".{id}.json.tmp-{}", unique()));
    let ts = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    // Field order of the Go struct: status, event, ts.
    let body = format!(
        "{{\"status\":{},\"event\":\"Stop\",\"ts\":{ts}}}",
        Value::from(status)
    );
    {
        let mut f = File::create(&tmp).expect("create hook temp file");
        f.write_all(body.as_bytes()).expect("write hook temp file");
    }
    fs::rename(&tmp, dir.join(format!("{id}.json"))).expect("rename hook file");
}

/// Writes an executable script (creating its directory).
///
/// A child shell writes it, never a descriptor of this process: the tests
/// run in parallel threads, and a writable descriptor inherited by a child
/// that another thread forks at that moment would make exec of the script
/// fail with ETXTBSY.
pub(crate) fn write_script(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("script has a directory")).expect("script dir");
    let ok = Command::new("/bin/sh")
        .args([
            "-c",
            "printf '%s' \"$2\" > \"$1\" && chmod 755 \"$1\"",
            "sh",
        ])
        .arg(path)
        .arg(text)
        .status()
        .expect("run /bin/sh")
        .success();
    assert!(ok, "could not write {}", path.display());
}

/// Every whole line of a JSON-lines file as a `T`; a missing file is no
/// lines, a line that does not parse fails the test. A last line without
/// its newline is an append still under way (a writer in another process),
/// not yet a line.
pub(crate) fn read_lines<T: DeserializeOwned>(path: &Path) -> Vec<T> {
    let text = fs::read_to_string(path).unwrap_or_default();
    let whole = text.rfind('\n').map_or("", |end| &text[..end]);
    whole
        .lines()
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{} has a bad line {l:?}: {e}", path.display()))
        })
        .collect()
}

/// Every file below `dir`, read as text (lossily).
pub(crate) fn all_files_text(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = fs::read(&p) {
                out.push((p, String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    out
}

/// Makes a FIFO at `path` (with mkfifo(1), which Linux and macOS both have).
pub(crate) fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
}
