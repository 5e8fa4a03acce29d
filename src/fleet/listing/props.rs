//! Property tests of the list reader: cut into pieces anywhere, an answer
//! (also one with a few bytes changed) reads exactly as it does whole;
//! whole, it never panics and what it gives is bounded by what it was given.

use proptest::prelude::*;
use serde_json::Value;

use super::*;
use crate::fleet::props::{garbage_within, live_within, session_within, MAX_REASON_CHARS};
use crate::fleet::session::{Live, Session};
use crate::testing::{input, json, lossy, session_row, CASES};

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
