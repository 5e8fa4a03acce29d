//! A compact, immutable set of session ids: all ids in one string, and a
//! sorted table of where each one is.
//!
//! It answers "is this id listed?" for the sessions the cache does not keep
//! whole, at about 8 bytes plus the id's own length per session (a
//! `BTreeSet<String>` costs several times that). It holds ids only, and is
//! built once per list.

use std::cmp::Ordering;

/// See the module docs. Built with [`IdSetBuilder`].
#[derive(Debug, Default, Clone)]
pub struct IdSet {
    text: String,
    /// `(start, len)` of each distinct id in `text`, sorted by id.
    spans: Vec<(u32, u32)>,
}

impl IdSet {
    pub fn contains(&self, id: &str) -> bool {
        self.spans
            .binary_search_by(|span| self.id(*span).cmp(id))
            .is_ok()
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    fn id(&self, (start, len): (u32, u32)) -> &str {
        let start = start as usize;
        self.text.get(start..start + len as usize).unwrap_or("")
    }
}

/// Collects ids in any order, then sorts them once.
#[derive(Debug, Default)]
pub struct IdSetBuilder {
    set: IdSet,
}

impl IdSetBuilder {
    pub fn new() -> IdSetBuilder {
        IdSetBuilder::default()
    }

    /// Adds `id`. An id that would not fit the 4 GiB of offsets is left out:
    /// the stream ceiling keeps a list far below that.
    pub fn push(&mut self, id: &str) {
        let (Ok(start), Ok(len)) = (u32::try_from(self.set.text.len()), u32::try_from(id.len()))
        else {
            return;
        };
        if start.checked_add(len).is_none() {
            return;
        }
        self.set.text.push_str(id);
        self.set.spans.push((start, len));
    }

    pub fn build(self) -> IdSet {
        let IdSet {
            mut text,
            mut spans,
        } = self.set;
        let by_id = |a: &(u32, u32), b: &(u32, u32)| -> Ordering {
            let at = |(s, l): (u32, u32)| text.get(s as usize..(s + l) as usize).unwrap_or("");
            at(*a).cmp(at(*b))
        };
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
    fn holds_exactly_the_ids_pushed() {
        let mut b = IdSetBuilder::new();
        for id in ["b0-2", "a0-1", "c0-3", "a0-1", "a0"] {
            b.push(id);
        }
        let set = b.build();
        assert_eq!(set.len(), 4);
        for id in ["a0-1", "b0-2", "c0-3", "a0"] {
            assert!(set.contains(id), "{id}");
        }
        for id in ["", "a0-", "a0-10", "b0", "d0-4"] {
            assert!(!set.contains(id), "{id}");
        }
        assert!(!IdSet::default().contains("a0-1"));
    }
}
