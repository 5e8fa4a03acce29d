//! An in-memory agent-deck for unit tests of the code that acts on the
//! CLI's answers (the restart flow, the errands, the patrols, a tick).
//!
//! Every call answers from what the test scripted and is written to a call
//! list the test can read back. It spawns nothing, sleeps never (a slow
//! send blocks on a channel the test holds) and knows nothing about tmux:
//! anything not scripted fails like an unreadable CLI.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::fleet::deck::{AgentDeck, CliError, CliResult, RestartAnswer, SpawnFailure};
use crate::fleet::listing::{self, Row, Shape};
use crate::fleet::parse::Delivery;
use crate::fleet::session::{Live, Status};
use crate::fleet::version::Version;

/// How the fake's `session send` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SendAnswer {
    Delivered,
    /// Exit 1 with `DELIVERY_FAILED` and this `delivery`.
    Undelivered(Delivery),
}

/// What the fake answers; set the fields, then call through [`FakeDeck`].
#[derive(Debug)]
pub(crate) struct Script {
    /// `session show` answers, oldest first; the last one repeats. None:
    /// unreadable.
    pub shows: VecDeque<Option<Live>>,
    /// None: `session restart` exits 1.
    pub restart: Option<RestartAnswer>,
    /// A failing `session restart` says why its spawn failed (1.16.10+);
    /// None: it says nothing, as 1.14.0 does.
    pub restart_spawn: Option<SpawnFailure>,
    /// `session start` exits 0 (else 1, "already running").
    pub start_ok: bool,
    /// A failing `session start` says why its spawn failed, like
    /// `restart_spawn`.
    pub start_spawn: Option<SpawnFailure>,
    pub send: SendAnswer,
    /// Set: each `session send` blocks until this yields or disconnects
    /// (a slow send, with no sleeping).
    pub send_gate: Option<crossbeam_channel::Receiver<()>>,
    pub pane: String,
    pub transcript: String,
    /// `usage --json`'s answer.
    pub usage: String,
    /// `remove` exits 0 (else 1).
    pub remove_ok: bool,
    /// The answer of `list --all --json`; None: unreadable.
    pub list_all: Option<String>,
    /// The answer of `-p P list --json`, by profile; a missing one is
    /// unreadable.
    pub lists: BTreeMap<String, String>,
    /// What [`AgentDeck::version`] answers.
    pub version: Option<Version>,
}

impl Default for Script {
    fn default() -> Script {
        Script {
            shows: VecDeque::new(),
            restart: Some(RestartAnswer::Restarted),
            restart_spawn: None,
            start_ok: true,
            start_spawn: None,
            send: SendAnswer::Delivered,
            send_gate: None,
            pane: "frozen pane".into(),
            transcript: String::new(),
            usage: String::new(),
            remove_ok: true,
            list_all: None,
            lists: BTreeMap::new(),
            version: None,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct FakeDeck {
    pub script: Mutex<Script>,
    /// `<command> <id>` for every call, in order.
    pub calls: Mutex<Vec<String>>,
}

/// A `session show` answer with this status and nothing else.
pub(crate) fn live(status: Status) -> Option<Live> {
    Some(Live {
        status: Some(status),
        ..Live::default()
    })
}

fn exit1(message: &str) -> CliError {
    CliError::Exit {
        code: Some(1),
        message: message.into(),
    }
}

/// Exit 1 with `message`, saying why the spawn failed when `spawn` does.
fn spawn_exit1(message: &str, spawn: Option<SpawnFailure>) -> CliError {
    match spawn {
        Some(failure) => CliError::Spawn {
            code: Some(1),
            failure,
            message: message.into(),
        },
        None => exit1(message),
    }
}

impl FakeDeck {
    pub(crate) fn new(script: Script) -> FakeDeck {
        FakeDeck {
            script: Mutex::new(script),
            calls: Mutex::new(Vec::new()),
        }
    }

    fn note(&self, what: &str, id: &str) {
        self.calls.lock().push(format!("{what} {id}"));
    }

    /// How many calls of `what` were made.
    pub(crate) fn count(&self, what: &str) -> usize {
        let prefix = format!("{what} ");
        self.calls
            .lock()
            .iter()
            .filter(|c| c.starts_with(&prefix))
            .count()
    }

    /// Waits up to `limit` until `call` (`<command> <id>`) was made `n`
    /// times.
    pub(crate) fn wait_for_calls(&self, call: &str, n: usize, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while self.calls.lock().iter().filter(|c| *c == call).count() < n {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    }
}

/// Reads a scripted list answer like the real CLI reads one.
fn list(answer: Option<String>, shape: Shape, each: &mut dyn FnMut(&Row<'_>)) -> CliResult<()> {
    let answer = answer.ok_or_else(|| CliError::Garbage("not scripted".into()))?;
    listing::read(shape, answer.as_bytes(), each)?;
    Ok(())
}

impl AgentDeck for FakeDeck {
    fn list_all(&self, each: &mut dyn FnMut(&Row<'_>)) -> CliResult<()> {
        self.note("list-all", "");
        let answer = self.script.lock().list_all.clone();
        list(answer, Shape::All, each)
    }
    fn list_profile(&self, profile: &str, each: &mut dyn FnMut(&Row<'_>)) -> CliResult<()> {
        self.note("list", profile);
        let answer = self.script.lock().lists.get(profile).cloned();
        list(answer, Shape::Profile, each)
    }
    fn show(&self, _: &str, id: &str) -> CliResult<Live> {
        self.note("show", id);
        let mut script = self.script.lock();
        let answer = if script.shows.len() > 1 {
            script.shows.pop_front().flatten()
        } else {
            script.shows.front().cloned().flatten()
        };
        answer.ok_or_else(|| CliError::Garbage("unreadable".into()))
    }
    fn restart(&self, _: &str, id: &str) -> CliResult<RestartAnswer> {
        self.note("restart", id);
        let script = self.script.lock();
        let spawn = script.restart_spawn.clone();
        (script.restart.clone()).ok_or_else(|| spawn_exit1("failed to restart session", spawn))
    }
    fn start(&self, _: &str, id: &str) -> CliResult<()> {
        self.note("start", id);
        let script = self.script.lock();
        match script.start_spawn.clone() {
            _ if script.start_ok => Ok(()),
            None => Err(exit1("session is already running")),
            spawn => Err(spawn_exit1("failed to start session", spawn)),
        }
    }
    fn send(&self, _: &str, id: &str, _: &str) -> CliResult<()> {
        self.note("send", id);
        let gate = self.script.lock().send_gate.clone();
        if let Some(gate) = gate {
            let _ = gate.recv();
        }
        match self.script.lock().send {
            SendAnswer::Delivered => Ok(()),
            SendAnswer::Undelivered(delivery) => Err(CliError::Undelivered {
                code: Some(1),
                delivery,
                message: "message was not confirmed".into(),
            }),
        }
    }
    fn pane(&self, _: &str, id: &str) -> CliResult<String> {
        self.note("output-pane", id);
        Ok(self.script.lock().pane.clone())
    }
    fn transcript(&self, _: &str, id: &str) -> CliResult<String> {
        self.note("output", id);
        Ok(self.script.lock().transcript.clone())
    }
    fn usage(&self, _: &str) -> CliResult<String> {
        self.note("usage", "");
        Ok(self.script.lock().usage.clone())
    }
    fn remove(&self, _: &str, id: &str) -> CliResult<()> {
        self.note("remove", id);
        if self.script.lock().remove_ok {
            Ok(())
        } else {
            Err(exit1("failed to remove session"))
        }
    }
    fn set_claude_session_id(&self, _: &str, id: &str, value: &str) -> CliResult<()> {
        self.note("set", &format!("{id} claude-session-id {value}"));
        Ok(())
    }
    fn version(&self) -> Option<Version> {
        self.script.lock().version
    }
}
