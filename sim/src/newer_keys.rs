//! The keys later releases added to list rows and `session show --json`,
//! each from the release the evidence gives (`agent-deck-drift.md` rows 8
//! and 9: CHANGELOG 1.16.11, 1.16.17 and 1.16.25, and `core_cli_list.go`,
//! `session_cmd.go` and the list schema upstream). None of them is in a
//! 1.14.0 answer. Values are plausible shapes, not a model: the watchdog
//! reads none of them; the point is that an answer carrying them stays
//! readable.

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::reply::rfc3339;
use super::state::SimSession;
use crate::release::Release;

// The releases that brought the keys each constant names.
const ROW_KEYS: Release = Release::new(1, 16, 11);
const STATUS_SOURCE: Release = Release::new(1, 16, 17);
const BACKGROUND_WORK: Release = Release::new(1, 16, 25);
/// The account every simulated session runs under.
const ACCOUNT: &str = "default";

/// The added keys of a `-p P list --json` row.
#[derive(Serialize, Default)]
pub(super) struct ProfileKeys {
    #[serde(skip_serializing_if = "Option::is_none")]
    account: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_activity_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    viewers: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status_source: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    background_work: Option<Value>,
}

fn codex(s: &SimSession) -> bool {
    s.tool() == "codex"
}

fn codex_id(s: &SimSession) -> String {
    let hex: String = s.id.chars().filter(char::is_ascii_hexdigit).collect();
    format!("019{hex}")
}

/// The added keys of a `list --all --json` row (in key order, as they print).
pub(super) fn all_row(s: &SimSession, release: Release) -> Map<String, Value> {
    let mut keys = Map::new();
    if release >= ROW_KEYS {
        keys.insert("account".into(), json!(ACCOUNT));
        if codex(s) {
            keys.insert("codex_session_id".into(), json!(codex_id(s)));
            keys.insert("resolved_codex_home".into(), json!("~/.codex"));
        }
    }
    keys
}

/// Who has the session open: one viewer while its tmux session lives.
fn viewers(s: &SimSession) -> Value {
    if !s.tmux_exists() {
        return json!([]);
    }
    json!([{"activity": rfc3339(s.created_secs()), "height": 60, "name": "/dev/pts/3",
            "tty": "/dev/pts/3", "width": 200}])
}

pub(super) fn profile_row(s: &SimSession, release: Release) -> ProfileKeys {
    if release < ROW_KEYS {
        return ProfileKeys::default();
    }
    ProfileKeys {
        account: Some(ACCOUNT),
        last_activity_at: Some(rfc3339(s.created_secs())),
        viewers: Some(viewers(s)),
        status_source: (release >= STATUS_SOURCE).then_some("tmux"),
        background_work: (release >= BACKGROUND_WORK)
            .then(|| json!({"active": false, "tasks": []})),
    }
}

/// Adds the newer `session show --json` keys to `data` (a JSON object).
pub(super) fn show(data: &mut Value, s: &SimSession, status: &str, release: Release) {
    if release < ROW_KEYS {
        return;
    }
    data["account"] = json!(ACCOUNT);
    data["order"] = json!(0);
    data["pin"] = json!(false);
    data["hook_status"] = json!(if s.tmux_exists() { status } else { "" });
    data["hook_status_fresh"] = json!(s.tmux_exists());
    data["viewers"] = viewers(s);
    if s.claude_family() {
        let id = &s.claude_session_id;
        data["transcript_path"] = json!(format!("~/.claude/projects/-tmp/{id}.jsonl"));
        data["transcript_ids"] = json!([id]);
    }
    if codex(s) {
        data["codex_session_id"] = json!(codex_id(s));
        data["resolved_codex_home"] = json!("~/.codex");
        data["codex_hooks"] = json!({"installed": true, "events": ["SessionStart", "Stop"]});
    }
    if release >= BACKGROUND_WORK {
        data["background_work"] = json!(null);
    }
}
