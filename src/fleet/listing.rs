//! Reads a list answer of the agent-deck CLI (`list --all --json`,
//! `-p P list --json`) as it arrives from the pipe, row by row, into typed
//! rows that borrow from the bytes at hand.
//!
//! [`ListReader`] is fed the answer in pieces of any size. Each element of
//! the top-level array is read straight from the piece that holds it by
//! [`read_row`], which keeps only the fields the daemon uses; an element cut
//! by the end of a piece is carried over in one buffer until [`ElementScan`]
//! sees it close, then read whole. No `serde_json::Value` is built and the
//! answer is never held whole: memory is one row, bounded by
//! [`MAX_ROW_BYTES`], plus what the caller keeps of each row.
//!
//! What counts as what, whatever the pieces:
//! - a row that is valid JSON but not a usable session (not an object, no
//!   `id`, a used field of the wrong type) is skipped and counted, with a
//!   short reason; so is a row longer than [`MAX_ROW_BYTES`], unread;
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
use serde::Deserialize;

use crate::fleet::parse::{self, clip_reason, Garbage};
pub use crate::fleet::row::Row;
use crate::fleet::row::{read_row, RowError, Text};
use crate::fleet::split::{ElementScan, ScanStep};

/// A row longer than this is skipped unread; a real one is under 4 KiB.
pub const MAX_ROW_BYTES: usize = 1024 * 1024;
/// A non-array answer longer than this is garbage; the real ones (`null`,
/// "No sessions found in profile '…'.", an error object) are one line.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;
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

/// Just the id, to name a skipped row.
#[derive(Deserialize)]
struct IdOnly<'a> {
    #[serde(borrow)]
    id: Option<Text<'a>>,
}

/// Where the reader is in the answer, outside a row.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// Nothing but whitespace so far.
    Start,
    /// The answer is not an array; it is kept in `text`.
    Text,
    /// Right after `[`.
    First,
    /// Right after a `,`: a row must follow.
    Next,
    /// Right after a row: `,` or `]` must follow.
    After,
    /// After the closing `]`: only whitespace may follow.
    Done,
    Garbled(String),
}

/// A row cut by the end of a piece, carried over to the next ones.
struct Pending {
    scan: ElementScan,
    /// Its bytes so far; emptied once it is longer than [`MAX_ROW_BYTES`].
    bytes: Vec<u8>,
    len: usize,
}

impl Pending {
    fn add(&mut self, piece: &[u8]) {
        self.len = self.len.saturating_add(piece.len());
        if self.len > MAX_ROW_BYTES {
            self.bytes = Vec::new();
        } else {
            self.bytes.extend_from_slice(piece);
        }
    }
}

/// Reads one list answer fed in pieces; see the module docs.
pub struct ListReader<'f> {
    shape: Shape,
    each: &'f mut dyn FnMut(&Row<'_>),
    phase: Phase,
    pending: Option<Pending>,
    /// A non-array answer, up to [`MAX_TEXT_BYTES`].
    text: Vec<u8>,
    text_overflow: bool,
    /// Bytes fed before the current piece.
    offset: u64,
    tally: RowTally,
}

impl<'f> ListReader<'f> {
    /// A reader that hands each readable row to `each`, in list order.
    pub fn new(shape: Shape, each: &'f mut dyn FnMut(&Row<'_>)) -> ListReader<'f> {
        ListReader {
            shape,
            each,
            phase: Phase::Start,
            pending: None,
            text: Vec::new(),
            text_overflow: false,
            offset: 0,
            tally: RowTally::default(),
        }
    }

    /// Reads the next piece of the answer; false once nothing that follows
    /// can change the outcome (the answer is already garbage).
    pub fn feed(&mut self, piece: &[u8]) -> bool {
        let mut at = 0;
        while at < piece.len() {
            match self.step(piece, at) {
                Ok(next) => at = next,
                Err(why) => {
                    let byte = self.offset + at as u64;
                    self.phase = Phase::Garbled(format!("{why} (near byte {byte})"));
                    self.pending = None;
                    break;
                }
            }
        }
        self.offset += piece.len() as u64;
        !matches!(self.phase, Phase::Garbled(_)) && !self.text_overflow
    }

    /// The answer as far as it is not an array (empty for an array): what a
    /// failed call printed instead of a list.
    pub fn text(&self) -> &[u8] {
        &self.text
    }

    /// The verdict once the answer is complete.
    pub fn finish(self) -> Result<RowTally, Garbage> {
        if self.pending.is_some() {
            return Err(Garbage(format!(
                "the answer ends inside row {} after {} bytes",
                self.tally.rows + self.tally.skipped + 1,
                self.offset
            )));
        }
        match self.phase {
            Phase::Done => Ok(self.tally),
            Phase::Garbled(why) => Err(Garbage(format!("not a readable JSON array: {why}"))),
            Phase::Start | Phase::Text => self.none_or_garbage(),
            Phase::First | Phase::Next | Phase::After => Err(Garbage(format!(
                "the answer ends inside the list after {} bytes",
                self.offset
            ))),
        }
    }

    /// A non-array answer: one of the "no sessions" forms, or garbage.
    fn none_or_garbage(self) -> Result<RowTally, Garbage> {
        if self.text_overflow {
            return Err(Garbage(format!(
                "expected a JSON array, got more than {} KiB of something else starting {}",
                MAX_TEXT_BYTES / 1024,
                preview(&self.text)
            )));
        }
        let text = String::from_utf8_lossy(&self.text);
        let text = text.trim();
        let none = text == "null"
            || match self.shape {
                Shape::All => text == "No profiles found.",
                Shape::Profile => text.starts_with("No sessions found in profile"),
            };
        if none {
            return Ok(RowTally::default());
        }
        if serde_json::from_str::<IgnoredAny>(text).is_ok() {
            Err(Garbage(format!(
                "expected a JSON array, got {}",
                preview(&self.text)
            )))
        } else {
            Err(Garbage(format!("not JSON: {}", preview(&self.text))))
        }
    }

    /// Reads from `piece[at..]` up to the next point of interest; where to
    /// go on, or why the answer is garbage.
    fn step(&mut self, piece: &[u8], at: usize) -> Result<usize, String> {
        if let Some(pending) = self.pending.take() {
            return self.go_on(pending, piece, at);
        }
        match self.phase {
            Phase::Text => {
                self.keep_text(&piece[at..]);
                return Ok(piece.len());
            }
            Phase::Garbled(_) => return Ok(piece.len()),
            _ => {}
        }
        let Some(skip) = piece[at..].iter().position(|b| !is_space(*b)) else {
            return Ok(piece.len());
        };
        let at = at + skip;
        let b = piece[at];
        match self.phase {
            Phase::Start if b == b'[' => {
                self.phase = Phase::First;
                Ok(at + 1)
            }
            Phase::Start => {
                self.phase = Phase::Text;
                self.keep_text(&piece[at..]);
                Ok(piece.len())
            }
            Phase::First if b == b']' => {
                self.phase = Phase::Done;
                Ok(at + 1)
            }
            Phase::First | Phase::Next => self.row(piece, at),
            Phase::After if b == b',' => {
                self.phase = Phase::Next;
                Ok(at + 1)
            }
            Phase::After if b == b']' => {
                self.phase = Phase::Done;
                Ok(at + 1)
            }
            Phase::After => Err("expected `,` or `]` after a row".into()),
            Phase::Done => Err("something follows the list".into()),
            Phase::Text | Phase::Garbled(_) => Ok(piece.len()),
        }
    }

    fn keep_text(&mut self, bytes: &[u8]) {
        let room = MAX_TEXT_BYTES.saturating_sub(self.text.len());
        if bytes.len() > room {
            self.text_overflow = true;
        }
        self.text.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// A row starts at `piece[at]`. An object is read straight from the
    /// piece; anything else, and an object cut by the piece's end or not
    /// readable as a row, goes through [`ElementScan`] to find its end.
    fn row(&mut self, piece: &[u8], at: usize) -> Result<usize, String> {
        self.phase = Phase::After;
        let rest = &piece[at..];
        let mut known = None;
        if rest[0] == b'{' {
            match read_row(rest, self.shape == Shape::Profile) {
                Ok((_, len)) if len > MAX_ROW_BYTES => {
                    self.too_long();
                    return Ok(at + len);
                }
                Ok((row, len)) => {
                    self.use_row(row);
                    return Ok(at + len);
                }
                // Said for sure only if the row ends in this piece (below).
                Err(e) => known = Some(e),
            }
        }
        let mut scan = ElementScan::new();
        match scan.feed(rest) {
            ScanStep::Ended(len) => {
                self.whole(&rest[..len], known)?;
                Ok(at + len)
            }
            ScanStep::More => {
                // A complaint about a row cut by the piece's end may be about
                // the cut (`-` of `-2`, `1` of `12`): read it again whole.
                let mut pending = Pending {
                    scan,
                    bytes: Vec::new(),
                    len: 0,
                };
                pending.add(rest);
                self.pending = Some(pending);
                Ok(piece.len())
            }
            ScanStep::Broken(why) => Err(why.into()),
        }
    }

    /// Goes on with a row carried over from earlier pieces.
    fn go_on(&mut self, mut pending: Pending, piece: &[u8], at: usize) -> Result<usize, String> {
        match pending.scan.feed(&piece[at..]) {
            ScanStep::Ended(len) => {
                pending.add(&piece[at..at + len]);
                if pending.len > MAX_ROW_BYTES {
                    self.too_long();
                } else {
                    self.whole(&pending.bytes, None)?;
                }
                Ok(at + len)
            }
            ScanStep::More => {
                pending.add(&piece[at..]);
                self.pending = Some(pending);
                Ok(piece.len())
            }
            ScanStep::Broken(why) => Err(why.into()),
        }
    }

    /// A whole row whose end [`ElementScan`] found: used, skipped, or the
    /// reason the answer is garbage (it is not valid JSON).
    fn whole(&mut self, bytes: &[u8], known: Option<RowError>) -> Result<(), String> {
        if bytes.len() > MAX_ROW_BYTES {
            self.too_long();
            return Ok(());
        }
        if bytes.first() != Some(&b'{') {
            valid_json(bytes)?;
            self.skip(None, format!("not an object but {}", kind(bytes)));
            return Ok(());
        }
        let error = match known {
            Some(e) => e,
            None => match read_row(bytes, self.shape == Shape::Profile) {
                Ok((row, _)) => {
                    self.use_row(row);
                    return Ok(());
                }
                Err(e) => e,
            },
        };
        let why = match error {
            RowError::Syntax(why) => return Err(why),
            RowError::Data(why) => why,
        };
        valid_json(bytes)?;
        let id = serde_json::from_slice::<IdOnly>(bytes)
            .ok()
            .and_then(|r| r.id)
            .map(|id| id.string())
            .filter(|id| !id.is_empty());
        self.skip(id.as_deref(), why);
        Ok(())
    }

    fn use_row(&mut self, row: Row<'_>) {
        self.tally.rows += 1;
        (self.each)(&row);
    }

    fn too_long(&mut self) {
        self.skip(
            None,
            format!("longer than {} KiB, not read", MAX_ROW_BYTES / 1024),
        );
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

/// JSON's whitespace (not Unicode's).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

fn valid_json(bytes: &[u8]) -> Result<(), String> {
    serde_json::from_slice::<IgnoredAny>(bytes)
        .map(drop)
        .map_err(|e| position_free(&e))
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

/// A decoder's complaint without its position (which depends on where the
/// row started, not on what is wrong with it).
fn position_free(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
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
        let mut ignore = |_: &Row<'_>| {};
        let mut reader = ListReader::new(Shape::All, &mut ignore);
        for piece in answer.as_bytes()[..MAX_ROW_BYTES + 20].chunks(4096) {
            reader.feed(piece);
        }
        let held = reader.pending.as_ref().map_or(0, |p| p.bytes.capacity());
        assert!(held <= 2 * MAX_ROW_BYTES, "{held} bytes held");
        assert_eq!(reader.pending.as_ref().map(|p| p.bytes.len()), Some(0));
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
}
