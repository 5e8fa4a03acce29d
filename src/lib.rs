//! agent-deck-watchdog: keeps the critical sessions of an agent-deck fleet
//! alive.
//!
//! `main.rs` hands the command line to [`main_with_args`], which dispatches to
//! the command and maps its result to an exit code (0 ok, 1 runtime failure,
//! 2 usage or configuration, 3 lock held). Every error prints as one line
//! prefixed `agent-deck-watchdog:`.
//!
//! # Where things live
//!
//! Each folder is a room for one kind of code, and a room imports only the
//! rooms listed after it:
//!
//! - `args/`: our own command line, parsed into an invocation (and nothing
//!   else parses it).
//! - `ops/`: the operator's commands: `doctor`, `drill`, `status`,
//!   `history`, and what `doctor` and `drill` both ask first.
//! - `daemon/`: the main loop and its routing, the tick (observe, then the
//!   plan carried out by one executor), the `--once` summary, and the
//!   daemon's own plumbing (log output, systemd notify, signals).
//! - `tasks/`: task follow-up: its registry, rules and subcommands.
//! - `act/`: what the daemon does to the fleet: the job worker (revives,
//!   resumes, poller restarts), patrols, errands, and the one executor of
//!   their endings (`apply.rs`), which alone writes `restart.log`.
//! - `alert/`: telling a human: `escalate.sh` and Telegram.
//! - `records/`: what the daemon writes down: audit logs, state, metrics.
//! - `decide/`: the decision core, pure, one folder per question: a
//!   session's verdict, the restart machine, a stall, the restart book; a
//!   tick's plan (`plan.rs`) and what the main loop remembers of the fleet
//!   between looks (`memory.rs`).
//! - `triggers/`: what wakes the main loop, one thread each. SPEC's thread A
//!   is `hooks-watch` (hook files, by inotify, kqueue or a scan), thread B is
//!   `ticker` (the safety poll); the pane watch is `panes-watch`.
//! - `fleet/`: agent-deck's CLI behind one trait, its answers parsed, the
//!   session cache, agent-deck's tmux server as the pane watch lists it.
//! - `config/`: every setting, read once from the environment, and
//!   agent-deck's own files and where it keeps them (`deck_files.rs`).
//! - `sys/`: the platform: the one place that spawns processes, file access
//!   that trusts nothing, pidfd and kqueue, clocks (and reading wall-clock
//!   times), the say-once sink for warnings.
//!
//! Single files at the root are leaves every room may use: `error.rs`,
//! `text.rs` (printable text), `digest.rs`, `spelled.rs`; `demo.rs` is the
//! `demo` command, and `testing.rs` (test code only) the input generators
//! the property tests share.
//!
//! The simulated agent-deck that the demo, the tests and the benchmarks run
//! against is a crate of its own, `agent-deck-sim` (`sim/` in the
//! workspace), with the demo's fleet: it imports nothing from here, and
//! this binary serves it as `agent-deck-watchdog sim`.

pub(crate) mod act;
pub(crate) mod alert;
pub(crate) mod args;
pub(crate) mod config;
pub(crate) mod daemon;
pub(crate) mod decide;
pub(crate) mod demo;
pub(crate) mod digest;
pub(crate) mod error;
pub(crate) mod fleet;
pub(crate) mod ops;
pub(crate) mod records;
pub(crate) mod spelled;
pub(crate) mod sys;
pub(crate) mod tasks;
#[cfg(test)]
mod testing;
pub(crate) mod text;
pub(crate) mod triggers;

/// What the black-box tests and the benches reach inside the crate, and
/// nothing else is public: the record types and files they read back, the
/// record writer, the list parser, the task registry. Not an API. (The
/// simulated agent-deck they run against is the `agent-deck-sim` crate.)
#[doc(hidden)]
pub mod harness {
    pub use crate::fleet::listing;
    pub use crate::records::audit::{
        Detail, EscalationRecord, LivenessReason, LivenessRecord, PaneSamples, RestartAction,
        RestartRecord, Severity, SpawnDetail, StallDetail, StatusRead, ESCALATIONS_LOG,
        LIVENESS_LOG, RESTART_LOG,
    };
    pub use crate::records::rotation::{rotated_path, DEFAULT_MAX_BYTES};
    pub use crate::records::writer::Records;
    pub use crate::tasks::registry::{Registry, RegistryFile, Task, TaskEvent, TaskStatus};
    pub use crate::tasks::retention::{self, DAY_S};
}

use std::ffi::OsString;

use args::Invocation;
use config::Config;
use error::Result;

/// Runs the program and returns its exit code.
pub fn main_with_args(args: Vec<OsString>) -> i32 {
    // The simulated agent-deck ("testing" in --help): its arguments are
    // agent-deck's, so they bypass the parser.
    if args.first().is_some_and(|a| a == "sim") {
        let rest: Vec<String> = args[1..]
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        return agent_deck_sim::main(&rest);
    }
    match dispatch(args) {
        Ok(()) => 0,
        Err(e) => {
            // Under journald each line carries its priority: an error's is 3.
            let journal = std::env::var("JOURNAL_STREAM").ok();
            let prefix = if daemon::logging::stderr_is_journal(journal.as_deref()) {
                "<3>"
            } else {
                ""
            };
            let message = format!("agent-deck-watchdog: {e}");
            for line in message.lines() {
                eprintln!("{prefix}{line}");
            }
            let socket = std::env::var("NOTIFY_SOCKET").ok();
            daemon::sd_notify::last_status(socket.as_deref(), &message);
            e.exit_code()
        }
    }
}

fn dispatch(argv: Vec<OsString>) -> Result<()> {
    let env = config::process_env();
    match args::parse(argv)? {
        Invocation::Help => println!("{}", args::USAGE),
        Invocation::Version => println!("agent-deck-watchdog {}", env!("CARGO_PKG_VERSION")),
        Invocation::PrintConfig(_) => print!("{}", Config::from_env(&env)?.describe()),
        Invocation::Demo => demo::run()?,
        Invocation::Status { json } => ops::status::run(&Config::from_env(&env)?, json)?,
        Invocation::Doctor { json, online } => ops::doctor::run(&env, json, online)?,
        Invocation::Drill(drill) => ops::drill::run(&Config::from_env(&env)?, &drill)?,
        Invocation::History(history) => ops::history::run(&Config::from_env(&env)?, &history)?,
        Invocation::Task(flags, cmd) => {
            let cfg = Config::from_env(&env)?;
            daemon::logging::init(flags.verbose, cfg.journal_stream.as_deref());
            tasks::commands::run(cmd, &cfg, flags.dry_run)?;
        }
        Invocation::Run(flags) => {
            let cfg = Config::from_env(&env)?;
            daemon::logging::init(flags.verbose, cfg.journal_stream.as_deref());
            daemon::run(cfg, flags)?;
        }
    }
    Ok(())
}
