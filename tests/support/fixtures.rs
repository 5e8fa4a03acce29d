//! Sessions for the simulator's state file, in the shapes the tests need.

use serde_json::{json, Value};

/// A conductor id in the real shape `<8 hex>-<unix secs>`.
pub const CONDUCTOR: &str = "3f9c2a1b-1755891234";

/// A session in profile "default"; other keys take the simulator's defaults.
pub fn session(id: &str, title: &str, group: &str, status: &str) -> Value {
    json!({"id": id, "title": title, "group": group, "profile": "default", "status": status})
}

/// A conductor with a pane that does not move.
pub fn conductor(id: &str, title: &str, status: &str) -> Value {
    let mut c = session(id, title, "conductor", status);
    c["pane"] = json!("frozen pane");
    c["transcript"] = json!("");
    c
}

/// A conductor in error whose restarts never take: `session restart` answers
/// success but nothing changes, and `session start` finds it already running.
pub fn crash_looping(id: &str, title: &str) -> Value {
    let mut c = conductor(id, title, "error");
    c["on_restart"] = json!("no_effect");
    c["on_start"] = json!("already_running");
    c
}

/// A conductor in error whose login expired: agent-deck holds its restarts.
pub fn auth_held(id: &str, title: &str) -> Value {
    let mut c = conductor(id, title, "error");
    c["substate"] = json!("auth-401");
    c["auth_hold"] = json!({"reason": "auth_death", "remedy": "log in again",
                             "evidence": "API Error: 401", "boot_attempts": 1, "ts": 1755891300});
    c
}
