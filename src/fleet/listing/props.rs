//! Property tests of the list reader: whatever the answer (also one with a
//! few bytes changed), it never panics, what it gives is bounded by what it
//! was given, and a row reads the same alone as among others.

use proptest::prelude::*;
use serde_json::Value;

use super::*;
use crate::fleet::props::{garbage_within, live_within, session_within, MAX_REASON_CHARS};
use crate::fleet::session::{Live, Session};
use crate::testing::{input, json, session_row, CASES};

/// Every row of an answer, and its tally.
type Read = Result<(Vec<(Session, Live)>, RowTally), Garbage>;

fn read_all(shape: Shape, answer: &[u8]) -> Read {
    let mut rows = Vec::new();
    let tally = read(shape, answer, &mut |r| rows.push((r.session(), r.live())))?;
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
    fn a_list_never_panics_and_is_bounded(
        answer in prop_oneof![list_answer(), mutated_answer()],
        profile in any::<bool>(),
    ) {
        let shape = if profile { Shape::Profile } else { Shape::All };
        match read_all(shape, &answer) {
            Ok((rows, tally)) => prop_assert!(within(&rows, &tally, answer.len())),
            Err(g) => prop_assert!(garbage_within(&g)),
        }
    }

    #[test]
    fn a_json_array_is_readable_and_each_row_reads_as_it_does_alone(
        answer in prop_oneof![list_answer(), mutated_answer()],
        profile in any::<bool>(),
    ) {
        let shape = if profile { Shape::Profile } else { Shape::All };
        let text = std::str::from_utf8(&answer).unwrap_or_default();
        let Ok(elements) = serde_json::from_str::<Vec<&RawValue>>(text) else {
            return Ok(());
        };
        let fail = |g: Garbage| TestCaseError::fail(g.0);
        let (rows, tally) = read_all(shape, &answer).map_err(fail)?;
        let mut alone = (Vec::new(), 0);
        for e in elements {
            let (r, t) = read_all(shape, format!("[{}]", e.get()).as_bytes()).map_err(fail)?;
            alone.0.extend(r);
            alone.1 += t.skipped;
        }
        prop_assert_eq!((rows, tally.skipped), alone);
    }
}
