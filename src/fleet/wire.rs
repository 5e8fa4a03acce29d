//! The session object as the CLI prints it, as serde reads it: one row of a
//! list (`list --all --json`, `-p P list --json`) and the answer of
//! `session show --json` share [`Wire`].
//!
//! Strings are borrowed from the bytes at hand unless they hold an escape;
//! keys the daemon does not use are skipped unread, and `null` counts as
//! absent. A row of `list --all`, which has no live keys, skips them too,
//! whatever their type. A row without an `id`, with a used key of the wrong
//! type, or with a used string that is not UTF-8 is no session, and
//! [`element`] says why, with serde's complaint; the keys newer releases
//! added that the daemon reads (`tool`, `substate_detail`: CHANGELOG
//! 1.16.11), and `tmux_session` (the pane watch's key, which only the live
//! answers carry), are [`Loose`] instead, so a value of the wrong type reads
//! as absent and never costs the row. Pure decoding: no I/O, no decision, but one line the first
//! time a substate this watchdog does not know is read.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Result as JsonResult;

use crate::fleet::session::{self, critical_rule, Live, Session, Status, Substate};

/// A string of the answer: borrowed unless it holds an escape.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub(crate) struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

/// A string where a newer release added one: any other value (a number, an
/// object, `null`) reads as absent instead of making the row unreadable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Loose<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for Loose<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Loose<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Loose(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Loose(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_some<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Self::Value, D::Error> {
                d.deserialize_any(V)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Self::Value, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Loose(None))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Self::Value, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Loose(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// `auth_hold`: only its `reason` is read.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct WireAuthHold<'a> {
    #[serde(borrow)]
    reason: Option<Str<'a>>,
}

/// The keys of a session object the daemon reads; the live ones are of
/// types `T` (a string), `M` (the channels), `H` (the auth hold), `L` (a
/// string a newer release added) and `K` (the tool, read from `session
/// show` only: a list row whose tool is not UTF-8 stays readable).
#[derive(Deserialize)]
pub(crate) struct Wire<'a, T, M, H, L, K> {
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
    status: Option<T>,
    substate: Option<T>,
    channels: Option<M>,
    auth_hold: Option<H>,
    claude_session_id: Option<T>,
    substate_detail: Option<L>,
    tool: Option<K>,
    tmux_session: Option<L>,
}

/// A row of `list --all`: its live keys, if any, are skipped unread.
type AllWire<'a> = Wire<'a, IgnoredAny, IgnoredAny, IgnoredAny, IgnoredAny, IgnoredAny>;
/// A row of `-p P list`: with the live keys but the tool.
type RowWire<'a> = Wire<'a, Str<'a>, Vec<Str<'a>>, WireAuthHold<'a>, Loose<'a>, IgnoredAny>;
/// A `session show`: with the live keys.
pub(crate) type LiveWire<'a> =
    Wire<'a, Str<'a>, Vec<Str<'a>>, WireAuthHold<'a>, Loose<'a>, Loose<'a>>;

/// A key that is read ([`Loose`]) or skipped unread.
pub(crate) trait Kept<'a> {
    fn kept(self) -> Loose<'a>;
}

impl<'a> Kept<'a> for Loose<'a> {
    fn kept(self) -> Loose<'a> {
        self
    }
}

impl<'a> Kept<'a> for IgnoredAny {
    fn kept(self) -> Loose<'a> {
        Loose(None)
    }
}

/// The live keys but the status, as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LiveKeys<'a> {
    substate: Option<Str<'a>>,
    channels: Option<Vec<Str<'a>>>,
    auth_hold: Option<WireAuthHold<'a>>,
    claude_session_id: Option<Str<'a>>,
    substate_detail: Option<Loose<'a>>,
    tool: Option<Loose<'a>>,
    tmux_session: Option<Loose<'a>>,
}

impl LiveKeys<'_> {
    /// The live state, owned; empty strings count as absent.
    pub(crate) fn live(&self, status: Option<Status>) -> Live {
        Live {
            status,
            substate: nonempty(&self.substate),
            channels: self
                .channels
                .iter()
                .flatten()
                .map(|c| c.0.to_string())
                .collect(),
            auth_hold: self
                .auth_hold
                .as_ref()
                .map(|h| nonempty(&h.reason).unwrap_or_else(|| "unknown".into())),
            claude_session_id: nonempty(&self.claude_session_id),
            substate_detail: loose(&self.substate_detail),
            tool: loose(&self.tool),
            tmux_session: loose(&self.tmux_session),
        }
    }
}

/// Absent, of another type, or `""`: none.
fn loose(s: &Option<Loose<'_>>) -> Option<String> {
    let text = s.as_ref().and_then(|l| l.0.as_deref());
    text.filter(|t| !t.is_empty()).map(str::to_owned)
}

impl<'a, K: Kept<'a>> Wire<'a, Str<'a>, Vec<Str<'a>>, WireAuthHold<'a>, Loose<'a>, K> {
    /// Takes the live keys out: the status and the rest.
    pub(crate) fn take_live(&mut self) -> (Option<Status>, LiveKeys<'a>) {
        let status = self.status.take().map(|s| Status::parse(&s.0));
        let keys = LiveKeys {
            substate: self.substate.take(),
            channels: self.channels.take(),
            auth_hold: self.auth_hold.take(),
            claude_session_id: self.claude_session_id.take(),
            substate_detail: self.substate_detail.take(),
            tool: self.tool.take().map(Kept::kept),
            tmux_session: self.tmux_session.take(),
        };
        if let Some(sub) = keys.substate.as_ref().filter(|s| !s.0.is_empty()) {
            if let Substate::Other(text) = Substate::parse(&sub.0) {
                let id = self.id.as_ref().map_or("a session", |id| id.0.as_ref());
                session::report_unknown_substate(id, &text);
            }
        }
        (status, keys)
    }
}

impl<'a, T, M, H, L, K> Wire<'a, T, M, H, L, K> {
    /// The row, with the live keys given; `None` without an id.
    fn row(self, status: Option<Status>, live: LiveKeys<'a>) -> Option<Row<'a>> {
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
            status,
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
    /// Always absent in `list --all`.
    pub status: Option<Status>,
    live: LiveKeys<'a>,
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
        }
    }

    pub fn live(&self) -> Live {
        self.live.live(self.status)
    }

    /// The tmux session name the row carries, if any (not in `list --all`).
    pub fn tmux_session(&self) -> Option<&str> {
        let name = self.live.tmux_session.as_ref().and_then(|l| l.0.as_deref());
        name.filter(|n| !n.is_empty())
    }

    /// Restart-critical by name alone (see [`crate::fleet::session`]).
    pub fn is_critical_by_name(&self) -> bool {
        critical_rule(&self.title, &self.group, self.is_conductor).is_some()
    }
}

/// What the element of a list at the start of some bytes is. It is handed
/// back once per row and never kept, so the row is not boxed.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Element<'a> {
    /// A session, and the element's length.
    Row(Row<'a>, usize),
    /// Valid JSON but no session: the id it names, if any, why, and its
    /// length.
    Skip(Option<String>, String, usize),
    /// The bytes that follow may still change what it is.
    Open,
    /// Not valid JSON: why the answer is not either.
    Broken(String),
}

/// Reads the element at the start of `bytes`, with the live keys or
/// without, as far as these bytes tell (all of it when `whole` says they
/// are all of it: then it is never [`Element::Open`]).
pub(crate) fn element(bytes: &[u8], live: bool, whole: bool) -> Element<'_> {
    let mut failed = None;
    if bytes.first() == Some(&b'{') {
        let read = if live {
            read_first_value::<RowWire>(bytes).map(|read| {
                read.map(|(mut w, len)| {
                    let (status, keys) = w.take_live();
                    (w.row(status, keys), len)
                })
            })
        } else {
            read_first_value::<AllWire>(bytes)
                .map(|read| read.map(|(w, len)| (w.row(None, LiveKeys::default()), len)))
        };
        match read {
            Some(Ok((Some(row), len))) => return Element::Row(row, len),
            Some(Ok((None, len))) => return Element::Skip(None, "no id".into(), len),
            Some(Err(e)) if !e.is_eof() => failed = Some(e),
            _ if !whole => return Element::Open,
            _ => {}
        }
    }
    // Not a session: skipped if it is valid JSON, then the answer is not.
    // A number or literal that reaches the end of `bytes` may go on in the
    // next piece; serde_json ends one at the bytes the list reader's
    // `ElementEnd` ends it at (its `peek_end_of_value`), which keeps the
    // outcome the same whatever the pieces.
    match read_first_value::<IgnoredAny>(bytes) {
        Some(Ok((_, len))) if whole || len < bytes.len() || is_delimited(bytes[0]) => {
            let element = &bytes[..len];
            match failed {
                Some(_) if std::str::from_utf8(element).is_err() => {
                    Element::Skip(id_of(element), "not UTF-8".into(), len)
                }
                Some(e) => Element::Skip(id_of(element), position_free(&e), len),
                None => Element::Skip(None, format!("not an object but {}", kind(element)), len),
            }
        }
        Some(Err(e)) if whole => Element::Broken(position_free(&e)),
        None if whole => Element::Broken("a row is missing".into()),
        _ => Element::Open,
    }
}

/// Whether an element starting with `b` shows its own end (an object, an
/// array or a string), unlike a number or a literal.
pub(crate) fn is_delimited(b: u8) -> bool {
    matches!(b, b'{' | b'[' | b'"')
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

/// The JSON value at the start of `bytes` and its length.
fn read_first_value<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Option<JsonResult<(T, usize)>> {
    let mut values = serde_json::Deserializer::from_slice(bytes).into_iter::<T>();
    let value = values.next()?;
    Some(value.map(|v| (v, values.byte_offset())))
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
fn position_free(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// Absent, `null` and `""` are all "none".
fn nonempty(s: &Option<Str<'_>>) -> Option<String> {
    s.as_ref()
        .filter(|s| !s.0.is_empty())
        .map(|s| s.0.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The row that is all of `bytes`, or serde's complaint.
    fn read(bytes: &[u8], live: bool) -> Result<Row<'_>, String> {
        match element(bytes, live, true) {
            Element::Row(row, len) if len == bytes.len() => Ok(row),
            Element::Skip(_, why, _) | Element::Broken(why) => Err(why),
            _ => Err("not one object".into()),
        }
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
            let mut w: LiveWire = serde_json::from_str(odd).unwrap();
            let (_, keys) = w.take_live();
            assert_eq!(keys.live(None).tool, None, "{odd}");
        }
        let mut shown: LiveWire = serde_json::from_str(newer).unwrap();
        let (status, keys) = shown.take_live();
        assert_eq!(keys.live(status).tool.as_deref(), Some("codex"));
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
        assert!(read(bad, false).is_err());
        assert_eq!(id_of(bad).as_deref(), Some("x-1"));
        let unused = b"{\"id\":\"x-1\",\"tool\":\"\xff\"}";
        assert_eq!(read(unused, true).map(|r| r.session().id), Ok("x-1".into()));
    }
}
