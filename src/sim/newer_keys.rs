//! The keys later releases added to list rows and `session show --json`,
//! each from the release the evidence gives (`agent-deck-drift.md` rows 8
//! and 9). None of them is in a 1.14.0 answer, so a state without
//! `version` answers byte for byte as before. Values are plausible shapes,
//! not a model: the watchdog reads none of them, and the point is that an
//! answer carrying them stays readable.
//!
//! - `list --all --json` rows: `account` (always), and `codex_session_id`
//!   / `resolved_codex_home` for Codex sessions (CHANGELOG 1.16.11, #2256;
//!   `allProfilesSessionJSON` in `cmd/agent-deck/core_cli_list.go`@056a97ee).
//! - `-p P list --json` rows: `account`, `last_activity_at`, `viewers`
//!   (an array of `{activity,height,name,tty,width}` objects) from 1.16.11
//!   (`core.SessionRow` in `internal/core/testdata/schema/session.list.out.json`
//!   @056a97ee; CHANGELOG 1.16.11); `status_source` from 1.16.17 (CHANGELOG
//!   1.16.17; not in that schema, so maybe never printed); `background_work`
//!   (an object) from 1.16.25 (CHANGELOG 1.16.25).
//! - `session show --json`: `account`, `order`, `pin`, `hook_status`,
//!   `hook_status_fresh` always, `transcript_path`/`transcript_ids` for
//!   Claude, `codex_session_id`, `resolved_codex_home`, `codex_hooks` for
//!   Codex (the `session show` emitter of the newer `session_cmd.go`, which
//!   is at least 1.16.12; taken here from 1.16.11), `background_work` from
//!   1.16.25.
//!
//! `substate_detail` is not made up here: it belongs with the substates
//! that carry it.

use serde::Serialize;
use serde_json::{json, Value};

use super::reply::rfc3339;
use super::state::SimSession;
use crate::fleet::version::Version;

/// `account`, `viewers`, `last_activity_at`, the Codex ids (#2256).
const ROW_KEYS: Version = Version::new(1, 16, 11);
/// `status_source` on profile rows.
const STATUS_SOURCE: Version = Version::new(1, 16, 17);
/// `background_work` on profile rows and in `show`.
const BACKGROUND_WORK: Version = Version::new(1, 16, 25);

/// The account every simulated session runs under.
const ACCOUNT: &str = "default";

/// The added keys of a `list --all --json` row.
#[derive(Serialize, Default)]
pub(super) struct AllKeys {
    #[serde(skip_serializing_if = "Option::is_none")]
    account: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    codex_session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resolved_codex_home: Option<&'static str>,
}

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
    format!(
        "019{}",
        s.id.chars()
            .filter(char::is_ascii_hexdigit)
            .collect::<String>()
    )
}

pub(super) fn all_row(s: &SimSession, release: Version) -> AllKeys {
    if !release.at_least(ROW_KEYS) {
        return AllKeys::default();
    }
    AllKeys {
        account: Some(ACCOUNT),
        codex_session_id: codex(s).then(|| codex_id(s)),
        resolved_codex_home: codex(s).then_some("~/.codex"),
    }
}

/// Who has the session open: one viewer while its tmux session lives.
fn viewers(s: &SimSession) -> Value {
    if !s.tmux_exists() {
        return json!([]);
    }
    json!([{"activity": rfc3339(s.created_secs()), "height": 60, "name": "/dev/pts/3",
            "tty": "/dev/pts/3", "width": 200}])
}

pub(super) fn profile_row(s: &SimSession, release: Version) -> ProfileKeys {
    if !release.at_least(ROW_KEYS) {
        return ProfileKeys::default();
    }
    ProfileKeys {
        account: Some(ACCOUNT),
        last_activity_at: Some(rfc3339(s.created_secs())),
        viewers: Some(viewers(s)),
        status_source: release.at_least(STATUS_SOURCE).then_some("tmux"),
        background_work: release
            .at_least(BACKGROUND_WORK)
            .then(|| json!({"active": false, "tasks": []})),
    }
}

/// Adds the newer `session show --json` keys to `data` (a JSON object).
pub(super) fn show(data: &mut Value, s: &SimSession, status: &str, release: Version) {
    if !release.at_least(ROW_KEYS) {
        return;
    }
    data["account"] = json!(ACCOUNT);
    data["order"] = json!(0);
    data["pin"] = json!(false);
    data["hook_status"] = json!(if s.tmux_exists() { status } else { "" });
    data["hook_status_fresh"] = json!(s.tmux_exists());
    data["viewers"] = viewers(s);
    if s.claude_family() {
        data["transcript_path"] = json!(format!(
            "~/.claude/projects/-tmp/{}.jsonl",
            s.claude_session_id
        ));
        data["transcript_ids"] = json!([s.claude_session_id]);
    }
    if codex(s) {
        data["codex_session_id"] = json!(codex_id(s));
        data["resolved_codex_home"] = json!("~/.codex");
        data["codex_hooks"] = json!({"installed": true, "events": ["SessionStart", "Stop"]});
    }
    if release.at_least(BACKGROUND_WORK) {
        data["background_work"] = json!(null);
    }
}
