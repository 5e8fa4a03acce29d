//! `cargo bench --bench live`: our daemon and upstream's Python watchdog
//! side by side on real agent-deck fleets, each daemon on a sandbox fleet of
//! its own (the live suite's `Sandbox`: own `HOME`, own tmux server, no
//! network, `notify-daemon` beside it), both at their own defaults (5 s
//! poll, 60 s between restarts). See bench/README.md, section "live".
//!
//! 1. CLI calls per safety tick with C = 3, 10, 30 healthy critical
//!    sessions (`conductor-N`, group `conductor`, custom tool, quiet pane);
//! 2. wall and CPU time of one real call of each kind the daemons make;
//! 3. CPU seconds per hour of each daemon and of the CLI children it
//!    reaped, at C = 10 and 30 (both daemons run at once, one window);
//! 4. death → `session restart` call and death → healthy again, both
//!    daemons' rounds at the same moments, for six kinds: a custom-tool
//!    agent that exits, is `kill -9`ed, or loses its tmux session; a Claude
//!    conductor's tmux session killed; a Claude `SessionEnd` hook; and an
//!    agent that ignores SIGHUP losing its tmux session (the backstop's);
//! 5. `tmux kill-server` of a fleet of five (a cascade at defaults): the
//!    first restart call, the first and the last session healthy again.
//!
//! Needs `AGENT_DECK_BIN` (the real CLI; without it one line is printed and
//! the bench exits 0) and, for the Python column, `BENCH_PY_WATCHDOG` (the
//! path of upstream's `scripts/watchdog/watchdog.py`, run in place with
//! `python3`). `BENCH_ROUNDS` (3) rounds per latency kind (2 at most of the SIGHUP kind); `BENCH_QUICK=1`
//! shortens the CPU windows to 60 s, for trying the bench, not for figures.

#[path = "live/measure.rs"]
mod measure;

#[allow(dead_code)]
#[path = "../tests/support/mod.rs"]
mod support;

#[allow(dead_code)]
#[path = "../tests/live/fake_agent.rs"]
mod fake_agent;
#[allow(dead_code)]
#[path = "../tests/live/sandbox.rs"]
mod sandbox;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use measure::{median, worst, Cpu, Ticks};
use sandbox::{is_healthy, Agent, Sandbox, Tool};
use support::watchdog::Daemon;
use support::{kill, now, BIN};

/// Silence that separates two ticks' bursts of calls, in seconds.
const TICK_GAP: f64 = 1.0;
/// How long a round waits for a recovery before it counts a miss.
const ROUND_LIMIT: Duration = Duration::from_secs(120);
/// Between two latency rounds: past both daemons' 60 s global restart
/// spacing, counted from the end of the previous round's restart.
const ROUND_SPACING: Duration = Duration::from_secs(65);
/// Runs of each kind of CLI call timed one by one.
const CALL_RUNS: usize = 5;

static STOP: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();

/// Sleeps `d`, in slices, and unwinds on Ctrl-C / SIGTERM so every
/// sandbox is torn down by its `Drop`.
fn nap(d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until {
        interrupted();
        std::thread::sleep(Duration::from_millis(100).min(until - Instant::now()));
    }
}

fn interrupted() {
    if STOP.get().is_some_and(|s| s.load(Ordering::Relaxed)) {
        panic!("interrupted; tearing the sandboxes down");
    }
}

#[derive(Debug, Clone)]
enum Which {
    Rust,
    Python(PathBuf),
}

impl Which {
    fn spawn(&self, sb: &Sandbox) -> Daemon {
        match self {
            Which::Rust => sb.spawn_daemon(Path::new(BIN), &[], &[]),
            Which::Python(script) => sb.spawn_daemon(
                Path::new("python3"),
                &[script.to_str().expect("a UTF-8 path")],
                // Run it in place without writing bytecode next to it.
                &[("PYTHONDONTWRITEBYTECODE", "1")],
            ),
        }
    }
}

/// One daemon on its own fleet. Field order matters: the daemon is killed
/// before the sandbox tears its fleet down.
struct Run {
    daemon: Option<Daemon>,
    agents: Vec<Agent>,
    sb: Sandbox,
    which: Which,
}

impl Run {
    fn pid(&self) -> i32 {
        self.daemon.as_ref().expect("the daemon runs").pid()
    }

    fn check_alive(&mut self) {
        let d = self.daemon.as_mut().expect("the daemon runs");
        assert!(d.alive(), "{:?} exited:\n{}", self.which, d.stderr());
    }

    fn log_line(&self, needles: &[&str]) -> String {
        let text = self.daemon.as_ref().map(Daemon::stderr).unwrap_or_default();
        let home = self.sb.home.display().to_string();
        text.lines()
            .find(|l| needles.iter().any(|n| l.contains(n)))
            .map(|l| {
                let at = needles.iter().filter_map(|n| l.find(n)).min().unwrap_or(0);
                l[at..].replace(&home, "~")
            })
            .unwrap_or_else(|| "(no line in its log)".into())
    }
}

/// C conductors of the custom tool, quiet, started and healthy.
fn fleet(c: usize, which: Which) -> Run {
    let sb = Sandbox::new();
    let agents = (0..c)
        .map(|i| {
            interrupted();
            sb.launch(&format!("conductor-{i}"), "conductor", Tool::Custom, None)
        })
        .collect();
    Run {
        daemon: None,
        agents,
        sb,
        which,
    }
}

/// One fleet per daemon, built at the same time.
fn fleets(c: usize, daemons: &[Which]) -> Vec<Run> {
    let started = Instant::now();
    let runs = std::thread::scope(|s| {
        let hs: Vec<_> = daemons
            .iter()
            .map(|w| s.spawn(move || fleet(c, w.clone())))
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("fleet built"))
            .collect()
    });
    eprintln!(
        "live: {} fleet(s) of {c} built in {:.0} s",
        daemons.len(),
        started.elapsed().as_secs_f64()
    );
    runs
}

/// A steady window of one daemon: its ticks, CPU and calls.
#[derive(Debug, Clone, Default)]
struct Steady {
    ticks: Ticks,
    cpu: Cpu,
    secs: f64,
    calls: usize,
}

impl Steady {
    fn per_hour(&self, x: f64) -> f64 {
        x * 3600.0 / self.secs
    }
}

/// Starts every daemon, lets it settle, then measures `window`: every
/// daemon at the same time, so machine load falls on all of them alike.
fn steady(runs: &mut [Run], settle: Duration, window: Duration) -> Vec<Steady> {
    for r in runs.iter_mut() {
        r.daemon = Some(r.which.spawn(&r.sb));
    }
    nap(settle);
    let t0 = now();
    let cpu0: Vec<Cpu> = runs
        .iter()
        .map(|r| measure::cpu(r.pid()).unwrap())
        .collect();
    nap(window);
    let cpu1: Vec<Cpu> = runs
        .iter()
        .map(|r| measure::cpu(r.pid()).unwrap())
        .collect();
    let t1 = now();
    runs.iter_mut()
        .zip(cpu0.into_iter().zip(cpu1))
        .map(|(r, (a, b))| {
            r.check_alive();
            let all = measure::calls(&r.sb.calls_log);
            Steady {
                ticks: measure::ticks(&all, t0, t1, TICK_GAP),
                cpu: b - a,
                secs: t1 - t0,
                calls: all.iter().filter(|c| c.ts >= t0 && c.ts <= t1).count(),
            }
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// A custom-tool conductor's agent exits on its own (the fake quits
    /// with code 0 on SIGUSR1): no hook.
    Exit,
    /// `kill -9` of a custom-tool conductor's agent (its pane process).
    Kill9,
    /// `tmux kill-session` of a custom-tool conductor.
    KillSession,
    /// `tmux kill-session` of a Claude-family conductor (agent-deck's own
    /// post-start sync follows its restart).
    ClaudeKill,
    /// `agent-deck hook-handler` with `SessionEnd` for a Claude conductor.
    Hook,
    /// `tmux kill-session` of a custom-tool agent that ignores SIGHUP: its
    /// process lives on, so no kernel handle fires (the backstop's case).
    Sighup,
}

/// Every kind, in the order the rounds take them.
const FAULTS: [Fault; 6] = [
    Fault::Exit,
    Fault::Kill9,
    Fault::KillSession,
    Fault::ClaudeKill,
    Fault::Hook,
    Fault::Sighup,
];

/// The kinds of a single death without a hook the goals speak of.
const DEATHS: [Fault; 4] = [
    Fault::Exit,
    Fault::Kill9,
    Fault::KillSession,
    Fault::ClaudeKill,
];

impl Fault {
    fn label(self) -> &'static str {
        match self {
            Fault::Exit => "the agent exits",
            Fault::Kill9 => "`kill -9` of the agent",
            Fault::KillSession => "`kill-session`",
            Fault::ClaudeKill => "`kill-session`, Claude conductor",
            Fault::Hook => "SessionEnd hook",
            Fault::Sighup => "`kill-session`, agent ignoring SIGHUP",
        }
    }

    /// Rounds of this kind: fewer of the backstop's, which has no goal.
    fn rounds(self, rounds: usize) -> usize {
        if self == Fault::Sighup {
            rounds.min(2)
        } else {
            rounds
        }
    }

    /// The fault, on `a`; the pid of a process it leaves behind, if any.
    fn inject(self, sb: &Sandbox, a: &Agent) -> Option<i32> {
        match self {
            Fault::Exit => kill(sb.pane_pid(a), libc::SIGUSR1),
            Fault::Kill9 => kill(sb.pane_pid(a), libc::SIGKILL),
            Fault::KillSession | Fault::ClaudeKill => sb.kill_tmux_session(a),
            Fault::Hook => sb.hook(a, "SessionEnd"),
            Fault::Sighup => {
                let pid = sb.pane_pid(a);
                sb.kill_tmux_session(a);
                return Some(pid);
            }
        }
        None
    }
}

/// One daemon's rounds of one fault.
#[derive(Debug, Clone, Default)]
struct Rounds {
    /// Fault → the daemon's `session restart` (or `start`) call.
    restart: Vec<f64>,
    /// Fault → `session show` reads healthy again (after that call).
    healthy: Vec<f64>,
    /// Rounds without a recovery within `ROUND_LIMIT`.
    misses: usize,
}

impl Rounds {
    fn add(&mut self, other: &Rounds) {
        self.restart.extend(&other.restart);
        self.healthy.extend(&other.healthy);
        self.misses += other.misses;
    }
}

struct Pending<'a> {
    sb: &'a Sandbox,
    a: &'a Agent,
    t0: f64,
    restart: Option<f64>,
    done: bool,
}

/// When `a`'s first `session restart` (or `start`) call at or after `t0`
/// was made, from the call log.
fn restart_call(sb: &Sandbox, a: &Agent, t0: f64) -> Option<f64> {
    measure::calls(&sb.calls_log)
        .iter()
        .find(|c| c.ts >= t0 && (c.is_session("restart", &a.id) || c.is_session("start", &a.id)))
        .map(|c| c.ts)
}

/// The fleets' targets waited past the freshness window, then the fault
/// injected on each at once; the pending recoveries and what to clean up.
fn inject<'a>(fault: Fault, targets: &[(&'a Sandbox, &'a Agent)]) -> (Vec<Pending<'a>>, Vec<i32>) {
    for (sb, a) in targets {
        sb.age_past_freshness(a);
    }
    let mut left = Vec::new();
    let pend = targets
        .iter()
        .map(|&(sb, a)| {
            left.extend(fault.inject(sb, a));
            Pending {
                sb,
                a,
                t0: now(),
                restart: None,
                done: false,
            }
        })
        .collect();
    (pend, left)
}

/// Waits for every pending recovery; (restart, healthy) per fleet, `None`
/// for a miss. The call log is read every 20 ms; once the restart call is
/// in, `session show` runs back to back and the healthy time is when the
/// first show that reads healthy returned (so it is late by at most one
/// show, some 50–100 ms).
fn recover(pend: &mut [Pending], limit: Duration) -> Vec<Option<(f64, f64)>> {
    let mut out = vec![None; pend.len()];
    let started = Instant::now();
    while pend.iter().any(|p| !p.done) && started.elapsed() < limit {
        interrupted();
        for (i, p) in pend.iter_mut().enumerate().filter(|(_, p)| !p.done) {
            if p.restart.is_none() {
                p.restart = restart_call(p.sb, p.a, p.t0).map(|t| t - p.t0);
            }
            if let Some(restart) = p.restart {
                if is_healthy(&p.sb.status(p.a)) {
                    out[i] = Some((restart, now() - p.t0));
                    p.a.started_now();
                    p.done = true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    out
}

/// One round: the fault injected on every fleet at once, then each
/// recovery timed. Returns (restart, healthy) per fleet, `None` for a miss.
fn round(fault: Fault, targets: &[(&Sandbox, &Agent)]) -> Vec<Option<(f64, f64)>> {
    let (mut pend, left) = inject(fault, targets);
    let out = recover(&mut pend, ROUND_LIMIT);
    // An agent that outlived its session is ours to end.
    for pid in left {
        kill(pid, libc::SIGKILL);
    }
    out
}

/// The sessions of each fleet that one fault's rounds take turns on.
struct Targets {
    claude: Vec<Agent>,
    nohup: Vec<Agent>,
}

/// `rounds` rounds of each fault in turn, every daemon's fleet hit at the
/// same moment; the daemons are running. Rounds of a kind move from one
/// session to the next, so each death is of a session that ran a while.
fn latency(runs: &[Run], extra: &[Targets], rounds: usize) -> Vec<Vec<Rounds>> {
    let mut res = vec![vec![Rounds::default(); FAULTS.len()]; runs.len()];
    let mut next = Instant::now();
    let mut turn = 0;
    for i in 0..rounds {
        for (k, fault) in FAULTS.into_iter().enumerate() {
            if i >= fault.rounds(rounds) {
                continue;
            }
            nap(next.saturating_duration_since(Instant::now()));
            let targets: Vec<(&Sandbox, &Agent)> = runs
                .iter()
                .zip(extra)
                .map(|(r, t)| {
                    let pick = |v: &'_ [Agent]| turn % v.len();
                    let a = match fault {
                        Fault::Exit | Fault::Kill9 | Fault::KillSession => {
                            &r.agents[pick(&r.agents)]
                        }
                        Fault::ClaudeKill | Fault::Hook => &t.claude[pick(&t.claude)],
                        Fault::Sighup => &t.nohup[pick(&t.nohup)],
                    };
                    (&r.sb, a)
                })
                .collect();
            turn += 1;
            let got = round(fault, &targets);
            let mut line = format!("live: {fault:?} round {}:", i + 1);
            for (j, g) in got.into_iter().enumerate() {
                let r = &mut res[j][k];
                match g {
                    Some((restart, healthy)) => {
                        r.restart.push(restart);
                        r.healthy.push(healthy);
                        line += &format!(
                            " {} restart {:.0} ms healthy {healthy:.2} s;",
                            runs[j].which_name(),
                            restart * 1e3
                        );
                    }
                    None => {
                        r.misses += 1;
                        line += &format!(" {} MISS;", runs[j].which_name());
                    }
                }
            }
            eprintln!("{line}");
            next = Instant::now() + ROUND_SPACING;
        }
    }
    res
}

/// A killed tmux server: the first `session restart` call, the first
/// session healthy again and the last, from the kill.
#[derive(Debug, Clone, Default)]
struct ServerKill {
    first_restart: Option<f64>,
    first_healthy: Option<f64>,
    all_healthy: Option<f64>,
    sessions: usize,
}

/// How long a kill-server round may take: the cascade's settle (30 s)
/// plus the serial revives, 60 s apart, of [`SERVER_FLEET`] sessions.
const SERVER_LIMIT: Duration = Duration::from_secs(420);
/// The fleet a kill-server round takes down: as many as the cascade
/// threshold (5 at defaults), so it is a cascade.
const SERVER_FLEET: usize = 5;

/// `tmux kill-server` on every fleet at once, with the daemons running.
fn kill_server(runs: &[Run]) -> Vec<ServerKill> {
    for r in runs {
        for a in &r.agents {
            r.sb.age_past_freshness(a);
        }
    }
    let t0 = now();
    for r in runs {
        let out = r.sb.tmux(&["kill-server"]);
        assert!(out.status.success(), "kill-server: {out:?}");
    }
    let mut pend: Vec<Vec<Pending>> = runs
        .iter()
        .map(|r| {
            r.agents
                .iter()
                .map(|a| Pending {
                    sb: &r.sb,
                    a,
                    t0,
                    restart: None,
                    done: false,
                })
                .collect()
        })
        .collect();
    let mut flat: Vec<Pending> = pend.iter_mut().flat_map(std::mem::take).collect();
    let got = recover(&mut flat, SERVER_LIMIT);
    let mut at = 0;
    runs.iter()
        .map(|r| {
            let mine = &got[at..at + r.agents.len()];
            let firsts = &flat[at..at + r.agents.len()];
            at += r.agents.len();
            let healthy: Vec<f64> = mine.iter().flatten().map(|g| g.1).collect();
            ServerKill {
                first_restart: firsts
                    .iter()
                    .filter_map(|p| p.restart)
                    .min_by(f64::total_cmp),
                first_healthy: healthy.iter().copied().min_by(f64::total_cmp),
                all_healthy: (healthy.len() == mine.len()).then(|| worst(&healthy)),
                sessions: mine.len(),
            }
        })
        .collect()
}

impl Run {
    fn which_name(&self) -> &'static str {
        match self.which {
            Which::Rust => "rust",
            Which::Python(_) => "python",
        }
    }
}

/// Wall and CPU time of one real call of each kind, on an aged fleet with
/// no daemon running: (call, median wall s, median CPU s, failures).
fn call_costs(sb: &Sandbox, agents: &[Agent]) -> Vec<(String, f64, f64, usize)> {
    let kinds: [(&str, &[&str]); 5] = [
        ("list --all --json", &["list", "--all", "--json"]),
        (
            "-p default list --json",
            &["-p", "default", "list", "--json"],
        ),
        (
            "session show <id> --json",
            &["session", "show", "ID", "--json"],
        ),
        (
            "session output <id> --pane -q",
            &["session", "output", "ID", "--pane", "-q"],
        ),
        (
            "session restart <id> --json",
            &["session", "restart", "ID", "--json"],
        ),
    ];
    let out_file = sb.dir.path().join("call.out");
    kinds
        .iter()
        .map(|(name, argv)| {
            let (mut walls, mut cpus, mut fails) = (Vec::new(), Vec::new(), 0);
            for j in 0..CALL_RUNS {
                interrupted();
                let a = &agents[j % agents.len()];
                sb.age_past_freshness(a);
                let args: Vec<&str> = argv
                    .iter()
                    .map(|w| if *w == "ID" { a.id.as_str() } else { w })
                    .collect();
                let mut c = sb.command(&sb.real);
                c.args(&args)
                    .stdout(std::fs::File::create(&out_file).expect("call output"))
                    .stderr(Stdio::null());
                let (wall, cpu, ok) = measure::timed_call(c);
                let text = std::fs::read_to_string(&out_file).unwrap_or_default();
                let skipped =
                    text.contains("\"skipped\": true") || text.contains("\"skipped\":true");
                if !ok || skipped {
                    fails += 1;
                    eprintln!("live: {name} failed or was refused: {}", text.trim());
                }
                walls.push(wall);
                cpus.push(cpu);
            }
            (name.to_string(), median(&walls), median(&cpus), fails)
        })
        .collect()
}

/// What the bench asks of the environment.
struct Settings {
    rounds: usize,
    window: Duration,
    tick_window: Duration,
    daemons: Vec<Which>,
    py_missing: bool,
}

fn settings() -> Settings {
    let rounds = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(3);
    let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1");
    let mut daemons = vec![Which::Rust];
    let py = std::env::var_os("BENCH_PY_WATCHDOG").filter(|p| !p.is_empty());
    let py_missing = py.is_none();
    if let Some(p) = py {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "BENCH_PY_WATCHDOG={} is not a file",
            p.display()
        );
        daemons.push(Which::Python(p));
    }
    Settings {
        rounds,
        window: Duration::from_secs(if quick { 60 } else { 300 }),
        // Four ticks at the armed poll (30 s) once the pane watch covers the fleet.
        tick_window: Duration::from_secs(if quick { 65 } else { 125 }),
        daemons,
        py_missing,
    }
}

/// Everything measured, for the table.
struct Figures {
    ticks: Vec<(usize, Vec<Ticks>)>,
    steady: Vec<(usize, Vec<Steady>)>,
    latency: Vec<Vec<Rounds>>,
    server: Vec<ServerKill>,
    calls: Vec<(String, f64, f64, usize)>,
    hooks_dir: Vec<String>,
}

fn main() {
    if std::env::var_os("AGENT_DECK_BIN").is_none_or(|v| v.is_empty()) {
        println!("live bench: {}; skipped", sandbox::NEEDS);
        return;
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).expect("signal handler");
    }
    let _ = STOP.set(stop);
    let s = settings();
    let started = Instant::now();
    let settle = Duration::from_secs(12);
    let mut f = Figures {
        ticks: Vec::new(),
        steady: Vec::new(),
        latency: Vec::new(),
        server: Vec::new(),
        calls: Vec::new(),
        hooks_dir: Vec::new(),
    };

    // 1 at C = 3: a short window is enough to count ticks.
    {
        let mut runs = fleets(3, &s.daemons);
        let st = steady(&mut runs, settle, s.tick_window);
        f.ticks.push((3, st.into_iter().map(|x| x.ticks).collect()));
        f.hooks_dir = runs
            .iter()
            .map(|r| {
                r.log_line(&[
                    "watching hooks directory",
                    "inotify start on",
                    "hooks dir missing",
                ])
            })
            .collect();
    }
    // 1 and 3 at C = 10, then 4 on the same fleets, the daemons still running.
    {
        let mut runs = fleets(10, &s.daemons);
        let st = steady(&mut runs, settle, s.window);
        f.ticks
            .push((10, st.iter().map(|x| x.ticks.clone()).collect()));
        f.steady.push((10, st));
        let extra: Vec<Targets> = runs
            .iter()
            .map(|r| Targets {
                claude: (0..s.rounds)
                    .map(|i| {
                        let a = r.sb.launch(
                            &format!("conductor-claude-{i}"),
                            "conductor",
                            Tool::Claude,
                            None,
                        );
                        let hook = r.sb.hooks_dir().join(format!("{}.json", a.id));
                        let came = support::wait_until(Duration::from_secs(10), || hook.exists());
                        assert!(came, "the fake's SessionStart hook never arrived");
                        a
                    })
                    .collect(),
                nohup: (0..2)
                    .map(|i| {
                        let a = r.sb.add(
                            &format!("conductor-nohup-{i}"),
                            "conductor",
                            Tool::Custom,
                            None,
                        );
                        a.set_mode("nohup");
                        r.sb.start(&a);
                        a
                    })
                    .collect(),
            })
            .collect();
        f.latency = latency(&runs, &extra, s.rounds);
        for r in runs.iter_mut() {
            r.check_alive();
        }
    }
    // 1 and 3 at C = 30; then 2 on an aged fleet with the daemons stopped.
    {
        let mut runs = fleets(30, &s.daemons);
        let st = steady(&mut runs, settle, s.window);
        f.ticks
            .push((30, st.iter().map(|x| x.ticks.clone()).collect()));
        f.steady.push((30, st));
        for r in runs.iter_mut() {
            r.daemon = None;
        }
        f.calls = call_costs(&runs[0].sb, &runs[0].agents);
    }
    // A kill-server of a fleet as big as the cascade threshold.
    {
        let mut runs = fleets(SERVER_FLEET, &s.daemons);
        for r in runs.iter_mut() {
            r.daemon = Some(r.which.spawn(&r.sb));
        }
        nap(settle);
        f.server = kill_server(&runs);
        for r in runs.iter_mut() {
            r.check_alive();
        }
    }
    print_table(&s, &f, started.elapsed());
}

fn kinds_line(t: &Ticks) -> String {
    t.by_kind
        .iter()
        .map(|(k, n)| format!("{k} {:.2}", *n as f64 / t.ticks.max(1) as f64))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Median and worst of `v` (seconds), in seconds or, with `ms`, milliseconds.
fn stat(v: &[f64], misses: usize, ms: bool) -> String {
    if v.is_empty() {
        return format!("no recovery ({misses} misses)");
    }
    let miss = if misses > 0 {
        format!(", {misses} MISSED")
    } else {
        String::new()
    };
    let shown = |t: f64| {
        if ms {
            format!("{:.0} ms", t * 1e3)
        } else {
            format!("{t:.2} s")
        }
    };
    format!(
        "median {}, worst {} ({} rounds{miss})",
        shown(median(v)),
        shown(worst(v)),
        v.len() + misses
    )
}

fn print_table(s: &Settings, f: &Figures, took: Duration) {
    let version = {
        let out = std::process::Command::new(sandbox::agent_deck_bin())
            .arg("version")
            .env("AGENTDECK_SKIP_UPDATE_CHECK", "1")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        out
    };
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "live bench, {}, {version}, {cores} cores, {:.0} min{}",
        &jiff::Timestamp::now().to_string()[..10],
        took.as_secs_f64() / 60.0,
        if s.window < Duration::from_secs(300) {
            " (BENCH_QUICK: short CPU windows, not for figures)"
        } else {
            ""
        }
    );
    let py = if s.py_missing {
        "watchdog.py (not run: set BENCH_PY_WATCHDOG)"
    } else {
        "watchdog.py"
    };
    println!();
    println!("| figure | agent-deck-watchdog | {py} |");
    println!("|---|---|---|");
    let cell = |v: Vec<String>| {
        let mut v = v;
        v.resize(2, "-".into());
        v.join(" | ")
    };
    for (c, ts) in &f.ticks {
        println!(
            "| CLI calls per tick, C = {c} | {} |",
            cell(
                ts.iter()
                    .map(|t| format!(
                        "{:.2} ({}; {} ticks, one every {:.1} s)",
                        t.per_tick(),
                        kinds_line(t),
                        t.ticks,
                        t.period()
                    ))
                    .collect()
            )
        );
    }
    for (c, st) in &f.steady {
        let mins = st.first().map_or(0.0, |x| x.secs / 60.0);
        println!(
            "| CPU-s per hour, C = {c}: the daemon | {} |",
            cell(
                st.iter()
                    .map(|x| format!("{:.1}", x.per_hour(x.cpu.own)))
                    .collect()
            )
        );
        println!(
            "| CPU-s per hour, C = {c}: its CLI children | {} |",
            cell(
                st.iter()
                    .map(|x| format!("{:.1}", x.per_hour(x.cpu.children)))
                    .collect()
            )
        );
        println!(
            "| CLI calls per hour, C = {c} ({mins:.1} min window) | {} |",
            cell(
                st.iter()
                    .map(|x| format!("{:.0}", x.per_hour(x.calls as f64)))
                    .collect()
            )
        );
        println!(
            "| children CPU per call, C = {c} | {} |",
            cell(
                st.iter()
                    .map(|x| format!("{:.1} ms", 1e3 * x.cpu.children / x.calls.max(1) as f64))
                    .collect()
            )
        );
    }
    let stat = |pick: &dyn Fn(&[Rounds]) -> Rounds, healthy: bool| {
        cell(
            f.latency
                .iter()
                .map(|r| {
                    let r = pick(r);
                    if healthy {
                        stat(&r.healthy, r.misses, false)
                    } else {
                        stat(&r.restart, r.misses, true)
                    }
                })
                .collect(),
        )
    };
    let kind = |fault: Fault| {
        let k = FAULTS.iter().position(|x| *x == fault).expect("a kind");
        move |r: &[Rounds]| r[k].clone()
    };
    let all = |kinds: &'static [Fault]| {
        move |r: &[Rounds]| {
            let mut sum = Rounds::default();
            for (k, fault) in FAULTS.iter().enumerate() {
                if kinds.contains(fault) {
                    sum.add(&r[k]);
                }
            }
            sum
        }
    };
    for (what, healthy) in [("`session restart` call", false), ("healthy again", true)] {
        for fault in FAULTS {
            println!(
                "| {} → {what} | {} |",
                fault.label(),
                stat(&kind(fault), healthy)
            );
        }
        println!(
            "| a single death, no hook, all four kinds → {what} | {} |",
            stat(&all(&DEATHS), healthy)
        );
    }
    println!(
        "| a custom-tool conductor's death (three kinds) → healthy again | {} |",
        stat(&all(&DEATHS[..3]), true)
    );
    let ms = |v: Option<f64>| v.map_or_else(|| "none".to_owned(), |t| format!("{t:.1} s"));
    println!(
        "| `kill-server`, C = {SERVER_FLEET} (a cascade) → first restart call, first and last healthy | {} |",
        cell(
            f.server
                .iter()
                .map(|k| format!(
                    "{}, {}, all {}: {}",
                    ms(k.first_restart),
                    ms(k.first_healthy),
                    k.sessions,
                    ms(k.all_healthy)
                ))
                .collect()
        )
    );
    println!(
        "| hooks dir it watches (its log) | {} |",
        cell(f.hooks_dir.clone())
    );
    println!();
    println!("| one real CLI call, median of {CALL_RUNS}, C = 30 | wall ms | CPU ms |");
    println!("|---|---|---|");
    for (name, wall, cpu, fails) in &f.calls {
        let fails = if *fails > 0 {
            format!(" ({fails} failed or refused)")
        } else {
            String::new()
        };
        println!("| `{name}`{fails} | {:.0} | {:.0} |", wall * 1e3, cpu * 1e3);
    }
}
