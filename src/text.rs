//! Text from outside (titles, CLI answers, file content) made fit to show,
//! and clipped. It imports nothing of the crate.
//!
//! One escaping policy serves every place such text is shown (log lines,
//! `history`, Telegram errors): control characters (C0, DEL, C1, NEL
//! included), the line and paragraph separators U+2028/U+2029, and the
//! bidirectional marks, embeddings, overrides and isolates are written as
//! Rust escapes (`\n`, `\u{202e}`), so no text can forge a line or reorder
//! what a reader sees. Everything else is kept as is. A clip never splits a
//! character or an escape, and `…` marks it. [`clip_bytes`] and
//! [`clip_chars`] only clip: they are for data (record fields, CLI error
//! messages), which is escaped where it is shown.

/// Whether `c` is shown as its escape, by the policy above.
fn hostile(c: char) -> bool {
    let bidi_or_break = matches!(
        c,
        '\u{061c}' | '\u{200e}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    );
    c.is_control() || bidi_or_break
}

/// How many characters `c` takes once shown.
fn width(c: char) -> usize {
    if hostile(c) {
        c.escape_default().len()
    } else {
        1
    }
}

fn push_shown(out: &mut String, s: &str) {
    for c in s.chars() {
        if hostile(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
}

/// The first of `chars` past `room` characters as shown, counted from
/// where `chars` starts.
fn overflow(mut chars: impl Iterator<Item = (usize, char)>, room: usize) -> Option<(usize, char)> {
    let mut used = 0;
    chars.find(|&(_, c)| {
        used += width(c);
        used > room
    })
}

/// Where the longest start of `s` that takes at most `room` characters
/// once shown ends.
fn head_end(s: &str, room: usize) -> usize {
    overflow(s.char_indices(), room).map_or(s.len(), |(i, _)| i)
}

/// `s` printable on one line and clipped to `max` characters as shown,
/// with `…` after a cut.
pub(crate) fn printable(s: &str, max: usize) -> String {
    let end = head_end(s, max);
    let mut out = String::new();
    push_shown(&mut out, &s[..end]);
    if end < s.len() {
        out.push('…');
    }
    out
}

/// `s` printable on one line in at most `max` characters as shown. A longer
/// `s` keeps `head` characters of its start and the rest of its end around
/// one `…`; only the kept ends are escaped, so a huge `s` costs one scan.
pub(crate) fn printable_ends(s: &str, max: usize, head: usize) -> String {
    if head_end(s, max) == s.len() {
        return printable(s, max);
    }
    let mut out = printable(&s[..head_end(s, head)], head);
    out.push('…');
    let tail = overflow(s.char_indices().rev(), max - head - 1);
    push_shown(&mut out, &s[tail.map_or(0, |(i, c)| i + c.len_utf8())..]);
    out
}

/// A decoder's complaint, which may quote the row, made short and
/// single-line.
pub(crate) fn clip_reason(s: &str) -> String {
    printable(s, 120)
}

/// `s` cut on a character boundary to at most `max` bytes, the `…` that
/// marks the cut included.
pub(crate) fn clip_bytes(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The first `max` characters of `s`, with `…` after a cut.
pub(crate) fn clip_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_line_breaking_and_bidi_characters_are_escaped() {
        let hostile = "a\n\r\t\u{0}\u{b}\u{c}\u{1b}\u{7f}\u{85}\u{9f}\u{2028}\u{2029}\u{202a}\u{202e}\u{2066}\u{2069}\u{200e}\u{200f}\u{61c}z";
        let shown = printable(hostile, 1000);
        assert_eq!(
            shown,
            "a\\n\\r\\t\\u{0}\\u{b}\\u{c}\\u{1b}\\u{7f}\\u{85}\\u{9f}\\u{2028}\\u{2029}\\u{202a}\\u{202e}\\u{2066}\\u{2069}\\u{200e}\\u{200f}\\u{61c}z"
        );
        for c in hostile.chars() {
            assert_eq!(width(c), printable(&c.to_string(), 100).chars().count());
        }
    }

    #[test]
    fn ordinary_text_is_kept_byte_for_byte() {
        let s = "conductor-ops — ünïcode, 한국어, emoji 🚀, quotes \"'\\ and `ticks`";
        assert_eq!(printable(s, 1000), s);
        assert_eq!(printable_ends(s, 1000, 10), s);
        assert_eq!(clip_bytes(s, 1000), s);
        assert_eq!(clip_chars(s, 1000), s);
    }

    #[test]
    fn a_clip_never_splits_a_character_or_an_escape() {
        assert_eq!(printable("héllo wörld", 5), "héllo…");
        assert_eq!(printable("ab\ncd", 3), "ab…");
        assert_eq!(printable("ab\ncd", 4), "ab\\n…");
        assert_eq!(printable("abc", 3), "abc");
        assert_eq!(clip_chars("héllo", 2), "hé…");
        for pad in 0..4 {
            let s = format!("{}{}", "a".repeat(pad), "한".repeat(30));
            let c = clip_bytes(&s, 40);
            assert!(c.len() <= 40 && c.ends_with('…'), "{pad}");
            assert!(s.starts_with(c.trim_end_matches('…')));
        }
    }

    #[test]
    fn a_long_text_keeps_both_ends_within_the_bound() {
        let s = format!("start {} end\n", "x\u{202e}".repeat(100_000));
        let shown = printable_ends(&s, 50, 20);
        assert!(shown.chars().count() <= 50, "{shown}");
        assert!(shown.starts_with("start x\\u{202e}x"), "{shown}");
        assert!(shown.ends_with("x\\u{202e} end\\n"), "{shown}");
        assert_eq!(shown.matches('…').count(), 1);
        let exactly = "a".repeat(50);
        assert_eq!(printable_ends(&exactly, 50, 20), exactly);
        assert_eq!(printable_ends(&"a".repeat(51), 50, 20).chars().count(), 50);
    }
}
