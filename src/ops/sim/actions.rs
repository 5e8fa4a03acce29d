//! The session commands: `session show|restart|start|send|output` and
//! `remove`, answering as the real CLI does (contract §2, §3).
//!
//! Each takes the call and the state, may change the state (the caller
//! writes it back), and returns the reply. How a mutating command turns out
//! is the session's `on_restart`/`on_start`/`on_send`/`on_remove` mode.

use serde_json::{json, Value};

use super::args::{Call, CommandKind};
use super::list::{list_all, list_profile};
use super::lookup::find;
use super::reply::{go_json, rfc3339, sorted, Out, Reply};
use super::state::{OnRemove, OnRestart, OnSend, OnStart, SimState};

/// The reason the freshness guard (#30) gives.
const FRESHNESS_REASON: &str = "session is running and was started 12s ago (within 1m0s \
freshness window); use --force to restart anyway";

/// Runs the call against the state.
pub fn execute(c: &Call, st: &mut SimState) -> Reply {
    let result = match c.kind {
        CommandKind::ListAll => Ok(list_all(c, st)),
        CommandKind::List => Ok(list_profile(c, st)),
        CommandKind::Show => show(c, st),
        CommandKind::Restart => restart(c, st),
        CommandKind::Start => start(c, st),
        CommandKind::Send => send(c, st),
        CommandKind::Output | CommandKind::OutputPane => output(c, st),
        CommandKind::Remove => remove(c, st),
    };
    match result {
        Ok(reply) | Err(reply) => reply,
    }
}

fn out(c: &Call) -> Out {
    Out::new(c.on("json"), c.quiet())
}

fn show(c: &Call, st: &SimState) -> Result<Reply, Reply> {
    let s = &st.sessions[find(c, st, out(c), "")?];
    let mut data = json!({
        "id": s.id, "title": s.title, "path": s.path(), "group": s.group, "tool": s.tool(),
        "command": s.command, "status": s.status_string(), "profile": c.profile_arg,
        "parent_session_id": s.parent_session_id, "parent_project_path": s.parent_project_path,
        "no_transition_notify": false, "title_locked": false,
        "created_at": rfc3339(s.created_secs()), "wrapper": "", "auto_name": false,
    });
    if !s.substate.is_empty() {
        data["substate"] = json!(s.substate);
    }
    if s.tool() == "claude" {
        data["claude_session_id"] = json!(s.claude_session_id);
        data["can_fork"] = json!(!s.claude_session_id.is_empty());
        data["can_restart"] = json!(true);
        if !s.channels.is_empty() {
            data["channels"] = json!(s.channels);
        }
    }
    if !s.tmux_session.is_empty() {
        data["tmux_session"] = json!(s.tmux_session);
    }
    if let Some(hold) = s.hold() {
        data["auth_hold"] = hold.clone();
    }
    if c.quiet() {
        return Ok(Reply::out(0, String::new()));
    }
    if c.on("json") {
        return Ok(Reply::out(0, go_json(&sorted(data))));
    }
    let text = format!(
        "SimSession: {}\nID:      {}\nStatus:  {}\nPath:    {}\nGroup:   {}\nTool:    {}\n",
        s.title,
        s.id,
        s.status_string(),
        s.path(),
        s.group,
        s.tool()
    );
    Ok(Reply::out(0, text))
}

/// The auth-hold guard, then the freshness guard (both read the stored
/// status; `--force` or any `--env` bypasses them), then the mode.
fn restart(c: &Call, st: &mut SimState) -> Result<Reply, Reply> {
    let o = out(c);
    let i = find(c, st, o, "")?;
    let s = &mut st.sessions[i];
    let ident = json!({"id": s.id, "title": s.title});
    let force = c.on("force") || !c.env.is_empty();
    let mode = s.on_restart.unwrap_or(OnRestart::Ok);
    let skipped = |reason: &str| {
        let mut data = ident.clone();
        data["reason"] = json!(reason);
        data["skipped"] = json!(true);
        data["success"] = json!(true);
        o.success(&format!("Skipped restart of {}: {reason}", s.title), data)
    };
    let alive = ["running", "waiting", "idle", "starting"].contains(&s.raw_status());
    if let Some(hold) = s.hold().filter(|_| !force && !alive) {
        let remedy = hold.get("remedy").map_or(String::new(), text);
        return Ok(skipped(&format!(
            "{remedy} (use --force to restart anyway)"
        )));
    }
    if mode == OnRestart::Skipped && !force {
        return Ok(skipped(FRESHNESS_REASON));
    }
    if mode == OnRestart::Fail {
        let msg = "failed to restart session: simulated";
        return Err(o.error(msg, "INVALID_OPERATION", 1, None));
    }
    s.restarts += 1;
    if mode != OnRestart::NoEffect {
        s.status = Some("running".into());
        s.substate.clear();
        s.append_pane_line(&format!("restarted {}", s.restarts));
    }
    let mut data = ident;
    data["success"] = json!(true);
    Ok(o.success(&format!("Restarted session: {}", s.title), data))
}

fn start(c: &Call, st: &mut SimState) -> Result<Reply, Reply> {
    let o = out(c);
    let i = find(c, st, o, "")?;
    let s = &mut st.sessions[i];
    match s.on_start.unwrap_or(OnStart::Ok) {
        OnStart::AlreadyRunning => {
            let msg = format!("session '{}' is already running", s.title);
            return Err(o.error(&msg, "INVALID_OPERATION", 1, None));
        }
        OnStart::Fail => {
            let msg = "failed to start session: simulated";
            return Err(o.error(msg, "INVALID_OPERATION", 1, None));
        }
        OnStart::Ok => {}
    }
    s.status = Some("running".into());
    s.substate.clear();
    s.starts += 1;
    let mut data = json!({"id": s.id, "success": true, "title": s.title});
    if s.tool() == "claude" && !s.claude_session_id.is_empty() {
        data["claude_session_id"] = json!(s.claude_session_id);
    }
    Ok(o.success(&format!("Started session: {}", s.title), data))
}

/// Claude-family tools get Claude's submit check, which the simulator takes
/// as passed. Other tools get the content-arrival check: a message whose
/// trimmed text is at least this many bytes is looked for in the pane, and
/// seeing it there without the agent turning busy is `typed`, a failure; a
/// shorter one cannot be looked for and is `unverified`, a success.
const ARRIVAL_TOKEN_MIN: usize = 12;

/// The checks the content-arrival poll makes before it gives up.
const ARRIVAL_CHECKS: u32 = 10;

fn send(c: &Call, st: &mut SimState) -> Result<Reply, Reply> {
    if c.pos.len() < 2 {
        // The real CLI prints this usage text to stdout.
        let usage = "Usage: agent-deck session send <id|title> <message> [options]\n";
        return Err(Reply::out(1, usage.into()));
    }
    let o = out(c);
    let i = find(c, st, o, "")?;
    let s = &mut st.sessions[i];
    let message = c.pos[1..].join(" ");
    let mode = s.on_send.unwrap_or(OnSend::Ok);
    match mode {
        OnSend::NotRunning => {
            let msg = format!("session '{}' is not running", s.title);
            return Err(o.error(&msg, "INVALID_OPERATION", 1, None));
        }
        OnSend::Fail => {
            let msg = format!("message was not delivered to '{}': simulated", s.title);
            let extra = json!({"delivery": "send_failed", "submitted": false,
                               "session_id": s.id, "session_title": s.title});
            return Err(o.error(&msg, "DELIVERY_FAILED", 1, Some(extra)));
        }
        OnSend::Ok | OnSend::Typed => {}
    }
    s.sent.push(message.clone());
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

/// `--pane` is the pane's scrollback (a moving pane grows a line per read;
/// a gone pane shows the auth-hold block, else fails); without it, the
/// transcript. Quiet mode still prints the content.
fn output(c: &Call, st: &mut SimState) -> Result<Reply, Reply> {
    let o = out(c);
    let i = find(c, st, o, "")?;
    let s = &mut st.sessions[i];
    let (content, role) = if c.kind != CommandKind::OutputPane {
        (s.transcript.clone(), "assistant")
    } else if s.pane.is_some() {
        if s.pane_moving {
            s.pane_ticks += 1;
            s.append_pane_line(&format!("tick {}", s.pane_ticks));
        }
        (s.pane.clone().unwrap_or_default(), "pane")
    } else {
        let Some(hold) = s.hold().and_then(Value::as_object) else {
            return Err(o.error("failed to capture pane", "INVALID_OPERATION", 1, None));
        };
        let field = |k: &str| hold.get(k).map_or(String::new(), text);
        let block = format!(
            "[auth hold] {}\n{}\n{}",
            field("reason"),
            field("remedy"),
            field("evidence")
        );
        (block, "pane")
    };
    if !c.on("json") {
        return Ok(Reply::out(0, content + "\n"));
    }
    let data = json!({"content": content, "role": role, "session_id": s.id,
                      "session_title": s.title, "success": true, "tool": s.tool()});
    Ok(Reply::out(0, go_json(&sorted(data))))
}

fn remove(c: &Call, st: &mut SimState) -> Result<Reply, Reply> {
    let o = out(c);
    let profile = c.profile.clone();
    let i = find(c, st, o, &format!(" (profile '{profile}')"))?;
    if st.sessions[i].on_remove == Some(OnRemove::Fail) {
        let msg = "failed to remove session: simulated";
        return Err(o.error(msg, "INVALID_OPERATION", 1, None));
    }
    let s = st.sessions.remove(i);
    let data = json!({"id": s.id, "profile": profile, "removed": true, "success": true,
                      "title": s.title});
    let msg = format!("Removed session: {} (from profile '{profile}')", s.title);
    Ok(o.success(&msg, data))
}

/// A JSON value as `%s` would print it: a string bare, anything else as JSON.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
