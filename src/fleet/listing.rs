//! Reads a list answer of the agent-deck CLI (`list --all --json`,
//! `-p P list --json`) as it arrives from the pipe, row by row, into typed
//! rows that borrow from the bytes at hand.
//!
//! [`ListReader`] is fed the answer in pieces of any size. [`Splitter`]
//! frames each element of the top-level array, and serde reads it whole into
//! a [`Row`] ([`wire::read`]). No `serde_json::Value` is built and the answer
//! is never held whole: memory is one row, bounded by [`MAX_ROW_BYTES`],
//! plus what the caller keeps of each row.
//!
//! What counts as what, whatever the pieces:
//! - a row that is valid JSON but not a usable session (not an object, no
//!   `id`, a used field of the wrong type or not UTF-8) is skipped and
//!   counted, with a short reason; so is a row longer than
//!   [`MAX_ROW_BYTES`], unread;
//! - an array that is not valid JSON (bad syntax inside a row, brackets that
//!   do not match, a missing comma, anything after the closing `]`, an answer
//!   that ends inside the array) is [`Garbage`]: unknown, never "no sessions";
//! - an answer that is not an array is kept up to [`MAX_TEXT_BYTES`] and read
//!   as a whole: `null` and the CLI's "none" sentences are an empty list,
//!   anything else (a JSON error object, text, longer text) is [`Garbage`].
//!
//! Rows reach the caller before the end of the answer is known: a caller
//! keeps them only once [`ListReader::finish`] said the answer was readable.

use serde::de::IgnoredAny;

use crate::fleet::parse::{self, clip_reason, Garbage};
use crate::fleet::split::{Element, End, Splitter};
pub use crate::fleet::split::{MAX_ROW_BYTES, MAX_TEXT_BYTES};
use crate::fleet::wire;
pub use crate::fleet::wire::Row;

/// At most this many skip reasons are kept; the rest are only counted.
const MAX_REASONS: usize = 32;

/// Which list is read: it decides the fields of a row and the sentences
/// that mean "no sessions".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `list --all --json`: no status.
    All,
    /// `-p P list --json`: with each session's live status.
    Profile,
}

/// How many rows an answer had, and why the skipped ones were.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowTally {
    pub rows: usize,
    pub skipped: usize,
    /// One short reason per skipped row (`row 3: no id`), the first
    /// [`MAX_REASONS`] of them, in list order.
    pub reasons: Vec<String>,
}

/// Reads one list answer fed in pieces; see the module docs.
pub struct ListReader<'f> {
    split: Splitter,
    rows: Rows<'f>,
    garbled: Option<String>,
}

/// What the reader does with each element.
struct Rows<'f> {
    shape: Shape,
    each: &'f mut dyn FnMut(&Row<'_>),
    tally: RowTally,
}

impl<'f> ListReader<'f> {
    /// A reader that hands each readable row to `each`, in list order.
    pub fn new(shape: Shape, each: &'f mut dyn FnMut(&Row<'_>)) -> ListReader<'f> {
        ListReader {
            split: Splitter::default(),
            rows: Rows {
                shape,
                each,
                tally: RowTally::default(),
            },
            garbled: None,
        }
    }

    /// Reads the next piece of the answer; false once nothing that follows
    /// can change the outcome (the answer is already garbage).
    pub fn feed(&mut self, piece: &[u8]) -> bool {
        if self.garbled.is_none() {
            let rows = &mut self.rows;
            if let Err(why) = self.split.feed(piece, &mut |e| rows.element(e)) {
                self.garbled = Some(why);
            }
        }
        self.garbled.is_none() && !self.split.overflowed()
    }

    /// The answer as far as it is not an array (empty for an array): what a
    /// failed call printed instead of a list.
    pub fn text(&self) -> &[u8] {
        self.split.text()
    }

    /// The verdict once the answer is complete.
    pub fn finish(self) -> Result<RowTally, Garbage> {
        if let Some(why) = self.garbled {
            return Err(Garbage(format!("not a readable JSON array: {why}")));
        }
        match self.split.end().map_err(Garbage)? {
            End::Array => Ok(self.rows.tally),
            End::Text(text, overflow) => none_or_garbage(self.rows.shape, text, overflow),
        }
    }
}

impl Rows<'_> {
    /// One element: used, skipped, or the reason the answer is garbage (it
    /// is not valid JSON).
    fn element(&mut self, e: Element<'_>) -> Result<(), String> {
        let Element::Whole(bytes) = e else {
            self.skip(
                None,
                format!("longer than {} KiB, not read", MAX_ROW_BYTES / 1024),
            );
            return Ok(());
        };
        if bytes.first() != Some(&b'{') {
            valid_json(bytes)?;
            self.skip(None, format!("not an object but {}", kind(bytes)));
            return Ok(());
        }
        match wire::read(bytes, self.shape == Shape::Profile) {
            Ok(row) => {
                self.tally.rows += 1;
                (self.each)(&row);
            }
            Err(why) => {
                valid_json(bytes)?;
                self.skip(wire::id_of(bytes).as_deref(), why);
            }
        }
        Ok(())
    }

    fn skip(&mut self, id: Option<&str>, why: String) {
        self.tally.skipped += 1;
        if self.tally.reasons.len() >= MAX_REASONS {
            return;
        }
        let n = self.tally.rows + self.tally.skipped;
        let named = match id {
            Some(id) => format!(" (id {})", clip_reason(&format!("{id:?}"))),
            None => String::new(),
        };
        self.tally
            .reasons
            .push(format!("row {n}{named}: {}", clip_reason(&why)));
    }
}

/// A non-array answer: one of the "no sessions" forms, or garbage.
fn none_or_garbage(shape: Shape, bytes: &[u8], overflow: bool) -> Result<RowTally, Garbage> {
    if overflow {
        return Err(Garbage(format!(
            "expected a JSON array, got more than {} KiB of something else starting {}",
            MAX_TEXT_BYTES / 1024,
            preview(bytes)
        )));
    }
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    let none = text == "null"
        || match shape {
            Shape::All => text == "No profiles found.",
            Shape::Profile => text.starts_with("No sessions found in profile"),
        };
    if none {
        Ok(RowTally::default())
    } else if serde_json::from_str::<IgnoredAny>(text).is_ok() {
        Err(Garbage(format!(
            "expected a JSON array, got {}",
            preview(bytes)
        )))
    } else {
        Err(Garbage(format!("not JSON: {}", preview(bytes))))
    }
}

/// Reads a whole answer held in memory, fed in pieces of `piece` bytes
/// (all at once for 0).
pub fn read(
    shape: Shape,
    answer: &[u8],
    piece: usize,
    each: &mut dyn FnMut(&Row<'_>),
) -> Result<RowTally, Garbage> {
    let mut reader = ListReader::new(shape, each);
    let size = if piece == 0 {
        answer.len().max(1)
    } else {
        piece
    };
    for chunk in answer.chunks(size) {
        if !reader.feed(chunk) {
            break;
        }
    }
    reader.finish()
}

fn valid_json(bytes: &[u8]) -> Result<(), String> {
    serde_json::from_slice::<IgnoredAny>(bytes)
        .map(drop)
        .map_err(|e| wire::position_free(&e))
}

/// What a row is, from its first byte, for a skip reason.
fn kind(bytes: &[u8]) -> &'static str {
    match bytes.first() {
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

/// A short, single-line look at unexpected output for a log line.
fn preview(bytes: &[u8]) -> String {
    parse::preview(&String::from_utf8_lossy(&bytes[..bytes.len().min(256)]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::session::{Live, Session, Status};

    /// What reading `answer` in pieces of `piece` bytes gave: the rows as
    /// owned values, and the tally; or only that it was garbage.
    type Read = Result<(Vec<(Session, Live)>, RowTally), ()>;

    fn read_in(shape: Shape, answer: &[u8], piece: usize) -> Read {
        let mut rows = Vec::new();
        let tally = read(shape, answer, piece, &mut |r| {
            rows.push((r.session(), r.live()))
        });
        tally.map(|t| (rows, t)).map_err(drop)
    }

    /// Reads `answer` whole and in pieces of every size: all the same.
    fn same_in_every_piece_size(shape: Shape, answer: &str) -> Read {
        let whole = read_in(shape, answer.as_bytes(), 0);
        for piece in 1..=answer.len() {
            assert_eq!(
                read_in(shape, answer.as_bytes(), piece),
                whole,
                "pieces of {piece}"
            );
        }
        whole
    }

    /// A `-p P list --json` answer as Go indents it, with strings that hold
    /// what a splitter could trip on, and nesting in fields nobody reads.
    const PROFILE: &str = r#"[
  {
    "id": "3f9c2a1b-1755891234",
    "title": "conductor-ops ] , } \" [ {",
    "path": "C:\\work\\ops",
    "group": "conductor",
    "tool": "claude",
    "status": "error",
    "substate": "auth-401",
    "channels": [
      "plugin:telegram@claude-plugins-official"
    ],
    "extra": {"a": [1, {"b": "]}"}, -2.5e3, true, null], "c": "\u003c\u2028"},
    "profile": "work",
    "archived": false,
    "archived_at": "0001-01-01T00:00:00Z",
    "created_at": "2026-08-20T10:00:00+02:00"
  },
  {
    "id": "a0b1c2d3-1755899999",
    "parent_session_id": "3f9c2a1b-1755891234",
    "title": "w\u00f6rker-1",
    "path": "/srv/app",
    "group": "srv",
    "status": "starting",
    "profile": "work"
  }
]
"#;

    /// `list --all --json` held whole: its sessions and skip reasons.
    fn list_all(out: &str) -> Result<(Vec<Session>, Vec<String>), ()> {
        let (rows, tally) = read_in(Shape::All, out.as_bytes(), 0)?;
        Ok((rows.into_iter().map(|(s, _)| s).collect(), tally.reasons))
    }

    /// `-p P list --json` held whole: its rows and skip reasons.
    fn list_profile(out: &str) -> Result<(Vec<(Session, Live)>, Vec<String>), ()> {
        read_in(Shape::Profile, out.as_bytes(), 0).map(|(rows, tally)| (rows, tally.reasons))
    }

    #[test]
    fn rows_cut_at_any_byte_read_the_same_as_whole() {
        let (rows, tally) = same_in_every_piece_size(Shape::Profile, PROFILE).unwrap();
        assert_eq!(tally.rows, 2);
        assert_eq!(tally.skipped, 0);
        let (s, l) = &rows[0];
        assert_eq!(s.id, "3f9c2a1b-1755891234");
        assert_eq!(s.title, "conductor-ops ] , } \" [ {");
        assert_eq!(s.path, "C:\\work\\ops");
        assert_eq!(s.profile, "work");
        assert_eq!(l.status, Some(Status::Error));
        assert_eq!(l.substate.as_deref(), Some("auth-401"));
        assert_eq!(l.channels, ["plugin:telegram@claude-plugins-official"]);
        let (s, l) = &rows[1];
        assert_eq!(s.title, "wörker-1");
        assert_eq!(s.parent_session_id.as_deref(), Some("3f9c2a1b-1755891234"));
        assert_eq!(l.status, Some(Status::Unknown));
    }

    #[test]
    fn an_answer_cut_short_is_garbage_wherever_it_is_cut() {
        let answer = PROFILE.trim_end();
        for cut in 1..answer.len() {
            for piece in [1, 7, 64, 0] {
                assert_eq!(
                    read_in(Shape::Profile, &answer.as_bytes()[..cut], piece),
                    Err(()),
                    "cut at {cut}, pieces of {piece}: {:?}",
                    &answer[..cut]
                );
            }
        }
    }

    #[test]
    fn broken_arrays_are_garbage_not_fewer_sessions() {
        for answer in [
            r#"[{"id":"a-1"}] x"#,
            r#"[{"id":"a-1"}]]"#,
            r#"[{"id":"a-1"}],"#,
            r#"[{"id":"a-1"} {"id":"b-1"}]"#,
            r#"[{"id":"a-1"},]"#,
            r#"[,{"id":"a-1"}]"#,
            r#"[{"id":"a-1","t":[1}]"#,
            r#"[{"id":"a-1","t":tru}]"#,
            r#"[{"id":"a-1","t":"x" "y"}]"#,
            r#"[{"id":"a-1"},{"id":"b-1","t":01}]"#,
            r#"[{"id":"a-1"}, tru]"#,
            r#"[{"id":"a-1"}, }]"#,
        ] {
            assert_eq!(
                same_in_every_piece_size(Shape::All, answer),
                Err(()),
                "{answer}"
            );
        }
    }

    #[test]
    fn a_row_that_is_json_but_no_session_is_skipped_not_blinding() {
        let answer = r#"[42, "te]xt", null, [1,{"a":"]"}], true,
            {"title":"no id"}, {"id":""}, {"id":7},
            {"id":"a-1","title":["not","a","string"]},
            {"id":"b-1","title":"t","is_conductor":"yes\nforged line"},
            {"id":"c-1","title":"conductor-ok","group":null,"parent_session_id":null}]"#;
        let (rows, tally) = same_in_every_piece_size(Shape::All, answer).unwrap();
        assert_eq!(
            rows.iter().map(|(s, _)| s.id.as_str()).collect::<Vec<_>>(),
            ["c-1"]
        );
        assert_eq!(tally.rows, 1);
        assert_eq!(tally.skipped, 10);
        assert_eq!(tally.reasons[0], "row 1: not an object but a number");
        assert_eq!(tally.reasons[1], "row 2: not an object but a string");
        assert_eq!(tally.reasons[3], "row 4: not an object but an array");
        assert_eq!(tally.reasons[5], "row 6: no id");
        assert!(tally.reasons[8].starts_with("row 9 (id \"a-1\"): invalid type"));
        assert!(
            tally
                .reasons
                .iter()
                .all(|r| !r.contains('\n') && !r.contains(" at line ")),
            "{:?}",
            tally.reasons
        );
    }

    #[test]
    fn a_row_past_the_limit_is_skipped_and_never_held() {
        let long = "x".repeat(MAX_ROW_BYTES);
        let answer =
            format!(r#"[{{"id":"a-1","title":"{long}"}},{{"id":"b-1","title":"conductor-b"}}]"#);
        for piece in [0, 4096, 65536] {
            let (rows, tally) = read_in(Shape::All, answer.as_bytes(), piece).unwrap();
            assert_eq!(rows.len(), 1, "pieces of {piece}");
            assert_eq!(rows[0].0.id, "b-1");
            assert_eq!(tally.reasons, ["row 1: longer than 1024 KiB, not read"]);
        }
    }

    #[test]
    fn texts_that_mean_no_sessions_and_texts_that_do_not() {
        let empty = Ok((Vec::new(), RowTally::default()));
        for (shape, answer) in [
            (Shape::All, "null\n"),
            (Shape::All, "No profiles found.\n"),
            (Shape::All, "  []  "),
            (Shape::Profile, "null"),
            (Shape::Profile, "No sessions found in profile 'work'.\n"),
        ] {
            assert_eq!(same_in_every_piece_size(shape, answer), empty, "{answer}");
        }
        for (shape, answer) in [
            (Shape::All, ""),
            (Shape::All, "\n \n"),
            (Shape::All, "No sessions found in profile 'work'.\n"),
            (Shape::Profile, "No profiles found.\n"),
            (Shape::All, "Error: failed to list profiles: boom"),
            (
                Shape::All,
                r#"{"code":"NOT_FOUND","error":"x","success":false}"#,
            ),
            (Shape::All, "\"[]\""),
            (Shape::Profile, "nullnull"),
        ] {
            assert_eq!(same_in_every_piece_size(shape, answer), Err(()), "{answer}");
        }
        let long = format!("null{}", " ".repeat(MAX_TEXT_BYTES));
        assert_eq!(read_in(Shape::All, long.as_bytes(), 1000), Err(()));
    }

    #[test]
    fn a_reader_says_when_more_cannot_help() {
        let mut ignore = |_: &Row<'_>| {};
        let mut reader = ListReader::new(Shape::All, &mut ignore);
        assert!(reader.feed(b"[{\"id\":\"a-1\"}"));
        assert!(!reader.feed(b"}"));
        let mut ignore = |_: &Row<'_>| {};
        let mut reader = ListReader::new(Shape::All, &mut ignore);
        let text = format!("  {}", "x".repeat(MAX_TEXT_BYTES + 1));
        assert!(!reader.feed(text.as_bytes()));
        assert_eq!(reader.text().len(), MAX_TEXT_BYTES);
    }

    #[test]
    fn only_the_first_reasons_are_kept_but_all_are_counted() {
        let answer = format!("[{}{{\"id\":\"a-1\"}}]", "1,".repeat(1000));
        let (rows, tally) = read_in(Shape::All, answer.as_bytes(), 100).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(tally.skipped, 1000);
        assert_eq!(tally.reasons.len(), MAX_REASONS);
    }

    #[test]
    fn list_all_edge_outputs() {
        assert_eq!(list_all("null\n").unwrap(), (Vec::new(), Vec::new()));
        assert_eq!(
            list_all("No profiles found.\n").unwrap(),
            (Vec::new(), Vec::new())
        );
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
        assert!(s.1.is_empty());
        let s = s.0;
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
            (Vec::new(), Vec::new())
        );
        let out = r#"[{"id":"x1-1","title":"t","group":"g","profile":"work","status":"starting",
            "channels":["plugin:telegram@claude-plugins-official"],"archived":false}]"#;
        let v = list_profile(out).unwrap().0;
        assert_eq!(v[0].1.status, Some(Status::Unknown));
        assert_eq!(v[0].1.channels.len(), 1);
    }

    #[test]
    fn a_list_row_without_an_id_is_skipped_not_blinding() {
        let out = r#"[{"title":"no id here","group":"conductor"},
            {"id":"","title":"empty id"},
            {"id":"3f9c2a1b-1755891234","title":"conductor-ops","group":"conductor","profile":"default"}]"#;
        let l = list_all(out).unwrap();
        assert_eq!(l.0.len(), 1);
        assert_eq!(l.0[0].id, "3f9c2a1b-1755891234");
        assert_eq!(l.1.len(), 2);
        assert!(l.1[0].starts_with("row 1: no id"), "{:?}", l.1);
        assert!(l.1[1].starts_with("row 2: no id"), "{:?}", l.1);
    }

    #[test]
    fn a_list_row_with_wrong_types_is_skipped_not_blinding() {
        let out = r#"[42, "text", null, [1,2], {"id":7,"title":"numeric id"},
            {"id":"a-1","title":["not","a","string"]},
            {"id":"b-1","title":"t","is_conductor":"yes\nforged line"},
            {"id":"c-1","title":"conductor-ok","group":null,"parent_session_id":null}]"#;
        let l = list_all(out).unwrap();
        assert_eq!(
            l.0.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
            ["c-1"]
        );
        assert_eq!(l.1.len(), 7, "{:?}", l.1);
        assert!(l.1[5].contains("(id \"a-1\")"), "{:?}", l.1);
        assert!(
            l.1.iter()
                .all(|r| !r.contains('\n') && r.chars().count() < 300),
            "{:?}",
            l.1
        );
    }

    #[test]
    fn a_profile_list_row_with_a_bad_status_is_skipped_not_blinding() {
        let out = r#"[{"id":"x-1","title":"t","status":{"oops":1}},
            {"title":"no id","status":"error"},
            {"id":"y-1","title":"conductor-y","status":"error","channels":null,"auth_hold":null}]"#;
        let l = list_profile(out).unwrap();
        assert_eq!(l.0.len(), 1);
        assert_eq!(l.0[0].0.id, "y-1");
        assert_eq!(l.0[0].1.status, Some(Status::Error));
        assert_eq!(l.1.len(), 2);
    }

    #[test]
    fn an_answer_that_is_not_an_array_stays_unreadable() {
        for out in ["garbage", "{\"id\":\"x\"}", "42", "\"[]\"", "[{"] {
            assert!(list_all(out).is_err(), "{out}");
            assert!(list_profile(out).is_err(), "{out}");
        }
        assert_eq!(list_profile("null").unwrap(), (Vec::new(), Vec::new()));
    }
}

#[cfg(test)]
mod props {
    //! Cut into pieces anywhere, an answer (also one with a few bytes
    //! changed) reads exactly as it does whole; whole, it never panics and
    //! what it gives is bounded by what it was given.

    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;
    use crate::fleet::session::{Live, Session};
    use crate::testing::{
        garbage_within, input, json, live_within, lossy, session_row, session_within, CASES,
        MAX_REASON_CHARS,
    };

    /// Every row of an answer, and its tally.
    type Read = Result<(Vec<(Session, Live)>, RowTally), Garbage>;

    fn read_whole(shape: Shape, answer: &str) -> Read {
        let mut rows = Vec::new();
        let tally = read(shape, answer.as_bytes(), 0, &mut |r| {
            rows.push((r.session(), r.live()))
        })?;
        Ok((rows, tally))
    }

    fn within(rows: &[(Session, Live)], tally: &RowTally, n: usize) -> bool {
        rows.len() + tally.reasons.len() <= n
            && tally
                .reasons
                .iter()
                .all(|r| r.chars().count() <= MAX_REASON_CHARS && !r.contains('\n'))
            && rows
                .iter()
                .all(|(s, l)| session_within(s, n) && live_within(l, n))
    }

    /// What reading `answer` cut at `cuts` (offsets, any order, any number)
    /// gave: every row as owned values and the tally, or only that it was
    /// garbage (the message names a byte offset, which may differ).
    fn read_cut(
        shape: Shape,
        answer: &[u8],
        cuts: &[usize],
    ) -> Result<(Vec<(Session, Live)>, RowTally), ()> {
        let mut rows = Vec::new();
        let mut each = |r: &Row<'_>| rows.push((r.session(), r.live()));
        let mut reader = ListReader::new(shape, &mut each);
        let mut at = 0;
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (answer.len() + 1)).collect();
        cuts.sort_unstable();
        for cut in cuts.into_iter().chain([answer.len()]) {
            reader.feed(&answer[at..cut]);
            at = cut;
        }
        let tally = reader.finish().map_err(drop)?;
        Ok((rows, tally))
    }

    /// A list answer as Go indents it, and as the other generators make it.
    fn list_answer() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            input(),
            prop::collection::vec(prop_oneof![6 => session_row(), 1 => json()], 0..8).prop_map(
                |rows| serde_json::to_string_pretty(&Value::Array(rows))
                    .unwrap_or_default()
                    .into_bytes()
            ),
        ]
    }

    /// A list answer with a few bytes changed: a control character, a quote,
    /// a backslash, a bracket, a byte that is not UTF-8, anywhere.
    fn mutated_answer() -> impl Strategy<Value = Vec<u8>> {
        let byte = prop_oneof![
            prop::sample::select(vec![
                b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'\t', 0, 0xff, 0xc3
            ]),
            any::<u8>(),
        ];
        (
            list_answer(),
            prop::collection::vec((any::<usize>(), byte, any::<bool>()), 1..4),
        )
            .prop_map(|(mut bytes, edits)| {
                for (at, b, insert) in edits {
                    let at = at % (bytes.len() + 1);
                    if insert || at == bytes.len() {
                        bytes.insert(at, b);
                    } else {
                        bytes[at] = b;
                    }
                }
                bytes
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(CASES))]

        #[test]
        fn list_all_never_panics_and_is_bounded(bytes in input()) {
            let out = lossy(&bytes);
            match read_whole(Shape::All, &out) {
                Ok((rows, tally)) => prop_assert!(within(&rows, &tally, out.len())),
                Err(g) => prop_assert!(garbage_within(&g)),
            }
        }

        #[test]
        fn profile_list_never_panics_and_is_bounded(bytes in input()) {
            let out = lossy(&bytes);
            match read_whole(Shape::Profile, &out) {
                Ok((rows, tally)) => prop_assert!(within(&rows, &tally, out.len())),
                Err(g) => prop_assert!(garbage_within(&g)),
            }
        }

        #[test]
        fn a_list_reads_the_same_in_any_pieces(
            answer in prop_oneof![3 => list_answer(), 1 => mutated_answer()],
            cuts in prop::collection::vec(any::<usize>(), 0..12),
            piece in 1..96usize,
            profile in any::<bool>(),
        ) {
            let shape = if profile { Shape::Profile } else { Shape::All };
            let whole = read_cut(shape, &answer, &[]);
            prop_assert_eq!(&read_cut(shape, &answer, &cuts), &whole);
            let every: Vec<usize> = (1..answer.len()).step_by(piece).collect();
            prop_assert_eq!(&read_cut(shape, &answer, &every), &whole);
        }
    }
}
