//! `history [ID] [--since DUR] [--json|--report]`: the decision timeline of
//! the three record files (each with its `.1`), oldest first. This file reads
//! them (the newest [`FILE_MAX`] bytes of each) and prints; [`timeline`]
//! parses and filters, [`format`] renders, both pure. It never writes, locks
//! or calls agent-deck, and prints no pane text or secret.

pub(crate) mod format;
pub(crate) mod timeline;

#[cfg(test)]
mod fixtures;

use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use jiff::tz::TimeZone;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::sys::clock::unix_now;

use format::{render, About};
pub(crate) use timeline::Since;
use timeline::{merge, parse, Log, Record};

/// At most this much of each record file is read: its newest part.
pub(crate) const FILE_MAX: u64 = 16 << 20;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum View {
    /// One readable line per decision.
    #[default]
    Lines,
    /// One JSON line per record: the typed record plus `"log"`.
    Json,
    /// A paste-ready block for a bug report about one session.
    Report,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Args {
    pub id: Option<String>,
    pub since: Since,
    pub view: View,
}

/// Reads a record file without blocking on it: `Ok(None)` when missing, an
/// error saying what is wrong when it is not a regular file or cannot be
/// read. More than `max` bytes: the newest `max`, from the first whole line,
/// and `true` for "clipped".
fn read_record_file(path: &Path, max: u64) -> std::result::Result<Option<(Vec<u8>, bool)>, String> {
    let mut file = match crate::sys::fs::open_regular(path) {
        Ok(f) => f,
        Err(e) if e.is_missing() => return Ok(None),
        Err(e) => return Err(format!("it {}", e.reason())),
    };
    let mut read = || -> io::Result<(Vec<u8>, bool)> {
        let len = file.metadata()?.len();
        file.seek(SeekFrom::Start(len.saturating_sub(max)))?;
        let mut bytes = Vec::with_capacity(len.min(max) as usize);
        (&mut file).take(max).read_to_end(&mut bytes)?;
        Ok((bytes, len > max))
    };
    let (mut bytes, clipped) = read().map_err(|e| e.to_string())?;
    if clipped {
        // The first line is probably cut: start after it.
        let start = bytes.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
        bytes.drain(..start);
    }
    Ok(Some((bytes, clipped)))
}

/// Every record under `dir`, merged, and what went wrong reading them.
pub(crate) fn load(dir: &Path) -> (Vec<Record>, Vec<String>) {
    let (mut files, mut problems) = (Vec::new(), Vec::new());
    for log in Log::ALL {
        let live = dir.join(log.file());
        for path in [crate::records::rotation::rotated_path(&live), live] {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            match read_record_file(&path, FILE_MAX) {
                Ok(None) => {}
                Ok(Some((bytes, clipped))) => {
                    if clipped {
                        let (shown, mib) = (path.display(), FILE_MAX >> 20);
                        problems.push(format!(
                            "{shown} is larger than {mib} MiB: only its newest {mib} MiB were read"
                        ));
                    }
                    let (entries, skipped) = parse(log, &bytes);
                    if skipped > 0 {
                        let s = if skipped == 1 { "" } else { "s" };
                        problems.push(format!("skipped {skipped} unreadable line{s} in {name}"));
                    }
                    files.push(entries);
                }
                Err(why) => problems.push(format!(
                    "cannot read {}: {why}; the other record files are still shown",
                    path.display()
                )),
            }
        }
    }
    (merge(files), problems)
}

pub(crate) fn run(cfg: &Config, args: &Args) -> Result<()> {
    let (all, problems) = load(&cfg.watchdog_dir);
    for p in &problems {
        eprintln!("agent-deck-watchdog: {p}");
    }
    let mut settings = cfg.describe();
    // `describe` shows the token only as set or unset; should that ever
    // change, the report still does not carry it. (A token shorter than a
    // real one could match ordinary text, so it is left to `describe`.)
    let token = cfg.telegram_token.as_ref().map(|t| t.expose());
    if let Some(token) = token.filter(|t| t.len() >= 8) {
        settings = settings.replace(token, "(redacted)");
    }
    let about = About {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        platform: format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
        settings,
    };
    let out = render(args, &all, unix_now(), &about, &TimeZone::system())?;
    for note in &out.notes {
        eprintln!("agent-deck-watchdog: {note}");
    }
    crate::sys::fs::print_stdout(&out.stdout)
        .map_err(|e| Error::runtime(format!("history: cannot write to stdout: {e}")))
}

#[cfg(test)]
mod tests {
    use super::fixtures::{escalation, restart, OPS, T0};
    use super::*;
    use serde_json::Value;

    #[test]
    fn special_files_are_unreadable_not_a_hang() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("restart.log");
        crate::sys::fs::mkfifo(&fifo);
        assert_eq!(
            read_record_file(&fifo, FILE_MAX).unwrap_err(),
            "it is a FIFO, not a regular file"
        );
        let dir = tmp.path().join("liveness.log");
        std::fs::create_dir(&dir).unwrap();
        assert_eq!(
            read_record_file(&dir, FILE_MAX).unwrap_err(),
            "it is a directory, not a regular file"
        );
        assert!(read_record_file(&tmp.path().join("missing"), FILE_MAX)
            .unwrap()
            .is_none());
        std::fs::write(
            tmp.path().join("escalations.log.1"),
            escalation(T0, "x", None, "kept"),
        )
        .unwrap();
        let (all, problems) = load(tmp.path());
        assert_eq!(all.len(), 1);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].contains(&dir.display().to_string()) && problems[0].contains("directory")
        );
        assert!(problems[1].contains(&fifo.display().to_string()) && problems[1].contains("FIFO"));
    }

    #[test]
    fn a_huge_file_is_read_from_its_end_up_to_the_bound() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("restart.log");
        let lines: Vec<String> = (0..100)
            .map(|i| restart(T0 + f64::from(i), OPS, "a", "restart", Value::Null))
            .collect();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let (bytes, clipped) = read_record_file(&path, 1000).unwrap().unwrap();
        assert!(clipped && bytes.len() <= 1000);
        let (e, skipped) = parse(Log::Restart, &bytes);
        assert_eq!(skipped, 0, "the cut first line is dropped, not counted");
        assert_eq!(e.last().map(|e| e.ts()), Some(T0 + 99.0));
    }
}
