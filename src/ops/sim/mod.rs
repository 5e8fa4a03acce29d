//! A simulated agent-deck CLI built into the binary: the one test double of
//! agent-deck, used by the demo, the black-box tests and the benchmark.
//!
//! `agent-deck-watchdog sim <args…>` answers the commands the watchdog uses
//! (`list`, `session show|restart|start|send|output`, `remove`) the way the
//! real CLI does (see `agent-deck-contract.md`), from a JSON state file the
//! caller controls, and appends one JSON line per call to a call log. It must
//! not touch tmux, a real agent-deck, or any file but those (the state's lock
//! and temp files, and hook files it only reads), and it must never panic on
//! a bad state file or command line: that is exit 1 or 2 with `Error: …`,
//! like the real CLI.
//!
//! `agent-deck-watchdog sim crash <id>` is the simulator's own command, not
//! agent-deck's and not logged: it kills the session's tmux session as
//! `tmux kill-session` looks to the CLI (sets `tmux_alive: false`); exit 2
//! when no session has that exact id.
//!
//! Not modelled: in the real CLI `show` and `-p P list --json` are not
//! read-only, they write and delete auth-hold sidecars; here they never
//! write the state.
//!
//! Environment: [`STATE_ENV`] names the state file (required), [`LOG_ENV`]
//! the call log (optional; lines `{"ts":<unix secs>,"argv":[…],"pid":N}`),
//! and [`PROFILE_ENV`] is the profile when no `-p` is given (else "default").
//! Under `read_hooks: true`, hook files are read from [`HOOKS_ENV`], else
//! from where agent-deck keeps them (`$XDG_DATA_HOME/agent-deck/hooks` if it
//! exists, else `~/.agent-deck/hooks`).
//!
//! The state file (every session key but `id` and `title` is optional):
//!
//! ```json
//! {"profiles_exist": true,
//!  "sessions": [{"id": "3f9c2a1b-1755891234", "title": "t", "profile": "default",
//!                "group": "", "path": "/tmp", "tool": "claude", "compatible_with": "",
//!                "status": "idle",
//!                "substate": "", "parent_session_id": "", "parent_project_path": "",
//!                "command": "", "channels": [], "claude_session_id": "",
//!                "auth_hold": null, "tmux_session": "", "created_at": 1755891234,
//!                "pane": "", "pane_moving": false, "transcript": "",
//!                "started": true, "tmux_alive": true, "last_started": 1755891234.5,
//!                "stored_status": "waiting",
//!                "on_restart": "ok|skipped|no_effect|fail",
//!                "on_start": "ok|already_running|fail",
//!                "on_send": "ok|fail|not_running|typed",
//!                "on_remove": "ok|fail"}],
//!  "faults": {"<kind>": {"mode": "garbage|null|empty|hang|exit1|crash",
//!                        "seconds": 3600, "count": 1, "delay": 0.5}},
//!  (mode also "load_error": storage cannot be loaded, NOT_FOUND with exit 1)
//!  "delay_s": {"<kind>": 0.5},
//!  "read_hooks": false, "status_writer": true}
//! ```
//!
//! Kinds: `list_all list show restart start send output_pane output remove`.
//!
//! The status a call prints (`live.rs`): a session with `started: false`
//! reads `error` (`unknown` within 1.5 s of `created_at`), prints no Claude
//! id, and starts as usual; one with `tmux_alive: false` reads `error` unless
//! its stored status is `stopped`, cannot be sent to or captured (the
//! auth-hold block aside), and starts as usual. Under `read_hooks: true` a
//! hook `<id>.json` under 120 s old moves the status of a Claude-family (or
//! codex, gemini, hermes, cursor) session whose tmux is alive: `running`,
//! `waiting` as themselves, `dead` to `error`; restarts never delete it.
//! Otherwise the status is `status`.
//!
//! Restart: a Claude-family session with a `claude_session_id` and a live
//! tmux keeps its `tmux_session` and pane; any other restart gets a new
//! name `agentdeck_<title>_<8 hex>` and a pane holding only the restart
//! line. Start and restart set `last_started`, `stored_status` (`starting`,
//! `waiting`) and bring tmux back. The freshness guard skips a restart
//! within 60 s of `last_started` when the guarded status is running,
//! waiting, idle or starting: with `status_writer: false` (no TUI or
//! notify-daemon) that is `stored_status`, else the live status.
//! `output --pane` is the last 2000 lines plus a 24-row screen, bytes as
//! stored (ANSI escapes included); `output` of a gone session outside the
//! Claude family (and gemini) exits 1. `show` leaves out an empty `command`.
//!
//! Claude-family sessions (tool `claude`, or `compatible_with: "claude"`)
//! get Claude's send checks, taken as passed. Any other tool gets the
//! content-arrival check: a message whose trimmed text has 12 or more bytes
//! arrives (it is recorded in `sent`) but answers `DELIVERY_FAILED` with
//! `"delivery": "typed"`, exit 1; a shorter one succeeds as `unverified`.
//! `on_send: "typed"` gives the typed answer for any session and message.
//! The simulator writes back status, substate and pane changes, the
//! `restarts`, `starts` and `pane_ticks` counters, the `sent` messages,
//! removed sessions, and what is left of counted faults.

mod actions;
mod args;
mod fault;
mod file;
mod hooks;
mod list;
mod live;
mod lookup;
mod reply;
mod state;
#[cfg(test)]
mod tests;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

#[cfg(test)]
use file::load;
pub use file::transact;
use live::Moment;
use reply::Reply;
pub use state::{SimSession, SimState};

/// The environment variable naming the JSON state file; required.
pub const STATE_ENV: &str = "FAKE_AGENT_DECK_STATE";
/// The environment variable naming the call log; optional.
pub const LOG_ENV: &str = "FAKE_AGENT_DECK_LOG";
/// The environment variable giving the profile when no `-p` is given, as in the real CLI.
pub const PROFILE_ENV: &str = "AGENTDECK_PROFILE";
/// The environment variable naming the hooks directory (read under `read_hooks: true`).
pub const HOOKS_ENV: &str = "AGENT_DECK_HOOKS_DIR";
/// The simulator's own subcommand that kills a session's tmux session.
pub const CRASH_COMMAND: &str = "crash";

/// What the simulator reads from its environment.
#[derive(Debug, Clone, Default)]
pub struct SimEnv {
    pub state: Option<PathBuf>,
    pub log: Option<PathBuf>,
    /// "" when unset.
    pub profile: String,
    /// Where hook files are, resolved like agent-deck (see `hooks.rs`).
    pub hooks: Option<PathBuf>,
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
                Some(crate::config::resolve_hooks_dir(
                    &home,
                    xdg.as_deref(),
                    &legacy_root,
                ))
            }),
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

/// One invocation with its environment and output streams given.
pub fn run(args: &[String], env: &SimEnv, out: &mut impl Write, err: &mut impl Write) -> i32 {
    if let [first, rest @ ..] = args {
        if first == CRASH_COMMAND {
            // Not an agent-deck command: not logged as a call.
            let reply = crash(rest, env);
            let _ = out.write_all(reply.out.as_bytes());
            let _ = err.write_all(reply.err.as_bytes());
            return reply.code;
        }
    }
    if let Some(log) = &env.log {
        if let Err(e) = log_call(log, args) {
            let _ = writeln!(
                err,
                "warning: cannot append to the call log {}: {e}; continuing",
                log.display()
            );
        }
    }
    let reply = invoke(args, env, || {
        let _ = out.flush();
    });
    let _ = out.write_all(reply.out.as_bytes());
    let _ = err.write_all(reply.err.as_bytes());
    reply.code
}

/// What the first, locked look at the state decided.
enum First {
    Answered(Reply),
    /// Sleep and misbehave first, then answer from the state as it is then.
    Later(Option<fault::Fault>, f64),
}

/// Parses, applies a fault or delay outside the lock, and answers under it.
fn invoke(args: &[String], env: &SimEnv, flush: impl FnOnce()) -> Reply {
    let Some(path) = env.state.as_deref() else {
        return Reply::err(1, format!("Error: {STATE_ENV} not set\n"));
    };
    let call = match args::parse(args, &env.profile) {
        Ok(call) => call,
        Err(reply) => return reply,
    };
    let kind = call.kind.key();
    let moment = |st: &SimState| Moment::new(unix_now(), env.hooks.clone(), st);
    let first = locked(path, |st| {
        let (fault, delay) = (fault::take(st, kind), fault::delay(st, kind));
        if fault.is_none() && delay <= 0.0 {
            First::Answered(actions::execute(&call, st, &moment(st)))
        } else {
            First::Later(fault, delay)
        }
    });
    let (fault, delay) = match first {
        Ok(First::Answered(reply)) => return reply,
        Ok(First::Later(fault, delay)) => (fault, delay),
        Err(reply) => return reply,
    };
    fault::sleep(delay);
    if let Some(reply) = fault.and_then(|f| fault::apply(&f, call.kind, call.on("json"), flush)) {
        return reply;
    }
    locked(path, |st| actions::execute(&call, st, &moment(st))).unwrap_or_else(|reply| reply)
}

/// `crash <id>`: the session's tmux session dies, as a `tmux kill-session`
/// looks to the CLI (`tmux_alive: false`). Exact id, any profile; exit 2
/// when there is no such session.
fn crash(args: &[String], env: &SimEnv) -> Reply {
    let Some(path) = env.state.as_deref() else {
        return Reply::err(1, format!("Error: {STATE_ENV} not set\n"));
    };
    let [id] = args else {
        return Reply::err(2, format!("Usage: {CRASH_COMMAND} <session id>\n"));
    };
    let found = locked(path, |st| {
        st.sessions
            .iter_mut()
            .find(|s| s.id == *id)
            .map(|s| s.tmux_alive = Some(false))
            .is_some()
    });
    match found {
        Ok(true) => Reply::out(0, format!("crashed {id}\n")),
        Ok(false) => Reply::err(2, format!("Error: no session with id '{id}'\n")),
        Err(reply) => reply,
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A read-modify-write of the state; a state that cannot be read or written
/// is `Error: …`, exit 1.
fn locked<T>(path: &Path, f: impl FnOnce(&mut SimState) -> T) -> Result<T, Reply> {
    transact(path, f).map_err(|e| Reply::err(1, format!("Error: {e}\n")))
}

/// One line of the call log.
#[derive(Serialize)]
struct LogLine<'a> {
    ts: f64,
    argv: &'a [String],
    pid: u32,
}

fn log_call(path: &Path, args: &[String]) -> io::Result<()> {
    let line = LogLine {
        ts: unix_now(),
        argv: args,
        pid: std::process::id(),
    };
    let text = serde_json::to_string(&line).map_err(io::Error::other)? + "\n";
    // O_APPEND and one write, so concurrent calls never interleave a line.
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)?
        .write_all(text.as_bytes())
}
