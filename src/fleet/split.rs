//! Finds where one element of a JSON array ends, in a byte stream that
//! arrives in chunks.
//!
//! [`ElementScan`] is fed the bytes of one array element, from its first
//! byte, in as many pieces as the pipe delivers, and says when the element
//! is complete. It tracks strings, escapes and nesting (with the kind of each
//! open bracket, so `[}` is broken, not balanced) and nothing else: it does
//! not check that the element is valid JSON, which is the deserializer's job
//! once the element is whole. It keeps no bytes and allocates only for
//! nesting deeper than 64 levels, up to [`MAX_DEPTH`]. Pure byte logic: no
//! I/O, no knowledge of what a row means.

/// Deeper nesting than this is taken for a broken answer: no row the CLI
/// prints comes near it, and it bounds the bracket stack at 128 KiB.
pub const MAX_DEPTH: usize = 1 << 20;

/// What one more piece of an element told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanStep {
    /// The element ends after this many bytes of the piece; the rest of the
    /// piece follows the element.
    Ended(usize),
    /// The whole piece belongs to the element, which goes on.
    More,
    /// Not an element of a JSON array: brackets that do not match, nesting
    /// past [`MAX_DEPTH`], or a first byte no JSON value starts with.
    Broken(&'static str),
}

/// The shape of the element, known from its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ElementShape {
    /// Nothing seen yet.
    Unstarted,
    /// An object or an array: ends when its first bracket closes.
    Container,
    /// A string: ends at its closing quote.
    Text,
    /// A number, `true`, `false` or `null`: ends before the first byte that
    /// cannot be part of one.
    Bare,
}

/// The scanning state of one element; see the module docs.
#[derive(Debug, Clone)]
pub struct ElementScan {
    kind: ElementShape,
    in_string: bool,
    escaped: bool,
    depth: usize,
    /// One bit per open bracket, set for `[`; bit `i` of word `i / 64`.
    stack: Vec<u64>,
    /// The first 64 levels, kept without allocating.
    low: u64,
}

impl Default for ElementScan {
    fn default() -> ElementScan {
        ElementScan::new()
    }
}

impl ElementScan {
    pub fn new() -> ElementScan {
        ElementScan {
            kind: ElementShape::Unstarted,
            in_string: false,
            escaped: false,
            depth: 0,
            stack: Vec::new(),
            low: 0,
        }
    }

    /// Feeds the next piece of the element; the first call starts with the
    /// element's first byte (whitespace before it is the caller's).
    pub fn feed(&mut self, piece: &[u8]) -> ScanStep {
        let mut i = 0;
        if self.kind == ElementShape::Unstarted {
            let Some(&first) = piece.first() else {
                return ScanStep::More;
            };
            match first {
                b'{' | b'[' => {
                    self.kind = ElementShape::Container;
                    if let Err(why) = self.open(first == b'[') {
                        return ScanStep::Broken(why);
                    }
                }
                b'"' => {
                    self.kind = ElementShape::Text;
                    self.in_string = true;
                }
                b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => self.kind = ElementShape::Bare,
                _ => return ScanStep::Broken("no JSON value starts there"),
            }
            i = 1;
        }
        match self.kind {
            ElementShape::Bare => match piece[i..].iter().position(|b| !is_bare(*b)) {
                Some(n) => ScanStep::Ended(i + n),
                None => ScanStep::More,
            },
            ElementShape::Text => match self.skip_string(&piece[i..]) {
                Some(n) => ScanStep::Ended(i + n),
                None => ScanStep::More,
            },
            ElementShape::Container | ElementShape::Unstarted => self.scan_container(piece, i),
        }
    }

    fn scan_container(&mut self, piece: &[u8], mut i: usize) -> ScanStep {
        while i < piece.len() {
            if self.in_string {
                match self.skip_string(&piece[i..]) {
                    Some(n) => i += n,
                    None => return ScanStep::More,
                }
                continue;
            }
            let b = piece[i];
            i += 1;
            let closed = match b {
                b'"' => {
                    self.in_string = true;
                    continue;
                }
                b'{' | b'[' => match self.open(b == b'[') {
                    Ok(()) => continue,
                    Err(why) => return ScanStep::Broken(why),
                },
                b'}' | b']' => self.close(b == b']'),
                _ => continue,
            };
            match closed {
                Err(why) => return ScanStep::Broken(why),
                Ok(()) if self.depth == 0 => return ScanStep::Ended(i),
                Ok(()) => {}
            }
        }
        ScanStep::More
    }

    /// Bytes up to and including the closing quote of the open string, or
    /// `None` when the piece ends inside it.
    fn skip_string(&mut self, piece: &[u8]) -> Option<usize> {
        let mut i = 0;
        if self.escaped {
            if piece.is_empty() {
                return None;
            }
            self.escaped = false;
            i = 1;
        }
        while let Some(n) = piece[i..].iter().position(|b| *b == b'"' || *b == b'\\') {
            i += n;
            if piece[i] == b'"' {
                self.in_string = false;
                return Some(i + 1);
            }
            // A backslash: the next byte is escaped, whatever it is.
            if i + 1 >= piece.len() {
                self.escaped = true;
                return None;
            }
            i += 2;
        }
        None
    }

    fn open(&mut self, square: bool) -> Result<(), &'static str> {
        if self.depth >= MAX_DEPTH {
            return Err("nested too deep");
        }
        let (word, bit) = (self.depth / 64, self.depth % 64);
        if word == 0 {
            set_bit(&mut self.low, bit, square);
        } else {
            if self.stack.len() < word {
                self.stack.push(0);
            }
            set_bit(&mut self.stack[word - 1], bit, square);
        }
        self.depth += 1;
        Ok(())
    }

    fn close(&mut self, square: bool) -> Result<(), &'static str> {
        let Some(top) = self.depth.checked_sub(1) else {
            return Err("a bracket closes that was never opened");
        };
        let (word, bit) = (top / 64, top % 64);
        let bits = if word == 0 {
            self.low
        } else {
            self.stack.get(word - 1).copied().unwrap_or(0)
        };
        if ((bits >> bit) & 1 == 1) != square {
            return Err("brackets do not match");
        }
        self.depth = top;
        Ok(())
    }
}

fn set_bit(word: &mut u64, bit: usize, on: bool) {
    if on {
        *word |= 1 << bit;
    } else {
        *word &= !(1 << bit);
    }
}

/// A byte that can be part of a number or of `true`, `false`, `null`.
fn is_bare(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `text` in pieces of `size` bytes; where the element ended
    /// (bytes from the start of `text`), or how it broke.
    fn scan(text: &str, size: usize) -> Result<Option<usize>, &'static str> {
        let mut s = ElementScan::new();
        let mut at = 0;
        for piece in text.as_bytes().chunks(size.max(1)) {
            match s.feed(piece) {
                ScanStep::Ended(n) => return Ok(Some(at + n)),
                ScanStep::More => at += piece.len(),
                ScanStep::Broken(why) => return Err(why),
            }
        }
        Ok(None)
    }

    fn ends_at_every_piece_size(text: &str, end: Option<usize>) {
        for size in 1..=text.len().max(1) {
            assert_eq!(scan(text, size), Ok(end), "{text:?} in pieces of {size}");
        }
    }

    #[test]
    fn an_object_ends_where_its_first_brace_closes() {
        let row = r#"{"id":"a","n":{"x":[1,{"y":2}]}}"#;
        ends_at_every_piece_size(&format!("{row}, {{\"id\":\"b\"}}]"), Some(row.len()));
    }

    #[test]
    fn brackets_commas_and_escaped_quotes_inside_strings_do_not_count() {
        let row = r#"{"title":"a ] b, c } \" d [ {","path":"\\","e":"\\\""}"#;
        ends_at_every_piece_size(&format!("{row}]"), Some(row.len()));
    }

    #[test]
    fn strings_numbers_and_literals_end_where_they_should() {
        ends_at_every_piece_size(r#""a,\"]b" , 1]"#, Some(8));
        ends_at_every_piece_size("-12.5e+3,", Some(8));
        ends_at_every_piece_size("true]", Some(4));
        ends_at_every_piece_size("null ", Some(4));
    }

    #[test]
    fn an_element_cut_short_goes_on() {
        ends_at_every_piece_size(r#"{"id":"a","t":["x"#, None);
        ends_at_every_piece_size(r#"{"id":"a\"#, None);
        ends_at_every_piece_size("12", None);
    }

    #[test]
    fn mismatched_brackets_and_stray_bytes_are_broken() {
        assert_eq!(scan(r#"{"a":[1}"#, 3), Err("brackets do not match"));
        assert_eq!(scan("[1}", 1), Err("brackets do not match"));
        assert_eq!(scan("}", 1), Err("no JSON value starts there"));
        assert_eq!(scan(":", 1), Err("no JSON value starts there"));
    }

    #[test]
    fn deep_nesting_is_tracked_past_the_first_word() {
        let open: String = (0..200)
            .map(|i| if i % 3 == 0 { '[' } else { '{' })
            .collect();
        let close: String = open
            .chars()
            .rev()
            .map(|c| if c == '[' { ']' } else { '}' })
            .collect();
        // Not valid JSON (objects need keys), but the brackets balance.
        let text = format!("{open}{close}]");
        assert_eq!(scan(&text, 7), Ok(Some(400)));
        // The innermost bracket is a brace: closing it with `]` is broken.
        let wrong = format!("{open}]{}", &close[1..]);
        assert_eq!(scan(&wrong, 5), Err("brackets do not match"));
    }
}
