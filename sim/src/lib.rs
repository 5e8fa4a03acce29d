//! A simulated agent-deck CLI: the one test double of agent-deck, used by
//! agent-deck-watchdog's demo, black-box tests and benchmark. The watchdog's
//! binary serves it as `agent-deck-watchdog sim`; this crate imports nothing
//! of the daemon's, so what it prints is checked by the daemon's parsers,
//! not written with them (those checks are the daemon crate's tests).
//!
//! `sim <args…>` answers the commands the watchdog uses (`list`, `session
//! show|restart|start|send|output`, `remove`, `usage`, `version`) as the real CLI does
//! (`agent-deck-contract.md`), from a JSON state file the caller controls
//! (`state.rs`), and logs one JSON line per call. It must not touch tmux, a
//! real agent-deck, or any file but those (the state's lock and temp files,
//! and hook files it only reads), and it must never panic on a bad state
//! file or command line: that is exit 1 or 2 with `Error: …`, like the CLI.
//!
//! The simulator's own commands: `sim crash <id>` (not logged) kills the
//! tmux session of the session with that exact id (`tmux_alive: false`;
//! exit 2 when there is none); `sim tmux …` is the simulator as tmux
//! (`tmux.rs`); `sim pane-host` and `sim pane` (not logged) keep one real
//! process per live session's pane (`pane_host.rs`).
//!
//! The state's `version` is the release the answers follow (absent: 1.14.0;
//! `release.rs`). Not modelled: the real `show` and `-p P list --json` write
//! and delete auth-hold sidecars; here they never write the state.
//!
//! Environment: `STATE_ENV` names the state file (required), `LOG_ENV` the
//! call log (lines `{"ts":<unix secs>,"argv":[…],"pid":N}`), `PROFILE_ENV`
//! the profile when no `-p` is given; under `read_hooks: true` hook files
//! are read from `HOOKS_ENV`, else from where agent-deck keeps them.
//!
//! `scenario.rs` is the demo's fleet: the data of its scenario (the runner,
//! which drives the daemon, is the daemon's `demo` command).

mod actions;
mod args;
mod fault;
mod file;
mod full_context;
mod hooks;
mod list;
mod live;
mod lookup;
mod newer_keys;
mod pane_host;
mod reconcile;
mod release;
mod reply;
pub mod scenario;
mod state;
mod store_roots;
#[cfg(test)]
mod tests;
mod tmux;

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

#[cfg(test)]
use file::load;
pub use file::transact;
use live::Moment;
pub use release::Release;
use reply::Reply;
pub use state::{SimSession, SimState};

// The environment the simulator reads, as the module doc describes it.
pub const STATE_ENV: &str = "FAKE_AGENT_DECK_STATE";
pub const LOG_ENV: &str = "FAKE_AGENT_DECK_LOG";
pub const PROFILE_ENV: &str = "AGENTDECK_PROFILE";
pub const HOOKS_ENV: &str = "AGENT_DECK_HOOKS_DIR";
/// The release `agent-deck version` names unless the state says otherwise.
pub const VERSION: &str = "1.14.0";
/// The newest release whose answers the simulator knows (the CHANGELOG at
/// upstream commit 20e4f588 and the newer source the drift sheet names).
pub const NEWEST: &str = "1.16.26";
// The simulator's own subcommands, and the argument that makes the binary
// the simulator.
pub const PANE_HOST_COMMAND: &str = "pane-host";
pub const PANE_COMMAND: &str = "pane";
pub const ENTRY: &str = "sim";

/// What the simulator reads from its environment.
#[derive(Debug, Clone, Default)]
pub struct SimEnv {
    pub state: Option<PathBuf>,
    pub log: Option<PathBuf>,
    /// "" when unset.
    pub profile: String,
    /// Where hook files are, resolved like agent-deck (see `hooks.rs`).
    pub hooks: Option<PathBuf>,
    /// `TMUX` is set: the caller is a client of another tmux server.
    pub tmux_client: bool,
    /// `TMUX_TMPDIR`: where tmux keeps its sockets (None: `/tmp`).
    pub tmux_tmpdir: Option<PathBuf>,
}

impl SimEnv {
    /// From the process environment; an empty variable counts as unset.
    pub fn from_process() -> SimEnv {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        SimEnv {
            state: var(STATE_ENV).map(PathBuf::from),
            log: var(LOG_ENV).map(PathBuf::from),
            profile: var(PROFILE_ENV)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
            // As agent-deck resolves it, unless the tests name it.
            hooks: var(HOOKS_ENV).map(PathBuf::from).or_else(|| {
                let home = PathBuf::from(var("HOME")?);
                let xdg = var("XDG_DATA_HOME").and_then(|x| x.into_string().ok());
                let legacy_root = home.join(".agent-deck");
                Some(hooks::resolve_dir(&home, xdg.as_deref(), &legacy_root))
            }),
            tmux_client: var("TMUX").is_some(),
            tmux_tmpdir: var("TMUX_TMPDIR").map(PathBuf::from),
        }
    }
}

/// Runs one simulated agent-deck invocation; returns the exit code.
pub fn main(args: &[String]) -> i32 {
    let (mut out, mut err) = (io::stdout().lock(), io::stderr().lock());
    let code = run(args, &SimEnv::from_process(), &mut out, &mut err);
    let _ = out.flush();
    let _ = err.flush();
    code
}

pub fn run(args: &[String], env: &SimEnv, out: &mut impl Write, err: &mut impl Write) -> i32 {
    // The store WARNING (`store_roots.rs`) an agent-deck call prints first
    // on stderr, whatever its answer.
    let mut warning = None;
    let mut reply = match args {
        // Not agent-deck commands: not logged as calls.
        [first, rest @ ..] if first == "crash" => crash(rest, env),
        [first, rest @ ..] if first == PANE_HOST_COMMAND => pane_host::run(rest, env),
        [first, rest @ ..] if first == PANE_COMMAND => pane_host::pane(rest),
        _ => {
            if let Some(log) = &env.log {
                log_call(log, args, err);
            }
            match args {
                [first, rest @ ..] if first == "tmux" => tmux::tmux(rest, env),
                _ => answer(args, env, || drop(out.flush()), &mut warning),
            }
        }
    }
    .unwrap_or_else(|reply| reply);
    reply.err.insert_str(0, &warning.unwrap_or_default());
    let _ = out.write_all(reply.out.as_bytes());
    let _ = err.write_all(reply.err.as_bytes());
    reply.code
}

/// Parses, applies a fault or delay outside the lock, and answers under it;
/// `warning` is set to the stderr line the state's store layout prints.
fn answer(
    args: &[String],
    env: &SimEnv,
    flush: impl FnOnce(),
    warning: &mut Option<String>,
) -> Result<Reply, Reply> {
    let path = state_path(env)?;
    if args == ["version"] {
        return locked(path, |st| {
            *warning = store_roots::warning(st);
            let v = st.version.as_deref().unwrap_or(VERSION);
            Reply::out(0, format!("Agent Deck v{v}\n"))
        });
    }
    let usage = |a: &[String]| matches!(a, [u, j] if u == "usage" && j == "--json");
    if usage(args) || matches!(args, [p, _, rest @ ..] if p == "-p" && usage(rest)) {
        return locked(path, |st| {
            *warning = store_roots::warning(st);
            if st.release() < Release::USAGE_JSON {
                // 1.14.0: the word falls through to the TUI (measured).
                let tui = "\u{1b}[?1049h\u{1b}[?25lError: error creating cancelreader: bad file descriptor\n";
                return Reply::out(1, tui.into());
            }
            let report = st
                .usage
                .clone()
                .unwrap_or_else(|| serde_json::json!({"providers": []}));
            Reply::out(0, format!("{report}\n"))
        });
    }
    let call = args::parse(args, &env.profile)?;
    let key = serde_json::json!(call.kind);
    let kind = key.as_str().unwrap_or_default();
    let moment = |st: &SimState| Moment {
        now: unix_now(),
        hooks: env.hooks.clone().filter(|_| st.read_hooks),
        foreign: env.tmux_client.then(|| st.release()),
    };
    // Without a fault or a delay the first look answers; with one, the
    // answer comes from the state as it is after the sleep.
    let mut first = None;
    let (fault, delay) = locked(path, |st| {
        *warning = store_roots::warning(st);
        args::defined_in(&call, st.release(), args)?;
        let (fault, delay) = (fault::take(st, kind), fault::delay(st, kind));
        if fault.is_none() && delay <= 0.0 {
            first = Some(actions::execute(&call, st, &moment(st)));
        }
        Ok((fault, delay))
    })??;
    if let Some(reply) = first {
        return Ok(reply);
    }
    fault::sleep(delay);
    if let Some(reply) = fault.and_then(|f| fault::apply(&f, call.kind, call.on("json"), flush)) {
        return Ok(reply);
    }
    locked(path, |st| actions::execute(&call, st, &moment(st)))
}

/// `crash <id>` (see the module doc): exact id, any profile.
fn crash(args: &[String], env: &SimEnv) -> Result<Reply, Reply> {
    let path = state_path(env)?;
    let [id] = args else {
        return Err(Reply::err(2, "Usage: crash <session id>\n".into()));
    };
    if locked(path, |st| kill_first(st, |s| s.id == *id))? {
        Ok(Reply::out(0, format!("crashed {id}\n")))
    } else {
        Err(Reply::err(2, format!("Error: no session with id '{id}'\n")))
    }
}

/// Crashes the first session `pick` chooses (`tmux_alive: false`); false if none.
fn kill_first(st: &mut SimState, pick: impl Fn(&SimSession) -> bool) -> bool {
    let found = st.sessions.iter_mut().find(|s| pick(s));
    found.map(|s| s.tmux_alive = Some(false)).is_some()
}

fn state_path(env: &SimEnv) -> Result<&Path, Reply> {
    let unset = || Reply::err(1, format!("Error: {STATE_ENV} not set\n"));
    env.state.as_deref().ok_or_else(unset)
}

/// A read-modify-write of the state; failing, `Error: …` with exit 1.
fn locked<T>(path: &Path, f: impl FnOnce(&mut SimState) -> T) -> Result<T, Reply> {
    transact(path, f).map_err(|e| Reply::err(1, format!("Error: {e}\n")))
}

/// Now, in unix seconds.
fn unix_now() -> f64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0.0, |d| d.as_secs_f64())
}

#[derive(Serialize)]
struct LogLine<'a> {
    ts: f64,
    argv: &'a [String],
    pid: u32,
}

/// Appends the call to the log; a log that cannot be written is a warning.
fn log_call(path: &Path, args: &[String], err: &mut impl Write) {
    let line = LogLine {
        ts: unix_now(),
        argv: args,
        pid: std::process::id(),
    };
    let text = serde_json::to_string(&line).unwrap_or_default() + "\n";
    // O_APPEND and one write, so concurrent calls never interleave a line.
    let appended = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = appended {
        let shown = path.display();
        let _ = writeln!(
            err,
            "warning: cannot append to the call log {shown}: {e}; continuing"
        );
    }
}
