//! Property tests over every parser of outside input: what the agent-deck CLI
//! prints (`list`, `show`, `session restart` and its `skipped` answers, error
//! output), hook file names and bodies, `state.json`, `task-timers.json` and
//! environment values.
//!
//! Each property feeds arbitrary bytes (and, to reach deeper code, arbitrary
//! JSON of the expected shape) and asks two things: the parser never panics,
//! and what it returns is bounded by what it was given (no more rows than
//! bytes, no string longer than the input, messages of bounded length). The
//! list reader, which reads an answer as the pipe delivers it, is also asked
//! a third: cut into pieces anywhere, an answer (also one with a few bytes
//! changed) reads exactly as it does whole. Test code only; the parsers themselves are not changed for it.

use std::path::Path;

use proptest::prelude::*;
use serde_json::{Map, Number, Value};

use crate::config::{Config, Env};
use crate::decide::book::State;
use crate::decide::gates::Limits;
use crate::fleet::listing::{ListReader, RowTally, Shape};
use crate::fleet::parse::{self, Listing, RestartAnswer};
use crate::fleet::session::{is_valid_id, Live, Session};
use crate::records::state_file::{Store, STATE_FILE};
use crate::tasks::registry::RegistryFile;
use crate::triggers::hook_file::{hook_id, read_hook};

/// Cases per property: together they keep `cargo test` at about a minute.
const CASES: u32 = 256;

/// The longest skip reason or garbage message a parser may produce.
const MAX_REASON_CHARS: usize = 300;

/// The fields the parsers read, so generated rows hit them often.
const FIELDS: &[&str] = &[
    "id",
    "title",
    "group",
    "group_path",
    "profile",
    "path",
    "parent_session_id",
    "is_conductor",
    "IsConductor",
    "status",
    "substate",
    "channels",
    "auth_hold",
    "reason",
    "claude_session_id",
    "success",
    "skipped",
    "error",
    "event",
    "ts",
    "sessions",
    "restarts",
    "escalated",
    "tasks",
    "history",
];

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-z0-9 .:/-]{0,16}",
        prop::sample::select(vec![
            "running",
            "error",
            "dead",
            "waiting",
            "",
            "null",
            "-1",
            "1e308",
            "auth_death",
        ])
        .prop_map(str::to_owned),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(FIELDS).prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

/// Any JSON value, biased towards the keys and words the parsers look for.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A JSON object with some of `FIELDS` set to anything.
fn row() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(key(), json(), 0..10)
        .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>()))
}

/// The time the file-loading properties run at; generated times lie around it.
const NOW: f64 = 1_796_068_800.0;

/// An object with each of `fields` usually of the right type, sometimes
/// missing, sometimes anything, among a few stray keys: close enough to the
/// real shape to get past the first check, wrong often enough to test the
/// rest.
fn shaped(fields: Vec<(&'static str, BoxedStrategy<Value>)>) -> BoxedStrategy<Value> {
    shaped_with(7, fields)
}

/// [`shaped`], with each field right `good` times out of `good + 2`: a
/// file is refused whole for one wrong field, so its generators use more.
fn shaped_with(
    good: u32,
    fields: Vec<(&'static str, BoxedStrategy<Value>)>,
) -> BoxedStrategy<Value> {
    let keys: Vec<&'static str> = fields.iter().map(|(k, _)| *k).collect();
    let values: Vec<BoxedStrategy<Option<Value>>> = fields
        .into_iter()
        .map(|(_, good_value)| {
            prop_oneof![
                good => good_value.prop_map(Some),
                1 => Just(None),
                1 => json().prop_map(Some),
            ]
            .boxed()
        })
        .collect();
    let stray = prop::collection::btree_map(key(), json(), 0..3);
    (values, stray)
        .prop_map(move |(values, stray)| {
            let mut m: Map<String, Value> = stray.into_iter().collect();
            for (k, v) in keys.iter().zip(values) {
                match v {
                    Some(v) => m.insert((*k).to_owned(), v),
                    None => m.remove(*k),
                };
            }
            Value::Object(m)
        })
        .boxed()
}

fn string() -> BoxedStrategy<Value> {
    text().prop_map(Value::String).boxed()
}

fn word(words: &'static [&'static str]) -> BoxedStrategy<Value> {
    prop::sample::select(words).prop_map(Value::from).boxed()
}

fn boolean() -> BoxedStrategy<Value> {
    any::<bool>().prop_map(Value::Bool).boxed()
}

fn count() -> BoxedStrategy<Value> {
    prop_oneof![0..5u32, any::<u32>()]
        .prop_map(Value::from)
        .boxed()
}

/// A time around [`NOW`]: recent, old, or in the future.
fn time() -> BoxedStrategy<Value> {
    prop_oneof![-4e3..4e3f64, -1e7..1e7f64]
        .prop_map(|d| Value::from(NOW + d))
        .boxed()
}

fn list_of(item: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    prop::collection::vec(item, 0..5)
        .prop_map(Value::Array)
        .boxed()
}

fn map_of(item: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    prop::collection::btree_map(text(), item, 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
        .boxed()
}

/// A row of `list --all --json` or `-p P list --json`, or a `session show`.
fn session_row() -> BoxedStrategy<Value> {
    shaped(vec![
        ("id", string()),
        ("title", string()),
        ("group", string()),
        ("profile", string()),
        ("path", string()),
        ("parent_session_id", string()),
        ("is_conductor", boolean()),
        (
            "status",
            word(&["running", "waiting", "idle", "error", "stopped", "starting"]),
        ),
        ("substate", string()),
        ("channels", list_of(string())),
        ("auth_hold", shaped(vec![("reason", string())])),
        ("claude_session_id", string()),
    ])
}

/// One task of `task-timers.json`.
fn task_row() -> BoxedStrategy<Value> {
    shaped_with(
        80,
        vec![
            ("id", string()),
            ("task_file", string()),
            ("task_sha256", string()),
            ("done_file", string()),
            ("partial_file", string()),
            ("followup_s", time()),
            ("dispatched_at", time()),
            ("next_check_at", time()),
            ("retry_count", count()),
            ("max_retry", count()),
            ("parent_task", string()),
            (
                "status",
                word(&[
                    "pending",
                    "done",
                    "retried",
                    "exhausted",
                    "tampered",
                    "cancelled",
                ]),
            ),
            ("pid", count()),
            ("match", string()),
            ("command", list_of(string())),
            (
                "history",
                list_of(shaped_with(
                    80,
                    vec![("ts", time()), ("event", string()), ("detail", string())],
                )),
            ),
        ],
    )
}

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

fn bytes_of(v: Value) -> Vec<u8> {
    v.to_string().into_bytes()
}

/// What a CLI, a file or a person could hand over: raw bytes, or JSON of
/// roughly the expected shape, or one of the words the CLI prints.
fn input() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..512),
        prop::collection::vec(
            prop_oneof![6 => session_row(), 1 => row(), 1 => json()],
            0..8
        )
        .prop_map(|rows| bytes_of(Value::Array(rows))),
        session_row().prop_map(bytes_of),
        json().prop_map(|v| v.to_string().into_bytes()),
        prop::sample::select(vec![
            "null",
            "No profiles found.",
            "No sessions found in profile 'x'.",
            "[]",
            "{}",
            "",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
    ]
}

/// Output as the process layer hands it over: lossily decoded.
fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn session_within(s: &Session, n: usize) -> bool {
    [&s.id, &s.title, &s.group, &s.profile, &s.path]
        .iter()
        .all(|f| f.len() <= n)
        && s.parent_session_id.as_ref().is_none_or(|p| p.len() <= n)
        && !s.id.is_empty()
}

fn live_within(l: &Live, n: usize) -> bool {
    l.channels.len() <= n
        && l.channels.iter().all(|c| c.len() <= n)
        && [&l.substate, &l.auth_hold, &l.claude_session_id]
            .iter()
            .all(|f| f.as_ref().is_none_or(|s| s.len() <= n))
}

fn listing_within<T>(l: &Listing<T>, n: usize) -> bool {
    l.rows.len() + l.skipped.len() <= n
        && l.skipped
            .iter()
            .all(|r| r.chars().count() <= MAX_REASON_CHARS && !r.contains('\n'))
}

fn garbage_within(g: &parse::Garbage) -> bool {
    g.0.chars().count() <= MAX_REASON_CHARS && !g.0.contains('\n')
}

fn limits() -> Limits {
    Limits::from_config(&Config::from_env(&env_of(vec![("HOME", "/nonexistent")])).unwrap())
}

// `into`: the map's values are whatever type the environment snapshot uses.
#[allow(clippy::useless_conversion)]
fn env_of<K: Into<String>, V: Into<String>>(pairs: Vec<(K, V)>) -> Env {
    pairs
        .into_iter()
        .map(|(k, v)| (k.into(), v.into().into()))
        .collect()
}

/// Every variable the settings are read from, as `--print-config` lists
/// them, plus those read outside that table.
fn variable_names() -> Vec<String> {
    let cfg = Config::from_env(&env_of(vec![("HOME", "/nonexistent")])).unwrap();
    let mut names: Vec<String> = cfg.sources.iter().map(|s| s.name.to_owned()).collect();
    for extra in [
        "HOME",
        "PATH",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "JOURNAL_STREAM",
        "NOTIFY_SOCKET",
        "WATCHDOG_USEC",
        "WATCHDOG_PID",
        "TELEGRAM_BOT_TOKEN",
    ] {
        names.push(extra.to_owned());
    }
    names.sort();
    names.dedup();
    names
}

fn env_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[-+]?[0-9]{0,12}(\\.[0-9]{0,6})?(e[-+]?[0-9]{1,3})?[smh]?",
        "[a-z]{1,8}=[/a-z]{0,12}(,[a-z]{1,8}=[/a-z]{0,12}){0,3}",
        prop::sample::select(vec![
            "",
            "0",
            "1e-10",
            "inf",
            "NaN",
            "-0",
            "4294967295",
            "1e9",
            " 5 ",
        ])
        .prop_map(str::to_owned),
    ]
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

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap();
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
    let mut each = |r: &crate::fleet::listing::Row<'_>| rows.push((r.session(), r.live()));
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
        match parse::list_all(&out) {
            Ok(l) => {
                prop_assert!(listing_within(&l, out.len()));
                prop_assert!(l.rows.iter().all(|s| session_within(s, out.len())));
            }
            Err(g) => prop_assert!(garbage_within(&g)),
        }
    }

    #[test]
    fn profile_list_never_panics_and_is_bounded(bytes in input()) {
        let out = lossy(&bytes);
        match parse::list_profile(&out) {
            Ok(l) => {
                prop_assert!(listing_within(&l, out.len()));
                prop_assert!(l
                    .rows
                    .iter()
                    .all(|(s, live)| session_within(s, out.len()) && live_within(live, out.len())));
            }
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

    #[test]
    fn show_never_panics_and_is_bounded(bytes in input()) {
        let out = lossy(&bytes);
        match parse::show(&out) {
            Ok(live) => {
                prop_assert!(live.status.is_some());
                prop_assert!(live_within(&live, out.len()));
            }
            Err(g) => prop_assert!(garbage_within(&g)),
        }
    }

    #[test]
    fn restart_and_skipped_answers_never_panic_and_are_bounded(
        bytes in prop_oneof![
            input(),
            (json(), json(), json()).prop_map(|(skipped, reason, success)| {
                serde_json::json!({"skipped": skipped, "reason": reason, "success": success})
                    .to_string()
                    .into_bytes()
            }),
            text().prop_map(|reason| {
                serde_json::json!({"id": "x", "skipped": true, "success": true, "reason": reason})
                    .to_string()
                    .into_bytes()
            }),
        ]
    ) {
        let out = lossy(&bytes);
        match parse::restart(&out) {
            Ok(RestartAnswer::Skipped(reason)) => prop_assert!(reason.len() <= out.len()),
            Ok(RestartAnswer::Restarted) => {}
            Err(g) => prop_assert!(garbage_within(&g)),
        }
    }

    #[test]
    fn error_messages_never_panic_and_are_bounded(out in input(), err in input()) {
        let msg = parse::error_message(&lossy(&out), &lossy(&err));
        prop_assert!(msg.chars().count() <= 301);
    }

    #[test]
    fn hook_file_names_never_panic_and_name_a_valid_id(
        name in prop_oneof![
            any::<String>(),
            "\\.?[a-zA-Z0-9._/-]{0,24}(\\.generation)?\\.(json|lock|sid)(\\.tmp-[0-9]{1,4})?",
        ]
    ) {
        if let Some(id) = hook_id(&name) {
            prop_assert!(id.len() < name.len());
            prop_assert_eq!(format!("{id}.json"), name.clone());
            prop_assert!(is_valid_id(id) && !id.contains('/'));
        }
    }

    #[test]
    fn hook_file_bodies_never_panic_and_are_bounded(
        bytes in prop_oneof![
            input(),
            json().prop_map(|status| serde_json::json!({"status": status, "event": "Stop", "ts": 1})
                .to_string()
                .into_bytes()),
        ]
    ) {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "a-1.json", &bytes);
        if let Some(hook) = read_hook(tmp.path(), "a-1") {
            prop_assert!(hook.ts.is_none_or(f64::is_finite));
        }
    }

    #[test]
    fn state_files_never_panic_and_load_bounded(
        bytes in prop_oneof![
            1 => input(),
            3 => state_doc().prop_map(bytes_of),
        ],
        now in prop_oneof![3 => Just(NOW), 1 => 0.0..4e9f64],
    ) {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), STATE_FILE, &bytes);
        let state = Store::new(tmp.path(), true).load(&limits(), now);
        prop_assert!(state_size(&state) <= bytes.len());
        prop_assert!(state.sessions.keys().all(|k| k.len() <= bytes.len()));
        prop_assert!(state.escalated.keys().all(|k| k.len() <= bytes.len()));
    }

    #[test]
    fn task_registries_never_panic_and_load_bounded(
        bytes in prop_oneof![
            1 => input(),
            3 => shaped(vec![
                ("tasks", list_of(task_row())),
                ("redispatches", shaped(vec![("day", count()), ("count", count())])),
            ])
            .prop_map(bytes_of),
        ]
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("task-timers.json");
        std::fs::write(&path, &bytes).unwrap();
        match RegistryFile::new(&path).load() {
            Ok(reg) => {
                prop_assert!(reg.tasks.len() <= bytes.len());
                let history: usize = reg.tasks.iter().map(|t| t.events.len()).sum();
                prop_assert!(history <= bytes.len());
                prop_assert!(reg.tasks.iter().all(|t| t.id.len() <= bytes.len()));
            }
            Err(e) => {
                prop_assert_eq!(e.exit_code(), 2);
                prop_assert!(e.to_string().len() <= 10 * bytes.len() + 4096);
            }
        }
    }

    #[test]
    fn environment_values_never_panic_and_errors_are_bounded(
        picks in prop::collection::vec((prop::sample::select(variable_names()), env_value()), 0..6)
    ) {
        let given: usize = picks.iter().map(|(_, v)| v.len()).sum();
        let mut pairs = vec![("HOME".to_owned(), "/nonexistent".to_owned())];
        pairs.extend(picks);
        match Config::from_env(&env_of(pairs)) {
            Ok(cfg) => prop_assert!(cfg.describe().len() <= 10 * given + 16_384),
            Err(e) => {
                prop_assert_eq!(e.exit_code(), 2);
                prop_assert!(e.to_string().len() <= 10 * given + 4096);
            }
        }
    }
}
