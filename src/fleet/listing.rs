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
mod props;
#[cfg(test)]
mod tests;
