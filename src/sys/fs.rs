//! File access the daemon can trust (SPEC §11): anything in the spool, the
//! task dir or the watchdog dir may be a FIFO, a device, a symlink or huge,
//! and nothing here blocks on one, writes through one or reads past a bound.
//! Reads open `O_NONBLOCK` and check the descriptor is a regular file; writes
//! open `O_NOFOLLOW`, or rename a fresh temp file into place. Everything
//! created gets an explicit mode, whatever the umask. Callers decide what a
//! failure means; [`warn_unreadable`] rate-limits the warning.

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sys::say_once::SayOnce;

/// Writes `text` to stdout and flushes it; a closed reader (`| head`) is fine.
pub(crate) fn print_stdout(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// Bound on a hook status file (agent-deck writes well under 1 KiB).
pub(crate) const HOOK_FILE_MAX: u64 = 64 << 10;
/// Bound on a task file and its `.partial` checkpoint.
pub(crate) const TASK_FILE_MAX: u64 = 16 << 20;
/// Bound on `state.json` and `task-timers.json`.
pub(crate) const STATE_FILE_MAX: u64 = 64 << 20;
/// Bound on small files: `config.toml`, `meta.json`, env files, keys, locks.
pub(crate) const SMALL_FILE_MAX: u64 = 1 << 20;

/// Mode of every file the daemon creates, except `metrics.prom`.
pub(crate) const PRIVATE_FILE: u32 = 0o600;
/// Mode of `metrics.prom`, which node_exporter reads as another user.
pub(crate) const PUBLIC_FILE: u32 = 0o644;
/// Mode of every directory the daemon creates.
pub(crate) const PRIVATE_DIR: u32 = 0o700;

/// Flags on every open: never wait on a FIFO or device, never acquire a tty.
const NEVER_BLOCK: libc::c_int = libc::O_NONBLOCK | libc::O_NOCTTY;

/// Why a file could not be read. Each names the path.
#[derive(Debug)]
pub(crate) enum ReadError {
    Missing(PathBuf),
    /// A FIFO, device or directory.
    NotRegular {
        path: PathBuf,
        kind: &'static str,
    },
    /// More than the caller's bound: `size` bytes (at least, if it grew).
    TooLarge {
        path: PathBuf,
        limit: u64,
        size: u64,
    },
    Io {
        path: PathBuf,
        err: io::Error,
    },
}

impl ReadError {
    pub(crate) fn is_missing(&self) -> bool {
        matches!(self, ReadError::Missing(_))
    }

    pub(crate) fn path(&self) -> &Path {
        match self {
            ReadError::Missing(path)
            | ReadError::NotRegular { path, .. }
            | ReadError::TooLarge { path, .. }
            | ReadError::Io { path, .. } => path,
        }
    }

    /// What is wrong, without the path: "is a FIFO, not a regular file".
    pub(crate) fn reason(&self) -> String {
        match self {
            ReadError::Missing(_) => "does not exist".to_owned(),
            ReadError::NotRegular { kind, .. } => format!("is a {kind}, not a regular file"),
            ReadError::TooLarge { limit, size, .. } => {
                format!("is {size} bytes, over the bound of {limit} bytes")
            }
            ReadError::Io { err, .. } => format!("cannot be read ({err})"),
        }
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.path().display(), self.reason())
    }
}

impl std::error::Error for ReadError {}

/// An open file's type in words, unless it is a regular file.
fn irregular_kind(t: std::fs::FileType) -> Option<&'static str> {
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("directory")
    } else if t.is_fifo() {
        Some("FIFO")
    } else if t.is_char_device() || t.is_block_device() {
        Some("device")
    } else {
        // No socket can be opened, and an open file is never a symlink.
        Some("special file")
    }
}

/// Opens `path` for reading without blocking, if the descriptor is a regular file.
pub(crate) fn open_regular(path: &Path) -> Result<File, ReadError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(NEVER_BLOCK)
        .open(path)
        .map_err(|err| read_error(path, err))?;
    let meta = file.metadata().map_err(|err| read_error(path, err))?;
    match irregular_kind(meta.file_type()) {
        None => Ok(file),
        Some(kind) => Err(ReadError::NotRegular {
            path: path.into(),
            kind,
        }),
    }
}

fn read_error(path: &Path, err: io::Error) -> ReadError {
    let path = path.to_owned();
    if err.kind() == io::ErrorKind::NotFound {
        ReadError::Missing(path)
    } else {
        ReadError::Io { path, err }
    }
}

/// Reads `path` whole if it is a regular file (a symlink to one is followed)
/// of at most `limit` bytes; memory follows its real size, not `limit`.
pub(crate) fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = open_regular(path)?;
    let too_large = |size| ReadError::TooLarge {
        path: path.to_owned(),
        limit,
        size,
    };
    let len = file.metadata().map_err(|err| read_error(path, err))?.len();
    if len > limit {
        return Err(too_large(len));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    // One byte past the limit tells a file that grew since the fstat.
    (&file)
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|err| read_error(path, err))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// The last `limit` bytes of the regular file `path` as text, and whether
/// that is the whole file (else its first line may be cut).
pub(crate) fn read_tail(path: &Path, limit: u64) -> Result<(String, bool), ReadError> {
    use std::io::{Seek, SeekFrom};
    let mut file = open_regular(path)?;
    let len = file.metadata().map_err(|err| read_error(path, err))?.len();
    let from = len.saturating_sub(limit);
    file.seek(SeekFrom::Start(from))
        .map_err(|err| read_error(path, err))?;
    let mut bytes = Vec::new();
    (&file)
        .take(limit)
        .read_to_end(&mut bytes)
        .map_err(|err| read_error(path, err))?;
    Ok((String::from_utf8_lossy(&bytes).into_owned(), from == 0))
}

/// [`read_bounded`] as text; invalid UTF-8 is replaced, never an error.
pub(crate) fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    read_bounded(path, limit).map(|b| {
        String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    })
}

/// Opens a regular file for writing, never through a symlink or into a FIFO.
fn open_for_writing(path: &Path, opts: &mut OpenOptions) -> io::Result<File> {
    let file = opts
        .custom_flags(NEVER_BLOCK | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => io::Error::new(
                e.kind(),
                "it is a symbolic link, which is never written through",
            ),
            // O_WRONLY|O_NONBLOCK on a FIFO nobody reads.
            Some(libc::ENXIO) => io::Error::new(e.kind(), "it is a FIFO, not a regular file"),
            _ => e,
        })?;
    if let Some(kind) = irregular_kind(file.metadata()?.file_type()) {
        let why = format!("it is a {kind}, not a regular file");
        return Err(io::Error::other(why));
    }
    Ok(file)
}

/// Opens `path` with `opts`, creating it with exactly `mode` if need be.
fn open_or_create(path: &Path, opts: &OpenOptions, mode: u32) -> io::Result<File> {
    // The file usually exists: open it first. One removed or created
    // between the two opens is dealt with on the next round.
    for _ in 0..3 {
        match open_for_writing(path, &mut opts.clone()) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            other => return other,
        }
        match open_for_writing(path, opts.clone().create_new(true).mode(mode)) {
            Ok(file) => {
                // The umask only removes bits; this sets exactly `mode`.
                file.set_permissions(Permissions::from_mode(mode))?;
                return Ok(file);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("it keeps appearing and disappearing"))
}

/// Opens `path` for appending, creating it `0600`; readable too, so that an
/// append can look at the file's last byte.
pub(crate) fn open_append(path: &Path) -> io::Result<File> {
    open_or_create(
        path,
        OpenOptions::new().read(true).append(true),
        PRIVATE_FILE,
    )
}

/// Opens (creating `0600`) a file that is only `flock`ed and rewritten in place.
pub(crate) fn open_lock_file(path: &Path) -> io::Result<File> {
    let mut opts = OpenOptions::new();
    open_or_create(path, opts.read(true).write(true), PRIVATE_FILE)
}

fn dir_of(target: &Path) -> &Path {
    match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// The prefix of every temp file written for `target`: `.<name>.tmp-`.
fn temp_prefix(target: &Path) -> String {
    let name = target.file_name().unwrap_or_default();
    format!(".{}.tmp-", name.to_string_lossy())
}

/// A new temp file `.<name>.tmp-<random>` beside `target`, of exactly `mode`.
fn temp_file(target: &Path, mode: u32) -> io::Result<tempfile::NamedTempFile> {
    let tmp = tempfile::Builder::new()
        .prefix(&temp_prefix(target))
        .rand_bytes(16)
        .tempfile_in(dir_of(target))?;
    tmp.as_file()
        .set_permissions(Permissions::from_mode(mode))?;
    Ok(tmp)
}

/// Writes `bytes` to a new temp file beside `path` (unpredictable name,
/// `O_EXCL`, exactly `mode`), fsyncs it and renames it over `path`: a symlink
/// or FIFO there is replaced, never written through.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    replace(path, bytes, mode, true)
}

/// [`write_atomically`] without the `fsync`, for a file rewritten every tick:
/// a crash may lose its last version, never tear it.
pub(crate) fn replace_unsynced(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    replace(path, bytes, mode, false)
}

fn replace(path: &Path, bytes: &[u8], mode: u32, sync: bool) -> io::Result<()> {
    let mut tmp = temp_file(path, mode)?;
    tmp.write_all(bytes)?;
    if sync {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The temp files [`write_atomically`] left for `target` when a run was killed
/// (older runs' names too): regular files `.<name>.tmp-*`, never a symlink.
pub(crate) fn stale_temps(target: &Path) -> Vec<PathBuf> {
    let prefix = temp_prefix(target);
    let entries = std::fs::read_dir(dir_of(target)).into_iter().flatten();
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .collect()
}

/// Removes the [`stale_temps`] of `target`, while no other writer of it can
/// run (under the lock that serializes them); how many were removed.
pub(crate) fn remove_stale_temps(target: &Path) -> usize {
    stale_temps(target)
        .iter()
        .filter(|p| std::fs::remove_file(p).is_ok())
        .count()
}

/// Moves `path` to `aside`, or to `aside-1`, `aside-2`, … if that name is
/// taken: an earlier copy is never overwritten. Returns the name used.
pub(crate) fn move_aside(path: &Path, aside: &Path) -> io::Result<PathBuf> {
    for n in 0..1000u32 {
        let mut name = aside.as_os_str().to_owned();
        if n > 0 {
            name.push(format!("-{n}"));
        }
        let candidate = PathBuf::from(name);
        // link(2) fails on an existing name, where rename(2) would replace it.
        match std::fs::hard_link(path, &candidate) {
            Ok(()) => {
                std::fs::remove_file(path)?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            // No hard links on this filesystem: rename onto a name seen free.
            Err(_) if candidate.symlink_metadata().is_err() => {
                std::fs::rename(path, &candidate)?;
                return Ok(candidate);
            }
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "a thousand earlier copies are in the way",
    ))
}

/// `create_dir_all`, each directory it creates exactly `0700` whatever the umask.
pub(crate) fn create_private_dirs(path: &Path) -> io::Result<()> {
    if path.as_os_str().is_empty() || path.is_dir() {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        create_private_dirs(parent)?;
    }
    match DirBuilder::new().mode(PRIVATE_DIR).create(path) {
        Ok(()) => std::fs::set_permissions(path, Permissions::from_mode(PRIVATE_DIR)),
        // Someone else made it meanwhile.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}

/// How often one path may be warned about.
const UNREADABLE_EVERY: Duration = Duration::from_secs(300);
static UNREADABLE: SayOnce<PathBuf> = SayOnce::new();

/// Logs "`err`; `next`" (what the daemon does instead) unless the same path
/// was warned about in the last few minutes.
pub(crate) fn warn_unreadable(err: &ReadError, next: &str) {
    if UNREADABLE.allows(err.path(), UNREADABLE_EVERY) {
        log::warn!("{err}; {next}");
    }
}

/// Makes a FIFO at `path`, for tests across the crate.
#[cfg(test)]
pub(crate) fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// Appends `bytes` the way records are appended (without the rotation).
    fn append(path: &Path, bytes: &[u8]) -> io::Result<()> {
        open_append(path)?.write_all(bytes)
    }

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    #[test]
    fn a_fifo_is_not_read_and_does_not_block() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("x.json");
        mkfifo(&fifo);
        let err = read_bounded(&fifo, HOOK_FILE_MAX).unwrap_err();
        assert!(matches!(err, ReadError::NotRegular { kind: "FIFO", .. }));
        assert!(err.to_string().contains("x.json"), "{err}");
    }

    #[test]
    fn a_socket_is_unreadable_not_missing() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("x.json");
        let _socket = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let err = read_bounded(&path, HOOK_FILE_MAX).unwrap_err();
        assert!(!err.is_missing(), "{err}");
        assert!(err.to_string().contains("x.json"), "{err}");
    }

    #[test]
    fn a_symlink_to_dev_zero_costs_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let link = tmp.path().join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let err = read_bounded(&link, HOOK_FILE_MAX).unwrap_err();
        assert!(
            matches!(err, ReadError::NotRegular { kind: "device", .. }),
            "{err}"
        );
    }

    #[test]
    fn directories_and_oversize_files_are_unreadable_and_missing_is_told_apart() {
        let tmp = tempfile::tempdir().unwrap();
        let err = read_bounded(tmp.path(), HOOK_FILE_MAX).unwrap_err();
        assert!(matches!(
            err,
            ReadError::NotRegular {
                kind: "directory",
                ..
            }
        ));
        let big = tmp.path().join("big");
        // Sparse: 100 MB that cost no disk, and must cost no memory.
        File::create(&big).unwrap().set_len(100 << 20).unwrap();
        let err = read_bounded(&big, HOOK_FILE_MAX).unwrap_err();
        assert!(matches!(err, ReadError::TooLarge { .. }), "{err}");
        std::fs::write(&big, vec![b'x'; 10]).unwrap();
        assert_eq!(read_bounded(&big, 10).unwrap(), vec![b'x'; 10]);
        assert!(read_bounded(&big, 9).is_err());
        assert!(read_bounded(&tmp.path().join("none"), 9)
            .unwrap_err()
            .is_missing());
    }

    #[test]
    fn a_symlink_to_a_regular_file_is_followed_for_reading() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("real"), b"ok").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("real"), tmp.path().join("link")).unwrap();
        assert_eq!(read_bounded(&tmp.path().join("link"), 10).unwrap(), b"ok");
    }

    #[test]
    fn appends_never_go_through_a_symlink_or_into_a_fifo() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let link = tmp.path().join("restart.log");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let err = append(&link, b"line\n").unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        let fifo = tmp.path().join("liveness.log");
        mkfifo(&fifo);
        let err = append(&fifo, b"line\n").unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
        // A FIFO with a reader opens, and is still refused.
        let _reader = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        let err = append(&fifo, b"line\n").unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
    }

    #[test]
    fn files_are_created_with_exact_modes_and_existing_ones_keep_theirs() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("restart.log");
        append(&log, b"a\n").unwrap();
        append(&log, b"b\n").unwrap();
        assert_eq!(std::fs::read(&log).unwrap(), b"a\nb\n");
        assert_eq!(mode(&log), 0o600);
        std::fs::set_permissions(&log, Permissions::from_mode(0o640)).unwrap();
        append(&log, b"c\n").unwrap();
        assert_eq!(mode(&log), 0o640);
        let state = tmp.path().join("state.json");
        write_atomically(&state, b"{}", PRIVATE_FILE).unwrap();
        assert_eq!(mode(&state), 0o600);
        let metrics = tmp.path().join("metrics.prom");
        write_atomically(&metrics, b"x 1\n", PUBLIC_FILE).unwrap();
        assert_eq!(mode(&metrics), 0o644);
        let lock = tmp.path().join("watchdog.lock");
        drop(open_lock_file(&lock).unwrap());
        assert_eq!(mode(&lock), 0o600);
        let dir = tmp.path().join("a/b/c");
        create_private_dirs(&dir).unwrap();
        for d in ["a", "a/b", "a/b/c"] {
            assert_eq!(mode(&tmp.path().join(d)), 0o700, "{d}");
        }
    }

    /// Where [`create_everything_here`] writes, when run as a child.
    const CHILD_DIR: &str = "AGENT_DECK_WATCHDOG_TEST_UMASK_DIR";

    #[test]
    fn modes_are_exact_even_under_umask_000() {
        // The umask is process-wide: set it only in a child (this test
        // binary again, running just `create_everything_here`, under a shell
        // that sets the umask first).
        let tmp = tempfile::tempdir().unwrap();
        let out = std::process::Command::new("/bin/sh")
            .args(["-c", "umask 000 && exec \"$0\" \"$@\""])
            .arg(std::env::current_exe().unwrap())
            .args(["--exact", "sys::fs::tests::create_everything_here"])
            .env(CHILD_DIR, tmp.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{stdout}"
        );
        for (name, want) in [
            ("r.log", 0o600),
            ("s.json", 0o600),
            ("m.prom", 0o644),
            ("l.lock", 0o600),
            ("d", 0o700),
            ("d/e", 0o700),
        ] {
            assert_eq!(mode(&tmp.path().join(name)), want, "{name}");
        }
    }

    #[test]
    fn create_everything_here() {
        let Some(dir) = std::env::var_os(CHILD_DIR).map(PathBuf::from) else {
            return;
        };
        append(&dir.join("r.log"), b"x\n").unwrap();
        write_atomically(&dir.join("s.json"), b"{}", PRIVATE_FILE).unwrap();
        write_atomically(&dir.join("m.prom"), b"", PUBLIC_FILE).unwrap();
        open_lock_file(&dir.join("l.lock")).unwrap();
        create_private_dirs(&dir.join("d/e")).unwrap();
    }

    #[test]
    fn the_old_predictable_temp_name_cannot_redirect_an_atomic_write() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let state = tmp.path().join("state.json");
        let guessed = tmp
            .path()
            .join(format!(".state.json.tmp-{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &guessed).unwrap();
        write_atomically(&state, b"{}", PRIVATE_FILE).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(&state).unwrap(), b"{}");
        assert!(guessed.symlink_metadata().is_ok());
    }

    #[test]
    fn an_atomic_write_replaces_a_symlink_and_never_writes_through_it() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let state = tmp.path().join("state.json");
        std::os::unix::fs::symlink(&victim, &state).unwrap();
        write_atomically(&state, b"{}", PRIVATE_FILE).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert!(state.symlink_metadata().unwrap().is_file());
    }

    #[test]
    fn a_lock_file_symlink_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let lock = tmp.path().join("watchdog.lock");
        std::os::unix::fs::symlink(&victim, &lock).unwrap();
        assert!(open_lock_file(&lock).is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    }

    #[test]
    fn stale_temps_are_removed_but_symlinks_and_other_files_stay() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let state = d.join("state.json");
        std::fs::write(d.join(".state.json.tmp-123"), b"x").unwrap();
        std::fs::write(d.join(".state.json.tmp-9-00ff00ff00ff00ff"), b"x").unwrap();
        std::fs::write(d.join(".metrics.prom.tmp-9"), b"x").unwrap();
        std::fs::write(d.join("victim"), b"keep").unwrap();
        std::os::unix::fs::symlink(d.join("victim"), d.join(".state.json.tmp-7")).unwrap();
        std::fs::create_dir(d.join(".state.json.tmp-dir")).unwrap();
        assert_eq!(remove_stale_temps(&state), 2);
        let mut left: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".metrics.prom.tmp-9",
                ".state.json.tmp-7",
                ".state.json.tmp-dir",
                "victim"
            ]
        );
        assert_eq!(std::fs::read(d.join("victim")).unwrap(), b"keep");
    }

    #[test]
    fn the_temp_file_of_a_killed_write_is_stale() {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state.json");
        let (_, left) = temp_file(&state, PRIVATE_FILE).unwrap().keep().unwrap();
        assert_eq!(mode(&left), 0o600);
        write_atomically(&state, b"{}", PRIVATE_FILE).unwrap();
        assert_eq!(stale_temps(&state), vec![left.clone()]);
        assert_eq!(remove_stale_temps(&state), 1);
        assert!(!left.exists() && state.exists());
    }

    #[test]
    fn moving_aside_never_overwrites_an_earlier_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("state.json");
        let aside = tmp.path().join("state.json.corrupt-5");
        std::fs::write(&path, b"first").unwrap();
        assert_eq!(move_aside(&path, &aside).unwrap(), aside);
        std::fs::write(&path, b"second").unwrap();
        let second = move_aside(&path, &aside).unwrap();
        assert_eq!(second, tmp.path().join("state.json.corrupt-5-1"));
        assert_eq!(std::fs::read(&aside).unwrap(), b"first");
        assert_eq!(std::fs::read(&second).unwrap(), b"second");
        assert!(!path.exists());
    }
}
