//! A simulated agent-deck CLI built into the binary, for the `demo` command.
//!
//! It owns the `__sim` entry point: it answers the commands the watchdog uses
//! (`list`, `session show|restart|start|send|output`, `remove`) the way the
//! real CLI does (see `agent-deck-contract.md`), from a JSON state file named
//! by [`STATE_ENV`], and appends one JSON line per call to the log named by
//! [`LOG_ENV`]. Every change to the state file happens under an exclusive
//! `flock` on `<state>.lock` and is written atomically (temp file + rename).
//! It must not touch tmux, a real agent-deck, or any file but those three, and
//! it must never panic on a bad state file or command line: that is exit 1 or
//! 2 with `Error: …`, like the real CLI.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::{json, Value};

/// Env var naming the JSON state file; required.
pub const STATE_ENV: &str = "AGENT_DECK_SIM_STATE";
/// Env var naming the call log (one JSON line per call:
/// `{"ts": float unix secs, "argv": [...]}`); optional.
pub const LOG_ENV: &str = "AGENT_DECK_SIM_LOG";

const CREATED_AT: &str = "2026-11-30T00:00:00Z";

/// One simulated session, as stored in the state file.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SimSession {
    pub id: String,
    pub title: String,
    pub group: String,
    /// Empty means "default".
    pub profile: String,
    /// Raw status; empty reads as "idle" (a session never started).
    pub status: String,
    pub substate: String,
    pub pane: String,
    /// Each `output --pane` appends a new line, so the pane looks busy.
    pub pane_moving: bool,
    pub auth_hold: Option<Value>,
    pub channels: Vec<String>,
    pub parent_session_id: String,
    pub sent: Vec<String>,
    pub restarts: u32,
    pub ticks: u32,
}

/// The whole state file.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SimState {
    pub sessions: Vec<SimSession>,
}

/// Runs one simulated agent-deck invocation; returns the exit code. Output
/// goes to stdout/stderr like the real CLI.
pub fn main(args: &[String]) -> i32 {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let (state, log) = (var(STATE_ENV), var(LOG_ENV));
    let (mut out, mut err) = (io::stdout().lock(), io::stderr().lock());
    let code = run(args, state.as_deref(), log.as_deref(), &mut out, &mut err);
    let _ = out.flush();
    let _ = err.flush();
    code
}

/// Read-modify-write of the state file under an exclusive flock on
/// "<state>.lock", written atomically (temp + rename). A missing file starts
/// as an empty state, so the demo driver can create it with this too.
pub fn update(path: &Path, f: impl FnOnce(&mut SimState)) -> io::Result<()> {
    transact(path, true, f)
}

/// Reads the state file; a missing or malformed file is an error naming it.
pub fn load(path: &Path) -> io::Result<SimState> {
    read_state(path, false)
}

// ------------------------------------------------------------------ state

fn transact<T>(path: &Path, missing_ok: bool, f: impl FnOnce(&mut SimState) -> T) -> io::Result<T> {
    let _lock = lock(path)?;
    let mut state = read_state(path, missing_ok)?;
    let before = state.clone();
    let result = f(&mut state);
    if state != before || (missing_ok && !path.exists()) {
        write_state(path, &state)?;
    }
    Ok(result)
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

fn read_state(path: &Path, missing_ok: bool) -> io::Result<SimState> {
    let text = match fs::read_to_string(path) {
        Err(e) if missing_ok && e.kind() == io::ErrorKind::NotFound => {
            return Ok(SimState::default())
        }
        Err(e) => {
            return Err(io::Error::new(
                e.kind(),
                format!("cannot read {}: {e}", path.display()),
            ))
        }
        Ok(text) => text,
    };
    serde_json::from_str(&text).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("sim state {} is not valid: {e}", path.display()),
        )
    })
}

fn write_state(path: &Path, state: &SimState) -> io::Result<()> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let tmp = with_suffix(path, &format!(".tmp-{}-{nanos}", std::process::id()));
    let text = serde_json::to_string_pretty(state).map_err(io::Error::other)? + "\n";
    let result = fs::write(&tmp, text).and_then(|()| fs::rename(&tmp, path));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))
}

fn log_call(path: &Path, args: &[String]) -> io::Result<()> {
    let ts = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let line = json!({"ts": ts, "argv": args}).to_string() + "\n";
    // O_APPEND and one write, so concurrent calls never interleave a line.
    OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)?
        .write_all(line.as_bytes())
}

// ------------------------------------------------------------------ command line

/// One parsed invocation.
#[derive(Debug)]
struct Call {
    /// "list", "remove", "session show" and so on.
    name: String,
    flags: HashSet<String>,
    pos: Vec<String>,
    /// The `-p` argument as given, "" when none.
    profile_arg: String,
}

impl Call {
    fn on(&self, flag: &str) -> bool {
        self.flags.contains(flag)
    }

    fn quiet(&self) -> bool {
        self.on("quiet") || self.on("q")
    }

    fn profile(&self) -> &str {
        if self.profile_arg.is_empty() {
            "default"
        } else {
            &self.profile_arg
        }
    }
}

/// What one invocation prints and returns.
#[derive(Debug)]
struct Reply {
    code: i32,
    out: String,
    err: String,
}

impl Reply {
    fn ok(out: String) -> Reply {
        Reply {
            code: 0,
            out,
            err: String::new(),
        }
    }

    fn fail(code: i32, err: String) -> Reply {
        Reply {
            code,
            out: String::new(),
            err,
        }
    }
}

const SESSION_SUBCOMMANDS: [&str; 5] = ["show", "restart", "start", "send", "output"];

fn parse(args: &[String]) -> Result<Call, Reply> {
    let (profile_arg, rest) = global_profile(args)?;
    let words = match rest {
        [first, ..] if first == "list" || first == "remove" => 1,
        [first, sub, ..] if first == "session" && SESSION_SUBCOMMANDS.contains(&sub.as_str()) => 2,
        _ => return Err(Reply::fail(1, "Error: unknown command\n".into())),
    };
    let name = rest[..words].join(" ");
    let (flags, pos) = parse_flags(&name, &rest[words..])?;
    Ok(Call {
        name,
        flags,
        pos,
        profile_arg,
    })
}

/// The global `-p NAME`, `-p=NAME`, `--profile NAME`, `--profile=NAME`, taken
/// only before the first subcommand token.
fn global_profile(args: &[String]) -> Result<(String, &[String]), Reply> {
    let (mut profile, mut rest) = (String::new(), args);
    loop {
        match rest {
            [flag, name, tail @ ..] if flag == "-p" || flag == "--profile" => {
                (profile, rest) = (name.clone(), tail);
            }
            [flag] if flag == "-p" || flag == "--profile" => {
                return Err(Reply::fail(
                    1,
                    format!("Error: {flag} requires a profile name\n"),
                ));
            }
            [arg, tail @ ..] => match arg
                .strip_prefix("-p=")
                .or_else(|| arg.strip_prefix("--profile="))
            {
                Some(name) => (profile, rest) = (name.to_owned(), tail),
                None => return Ok((profile, rest)),
            },
            [] => return Ok((profile, rest)),
        }
    }
}

/// The flags each command defines; a trailing `=` marks one that takes a value.
fn spec(name: &str) -> &'static [&'static str] {
    match name {
        "list" => &["json", "quiet", "q", "all"],
        "session restart" => &["json", "quiet", "q", "force", "all", "env="],
        // `session send` has -q but no --quiet (contract §3).
        "session send" => &["json", "q", "no-wait"],
        "session output" => &["json", "quiet", "q", "copy", "pane"],
        _ => &["json", "quiet", "q"],
    }
}

/// Go `flag.ExitOnError` after `normalizeArgs`: flags may sit anywhere,
/// `-x` and `--x` are the same, a bad or unknown flag exits 2.
fn parse_flags(name: &str, args: &[String]) -> Result<(HashSet<String>, Vec<String>), Reply> {
    let usage = format!("Usage: agent-deck {name} [options]\n");
    let bad = |msg: String| Reply::fail(2, format!("{msg}\n{usage}"));
    let (mut flags, mut pos) = (HashSet::new(), Vec::new());
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--" {
            pos.extend(it.by_ref().cloned());
            break;
        }
        let body = match arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) {
            Some(body) if !body.is_empty() => body,
            _ => {
                pos.push(arg.clone());
                continue;
            }
        };
        let (key, value) = body
            .split_once('=')
            .map_or((body, None), |(k, v)| (k, Some(v)));
        if key == "h" || key == "help" {
            return Err(Reply::fail(0, usage.clone()));
        }
        if spec(name).contains(&format!("{key}=").as_str()) {
            value
                .or_else(|| it.next().map(String::as_str))
                .ok_or_else(|| bad(format!("flag needs an argument: -{key}")))?;
            flags.insert(key.to_owned());
            continue;
        }
        if !spec(name).contains(&key) {
            return Err(bad(format!("flag provided but not defined: -{key}")));
        }
        match value.map_or(Ok(true), str::parse::<bool>) {
            Ok(true) => flags.insert(key.to_owned()),
            Ok(false) => flags.remove(key),
            Err(_) => {
                let value = value.unwrap_or_default();
                return Err(bad(format!(
                    "invalid boolean value \"{value}\" for -{key}: parse error"
                )));
            }
        };
    }
    Ok((flags, pos))
}

// ------------------------------------------------------------------ output

/// `json.MarshalIndent(v, "", "  ")` plus a newline, with Go's HTML escaping
/// (these characters only ever occur inside string literals).
fn go_json(v: &impl Serialize) -> String {
    let text = serde_json::to_string_pretty(v).unwrap_or_else(|_| "null".into());
    let escapes = [
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u{2028}", "\\u2028"),
        ("\u{2029}", "\\u2029"),
    ];
    escapes.iter().fold(text, |t, (c, esc)| t.replace(c, esc)) + "\n"
}

/// Quiet prints nothing; `--json` prints `data` with sorted keys (a Go map);
/// otherwise `human`.
fn emit(c: &Call, human: String, mut data: Value) -> Reply {
    data.sort_all_objects();
    match (c.quiet(), c.on("json")) {
        (true, _) => Reply::ok(String::new()),
        (false, true) => Reply::ok(go_json(&data)),
        (false, false) => Reply::ok(human),
    }
}

fn success(c: &Call, message: String, data: Value) -> Reply {
    emit(c, format!("\u{2713} {message}\n"), data)
}

/// Under `--json` the error goes to stdout and stderr stays empty.
fn failure(c: &Call, exit: i32, code: &str, msg: String) -> Reply {
    if !c.on("json") {
        return Reply::fail(exit, format!("Error: {msg}\n"));
    }
    let mut data = json!({"code": code, "error": msg, "success": false});
    data.sort_all_objects();
    Reply {
        code: exit,
        out: go_json(&data),
        err: String::new(),
    }
}

// ------------------------------------------------------------------ sessions

fn profile_of(s: &SimSession) -> &str {
    if s.profile.is_empty() {
        "default"
    } else {
        &s.profile
    }
}

fn raw_status(s: &SimSession) -> &str {
    if s.status.is_empty() {
        "idle"
    } else {
        &s.status
    }
}

/// `StatusString`: the known statuses print as themselves, the rest as "unknown".
fn status_string(s: &SimSession) -> &str {
    match raw_status(s) {
        st @ ("running" | "waiting" | "idle" | "error" | "stopped" | "queued") => st,
        _ => "unknown",
    }
}

fn alive(s: &SimSession) -> bool {
    matches!(raw_status(s), "running" | "waiting" | "idle")
}

fn path_of(s: &SimSession) -> String {
    format!("/tmp/sim/{}", s.title)
}

fn ident(s: &SimSession) -> Value {
    json!({"id": s.id, "success": true, "title": s.title})
}

/// `ResolveSession` within the profile: exact title, then an id prefix of at
/// least 6 characters, then path. More than one match is AMBIGUOUS (exit 1).
fn find(c: &Call, st: &SimState, not_found_suffix: &str) -> Result<usize, Reply> {
    let Some(id) = c.pos.first().filter(|i| !i.is_empty()) else {
        return Err(failure(
            c,
            1,
            "INVALID_OPERATION",
            "session ID or title is required".into(),
        ));
    };
    let tiers: [&dyn Fn(&SimSession) -> bool; 3] = [
        &|s| s.title == *id,
        &|s| id.len() >= 6 && s.id.starts_with(id.as_str()),
        &|s| path_of(s) == *id,
    ];
    for tier in tiers {
        let mine =
            |i: &usize| profile_of(&st.sessions[*i]) == c.profile() && tier(&st.sessions[*i]);
        match (0..st.sessions.len()).filter(mine).collect::<Vec<_>>()[..] {
            [] => continue,
            [only] => return Ok(only),
            _ => {
                let msg =
                    format!("'{id}' matches multiple sessions; use full ID or more specific title");
                return Err(failure(c, 1, "AMBIGUOUS", msg));
            }
        }
    }
    let msg = format!("session '{id}' not found{not_found_suffix}");
    Err(failure(c, 2, "NOT_FOUND", msg))
}

// ------------------------------------------------------------------ commands

fn run(
    args: &[String],
    state: Option<&Path>,
    log: Option<&Path>,
    out: &mut impl Write,
    err: &mut impl Write,
) -> i32 {
    if let Some(log) = log {
        if let Err(e) = log_call(log, args) {
            let _ = writeln!(
                err,
                "warning: cannot append to sim call log {}: {e}; continuing",
                log.display()
            );
        }
    }
    let reply = match (parse(args), state) {
        (Err(reply), _) => reply,
        (Ok(_), None) => Reply::fail(1, format!("Error: {STATE_ENV} is not set\n")),
        (Ok(call), Some(path)) => transact(path, false, |st| execute(&call, st))
            .unwrap_or_else(|e| Reply::fail(1, format!("Error: {e}\n"))),
    };
    let _ = out.write_all(reply.out.as_bytes());
    let _ = err.write_all(reply.err.as_bytes());
    reply.code
}

fn execute(c: &Call, st: &mut SimState) -> Reply {
    let result = match c.name.as_str() {
        "list" if c.on("all") => Ok(list_all(c, st)),
        "list" => Ok(list_profile(c, st)),
        "session show" => show(c, st),
        "session restart" => restart(c, st),
        "session start" => start(c, st),
        "session send" => send(c, st),
        "session output" => output(c, st),
        "remove" => remove(c, st),
        _ => Err(Reply::fail(1, "Error: unknown command\n".into())),
    };
    match result {
        Ok(reply) | Err(reply) => reply,
    }
}

/// An element of `list --all --json`, keys in the real CLI's order.
#[derive(Serialize)]
struct AllEntry {
    id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    parent_session_id: String,
    title: String,
    path: String,
    group: String,
    tool: &'static str,
    profile: String,
    created_at: &'static str,
}

/// An element of `-p P list --json`, keys in the real CLI's order.
#[derive(Serialize)]
struct ProfileEntry {
    id: String,
    title: String,
    path: String,
    group: String,
    tool: &'static str,
    status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    substate: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    parent_session_id: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    channels: Vec<String>,
    profile: String,
    archived: bool,
    archived_at: &'static str,
    created_at: &'static str,
}

/// `--all` ignores `-p`, walks the profiles in sorted order, and has no status.
fn list_all(c: &Call, st: &SimState) -> Reply {
    let mut sessions: Vec<&SimSession> = st.sessions.iter().collect();
    sessions.sort_by_key(|s| profile_of(s));
    let entry = |s: &&SimSession| AllEntry {
        id: s.id.clone(),
        parent_session_id: s.parent_session_id.clone(),
        title: s.title.clone(),
        path: path_of(s),
        group: s.group.clone(),
        tool: "claude",
        profile: profile_of(s).to_owned(),
        created_at: CREATED_AT,
    };
    let entries: Vec<AllEntry> = sessions.iter().map(entry).collect();
    match (entries.is_empty(), c.on("json")) {
        (true, true) => Reply::ok("null\n".into()),
        (true, false) => Reply::ok("No sessions found.\n".into()),
        (false, true) => Reply::ok(go_json(&entries)),
        (false, false) => Reply::ok(
            entries
                .iter()
                .map(|e| format!("{}  {}  {}\n", e.profile, e.id, e.title))
                .collect(),
        ),
    }
}

fn list_profile(c: &Call, st: &SimState) -> Reply {
    let entry = |s: &SimSession| ProfileEntry {
        id: s.id.clone(),
        title: s.title.clone(),
        path: path_of(s),
        group: s.group.clone(),
        tool: "claude",
        status: status_string(s).to_owned(),
        substate: s.substate.clone(),
        parent_session_id: s.parent_session_id.clone(),
        channels: s.channels.clone(),
        profile: c.profile().to_owned(),
        archived: false,
        archived_at: "0001-01-01T00:00:00Z",
        created_at: CREATED_AT,
    };
    let mine = st.sessions.iter().filter(|s| profile_of(s) == c.profile());
    let entries: Vec<ProfileEntry> = mine.map(entry).collect();
    if entries.is_empty() {
        Reply::ok(format!("No sessions found in profile '{}'.\n", c.profile()))
    } else if c.on("json") {
        Reply::ok(go_json(&entries))
    } else {
        Reply::ok(
            entries
                .iter()
                .map(|e| format!("{}  {}  {}\n", e.id, e.title, e.status))
                .collect(),
        )
    }
}

fn show(c: &Call, st: &SimState) -> Result<Reply, Reply> {
    let s = &st.sessions[find(c, st, "")?];
    let mut data = json!({
        "id": s.id, "title": s.title, "path": path_of(s), "group": s.group, "tool": "claude",
        "command": "claude", "status": status_string(s), "profile": c.profile_arg,
        "parent_session_id": s.parent_session_id, "parent_project_path": "",
        "no_transition_notify": false, "title_locked": false, "created_at": CREATED_AT,
        "wrapper": "", "auto_name": false, "claude_session_id": "", "can_fork": false,
        "can_restart": true,
    });
    if !s.substate.is_empty() {
        data["substate"] = json!(s.substate);
    }
    if !s.channels.is_empty() {
        data["channels"] = json!(s.channels);
    }
    if let Some(hold) = &s.auth_hold {
        data["auth_hold"] = hold.clone();
    }
    let human = format!(
        "Session: {}\nID:      {}\nStatus:  {}\n",
        s.title,
        s.id,
        status_string(s)
    );
    Ok(emit(c, human, data))
}

/// The auth-hold guard reads the stored status; `--force` or `--env` bypass it.
fn restart(c: &Call, st: &mut SimState) -> Result<Reply, Reply> {
    let i = find(c, st, "")?;
    let s = &mut st.sessions[i];
    let guarded = !(alive(s) || raw_status(s) == "starting" || c.on("force") || c.on("env"));
    if let Some(hold) = s.auth_hold.as_ref().filter(|_| guarded) {
        let remedy = hold
            .get("remedy")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty());
        let reason = format!(
            "{} (use --force to restart anyway)",
            remedy.unwrap_or("auth hold")
        );
        let mut data = ident(s);
        (data["reason"], data["skipped"]) = (json!(reason), json!(true));
        return Ok(success(
            c,
            format!("Skipped restart of {}: {reason}", s.title),
            data,
        ));
    }
    s.status = "running".into();
    s.substate.clear();
    s.restarts += 1;
    s.pane_moving = false;
    s.pane = format!("restarted {}", s.restarts);
    Ok(success(
        c,
        format!("Restarted session: {}", s.title),
        ident(s),
    ))
}

fn start(c: &Call, st: &mut SimState) -> Result<Reply, Reply> {
    let i = find(c, st, "")?;
    let s = &mut st.sessions[i];
    if alive(s) {
        let msg = format!("session '{}' is already running", s.title);
        return Err(failure(c, 1, "INVALID_OPERATION", msg));
    }
    s.status = "running".into();
    s.substate.clear();
    Ok(success(
        c,
        format!("Started session: {}", s.title),
        ident(s),
    ))
}

fn send(c: &Call, st: &mut SimState) -> Result<Reply, Reply> {
    if c.pos.len() < 2 {
        // The real CLI prints this usage text to stdout.
        let usage = "Usage: agent-deck session send <id|title> <message> [options]\n";
        return Err(Reply {
            code: 1,
            out: usage.into(),
            err: String::new(),
        });
    }
    let i = find(c, st, "")?;
    let s = &mut st.sessions[i];
    let message = c.pos[1..].join(" ");
    s.sent.push(message.clone());
    let data = json!({"delivery": "submitted", "message": message, "session_id": s.id,
                      "session_title": s.title, "submitted": true, "success": true});
    Ok(success(c, format!("Sent message to '{}'", s.title), data))
}

/// `--pane` is the pane capture (a moving pane grows one line per read);
/// without it, the last assistant response, which the sim never has. Quiet
/// mode still prints the content.
fn output(c: &Call, st: &mut SimState) -> Result<Reply, Reply> {
    let i = find(c, st, "")?;
    let s = &mut st.sessions[i];
    if c.on("pane") && s.pane_moving {
        s.ticks += 1;
        if !s.pane.is_empty() && !s.pane.ends_with('\n') {
            s.pane.push('\n');
        }
        s.pane += &format!("working\u{2026} step {}", s.ticks);
    }
    let (content, role) = if c.on("pane") {
        (s.pane.clone(), "pane")
    } else {
        (String::new(), "assistant")
    };
    if !c.on("json") {
        return Ok(Reply::ok(content + "\n"));
    }
    let mut data = json!({"content": content, "role": role, "session_id": s.id,
                          "session_title": s.title, "success": true, "tool": "claude"});
    data.sort_all_objects();
    Ok(Reply::ok(go_json(&data)))
}

fn remove(c: &Call, st: &mut SimState) -> Result<Reply, Reply> {
    let profile = c.profile().to_owned();
    let i = find(c, st, &format!(" (profile '{profile}')"))?;
    let s = st.sessions.remove(i);
    let mut data = ident(&s);
    (data["profile"], data["removed"]) = (json!(profile), json!(true));
    Ok(success(
        c,
        format!("Removed session: {} (from profile '{profile}')", s.title),
        data,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tempfile::TempDir;

    struct Sim {
        _dir: TempDir,
        state: PathBuf,
        log: PathBuf,
    }

    fn session(id: &str, title: &str, status: &str) -> SimSession {
        SimSession {
            id: id.into(),
            title: title.into(),
            status: status.into(),
            ..SimSession::default()
        }
    }

    fn sim(sessions: Vec<SimSession>) -> Sim {
        let dir = tempfile::tempdir().expect("temp dir");
        let state = dir.path().join("state.json");
        let log = dir.path().join("calls.log");
        update(&state, |st| st.sessions = sessions).expect("write state");
        Sim {
            _dir: dir,
            state,
            log,
        }
    }

    impl Sim {
        fn call(&self, args: &[&str]) -> (i32, String, String) {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let code = run(
                &args,
                Some(&self.state),
                Some(&self.log),
                &mut out,
                &mut err,
            );
            let text = |b: Vec<u8>| String::from_utf8(b).expect("utf-8 output");
            (code, text(out), text(err))
        }

        fn json(&self, args: &[&str]) -> Value {
            let (code, out, err) = self.call(args);
            assert_eq!((code, err.as_str()), (0, ""), "{args:?} printed {out}");
            serde_json::from_str(&out).expect("stdout is JSON")
        }

        fn session(&self, id: &str) -> SimSession {
            let state = load(&self.state).expect("load state");
            state
                .sessions
                .into_iter()
                .find(|s| s.id == id)
                .expect("session present")
        }
    }

    const ID: &str = "3f9c2a1b-1755891234";

    fn held(status: &str) -> SimSession {
        let hold = json!({"reason": "auth_death", "remedy": "log in again", "evidence": "401",
                          "boot_attempts": 1, "ts": 1});
        SimSession {
            auth_hold: Some(hold),
            ..session(ID, "conductor-ops", status)
        }
    }

    #[test]
    fn list_all_has_no_status_and_is_null_when_empty() {
        let mut worker = session("a0b1c2d3-1755899999", "worker-1", "running");
        (worker.profile, worker.parent_session_id) = ("work".into(), ID.into());
        let s = sim(vec![worker, session(ID, "conductor-ops", "error")]);
        let list = s.json(&["-p", "work", "list", "--all", "--json"]);
        let entries = list.as_array().expect("array");
        assert_eq!(entries.len(), 2, "--all ignores -p");
        assert_eq!(
            entries[0]["profile"], "default",
            "profiles walk in sorted order"
        );
        assert_eq!(entries[1]["parent_session_id"], ID);
        assert!(
            entries[0].get("parent_session_id").is_none(),
            "empty parent omitted"
        );
        assert!(entries
            .iter()
            .all(|e| e.get("status").is_none() && e.get("channels").is_none()));
        assert_eq!(entries[0]["path"], "/tmp/sim/conductor-ops");
        assert_eq!(
            sim(vec![]).call(&["list", "--all", "--json"]),
            (0, "null\n".into(), String::new())
        );
    }

    #[test]
    fn profile_list_has_status_and_maps_starting_to_unknown() {
        let mut boot = session("b0b1c2d3-1755899999", "boot", "starting");
        boot.channels = vec!["plugin:telegram@claude-plugins-official".into()];
        let s = sim(vec![session(ID, "conductor-ops", "error"), boot]);
        let list = s.json(&["list", "--json"]);
        assert_eq!(list[0]["status"], "error");
        assert_eq!(list[1]["status"], "unknown");
        assert_eq!(
            list[1]["channels"][0],
            "plugin:telegram@claude-plugins-official"
        );
        assert!(list[0].get("channels").is_none() && list[0].get("substate").is_none());
        assert_eq!(list[0]["archived"], false);
        let (code, out, _) = s.call(&["-p", "work", "list", "--json"]);
        assert_eq!(
            (code, out.as_str()),
            (0, "No sessions found in profile 'work'.\n")
        );
    }

    #[test]
    fn show_keys_are_sorted_and_profile_echoes_the_p_argument() {
        let mut s0 = held("error");
        s0.substate = "auth-401".into();
        let s = sim(vec![s0]);
        let (code, out, _) = s.call(&["session", "show", ID, "--json"]);
        assert_eq!(code, 0);
        let keys: Vec<&str> = out
            .lines()
            .filter_map(|l| l.strip_prefix("  \"")?.split('"').next())
            .collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
        for key in [
            "id",
            "wrapper",
            "parent_project_path",
            "substate",
            "auth_hold",
            "created_at",
        ] {
            assert!(keys.contains(&key), "{key} missing from {out}");
        }
        let v: Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(v["profile"], "", "no -p given");
        assert_eq!(v["auth_hold"]["remedy"], "log in again");
        assert_eq!(
            s.json(&["-p=default", "session", "show", "conductor-ops", "--json"])["profile"],
            "default"
        );
    }

    #[test]
    fn show_unknown_id_exits_2_with_json_error_on_stdout() {
        let s = sim(vec![session(ID, "conductor-ops", "idle")]);
        let (code, out, err) = s.call(&["session", "show", "nosuch", "--json"]);
        assert_eq!((code, err.as_str()), (2, ""));
        let v: Value = serde_json::from_str(&out).expect("JSON error");
        assert_eq!(
            v,
            json!({"code": "NOT_FOUND", "error": "session 'nosuch' not found", "success": false})
        );
        let (code, out, err) = s.call(&["-p", "work", "session", "show", ID]);
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (2, "", &*format!("Error: session '{ID}' not found\n"))
        );
    }

    #[test]
    fn id_prefix_of_six_resolves_and_title_wins() {
        let s = sim(vec![
            session(ID, "first", "idle"),
            session("aaaaaa11-1", "3f9c2a", "idle"),
        ]);
        assert_eq!(
            s.json(&["session", "show", "3f9c2a", "--json"])["title"],
            "3f9c2a",
            "title beats id prefix"
        );
        assert_eq!(
            s.json(&["session", "show", "3f9c2a1", "--json"])["title"],
            "first"
        );
        assert_eq!(
            s.call(&["session", "show", "3f9c2", "--json"]).0,
            2,
            "prefix shorter than 6"
        );
    }

    #[test]
    fn profile_flag_counts_only_before_the_subcommand() {
        let s = sim(vec![session(ID, "t", "idle")]);
        let (code, _, err) = s.call(&["session", "show", "-p", "default", ID]);
        assert_eq!(code, 2);
        assert!(
            err.starts_with("flag provided but not defined: -p"),
            "{err}"
        );
        assert_eq!(s.call(&["session", "show", ID, "--bogus"]).0, 2);
        assert_eq!(
            s.call(&["--profile", "default", "session", "show", ID]).0,
            0
        );
    }

    #[test]
    fn restart_of_auth_held_session_is_skipped() {
        let s = sim(vec![held("error")]);
        let v = s.json(&["session", "restart", ID, "--json"]);
        let reason = "log in again (use --force to restart anyway)";
        let want = json!({"id": ID, "reason": reason, "skipped": true, "success": true,
                          "title": "conductor-ops"});
        assert_eq!(v, want);
        assert_eq!(s.session(ID), held("error"), "a skip changes nothing");
        assert_eq!(
            s.json(&["session", "restart", ID, "--json", "--force"])["skipped"],
            Value::Null
        );
        assert_eq!(s.session(ID).status, "running");
    }

    #[test]
    fn restart_flips_error_to_running() {
        let mut s0 = session(ID, "conductor-ops", "error");
        (s0.substate, s0.pane, s0.pane_moving) = ("usage-limit".into(), "old".into(), true);
        let s = sim(vec![s0]);
        let v = s.json(&["session", "restart", ID, "--json"]);
        assert_eq!(
            v,
            json!({"id": ID, "success": true, "title": "conductor-ops"})
        );
        let after = s.session(ID);
        assert_eq!(
            (after.status.as_str(), after.substate.as_str()),
            ("running", "")
        );
        assert_eq!(
            (after.restarts, after.pane.as_str(), after.pane_moving),
            (1, "restarted 1", false)
        );
    }

    #[test]
    fn start_on_running_session_exits_1() {
        let s = sim(vec![
            session(ID, "conductor-ops", "running"),
            session("b0b1c2d3-1", "dead", "stopped"),
        ]);
        let (code, out, err) = s.call(&["session", "start", ID]);
        assert_eq!((code, out.as_str()), (1, ""));
        assert_eq!(err, "Error: session 'conductor-ops' is already running\n");
        assert_eq!(
            s.call(&["session", "start", "dead"]),
            (0, "\u{2713} Started session: dead\n".into(), String::new())
        );
        assert_eq!(s.session("b0b1c2d3-1").status, "running");
    }

    #[test]
    fn moving_pane_changes_between_reads() {
        let mut s0 = session(ID, "conductor-ops", "running");
        (s0.pane, s0.pane_moving) = ("banner".into(), true);
        let s = sim(vec![s0]);
        let first = s.call(&["session", "output", ID, "--pane", "-q"]);
        let second = s.call(&["session", "output", ID, "--pane", "-q"]);
        assert_eq!(
            first,
            (0, "banner\nworking\u{2026} step 1\n".into(), String::new())
        );
        assert_eq!(
            second.1,
            "banner\nworking\u{2026} step 1\nworking\u{2026} step 2\n"
        );
        assert_eq!(s.session(ID).ticks, 2);
        assert_eq!(
            s.call(&["session", "output", ID, "-quiet"]),
            (0, "\n".into(), String::new())
        );
    }

    #[test]
    fn send_records_the_message() {
        let s = sim(vec![session(ID, "worker-1", "waiting")]);
        let (code, out, _) = s.call(&["session", "send", ID, " -report", "status?", "--no-wait"]);
        assert_eq!(
            (code, out.as_str()),
            (0, "\u{2713} Sent message to 'worker-1'\n")
        );
        assert_eq!(s.session(ID).sent, vec![" -report status?".to_string()]);
        assert_eq!(
            s.call(&["session", "send", ID, "--quiet", "x"]).0,
            2,
            "send has -q only"
        );
    }

    #[test]
    fn remove_deletes_the_session() {
        let s = sim(vec![session(ID, "worker-1", "idle")]);
        let (code, out, _) = s.call(&["remove", ID]);
        assert_eq!(
            (code, out.as_str()),
            (
                0,
                "\u{2713} Removed session: worker-1 (from profile 'default')\n"
            )
        );
        assert!(load(&s.state).expect("state").sessions.is_empty());
        assert_eq!(
            s.call(&["remove", ID]).2,
            format!("Error: session '{ID}' not found (profile 'default')\n")
        );
    }

    #[test]
    fn watchdog_parser_reads_every_answer() {
        use crate::fleet::parse;
        let mut s0 = held("error");
        s0.channels = vec!["plugin:telegram@claude-plugins-official".into()];
        let s = sim(vec![s0]);
        let out = |args: &[&str]| s.call(args).1;
        let fleet = parse::list_all(&out(&["list", "--all", "--json"])).expect("list --all");
        assert_eq!(fleet.rows[0].id, ID);
        let live = parse::list_profile(&out(&["-p", "default", "list", "--json"])).expect("list");
        assert_eq!(live.rows[0].1.channels.len(), 1);
        let shown = parse::show(&out(&["-p", "default", "session", "show", ID, "--json"]));
        assert!(shown.expect("show").auth_hold.is_some());
        let skipped = parse::restart(&out(&["session", "restart", ID, "--json"])).expect("restart");
        assert!(matches!(skipped, parse::RestartAnswer::Skipped(_)));
        let (code, stdout, stderr) = s.call(&["session", "show", "nosuch", "--json"]);
        assert_eq!(code, 2);
        let msg = parse::error_message(&stdout, &stderr);
        assert_eq!(msg, "session 'nosuch' not found");
        assert!(parse::list_all(&sim(vec![]).call(&["list", "--all", "--json"]).1).is_ok());
    }

    #[test]
    fn call_log_has_one_json_line_per_call() {
        let s = sim(vec![]);
        s.call(&["-p", "work", "list", "--json"]);
        s.call(&["frobnicate"]);
        let text = fs::read_to_string(&s.log).expect("log");
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON line"))
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["argv"], json!(["-p", "work", "list", "--json"]));
        assert_eq!(lines[1]["argv"], json!(["frobnicate"]));
        assert!(lines
            .iter()
            .all(|l| l["ts"].as_f64().is_some_and(|t| t > 1.0e9)));
    }

    #[test]
    fn unknown_command_exits_1() {
        let s = sim(vec![]);
        assert_eq!(
            s.call(&["frobnicate"]),
            (1, String::new(), "Error: unknown command\n".into())
        );
        assert_eq!(s.call(&["session", "frob", ID]).0, 1);
        assert_eq!(s.call(&[]).0, 1);
    }

    #[test]
    fn bad_or_missing_state_is_an_error_not_a_panic() {
        let s = sim(vec![]);
        fs::write(&s.state, "{\"sessions\": [").expect("write garbage");
        let (code, _, err) = s.call(&["list", "--json"]);
        assert_eq!(code, 1);
        assert!(
            err.starts_with("Error: sim state ") && err.contains("is not valid"),
            "{err}"
        );
        fs::remove_file(&s.state).expect("remove state");
        let (code, _, err) = s.call(&["list", "--json"]);
        assert!(code == 1 && err.starts_with("Error: cannot read "), "{err}");
        assert!(!s.state.exists(), "a read never creates the state file");
        let (mut out, mut err) = (Vec::new(), Vec::new());
        assert_eq!(
            run(&["list".to_string()], None, None, &mut out, &mut err),
            1
        );
    }

    #[test]
    fn update_creates_the_state_file_and_writes_atomically() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("state.json");
        update(&path, |_| {}).expect("create");
        assert_eq!(load(&path).expect("load"), SimState::default());
        update(&path, |st| st.sessions.push(session(ID, "t", "error"))).expect("update");
        assert_eq!(load(&path).expect("load").sessions.len(), 1);
        let mut names: Vec<_> = fs::read_dir(dir.path())
            .expect("dir")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["state.json", "state.json.lock"],
            "no temp file left behind"
        );
    }
}
