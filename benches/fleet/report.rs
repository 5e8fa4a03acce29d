//! The bench's figures and the table they are printed as.

use std::collections::BTreeMap;
use std::time::Duration;

use super::probe::Mem;

/// a. Healthy `--once` ticks.
#[derive(Debug, Default)]
pub(crate) struct Tick {
    pub calls: Vec<usize>,
    pub kinds: BTreeMap<String, usize>,
    /// Seconds per run.
    pub wall: Vec<f64>,
}

/// b. Crash-and-revive rounds.
#[derive(Debug, Default)]
pub(crate) struct Latency {
    /// Hook rename → `session restart`, per round that saw one.
    pub ms: Vec<f64>,
    pub missed: usize,
    pub per_round: Vec<usize>,
    pub before_restart: Vec<usize>,
}

/// c. The hook flood.
#[derive(Debug, Default)]
pub(crate) struct Flood {
    pub n: usize,
    pub write_s: f64,
    /// None: the daemon was not quiet 60 s later.
    pub settle_s: Option<f64>,
    pub calls: usize,
    pub kinds: BTreeMap<String, usize>,
}

/// d. The scan fallback (`WATCH_BACKEND=scan`).
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub lat: Latency,
    pub idle_cpu_ms_per_min: f64,
    /// None: `strace` is not on `PATH` (or may not attach).
    pub syscalls: Option<f64>,
}

#[derive(Debug, Default)]
pub(crate) struct Figures {
    pub tick: Tick,
    pub lat: Latency,
    /// One simulated CLI call (a process start).
    pub sim_ms: f64,
    pub mem_latency: Mem,
    pub flood: Flood,
    pub mem_flood: Mem,
    pub after_flood_ms: Option<f64>,
    /// None: not within 5 s.
    pub stop: Option<Duration>,
    pub drops: Option<u64>,
    pub scan: Scan,
}

pub(crate) fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn joined(kinds: &BTreeMap<String, usize>) -> String {
    let parts: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
    parts.join(", ")
}

fn mem(m: &Mem) -> String {
    format!(
        "{:.1} MiB (RSS {:.1} MiB, {} threads, {} fds)",
        m.hwm_kib as f64 / 1024.0,
        m.rss_kib as f64 / 1024.0,
        m.threads,
        m.fds
    )
}

fn counts(xs: &[usize]) -> Vec<f64> {
    xs.iter().map(|&x| x as f64).collect()
}

/// Median, worst and best of a latency run.
fn latency_text(ms: &[f64]) -> String {
    if ms.is_empty() {
        return "no restart seen".into();
    }
    let worst = ms.iter().copied().fold(f64::NAN, f64::max);
    let best = ms.iter().copied().fold(f64::NAN, f64::min);
    format!(
        "median {:.0} ms, worst {worst:.0} ms, best {best:.0} ms ({} rounds)",
        median(ms),
        ms.len()
    )
}

pub(crate) fn print(f: &Figures, rounds: usize) {
    let calls: Vec<String> = f.tick.calls.iter().map(usize::to_string).collect();
    let fl = &f.flood;
    let rows = [
        (
            "healthy tick, 10 critical sessions, 2 profiles".to_owned(),
            format!("{} CLI calls (expect 3)", calls.join("/")),
        ),
        ("  calls by kind".into(), joined(&f.tick.kinds)),
        (
            "  --once wall time".into(),
            format!("{:.0} ms median of 3", median(&f.tick.wall) * 1000.0),
        ),
        (
            format!("hook rename -> `session restart`, {rounds} rounds"),
            latency_text(&f.lat.ms),
        ),
        (
            "  rounds without a restart".into(),
            f.lat.missed.to_string(),
        ),
        (
            "  CLI calls per round".into(),
            format!(
                "median {}, {} of them before the restart",
                median(&counts(&f.lat.per_round)),
                median(&counts(&f.lat.before_restart))
            ),
        ),
        (
            "  one simulated CLI call (process start)".into(),
            format!("{:.1} ms median of 10", f.sim_ms),
        ),
        (
            "peak RSS (VmHWM) after the latency run".into(),
            mem(&f.mem_latency),
        ),
        (
            format!("flood: {} renames for unknown ids", fl.n),
            match fl.settle_s {
                Some(s) => format!(
                    "written in {:.1} s, daemon quiet {s:.1} s later",
                    fl.write_s
                ),
                None => format!(
                    "written in {:.1} s, daemon not quiet 60 s later",
                    fl.write_s
                ),
            },
        ),
        (
            "  CLI calls caused by the flood".into(),
            format!("{} ({})", fl.calls, joined(&fl.kinds)),
        ),
        (
            "  queue drops reported at shutdown".into(),
            f.drops.map_or("?".into(), |d| d.to_string()),
        ),
        ("peak RSS (VmHWM) after the flood".into(), mem(&f.mem_flood)),
        (
            "hook -> restart after the flood".into(),
            f.after_flood_ms
                .map_or("no restart seen".into(), |ms| format!("{ms:.0} ms")),
        ),
        (
            "scan fallback: hook -> session restart".into(),
            latency_text(&f.scan.lat.ms),
        ),
        (
            "  idle cost of the scan".into(),
            format!(
                "{:.0} ms CPU a minute; {}",
                f.scan.idle_cpu_ms_per_min,
                f.scan
                    .syscalls
                    .map_or("system calls: strace not available".into(), |n| {
                        format!("{n:.0} system calls a second (strace -c)")
                    })
            ),
        ),
        (
            "SIGTERM -> exit".into(),
            f.stop.map_or("not within 5 s".into(), |d| {
                format!("{:.2} s", d.as_secs_f64())
            }),
        ),
    ];
    let width = rows.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
    let today = jiff::Timestamp::now().to_string();
    println!();
    println!(
        "agent-deck-watchdog bench (simulated agent-deck; {})",
        &today[..10]
    );
    println!("{}", "-".repeat(width + 2 + 50));
    for (name, value) in rows {
        println!("{name:width$}  {value}");
    }
}
