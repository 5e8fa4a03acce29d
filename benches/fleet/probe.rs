//! What the bench reads off the running system: the simulator's call log
//! as it grows, the daemon's memory from `/proc`, its last log line, the
//! clock, and whether Ctrl-C (or SIGTERM) asked it to stop.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Deserialize;

use super::Res;

static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// From now on SIGINT and SIGTERM make every wait below fail, so the bench
/// unwinds and stops what it started.
pub(crate) fn stop_on_signals() {
    let flag = STOP.get_or_init(|| Arc::new(AtomicBool::new(false)));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, flag.clone()) {
            eprintln!("bench: cannot handle signal {sig} ({e}); Ctrl-C may leave files behind");
        }
    }
}

pub(crate) fn interrupted() -> bool {
    STOP.get().is_some_and(|f| f.load(Ordering::Relaxed))
}

fn pause(d: Duration) -> Res<()> {
    if interrupted() {
        return Err("interrupted".into());
    }
    std::thread::sleep(d);
    Ok(())
}

/// Wall-clock unix seconds, the call log's clock.
pub(crate) fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Sleeps until wall-clock time `t`.
pub(crate) fn sleep_until(t: f64) -> Res<()> {
    while now() < t {
        pause(Duration::from_secs_f64((t - now()).clamp(0.0, 0.05)))?;
    }
    Ok(())
}

/// One line of the simulator's call log.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Call {
    pub ts: f64,
    pub argv: Vec<String>,
}

/// Whether every one of `words` is in the call's argv.
pub(crate) fn has(c: &Call, words: &[&str]) -> bool {
    words.iter().all(|w| c.argv.iter().any(|a| a == w))
}

/// `list --all`, `list`, `session show`, `session output --pane`, …
fn kind(c: &Call) -> String {
    let argv = match c.argv.first().map(String::as_str) {
        Some("-p") => c.argv.get(2..).unwrap_or_default(),
        _ => &c.argv[..],
    };
    let words: Vec<&str> = argv
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let mut name = match words[..] {
        ["session", sub, ..] => format!("session {sub}"),
        [first, ..] => first.to_owned(),
        [] => "?".to_owned(),
    };
    if has(c, &["--all"]) {
        name += " --all";
    } else if name == "session output" && has(c, &["--pane"]) {
        name += " --pane";
    }
    name
}

/// How many calls of each kind.
pub(crate) fn kinds(calls: &[Call]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for c in calls {
        *out.entry(kind(c)).or_default() += 1;
    }
    out
}

/// How long without a CLI call counts as the daemon being quiet.
pub(crate) const QUIET: Duration = Duration::from_millis(500);

/// Follows the call log as the simulator appends to it.
pub(crate) struct CallLog {
    path: PathBuf,
    offset: u64,
    pub calls: Vec<Call>,
    changed: Instant,
}

impl CallLog {
    pub(crate) fn new(path: &Path) -> CallLog {
        CallLog {
            path: path.to_owned(),
            offset: 0,
            calls: Vec::new(),
            changed: Instant::now(),
        }
    }

    /// Reads the whole lines appended since the last poll.
    pub(crate) fn poll(&mut self) -> Res<()> {
        let mut text = Vec::new();
        match fs::File::open(&self.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(format!("cannot read {}: {e}", self.path.display())),
            Ok(mut f) => f
                .seek(SeekFrom::Start(self.offset))
                .and_then(|_| f.read_to_end(&mut text))
                .map_err(|e| format!("cannot read {}: {e}", self.path.display()))?,
        };
        let Some(end) = text.iter().rposition(|b| *b == b'\n') else {
            return Ok(());
        };
        self.offset += end as u64 + 1;
        for line in text[..end].split(|b| *b == b'\n') {
            let call = serde_json::from_slice(line)
                .map_err(|e| format!("{} has a bad line: {e}", self.path.display()))?;
            self.calls.push(call);
            self.changed = Instant::now();
        }
        Ok(())
    }

    /// Waits up to `timeout` for a call from index `from` on that matches;
    /// its index.
    pub(crate) fn wait_for(
        &mut self,
        timeout: Duration,
        from: usize,
        want: impl Fn(&Call) -> bool,
    ) -> Res<Option<usize>> {
        let deadline = Instant::now() + timeout;
        loop {
            self.poll()?;
            if let Some(i) = self.calls.iter().skip(from).position(&want) {
                return Ok(Some(from + i));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            pause(Duration::from_millis(5))?;
        }
    }

    /// Waits up to `timeout` until `need` holds for all calls so far and
    /// no call has come for [`QUIET`]; false when that never happened.
    pub(crate) fn wait_quiet(
        &mut self,
        timeout: Duration,
        need: impl Fn(&[Call]) -> bool,
    ) -> Res<bool> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            self.poll()?;
            if need(&self.calls) && self.changed.elapsed() >= QUIET {
                return Ok(true);
            }
            pause(Duration::from_millis(10))?;
        }
        Ok(false)
    }

    /// Waits up to `timeout` until no call has come for [`QUIET`].
    pub(crate) fn settle(&mut self, timeout: Duration) -> Res<bool> {
        self.wait_quiet(timeout, |_| true)
    }
}

/// The daemon's memory and handles, from `/proc/<pid>`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Mem {
    /// Peak resident set, KiB.
    pub hwm_kib: u64,
    pub rss_kib: u64,
    pub threads: u64,
    pub fds: usize,
}

impl Mem {
    pub(crate) fn of(pid: u32) -> Res<Mem> {
        let status = fs::read_to_string(format!("/proc/{pid}/status"))
            .map_err(|e| format!("cannot read /proc/{pid}/status: {e}"))?;
        let field = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        };
        let fds = fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
        Ok(Mem {
            hwm_kib: field("VmHWM"),
            rss_kib: field("VmRSS"),
            threads: field("Threads"),
            fds,
        })
    }
}

/// The `<d>` of the daemon's last "…, <d> queue drops" line.
pub(crate) fn queue_drops(log: &Path) -> Option<u64> {
    let text = fs::read_to_string(log).ok()?;
    let at = text.rfind(" queue drops")?;
    text[..at].rsplit([' ', ',']).next()?.parse().ok()
}

/// User + system CPU of `pid` so far, in clock ticks (1/100 s on Linux).
pub(crate) fn cpu_ticks(pid: u32) -> Res<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("cannot read /proc/{pid}/stat: {e}"))?;
    let fields: Vec<&str> = stat
        .rsplit_once(") ")
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of stat, 11 and 12 after the name.
    Ok(tick(11) + tick(12))
}

/// System calls a second of every thread of `pid` over `span`, counted by
/// `strace -c -f`; None when strace is missing or cannot attach.
pub(crate) fn syscalls_per_second(pid: u32, span: Duration) -> Option<f64> {
    let out = std::process::Command::new("timeout")
        .args(["-s", "INT", &format!("{}", span.as_secs_f64())])
        .args(["strace", "-c", "-f", "-p", &pid.to_string()])
        .stdout(std::process::Stdio::null())
        .output()
        .ok()?;
    // The summary's last line: "100.00 <secs> <usecs/call> <calls> <errors> total".
    let text = String::from_utf8_lossy(&out.stderr);
    let total = text
        .lines()
        .rev()
        .find(|l| l.trim_end().ends_with("total"))?;
    let calls: f64 = total.split_whitespace().nth(3)?.parse().ok()?;
    Some(calls / span.as_secs_f64())
}
