//! What the live bench reads off processes and logs: a daemon's CPU time
//! and that of the children it reaped (`/proc/<pid>/stat`), the wall and
//! CPU time of one CLI call (`wait4`'s rusage), the wrapper's call log
//! parsed and split into ticks, and the small statistics of the table.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// CPU seconds of a process: its own (every thread) and its reaped
/// children's (`cutime + cstime`, which also holds their own reaped
/// children: the wrapper's `date`, agent-deck's `tmux` clients).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cpu {
    pub own: f64,
    pub children: f64,
}

impl std::ops::Sub for Cpu {
    type Output = Cpu;
    fn sub(self, o: Cpu) -> Cpu {
        Cpu {
            own: self.own - o.own,
            children: self.children - o.children,
        }
    }
}

/// `utime stime cutime cstime` of `pid`, in seconds.
pub(crate) fn cpu(pid: i32) -> Option<Cpu> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which may hold spaces and parens.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    // rest[0] is field 3 (state); utime is field 14.
    let tick = clock_tick();
    Some(Cpu {
        own: (f.get(11)? + f.get(12)?) / tick,
        children: (f.get(13)? + f.get(14)?) / tick,
    })
}

fn clock_tick() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// One CLI call run to completion: wall seconds, CPU seconds (user +
/// system of the call and of everything it reaped), and whether it exited 0.
pub(crate) fn timed_call(mut cmd: Command) -> (f64, f64, bool) {
    let started = Instant::now();
    let child = cmd.spawn().expect("spawn a CLI call");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our own unreaped child; both pointers are to live locals.
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    let wall = started.elapsed().as_secs_f64();
    // Reaped here, so the Child handle must not wait again (it does not on drop).
    drop(child);
    assert_eq!(got, pid, "wait4 failed");
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let cpu = secs(ru.ru_utime) + secs(ru.ru_stime);
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    (wall, cpu, ok)
}

/// One line of the wrapper's `calls.log`: `<ts> <argv…>`.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub ts: f64,
    pub argv: Vec<String>,
}

pub(crate) fn calls(log: &Path) -> Vec<Call> {
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let ts = w.next()?.parse().ok()?;
            Some(Call {
                ts,
                argv: w.map(str::to_string).collect(),
            })
        })
        .collect()
}

impl Call {
    /// The argv without a leading `-p P`.
    fn verb(&self) -> &[String] {
        match self.argv.first().map(String::as_str) {
            Some("-p") => self.argv.get(2..).unwrap_or_default(),
            _ => &self.argv,
        }
    }

    /// What kind of call it is, as the table names it.
    pub(crate) fn kind(&self) -> String {
        let v = self.verb();
        match v.first().map(String::as_str) {
            Some("list") if v.iter().any(|a| a == "--all") => "list --all".into(),
            Some("list") => "-p P list".into(),
            Some("session") => format!("session {}", v.get(1).map_or("?", |s| s.as_str())),
            Some(other) => other.to_string(),
            None => "?".into(),
        }
    }

    /// Whether it is `session <verb> <id>`.
    pub(crate) fn is_session(&self, verb: &str, id: &str) -> bool {
        let v = self.verb();
        v.len() >= 3 && v[0] == "session" && v[1] == verb && v[2] == id
    }
}

/// The calls of a steady window split into ticks.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ticks {
    /// Whole ticks counted (the first and last burst of the window dropped).
    pub ticks: usize,
    pub calls: usize,
    /// Calls of each kind in those ticks.
    pub by_kind: BTreeMap<String, usize>,
    /// Seconds from the first counted tick's start to the next tick's start.
    pub span: f64,
}

impl Ticks {
    pub(crate) fn per_tick(&self) -> f64 {
        self.calls as f64 / self.ticks.max(1) as f64
    }

    /// Mean seconds from one tick's start to the next.
    pub(crate) fn period(&self) -> f64 {
        self.span / self.ticks.max(1) as f64
    }
}

/// Splits the calls made in `[from, to]` into bursts separated by at least
/// `gap` seconds of silence; each burst is one tick (both daemons poll
/// every 5 s and make a tick's calls back to back). The first and the last
/// burst may be cut by the window's edges and are not counted.
pub(crate) fn ticks(all: &[Call], from: f64, to: f64, gap: f64) -> Ticks {
    let inside: Vec<&Call> = all.iter().filter(|c| c.ts >= from && c.ts <= to).collect();
    let mut bursts: Vec<Vec<&Call>> = Vec::new();
    for c in inside {
        match bursts.last_mut() {
            Some(b) if c.ts - b.last().map_or(f64::MIN, |l| l.ts) < gap => b.push(c),
            _ => bursts.push(vec![c]),
        }
    }
    let mut t = Ticks::default();
    if bursts.len() < 3 {
        return t;
    }
    let whole = &bursts[1..bursts.len() - 1];
    t.ticks = whole.len();
    t.span = bursts[bursts.len() - 1][0].ts - whole[0][0].ts;
    for c in whole.iter().flatten() {
        t.calls += 1;
        *t.by_kind.entry(c.kind()).or_default() += 1;
    }
    t
}

pub(crate) fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

pub(crate) fn worst(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NAN, f64::max)
}
