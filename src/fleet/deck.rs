//! The agent-deck CLI behind a trait: [`AgentDeck`] is what the rest of
//! the daemon talks to, and tests swap in an in-memory fake. Here too are
//! why a call gave no usable answer ([`CliError`]), the call counts
//! ([`CallStats`]), and which failures a death brings by design. The real
//! CLI is [`crate::fleet::cli::Cli`]; dry-run wraps it in [`ReadOnly`].

use std::collections::BTreeMap;
use std::fmt;

use crate::fleet::listing::Row;
use crate::fleet::parse::{self, Garbage};
pub(crate) use crate::fleet::parse::{Delivery, RestartAnswer, SpawnFailure, SpawnReason};
use crate::fleet::session::Live;
use crate::fleet::version::Version;
use crate::sys::process::RunError;

/// Why a CLI call gave no usable answer.
#[derive(Debug)]
pub(crate) enum CliError {
    /// Could not start, timed out, or interrupted by shutdown.
    Run(RunError),
    /// Exited non-zero (or by a signal), with the CLI's own message.
    Exit { code: Option<i32>, message: String },
    /// Exited non-zero (a failed `session send`) saying how far the
    /// message got: the `delivery` key of its JSON error.
    Undelivered {
        code: Option<i32>,
        delivery: Delivery,
        message: String,
    },
    /// A `session restart` or `session start` exited non-zero saying why
    /// the spawn failed (agent-deck 1.16.10+, #2265): the `reason` of its
    /// JSON error, and the message with any pane text left out.
    Spawn {
        code: Option<i32>,
        failure: SpawnFailure,
        message: String,
    },
    /// Exited 0 but printed something we do not understand.
    Garbage(String),
    /// Answered, but agent-deck's store could not be read (see
    /// [`crate::decide::restart::store`]): why, as said.
    StoreUnreadable(String),
}

impl CliError {
    /// How far a failed `session send` got, when agent-deck said so.
    pub(crate) fn delivery(&self) -> Option<Delivery> {
        match self {
            CliError::Undelivered { delivery, .. } => Some(*delivery),
            _ => None,
        }
    }

    /// Why a failed `session restart|start` says its spawn failed, when it
    /// says so.
    pub(crate) fn spawn(&self) -> Option<&SpawnFailure> {
        match self {
            CliError::Spawn { failure, .. } => Some(failure),
            _ => None,
        }
    }

    /// A non-zero exit of `session restart|start`: [`CliError::Spawn`] when
    /// its JSON error names a `reason`, else as [`CliError::exited`].
    pub(crate) fn spawn_exited(code: Option<i32>, stdout: &str, stderr: &str) -> CliError {
        match parse::spawn_failure(stdout) {
            Some(failure) => CliError::Spawn {
                code,
                message: parse::spawn_error_message(stdout, stderr, &failure),
                failure,
            },
            None => CliError::exited(code, stdout, stderr),
        }
    }

    /// A non-zero exit, with the CLI's message and, if it printed one, the
    /// `delivery` of its JSON error.
    pub(crate) fn exited(code: Option<i32>, stdout: &str, stderr: &str) -> CliError {
        let message = parse::error_message(stdout, stderr);
        match parse::delivery(stdout) {
            Some(delivery) => CliError::Undelivered {
                code,
                delivery,
                message,
            },
            None => CliError::Exit { code, message },
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (code, message) = match self {
            CliError::Run(e) => return write!(f, "{e}"),
            CliError::Garbage(g) => return write!(f, "unreadable output: {g}"),
            CliError::StoreUnreadable(why) => return write!(f, "{why}"),
            CliError::Exit { code, message }
            | CliError::Undelivered { code, message, .. }
            | CliError::Spawn { code, message, .. } => (code, message),
        };
        match code {
            Some(c) => write!(f, "exited {c}: {message}")?,
            None => write!(f, "killed by a signal: {message}")?,
        }
        if let Some(spawn) = self.spawn() {
            write!(f, " (reason: {})", spawn.reason)?;
        }
        match self.delivery() {
            Some(delivery) => write!(f, " (delivery: {delivery})"),
            None => Ok(()),
        }
    }
}

impl From<Garbage> for CliError {
    fn from(g: Garbage) -> CliError {
        CliError::Garbage(g.0)
    }
}

pub(crate) type CliResult<T> = Result<T, CliError>;

/// Everything the watchdog asks of agent-deck.
pub(crate) trait AgentDeck: Send + Sync {
    /// `list --all --json`: every session, no status, each handed to `each`
    /// once the answer is known to be readable.
    fn list_all(&self, each: &mut dyn FnMut(&Row<'_>)) -> CliResult<()>;
    /// `-p P list --json`: the sessions of one profile with live status,
    /// handed over like [`AgentDeck::list_all`]'s.
    fn list_profile(&self, profile: &str, each: &mut dyn FnMut(&Row<'_>)) -> CliResult<()>;
    /// `-p P session show <id> --json`.
    fn show(&self, profile: &str, id: &str) -> CliResult<Live>;
    /// `-p P session restart <id> --json`.
    fn restart(&self, profile: &str, id: &str) -> CliResult<RestartAnswer>;
    /// `-p P session start <id> --json`: `--json`, so that a failure says
    /// why, as a failed restart does.
    fn start(&self, profile: &str, id: &str) -> CliResult<()>;
    /// `-p P session send <id> <message> --no-wait --json`.
    fn send(&self, profile: &str, id: &str, message: &str) -> CliResult<()>;
    /// `-p P session output <id> --pane -q`: the raw pane.
    fn pane(&self, profile: &str, id: &str) -> CliResult<String>;
    /// `-p P session output <id> -quiet`: the last transcript answer.
    fn transcript(&self, profile: &str, id: &str) -> CliResult<String>;
    /// `-p P usage --json` (1.16.11+ only, see [`crate::fleet::usage`]).
    fn usage(&self, profile: &str) -> CliResult<String>;
    /// `-p P remove <id>`.
    fn remove(&self, profile: &str, id: &str) -> CliResult<()>;
    /// `-p P session set <id> claude-session-id <value>`: the conversation
    /// a restart resumes, which agent-deck 1.14.0 never stores itself after
    /// a `/clear` without a TUI (tests/live/context.rs).
    fn set_claude_session_id(&self, profile: &str, id: &str, value: &str) -> CliResult<()>;
    /// agent-deck's release as read last; `None` before the first read or
    /// when no answer named one (gate with [`Version::or_oldest`]).
    fn version(&self) -> Option<Version> {
        None
    }
    /// Whether that release is kept from before a read that got no answer.
    fn version_unconfirmed(&self) -> bool {
        false
    }
    /// Calls and failures so far, by command name.
    fn stats(&self) -> CallStats {
        CallStats::default()
    }
}

/// Counters of CLI calls and failures, by command name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CallStats {
    pub calls: BTreeMap<&'static str, u64>,
    /// Failures that mean trouble: every failure not [`by_design`].
    pub failures: BTreeMap<&'static str, u64>,
    /// Failures that are the normal course of a death ([`by_design`]).
    pub by_design: BTreeMap<&'static str, u64>,
}

/// Whether a failed call of `name` is one a death brings by design, not
/// trouble: the pane sample of a session whose tmux session is gone
/// (`output --pane` exits 1 with "failed to capture pane"), and a restart
/// agent-deck (1.16.10+) answers `tmux_session_missing`, the start
/// fallback's cue.
pub(crate) fn by_design(name: &str, e: &CliError) -> bool {
    match e {
        CliError::Exit {
            code: Some(1),
            message,
        } if name == "output-pane" => message.contains("failed to capture pane"),
        _ if name == "restart" => e
            .spawn()
            .is_some_and(|f| f.reason == parse::SpawnReason::TmuxSessionMissing),
        _ => false,
    }
}

/// Dry-run guard: reads pass through, every mutating call is refused without
/// running anything. The daemon already stops before mutating in dry-run;
/// this makes a slip impossible rather than unlikely.
pub(crate) struct ReadOnly(pub std::sync::Arc<dyn AgentDeck>);

fn refuse<T>(what: &str, id: &str) -> CliResult<T> {
    log::error!("dry-run: refused to run `{what} {id}` (this is a bug: dry-run decisions should stop earlier)");
    Err(CliError::Exit {
        code: None,
        message: format!("dry-run: {what} not executed"),
    })
}

impl AgentDeck for ReadOnly {
    fn list_all(&self, each: &mut dyn FnMut(&Row<'_>)) -> CliResult<()> {
        self.0.list_all(each)
    }
    fn list_profile(&self, profile: &str, each: &mut dyn FnMut(&Row<'_>)) -> CliResult<()> {
        self.0.list_profile(profile, each)
    }
    fn show(&self, profile: &str, id: &str) -> CliResult<Live> {
        self.0.show(profile, id)
    }
    fn restart(&self, _: &str, id: &str) -> CliResult<RestartAnswer> {
        refuse("session restart", id)
    }
    fn start(&self, _: &str, id: &str) -> CliResult<()> {
        refuse("session start", id)
    }
    fn send(&self, _: &str, id: &str, _: &str) -> CliResult<()> {
        refuse("session send", id)
    }
    fn pane(&self, profile: &str, id: &str) -> CliResult<String> {
        self.0.pane(profile, id)
    }
    fn transcript(&self, profile: &str, id: &str) -> CliResult<String> {
        self.0.transcript(profile, id)
    }
    fn usage(&self, profile: &str) -> CliResult<String> {
        self.0.usage(profile)
    }
    fn remove(&self, _: &str, id: &str) -> CliResult<()> {
        refuse("remove", id)
    }
    fn set_claude_session_id(&self, _: &str, id: &str, _: &str) -> CliResult<()> {
        refuse("session set", id)
    }
    fn version(&self) -> Option<Version> {
        self.0.version()
    }
    fn version_unconfirmed(&self) -> bool {
        self.0.version_unconfirmed()
    }
    fn stats(&self) -> CallStats {
        self.0.stats()
    }
}
