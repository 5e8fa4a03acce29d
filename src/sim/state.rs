//! The simulator's state file: its schema, and the locked read-modify-write.
//!
//! The file is the one the tests and the demo control (schema at the top of
//! `mod.rs`). Every read-modify-write holds an exclusive `flock` on
//! `<state>.lock` and ends in an atomic rewrite (temp file + rename), so a
//! test editing the fleet and a concurrent simulated call never lose each
//! other's changes. A missing or empty file is an empty fleet; a file that is
//! not a JSON object of this schema is an error naming it, never a panic.
//! Keys this schema does not know are kept as they are.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The whole state file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// False: `list --all` finds no profile directory at all.
    #[serde(default = "yes", deserialize_with = "null_is_false")]
    pub profiles_exist: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub sessions: Vec<Session>,
    /// `{kind: {mode, seconds, count, delay}}`, read leniently (see `fault.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<Value>,
    /// `{kind: seconds}`: every call of that kind sleeps first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_s: Option<Value>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl Default for State {
    fn default() -> State {
        State {
            profiles_exist: true,
            sessions: Vec::new(),
            faults: None,
            delay_s: None,
            other: Map::new(),
        }
    }
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
}

/// How `remove` answers.
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
pub struct Session {
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
    /// The stored status; None: `idle` (never started). Anything outside the
    /// CLI's vocabulary prints as `unknown`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub substate: String,
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
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

fn yes() -> bool {
    true
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `null` reads as the type's default, like an absent key.
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// `profiles_exist: null` is falsy, unlike an absent key.
fn null_is_false<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(false))
}

/// Read-modify-write of the state file under the lock; the file is written
/// only when `f` changed the state. `f`'s result is returned.
pub fn transact<T>(path: &Path, f: impl FnOnce(&mut State) -> T) -> io::Result<T> {
    let _lock = lock(path)?;
    let mut state = read(path)?.unwrap_or_default();
    let before = state.clone();
    let result = f(&mut state);
    if state != before {
        write(path, &state)?;
    }
    Ok(result)
}

/// The state as it is now (empty when the file is missing), read under the lock.
pub fn load(path: &Path) -> io::Result<State> {
    let _lock = lock(path)?;
    Ok(read(path)?.unwrap_or_default())
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}

/// Blocks until this process holds `<state>.lock`; released when the file drops.
fn lock(path: &Path) -> io::Result<File> {
    let lock_path = with_suffix(path, ".lock");
    let named = |e: io::Error| {
        io::Error::new(
            e.kind(),
            format!("cannot lock {}: {e}", lock_path.display()),
        )
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(named)?;
    loop {
        // SAFETY: flock on a descriptor we own; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(file);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(named(e));
        }
    }
}

/// None when the file is missing or holds only white space.
fn read(path: &Path) -> io::Result<Option<State>> {
    let text = match fs::read_to_string(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            let msg = format!("cannot read {}: {e}", path.display());
            return Err(io::Error::new(e.kind(), msg));
        }
        Ok(text) => text,
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    let bad = |what: String| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("fake state file {what}"),
        )
    };
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| bad(format!("unreadable: {}: {e}", path.display())))?;
    if !value.is_object() {
        return Err(bad(format!("is not a JSON object: {}", path.display())));
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| bad(format!("unreadable: {}: {e}", path.display())))
}

fn write(path: &Path, state: &State) -> io::Result<()> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let name = format!(".fake-state-{}-{nanos}.tmp", std::process::id());
    let tmp = dir.map_or_else(|| PathBuf::from(&name), |d| d.join(&name));
    let text = serde_json::to_string_pretty(state).map_err(io::Error::other)? + "\n";
    let result = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| io::Write::write_all(&mut f, text.as_bytes()))
        .and_then(|()| fs::rename(&tmp, path));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))
}

/// Statuses `StatusString` prints as themselves; the rest print `unknown`.
const KNOWN_STATUSES: [&str; 6] = ["running", "waiting", "idle", "error", "stopped", "queued"];

/// `created_at` when neither the state nor the id gives one.
const DEFAULT_CREATED: i64 = 1_755_891_234;

/// The values the CLI shows for a session, defaults applied.
impl Session {
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

    /// The stored status, which the guards read.
    pub fn raw_status(&self) -> &str {
        self.status.as_deref().unwrap_or("idle")
    }

    /// The status as the CLI prints it (`starting` is `unknown`).
    pub fn status_string(&self) -> &str {
        let s = self.raw_status();
        if KNOWN_STATUSES.contains(&s) {
            s
        } else {
            "unknown"
        }
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
        let hex = |p: &str| {
            p.len() == 8
                && p.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        match self.id.split_once('-') {
            Some((prefix, secs))
                if hex(prefix) && !secs.is_empty() && secs.bytes().all(|b| b.is_ascii_digit()) =>
            {
                secs.parse().unwrap_or(DEFAULT_CREATED)
            }
            _ => DEFAULT_CREATED,
        }
    }

    /// Appends a line to the pane, if there is one.
    pub fn append_pane_line(&mut self, line: &str) {
        if let Some(pane) = self.pane.as_mut() {
            if !pane.is_empty() && !pane.ends_with('\n') {
                pane.push('\n');
            }
            pane.push_str(line);
        }
    }
}
