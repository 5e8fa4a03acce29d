//! The simulator's state: the schema of the file the tests and the demo
//! control (every session key but `id` and `title` is optional), and the
//! values the CLI shows for a session once its defaults are applied.
//!
//! ```json
//! {"profiles_exist": true,
//!  "sessions": [{"id": "3f9c2a1b-1755891234", "title": "t", "profile": "default",
//!                "group": "", "path": "/tmp", "tool": "claude", "compatible_with": "",
//!                "status": "idle", "substate": "", "substate_detail": "",
//!                "parent_session_id": "", "parent_project_path": "",
//!                "command": "", "channels": [], "claude_session_id": "",
//!                "auth_hold": null, "tmux_session": "", "created_at": 1755891234,
//!                "pane": "", "pane_moving": false, "transcript": "",
//!                "started": true, "tmux_alive": true, "last_started": 1755891234.5,
//!                "stored_status": "waiting", "on_restart": "ok|skipped|no_effect|fail",
//!                "on_start": "ok|already_running|fail", "on_remove": "ok|fail",
//!                "on_send": "ok|fail|not_running|typed|bounce",
//!                "spawn_failure": {"reason": "spawn_died_fast", "dying_output": "",
//!                                  "elapsed_ms": 980, "came_up": false},
//!                "ignores_sighup": false,
//!                "full": "limit|prompt|compaction|thrashing",
//!                "on_compact": "compacts|fails|hangs", "clear_delivery": "submitted",
//!                "answers": false}],
//!  "faults": {"<kind>": {"mode": "garbage|null|empty|hang|exit1|crash|load_error",
//!                        "seconds": 3600, "count": 1, "delay": 0.5}},
//!  "delay_s": {"<kind>": 0.5},
//!  "read_hooks": false, "status_writer": true, "freshness_window_s": 60,
//!  "version": "1.16.26", "both_store_roots": false, "tmux_server": "down",
//!  "usage": {"providers": [{"id": "claude", "windows": [], "stale": false}]},
//!  "pane_host": {"pid": 4242, "panes": {"agentdeck_t_0badf00d": 4243},
//!                "orphans": {"agentdeck_u_12345678": 4244}}}
//! ```
//!
//! A Claude session whose context window is full (`full`, `on_compact`,
//! `clear_delivery`, `answers`) answers as `full_context.rs` describes.
//!
//! Kinds (of `faults` and `delay_s`): `list_all list show restart start send
//! output_pane output remove`. Each key is described on its field below. `pane_host` is written by `sim
//! pane-host` alone; without it no answer but `sim tmux`'s changes.
//!
//! A missing or `null` key reads as the default; keys this schema does not
//! know are kept as they are, so a rewrite never loses them. Reading and
//! writing the file is `file.rs`'s job.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::release::Release;

/// The whole state file; a missing key takes its value from `default()`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SimState {
    /// False (or `null`, unlike an absent key): `list --all` finds no
    /// profile directory at all.
    #[serde(deserialize_with = "nullable")]
    pub profiles_exist: bool,
    #[serde(deserialize_with = "nullable")]
    pub sessions: Vec<SimSession>,
    /// `{kind: {mode, seconds, count, delay}}`, read leniently (see `fault.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub faults: Option<Value>,
    /// `{kind: seconds}`: every call of that kind sleeps first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_s: Option<Value>,
    /// True: hook files move the status (see `live.rs`); absent or false,
    /// they are not read at all.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub read_hooks: bool,
    /// False: no TUI or notify-daemon writes the stored status, so the
    /// restart guards read `stored_status`; else they read the live status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_writer: Option<bool>,
    /// The freshness guard's window in seconds; absent, agent-deck's 60 s.
    /// The simulator's own knob, so a test can see a window end without
    /// waiting a minute.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freshness_window_s: Option<f64>,
    /// What `agent-deck version` names and the release every answer
    /// follows; absent, [`crate::VERSION`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// True: both profile-store roots hold profiles, so from 1.16.14 every
    /// call prints the store WARNING on stderr first (`store_roots.rs`).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub both_store_roots: bool,
    /// `"down"`: the tmux server was killed: every session reads as crashed
    /// until a start or restart brings a server up again (dropping the key),
    /// the pane host kills every child and `sim tmux` finds no server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tmux_server: Option<String>,
    /// The tmux sessions restarts spawned and could not save (`on_restart:
    /// unsaved`): each runs, and `sim tmux list-panes` lists it, but no
    /// session names it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsaved_tmux: Vec<String>,
    /// What `usage --json` prints from 1.16.11 (absent: no providers);
    /// before it, `usage` fails as 1.14.0's TUI does without a terminal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// What the running `sim pane-host` holds; absent, no host runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pane_host: Option<PaneHost>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl Default for SimState {
    fn default() -> SimState {
        SimState {
            profiles_exist: true,
            sessions: Vec::new(),
            faults: None,
            delay_s: None,
            read_hooks: false,
            status_writer: None,
            freshness_window_s: None,
            version: None,
            both_store_roots: false,
            tmux_server: None,
            unsaved_tmux: Vec::new(),
            usage: None,
            pane_host: None,
            other: Map::new(),
        }
    }
}

impl SimState {
    /// The release the simulator answers as.
    pub fn release(&self) -> Release {
        let named = self.version.as_deref().unwrap_or(super::VERSION);
        Release::parse(named).unwrap_or(Release::OLDEST)
    }

    /// `tmux_server: "down"`: every pane is gone and tmux finds no server.
    pub fn server_down(&self) -> bool {
        self.tmux_server.as_deref() == Some("down")
    }
}

/// The running pane host's record: its pid (the simulated tmux server's)
/// and its children's, by tmux session name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PaneHost {
    #[serde(deserialize_with = "nullable")]
    pub pid: u32,
    /// One child per live session: the pane's process.
    #[serde(deserialize_with = "nullable")]
    pub panes: BTreeMap<String, u32>,
    /// Children of `ignores_sighup` sessions whose tmux session was killed.
    #[serde(deserialize_with = "nullable")]
    pub orphans: BTreeMap<String, u32>,
}

/// How `session restart` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnRestart {
    /// Restarted: status `running`, a line appended to the pane.
    Ok,
    /// Refused by the freshness guard (`skipped: true`, exit 0).
    Skipped,
    /// Answers success, but the session stays as it was.
    NoEffect,
    /// `failed to restart session`, exit 1.
    Fail,
    /// The store is locked as it saves (1.14.0 under a held lock): the new
    /// tmux session is spawned and runs, but the store keeps the old one's
    /// name, so the session reads crashed; `failed to save session state:
    /// … database is locked`, exit 1.
    Unsaved,
}

/// How `session start` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnStart {
    Ok,
    /// `session '<title>' is already running`, exit 1.
    AlreadyRunning,
    Fail,
}

/// How `session send` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnSend {
    Ok,
    Fail,
    /// `session '<title>' is not running`, exit 1.
    NotRunning,
    /// Delivered, and the agent's turn is rejected again at once: a
    /// `usage-limit` or `model-unavailable` substate stays (an `ok` send
    /// clears it, as a real turn that goes through does, and a session in
    /// `error` at an unavailable model reads `idle`).
    Bounce,
    /// The text arrives (in `sent`) but nothing confirms the agent took it
    /// up: `DELIVERY_FAILED`, `"delivery": "typed"`, exit 1, for any tool.
    Typed,
    /// The agent takes the text as its turn, and agent-deck saw no sign of
    /// it: `DELIVERY_FAILED`, `"delivery": "no_evidence"`, exit 1, as
    /// 1.14.0 answers most `/clear`s that worked (tests/live/context.rs)
    /// and, in a night of faults (#38), a resume the agent took.
    NoEvidence,
}

/// What a failing `session restart` or `session start` says of its spawn
/// from agent-deck 1.16.10 (CHANGELOG 1.16.10, #2265): the fields of
/// agent-deck's spawn-failure record, and whether an unverified spawn came
/// up all the same. Absent, or before 1.16.10, a `fail` answers as 1.14.0's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SpawnFailure {
    /// `spawn_died_fast`, `spawn_unverified`, `tmux_session_missing`, or any other.
    #[serde(deserialize_with = "nullable")]
    pub reason: String,
    /// The last pane snapshot of the process that died.
    #[serde(deserialize_with = "nullable")]
    pub dying_output: String,
    /// Milliseconds from the spawn to the death; None: 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
    /// `spawn_unverified` only: the session is up although the call failed.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub came_up: bool,
}

/// Which error a Claude session at a full context window ends every turn
/// on (context.md §3; the renderings are in `full_context.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Full {
    /// `Context limit reached · /compact or /clear to continue`.
    Limit,
    /// `Prompt is too long`.
    Prompt,
    /// `Error during compaction: … Conversation too long`.
    Compaction,
    /// `Autocompact is thrashing: …`.
    Thrashing,
}

/// What a `/compact` sent to a Claude session does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnCompact {
    /// The conversation is compacted; the session is no longer full.
    Compacts,
    /// `Error during compaction`; the session stays full (`compaction`).
    Fails,
    /// `Compacting conversation…` on the pane for good.
    Hangs,
}

/// A `session send` verdict the session picks (`clear_delivery`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// `DELIVERY_FAILED`, `"delivery": "no_evidence"`, exit 1.
    NoEvidence,
    /// Exit 0, `"delivery": "submitted"`.
    Submitted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnRemove {
    Ok,
    Fail,
}

/// One simulated session. A missing or `null` key takes the default the
/// real CLI would show; the `Option`s are the keys whose absence means
/// something other than an empty value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SimSession {
    #[serde(deserialize_with = "nullable")]
    pub id: String,
    #[serde(deserialize_with = "nullable")]
    pub title: String,
    /// Empty means "default".
    #[serde(deserialize_with = "nullable")]
    pub profile: String,
    #[serde(deserialize_with = "nullable")]
    pub group: String,
    /// None: `/tmp`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// None: `claude`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A custom tool's `compatible_with`: `"claude"` (any case) makes it
    /// Claude-family, like the tool `claude` itself.
    #[serde(deserialize_with = "nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub compatible_with: String,
    /// The stored status; None: `idle` (never started). Anything outside the
    /// CLI's vocabulary prints as `unknown`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Printed as given, whatever the release: a test sets what that
    /// release would print (from 1.16.11 e.g. `interactive-menu`, #2185).
    #[serde(deserialize_with = "nullable")]
    pub substate: String,
    /// Free text beside the substate (the Codex usage-limit banner's retry
    /// time), printed when not empty by `list --json` and `session show
    /// --json` from 1.16.11 on (CHANGELOG 1.16.11).
    #[serde(deserialize_with = "nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub substate_detail: String,
    #[serde(deserialize_with = "nullable")]
    pub parent_session_id: String,
    #[serde(deserialize_with = "nullable")]
    pub parent_project_path: String,
    #[serde(deserialize_with = "nullable")]
    pub command: String,
    #[serde(deserialize_with = "nullable")]
    pub channels: Vec<String>,
    #[serde(deserialize_with = "nullable")]
    pub claude_session_id: String,
    /// The auth-hold sidecar as `session show` prints it; absent, `null` or
    /// empty means none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_hold: Option<Value>,
    #[serde(deserialize_with = "nullable")]
    pub tmux_session: String,
    /// Unix seconds; None: taken from an id of the real shape, else a fixed date.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<f64>,
    /// False: added but never started; every call reads `error` (`unknown`
    /// in the 1.5 s after `created_at`). None: true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<bool>,
    /// False: the tmux session is gone (`sim crash`); the status reads
    /// `error` unless stopped, and it cannot be sent to or captured (the
    /// auth-hold block aside). None: true. Start and restart bring it back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tmux_alive: Option<bool>,
    /// Unix seconds of the last start or restart (written back); the
    /// freshness guard measures from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_started: Option<f64>,
    /// The stored status as start (`starting`) and restart (`waiting`) write
    /// it, read by the guards under `status_writer: false`. None: `status`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored_status: Option<String>,
    /// The pane's scrollback; None: the pane is gone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pane: Option<String>,
    /// Each `output --pane` appends a line, so two samples differ.
    #[serde(deserialize_with = "nullable")]
    pub pane_moving: bool,
    /// The last assistant response, for `output` without `--pane`.
    #[serde(deserialize_with = "nullable")]
    pub transcript: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_restart: Option<OnRestart>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_start: Option<OnStart>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_send: Option<OnSend>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_remove: Option<OnRemove>,
    /// Why a failing restart or start says its spawn failed, from 1.16.10.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spawn_failure: Option<SpawnFailure>,
    /// Written back: `session restart` calls that got past the guards.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero")]
    pub restarts: u64,
    /// Written back: successful `session start` calls.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero")]
    pub starts: u64,
    /// Written back: samples of a moving pane.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero")]
    pub pane_ticks: u64,
    /// Written back: every message delivered by `session send`.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub sent: Vec<String>,
    /// The agent ignores SIGHUP: a kill of its tmux session (`sim crash`,
    /// `kill-session`) leaves its pane host child alive as an orphan.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub ignores_sighup: bool,
    /// A Claude session whose context window is full, and which error its
    /// turns end on; absent, `null` or `""`: not full.
    #[serde(deserialize_with = "blank", skip_serializing_if = "Option::is_none")]
    pub full: Option<Full>,
    /// What a `/compact` does; None: it compacts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_compact: Option<OnCompact>,
    /// How a `/clear` is answered; None: `no_evidence`, as mostly measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clear_delivery: Option<Delivery>,
    /// Every message sent gets a normal turn on the pane and in the
    /// transcript; a `/clear` or a `/compact` that works sets it (false:
    /// a send leaves the pane as it is, API error banners aside).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub answers: bool,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `null` reads as the type's default, like an absent key.
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// `""` reads as `None`, like `null` or an absent key.
fn blank<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::String(s) if s.is_empty() => Ok(None),
        v => T::deserialize(v)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

const DEFAULT_CREATED: i64 = 1_755_891_234;

/// The values the CLI shows for a session, defaults applied.
impl SimSession {
    pub fn profile(&self) -> &str {
        if self.profile.is_empty() {
            "default"
        } else {
            &self.profile
        }
    }

    pub fn path(&self) -> &str {
        self.path.as_deref().unwrap_or("/tmp")
    }

    pub fn tool(&self) -> &str {
        self.tool.as_deref().unwrap_or("claude")
    }

    /// The tool `claude`, or a tool declared compatible with it.
    pub fn claude_family(&self) -> bool {
        self.tool() == "claude" || self.compatible_with.trim().eq_ignore_ascii_case("claude")
    }

    pub fn was_started(&self) -> bool {
        self.started.unwrap_or(true)
    }

    /// Whether its tmux session exists: started, not crashed, not stopped.
    pub fn tmux_exists(&self) -> bool {
        self.was_started() && self.tmux_alive.unwrap_or(true) && self.raw_status() != "stopped"
    }

    pub fn raw_status(&self) -> &str {
        self.status.as_deref().unwrap_or("idle")
    }

    /// The auth hold, unless absent, `null`, `false`, `0`, `""`, `[]` or `{}`.
    pub fn hold(&self) -> Option<&Value> {
        self.auth_hold.as_ref().filter(|v| match v {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Number(n) => n.as_f64() != Some(0.0),
            Value::String(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
        })
    }

    /// `created_at`, else the unix seconds of an id `<8 hex>-<digits>`, else a fixed date.
    pub fn created_secs(&self) -> i64 {
        if let Some(secs) = self.created_at {
            return secs as i64;
        }
        let hex =
            |p: &str| p.len() == 8 && p.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        let secs = self
            .id
            .split_once('-')
            .filter(|(prefix, secs)| hex(prefix) && secs.bytes().all(|b| b.is_ascii_digit()));
        secs.and_then(|(_, secs)| secs.parse().ok())
            .unwrap_or(DEFAULT_CREATED)
    }

    /// `substate_detail` as the release prints it.
    pub fn shown_detail(&self, release: Release) -> &str {
        if release >= Release::SUBSTATE_DETAIL {
            &self.substate_detail
        } else {
            ""
        }
    }

    pub fn append_pane_line(&mut self, line: &str) {
        if let Some(pane) = self.pane.as_mut() {
            push_line(pane, line);
        }
    }
}

/// Appends `line` to a pane, on a line of its own.
pub(crate) fn push_line(pane: &mut String, line: &str) {
    if !pane.is_empty() && !pane.ends_with('\n') {
        pane.push('\n');
    }
    pane.push_str(line);
}
