//! The state file on disk: the locked read-modify-write. Every one holds an exclusive `flock` on `<state>.lock` and
//! ends in an atomic rewrite (temp file + rename), so a test editing the
//! fleet and a concurrent simulated call never lose each other's changes.
//! A missing or empty file is an empty fleet; a file that is not a JSON
//! object of the schema is an error naming it, never a panic.

use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind::InvalidData, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::state::SimState;

/// Read-modify-write of the state file under the lock; the file is written
/// only when `f` changed the state. `f`'s result is returned.
pub fn transact<T>(path: &Path, f: impl FnOnce(&mut SimState) -> T) -> io::Result<T> {
    let _lock = lock(path)?;
    modify(path, f)
}

/// [`transact`] on a state file that exists: None, with nothing written or
/// created but the lock file, when the file is gone.
pub(super) fn transact_existing<T>(
    path: &Path,
    f: impl FnOnce(&mut SimState) -> T,
) -> io::Result<Option<T>> {
    if !path.exists() {
        return Ok(None);
    }
    let _lock = lock(path)?;
    if !path.exists() {
        return Ok(None);
    }
    modify(path, f).map(Some)
}

/// The read, `f`, and the write when `f` changed the state; under the lock.
fn modify<T>(path: &Path, f: impl FnOnce(&mut SimState) -> T) -> io::Result<T> {
    let mut state = read(path)?.unwrap_or_default();
    let before = state.clone();
    let result = f(&mut state);
    if state != before {
        write(path, &state)?;
    }
    Ok(result)
}

/// The state as it is now (empty when the file is missing), read under the lock.
#[cfg(test)]
pub(super) fn load(path: &Path) -> io::Result<SimState> {
    let _lock = lock(path)?;
    Ok(read(path)?.unwrap_or_default())
}

/// Blocks until this process holds `<state>.lock`; released when the file drops.
fn lock(path: &Path) -> io::Result<File> {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let lock_path = PathBuf::from(name);
    let mut opts = OpenOptions::new();
    let opened = opts.read(true).write(true).create(true).mode(0o600);
    let file = opened.open(&lock_path).and_then(|f| f.lock().map(|()| f));
    file.map_err(|e| {
        let msg = format!("cannot lock {}: {e}", lock_path.display());
        io::Error::new(e.kind(), msg)
    })
}

/// None when the file is missing or holds only white space.
fn read(path: &Path) -> io::Result<Option<SimState>> {
    let text = match fs::read_to_string(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            let msg = format!("cannot read {}: {e}", path.display());
            return Err(io::Error::new(e.kind(), msg));
        }
        Ok(text) => text,
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    let shown = path.display();
    let bad = |what: String| io::Error::new(InvalidData, format!("fake state file {what}"));
    let unreadable = |e: serde_json::Error| bad(format!("unreadable: {shown}: {e}"));
    let value: Value = serde_json::from_str(&text).map_err(unreadable)?;
    if !value.is_object() {
        return Err(bad(format!("is not a JSON object: {shown}")));
    }
    let mut state: SimState = serde_json::from_value(value).map_err(unreadable)?;
    if state.server_down() {
        // A killed tmux server took every session's tmux session with it.
        for s in &mut state.sessions {
            s.tmux_alive = Some(false);
        }
    }
    Ok(Some(state))
}

fn write(path: &Path, state: &SimState) -> io::Result<()> {
    let text = serde_json::to_string_pretty(state).map_err(io::Error::other)? + "\n";
    write_atomically(path, text.as_bytes())
        .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))
}

/// A temp file `.<name>.tmp-<random>` beside `path` (`0600`), written,
/// synced and renamed over it.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let parent = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = parent.unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let prefix = format!(".{name}.tmp-");
    let mut tmp = tempfile::Builder::new().prefix(&prefix).tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
