//! Records for the tests of `history`: one night of a small fleet as the
//! daemon would have written it, in a fixed time zone.

use jiff::tz::TimeZone;
use serde_json::Value;

use super::format::{line, About};
use super::timeline::{merge, parse, select, titles, Log, Record};

pub(super) const OPS: &str = "3f9c2a1b-1755891234";
pub(super) const AUTH: &str = "9a8b7c6d-1755891400";
/// 2026-11-30 03:12:02 CET.
pub(super) const T0: f64 = 1_796_004_722.0;

/// Central European time without a time zone database.
pub(super) fn cet() -> TimeZone {
    TimeZone::posix("CET-1CEST,M3.5.0,M10.5.0/3").unwrap()
}

pub(super) fn entries(log: Log, lines: &[String]) -> Vec<Record> {
    let (e, skipped) = parse(log, lines.join("\n").as_bytes());
    assert_eq!(skipped, 0, "{lines:?}");
    e
}

pub(super) fn liveness(ts: f64, id: &str, title: &str, changed: bool) -> String {
    let (second, decision, reason) = if changed {
        ("c3d4e5f6a7b8c9d0", "skip", "pane_active")
    } else {
        ("a1b2c3d4e5f6a7b8", "restart", "confirmed_dead")
    };
    serde_json::json!({
        "ts": ts, "id": id, "title": title, "profile": "default", "gap_s": 2.0,
        "reads": [{"ts": ts - 2.4, "status": "error", "substate": "crashed"},
                  {"ts": ts - 0.1, "status": "error"}],
        "pane": {"first": "a1b2c3d4e5f6a7b8", "second": second, "sampled": true,
                 "changed": changed, "empty": false},
        "decision": decision, "reason": reason, "dry_run": false,
    })
    .to_string()
}

pub(super) fn restart(ts: f64, id: &str, title: &str, action: &str, extra: Value) -> String {
    let mut v = serde_json::json!({
        "ts": ts, "id": id, "title": title, "profile": "default",
        "action": action, "dry_run": false,
    });
    if let (Some(v), Value::Object(extra)) = (v.as_object_mut(), extra) {
        v.extend(extra);
    }
    v.to_string()
}

pub(super) fn escalation(ts: f64, severity: &str, sid: Option<&str>, message: &str) -> String {
    serde_json::json!({"ts": ts, "severity": severity, "message": message, "sid": sid,
                       "telegram": sid.is_some()})
    .to_string()
}

/// A night of one conductor: a busy pane left alone, then a crash revived;
/// another conductor auth-held; a cascade alert.
pub(super) fn night() -> Vec<Record> {
    merge(vec![
        entries(
            Log::Liveness,
            &[
                liveness(T0, OPS, "conductor-ops", true),
                liveness(T0 + 60.0, OPS, "conductor-ops", false),
            ],
        ),
        entries(
            Log::Restart,
            &[
                restart(
                    T0 - 30.0,
                    AUTH,
                    "conductor-auth",
                    "skipped-alive",
                    serde_json::json!({"reason": "auth_hold"}),
                ),
                restart(T0 + 60.0, OPS, "conductor-ops", "restart", Value::Null),
                restart(
                    T0 + 66.25,
                    OPS,
                    "conductor-ops",
                    "restarted",
                    serde_json::json!({"final_status": "running"}),
                ),
                restart(
                    T0 + 70.0,
                    OPS,
                    "conductor-ops",
                    "skipped",
                    serde_json::json!({"reason": "budget_spent", "dry_run": true}),
                ),
            ],
        ),
        entries(
            Log::Escalations,
            &[
                escalation(
                    T0 - 29.0,
                    "auth-hold",
                    Some(AUTH),
                    "conductor-auth is auth-held: log in again",
                ),
                escalation(
                    T0 + 90.0,
                    "cascade-detected",
                    None,
                    "5 critical sessions in error at once",
                ),
            ],
        ),
    ])
}

pub(super) fn about() -> About {
    About {
        version: "0.1.0".into(),
        platform: "linux/x86_64".into(),
        settings: "AGENT_DECK_ROOT     /home/op/.agent-deck  (environment)\n\
                   TELEGRAM_BOT_TOKEN  (set, not shown)  (environment)\n"
            .into(),
    }
}

pub(super) fn lines_of(all: &[Record], id: Option<&str>) -> String {
    let t = titles(all);
    select(all, id, None)
        .iter()
        .map(|e| line(e, &t, &cet()))
        .collect::<Vec<_>>()
        .join("\n")
}
