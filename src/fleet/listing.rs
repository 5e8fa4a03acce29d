//! Reads a list answer of the agent-deck CLI (`list --all --json`,
//! `-p P list --json`) as it arrives from the pipe, row by row, into typed
//! rows that borrow from the bytes at hand.
//!
//! [`ListReader`] is fed the answer in pieces of any size. Each element of
//! the top-level array is read by serde where it lies in the piece
//! (`wire::element`, which also says why a row is no session); only an
//! element cut by the end of a piece is copied, up to its end, which
//! `ElementEnd` finds by following brackets and strings, and then read. No
//! `serde_json::Value` is built and the answer is never held whole: memory
//! is one piece and one row, bounded by [`MAX_ROW_BYTES`], plus what the
//! caller keeps of each row.
//!
//! What counts as what, whatever the pieces:
//! - a row that is valid JSON but not a usable session (not an object, no
//!   `id`, a used field of the wrong type or not UTF-8) is skipped and
//!   counted, with a short reason; so is a row longer than
//!   [`MAX_ROW_BYTES`], unread;
//! - an array that is not valid JSON (bad syntax inside a row, brackets that
//!   do not match, a missing comma, anything after the closing `]`, an answer
//!   that ends inside the array) is `Garbage`: unknown, never "no sessions";
//! - an answer that is not an array is kept up to [`MAX_TEXT_BYTES`] and read
//!   as a whole: `null` and the CLI's "none" sentences are an empty list,
//!   anything else (a JSON error object, text, longer text) is `Garbage`.
//!
//! Rows reach the caller before the end of the answer is known: a caller
//! keeps them only once [`ListReader::finish`] said the answer was readable.

use serde::de::IgnoredAny;

use crate::fleet::parse::{self, Garbage};
pub use crate::fleet::wire::Row;
use crate::fleet::wire::{self, is_delimited, Element};
use crate::sys::process;
use crate::text;

/// A row longer than this is skipped unread, and never held.
pub const MAX_ROW_BYTES: usize = 1024 * 1024;
/// An answer that is not an array is kept up to this length.
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
    /// `MAX_REASONS` (32) of them, in list order.
    pub reasons: Vec<String>,
}

/// Where the reader is in the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Before its first byte that is not white space.
    Start,
    /// In an answer that is not an array.
    Text,
    /// After the `[`: a row or the `]` of an empty list.
    First,
    /// After a `,`: a row.
    Row,
    /// After a row: `,` or `]`.
    Comma,
    /// Inside a row begun in an earlier piece.
    Cut,
    /// After the closing `]`.
    Done,
}

/// Reads one list answer fed in pieces; see the module docs.
pub struct ListReader<'f> {
    shape: Shape,
    each: &'f mut dyn FnMut(&Row<'_>),
    tally: RowTally,
    at: At,
    /// The row cut by the end of a piece, as far as it came (nothing once
    /// it is longer than [`MAX_ROW_BYTES`]), its length, and its end.
    cut: Vec<u8>,
    cut_len: usize,
    end: ElementEnd,
    /// Bytes fed before the current piece.
    offset: u64,
    text: Vec<u8>,
    text_overflow: bool,
    garbled: Option<String>,
}

impl<'f> ListReader<'f> {
    /// A reader that hands each readable row to `each`, in list order.
    pub fn new(shape: Shape, each: &'f mut dyn FnMut(&Row<'_>)) -> ListReader<'f> {
        ListReader {
            shape,
            each,
            tally: RowTally::default(),
            at: At::Start,
            cut: Vec::new(),
            cut_len: 0,
            end: ElementEnd::default(),
            offset: 0,
            text: Vec::new(),
            text_overflow: false,
            garbled: None,
        }
    }

    /// Reads the next piece of the answer; false once nothing that follows
    /// can change the outcome (the answer is already garbage).
    pub fn feed(&mut self, piece: &[u8]) -> bool {
        if self.garbled.is_none() {
            if let Err((at, why)) = self.frame(piece) {
                let byte = self.offset + at as u64;
                self.garbled = Some(format!("{why} (near byte {byte})"));
            }
            self.offset += piece.len() as u64;
        }
        self.garbled.is_none() && !self.text_overflow
    }

    /// The answer as far as it is not an array (empty for an array): what a
    /// failed call printed instead of a list.
    pub fn text(&self) -> &[u8] {
        &self.text
    }

    /// The verdict once the answer is complete.
    pub fn finish(self) -> Result<RowTally, Garbage> {
        let broken = |why: String| Err(Garbage(format!("not a readable JSON array: {why}")));
        if let Some(why) = self.garbled {
            return broken(why);
        }
        match self.at {
            At::Done => Ok(self.tally),
            At::Start | At::Text => none_or_garbage(self.shape, &self.text, self.text_overflow),
            At::Cut | At::Comma => broken(format!(
                "the answer ends inside row {} after {} bytes",
                self.tally.rows + self.tally.skipped + usize::from(self.at == At::Cut),
                self.offset
            )),
            At::First | At::Row => broken(format!(
                "the answer ends inside the list after {} bytes",
                self.offset
            )),
        }
    }

    /// Reads one piece: the rows it completes, or where and why the answer
    /// is not a JSON array.
    fn frame(&mut self, piece: &[u8]) -> Result<(), (usize, String)> {
        let mut i = 0;
        loop {
            match self.at {
                At::Text => {
                    self.text_overflow |=
                        process::keep(&mut self.text, MAX_TEXT_BYTES, &piece[i..]);
                    return Ok(());
                }
                At::Cut => {
                    let rest = &piece[i..];
                    let found = self.end.find(rest);
                    self.carry(&rest[..found.unwrap_or(rest.len())]);
                    let Some(n) = found else {
                        return Ok(());
                    };
                    i += n;
                    self.read_cut().map_err(|why| (i, why))?;
                    self.at = At::Comma;
                    continue;
                }
                _ => {}
            }
            let Some(n) = piece[i..].iter().position(|b| !is_space(*b)) else {
                return Ok(());
            };
            i += n;
            let (next, len) = match (self.at, piece[i]) {
                (At::Start, b'[') => (At::First, 1),
                (At::Start, _) => (At::Text, 0),
                (At::Comma, b',') => (At::Row, 1),
                (At::Comma | At::First, b']') => (At::Done, 1),
                (At::Comma, _) => return Err((i, "expected `,` or `]` after a row".into())),
                (At::First | At::Row, b',' | b']') => return Err((i, "a row is missing".into())),
                (At::First | At::Row, _) => match self.row_at(&piece[i..], false) {
                    Ok(Some(len)) => (At::Comma, len),
                    // Cut by the end of the piece, or broken: found whole first.
                    _ => {
                        self.end = ElementEnd::default();
                        (At::Cut, 0)
                    }
                },
                _ => return Err((i, "something follows the list".into())),
            };
            self.at = next;
            i += len;
        }
    }

    /// Reads the element at the start of `bytes` ([`wire::element`]): its
    /// length once it was used or skipped, `None` while it is open.
    fn row_at(&mut self, bytes: &[u8], whole: bool) -> Result<Option<usize>, String> {
        let bytes = &bytes[..bytes.len().min(MAX_ROW_BYTES)];
        let len = match wire::element(bytes, self.shape == Shape::Profile, whole) {
            Element::Row(row, len) => {
                self.tally.rows += 1;
                (self.each)(&row);
                len
            }
            Element::Skip(id, why, len) => {
                self.skip(id.as_deref(), why);
                len
            }
            Element::Open => return Ok(None),
            Element::Broken(why) => return Err(why),
        };
        Ok(Some(len))
    }

    /// Reads the cut row once its end arrived (skipped unread when it is too
    /// long), and makes room for the next.
    fn read_cut(&mut self) -> Result<(), String> {
        let row = std::mem::take(&mut self.cut);
        let read = if self.cut_len > MAX_ROW_BYTES {
            let why = format!("longer than {} KiB, not read", MAX_ROW_BYTES / 1024);
            self.skip(None, why);
            Ok(())
        } else {
            match self.row_at(&row, true)? {
                Some(len) if len == row.len() => Ok(()),
                _ => Err("expected `,` or `]` after a row".into()),
            }
        };
        self.cut = row;
        self.cut.clear();
        if self.cut.capacity() > MAX_ROW_BYTES {
            self.cut = Vec::new();
        }
        self.cut_len = 0;
        read
    }

    /// Keeps the next part of the cut row, unless it is too long by now.
    fn carry(&mut self, part: &[u8]) {
        self.cut_len = self.cut_len.saturating_add(part.len());
        if self.cut_len > MAX_ROW_BYTES {
            self.cut = Vec::new();
        } else {
            self.cut.extend_from_slice(part);
        }
    }

    fn skip(&mut self, id: Option<&str>, why: String) {
        self.tally.skipped += 1;
        if self.tally.reasons.len() >= MAX_REASONS {
            return;
        }
        let n = self.tally.rows + self.tally.skipped;
        let named = match id {
            Some(id) => format!(" (id {})", text::clip_reason(&format!("{id:?}"))),
            None => String::new(),
        };
        self.tally
            .reasons
            .push(format!("row {n}{named}: {}", text::clip_reason(&why)));
    }
}

/// Where an element of the array ends, found by following its brackets and
/// strings piece by piece; whether they match is for serde to say.
#[derive(Debug, Default)]
struct ElementEnd {
    started: bool,
    /// A number or a literal: it ends before the first byte that cannot
    /// follow one.
    scalar: bool,
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl ElementEnd {
    /// How many of `bytes` belong to the element, if it ends in them.
    fn find(&mut self, bytes: &[u8]) -> Option<usize> {
        for (i, &b) in bytes.iter().enumerate() {
            if !self.started {
                self.started = true;
                self.scalar = !is_delimited(b);
                if self.scalar {
                    continue;
                }
            }
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                    if self.depth == 0 {
                        return Some(i + 1);
                    }
                }
            } else if self.scalar {
                if is_space(b) || b",]}\"[{:".contains(&b) {
                    return Some(i);
                }
            } else {
                match b {
                    b'"' => self.in_string = true,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => {
                        self.depth = self.depth.saturating_sub(1);
                        if self.depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
            }
        }
        None
    }
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
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

/// A short, single-line look at unexpected output for a log line.
fn preview(bytes: &[u8]) -> String {
    parse::preview(&String::from_utf8_lossy(&bytes[..bytes.len().min(256)]))
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
