//! Log output: env_logger on stderr, in the journal's format when stderr is
//! the journal.
//!
//! Under journald (`JOURNAL_STREAM` names stderr's device and inode) each line
//! carries a `<N>` syslog priority prefix and no timestamp; otherwise lines
//! carry a UTC timestamp, the level and the thread name.
//!
//! Every message is made one line here, whoever logs it: titles, CLI answers
//! and file content reach it, so it is escaped like all text shown (a newline
//! can neither forge a line nor start one with a `<N>` prefix, a bidi
//! override cannot reorder it) and clipped to [`MAX_LOG_CHARS`] (SPEC §11).

use std::io::Write;

use crate::sys::clock::{unix_now, utc_timestamp};

/// Whether stderr is the stream `JOURNAL_STREAM` (`<dev>:<inode>`) names.
/// journald is Linux only: elsewhere this is always false.
pub(crate) fn stderr_is_journal(journal_stream: Option<&str>) -> bool {
    let named = journal_stream.and_then(|v| {
        let (dev, ino) = v.split_once(':')?;
        Some((dev.parse().ok()?, ino.parse().ok()?))
    });
    named.is_some_and(|(dev, ino)| stderr_is(dev, ino))
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
pub(crate) const MAX_LOG_CHARS: usize = 300;
/// A clipped message keeps this many characters of its start (the subject)
/// and the rest of the bound from its end (what happens next).
const HEAD_CHARS: usize = 200;

/// `msg` fit for one log line: escaped by [`crate::text`]'s policy and, past
/// [`MAX_LOG_CHARS`], the middle left out.
pub(crate) fn one_line(msg: &str) -> String {
    crate::text::printable_ends(msg, MAX_LOG_CHARS, HEAD_CHARS)
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
pub(crate) fn init(verbose: bool, journal_stream: Option<&str>) {
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
        assert_eq!(
            line,
            "c-1 (x\\n<0>forged: all conductors healthy\\r\\u{1b}[2J\\u{7f}\\u{85}\\ttab) is in error; queueing a restart"
        );
    }

    #[test]
    fn a_hostile_title_reaches_the_log_line_escaped_as_history_shows_it() {
        let title = "ops\u{202e}lanigiro\u{2066}x\u{2069}\u{2028}<0>forged\u{2029}\u{200f}";
        let line = one_line(&format!("c-1 ({title}) is in error; queueing a restart"));
        assert_eq!(
            line,
            "c-1 (ops\\u{202e}lanigiro\\u{2066}x\\u{2069}\\u{2028}<0>forged\\u{2029}\\u{200f}) is in error; queueing a restart"
        );
        assert!(line.contains(&crate::text::printable(title, 100)));
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
