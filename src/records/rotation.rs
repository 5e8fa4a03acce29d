//! Record files with a size bound (`RECORD_MAX_BYTES`, SPEC §3): the append
//! that rotates `<name>` to `<name>.1` when the next line would pass it, and
//! the streaming reader of `<name>.1` then `<name>`. An append holds an
//! exclusive `flock` and checks that `<name>` still names the open file, so
//! two appenders never rotate a fresh file away. Each line is one `write` on
//! an `O_APPEND` file, so files rotate only between whole lines, and a line
//! is whole or absent ([`put`]). A lock nobody releases costs a rotation,
//! never a record (the line goes out unlocked); a stuck `<name>.1` leaves the
//! file growing, and the caller warns.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sys::file_lock::{self, LockMode};

/// `RECORD_MAX_BYTES` when nothing else is said: 16 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 16 << 20;

/// The longest line a reader takes (a record is a few clipped 4 KiB fields).
pub(crate) const MAX_LINE_BYTES: usize = 1 << 20;

/// How long an append waits for another's lock before writing without it.
const LOCK_PATIENCE: Duration = Duration::from_millis(250);

/// Opens before giving up on a file that keeps being replaced under us.
const ROUNDS: usize = 4;

/// `<name>.1`: where `<name>` goes when it is rotated.
pub fn rotated_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".1");
    PathBuf::from(name)
}

/// What became of an append; the line was written in every case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Appended {
    /// Into the file as it was.
    Plain,
    /// The file, holding this many bytes, became `<name>.1`; the line starts anew.
    Rotated(u64),
    /// Past the bound but not rotated (why); the line was appended all the same.
    Unrotated(String),
}

/// Whether `path` names the file `file` is open on.
fn still_named(file: &File, path: &Path) -> io::Result<bool> {
    let open = file.metadata()?;
    match std::fs::symlink_metadata(path) {
        Ok(named) => Ok(named.dev() == open.dev() && named.ino() == open.ino()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Appends `line` to `file`, which holds `size` bytes, through `out`: whole
/// or not at all. `out` writes to `file`: the file itself, or in tests one
/// on a disk that fills part-way through a write.
///
/// A file that does not end in `\n` ends in a fragment: a record an older
/// release or a crash tore, or a whole record only missing its `\n`. The
/// line then starts with a `\n`, in the same write, so the fragment becomes
/// a line of its own, which readers skip unless it parses. It is not cut
/// off: that would lose such a record, or part of a line another process is
/// appending while we write unlocked.
///
/// A failed or short write (a full disk) cuts the file back to `size`, but
/// only under the lock: without it, another appender's record may lie past
/// `size`, so the fragment stays and the next append mends it as above.
fn put(file: &File, out: &mut impl Write, size: u64, line: &[u8], locked: bool) -> io::Result<()> {
    // A byte that cannot be read is taken for a `\n`: at worst one glued line.
    let mut last = [0];
    let torn = size > 0 && file.read_exact_at(&mut last, size - 1).is_ok() && last[0] != b'\n';
    let line = [if torn { &b"\n"[..] } else { b"" }, line].concat();
    out.write_all(&line).inspect_err(|_| {
        if locked {
            // Should this fail too, the next append mends the fragment.
            let _ = file.set_len(size);
        }
    })
}

/// Appends `line` (one whole record with its `\n`) to `path`, first rotating
/// it to `<path>.1` if `line` would take it past `max` (an empty file takes any).
pub(crate) fn append(path: &Path, line: &[u8], max: u64) -> io::Result<Appended> {
    let mut rotated = None;
    for round in 1..=ROUNDS {
        let file = crate::sys::fs::open_append(path)?;
        let locked = file_lock::lock(&file, LockMode::Exclusive, Some(LOCK_PATIENCE)).is_ok();
        if locked && round < ROUNDS && !still_named(&file, path)? {
            // Rotated by another process since we opened it: take the new one.
            continue;
        }
        let size = file.metadata()?.len();
        let fits = size == 0 || size.saturating_add(line.len() as u64) <= max;
        if fits || rotated.is_some() || round == ROUNDS {
            put(&file, &mut &file, size, line, locked)?;
            return Ok(rotated.map_or(Appended::Plain, Appended::Rotated));
        }
        let target = rotated_path(path);
        let failed = if !locked {
            Some("another process holds its lock".to_owned())
        } else if let Err(e) = std::fs::rename(path, &target) {
            Some(format!("cannot rename it to {}: {e}", target.display()))
        } else {
            None
        };
        if let Some(why) = failed {
            put(&file, &mut &file, size, line, locked)?;
            return Ok(Appended::Unrotated(why));
        }
        // The lock goes with `file`; the next round opens the fresh file.
        rotated = Some(size);
    }
    // Unreachable: the last round always writes.
    Ok(Appended::Plain)
}

/// Calls `each` with every line of `path` (without `\n`), streaming; an
/// unreadable file has none, and one over [`MAX_LINE_BYTES`] is skipped.
pub(crate) fn each_line(path: &Path, mut each: impl FnMut(&[u8])) {
    let Ok(file) = crate::sys::fs::open_regular(path) else {
        return;
    };
    let mut reader = BufReader::with_capacity(64 << 10, file);
    let mut line = Vec::new();
    let bound = MAX_LINE_BYTES as u64 + 1;
    loop {
        line.clear();
        match (&mut reader).take(bound).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        } else if line.len() > MAX_LINE_BYTES {
            if reader.skip_until(b'\n').is_err() {
                return;
            }
            continue;
        }
        // A last line without `\n` comes here too; the next read ends the loop.
        each(&line);
    }
}

/// [`each_line`] over `<path>.1`, then `path`: oldest first.
pub(crate) fn each_line_with_rotated(path: &Path, mut each: impl FnMut(&[u8])) {
    each_line(&rotated_path(path), &mut each);
    each_line(path, each);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(i: usize) -> Vec<u8> {
        format!("{{\"n\":{i},\"pad\":\"{}\"}}\n", "x".repeat(80)).into_bytes()
    }

    fn lines_of(path: &Path) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        each_line(path, |l| out.push(l.to_vec()));
        out
    }

    #[test]
    fn a_file_rotates_before_the_line_that_would_pass_the_limit() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("restart.log");
        let max = 10 * line(0).len() as u64;
        for i in 0..10 {
            assert_eq!(append(&log, &line(i), max).unwrap(), Appended::Plain);
        }
        assert_eq!(std::fs::metadata(&log).unwrap().len(), max);
        assert_eq!(
            append(&log, &line(10), max).unwrap(),
            Appended::Rotated(max)
        );
        assert_eq!(lines_of(&rotated_path(&log)).len(), 10);
        assert_eq!(
            lines_of(&log),
            vec![line(10)[..line(10).len() - 1].to_vec()]
        );
    }

    #[test]
    fn the_previous_rotated_file_is_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("liveness.log");
        std::fs::write(rotated_path(&log), b"oldest\n").unwrap();
        let max = 3 * line(0).len() as u64;
        for i in 0..7 {
            append(&log, &line(i), max).unwrap();
        }
        // 0-2 dropped with the second rotation, 3-5 in .1, 6 live.
        let old = lines_of(&rotated_path(&log));
        assert_eq!(old.len(), 3);
        assert!(String::from_utf8_lossy(&old[0]).starts_with("{\"n\":3,"));
        assert_eq!(lines_of(&log).len(), 1);
    }

    #[test]
    fn no_line_is_torn_or_lost_when_threads_append_across_a_rotation() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("escalations.log");
        // 100 lines of under 100 bytes over a 60-line bound: one rotation.
        let max = 60 * line(9999).len() as u64;
        std::thread::scope(|s| {
            for t in 0..4 {
                let log = &log;
                s.spawn(move || {
                    for i in 0..25 {
                        append(log, &line(t * 1000 + i), max).unwrap();
                    }
                });
            }
        });
        let mut seen = Vec::new();
        each_line_with_rotated(&log, |l| {
            let v: serde_json::Value = serde_json::from_slice(l).unwrap();
            seen.push(v["n"].as_u64().unwrap());
        });
        seen.sort_unstable();
        let want: Vec<u64> = (0..4)
            .flat_map(|t| (0..25).map(move |i| t * 1000 + i))
            .collect();
        assert_eq!(seen, want);
        for file in [rotated_path(&log), log.clone()] {
            let bytes = std::fs::read(&file).unwrap();
            assert!(bytes.ends_with(b"\n") && bytes.len() as u64 <= max);
        }
    }

    #[test]
    fn a_rotated_name_that_cannot_be_replaced_leaves_the_file_growing() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("restart.log");
        std::fs::create_dir(rotated_path(&log)).unwrap();
        std::fs::write(rotated_path(&log).join("x"), b"x").unwrap();
        let max = line(0).len() as u64;
        append(&log, &line(0), max).unwrap();
        let second = append(&log, &line(1), max).unwrap();
        assert!(matches!(second, Appended::Unrotated(_)), "{second:?}");
        assert_eq!(lines_of(&log).len(), 2);
    }

    #[test]
    fn a_symlinked_rotated_name_is_replaced_not_written_through() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let log = tmp.path().join("restart.log");
        std::os::unix::fs::symlink(&victim, rotated_path(&log)).unwrap();
        let max = line(0).len() as u64;
        append(&log, &line(0), max).unwrap();
        append(&log, &line(1), max).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert!(std::fs::symlink_metadata(rotated_path(&log))
            .unwrap()
            .is_file());
    }

    #[test]
    fn a_held_lock_costs_the_rotation_not_the_record() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("restart.log");
        let max = line(0).len() as u64;
        append(&log, &line(0), max).unwrap();
        let holder = File::open(&log).unwrap();
        file_lock::lock(&holder, LockMode::Exclusive, None).unwrap();
        let got = append(&log, &line(1), max).unwrap();
        assert!(matches!(got, Appended::Unrotated(_)), "{got:?}");
        assert_eq!(lines_of(&log).len(), 2);
    }

    /// A record file on a disk with `room` bytes left: a write lands what
    /// fits, then fails with `ENOSPC`, as a full filesystem does.
    struct FullDisk<'a> {
        file: &'a File,
        room: usize,
    }

    impl Write for FullDisk<'_> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            let n = self.file.write(&buf[..buf.len().min(self.room)])?;
            self.room -= n;
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// `put` onto `path` with `room` bytes left on its disk.
    fn put_with_room(path: &Path, room: usize, line: &[u8], locked: bool) -> io::Result<()> {
        let file = crate::sys::fs::open_append(path).unwrap();
        let size = file.metadata().unwrap().len();
        put(
            &file,
            &mut FullDisk { file: &file, room },
            size,
            line,
            locked,
        )
    }

    #[test]
    fn a_record_that_does_not_fit_on_the_disk_is_absent_and_the_next_one_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("restart.log");
        append(&log, &line(0), DEFAULT_MAX_BYTES).unwrap();
        let before = std::fs::read(&log).unwrap();
        for room in [0, 1, 10, line(1).len() - 1] {
            let err = put_with_room(&log, room, &line(1), true).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
            assert_eq!(std::fs::read(&log).unwrap(), before, "room {room}");
        }
        // Space came back: the next record is whole, and readers see both.
        put_with_room(&log, usize::MAX, &line(2), true).unwrap();
        let back: Vec<serde_json::Value> = crate::records::read_back::read_lines(&log);
        assert_eq!(back.len(), 2);
        assert_eq!(
            (back[0]["n"].as_u64(), back[1]["n"].as_u64()),
            (Some(0), Some(2))
        );
        assert!(std::fs::read(&log).unwrap().ends_with(b"\n"));
    }

    #[test]
    fn a_file_ending_in_a_fragment_gets_a_newline_before_the_next_record() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("restart.log");
        append(&log, &line(0), DEFAULT_MAX_BYTES).unwrap();
        // Unlocked, a short write is not cut back: the bytes past the
        // length seen may be another appender's.
        put_with_room(&log, 10, &line(1), false).unwrap_err();
        append(&log, &line(2), DEFAULT_MAX_BYTES).unwrap();
        let want = [&line(0)[..], &line(1)[..10], b"\n", &line(2)].concat();
        assert_eq!(std::fs::read(&log).unwrap(), want);
        // A whole record missing only its `\n` is kept, not cut off.
        let kept = tmp.path().join("liveness.log");
        std::fs::write(&kept, &line(3)[..line(3).len() - 1]).unwrap();
        append(&kept, &line(4), DEFAULT_MAX_BYTES).unwrap();
        assert_eq!(
            lines_of(&kept),
            [&line(3)[..line(3).len() - 1], &line(4)[..line(4).len() - 1]]
        );
    }

    #[test]
    fn reading_streams_and_skips_an_overlong_line() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("restart.log");
        let mut text = b"first\n".to_vec();
        text.extend(vec![b'y'; MAX_LINE_BYTES + 10]);
        text.extend_from_slice(b"\nsecond\nlast-without-newline");
        std::fs::write(&log, &text).unwrap();
        std::fs::write(rotated_path(&log), b"older\n").unwrap();
        let mut seen = Vec::new();
        each_line_with_rotated(&log, |l| seen.push(String::from_utf8_lossy(l).into_owned()));
        assert_eq!(seen, ["older", "first", "second", "last-without-newline"]);
        let fifo = tmp.path().join("fifo.log");
        crate::sys::fs::mkfifo(&fifo);
        each_line(&fifo, |_| panic!("a FIFO has no lines"));
    }
}
