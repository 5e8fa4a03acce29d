//! The session object as the CLI prints it, as serde reads it: [`ListRow`]
//! is a row of `list --all --json`; [`ShowRow`] a row of `-p P list --json`
//! and the answer of `session show --json`, with the live keys.
//!
//! Strings are borrowed from the answer unless they hold an escape; keys the
//! daemon does not use are skipped unread (so are the live keys of a `list
//! --all` row, whatever their type), and `null` counts as absent. A row
//! without an `id`, with a used key of the wrong type, or with a used string
//! that is not UTF-8 is no session, and [`row`] says why, with serde's
//! complaint. `substate_detail` (a key newer releases added: CHANGELOG
//! 1.16.11) and `tmux_session` (the pane watch's key, which only the live
//! answers carry) are read loosely: a value of another type reads as absent
//! and never costs the row. Pure decoding: no I/O, no decision, but one line
//! the first time a substate this watchdog does not know is read.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::fleet::session::{self, critical_rule, Live, Session, Status, Substate};

/// A string of the answer: borrowed unless it holds an escape.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub(crate) struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

/// A row of `list --all --json`: the keys the daemon reads, none of them
/// live.
#[derive(Deserialize)]
pub(crate) struct ListRow<'a> {
    #[serde(borrow)]
    id: Option<Str<'a>>,
    #[serde(borrow)]
    title: Option<Str<'a>>,
    #[serde(borrow)]
    group: Option<Str<'a>>,
    #[serde(borrow)]
    group_path: Option<Str<'a>>,
    #[serde(borrow)]
    profile: Option<Str<'a>>,
    #[serde(borrow)]
    path: Option<Str<'a>>,
    #[serde(borrow)]
    parent_session_id: Option<Str<'a>>,
    is_conductor: Option<bool>,
    #[serde(rename = "IsConductor")]
    is_conductor_go: Option<bool>,
    /// Read loosely: a value of another type reads as absent.
    #[serde(borrow)]
    tool: Option<&'a RawValue>,
}

/// A row of `-p P list --json` or a `session show --json`: the keys of a
/// [`ListRow`] and the live ones. (`tool` is read from `session show`
/// only, by [`crate::fleet::parse::show`]: a list row whose tool is not
/// UTF-8 stays readable.)
#[derive(Deserialize)]
pub(crate) struct ShowRow<'a> {
    #[serde(borrow)]
    id: Option<Str<'a>>,
    #[serde(borrow)]
    title: Option<Str<'a>>,
    #[serde(borrow)]
    group: Option<Str<'a>>,
    #[serde(borrow)]
    group_path: Option<Str<'a>>,
    #[serde(borrow)]
    profile: Option<Str<'a>>,
    #[serde(borrow)]
    path: Option<Str<'a>>,
    #[serde(borrow)]
    parent_session_id: Option<Str<'a>>,
    is_conductor: Option<bool>,
    #[serde(rename = "IsConductor")]
    is_conductor_go: Option<bool>,
    #[serde(borrow)]
    status: Option<Str<'a>>,
    #[serde(borrow)]
    substate: Option<Str<'a>>,
    #[serde(borrow)]
    channels: Option<Vec<Str<'a>>>,
    #[serde(borrow)]
    auth_hold: Option<AuthHold<'a>>,
    #[serde(borrow)]
    claude_session_id: Option<Str<'a>>,
    /// Read loosely, as is `tmux_session`: see the module docs.
    #[serde(borrow)]
    substate_detail: Option<&'a RawValue>,
    #[serde(borrow)]
    tmux_session: Option<&'a RawValue>,
}

/// `auth_hold`: only its `reason` is read.
#[derive(Deserialize)]
struct AuthHold<'a> {
    #[serde(borrow)]
    reason: Option<Str<'a>>,
}

impl<'a> ShowRow<'a> {
    /// The keys of a list row, and the live state, owned (empty strings
    /// count as absent; the tool is the caller's to add); says so the first
    /// time a substate this watchdog does not know is read.
    pub(crate) fn split(self) -> (ListRow<'a>, Live) {
        if let Some(sub) = self.substate.as_ref().filter(|s| !s.0.is_empty()) {
            if let Substate::Other(text) = Substate::parse(&sub.0) {
                let id = self.id.as_ref().map_or("a session", |id| id.0.as_ref());
                session::report_unknown_substate(id, &text);
            }
        }
        let loose =
            |raw: Option<&'a RawValue>| raw.and_then(|r| serde_json::from_str(r.get()).ok());
        let channels = self.channels.into_iter().flatten();
        let list = ListRow {
            id: self.id,
            title: self.title,
            group: self.group,
            group_path: self.group_path,
            profile: self.profile,
            path: self.path,
            parent_session_id: self.parent_session_id,
            is_conductor: self.is_conductor,
            is_conductor_go: self.is_conductor_go,
            tool: None,
        };
        let live = Live {
            status: self.status.map(|s| Status::parse(&s.0)),
            substate: nonempty(self.substate),
            channels: channels.map(|c| c.0.into_owned()).collect(),
            auth_hold: (self.auth_hold)
                .map(|h| nonempty(h.reason).unwrap_or_else(|| "unknown".into())),
            claude_session_id: nonempty(self.claude_session_id),
            substate_detail: nonempty(loose(self.substate_detail)),
            tool: None,
            tmux_session: nonempty(loose(self.tmux_session)),
        };
        (list, live)
    }
}

impl<'a> ListRow<'a> {
    /// The row, with the live state given; `None` without an id.
    fn row(self, live: Live) -> Option<Row<'a>> {
        let text = |s: Option<Str<'a>>| s.map_or(Cow::Borrowed(""), |s| s.0);
        Some(Row {
            id: self.id.filter(|id| !id.0.is_empty())?.0,
            title: text(self.title),
            group: text(self.group.or(self.group_path)),
            profile: text(self.profile),
            path: text(self.path),
            parent_session_id: self
                .parent_session_id
                .filter(|p| !p.0.is_empty())
                .map(|p| p.0),
            is_conductor: self.is_conductor == Some(true) || self.is_conductor_go == Some(true),
            tool: (self.tool)
                .and_then(|t| serde_json::from_str::<Str>(t.get()).ok())
                .map_or(Cow::Borrowed(""), |t| t.0),
            status: live.status,
            live,
        })
    }
}

/// One session of a list, borrowing from the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row<'a> {
    /// Never empty.
    pub id: Cow<'a, str>,
    pub title: Cow<'a, str>,
    /// `group`, else `group_path`.
    pub group: Cow<'a, str>,
    pub profile: Cow<'a, str>,
    pub path: Cow<'a, str>,
    /// Absent when empty.
    pub parent_session_id: Option<Cow<'a, str>>,
    pub is_conductor: bool,
    /// Its tool (`claude`, `shell`, …): read from `list --all` rows only,
    /// empty otherwise.
    pub tool: Cow<'a, str>,
    /// Always absent in `list --all`.
    pub status: Option<Status>,
    live: Live,
}

impl Row<'_> {
    pub fn session(&self) -> Session {
        Session {
            id: self.id.to_string(),
            title: self.title.to_string(),
            group: self.group.to_string(),
            profile: self.profile.to_string(),
            path: self.path.to_string(),
            parent_session_id: self.parent_session_id.as_ref().map(|p| p.to_string()),
            is_conductor: self.is_conductor,
            tool: self.tool.to_string(),
        }
    }

    pub fn live(&self) -> Live {
        self.live.clone()
    }

    /// The tmux session name the row carries, if any (not in `list --all`).
    pub fn tmux_session(&self) -> Option<&str> {
        self.live.tmux_session.as_deref()
    }

    /// Restart-critical by name alone (see [`crate::fleet::session`]).
    pub fn is_critical_by_name(&self) -> bool {
        critical_rule(&self.title, &self.group, self.is_conductor).is_some()
    }
}

/// Why an element of a list is no session: the id it names, if any, and
/// why.
pub(crate) type NoSession = (Option<String>, String);

/// Reads one element of a list (valid JSON) into a row, with the live keys
/// or without: its `text`, or its own `bytes` when they differ (bytes that
/// are not UTF-8, which the text holds as `?`).
pub(crate) fn row<'a>(text: &'a str, bytes: &'a [u8], live: bool) -> Result<Row<'a>, NoSession> {
    if bytes.first() != Some(&b'{') {
        return Err((None, format!("not an object but {}", kind(bytes))));
    }
    let failed = |e: serde_json::Error| match std::str::from_utf8(bytes) {
        Ok(_) => (id_of(bytes), position_free(&e)),
        Err(_) => (id_of(bytes), "not UTF-8".to_owned()),
    };
    let row = if live {
        let (list, live) = parse::<ShowRow>(text, bytes).map_err(failed)?.split();
        list.row(live)
    } else {
        let list = parse::<ListRow>(text, bytes).map_err(failed)?;
        list.row(Live::default())
    };
    row.ok_or((None, "no id".to_owned()))
}

/// Reads `T` from `text` (as UTF-8, it need not be checked again), or from
/// `bytes` when they differ.
fn parse<'a, T: Deserialize<'a>>(text: &'a str, bytes: &'a [u8]) -> serde_json::Result<T> {
    if std::ptr::eq(text.as_bytes(), bytes) {
        serde_json::from_str(text)
    } else {
        serde_json::from_slice(bytes)
    }
}

/// What an element is, from its first byte, for a skip reason.
fn kind(bytes: &[u8]) -> &'static str {
    match bytes.first() {
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

/// The id of a row that is no session, to name it in the skip reason.
fn id_of(bytes: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct IdOnly<'a> {
        #[serde(borrow)]
        id: Option<Str<'a>>,
    }
    let id = serde_json::from_slice::<IdOnly>(bytes).ok()?.id?.0;
    (!id.is_empty()).then(|| id.into_owned())
}

/// A decoder's complaint without its position (which depends on where the
/// row started, not on what is wrong with it).
pub(crate) fn position_free(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// Absent, `null` and `""` are all "none".
fn nonempty(s: Option<Str<'_>>) -> Option<String> {
    s.filter(|s| !s.0.is_empty()).map(|s| s.0.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The row that is all of `bytes`, or why it is none.
    fn read(bytes: &[u8], live: bool) -> Result<Row<'_>, String> {
        let text = std::str::from_utf8(bytes).unwrap_or("?");
        row(text, bytes, live).map_err(|(_, why)| why)
    }

    fn profile_row(json: &str) -> Result<Row<'_>, String> {
        read(json.as_bytes(), true)
    }

    #[test]
    fn reads_the_used_fields_and_skips_the_rest() {
        let row = profile_row(
            r#"{"id":"x-1","title":"a\"b","group":null,"group_path":"g/p","profile":"work",
                "tool":"claude","extra":{"deep":[1,{"x":"y"}]},"n":-1.5e3,"t":true,"f":false,
                "z":null,"status":"starting","channels":["c1","c\u00e92"],
                "auth_hold":{"evidence":"pane","reason":""},"IsConductor":true,
                "parent_session_id":"","claude_session_id":"s-1"}"#,
        )
        .unwrap();
        assert_eq!(row.id, "x-1");
        assert!(matches!(row.id, Cow::Borrowed(_)));
        assert_eq!(row.title, "a\"b");
        assert_eq!(row.group, "g/p");
        assert_eq!(row.status, Some(Status::Unknown));
        assert!(row.is_conductor && row.is_critical_by_name());
        let s = row.session();
        assert_eq!(s.parent_session_id, None);
        let l = row.live();
        assert_eq!(l.channels, ["c1", "cé2"]);
        assert_eq!(l.auth_hold.as_deref(), Some("unknown"));
        assert_eq!(l.claude_session_id.as_deref(), Some("s-1"));
        let escaped_key = profile_row(r#"{"\u0069d" : "y-1" , "title":"t"}"#).unwrap();
        assert_eq!(escaped_key.id, "y-1");
    }

    #[test]
    fn the_live_fields_of_a_list_all_row_are_not_read() {
        let json = r#"{"id":"x-1","status":{"odd":1},"channels":"c","auth_hold":true}"#;
        let row = read(json.as_bytes(), false).unwrap();
        assert_eq!(row.status, None);
        assert_eq!(row.live(), Live::default());
    }

    #[test]
    fn no_id_and_wrong_types_are_no_session() {
        for json in [
            r#"{"title":"t"}"#,
            r#"{}"#,
            r#"{"id":""}"#,
            r#"{"id":null}"#,
            r#"{"id":7}"#,
            r#"{"id":"x","title":["a"]}"#,
            r#"{"id":"x","is_conductor":"yes"}"#,
            r#"{"id":"x","channels":"c"}"#,
            r#"{"id":"x","auth_hold":true}"#,
        ] {
            let e = profile_row(json).err();
            assert!(
                e.as_ref().is_some_and(|e| !e.contains(" at line ")),
                "{json}: {e:?}"
            );
        }
        assert_eq!(
            profile_row(r#"{"title":"t"}"#).err().as_deref(),
            Some("no id")
        );
    }

    #[test]
    fn a_row_of_the_newer_shape_is_read_and_its_new_keys_never_cost_it() {
        let newer = r#"{"id":"c-1","title":"conductor-x","tool":"codex","account":"work",
            "status":"error","substate":"usage-limit",
            "substate_detail":"try again at Oct 10th, 2026 8:03 AM","viewers":[{"who":"a"}],
            "status_source":"live","background_work":{"shells":2},"hook_status":"running",
            "hook_status_fresh":true,"superseded_by":"","last_activity_at":"2026-10-01T00:00:00Z"}"#;
        let l = profile_row(newer).unwrap().live();
        assert_eq!(l.tool, None, "the tool is read from `session show` only");
        assert_eq!(
            l.substate_detail.as_deref(),
            Some("try again at Oct 10th, 2026 8:03 AM")
        );
        assert!(l.usage_limited());
        for odd in [
            r#"{"id":"c-1","substate_detail":7,"tool":{"name":"codex"}}"#,
            r#"{"id":"c-1","substate_detail":["x"],"tool":true}"#,
            r#"{"id":"c-1","substate_detail":null,"tool":null}"#,
            r#"{"id":"c-1","substate_detail":"","tool":""}"#,
        ] {
            let l = profile_row(odd).unwrap().live();
            assert_eq!(l.substate_detail, None, "{odd}");
            let shown = odd.replacen('{', r#"{"status":"error","#, 1);
            let shown = crate::fleet::parse::show(&shown).unwrap();
            assert_eq!(shown.tool, None, "{odd}");
        }
        let shown = crate::fleet::parse::show(newer).unwrap();
        assert_eq!(shown.tool.as_deref(), Some("codex"));
        let escaped = profile_row(r#"{"id":"c-1","substate_detail":"at \u0038:03"}"#).unwrap();
        assert_eq!(escaped.live().substate_detail.as_deref(), Some("at 8:03"));
    }

    #[test]
    fn the_tmux_session_of_a_row_is_read_loosely_and_never_costs_it() {
        let row = profile_row(r#"{"id":"c-1","tmux_session":"agentdeck_conductor-x_1a2b3c4d"}"#);
        let l = row.unwrap().live();
        assert_eq!(
            l.tmux_session.as_deref(),
            Some("agentdeck_conductor-x_1a2b3c4d")
        );
        for odd in [
            r#"{"id":"c-1","tmux_session":7}"#,
            r#"{"id":"c-1","tmux_session":{"name":"x"}}"#,
            r#"{"id":"c-1","tmux_session":null}"#,
            r#"{"id":"c-1","tmux_session":""}"#,
        ] {
            assert_eq!(profile_row(odd).unwrap().live().tmux_session, None, "{odd}");
        }
        let all = read(br#"{"id":"c-1","tmux_session":"agentdeck_x"}"#, false).unwrap();
        assert_eq!(
            all.live().tmux_session,
            None,
            "list --all keeps no live keys"
        );
    }

    #[test]
    fn a_used_string_that_is_not_utf8_is_no_session_an_unused_one_is_skipped() {
        let bad = b"{\"id\":\"x-1\",\"title\":\"conductor-\xff\"}";
        assert_eq!(
            row("?", bad, false).err(),
            Some((Some("x-1".into()), "not UTF-8".into()))
        );
        let unused = b"{\"id\":\"x-1\",\"tool\":\"\xff\"}";
        assert_eq!(read(unused, true).map(|r| r.session().id), Ok("x-1".into()));
    }
}
