//! `cargo bench`: the release binary against the simulated agent-deck it
//! carries (`sim`), measured end to end; see bench/README.md.
//!
//! a. CLI calls and wall time of a healthy `--once` tick (10 critical
//!    sessions, 2 profiles); b. hook rename → `session restart` latency over
//!    rounds of crash and revive, and what one simulated CLI call costs;
//!    c. peak memory after that and after a flood of hook renames for
//!    unknown ids, what the flood cost, a restart after it, and SIGTERM →
//!    exit; d. the same hook → restart latency with thread A scanning the
//!    hook directories (`WATCH_BACKEND=scan`, the fallback when inotify
//!    cannot be armed) and what the scan costs while idle: CPU, and system
//!    calls per second when `strace` is on `PATH`. Prints one table. Everything runs in a fresh temp dir with an
//!    empty environment (plus `PATH`), and every process it starts is
//!    stopped when it ends, on Ctrl-C too. Linux only (`/proc`, inotify).
//!
//! Settings (environment): `BENCH_ROUNDS` (20), `BENCH_FLOOD` (20000),
//! `BENCH_MIN_GAP` (1.5 s between two renames for the conductor),
//! `BENCH_KEEP=1` keeps the temp dir.

#[path = "fleet/probe.rs"]
mod probe;
#[path = "fleet/report.rs"]
mod report;
#[path = "fleet/setup.rs"]
mod setup;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_deck_sim as sim;

use probe::{interrupted, CallLog, Mem};
use report::{median, Figures, Flood, Latency, Scan, Tick};
use setup::{conductor, log_file, set_status, write_hook, Daemon, Install};

/// The binary measured, built by `cargo bench` with the bench profile.
const BIN: &str = env!("CARGO_BIN_EXE_agent-deck-watchdog");
/// The argument that makes the binary the simulated agent-deck.
const SIM_ENTRY: &str = "sim";
const CONDUCTOR: &str = "3f9c2a1b-1755891234";

/// The scan fallback's period (`SCAN_EVERY` in src/triggers/watch.rs), in seconds.
const SCAN_PERIOD_S: f64 = 0.25;

type Res<T> = Result<T, String>;

/// What `BENCH_*` asks for.
struct Settings {
    rounds: usize,
    flood: usize,
    min_gap: f64,
    keep: bool,
}

impl Settings {
    fn from_env() -> Res<Settings> {
        fn var<T: std::str::FromStr>(name: &str, default: T) -> Res<T> {
            match std::env::var(name) {
                Err(_) => Ok(default),
                Ok(v) => v
                    .parse()
                    .map_err(|_| format!("{name}={v:?} is not a number")),
            }
        }
        Ok(Settings {
            rounds: var("BENCH_ROUNDS", 20)?,
            flood: var("BENCH_FLOOD", 20_000)?,
            min_gap: var("BENCH_MIN_GAP", 1.5)?,
            keep: std::env::var("BENCH_KEEP").is_ok_and(|v| v == "1"),
        })
    }
}

/// a. Three `--once` runs against 10 critical sessions in two profiles.
fn healthy_tick(work: &Path) -> Res<Tick> {
    let mut tick = Tick::default();
    for run in 1..=3 {
        let fleet = (0..10)
            .map(|i| conductor(i, if i % 2 == 0 { "default" } else { "work" }))
            .collect();
        let inst = Install::new(work, &format!("once-{run}"), fleet)?;
        let started = Instant::now();
        let status = inst
            .command(&["--once"], &[])
            .stderr(log_file(&inst.daemon_log())?)
            .status()
            .map_err(|e| format!("cannot run {BIN}: {e}"))?;
        tick.wall.push(started.elapsed().as_secs_f64());
        if !status.success() {
            return Err(format!(
                "--once failed; see {}",
                inst.daemon_log().display()
            ));
        }
        let mut log = CallLog::new(&inst.log);
        log.poll()?;
        // The run's one `version` call comes before the tick: not its cost.
        let tick_calls: Vec<_> = log
            .calls
            .into_iter()
            .filter(|c| c.argv != ["version"])
            .collect();
        tick.calls.push(tick_calls.len());
        if run == 1 {
            tick.kinds = probe::kinds(&tick_calls);
        }
    }
    Ok(tick)
}

/// b. Rounds of: conductor to `error`, hook rename, wait for the
/// `session restart`, wait until the daemon is quiet again. Renames are at
/// least `min_gap` apart: the daemon checks one session's hook at most once
/// a second and defers a closer one, which is not what this measures. Each
/// gap is lengthened by a different part of `spread` seconds, so renames
/// fall at every phase of a periodic scan instead of the same one.
fn latency(
    inst: &Install,
    log: &mut CallLog,
    d: &mut Daemon,
    rounds: usize,
    min_gap: f64,
    spread: f64,
) -> Res<Latency> {
    let mut lat = Latency::default();
    let mut last_rename = 0.0;
    for round in 1..=rounds {
        d.alive()?;
        let offset = if spread > 0.0 {
            (round as f64 * 0.618_034 * spread) % spread
        } else {
            0.0
        };
        probe::sleep_until(last_rename + min_gap + offset)?;
        log.poll()?;
        let before = log.calls.len();
        set_status(&inst.state, CONDUCTOR, "error")?;
        let renamed = write_hook(&inst.hooks, CONDUCTOR, round)?;
        last_rename = renamed;
        let restart = log.wait_for(Duration::from_secs(10), before, |c| {
            probe::has(c, &["session", "restart"])
        })?;
        match restart {
            Some(i) => {
                lat.ms.push((log.calls[i].ts - renamed) * 1000.0);
                lat.before_restart.push(i - before);
            }
            None => {
                lat.missed += 1;
                eprintln!("round {round}: no `session restart` within 10 s");
                set_status(&inst.state, CONDUCTOR, "running")?;
            }
        }
        // The restart is followed by a verifying `show` and the continuity `send`.
        if !log.settle(Duration::from_secs(20))? {
            return Err(format!("the daemon did not go quiet after round {round}"));
        }
        lat.per_round.push(log.calls.len() - before);
    }
    Ok(lat)
}

/// c. `n` renames onto `<id>.json` for ids no profile lists, as fast as possible.
fn flood(inst: &Install, log: &mut CallLog, n: usize) -> Res<Flood> {
    log.poll()?;
    let before = log.calls.len();
    let started = Instant::now();
    for i in 0..n {
        write_hook(&inst.hooks, &format!("0badf00d-{}", 1_700_000_000 + i), i)?;
    }
    let written = started.elapsed();
    let quiet = log.settle(Duration::from_secs(60))?;
    let settled = started
        .elapsed()
        .saturating_sub(written + Duration::from_millis(500));
    Ok(Flood {
        n,
        write_s: written.as_secs_f64(),
        settle_s: quiet.then_some(settled.as_secs_f64()),
        calls: log.calls.len() - before,
        kinds: probe::kinds(&log.calls[before..]),
    })
}

/// Median wall time of one `session show` through the wrapper, 10 runs.
fn sim_call_ms(inst: &Install) -> Res<f64> {
    let mut ms = Vec::new();
    for _ in 0..10 {
        let started = Instant::now();
        let ok = Command::new(inst.wrapper())
            .args(["session", "show", CONDUCTOR, "--json"])
            .env(sim::STATE_ENV, &inst.state)
            .env_remove(sim::LOG_ENV)
            .stdout(Stdio::null())
            .status()
            .map_err(|e| format!("cannot run the simulator: {e}"))?
            .success();
        if !ok {
            return Err("the simulator failed a `session show`".into());
        }
        ms.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(median(&ms))
}

/// A daemon watching one conductor, started and polled once; `extra`
/// settings on top of the latency settings.
fn start_daemon(
    work: &Path,
    name: &str,
    extra: &[(&str, &str)],
) -> Res<(Install, Daemon, CallLog)> {
    let mut one = conductor(0, "default");
    one.id = CONDUCTOR.into();
    let inst = Install::new(work, name, vec![one])?;
    // RATE_LIMIT_MAX and CASCADE_THRESHOLD are raised so that neither the
    // per-session budget nor the burst guard stops 20 restarts in ~30 s.
    let mut settings = vec![
        ("SAFETY_POLL_INTERVAL_S", "30"),
        ("LIVENESS_CONFIRM_GAP_S", "0.05"),
        ("MIN_GLOBAL_RESTART_INTERVAL_S", "0"),
        ("POST_RESTART_COOLDOWN_S", "0"),
        ("RESTART_VERIFY_S", "0.2"),
        ("START_VERIFY_S", "0.2"),
        ("RATE_LIMIT_MAX", "1000"),
        ("CASCADE_THRESHOLD", "1000"),
    ];
    settings.extend_from_slice(extra);
    let child = inst
        .command(&[], &settings)
        .stderr(log_file(&inst.daemon_log())?)
        .spawn()
        .map_err(|e| format!("cannot start {BIN}: {e}"))?;
    let d = Daemon(child);
    let mut log = CallLog::new(&inst.log);
    let polled = |calls: &[probe::Call]| calls.iter().any(|c| probe::has(c, &["list", "--all"]));
    if !log.wait_quiet(Duration::from_secs(30), polled)? {
        return Err("the daemon never polled and went quiet".into());
    }
    Ok((inst, d, log))
}

/// d. The scan fallback: latency, then the idle cost over a few seconds.
fn scan_fallback(work: &Path, s: &Settings) -> Res<Scan> {
    let (inst, mut d, mut log) = start_daemon(work, "scan", &[("WATCH_BACKEND", "scan")])?;
    let rounds = s.rounds.min(10);
    eprintln!(
        "d. the scan fallback: hook rename -> session restart, {rounds} rounds, then idle..."
    );
    let lat = latency(&inst, &mut log, &mut d, rounds, s.min_gap, SCAN_PERIOD_S)?;
    std::thread::sleep(Duration::from_secs(1));
    let idle = Duration::from_secs(5);
    let cpu_before = probe::cpu_ticks(d.pid())?;
    let syscalls = probe::syscalls_per_second(d.pid(), idle);
    if syscalls.is_none() {
        std::thread::sleep(idle);
    }
    let cpu_ticks = probe::cpu_ticks(d.pid())? - cpu_before;
    d.stop();
    Ok(Scan {
        lat,
        idle_cpu_ms_per_min: cpu_ticks as f64 * 10.0 * 60.0 / idle.as_secs_f64(),
        syscalls,
    })
}

/// b. and c. against one daemon.
fn daemon_run(work: &Path, s: &Settings) -> Res<Figures> {
    let (inst, mut d, mut log) = start_daemon(work, "daemon", &[])?;
    eprintln!(
        "b. hook rename -> session restart latency, {} rounds...",
        s.rounds
    );
    let lat = latency(&inst, &mut log, &mut d, s.rounds, s.min_gap, 0.0)?;
    let sim_ms = sim_call_ms(&inst)?;
    eprintln!(
        "c. peak RSS after the latency run, then after {} hook renames for unknown ids...",
        s.flood
    );
    let mem_latency = Mem::of(d.pid())?;
    let flooded = flood(&inst, &mut log, s.flood)?;
    d.alive()?;
    let mem_flood = Mem::of(d.pid())?;
    // Still reacting after the flood? One more round.
    let after = latency(&inst, &mut log, &mut d, 1, 0.0, 0.0)?;
    let stop = d.stop();
    let drops = probe::queue_drops(&inst.daemon_log());
    Ok(Figures {
        tick: Tick::default(),
        lat,
        sim_ms,
        mem_latency,
        flood: flooded,
        mem_flood,
        after_flood_ms: after.ms.first().copied(),
        stop,
        drops,
        scan: Scan::default(),
    })
}

fn bench(work: &Path, s: &Settings) -> Res<Figures> {
    eprintln!("a. CLI calls per healthy tick (--once, 10 critical sessions, 2 profiles)...");
    let tick = healthy_tick(work)?;
    let figures = daemon_run(work, s)?;
    let scan = scan_fallback(work, s)?;
    Ok(Figures {
        tick,
        scan,
        ..figures
    })
}

fn main() {
    probe::stop_on_signals();
    let outcome = Settings::from_env().and_then(|s| {
        let work = tempfile::Builder::new()
            .prefix("agent-deck-watchdog-bench.")
            .tempdir()
            .map_err(|e| format!("cannot create a temp dir: {e}"))?;
        let result = bench(work.path(), &s);
        if s.keep {
            eprintln!("kept {}", work.keep().display());
        }
        result.map(|f| (f, s))
    });
    match outcome {
        Ok((figures, s)) => report::print(&figures, s.rounds),
        Err(_) if interrupted() => {
            eprintln!("bench: interrupted; the processes it started are stopped");
            std::process::exit(130);
        }
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(1);
        }
    }
}
