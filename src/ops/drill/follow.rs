//! Following the daemon after the kill: new `restart.log` lines read from
//! where the file ended at the kill (across a rotation), and the timeline
//! printed at the end.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::decide::outcomes::RestartAction;
use crate::fleet::session::Session;
use crate::ops::history::timeline::{select, Record};
use crate::ops::history::{self, format};
use crate::records::audit::{RestartRecord, RESTART_LOG};
use crate::records::rotation::rotated_path;
use crate::sys::clock::{local_timestamp, unix_now};
use crate::sys::fs::open_regular;
use crate::sys::shutdown::Shutdown;
use crate::triggers::hook_file::{read_hook, HookStatus};

const POLL: Duration = Duration::from_millis(250);

/// How the wait ended.
pub(super) struct Recovery {
    /// When `session show` first read the session healthy after the
    /// daemon's `restarted` record, or what the daemon did instead.
    pub recovered: std::result::Result<f64, String>,
    /// What woke the daemon: the hook as it was when the daemon's first
    /// record after the kill appeared (a later hook is the new agent's).
    pub hook: Option<(HookStatus, f64)>,
}

/// `restart.log` read from where it ended when the drill began.
pub(super) struct Follow {
    log: PathBuf,
    offset: u64,
}

impl Follow {
    pub(super) fn start(dir: &Path) -> Follow {
        let log = dir.join(RESTART_LOG);
        let offset = std::fs::metadata(&log).map_or(0, |m| m.len());
        Follow { log, offset }
    }

    /// The records written since the last call; a rotation in between is
    /// followed into `restart.log.1`.
    fn new_records(&mut self) -> Vec<RestartRecord> {
        let len = std::fs::metadata(&self.log).map_or(0, |m| m.len());
        let mut bytes = Vec::new();
        if len < self.offset {
            read_from(&rotated_path(&self.log), self.offset, &mut bytes);
            self.offset = 0;
        }
        self.offset += read_from(&self.log, self.offset, &mut bytes);
        // A line still being written stays for the next call.
        let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        self.offset = self.offset.saturating_sub((bytes.len() - whole) as u64);
        bytes[..whole]
            .split(|b| *b == b'\n')
            .filter_map(|l| serde_json::from_slice(l).ok())
            .collect()
    }

    /// Waits until a `restarted` record of `s` is followed by `healthy()`,
    /// or the timeout, or shutdown.
    pub(crate) fn wait(
        mut self,
        s: &Session,
        killed_at: f64,
        hooks_dir: &Path,
        timeout: Duration,
        shutdown: &Shutdown,
        mut healthy: impl FnMut() -> bool,
    ) -> Recovery {
        let deadline = Instant::now() + timeout;
        let mut last: Option<RestartRecord> = None;
        let mut restarted = false;
        let mut hook = None;
        while Instant::now() < deadline {
            let ours = self.new_records().into_iter();
            for r in ours.filter(|r| r.id == s.id && r.action != RestartAction::Drill) {
                if last.is_none() {
                    hook = read_hook(hooks_dir, &s.id)
                        .and_then(|h| Some((h.status, h.ts?)))
                        .filter(|(_, ts)| *ts >= killed_at && *ts <= r.ts + 1.0);
                }
                if r.action == RestartAction::Restarted {
                    restarted = true;
                } else if r.action == RestartAction::RestartFailed {
                    restarted = false;
                }
                last = Some(r);
            }
            if restarted && healthy() {
                let recovered = Ok(unix_now());
                return Recovery { recovered, hook };
            }
            if !shutdown.sleep(POLL) {
                break;
            }
        }
        let id = &s.id;
        let instead = match last {
            Some(r) => {
                let why = r.reason.map_or(String::new(), |why| format!(" ({why})"));
                format!("the daemon's last record for {id} is `{}`{why}", r.action)
            }
            None => format!("the daemon wrote no record about {id} since the kill; is it watching this fleet? (run `agent-deck-watchdog doctor`)"),
        };
        let recovered = Err(instead);
        Recovery { recovered, hook }
    }
}

/// Appends what `path` holds from `offset` on (bounded); how much it read.
fn read_from(path: &Path, offset: u64, into: &mut Vec<u8>) -> u64 {
    let mut read = || -> std::io::Result<usize> {
        let mut f = open_regular(path).map_err(std::io::Error::other)?;
        f.seek(SeekFrom::Start(offset))?;
        f.take(history::FILE_MAX).read_to_end(into)
    };
    read().map_or(0, |n| n as u64)
}

/// The drill's timeline as `history` prints it: every record about `s`
/// since the kill, with what woke the daemon after the first, and the
/// moment it read healthy again.
pub(crate) fn timeline(dir: &Path, s: &Session, killed_at: f64, outcome: &Recovery) -> String {
    let (all, _) = history::load(dir);
    let tz = jiff::tz::TimeZone::system();
    let titles = std::collections::HashMap::new();
    let mut out = String::new();
    let ours = select(&all, Some(&s.id), Some(killed_at - 0.001));
    for (i, r) in ours.into_iter().enumerate() {
        out.push_str(&format::line(r, &titles, &tz));
        out.push('\n');
        if i == 0 && matches!(r, Record::Restart(_)) {
            out.push_str(&match outcome.hook {
                Some((status, ts)) => format!(
                    "{}  woken by a hook: {status:?} (written {:.1} s after the kill)",
                    local_timestamp(ts),
                    ts - killed_at
                ),
                None => "  no hook after the kill: the safety poll found it".to_owned(),
            });
            out.push('\n');
        }
    }
    if let Ok(at) = outcome.recovered.as_ref().map(|at| local_timestamp(*at)) {
        out.push_str(&format!("{at}  healthy again (session show)\n"));
    }
    out
}
