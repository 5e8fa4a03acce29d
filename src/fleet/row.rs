//! One session row of a CLI list (`list --all --json`, `-p P list --json`),
//! read straight from the answer's bytes.
//!
//! [`read_row`] walks one JSON object and keeps only the fields the daemon
//! uses, borrowed from the bytes at hand: a string with an escape in it is
//! the only copy made, and every other field is skipped unread. It walks the
//! object itself and hands serde only what is rare (escapes, numbers, arrays,
//! nested objects, values of the wrong type), so a row costs little more
//! than validating it; what it accepts and refuses is what serde_json
//! accepts and refuses. Keys and values are taken as raw bytes and decoded
//! only when a field is used; bytes that are not UTF-8 (which Go's encoder
//! never prints) read as U+FFFD, as they did when the whole answer was
//! decoded at once. `null` counts as absent; a used field of the wrong type,
//! or a row without an `id`, is [`RowError::Data`]. Pure decoding: no I/O,
//! no decision.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use crate::fleet::session::{critical_by_name, Live, Session, Status};

/// A string field as it appears in the answer: borrowed unless it holds an
/// escape, and not decoded until it is used.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text<'a>(Cow<'a, [u8]>);

impl<'a> Text<'a> {
    pub fn str(&self) -> Cow<'_, str> {
        match std::str::from_utf8(&self.0) {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(&self.0),
        }
    }

    pub fn string(&self) -> String {
        self.str().into_owned()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn into_str(self) -> Cow<'a, str> {
        match self.0 {
            Cow::Borrowed(b) => match std::str::from_utf8(b) {
                Ok(s) => Cow::Borrowed(s),
                Err(_) => String::from_utf8_lossy(b),
            },
            Cow::Owned(v) => match String::from_utf8(v) {
                Ok(s) => Cow::Owned(s),
                Err(e) => Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
            },
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text<'a>, D::Error> {
        d.deserialize_bytes(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_bytes<E>(self, v: &'de [u8]) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Borrowed(v)))
    }

    fn visit_bytes<E>(self, v: &[u8]) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Owned(v.to_vec())))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Borrowed(v.as_bytes())))
    }

    fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Owned(v.as_bytes().to_vec())))
    }
}

/// One session of a list; see the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row<'a> {
    /// Never empty.
    pub id: Cow<'a, str>,
    pub title: Text<'a>,
    /// `group`, else `group_path`.
    pub group: Text<'a>,
    pub profile: Text<'a>,
    pub path: Text<'a>,
    /// Absent when empty.
    pub parent_session_id: Option<Text<'a>>,
    pub is_conductor: bool,
    /// The live fields; all empty in `list --all`, and the ones that are
    /// optional absent when empty.
    pub status: Option<Status>,
    pub substate: Option<Text<'a>>,
    pub channels: Vec<Text<'a>>,
    /// `auth_hold.reason` (`unknown` when it has none).
    pub auth_hold: Option<Text<'a>>,
    pub claude_session_id: Option<Text<'a>>,
}

impl Row<'_> {
    pub fn session(&self) -> Session {
        Session {
            id: self.id.clone().into_owned(),
            title: self.title.string(),
            group: self.group.string(),
            profile: self.profile.string(),
            path: self.path.string(),
            parent_session_id: self.parent_session_id.as_ref().map(Text::string),
            is_conductor: self.is_conductor,
        }
    }

    pub fn live(&self) -> Live {
        Live {
            status: self.status,
            substate: self.substate.as_ref().map(Text::string),
            channels: self.channels.iter().map(Text::string).collect(),
            auth_hold: self.auth_hold.as_ref().map(Text::string),
            claude_session_id: self.claude_session_id.as_ref().map(Text::string),
        }
    }

    /// Restart-critical by name alone (see [`crate::fleet::session`]).
    pub fn is_critical_by_name(&self) -> bool {
        critical_by_name(&self.title.str(), &self.group.str(), self.is_conductor)
    }
}

/// The fields a row is read for; the key of any other is skipped with its
/// value.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Id,
    Title,
    Group,
    GroupPath,
    Profile,
    Path,
    ParentSessionId,
    IsConductor,
    IsConductorGo,
    Status,
    Substate,
    Channels,
    AuthHold,
    ClaudeSessionId,
    Other,
}

impl Field {
    fn of(key: &[u8]) -> Field {
        // Most keys are not wanted: their length alone tells, most often.
        if !matches!(key.len(), 2 | 4..=12 | 17) {
            return Field::Other;
        }
        match key {
            b"id" => Field::Id,
            b"title" => Field::Title,
            b"group" => Field::Group,
            b"group_path" => Field::GroupPath,
            b"profile" => Field::Profile,
            b"path" => Field::Path,
            b"parent_session_id" => Field::ParentSessionId,
            b"is_conductor" => Field::IsConductor,
            b"IsConductor" => Field::IsConductorGo,
            b"status" => Field::Status,
            b"substate" => Field::Substate,
            b"channels" => Field::Channels,
            b"auth_hold" => Field::AuthHold,
            b"claude_session_id" => Field::ClaudeSessionId,
            _ => Field::Other,
        }
    }

    fn is_live(self) -> bool {
        matches!(
            self,
            Field::Status
                | Field::Substate
                | Field::Channels
                | Field::AuthHold
                | Field::ClaudeSessionId
        )
    }
}

/// `auth_hold`: only its `reason` is read.
struct AuthHold<'a>(Option<Text<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for AuthHold<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<AuthHold<'a>, D::Error> {
        d.deserialize_map(AuthHoldVisitor)
    }
}

struct AuthHoldVisitor;

impl<'de> Visitor<'de> for AuthHoldVisitor {
    type Value = AuthHold<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an auth hold object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AuthHold<'de>, A::Error> {
        let mut reason = None;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            if key.0.as_ref() == b"reason" {
                reason = map.next_value()?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(AuthHold(reason))
    }
}

/// Why an object is no row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowError {
    /// Valid JSON as far as it was read, but no session: skip the row.
    Data(String),
    /// Not valid JSON, or cut short.
    Syntax(String),
}

impl RowError {
    fn of(e: &serde_json::Error) -> RowError {
        let text = e.to_string();
        let text = match text.rfind(" at line ") {
            Some(i) => text[..i].to_owned(),
            None => text,
        };
        if e.is_data() {
            RowError::Data(text)
        } else {
            RowError::Syntax(text)
        }
    }

    fn syntax(what: &str) -> RowError {
        RowError::Syntax(what.to_owned())
    }
}

/// Reads the JSON object at the start of `bytes` (its first byte is `{`) as
/// a row, with the live fields or without: the row and the object's length.
/// Bytes after the object are not looked at.
pub fn read_row(bytes: &[u8], live: bool) -> Result<(Row<'_>, usize), RowError> {
    let mut c = Cursor { bytes, at: 1 };
    let mut row = Row::default();
    let mut id: Option<Text<'_>> = None;
    let mut group_path: Option<Text<'_>> = None;
    let mut group: Option<Text<'_>> = None;
    let (mut conductor, mut conductor_go): (Option<bool>, Option<bool>) = (None, None);
    c.space();
    if c.peek() == Some(b'}') {
        c.at += 1;
    } else {
        loop {
            let mut field = c.key()?;
            if field.is_live() && !live {
                field = Field::Other;
            }
            c.space();
            if c.next() != Some(b':') {
                return Err(RowError::syntax("expected `:` after a key"));
            }
            c.space();
            match field {
                Field::Id => id = c.text()?,
                Field::Title => row.title = c.text()?.unwrap_or_default(),
                Field::Group => group = c.text()?,
                Field::GroupPath => group_path = c.text()?,
                Field::Profile => row.profile = c.text()?.unwrap_or_default(),
                Field::Path => row.path = c.text()?.unwrap_or_default(),
                Field::ParentSessionId => row.parent_session_id = nonempty(c.text()?),
                Field::IsConductor => conductor = c.checked()?,
                Field::IsConductorGo => conductor_go = c.checked()?,
                Field::Status => row.status = c.text()?.map(|s| status_of(&s.0)),
                Field::Substate => row.substate = nonempty(c.text()?),
                Field::Channels => row.channels = c.checked::<Option<_>>()?.unwrap_or_default(),
                Field::AuthHold => {
                    let hold: Option<AuthHold<'_>> = c.checked()?;
                    row.auth_hold =
                        hold.map(|h| nonempty(h.0).unwrap_or(Text(Cow::Borrowed(b"unknown"))));
                }
                Field::ClaudeSessionId => row.claude_session_id = nonempty(c.text()?),
                Field::Other => c.skip_value()?,
            }
            c.space();
            match c.next() {
                Some(b',') => c.space(),
                Some(b'}') => break,
                Some(_) => return Err(RowError::syntax("expected `,` or `}` after a value")),
                None => return Err(RowError::syntax("the row is cut short")),
            }
        }
    }
    let id = nonempty(id).ok_or_else(|| RowError::Data("no id".into()))?;
    row.id = id.into_str();
    row.group = group.or(group_path).unwrap_or_default();
    row.is_conductor = conductor == Some(true) || conductor_go == Some(true);
    Ok((row, c.at))
}

/// A position in the bytes of one row.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    /// Skips JSON whitespace.
    fn space(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.at += 1;
        }
    }

    /// The string starting here (at its `"`) if it holds no escape and no
    /// control character: its bytes, and the cursor moved past it.
    fn plain_string(&mut self) -> Option<&'a [u8]> {
        let start = self.at + 1;
        let rest = self.bytes.get(start..)?;
        let end = rest
            .iter()
            .position(|b| matches!(b, b'"' | b'\\' | 0..=0x1f))?;
        if rest[end] != b'"' {
            return None;
        }
        self.at = start + end + 1;
        Some(&rest[..end])
    }

    /// A key, matched against [`Field`].
    fn key(&mut self) -> Result<Field, RowError> {
        if self.peek() != Some(b'"') {
            return Err(RowError::syntax("expected a key"));
        }
        match self.plain_string() {
            Some(key) => Ok(Field::of(key)),
            None => Ok(Field::of(&self.checked::<Text<'_>>()?.0)),
        }
    }

    /// A string field's value: a string, or `null` for none.
    fn text(&mut self) -> Result<Option<Text<'a>>, RowError> {
        match self.peek() {
            Some(b'"') => match self.plain_string() {
                Some(s) => Ok(Some(Text(Cow::Borrowed(s)))),
                None => self.checked(),
            },
            Some(b'n') if self.bytes[self.at..].starts_with(b"null") => {
                self.at += 4;
                Ok(None)
            }
            _ => self.checked(),
        }
    }

    /// Skips any value, checking that it is JSON.
    fn skip_value(&mut self) -> Result<(), RowError> {
        let literal: &[u8] = match self.peek() {
            Some(b'"') if self.plain_string().is_some() => return Ok(()),
            Some(b'n') => b"null",
            Some(b't') => b"true",
            Some(b'f') => b"false",
            _ => b"",
        };
        if !literal.is_empty() && self.bytes[self.at..].starts_with(literal) {
            self.at += literal.len();
            return Ok(());
        }
        self.serde::<IgnoredAny>().map(drop)
    }

    /// The value starting here, checked to be JSON exactly as serde_json
    /// checks what it skips, then read as `T` (whose strings serde_json
    /// reads more leniently, as raw bytes).
    fn checked<T: Deserialize<'a>>(&mut self) -> Result<T, RowError> {
        let start = self.at;
        self.serde::<IgnoredAny>()?;
        serde_json::from_slice(&self.bytes[start..self.at]).map_err(|e| RowError::of(&e))
    }

    /// The value starting here, read by serde_json.
    fn serde<T: Deserialize<'a>>(&mut self) -> Result<T, RowError> {
        let mut values =
            serde_json::Deserializer::from_slice(&self.bytes[self.at..]).into_iter::<T>();
        match values.next() {
            Some(Ok(v)) => {
                self.at += values.byte_offset();
                Ok(v)
            }
            Some(Err(e)) => Err(RowError::of(&e)),
            None => Err(RowError::syntax("the row is cut short")),
        }
    }
}

/// [`Status::parse`] over bytes.
fn status_of(word: &[u8]) -> Status {
    std::str::from_utf8(word).map_or(Status::Unknown, Status::parse)
}

/// Absent, `null` and `""` are all "none".
fn nonempty(t: Option<Text<'_>>) -> Option<Text<'_>> {
    t.filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile_row(json: &str) -> Result<Row<'_>, RowError> {
        let (row, len) = read_row(json.as_bytes(), true)?;
        assert_eq!(len, json.len(), "{json}");
        Ok(row)
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
        assert_eq!(row.title.str(), "a\"b");
        assert_eq!(row.group.str(), "g/p");
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
        let json = r#"{"id":"x-1","status":{"odd":1}}"#;
        let (row, _) = read_row(json.as_bytes(), false).unwrap();
        assert_eq!(row.status, None);
    }

    #[test]
    fn no_id_and_wrong_types_are_data_errors() {
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
            assert!(matches!(e, Some(RowError::Data(_))), "{json}: {e:?}");
        }
        assert_eq!(
            profile_row(r#"{"title":"t"}"#).err(),
            Some(RowError::Data("no id".into()))
        );
    }

    #[test]
    fn what_serde_json_refuses_is_a_syntax_error() {
        for json in [
            r#"{"id":"x",}"#,
            r#"{"id":"x" "t":1}"#,
            r#"{"id" "x"}"#,
            r#"{id:"x"}"#,
            r#"{"id":"x","t":tru}"#,
            r#"{"id":"x","t":nul}"#,
            r#"{"id":"x","t":01}"#,
            r#"{"id":"x","t":"a\qb"}"#,
            "{\"id\":\"x\",\"t\":\"a\tb\"}",
            "{\"id\":\"x\",\"title\":\"a\tb\"}",
            "{\"id\":\"x\",\"title\":\"a\\\"\tb\"}",
            "{\"id\":\"x\",\"channels\":[\"a\tb\"]}",
            "{\"id\":\"x\",\"auth_hold\":{\"reason\":\"\u{1}\"}}",
            r#"{"id":"x","t":[1,]}"#,
            r#"{"id":"x""#,
            r#"{"id":"x","#,
            r#"{"#,
        ] {
            let e = profile_row(json).err();
            assert!(matches!(e, Some(RowError::Syntax(_))), "{json}: {e:?}");
            assert!(serde_json::from_str::<IgnoredAny>(json).is_err(), "{json}");
        }
    }
}
