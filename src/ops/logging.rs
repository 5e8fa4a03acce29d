//! Log output: env_logger on stderr, in the journal's format when stderr is
//! the journal.
//!
//! Under journald (`JOURNAL_STREAM` names stderr's device and inode) each line
//! carries a `<N>` syslog priority prefix and no timestamp; otherwise lines
//! carry a UTC timestamp, the level and the thread name.
//!
//! Every message is made one line here, whoever logs it: titles, CLI answers
//! and file content reach it, so control characters are escaped (a newline
//! can neither forge a line nor start one with a `<N>` prefix) and the
//! message is clipped to [`MAX_LOG_CHARS`] (SPEC §11).

use std::fmt::Write as _;
use std::io::Write;

use crate::sys::clock::{unix_now, utc_timestamp};

/// Whether stderr is the stream `JOURNAL_STREAM` (`<dev>:<inode>`) names.
/// journald is Linux only: elsewhere this is always false.
pub fn stderr_is_journal(journal_stream: Option<&str>) -> bool {
    let Some((dev, ino)) = journal_stream.and_then(|v| v.split_once(':')) else {
        return false;
    };
    let (Ok(dev), Ok(ino)) = (dev.parse::<u64>(), ino.parse::<u64>()) else {
        return false;
    };
    stderr_is(dev, ino)
}

#[cfg(target_os = "linux")]
fn stderr_is(dev: u64, ino: u64) -> bool {
    rustix::fs::fstat(std::io::stderr()).is_ok_and(|st| st.st_dev == dev && st.st_ino == ino)
}

#[cfg(not(target_os = "linux"))]
fn stderr_is(_dev: u64, _ino: u64) -> bool {
    false
}

/// The longest message a log line carries, in characters.
pub const MAX_LOG_CHARS: usize = 300;
/// A clipped message keeps this many characters of its start (the subject)…
const HEAD_CHARS: usize = 200;
/// …and this many of its end (what happens next), around one `…`.
const TAIL_CHARS: usize = MAX_LOG_CHARS - HEAD_CHARS - 1;

/// How `c` is written in a log line: control characters (C0, DEL, C1) as
/// escapes, `\n` `\r` `\t` by name and the rest as `\u{..}`.
fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if c.is_control() => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        c => out.push(c),
    }
}

/// How many characters `c` takes once escaped (see [`push_escaped`]).
fn escaped_len(c: char) -> usize {
    match c {
        '\n' | '\r' | '\t' => 2,
        c if c.is_control() && u32::from(c) < 0x10 => 5,
        c if c.is_control() => 6,
        _ => 1,
    }
}

/// `msg` fit for one log line: control characters escaped and, past
/// [`MAX_LOG_CHARS`], the middle left out. Only the kept ends are escaped,
/// so a huge message costs no more than its scan.
pub fn one_line(msg: &str) -> String {
    let mut out = String::new();
    let fits = msg
        .chars()
        .try_fold(0usize, |n, c| {
            let n = n + escaped_len(c);
            (n <= MAX_LOG_CHARS).then_some(n)
        })
        .is_some();
    if fits {
        msg.chars().for_each(|c| push_escaped(&mut out, c));
        return out;
    }
    let mut taken = 0;
    for c in msg.chars() {
        taken += escaped_len(c);
        if taken > HEAD_CHARS {
            break;
        }
        push_escaped(&mut out, c);
    }
    out.push('…');
    let (mut tail, mut taken) = (Vec::new(), 0);
    for c in msg.chars().rev() {
        taken += escaped_len(c);
        if taken > TAIL_CHARS {
            break;
        }
        tail.push(c);
    }
    tail.iter().rev().for_each(|c| push_escaped(&mut out, *c));
    out
}

fn priority(level: log::Level) -> u8 {
    match level {
        log::Level::Error => 3,
        log::Level::Warn => 4,
        log::Level::Info => 6,
        log::Level::Debug | log::Level::Trace => 7,
    }
}

/// Installs the logger once; later calls do nothing.
pub fn init(verbose: bool, journal_stream: Option<&str>) {
    let journal = stderr_is_journal(journal_stream);
    let level = if verbose {
        log::LevelFilter::Debug
    } else {
        log::LevelFilter::Info
    };
    let _ = env_logger::Builder::new()
        .filter_level(log::LevelFilter::Warn)
        .filter_module("agent_deck_watchdog", level)
        // The HTTP stack logs request URLs, and the Telegram URL carries the token.
        .filter_module("ureq", log::LevelFilter::Off)
        .filter_module("ureq_proto", log::LevelFilter::Off)
        .filter_module("rustls", log::LevelFilter::Off)
        .format(move |buf, record| {
            let msg = one_line(&record.args().to_string());
            if journal {
                writeln!(buf, "<{}>{msg}", priority(record.level()))
            } else {
                let thread = std::thread::current();
                writeln!(
                    buf,
                    "{} {:5} [{}] {}",
                    utc_timestamp(unix_now()),
                    record.level().as_str().to_lowercase(),
                    thread.name().unwrap_or("-"),
                    msg
                )
            }
        })
        .target(env_logger::Target::Stderr)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newline_in_a_message_cannot_forge_a_log_line() {
        let title = "x\n<0>forged: all conductors healthy\r\u{1b}[2J\u{7f}\u{85}\ttab";
        let line = one_line(&format!("c-1 ({title}) is in error; queueing a restart"));
        assert!(!line.chars().any(char::is_control), "{line:?}");
        for c in ['\n', '\u{0}', '\u{1b}', '\u{7f}', '\u{9f}', 'é'] {
            let mut s = String::new();
            push_escaped(&mut s, c);
            assert_eq!(s.chars().count(), escaped_len(c), "{c:?}");
        }
        assert_eq!(
            line,
            "c-1 (x\\n<0>forged: all conductors healthy\\r\\u{1b}[2J\\u{7f}\\u{85}\\ttab) is in error; queueing a restart"
        );
    }

    #[test]
    fn a_long_message_is_clipped_keeping_both_ends() {
        let reason = "é\n".repeat(2_500_000);
        let line = one_line(&format!(
            "agent-deck declined to restart c-1: {reason}; not falling back"
        ));
        assert!(
            line.chars().count() <= MAX_LOG_CHARS,
            "{}",
            line.chars().count()
        );
        assert!(line.starts_with("agent-deck declined to restart c-1: é\\n"));
        assert!(line.ends_with("é\\n; not falling back"), "{line}");
        assert!(line.contains('…'));
        assert!(!line.chars().any(char::is_control));
    }

    #[test]
    fn a_short_message_is_unchanged() {
        let msg = "armed: watching hooks and polling every 5.0s — ünïcode kept";
        assert_eq!(one_line(msg), msg);
        let exactly = "a".repeat(MAX_LOG_CHARS);
        assert_eq!(one_line(&exactly), exactly);
        assert_eq!(
            one_line(&"a".repeat(MAX_LOG_CHARS + 1)).chars().count(),
            MAX_LOG_CHARS
        );
    }
}
