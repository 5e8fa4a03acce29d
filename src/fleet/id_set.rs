//! A compact, immutable map from session ids to a small tag: all ids in one
//! string, and a sorted table of where each one is.
//!
//! It answers "is this id listed, and what do we know of it?" for the
//! sessions the cache does not keep whole, at 12 bytes plus the id's own
//! length per session (a `BTreeMap<String, _>` costs several times that).
//! It holds ids and tags only, and is built once per list.

use std::cmp::Ordering;

/// Where one id is in the text, and its tag.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u32,
    len: u32,
    tag: u32,
}

/// See the module docs. Built with [`IdSetBuilder`].
#[derive(Debug, Default, Clone)]
pub(crate) struct IdSet {
    text: String,
    /// One per distinct id, sorted by id.
    spans: Vec<Span>,
}

impl IdSet {
    /// The tag of `id`, if it is in the set.
    pub(crate) fn tag(&self, id: &str) -> Option<u32> {
        let i = self
            .spans
            .binary_search_by(|span| id_of(&self.text, span).cmp(id))
            .ok()?;
        Some(self.spans[i].tag)
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.tag(id).is_some()
    }

    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }
}

fn id_of<'t>(text: &'t str, span: &Span) -> &'t str {
    let start = span.start as usize;
    text.get(start..start + span.len as usize).unwrap_or("")
}

/// Collects ids in any order, then sorts them once.
#[derive(Debug, Default)]
pub(crate) struct IdSetBuilder {
    set: IdSet,
}

impl IdSetBuilder {
    pub(crate) fn new() -> IdSetBuilder {
        IdSetBuilder::default()
    }

    /// Adds `id` with `tag`. An id that would not fit the 4 GiB of offsets
    /// is left out: the stream ceiling keeps a list far below that.
    pub(crate) fn push(&mut self, id: &str, tag: u32) {
        let (Ok(start), Ok(len)) = (u32::try_from(self.set.text.len()), u32::try_from(id.len()))
        else {
            return;
        };
        if start.checked_add(len).is_none() {
            return;
        }
        self.set.text.push_str(id);
        self.set.spans.push(Span { start, len, tag });
    }

    /// The set; of an id pushed more than once, one tag is kept.
    pub(crate) fn build(self) -> IdSet {
        let IdSet {
            mut text,
            mut spans,
        } = self.set;
        let by_id = |a: &Span, b: &Span| -> Ordering { id_of(&text, a).cmp(id_of(&text, b)) };
        spans.sort_unstable_by(by_id);
        spans.dedup_by(|a, b| by_id(a, b) == Ordering::Equal);
        text.shrink_to_fit();
        spans.shrink_to_fit();
        IdSet { text, spans }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_exactly_the_ids_pushed_with_their_tags() {
        let mut b = IdSetBuilder::new();
        for (id, tag) in [
            ("b0-2", 2),
            ("a0-1", 1),
            ("c0-3", 3),
            ("a0-1", 1),
            ("a0", 0),
        ] {
            b.push(id, tag);
        }
        let set = b.build();
        assert_eq!(set.len(), 4);
        for (id, tag) in [("a0-1", 1), ("b0-2", 2), ("c0-3", 3), ("a0", 0)] {
            assert_eq!(set.tag(id), Some(tag), "{id}");
        }
        for id in ["", "a0-", "a0-10", "b0", "d0-4"] {
            assert!(!set.contains(id), "{id}");
        }
        assert!(!IdSet::default().contains("a0-1"));
    }
}
