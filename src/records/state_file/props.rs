//! Property test of the state file reader: whatever `state.json` holds,
//! loading it never panics and what it keeps is bounded by its size.

use proptest::prelude::*;
use serde_json::Value;

use super::{Store, STATE_FILE};
use crate::decide::book::State;
use crate::decide::restart::gates::Limits;
use crate::testing::{
    bytes_of, count, input, list_of, map_of, shaped, shaped_with, string, time, CASES, NOW,
};

/// A whole `state.json`.
fn state_doc() -> BoxedStrategy<Value> {
    let book = shaped_with(
        30,
        vec![
            ("restarts", list_of(time())),
            ("cooldown_until", time()),
            ("backoff_until", time()),
            ("consecutive_failures", count()),
            ("liveness_skips", count()),
            ("alerted", list_of(string())),
            ("title", string()),
            ("last_status", string()),
            ("status_since", time()),
            ("error_since", time()),
            ("unsaved", string()),
            ("unsaved_ended_at", time()),
            ("unverified", string()),
            (
                "refusal",
                shaped(vec![
                    ("first_at", time()),
                    ("refused", count()),
                    ("retry_at", time()),
                ]),
            ),
        ],
    );
    shaped_with(
        30,
        vec![
            ("sessions", map_of(book)),
            ("last_restart_at", time()),
            ("recent_restarts", list_of(time())),
            ("cascade_pause_until", time()),
            (
                "cascade",
                shaped(vec![
                    ("started", time()),
                    ("settle_until", time()),
                    ("last_alert", time()),
                    ("size", count()),
                ]),
            ),
            ("breaker_hits", list_of(time())),
            ("breaker_open_until", time()),
            ("poller_restarted", map_of(time())),
            (
                "waiting",
                map_of(shaped(vec![
                    ("digest", string()),
                    ("since", time()),
                    ("nudged_at", time()),
                ])),
            ),
            ("escalated", map_of(time())),
        ],
    )
}

fn limits() -> Limits {
    Limits::from_config(&crate::config::test_config(std::path::Path::new(
        "/nonexistent",
    )))
}

fn state_size(s: &State) -> usize {
    s.sessions.len()
        + s.sessions
            .values()
            .map(|b| b.restarts.len() + b.alerted.len())
            .sum::<usize>()
        + s.recent_restarts.len()
        + s.breaker_hits.len()
        + s.poller_restarted.len()
        + s.waiting.len()
        + s.escalated.len()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn state_files_never_panic_and_load_bounded(
        bytes in prop_oneof![
            1 => input(),
            3 => state_doc().prop_map(bytes_of),
        ],
        now in prop_oneof![3 => Just(NOW), 1 => 0.0..4e9f64],
    ) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(STATE_FILE), &bytes).unwrap();
        let state = Store::new(tmp.path(), true).load(&limits(), now);
        prop_assert!(state_size(&state) <= bytes.len());
        prop_assert!(state.sessions.keys().all(|k| k.len() <= bytes.len()));
        prop_assert!(state.escalated.keys().all(|k| k.len() <= bytes.len()));
    }
}
