//! `list --all --json` and `[-p P] list --json`, key for key (contract §1).
//! `--all` ignores `-p`, walks the profiles in sorted order and carries no
//! status; the single-profile list carries status, substate and channels.
//! Both print their keys in the Go struct's order, not sorted.

use serde::Serialize;

use crate::release::Release;

use super::args::Call;
use super::live::{self, Moment};
use super::newer_keys;
use super::reply::{go_json, rfc3339, Reply};
use super::state::{SimSession, SimState};

/// From 1.16.11 a list with no sessions is `[]` under `--json`, instead of
/// "No sessions found" or `null` (CHANGELOG 1.16.11, #2277).
const EMPTY_ARRAY: Release = Release::new(1, 16, 11);

/// An element of `list --all --json`.
#[derive(Serialize)]
struct AllEntry<'a> {
    id: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    parent_session_id: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    parent_project_path: &'a str,
    title: &'a str,
    path: &'a str,
    group: &'a str,
    tool: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    command: &'a str,
    profile: &'a str,
    created_at: String,
    #[serde(flatten)]
    newer: serde_json::Map<String, serde_json::Value>,
}

/// An element of `-p P list --json`.
#[derive(Serialize)]
struct ProfileEntry<'a> {
    id: &'a str,
    title: &'a str,
    path: &'a str,
    group: &'a str,
    tool: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    command: &'a str,
    status: String,
    #[serde(skip_serializing_if = "str::is_empty")]
    substate: &'a str,
    /// 1.16.11+, beside `substate` as in `internal/core`'s list row.
    #[serde(skip_serializing_if = "str::is_empty")]
    substate_detail: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    parent_session_id: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    parent_project_path: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    tmux_session: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    channels: &'a [String],
    profile: &'a str,
    archived: bool,
    archived_at: &'static str,
    created_at: String,
    #[serde(flatten)]
    newer: newer_keys::ProfileKeys,
}

pub(super) fn list_all(c: &Call, st: &SimState) -> Reply {
    if st.sessions.is_empty() {
        let text = if !st.profiles_exist {
            "No profiles found.\n"
        } else if c.on("json") && st.release() >= EMPTY_ARRAY {
            "[]\n"
        } else if c.on("json") {
            "null\n"
        } else {
            "No sessions found.\n"
        };
        return Reply::out(0, text.into());
    }
    let mut sessions: Vec<&SimSession> = st.sessions.iter().collect();
    sessions.sort_by_key(|s| s.profile()); // stable: file order within a profile
    let entries: Vec<AllEntry> = sessions
        .iter()
        .map(|s| AllEntry {
            id: &s.id,
            parent_session_id: &s.parent_session_id,
            parent_project_path: &s.parent_project_path,
            title: &s.title,
            path: s.path(),
            group: &s.group,
            tool: s.tool(),
            command: &s.command,
            profile: s.profile(),
            created_at: rfc3339(s.created_secs()),
            newer: newer_keys::all_row(s, st.release()),
        })
        .collect();
    answer(c, &entries, |e| {
        format!("{}  {}  {}\n", e.profile, e.id, e.title)
    })
}

pub(super) fn list_profile(c: &Call, st: &SimState, at: &Moment) -> Reply {
    let entries: Vec<ProfileEntry> = st
        .sessions
        .iter()
        .filter(|s| s.profile() == c.profile)
        .map(|s| ProfileEntry {
            id: &s.id,
            title: &s.title,
            path: s.path(),
            group: &s.group,
            tool: s.tool(),
            command: &s.command,
            status: live::printed(&live::status(s, at)).to_owned(),
            substate: &s.substate,
            substate_detail: s.shown_detail(st.release()),
            parent_session_id: &s.parent_session_id,
            parent_project_path: &s.parent_project_path,
            tmux_session: &s.tmux_session,
            channels: &s.channels,
            profile: &c.profile,
            archived: false,
            archived_at: "0001-01-01T00:00:00Z",
            created_at: rfc3339(s.created_secs()),
            newer: newer_keys::profile_row(s, st.release()),
        })
        .collect();
    if entries.is_empty() && c.on("json") && st.release() >= EMPTY_ARRAY {
        return Reply::out(0, "[]\n".into());
    }
    if entries.is_empty() {
        let text = format!("No sessions found in profile '{}'.\n", c.profile);
        return Reply::out(0, text);
    }
    answer(c, &entries, |e| {
        format!("{}  {}  {}\n", e.id, e.title, e.status)
    })
}

/// The entries as JSON under `--json`, else one `line` each.
fn answer<T: Serialize>(c: &Call, entries: &[T], line: impl Fn(&T) -> String) -> Reply {
    if c.on("json") {
        return Reply::out(0, go_json(&entries));
    }
    Reply::out(0, entries.iter().map(line).collect())
}
