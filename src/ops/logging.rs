//! Log output: env_logger on stderr, in the journal's format when stderr is
//! the journal.
//!
//! Under journald (`JOURNAL_STREAM` names stderr's device and inode) each line
//! carries a `<N>` syslog priority prefix and no timestamp; otherwise lines
//! carry a UTC timestamp, the level and the thread name.

use std::io::Write;
use std::os::fd::AsRawFd;

use crate::sys::clock::{unix_now, utc_timestamp};

/// Whether stderr is the stream `JOURNAL_STREAM` (`<dev>:<inode>`) names.
pub fn stderr_is_journal(journal_stream: Option<&str>) -> bool {
    let Some((dev, ino)) = journal_stream.and_then(|v| v.split_once(':')) else {
        return false;
    };
    let (Ok(dev), Ok(ino)) = (dev.parse::<u64>(), ino.parse::<u64>()) else {
        return false;
    };
    // SAFETY: fstat fills a plain struct for a descriptor we do not close.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(std::io::stderr().as_raw_fd(), &mut st) == 0
            && st.st_dev == dev
            && st.st_ino == ino
    }
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
            if journal {
                writeln!(buf, "<{}>{}", priority(record.level()), record.args())
            } else {
                let thread = std::thread::current();
                writeln!(
                    buf,
                    "{} {:5} [{}] {}",
                    utc_timestamp(unix_now()),
                    record.level().as_str().to_lowercase(),
                    thread.name().unwrap_or("-"),
                    record.args()
                )
            }
        })
        .target(env_logger::Target::Stderr)
        .try_init();
}
