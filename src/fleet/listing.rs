//! Reads a list answer of the agent-deck CLI (`list --all --json`,
//! `-p P list --json`), held whole, into typed rows that borrow from it.
//!
//! The caller reads the answer up to [`MAX_ANSWER_BYTES`] (past it the call
//! fails), so memory is bounded by that ceiling. serde_json splits the
//! array into its elements, unread (`RawValue`: 16 bytes each), and each is
//! then read into a row on its own ([`wire::row`]), which also says why a
//! row is no session. No `serde_json::Value` is built.
//!
//! What counts as what:
//! - a row that is valid JSON but not a usable session (not an object, no
//!   `id`, a used field of the wrong type or not UTF-8) is skipped and
//!   counted, with a short reason; so is a row longer than
//!   [`MAX_ROW_BYTES`], unread;
//! - an array that is not valid JSON (bad syntax inside a row, a missing
//!   comma, anything after the closing `]`, an answer that ends inside the
//!   array) is `Garbage`, in serde_json's words: unknown, never "no
//!   sessions";
//! - an answer that is not an array is read as text up to
//!   [`MAX_TEXT_BYTES`]: `null` and the CLI's "none" sentences are an empty
//!   list, anything else (a JSON error object, text, longer text) is
//!   `Garbage`.
//!
//! Rows reach the caller only once the answer is known to be an array.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde_json::value::RawValue;

use crate::fleet::parse::{self, Garbage};
use crate::fleet::wire;
pub use crate::fleet::wire::Row;
use crate::text;

/// A list answer longer than this is not read: the call is killed. About
/// 100,000 sessions of `-p P list`; real fleets are dozens.
pub const MAX_ANSWER_BYTES: usize = 32 * 1024 * 1024;
/// A row longer than this is skipped unread.
pub const MAX_ROW_BYTES: usize = 1024 * 1024;
/// An answer that is not an array is read up to this length.
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

impl RowTally {
    fn skip(&mut self, id: Option<&str>, why: &str) {
        self.skipped += 1;
        if self.reasons.len() >= MAX_REASONS {
            return;
        }
        let n = self.rows + self.skipped;
        let named = match id {
            Some(id) => format!(" (id {})", text::clip_reason(&format!("{id:?}"))),
            None => String::new(),
        };
        let why = text::clip_reason(why);
        self.reasons.push(format!("row {n}{named}: {why}"));
    }
}

/// Reads a whole list answer, handing each readable row to `each`, in list
/// order; see the module docs.
pub fn read(
    shape: Shape,
    answer: &[u8],
    each: &mut dyn FnMut(&Row<'_>),
) -> Result<RowTally, Garbage> {
    let rest = after_space(answer);
    if rest.first() != Some(&b'[') {
        return none_or_garbage(shape, rest);
    }
    let text = as_text(answer);
    let elements: Vec<&RawValue> = serde_json::from_str(&text)
        .map_err(|e| Garbage(format!("not a readable JSON array: {e}")))?;
    let mut tally = RowTally::default();
    for element in elements {
        // The element is a slice of `text`, whose bytes are the answer's.
        let raw = element.get();
        let at = (raw.as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
        let bytes = answer.get(at..at + raw.len()).unwrap_or(raw.as_bytes());
        let read = if bytes.len() > MAX_ROW_BYTES {
            let why = format!("longer than {} KiB, not read", MAX_ROW_BYTES / 1024);
            Err((None, why))
        } else {
            wire::row(raw, bytes, shape == Shape::Profile)
        };
        match read {
            Ok(row) => {
                tally.rows += 1;
                each(&row);
            }
            Err((id, why)) => tally.skip(id.as_deref(), &why),
        }
    }
    Ok(tally)
}

/// What a failed list call printed instead of a list, for its error
/// message: the answer from its first byte that is not white space, up to
/// [`MAX_TEXT_BYTES`]; nothing when it is an array.
pub fn text(answer: &[u8]) -> &[u8] {
    let rest = after_space(answer);
    if rest.first() == Some(&b'[') {
        return &[];
    }
    &rest[..rest.len().min(MAX_TEXT_BYTES)]
}

fn after_space(answer: &[u8]) -> &[u8] {
    let start = answer
        .iter()
        .position(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'));
    &answer[start.unwrap_or(answer.len())..]
}

/// The answer as text of the same length, for serde_json to find its
/// elements in: a byte that is not UTF-8 becomes `?`, the same to the JSON
/// syntax (a character inside a string, an error outside one). Each row is
/// then read from the answer's own bytes.
fn as_text(answer: &[u8]) -> Cow<'_, str> {
    let mut bytes = match std::str::from_utf8(answer) {
        Ok(text) => return Cow::Borrowed(text),
        Err(_) => answer.to_vec(),
    };
    let mut at = 0;
    while let Err(e) = std::str::from_utf8(&bytes[at..]) {
        let bad = at + e.valid_up_to();
        let end = e.error_len().map_or(bytes.len(), |n| bad + n);
        bytes[bad..end].fill(b'?');
        at = end;
    }
    Cow::Owned(String::from_utf8(bytes).unwrap_or_default())
}

/// A non-array answer: one of the "no sessions" forms, or garbage.
fn none_or_garbage(shape: Shape, bytes: &[u8]) -> Result<RowTally, Garbage> {
    if bytes.len() > MAX_TEXT_BYTES {
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

/// A short, single-line look at unexpected output for a log line.
fn preview(bytes: &[u8]) -> String {
    parse::preview(&String::from_utf8_lossy(&bytes[..bytes.len().min(256)]))
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
