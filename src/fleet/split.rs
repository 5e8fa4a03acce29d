//! Frames a list answer as it arrives from the pipe, in pieces of any size:
//! the bytes of each element of the top-level JSON array, one at a time, or
//! the answer's text when it is no array.
//!
//! [`Splitter`] tracks strings, escapes and nesting depth, and checks the
//! array's own punctuation (`[`, `,`, `]`, nothing after); it does not check
//! that an element is valid JSON, which is the deserializer's job once the
//! element is whole. An element that ends inside the piece it started in is
//! handed over from that piece; one cut by a piece's end is carried over in
//! one buffer, bounded by [`MAX_ROW_BYTES`] (a longer one is dropped and
//! handed over as [`Element::TooLong`]). A non-array answer is kept up to
//! [`MAX_TEXT_BYTES`]. Pure byte logic: no I/O, no knowledge of rows.

/// A row longer than this is skipped unread; a real one is under 4 KiB.
pub const MAX_ROW_BYTES: usize = 1024 * 1024;
/// A non-array answer longer than this is garbage; the real ones (`null`,
/// "No sessions found in profile '…'.", an error object) are one line.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;

/// One element of the array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Element<'a> {
    /// Its bytes, without the whitespace around them.
    Whole(&'a [u8]),
    /// Longer than [`MAX_ROW_BYTES`]: not kept.
    TooLong,
}

/// How the answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End<'a> {
    /// The array closed, and nothing but whitespace followed.
    Array,
    /// No array: its text, and whether there was more than that.
    Text(&'a [u8], bool),
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Phase {
    /// Nothing but whitespace so far.
    #[default]
    Start,
    /// The answer is not an array; it is kept in `text`.
    Text,
    /// Inside the array.
    Array,
    /// After the closing `]`.
    Done,
}

/// The framing state of one answer; see the module docs.
#[derive(Default)]
pub(crate) struct Splitter {
    phase: Phase,
    in_string: bool,
    escaped: bool,
    /// Open brackets inside the current element.
    depth: usize,
    /// The current element's brackets just closed: `,` or `]` must follow.
    after: bool,
    /// The current element's bytes from earlier pieces.
    carried: Vec<u8>,
    /// Its length so far, kept or not.
    len: usize,
    /// A `,` was read since the `[`.
    comma: bool,
    /// Elements handed over.
    elements: usize,
    /// Bytes fed before the current piece.
    offset: u64,
    text: Vec<u8>,
    text_overflow: bool,
}

impl Splitter {
    /// Reads the next piece, handing each element that closes in it to
    /// `each`; why the answer is no JSON array, if this piece tells, or what
    /// `each` said.
    pub(crate) fn feed(
        &mut self,
        piece: &[u8],
        each: &mut dyn FnMut(Element<'_>) -> Result<(), String>,
    ) -> Result<(), String> {
        let fed = self.frame(piece, each).map_err(|(at, why)| {
            let byte = self.offset + at as u64;
            format!("{why} (near byte {byte})")
        });
        self.offset += piece.len() as u64;
        fed
    }

    /// Whether the text of a non-array answer ran past [`MAX_TEXT_BYTES`].
    pub(crate) fn overflowed(&self) -> bool {
        self.text_overflow
    }

    /// The answer as far as it is not an array (empty for an array).
    pub(crate) fn text(&self) -> &[u8] {
        &self.text
    }

    /// How the answer ended, or why it is cut short.
    pub(crate) fn end(&self) -> Result<End<'_>, String> {
        match self.phase {
            Phase::Done => Ok(End::Array),
            Phase::Start | Phase::Text => Ok(End::Text(&self.text, self.text_overflow)),
            Phase::Array if self.len > 0 => Err(format!(
                "the answer ends inside row {} after {} bytes",
                self.elements + 1,
                self.offset
            )),
            Phase::Array => Err(format!(
                "the answer ends inside the list after {} bytes",
                self.offset
            )),
        }
    }

    fn frame(
        &mut self,
        piece: &[u8],
        each: &mut dyn FnMut(Element<'_>) -> Result<(), String>,
    ) -> Result<(), (usize, String)> {
        let mut i = 0;
        // Where the current element's bytes in this piece start.
        let mut start = 0;
        while i < piece.len() {
            match self.phase {
                Phase::Text => {
                    self.keep_text(&piece[i..]);
                    return Ok(());
                }
                Phase::Start | Phase::Done => {
                    let Some(n) = piece[i..].iter().position(|b| !is_space(*b)) else {
                        return Ok(());
                    };
                    i += n;
                    if self.phase == Phase::Done {
                        return Err((i, "something follows the list".into()));
                    }
                    if piece[i] == b'[' {
                        self.phase = Phase::Array;
                        i += 1;
                        start = i;
                    } else {
                        self.phase = Phase::Text;
                    }
                    continue;
                }
                Phase::Array => {}
            }
            if self.in_string {
                i += self.string(&piece[i..]);
                continue;
            }
            if self.after {
                let Some(n) = piece[i..].iter().position(|b| !is_space(*b)) else {
                    break;
                };
                i += n;
                if !matches!(piece[i], b',' | b']') {
                    return Err((i, "expected `,` or `]` after a row".into()));
                }
                self.after = false;
            }
            // The next byte that matters outside a string.
            let Some(n) = piece[i..]
                .iter()
                .position(|b| matches!(b, b'"' | b'{' | b'[' | b'}' | b']' | b','))
            else {
                break;
            };
            i += n;
            match piece[i] {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' if self.depth > 0 => {
                    self.depth -= 1;
                    self.after = self.depth == 0;
                }
                b'}' => return Err((i, "a bracket closes that was never opened".into())),
                b',' | b']' if self.depth == 0 => {
                    let closing = piece[i] == b']';
                    self.close(&piece[start..i], closing, each)
                        .map_err(|why| (i, why))?;
                    start = i + 1;
                }
                _ => {}
            }
            i += 1;
        }
        if self.phase == Phase::Array {
            self.carry(&piece[start..]);
        }
        Ok(())
    }

    /// Bytes up to and including the closing quote of the open string, or
    /// the whole piece when it ends inside it.
    fn string(&mut self, piece: &[u8]) -> usize {
        let mut i = 0;
        if self.escaped {
            self.escaped = false;
            i = 1;
        }
        while let Some(n) = piece
            .get(i..)
            .and_then(|p| p.iter().position(|b| matches!(b, b'"' | b'\\')))
        {
            i += n;
            if piece[i] == b'"' {
                self.in_string = false;
                return i + 1;
            }
            // A backslash: the next byte is escaped, whatever it is.
            if i + 1 >= piece.len() {
                self.escaped = true;
                return piece.len();
            }
            i += 2;
        }
        piece.len()
    }

    /// The element ends before a `,` or the closing `]`: hands it over.
    fn close(
        &mut self,
        tail: &[u8],
        closing: bool,
        each: &mut dyn FnMut(Element<'_>) -> Result<(), String>,
    ) -> Result<(), String> {
        self.carry_len(tail);
        let empty = self.len == 0;
        let handed = if empty {
            // Only `[]` may close with no row before the `]`.
            if closing && !self.comma && self.elements == 0 {
                Ok(())
            } else {
                Err("a row is missing".into())
            }
        } else if self.len > MAX_ROW_BYTES {
            each(Element::TooLong)
        } else if self.carried.is_empty() {
            each(Element::Whole(trim(tail)))
        } else {
            self.carried.extend_from_slice(tail);
            let handed = each(Element::Whole(trim(&self.carried)));
            self.carried.clear();
            handed
        };
        if !empty {
            self.elements += 1;
        }
        self.len = 0;
        if self.carried.capacity() > MAX_ROW_BYTES {
            self.carried = Vec::new();
        }
        if closing {
            self.phase = Phase::Done;
        } else {
            self.comma = true;
        }
        handed
    }

    /// Counts the bytes of the current element from its first non-blank
    /// one; what of `bytes` belongs to it.
    fn carry_len<'b>(&mut self, bytes: &'b [u8]) -> &'b [u8] {
        let from = if self.len == 0 {
            bytes
                .iter()
                .position(|b| !is_space(*b))
                .unwrap_or(bytes.len())
        } else {
            0
        };
        self.len = self.len.saturating_add(bytes.len() - from);
        &bytes[from..]
    }

    /// Keeps the current element's bytes at the end of a piece.
    fn carry(&mut self, bytes: &[u8]) {
        let mine = self.carry_len(bytes);
        if self.len > MAX_ROW_BYTES {
            self.carried = Vec::new();
        } else {
            self.carried.extend_from_slice(mine);
        }
    }

    fn keep_text(&mut self, bytes: &[u8]) {
        let room = MAX_TEXT_BYTES.saturating_sub(self.text.len());
        if bytes.len() > room {
            self.text_overflow = true;
        }
        self.text.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

/// JSON's whitespace (not Unicode's).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !is_space(*b))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !is_space(*b))
        .map_or(start, |e| e + 1);
    &bytes[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The elements of `text` fed in pieces of `size` bytes (`None` for one
    /// too long), and how it ended.
    fn split(text: &[u8], size: usize) -> (Vec<Option<Vec<u8>>>, Result<bool, String>) {
        let mut s = Splitter::default();
        let mut got = Vec::new();
        for piece in text.chunks(size.max(1)) {
            let fed = s.feed(piece, &mut |e| {
                got.push(match e {
                    Element::Whole(b) => Some(b.to_vec()),
                    Element::TooLong => None,
                });
                Ok(())
            });
            if let Err(why) = fed {
                return (got, Err(why));
            }
        }
        let end = s.end().map(|e| e == End::Array);
        (got, end)
    }

    fn elements(text: &str) -> Vec<String> {
        let whole = split(text.as_bytes(), text.len());
        for size in 1..text.len() {
            assert_eq!(
                split(text.as_bytes(), size),
                whole,
                "{text:?} in pieces of {size}"
            );
        }
        assert_eq!(whole.1, Ok(true), "{text:?}");
        let each = whole.0.into_iter().flatten();
        each.map(|e| String::from_utf8_lossy(&e).into_owned())
            .collect()
    }

    #[test]
    fn brackets_commas_and_escaped_quotes_inside_strings_do_not_count() {
        let row = r#"{"title":"a ] b, c } \" d [ {","path":"\\","e":"\\\"","n":{"x":[1,{"y":2}]}}"#;
        assert_eq!(elements(&format!(" [ {row} ,\n{row}]\n")), [row, row]);
    }

    #[test]
    fn strings_numbers_and_literals_are_elements_too() {
        assert_eq!(
            elements(r#"["a,\"]b" , -12.5e+3,true,null, [1,[]] ]"#),
            [r#""a,\"]b""#, "-12.5e+3", "true", "null", "[1,[]]"]
        );
        assert_eq!(elements("[ ]"), Vec::<String>::new());
    }

    #[test]
    fn a_missing_row_and_what_follows_the_list_are_broken() {
        for text in ["[,1]", "[1,]", "[1,,2]", "[1] x", "[1]]"] {
            let (_, end) = split(text.as_bytes(), 1);
            assert!(end.is_err(), "{text}");
        }
        assert!(split(b"[{\"a\":[1", 3)
            .1
            .unwrap_err()
            .contains("inside row 1"));
        assert!(split(b"[1, ", 3).1.unwrap_err().contains("inside the list"));
        assert_eq!(split(b" null ", 2), (Vec::new(), Ok(false)));
    }

    #[test]
    fn a_row_past_the_limit_is_never_held() {
        let long = format!("[\"{}\",2]", "x".repeat(MAX_ROW_BYTES));
        assert_eq!(split(long.as_bytes(), 4096).0, [None, Some(b"2".to_vec())]);
        let mut s = Splitter::default();
        for piece in long.as_bytes()[..MAX_ROW_BYTES + 3].chunks(4096) {
            s.feed(piece, &mut |_| Ok(())).unwrap();
        }
        assert!(
            s.carried.capacity() <= 2 * MAX_ROW_BYTES,
            "{} held",
            s.carried.capacity()
        );
        assert_eq!(s.carried.len(), 0);
    }
}
