//! `cargo bench --bench scale`: what a big fleet costs the daemon, measured.
//!
//! a. Parse time of a 5,000-session `-p P list --json` answer (as the
//!    built-in simulated agent-deck prints it) by the daemon's list reader,
//!    the answer held whole, against the floor: `serde_json` merely
//!    validating the same bytes (`IgnoredAny`). Each way is timed
//!    right after the floor in the same run, and its ratio is the median of
//!    those per-run ratios, so a noisy machine slows both sides alike. A
//!    `Value` tree of the bytes is shown for comparison.
//! b. Peak memory (`VmHWM`) of the release daemon watching one profile of
//!    5,000 and of 50,000 sessions (one conductor, half of the rest its
//!    children, two of them waiting, the others idle) through three safety
//!    polls, read from `/proc` (Linux only).
//!
//! Prints one table with the targets next to the figures. Everything runs in
//! a temp dir it removes, with an empty environment plus `PATH`, and the
//! daemon it starts is stopped when it ends. Settings (environment):
//! `SCALE_RUNS` (parse repetitions, 40), `SCALE_BASELINE=<binary>` also
//! measures that build's memory on the same fleets.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_deck_sim::{LOG_ENV as SIM_LOG_ENV, STATE_ENV as SIM_STATE_ENV};
use agent_deck_watchdog::harness::listing::{self, Shape};
use serde_json::{json, Value};

/// The binary measured, built by `cargo bench` with the bench profile.
const BIN: &str = env!("CARGO_BIN_EXE_agent-deck-watchdog");
/// The argument that makes the binary the simulated agent-deck.
const SIM_ENTRY: &str = "sim";
const CONDUCTOR: &str = "3f9c2a1b-1755891234";
const PROFILE: &str = "big";

type Res<T> = Result<T, String>;

fn main() {
    if let Err(e) = run() {
        eprintln!("scale bench: {e}");
        std::process::exit(1);
    }
}

fn run() -> Res<()> {
    let runs: usize = match std::env::var("SCALE_RUNS") {
        Ok(v) => v
            .parse()
            .map_err(|_| format!("SCALE_RUNS={v:?} is not a number"))?,
        Err(_) => 40,
    };
    let baseline = std::env::var_os("SCALE_BASELINE").map(PathBuf::from);
    let work = tempfile::tempdir().map_err(|e| format!("cannot make a temp dir: {e}"))?;
    let mut rows = Vec::new();

    let answer = Install::new(work.path(), "parse", 5_000)?.profile_answer()?;
    let parse = parse_times(&answer, runs)?;
    rows.push(Line::title(&format!(
        "a. parse a 5,000-session `-p P list --json` answer ({:.2} MiB), median of {runs}",
        mib(answer.len() as u64)
    )));
    rows.push(Line::new(
        "serde_json validating it (IgnoredAny): the floor",
        &format!("{:.2} ms", parse.floor),
        "",
    ));
    rows.push(Line::new(
        "the daemon's read of the whole answer",
        &format!(
            "{:.2} ms = {:.2}x the floor",
            parse.reader.ms, parse.reader.ratio
        ),
        "<= 3x",
    ));
    rows.push(Line::new(
        "the same, every row made an owned session + live state",
        &format!("{:.2} ms = {:.2}x", parse.owned.ms, parse.owned.ratio),
        "",
    ));
    rows.push(Line::new(
        "a Value tree of it (serde_json::Value)",
        &format!("{:.2} ms = {:.2}x", parse.tree.ms, parse.tree.ratio),
        "",
    ));

    rows.push(Line::title(
        "b. peak RSS (VmHWM) of the release daemon, one profile, 3 safety polls",
    ));
    for (n, target) in [(5_000usize, 8.0), (50_000, 48.0)] {
        let inst = Install::new(work.path(), &format!("mem-{n}"), n)?;
        let sizes = inst.answer_sizes()?;
        let mut measured = vec![(BIN.to_owned(), "this build")];
        if let Some(b) = &baseline {
            measured.push((b.display().to_string(), "baseline"));
        }
        for (bin, label) in measured {
            let hwm = peak_memory(&inst, Path::new(&bin))?;
            rows.push(Line::new(
                &format!(
                    "{n} sessions ({:.1} + {:.1} MiB of answers), {label}",
                    mib(sizes.0),
                    mib(sizes.1)
                ),
                &hwm.map_or("Linux only".into(), |kib| {
                    format!("{:.1} MiB", kib as f64 / 1024.0)
                }),
                if label == "this build" {
                    format!("<= {target:.0} MiB")
                } else {
                    String::new()
                }
                .as_str(),
            ));
        }
    }
    print_table(&rows);
    Ok(())
}

/// Median parse times in milliseconds, each with its median ratio to the
/// floor.
struct ParseTimes {
    floor: f64,
    /// As a safety poll reads it.
    reader: Timed,
    /// Every row made owned.
    owned: Timed,
    tree: Timed,
}

/// A median time, and the median of its ratios to the floor timed just
/// before it in the same run (so that a noisy machine slows both).
#[derive(Clone, Copy)]
struct Timed {
    ms: f64,
    ratio: f64,
}

fn parse_times(answer: &[u8], runs: usize) -> Res<ParseTimes> {
    let rows = parse_profile_list(answer)?;
    if rows != 5_000 {
        return Err(format!("the list reader read {rows} rows, not 5000"));
    }
    let keep: BTreeSet<String> = [CONDUCTOR.to_owned()].into();
    let floor = || {
        serde_json::from_slice::<serde::de::IgnoredAny>(answer)
            .map(drop)
            .map_err(|e| e.to_string())
    };
    let mut ways: Vec<Box<dyn Fn() -> Res<()> + '_>> = vec![
        Box::new(|| read_profile_list(answer, &keep).map(drop)),
        Box::new(|| parse_profile_list(answer).map(drop)),
        Box::new(|| {
            serde_json::from_slice::<Value>(answer)
                .map(drop)
                .map_err(|e| e.to_string())
        }),
    ];
    let (floors, timed) = interleaved(runs, &floor, &mut ways)?;
    Ok(ParseTimes {
        floor: floors,
        reader: timed[0],
        owned: timed[1],
        tree: timed[2],
    })
}

/// Times `floor` and then each of `ways`, `runs` times over, after two
/// rounds to warm up: the floor's median, and each way's [`Timed`].
fn interleaved(
    runs: usize,
    floor: &dyn Fn() -> Res<()>,
    ways: &mut [Box<dyn Fn() -> Res<()> + '_>],
) -> Res<(f64, Vec<Timed>)> {
    let time = |f: &dyn Fn() -> Res<()>| -> Res<f64> {
        let t = Instant::now();
        f()?;
        Ok(t.elapsed().as_secs_f64() * 1000.0)
    };
    let mut floors = Vec::new();
    let mut times = vec![Vec::new(); ways.len()];
    let mut ratios = vec![Vec::new(); ways.len()];
    for run in 0..runs.max(1) + 2 {
        let f = time(floor)?;
        for (i, way) in ways.iter().enumerate() {
            let t = time(way.as_ref())?;
            if run >= 2 {
                times[i].push(t);
                ratios[i].push(t / f);
            }
        }
        if run >= 2 {
            floors.push(f);
        }
    }
    let timed = times
        .iter_mut()
        .zip(&mut ratios)
        .map(|(t, r)| Timed {
            ms: median(t),
            ratio: median(r),
        })
        .collect();
    Ok((median(&mut floors), timed))
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Parses a `-p P list --json` answer and turns every row into the owned
/// session and live state: the number of rows.
fn parse_profile_list(answer: &[u8]) -> Res<usize> {
    let mut rows = Vec::new();
    listing::read(Shape::Profile, answer, &mut |r| {
        rows.push((r.session(), r.live()))
    })
    .map_err(|g| g.0)?;
    Ok(rows.len())
}

/// Parses the answer the way a safety poll reads it: the live state of the
/// sessions in `keep` made owned, the other rows dropped.
fn read_profile_list(answer: &[u8], keep: &BTreeSet<String>) -> Res<usize> {
    let mut live = BTreeMap::new();
    listing::read(Shape::Profile, answer, &mut |r| {
        if keep.contains(r.id.as_ref()) {
            live.insert(r.id.to_string(), r.live());
        }
    })
    .map_err(|g| g.0)?;
    Ok(live.len())
}

/// A simulated fleet of one profile: `n` sessions, the conductor among
/// them, half of the others its children (two of them waiting).
struct Install {
    dir: PathBuf,
    state: PathBuf,
    log: PathBuf,
}

impl Install {
    fn new(work: &Path, name: &str, n: usize) -> Res<Install> {
        let dir = work.join(name);
        for d in [dir.join("hooks"), dir.join("home")] {
            fs::create_dir_all(&d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        }
        let inst = Install {
            state: dir.join("state.json"),
            log: dir.join("calls.log"),
            dir,
        };
        let mut sessions: Vec<Value> = (1..n)
            .map(|i| {
                let mut s = json!({
                    "id": format!("{i:08x}-1755800000"),
                    "title": format!("worker-{i}"),
                    "group": "srv",
                    "profile": PROFILE,
                    "status": "idle",
                });
                if i % 2 == 0 {
                    s["parent_session_id"] = json!(CONDUCTOR);
                }
                // Two children waiting: the waiting patrol samples their panes.
                if i == 2 || i == 4 {
                    s["status"] = json!("waiting");
                }
                s
            })
            .collect();
        sessions.insert(
            n / 2,
            json!({"id": CONDUCTOR, "title": "conductor-ops", "group": "conductor",
                   "profile": PROFILE, "status": "running",
                   "channels": ["plugin:telegram@claude-plugins-official"]}),
        );
        let state = serde_json::to_vec(&json!({ "sessions": sessions }))
            .map_err(|e| format!("cannot encode the fleet: {e}"))?;
        fs::write(&inst.state, state)
            .map_err(|e| format!("cannot write {}: {e}", inst.state.display()))?;
        let wrapper = inst.wrapper();
        let script = format!("#!/bin/sh\nexec '{BIN}' {SIM_ENTRY} \"$@\"\n");
        write_executable(&wrapper, &script)?;
        Ok(inst)
    }

    fn wrapper(&self) -> PathBuf {
        self.dir.join("agent-deck")
    }

    /// The simulator's answer to `args`.
    fn answer(&self, args: &[&str]) -> Res<Vec<u8>> {
        let out = Command::new(self.wrapper())
            .args(args)
            .env(SIM_STATE_ENV, &self.state)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("cannot run the simulator: {e}"))?;
        if !out.status.success() {
            return Err(format!("the simulator failed {args:?}: {}", out.status));
        }
        Ok(out.stdout)
    }

    fn profile_answer(&self) -> Res<Vec<u8>> {
        self.answer(&["-p", PROFILE, "list", "--json"])
    }

    /// Bytes of `list --all --json` and of `-p P list --json`.
    fn answer_sizes(&self) -> Res<(u64, u64)> {
        let all = self.answer(&["list", "--all", "--json"])?.len() as u64;
        Ok((all, self.profile_answer()?.len() as u64))
    }

    /// The daemon `bin` against this fleet, polling every second.
    fn daemon(&self, bin: &Path) -> Command {
        let mut c = Command::new(bin);
        c.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.join("home"))
            .env("AGENT_DECK_ROOT", self.dir.join("root"))
            .env("AGENT_DECK_HOOKS_DIR", self.dir.join("hooks"))
            .env("AGENT_DECK_BIN", self.wrapper())
            .env(SIM_STATE_ENV, &self.state)
            .env(SIM_LOG_ENV, &self.log)
            .env("SAFETY_POLL_INTERVAL_S", "1")
            .env("SUBPROCESS_TIMEOUT_S", "60")
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        c
    }

    fn daemon_log(&self) -> PathBuf {
        self.dir.join("daemon.log")
    }

    /// `list --all` calls in the call log so far.
    fn polls(&self) -> usize {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"--all\""))
            .count()
    }
}

fn write_executable(path: &Path, text: &str) -> Res<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    f.write_all(text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Stops the daemon when dropped, whatever happened.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid; SIGTERM lets it shut down.
        unsafe {
            libc::kill(self.0.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// VmHWM in KiB of `bin` watching `inst` once three safety polls are done
/// (the fourth has begun), or `None` where `/proc` is not there to ask.
fn peak_memory(inst: &Install, bin: &Path) -> Res<Option<u64>> {
    if !cfg!(target_os = "linux") {
        return Ok(None);
    }
    let before = inst.polls();
    let log = fs::File::create(inst.daemon_log())
        .map_err(|e| format!("cannot create {}: {e}", inst.daemon_log().display()))?;
    let child = inst
        .daemon(bin)
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let mut daemon = Running(child);
    let deadline = Instant::now() + Duration::from_secs(120);
    while inst.polls() < before + 4 {
        let early = match daemon.0.try_wait() {
            Ok(Some(status)) => Some(format!("exited early: {status}")),
            _ => (Instant::now() > deadline).then(|| "never polled 4 times".to_owned()),
        };
        if let Some(why) = early {
            let said = fs::read_to_string(inst.daemon_log()).unwrap_or_default();
            let tail: Vec<&str> = said.lines().rev().take(10).collect();
            return Err(format!(
                "{} {why}; its last words:\n{}",
                bin.display(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = fs::read_to_string(format!("/proc/{}/status", daemon.0.id()))
        .map_err(|e| format!("cannot read the daemon's /proc status: {e}"))?;
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or("no VmHWM in /proc status")?;
    Ok(Some(kib))
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// One line of the table: a title, or what, figure and target.
struct Line {
    what: String,
    figure: String,
    target: String,
}

impl Line {
    fn new(what: &str, figure: &str, target: &str) -> Line {
        Line {
            what: what.into(),
            figure: figure.into(),
            target: target.into(),
        }
    }

    fn title(what: &str) -> Line {
        Line::new(what, "", "")
    }
}

fn print_table(rows: &[Line]) {
    let w = rows
        .iter()
        .filter(|r| !r.figure.is_empty())
        .map(|r| r.what.chars().count())
        .max()
        .unwrap_or(0);
    let f = rows
        .iter()
        .map(|r| r.figure.chars().count())
        .max()
        .unwrap_or(0);
    println!();
    for r in rows {
        if r.figure.is_empty() {
            println!("{}", r.what);
        } else {
            let target = if r.target.is_empty() {
                String::new()
            } else {
                format!("  (target {})", r.target)
            };
            println!("  {:<w$}  {:>f$}{target}", r.what, r.figure);
        }
    }
}
