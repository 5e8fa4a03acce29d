//! agent-deck's store held by another process, the test itself: the byte
//! locks SQLite's unix VFS takes, put on 1.14.0's `state.db` with `fcntl`,
//! so no Python or `sqlite3` is needed. The store is in WAL mode
//! (`statedb.Open` sets `journal_mode=WAL`, and the file keeps it): a
//! write transaction lives on bytes of `state.db-shm`, and a reader still
//! takes a SHARED lock on `state.db` itself.
//!
//! The locks are open-file-description locks (`F_OFD_SETLK`) on Linux: they
//! belong to the `File` that took them and end when it is dropped, they
//! conflict with SQLite's per-process POSIX locks in agent-deck, and
//! nothing else this process opens or closes can drop them, as closing any
//! fd of a file drops a process's POSIX locks on it. Elsewhere (macOS has
//! no OFD locks) they are POSIX locks, which hold as long as no other fd of
//! these files is closed in the test process. Nothing here reads or writes
//! a page of the database.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::wait_until;

/// SQLite's PENDING byte in a database file; RESERVED is the next byte, the
/// SHARED range (510 bytes) the ones after it.
const PENDING: i64 = 0x4000_0000;
const SHARED: i64 = PENDING + 2;
const SHARED_LEN: i64 = 510;
/// Bytes of the `-shm` file (the WAL index): `WAL_WRITE_LOCK`,
/// `WAL_READ_LOCK(0)` (slot `i` is `READ_SLOT + i`, `i` < 5) and the
/// "dead man switch" every connection holds read-locked while it is open.
const WAL_WRITE: i64 = 120;
const READ_SLOT: i64 = 123;
const DMS: i64 = 128;
/// How long a lock is tried for, as the Python holder's `timeout=10`.
const PATIENCE: Duration = Duration::from_secs(10);

#[cfg(target_os = "linux")]
const SETLK: libc::c_int = libc::F_OFD_SETLK;
#[cfg(not(target_os = "linux"))]
const SETLK: libc::c_int = libc::F_SETLK;

/// A shared (`F_RDLCK`) or exclusive (`F_WRLCK`) byte-range lock.
#[derive(Clone, Copy)]
enum Kind {
    Read,
    Write,
}

/// Locks held on the store until [`Held::release`], or until dropped (a
/// failing test lets them go at once).
pub(crate) struct Held {
    _files: Vec<File>,
    until: Instant,
}

impl Held {
    /// Waits out the span the locks were taken for, then lets them go.
    pub(crate) fn release(self) {
        std::thread::sleep(self.until.saturating_duration_since(Instant::now()));
    }
}

/// Holds what another connection's `BEGIN EXCLUSIVE` holds on the WAL-mode
/// store `db` for `span`, as `/proc/locks` showed it for Python's `sqlite3`
/// on 1.14.0's store: read locks on `db`'s SHARED range, on the DMS byte
/// and on a read slot of `db-shm`, and the write lock `WAL_WRITE_LOCK`.
/// Readers go on; every write waits out its busy timeout. The WAL index
/// must exist and be current: the sandbox's notify-daemon keeps the store
/// open.
pub(crate) fn write_transaction(db: &Path, span: Duration) -> Held {
    let file = open(db);
    let shm = open(&PathBuf::from(format!("{}-shm", db.display())));
    lock(&file, Kind::Read, SHARED, SHARED_LEN);
    lock(&shm, Kind::Read, DMS, 1);
    lock(&shm, Kind::Write, WAL_WRITE, 1);
    let mut slot = None;
    let found = wait_until(PATIENCE, || {
        slot = read_slot(&shm);
        slot.is_some()
    });
    assert!(found, "no read slot of {} is free", db.display());
    lock(&shm, Kind::Read, READ_SLOT + slot.unwrap_or_default(), 1);
    Held {
        _files: vec![file, shm],
        until: Instant::now() + span,
    }
}

/// Holds SQLite's PENDING byte of `db` write-locked for `span`, as Python's
/// `fcntl.lockf` did: no connection can take the SHARED lock a read needs,
/// so every agent-deck call waits out its busy timeout.
pub(crate) fn pending_byte(db: &Path, span: Duration) -> Held {
    let file = open(db);
    lock(&file, Kind::Write, PENDING, 1);
    Held {
        _files: vec![file],
        until: Instant::now() + span,
    }
}

/// The read slot SQLite's `walTryBeginRead` takes at the WAL's last frame,
/// read from the WAL index once `WAL_WRITE_LOCK` is held (no writer can
/// move the last frame, and no checkpointer moves a mark that is already
/// there): 0 when every frame is in the database, else the last slot
/// marked with that frame, else the first slot it can lock alone, marked
/// so now. `None` while every slot is busy.
fn read_slot(shm: &File) -> Option<i64> {
    let mut index = [0u8; 120];
    shm.read_exact_at(&mut index, 0)
        .expect("read the WAL index");
    let word =
        |at: usize| u32::from_ne_bytes([index[at], index[at + 1], index[at + 2], index[at + 3]]);
    // `WalIndexHdr.mxFrame`, `WalCkptInfo.nBackfill` and `aReadMark[i]`.
    let (last, backfilled, mark) = (word(16), word(96), |i: usize| word(100 + 4 * i));
    if last == backfilled {
        return Some(0);
    }
    if let Some(i) = (1..5).rev().find(|&i| mark(i) == last) {
        return Some(i as i64);
    }
    let i = (1..5).find(|&i| try_lock(shm, Kind::Write, READ_SLOT + i, 1).is_ok())?;
    let at = 100 + 4 * i as u64;
    shm.write_all_at(&last.to_ne_bytes(), at)
        .expect("mark a read slot");
    Some(i)
}

/// `path` opened for reading and writing, as SQLite opens it.
fn open(path: &Path) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()))
}

/// Takes a `kind` lock on `len` bytes of `file` from `start`, trying for
/// [`PATIENCE`] while another process holds them.
fn lock(file: &File, kind: Kind, start: i64, len: i64) {
    let mut last = None;
    let got = wait_until(PATIENCE, || {
        last = try_lock(file, kind, start, len).err();
        last.is_none()
    });
    assert!(got, "cannot lock {len} bytes at {start:#x}: {last:?}");
}

/// One try of [`lock`]; a lock this `File` holds on the bytes is converted.
fn try_lock(file: &File, kind: Kind, start: i64, len: i64) -> io::Result<()> {
    // SAFETY: an all-zero `flock` is a valid value (and `l_pid` must be 0
    // for an OFD lock); the fields that matter are set below.
    let mut range: libc::flock = unsafe { std::mem::zeroed() };
    range.l_type = match kind {
        Kind::Read => libc::F_RDLCK,
        Kind::Write => libc::F_WRLCK,
    } as _;
    range.l_whence = libc::SEEK_SET as _;
    range.l_start = start;
    range.l_len = len;
    // SAFETY: the fd is open for the whole call and `range` outlives it.
    match unsafe { libc::fcntl(file.as_raw_fd(), SETLK, &range) } {
        -1 => Err(io::Error::last_os_error()),
        _ => Ok(()),
    }
}
