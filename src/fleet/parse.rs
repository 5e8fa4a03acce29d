//! Turns what the agent-deck CLI prints into typed values.
//!
//! Pure functions over text, tolerant of every shape the real CLI is known to
//! print (`null`, `No profiles found.`, `No sessions found in profile …`,
//! error JSON on stdout) and strict about everything else: output that is not
//! understood is an error, never an empty fleet.

use serde_json::Value;

use crate::fleet::session::{Live, Session, Status};

/// Output that does not have the expected shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Garbage(pub String);

/// `list --all --json`.
pub fn list_all(stdout: &str) -> Result<Vec<Session>, Garbage> {
    let text = stdout.trim();
    if text == "No profiles found." || text == "null" {
        return Ok(Vec::new());
    }
    entries(text)?.iter().map(session).collect()
}

/// `-p P list --json`: each session with its live status.
pub fn list_profile(stdout: &str) -> Result<Vec<(Session, Live)>, Garbage> {
    let text = stdout.trim();
    if text.starts_with("No sessions found in profile") || text == "null" {
        return Ok(Vec::new());
    }
    entries(text)?
        .iter()
        .map(|v| Ok((session(v)?, live(v))))
        .collect()
}

/// `session show <id> --json`.
pub fn show(stdout: &str) -> Result<Live, Garbage> {
    let v = json(stdout)?;
    if !v.is_object() || v.get("success") == Some(&Value::Bool(false)) {
        return Err(Garbage(format!(
            "expected a session object, got {}",
            preview(stdout)
        )));
    }
    let l = live(&v);
    if l.status.is_none() {
        return Err(Garbage("session object has no status".into()));
    }
    Ok(l)
}

/// What `session restart --json` answered on exit 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestartAnswer {
    Restarted,
    /// A guard inside agent-deck declined on purpose.
    Skipped(String),
}

pub fn restart(stdout: &str) -> Result<RestartAnswer, Garbage> {
    let v = json(stdout)?;
    if v.get("skipped").and_then(Value::as_bool) == Some(true) {
        let reason = str_field(&v, "reason").unwrap_or_else(|| "no reason given".into());
        return Ok(RestartAnswer::Skipped(reason));
    }
    if v.get("success").and_then(Value::as_bool) == Some(true) {
        return Ok(RestartAnswer::Restarted);
    }
    Err(Garbage(format!(
        "unexpected restart answer {}",
        preview(stdout)
    )))
}

/// The most useful one-line message for a failed call: the `error` of the
/// JSON error object (which `--json` prints on stdout), else stderr, else
/// stdout. Bounded in length.
pub fn error_message(stdout: &str, stderr: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(stdout.trim()) {
        if let Some(e) = str_field(&v, "error") {
            return clip(&e);
        }
    }
    for text in [stderr, stdout] {
        if let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty()) {
            return clip(line.strip_prefix("Error: ").unwrap_or(line));
        }
    }
    "(no output)".into()
}

fn json(stdout: &str) -> Result<Value, Garbage> {
    serde_json::from_str(stdout.trim())
        .map_err(|_| Garbage(format!("not JSON: {}", preview(stdout))))
}

fn entries(text: &str) -> Result<Vec<Value>, Garbage> {
    match json(text)? {
        Value::Array(items) => Ok(items),
        _ => Err(Garbage(format!(
            "expected a JSON array, got {}",
            preview(text)
        ))),
    }
}

fn session(v: &Value) -> Result<Session, Garbage> {
    let id = str_field(v, "id")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Garbage("a session without an id".into()))?;
    Ok(Session {
        id,
        title: str_field(v, "title").unwrap_or_default(),
        group: str_field(v, "group")
            .or_else(|| str_field(v, "group_path"))
            .unwrap_or_default(),
        profile: str_field(v, "profile").unwrap_or_default(),
        path: str_field(v, "path").unwrap_or_default(),
        parent_session_id: str_field(v, "parent_session_id").filter(|p| !p.is_empty()),
        is_conductor: ["is_conductor", "IsConductor"]
            .iter()
            .any(|k| v.get(*k).and_then(Value::as_bool) == Some(true)),
    })
}

fn live(v: &Value) -> Live {
    Live {
        status: str_field(v, "status").map(|s| Status::parse(&s)),
        substate: str_field(v, "substate").filter(|s| !s.is_empty()),
        channels: v
            .get("channels")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|c| c.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        auth_hold: v.get("auth_hold").filter(|h| h.is_object()).map(|h| {
            str_field(h, "reason")
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| "unknown".into())
        }),
        claude_session_id: str_field(v, "claude_session_id").filter(|s| !s.is_empty()),
    }
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn clip(s: &str) -> String {
    const MAX: usize = 300;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// A short, single-line look at unexpected output for a log line.
fn preview(s: &str) -> String {
    let flat: String = s
        .trim()
        .chars()
        .take(60)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!("{flat:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_all_edge_outputs() {
        assert_eq!(list_all("null\n").unwrap(), vec![]);
        assert_eq!(list_all("No profiles found.\n").unwrap(), vec![]);
        assert!(list_all("{\"id\": \"oops").is_err());
        assert!(list_all("").is_err());
        assert!(list_all("Error: failed to list profiles: boom").is_err());
        assert!(list_all("{}").is_err());
    }

    #[test]
    fn list_all_reads_the_real_shape() {
        let out = r#"[{"id":"3f9c2a1b-1755891234","title":"conductor-ops","path":"/p","group":"conductor",
            "tool":"claude","profile":"default","created_at":"2026-08-20T10:00:00Z"},
            {"id":"a0b1c2d3-1755899999","parent_session_id":"3f9c2a1b-1755891234","title":"worker-1",
            "path":"/srv","group":"srv","tool":"claude","profile":"work","created_at":"2026-08-21T09:00:00Z"}]"#;
        let s = list_all(out).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].id, "3f9c2a1b-1755891234");
        assert_eq!(s[0].group, "conductor");
        assert_eq!(s[1].profile, "work");
        assert_eq!(
            s[1].parent_session_id.as_deref(),
            Some("3f9c2a1b-1755891234")
        );
        assert!(!s[0].is_conductor);
    }

    #[test]
    fn profile_list_carries_status() {
        assert_eq!(
            list_profile("No sessions found in profile 'work'.\n").unwrap(),
            vec![]
        );
        let out = r#"[{"id":"x1-1","title":"t","group":"g","profile":"work","status":"starting",
            "channels":["plugin:telegram@claude-plugins-official"],"archived":false}]"#;
        let v = list_profile(out).unwrap();
        assert_eq!(v[0].1.status, Some(Status::Unknown));
        assert_eq!(v[0].1.channels.len(), 1);
    }

    #[test]
    fn show_reads_auth_hold_and_substate() {
        let out = r#"{"auth_hold":{"boot_attempts":1,"evidence":"secret pane","reason":"auth_death","remedy":"r","ts":1},
            "id":"x","status":"error","substate":"auth-401","profile":""}"#;
        let l = show(out).unwrap();
        assert_eq!(l.status, Some(Status::Error));
        assert_eq!(l.auth_hold.as_deref(), Some("auth_death"));
        assert_eq!(l.substate.as_deref(), Some("auth-401"));
        assert!(show("null").is_err());
        assert!(
            show(r#"{"code":"NOT_FOUND","error":"session 'x' not found","success":false}"#)
                .is_err()
        );
    }

    #[test]
    fn restart_answers() {
        assert_eq!(
            restart(r#"{"id":"x","success":true,"title":"t"}"#).unwrap(),
            RestartAnswer::Restarted
        );
        let skipped = r#"{"id":"x","reason":"within 1m0s freshness window","skipped":true,"success":true,"title":"t"}"#;
        assert_eq!(
            restart(skipped).unwrap(),
            RestartAnswer::Skipped("within 1m0s freshness window".into())
        );
        assert!(restart("garbage").is_err());
    }

    #[test]
    fn error_message_prefers_json_on_stdout() {
        let out = r#"{"code":"NOT_FOUND","error":"session 'x' not found","success":false}"#;
        assert_eq!(error_message(out, ""), "session 'x' not found");
        assert_eq!(
            error_message("", "Error: session 't' is already running\n"),
            "session 't' is already running"
        );
        assert_eq!(error_message("", ""), "(no output)");
        assert!(error_message(&"x".repeat(1000), "").chars().count() <= 301);
    }
}
