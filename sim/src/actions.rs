//! The session commands: `session show|restart|start|send|output` and
//! `remove`, answering as the real CLI does (contract §2, §3). Each may
//! change the state (the caller writes it back); how a mutating command
//! turns out is the session's `on_restart`/`on_start`/`on_send`/`on_remove`.

use serde_json::{json, Value};

use super::args::{Call, CommandKind};
use super::full_context;
use super::list::{list_all, list_profile};
use super::live::{self, Moment};
use super::lookup::find;
use super::reply::{go_json, rfc3339, Out, Reply};
use super::state::{
    Delivery, OnRemove, OnRestart, OnSend, OnStart, SimSession, SimState, SpawnFailure,
};
use crate::release::Release;

/// The reason the freshness guard (#30) gives.
const FRESHNESS_REASON: &str = "session is running and was started 12s ago (within 1m0s \
freshness window); use --force to restart anyway";

/// Lines `output --pane` shows: 2000 of scrollback (`capture-pane -S
/// -2000`) and the visible screen below them (tmux's default 24 rows).
const PANE_LINES: usize = 2000 + 24;

/// The keys `session show --json` leaves out when they are empty.
const OMIT_EMPTY: [&str; 4] = ["command", "substate", "channels", "tmux_session"];

/// What tmux answers when asked to capture a session that is gone.
const CAPTURE_FAILED: &str = "failed to capture history: exit status 1";

pub(super) fn execute(c: &Call, st: &mut SimState, at: &Moment) -> Reply {
    let result = match c.kind {
        CommandKind::ListAll => Ok(list_all(c, st)),
        CommandKind::List => Ok(list_profile(c, st, at)),
        CommandKind::Show => show(c, st, at),
        CommandKind::Restart => restart(c, st, at),
        CommandKind::Start => start(c, st, at),
        CommandKind::Send => send(c, st, at),
        CommandKind::Output | CommandKind::OutputPane => output(c, st),
        CommandKind::Remove => remove(c, st),
        CommandKind::Set => set(c, st),
    };
    result.unwrap_or_else(|reply| reply)
}

fn out(c: &Call) -> Out {
    Out {
        json: c.on("json"),
        quiet: c.quiet(),
    }
}

fn show(c: &Call, st: &SimState, at: &Moment) -> Result<Reply, Reply> {
    let s = &st.sessions[find(c, st, out(c), "")?];
    let status = live::status(s, at);
    let status = live::printed(&status);
    let mut data = json!({
        "id": s.id, "title": s.title, "path": s.path(), "group": s.group, "tool": s.tool(),
        "status": status, "profile": c.profile_arg, "command": s.command, "substate": s.substate,
        "parent_session_id": s.parent_session_id, "parent_project_path": s.parent_project_path,
        "no_transition_notify": false, "title_locked": false, "tmux_session": s.tmux_session,
        "created_at": rfc3339(s.created_secs()), "wrapper": "", "auto_name": false,
    });
    if s.tool() == "claude" {
        // A session never started has no Claude session yet.
        let claude_id = if s.was_started() {
            s.claude_session_id.as_str()
        } else {
            ""
        };
        data["claude_session_id"] = json!(claude_id);
        data["can_fork"] = json!(!claude_id.is_empty());
        data["can_restart"] = json!(true);
        data["channels"] = json!(s.channels);
    }
    if let Some(hold) = s.hold() {
        data["auth_hold"] = hold.clone();
    }
    super::newer_keys::show(&mut data, s, status, st.release());
    // 1.16.11+, omitted when empty.
    let detail = s.shown_detail(st.release());
    if !detail.is_empty() {
        data["substate_detail"] = json!(detail);
    }
    let empty = |v: &Value| v.as_str() == Some("") || v.as_array().is_some_and(Vec::is_empty);
    if let Some(map) = data.as_object_mut() {
        map.retain(|k, v| !(OMIT_EMPTY.contains(&k.as_str()) && empty(v)));
    }
    if c.quiet() || c.on("json") {
        // Quiet prints nothing and `--json` the data, as any success does.
        return Ok(out(c).success("", data));
    }
    let (title, id, path, group, tool) = (&s.title, &s.id, s.path(), &s.group, s.tool());
    let text = format!(
        "Session: {title}\nID:      {id}\nStatus:  {status}\nPath:    {path}\nGroup:   {group}\nTool:    {tool}\n"
    );
    Ok(Reply::out(0, text))
}

/// The auth-hold guard, then the freshness guard (both read the status
/// `live::guard_status` gives; `--force` or any `--env` bypasses them),
/// then the mode. `on_restart: skipped` is the freshness guard on demand.
fn restart(c: &Call, st: &mut SimState, at: &Moment) -> Result<Reply, Reply> {
    let o = out(c);
    let i = find(c, st, o, "")?;
    let verified = st.release() >= Release::SPAWN_VERIFIED;
    let guarded = live::guard_status(&st.sessions[i], st, at);
    let fresh = live::freshness_skip(&st.sessions[i], st, at);
    let s = &mut st.sessions[i];
    let force = c.on("force") || !c.env.is_empty();
    let mode = s.on_restart.unwrap_or(OnRestart::Ok);
    let skipped = |reason: &str| {
        let data = json!({"id": s.id, "reason": reason, "skipped": true, "success": true,
                          "title": s.title});
        o.success(&format!("Skipped restart of {}: {reason}", s.title), data)
    };
    let alive = live::HEALTHY.contains(&guarded.as_str());
    if let Some(hold) = s.hold().filter(|_| !force && !alive) {
        let remedy = hold.get("remedy").map_or(String::new(), text);
        return Ok(skipped(&format!(
            "{remedy} (use --force to restart anyway)"
        )));
    }
    if mode == OnRestart::Skipped && !force {
        return Ok(skipped(FRESHNESS_REASON));
    }
    if let Some(reason) = fresh.filter(|_| !force) {
        return Ok(skipped(&reason));
    }
    if mode == OnRestart::Unsaved {
        s.restarts += 1;
        s.tmux_alive = Some(false);
        let spawned = live::new_tmux_name(&s.title, at);
        st.unsaved_tmux.push(spawned);
        return Err(o.invalid("failed to save session state: database is locked (5) (SQLITE_BUSY)"));
    }
    if mode == OnRestart::Fail {
        if let Some(f) = s.spawn_failure.clone().filter(|_| verified) {
            // The restart itself ran; what it spawned did not live.
            s.restarts += 1;
            return Err(spawn_failed("restart", s, &f, at, o));
        }
        return Err(o.invalid("failed to restart session: simulated"));
    }
    s.restarts += 1;
    if mode != OnRestart::NoEffect {
        let line = format!("restarted {}", s.restarts);
        if live::restart_keeps_tmux(s) {
            s.append_pane_line(&line);
        } else {
            // A new tmux session: the scrollback starts over.
            s.tmux_session = live::new_tmux_name(&s.title, at);
            s.pane = Some(line);
        }
        mark_started(s, at, "waiting");
        st.tmux_server = None;
    }
    let data = json!({"id": s.id, "success": true, "title": s.title});
    Ok(o.success(&format!("Restarted session: {}", s.title), data))
}

/// What a successful start or restart leaves: a live tmux session, status
/// `running`, the freshness stamp, and `stored` as the stored status.
fn mark_started(s: &mut SimSession, at: &Moment, stored: &str) {
    s.status = Some("running".into());
    s.substate.clear();
    s.started = s.started.map(|_| true);
    s.tmux_alive = s.tmux_alive.map(|_| true);
    s.last_started = Some(at.now);
    s.stored_status = Some(stored.into());
}

fn start(c: &Call, st: &mut SimState, at: &Moment) -> Result<Reply, Reply> {
    let o = out(c);
    let i = find(c, st, o, "")?;
    let verified = st.release() >= Release::SPAWN_VERIFIED;
    let s = &mut st.sessions[i];
    // The real CLI refuses whenever the tmux session exists, whatever the
    // status says; `on_start: ok` forces a success.
    let mode = s.on_start.unwrap_or(if s.tmux_exists() {
        OnStart::AlreadyRunning
    } else {
        OnStart::Ok
    });
    match mode {
        OnStart::AlreadyRunning => {
            return Err(o.invalid(&format!("session '{}' is already running", s.title)));
        }
        OnStart::Fail => {
            if let Some(f) = s.spawn_failure.clone().filter(|_| verified) {
                if f.reason == UNVERIFIED && f.came_up {
                    s.starts += 1;
                }
                return Err(spawn_failed("start", s, &f, at, o));
            }
            return Err(o.invalid("failed to start session: simulated"));
        }
        OnStart::Ok => {}
    }
    // A start reuses the tmux name the session already has.
    mark_started(s, at, "starting");
    st.tmux_server = None;
    s.starts += 1;
    let mut data = json!({"id": s.id, "success": true, "title": s.title});
    if !s.tmux_session.is_empty() {
        data["tmux"] = json!(s.tmux_session);
    }
    if s.tool() == "claude" && !s.claude_session_id.is_empty() {
        data["claude_session_id"] = json!(s.claude_session_id);
    }
    Ok(o.success(&format!("Started session: {}", s.title), data))
}

/// The reasons of a spawn whose existence probe never settled, and of a
/// tmux session that was gone with nothing recorded.
const UNVERIFIED: &str = "spawn_unverified";
const TMUX_MISSING: &str = "tmux_session_missing";

/// A restart or start whose spawn did not live, as agent-deck 1.16.10+
/// answers it (CHANGELOG 1.16.10, #2265; `spawnFailureOutput` and
/// `spawnFailureJSON` in `cmd/agent-deck/session_cmd.go`): exit 1,
/// `INVALID_OPERATION`. A dead spawn leaves the session `error` with no tmux
/// session; an unverified one is left as it was, or up when `came_up`.
fn spawn_failed(verb: &str, s: &mut SimSession, f: &SpawnFailure, at: &Moment, o: Out) -> Reply {
    let mut data = json!({"id": s.id, "title": s.title, "reason": f.reason});
    let cause = if f.reason == UNVERIFIED {
        if f.came_up {
            let stored = if verb == "start" {
                "starting"
            } else {
                "waiting"
            };
            mark_started(s, at, stored);
        }
        "could not confirm the tmux session exists: probe timed out".to_owned()
    } else {
        // A start reuses the session's tmux name, as a restart of a known
        // Claude session does; any other restart makes a new one.
        let renamed = verb == "restart" && !live::restart_keeps_tmux(s);
        if s.tmux_session.is_empty() || renamed {
            s.tmux_session = live::new_tmux_name(&s.title, at);
        }
        s.status = Some("error".into());
        s.stored_status = Some("error".into());
        s.tmux_alive = Some(false);
        let tmux = s.tmux_session.clone();
        data["tmux"] = json!(tmux);
        if f.reason == TMUX_MISSING {
            format!("tmux session {tmux:?} does not exist after spawn")
        } else {
            let elapsed = f.elapsed_ms.unwrap_or(0);
            data["spawn_failure"] = json!({"reason": f.reason, "command": s.command,
                "dying_output": f.dying_output, "elapsed_ms": elapsed, "ts": at.now as i64});
            let mut cause = format!("tmux session {tmux:?} is gone: {}", f.reason);
            if f.reason == "spawn_died_fast" && elapsed > 0 {
                cause.push_str(&format!(" (exited after {elapsed}ms)"));
            }
            let dying = f.dying_output.trim();
            if !dying.is_empty() {
                cause.push_str(&format!(": {dying}"));
            }
            cause
        }
    };
    let message = format!("failed to {verb} session: {cause}");
    o.error(&message, "INVALID_OPERATION", 1, Some(data))
}

/// Claude-family tools get Claude's submit check, which the simulator takes
/// as passed. Other tools get the content-arrival check: a message whose
/// trimmed text is at least this many bytes is looked for in the pane, and
/// seeing it there without the agent turning busy is `typed`, a failure; a
/// shorter one cannot be looked for and is `unverified`, a success.
const ARRIVAL_TOKEN_MIN: usize = 12;

/// The checks the content-arrival poll makes before it gives up.
const ARRIVAL_CHECKS: u32 = 10;

fn send(c: &Call, st: &mut SimState, at: &Moment) -> Result<Reply, Reply> {
    if c.pos.len() < 2 {
        // The real CLI prints this usage text to stdout.
        let usage = "Usage: agent-deck session send <id|title> <message> [options]\n";
        return Err(Reply::out(1, usage.into()));
    }
    let o = out(c);
    let i = find(c, st, o, "")?;
    let s = &mut st.sessions[i];
    let message = c.pos[1..].join(" ");
    let mode = match s.on_send {
        _ if !s.tmux_exists() => OnSend::NotRunning,
        mode => mode.unwrap_or(OnSend::Ok),
    };
    match mode {
        OnSend::NotRunning => {
            return Err(o.invalid(&format!("session '{}' is not running", s.title)));
        }
        OnSend::Fail => {
            let msg = format!("message was not delivered to '{}': simulated", s.title);
            let extra = json!({"delivery": "send_failed", "submitted": false,
                               "session_id": s.id, "session_title": s.title});
            return Err(o.error(&msg, "DELIVERY_FAILED", 1, Some(extra)));
        }
        OnSend::Ok | OnSend::Typed | OnSend::Bounce | OnSend::NoEvidence => {}
    }
    s.sent.push(message.clone());
    // 1.14.0's text (`sendWithRetryTarget`, session_cmd.go:3701@47bb2103):
    // 30 checks under `--no-wait`, 50 without.
    let checks = if c.on("no-wait") { 30 } else { 50 };
    let no_evidence = format!(
        "message not delivered to '{}': send dropped silently: no evidence of delivery \
         after {checks} checks (issue #876). The agent never transitioned to 'active', no \
         composer/unsent-paste marker appeared, and the message body was not visible in \
         the pane. Verify the inner agent is reading from its TTY before retrying",
        s.title
    );
    let extra = json!({"delivery": "no_evidence", "submitted": false,
                       "session_id": s.id, "session_title": s.title});
    // `/clear`, `/compact`, and a full or answering session's turns.
    let taken = full_context::take(s, &message, at);
    if taken == Some(Delivery::NoEvidence) {
        return Err(o.error(&no_evidence, "DELIVERY_FAILED", 1, Some(extra)));
    }
    // A pane whose last turn ended on an API error banner gets the message
    // and a new turn: a resumed one, or the same error again.
    let pane = s.pane.as_deref().unwrap_or_default();
    let turn = pane
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('⏺'));
    if let Some(banner) = turn
        .filter(|l| taken.is_none() && l.starts_with("⏺ API Error"))
        .map(str::to_owned)
    {
        s.append_pane_line(&format!("❯ {message}"));
        s.append_pane_line(if mode == OnSend::Bounce {
            &banner
        } else {
            "⏺ Resumed."
        });
    }
    // A turn that goes through ends a stall: the limit's record is no longer
    // the last, the model answered.
    if mode != OnSend::Bounce && ["usage-limit", "model-unavailable"].contains(&s.substate.as_str())
    {
        if s.substate == "model-unavailable" {
            s.status = Some("idle".into());
        }
        s.substate.clear();
    }
    if mode == OnSend::NoEvidence {
        return Err(o.error(&no_evidence, "DELIVERY_FAILED", 1, Some(extra)));
    }
    let unconfirmed = !s.claude_family() && message.trim().len() >= ARRIVAL_TOKEN_MIN;
    if mode == OnSend::Typed || unconfirmed {
        let msg = format!(
            "message reached '{}' but was never confirmed submitted: message reached the \
             pane but submission was never confirmed after {ARRIVAL_CHECKS} checks",
            s.title
        );
        let extra = json!({"delivery": "typed", "submitted": false,
                           "session_id": s.id, "session_title": s.title});
        return Err(o.error(&msg, "DELIVERY_FAILED", 1, Some(extra)));
    }
    // A short message to another tool carries nothing to look for: unverified.
    let delivery = if s.claude_family() {
        "submitted"
    } else {
        "unverified"
    };
    let data = json!({"delivery": delivery, "message": message, "session_id": s.id,
                      "session_title": s.title, "submitted": delivery == "submitted",
                      "success": true});
    Ok(o.success(&format!("Sent message to '{}'", s.title), data))
}

/// `--pane` is the pane's last 2000 lines of scrollback plus the screen,
/// bytes as stored (ANSI escapes included; a moving pane grows a line per
/// read); with the tmux session or pane gone it is the auth-hold block,
/// else a failure. Without `--pane` it is the transcript, except that a
/// tool outside the Claude family reads its answer from the pane, so a
/// gone one fails. Quiet mode still prints the content.
fn output(c: &Call, st: &mut SimState) -> Result<Reply, Reply> {
    let o = out(c);
    let i = find(c, st, o, "")?;
    let s = &mut st.sessions[i];
    let alive = s.tmux_exists();
    let (content, role) = if c.kind != CommandKind::OutputPane {
        if !alive && !s.claude_family() && s.tool() != "gemini" {
            return Err(o.invalid(&format!(
                "failed to get response: failed to capture terminal output: {CAPTURE_FAILED}"
            )));
        }
        (full_context::transcript(s), "assistant")
    } else if alive && s.pane.is_some() {
        if s.pane_moving {
            s.pane_ticks += 1;
            s.append_pane_line(&format!("tick {}", s.pane_ticks));
        }
        let pane = full_context::pane(s).unwrap_or_default();
        (last_lines(&pane, PANE_LINES).to_owned(), "pane")
    } else {
        let Some(hold) = s.hold().and_then(Value::as_object) else {
            return Err(o.invalid(&format!("failed to capture pane: {CAPTURE_FAILED}")));
        };
        let field = |k: &str| hold.get(k).map_or(String::new(), text);
        let block = ["reason", "remedy", "evidence"].map(field).join("\n");
        (format!("[auth hold] {block}"), "pane")
    };
    if !c.on("json") {
        return Ok(Reply::out(0, content + "\n"));
    }
    let data = json!({"content": content, "role": role, "session_id": s.id,
                      "session_title": s.title, "success": true, "tool": s.tool()});
    Ok(Reply::out(0, go_json(&data)))
}

/// The last `n` lines of `text` (a trailing newline ends the last line).
fn last_lines(text: &str, n: usize) -> &str {
    let body = text.strip_suffix('\n').unwrap_or(text);
    match body.rmatch_indices('\n').nth(n.saturating_sub(1)) {
        Some((at, _)) if n > 0 => &text[at + 1..],
        _ => text,
    }
}

fn remove(c: &Call, st: &mut SimState) -> Result<Reply, Reply> {
    let o = out(c);
    if c.pos.is_empty() {
        // The real CLI answers NOT_FOUND here, with exit 1, and the usage
        // on stdout in human mode.
        let mut reply = o.error("session ID or title is required", "NOT_FOUND", 1, None);
        if !c.on("json") {
            reply.out = "Usage: agent-deck remove <id|title>\n".into();
        }
        return Err(reply);
    }
    let profile = c.profile.clone();
    let i = find(c, st, o, &format!(" (profile '{profile}')"))?;
    if st.sessions[i].on_remove == Some(OnRemove::Fail) {
        return Err(o.invalid("failed to remove session: simulated"));
    }
    let s = st.sessions.remove(i);
    let data = json!({"id": s.id, "profile": profile, "removed": true, "success": true,
                      "title": s.title});
    let msg = format!("Removed session: {} (from profile '{profile}')", s.title);
    Ok(o.success(&msg, data))
}

/// `session set <id> claude-session-id <value>`: 1.14.0 stores it and
/// answers `Updated <field>: "<old>" -> "<new>"` (`cmd/agent-deck/
/// session_cmd.go:2030-2040`); any other field is refused here.
fn set(c: &Call, st: &mut SimState) -> Result<Reply, Reply> {
    let o = out(c);
    let [_, field, value] = c.pos.as_slice() else {
        let usage = "Usage: agent-deck session set <id|title> <field> <value> [options]\n";
        return Err(Reply::out(1, usage.into()));
    };
    if field != "claude-session-id" {
        return Err(o.invalid(&format!(
            "the simulator sets only claude-session-id, not {field}"
        )));
    }
    let i = find(c, st, o, "")?;
    let s = &mut st.sessions[i];
    let old = std::mem::replace(&mut s.claude_session_id, value.clone());
    let data = json!({"field": field, "old_value": old, "new_value": value, "success": true,
                      "id": s.id, "title": s.title});
    Ok(o.success(&format!("Updated {field}: {old:?} -> {value:?}"), data))
}

/// A JSON value as `%s` would print it: a string bare, anything else as JSON.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
