//! Test support: the proptest generators of outside input that the property
//! tests next to each parser share. What the CLI, a file or a person could
//! hand over: raw bytes, arbitrary JSON biased towards the keys and words
//! the parsers look for, and JSON of roughly the expected shape, right
//! often enough to get past the first check and wrong often enough to test
//! the rest.
//!
//! Each property asks two things of its parser: it never panics, and what
//! it returns is bounded by what it was given. Also the one way unit tests
//! write a fake executable ([`write_script`]). Test code only.

use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// Cases per property: together they keep `cargo test` at about a minute.
pub(crate) const CASES: u32 = 256;

/// The time the file-loading properties run at; generated times lie around it.
pub(crate) const NOW: f64 = 1_796_068_800.0;

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

pub(crate) fn text() -> impl Strategy<Value = String> {
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
pub(crate) fn json() -> impl Strategy<Value = Value> {
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

/// An object with each of `fields` usually of the right type, sometimes
/// missing, sometimes anything, among a few stray keys: close enough to the
/// real shape to get past the first check, wrong often enough to test the
/// rest.
pub(crate) fn shaped(fields: Vec<(&'static str, BoxedStrategy<Value>)>) -> BoxedStrategy<Value> {
    shaped_with(7, fields)
}

/// [`shaped`], with each field right `good` times out of `good + 2`: a
/// file is refused whole for one wrong field, so its generators use more.
pub(crate) fn shaped_with(
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

pub(crate) fn string() -> BoxedStrategy<Value> {
    text().prop_map(Value::String).boxed()
}

pub(crate) fn word(words: &'static [&'static str]) -> BoxedStrategy<Value> {
    prop::sample::select(words).prop_map(Value::from).boxed()
}

fn boolean() -> BoxedStrategy<Value> {
    any::<bool>().prop_map(Value::Bool).boxed()
}

pub(crate) fn count() -> BoxedStrategy<Value> {
    prop_oneof![0..5u32, any::<u32>()]
        .prop_map(Value::from)
        .boxed()
}

/// A time around [`NOW`]: recent, old, or in the future.
pub(crate) fn time() -> BoxedStrategy<Value> {
    prop_oneof![-4e3..4e3f64, -1e7..1e7f64]
        .prop_map(|d| Value::from(NOW + d))
        .boxed()
}

pub(crate) fn list_of(item: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    prop::collection::vec(item, 0..5)
        .prop_map(Value::Array)
        .boxed()
}

pub(crate) fn map_of(item: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    prop::collection::btree_map(text(), item, 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
        .boxed()
}

/// A row of `list --all --json` or `-p P list --json`, or a `session show`.
pub(crate) fn session_row() -> BoxedStrategy<Value> {
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

pub(crate) fn bytes_of(v: Value) -> Vec<u8> {
    v.to_string().into_bytes()
}

/// What a CLI, a file or a person could hand over: raw bytes, or JSON of
/// roughly the expected shape, or one of the words the CLI prints.
pub(crate) fn input() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..512),
        prop::collection::vec(
            prop_oneof![6 => session_row(), 1 => row(), 1 => json()],
            0..8
        )
        .prop_map(|rows| bytes_of(Value::Array(rows))),
        session_row().prop_map(bytes_of),
        json().prop_map(bytes_of),
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
pub(crate) fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Writes an executable script through a child shell, never through a
/// descriptor of this process: a writable descriptor inherited by a child
/// another test thread forks meanwhile makes its exec fail with ETXTBSY.
pub(crate) fn write_script(path: &std::path::Path, text: &str) {
    let ok = std::process::Command::new("/bin/sh")
        .args([
            "-c",
            "printf '%s' \"$2\" > \"$1\" && chmod 755 \"$1\"",
            "sh",
        ])
        .arg(path)
        .arg(text)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "could not write {}", path.display());
}
