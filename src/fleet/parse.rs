//! Turns what the agent-deck CLI prints into typed values.
//!
//! Pure functions over text, tolerant of every shape the real CLI is known to
//! print (`null`, `No profiles found.`, `No sessions found in profile …`,
//! error JSON on stdout) and strict about everything else: output that is not
//! understood is an error, never an empty fleet. Lists are read by
//! [`crate::fleet::listing`]: inside a list, one row that is not understood
//! (no `id`, a used field of the wrong type) is left out and counted; it
//! never makes the other rows unreadable. Logging the skipped rows is the
//! caller's job.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fleet::session::Live;
use crate::fleet::wire::{position_free, ShowRow};
use crate::spelled::spelled;
use crate::text::clip_reason;

/// Output that does not have the expected shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Garbage(pub String);

/// `session show <id> --json`.
pub(crate) fn show(stdout: &str) -> Result<Live, Garbage> {
    let v = json(stdout)?;
    if !v.is_object() || v.get("success") == Some(&Value::Bool(false)) {
        return Err(Garbage(format!(
            "expected a session object, got {}",
            preview(stdout)
        )));
    }
    let row: ShowRow = serde_json::from_str(stdout.trim()).map_err(|e| {
        Garbage(format!(
            "session object: {}",
            clip_reason(&position_free(&e))
        ))
    })?;
    let (_, live) = row.split();
    if live.status.is_none() {
        return Err(Garbage("session object has no status".into()));
    }
    // Read loosely: a tool of another type, or `""`, is none.
    let tool = str_field(&v, "tool").filter(|t| !t.is_empty());
    Ok(Live { tool, ..live })
}

/// What `session restart --json` answered on exit 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RestartAnswer {
    Restarted,
    /// A guard inside agent-deck declined on purpose.
    Skipped(String),
}

pub(crate) fn restart(stdout: &str) -> Result<RestartAnswer, Garbage> {
    let v = json(stdout)?;
    if v.get("skipped").and_then(Value::as_bool) == Some(true) {
        let reason = str_field(&v, "reason").unwrap_or_else(|| "no reason given".into());
        return Ok(RestartAnswer::Skipped(reason));
    }
    if v.get("success").and_then(Value::as_bool) == Some(true) {
        return Ok(RestartAnswer::Restarted);
    }
    Err(Garbage(format!(
        "unexpected restart answer {}",
        preview(stdout)
    )))
}

spelled! {
    /// Why agent-deck (1.16.10+, #2265) says a `session restart` or `session
    /// start` did not leave a live tmux session: the `reason` of its failure
    /// JSON, spelled as agent-deck prints it.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
    pub(crate) enum SpawnReason {
        /// The existence probe never settled: the session may be up.
        Unverified = "spawn_unverified",
        /// The new process exited at once (for example a resume of a
        /// conversation that no longer exists, #2099): a start cannot fix it.
        DiedFast = "spawn_died_fast",
        /// The tmux session was gone and nothing recorded why.
        TmuxSessionMissing = "tmux_session_missing",
    }
    unknown => Other
}

/// What a failed spawn's JSON said, pane text already reduced to a digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SpawnFailure {
    pub reason: SpawnReason,
    /// The digest of `spawn_failure.dying_output` (the last pane snapshot),
    /// when it is a non-empty string.
    pub dying_output_digest: Option<String>,
    /// `spawn_failure.elapsed_ms`: from the spawn to the death agent-deck saw.
    pub elapsed_ms: Option<u64>,
}

/// A reason this release does not know is kept, but bounded and on one line.
const REASON_MAX_CHARS: usize = 60;

/// The spawn failure in a failed `session restart|start --json` answer: a
/// JSON object with `success: false` and a string `reason` (agent-deck
/// 1.16.10+, #2265). None for every other answer, 1.14.0's included.
pub(crate) fn spawn_failure(stdout: &str) -> Option<SpawnFailure> {
    let v: Value = serde_json::from_str(stdout.trim()).ok()?;
    if v.get("success") != Some(&Value::Bool(false)) {
        return None;
    }
    let reason = v.get("reason")?.as_str()?;
    let reason = match SpawnReason::deserialize(Value::from(reason)) {
        Ok(SpawnReason::Other(text)) => {
            SpawnReason::Other(crate::text::printable(&text, REASON_MAX_CHARS))
        }
        Ok(known) => known,
        Err(_) => return None,
    };
    let record = &v["spawn_failure"];
    let dying = record.get("dying_output").and_then(Value::as_str);
    Some(SpawnFailure {
        reason,
        dying_output_digest: dying
            .filter(|d| !d.trim().is_empty())
            .map(crate::digest::digest),
        elapsed_ms: record.get("elapsed_ms").and_then(Value::as_u64),
    })
}

/// The message of a failed spawn with its pane text left out: agent-deck
/// ends its `error` with `: <dying output>`, and pane text never reaches a
/// log or a record. When the dying output cannot be found and cut, only the
/// reason is said.
pub(crate) fn spawn_error_message(stdout: &str, stderr: &str, f: &SpawnFailure) -> String {
    let Some(digest) = &f.dying_output_digest else {
        return error_message(stdout, stderr);
    };
    let v: Value = serde_json::from_str(stdout.trim()).unwrap_or_default();
    let error = str_field(&v, "error").unwrap_or_default();
    let dying = str_field(&v["spawn_failure"], "dying_output").unwrap_or_default();
    let head = match error.find(dying.trim()) {
        Some(at) => error[..at].trim_end_matches([' ', ':']).to_owned(),
        None => format!("the spawn failed: {}", f.reason),
    };
    clip(&format!("{head} (dying output withheld, digest {digest})"))
}

spelled! {
    /// How far a `session send` got, as the `delivery` key of its answer says
    /// (spelled as agent-deck prints it).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    pub(crate) enum Delivery {
        Submitted = "submitted",
        Unverified = "unverified",
        /// The text reached the pane, but agent-deck saw no sign it was acted
        /// on (a non-Claude tool and a message of 12+ characters).
        Typed = "typed",
        LineTooLong = "line_too_long",
        TypedNotSubmitted = "typed_not_submitted",
        NoEvidence = "no_evidence",
        SendFailed = "send_failed",
        /// A value this release does not know.
        #[serde(other)]
        Other = "other",
    }
}

impl Delivery {
    /// The message is in the pane although the send answered a failure.
    pub(crate) fn arrived(self) -> bool {
        self == Delivery::Typed
    }

    /// A failed answer after which the agent may have taken the text as
    /// its turn all the same: it reached the pane (`typed`), or agent-deck
    /// saw no sign either way (`no_evidence`: 1.14.0 says so of most
    /// `/clear`s that worked). Whether it did is for the turn to tell.
    pub(crate) fn maybe_submitted(self) -> bool {
        matches!(self, Delivery::Typed | Delivery::NoEvidence)
    }
}

/// The `delivery` of a JSON answer on stdout (a failed `session send`
/// prints one with `DELIVERY_FAILED`), if it has a string one.
pub(crate) fn delivery(stdout: &str) -> Option<Delivery> {
    let v: Value = serde_json::from_str(stdout.trim()).ok()?;
    let d = v.get("delivery")?;
    d.is_string().then(|| Delivery::deserialize(d).ok())?
}

/// The most useful one-line message for a failed call: the `error` of the
/// JSON error object (which `--json` prints on stdout), else stderr, else
/// stdout. Bounded in length.
pub(crate) fn error_message(stdout: &str, stderr: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(stdout.trim()) {
        if let Some(e) = str_field(&v, "error") {
            return clip(&e);
        }
    }
    for text in [stderr, stdout] {
        if let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty()) {
            return clip(line.strip_prefix("Error: ").unwrap_or(line));
        }
    }
    "(no output)".into()
}

fn json(stdout: &str) -> Result<Value, Garbage> {
    serde_json::from_str(stdout.trim())
        .map_err(|_| Garbage(format!("not JSON: {}", preview(stdout))))
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn clip(s: &str) -> String {
    crate::text::clip_chars(s, 300)
}

/// A short, single-line look at unexpected output for a log line, quoted,
/// escaped by the one policy of [`crate::text`].
pub(crate) fn preview(s: &str) -> String {
    format!("\"{}\"", crate::text::printable(s.trim(), 60))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::session::Status;

    #[test]
    fn a_preview_is_one_line_escaped_like_every_shown_text() {
        let p = preview("  boom\nline two \u{202e}evil\u{2028}x  ");
        assert!(
            !p.contains('\n') && !p.contains('\u{202e}') && !p.contains('\u{2028}'),
            "{p}"
        );
        assert!(p.starts_with("\"boom") && p.ends_with("x\""), "{p}");
        assert!(preview(&"y".repeat(500)).chars().count() <= 63);
    }

    #[test]
    fn show_reads_auth_hold_and_substate() {
        let out = r#"{"auth_hold":{"boot_attempts":1,"evidence":"secret pane","reason":"auth_death","remedy":"r","ts":1},
            "id":"x","status":"error","substate":"auth-401","profile":""}"#;
        let l = show(out).unwrap();
        assert_eq!(l.status, Some(Status::Error));
        assert_eq!(l.auth_hold.as_deref(), Some("auth_death"));
        assert_eq!(l.substate.as_deref(), Some("auth-401"));
        assert!(show("null").is_err());
        assert!(
            show(r#"{"code":"NOT_FOUND","error":"session 'x' not found","success":false}"#)
                .is_err()
        );
    }

    #[test]
    fn show_of_the_newer_shape_is_read() {
        // `session show --json` from 1.16.11 on: every added key, some null.
        let out = r#"{"id":"x","status":"waiting","substate":"interactive-menu","profile":"work",
            "account":"personal","order":2,"pin":true,"hook_status":"waiting","hook_status_fresh":false,
            "wrapper":null,"substate_detail":null,"viewers":[{"name":"/dev/pts/1","width":80,"height":24}],
            "codex_session_id":"019a","resolved_codex_home":"/h/.codex","transcript_path":"/t.jsonl",
            "transcript_ids":["a"],"codex_hooks":{"installed":true},"background_work":{"active":false},
            "status_source":"hook","can_fork":true,"effort":null,"claude_session_id":"c1"}"#;
        let l = show(out).unwrap();
        assert_eq!(l.status, Some(Status::Waiting));
        assert_eq!(l.substate.as_deref(), Some("interactive-menu"));
        assert_eq!(l.claude_session_id.as_deref(), Some("c1"));
    }

    #[test]
    fn restart_answers() {
        assert_eq!(
            restart(r#"{"id":"x","success":true,"title":"t"}"#).unwrap(),
            RestartAnswer::Restarted
        );
        let skipped = r#"{"id":"x","reason":"within 1m0s freshness window","skipped":true,"success":true,"title":"t"}"#;
        assert_eq!(
            restart(skipped).unwrap(),
            RestartAnswer::Skipped("within 1m0s freshness window".into())
        );
        assert!(restart("garbage").is_err());
    }

    /// A failed restart as agent-deck 1.16.10+ prints it (#2265,
    /// `spawnFailureOutput` in `cmd/agent-deck/session_cmd.go`).
    const DIED_FAST: &str = r#"{"code":"INVALID_OPERATION","error":"failed to restart session: tmux session \"agentdeck_conductor-ops_3f9c2a1b\" is gone: spawn_died_fast (exited after 980ms): No conversation found to continue","id":"3f9c2a1b-1755891234","reason":"spawn_died_fast","spawn_failure":{"command":"claude -c","dying_output":"No conversation found to continue\n","elapsed_ms":980,"reason":"spawn_died_fast","ts":1755891300},"success":false,"title":"conductor-ops","tmux":"agentdeck_conductor-ops_3f9c2a1b"}"#;

    #[test]
    fn a_failed_spawn_says_its_reason_and_keeps_only_a_digest_of_the_pane() {
        let f = spawn_failure(DIED_FAST).unwrap();
        assert_eq!(f.reason, SpawnReason::DiedFast);
        assert_eq!(f.elapsed_ms, Some(980));
        let digest = crate::digest::digest("No conversation found to continue\n");
        assert_eq!(f.dying_output_digest.as_deref(), Some(digest.as_str()));
        let msg = spawn_error_message(DIED_FAST, "", &f);
        assert!(!msg.contains("No conversation"), "{msg}");
        assert!(
            msg.starts_with("failed to restart session: tmux session")
                && msg.contains("spawn_died_fast (exited after 980ms)")
                && msg.ends_with(&format!("(dying output withheld, digest {digest})")),
            "{msg}"
        );
        // The dying output not where it is expected: only the reason is said.
        let moved = DIED_FAST.replace(
            ": No conversation found to continue\"",
            ": No  conversation\"",
        );
        let msg = spawn_error_message(&moved, "", &spawn_failure(&moved).unwrap());
        assert!(!msg.contains("conversation"), "{msg}");
        assert!(
            msg.starts_with("the spawn failed: spawn_died_fast"),
            "{msg}"
        );
    }

    #[test]
    fn every_spawn_reason_is_read_and_other_answers_are_no_spawn_failure() {
        let unverified = r#"{"code":"INVALID_OPERATION","error":"failed to start session: probe timed out","id":"x","reason":"spawn_unverified","success":false,"title":"t"}"#;
        let f = spawn_failure(unverified).unwrap();
        assert_eq!(
            (f.reason, f.dying_output_digest, f.elapsed_ms),
            (SpawnReason::Unverified, None, None)
        );
        assert_eq!(
            spawn_error_message(unverified, "", &spawn_failure(unverified).unwrap()),
            "failed to start session: probe timed out"
        );
        let missing = r#"{"code":"INVALID_OPERATION","error":"e","reason":"tmux_session_missing","success":false,"tmux":"agentdeck_t_x"}"#;
        assert_eq!(
            spawn_failure(missing).unwrap().reason,
            SpawnReason::TmuxSessionMissing
        );
        let other = format!(
            r#"{{"error":"e","reason":"tmux_start_failed\n{}","spawn_failure":{{"elapsed_ms":0,"dying_output":"  "}},"success":false}}"#,
            "x".repeat(500)
        );
        let f = spawn_failure(&other).unwrap();
        let SpawnReason::Other(text) = &f.reason else {
            panic!("{f:?}")
        };
        assert!(
            text.starts_with("tmux_start_failed\\n") && text.chars().count() <= 61,
            "{text}"
        );
        assert_eq!((f.dying_output_digest, f.elapsed_ms), (None, Some(0)));
        for no in [
            // 1.14.0's failure, and its exit-0 answers.
            r#"{"code":"INVALID_OPERATION","error":"failed to restart session: x","success":false}"#,
            r#"{"id":"x","reason":"started 12s ago","skipped":true,"success":true,"title":"t"}"#,
            r#"{"reason":7,"success":false}"#,
            "Error: session 't' is already running",
            "null",
        ] {
            assert_eq!(spawn_failure(no), None, "{no}");
        }
    }

    #[test]
    fn error_message_prefers_json_on_stdout() {
        let out = r#"{"code":"NOT_FOUND","error":"session 'x' not found","success":false}"#;
        assert_eq!(error_message(out, ""), "session 'x' not found");
        assert_eq!(
            error_message("", "Error: session 't' is already running\n"),
            "session 't' is already running"
        );
        assert_eq!(error_message("", ""), "(no output)");
        assert!(error_message(&"x".repeat(1000), "").chars().count() <= 301);
    }

    #[test]
    fn a_failed_send_says_how_far_the_message_got() {
        let typed = r#"{"code":"DELIVERY_FAILED","delivery":"typed","error":"message typed but not acted on","session_id":"a-1","session_title":"w","submitted":false,"success":false}"#;
        assert_eq!(delivery(typed), Some(Delivery::Typed));
        assert_eq!(error_message(typed, ""), "message typed but not acted on");
        let other = r#"{"code":"DELIVERY_FAILED","delivery":"typed_not_submitted","error":"e","success":false}"#;
        assert_eq!(delivery(other), Some(Delivery::TypedNotSubmitted));
        let new =
            r#"{"code":"DELIVERY_FAILED","delivery":"carrier_pigeon","error":"e","success":false}"#;
        assert_eq!(delivery(new), Some(Delivery::Other));
        let none = r#"{"code":"NOT_FOUND","error":"session 'x' not found","success":false}"#;
        assert_eq!(delivery(none), None);
        assert_eq!(delivery("Error: boom"), None);
        assert_eq!(delivery(r#"{"delivery":7}"#), None);
        for (d, text) in [
            (Delivery::Submitted, "submitted"),
            (Delivery::Unverified, "unverified"),
            (Delivery::Typed, "typed"),
            (Delivery::LineTooLong, "line_too_long"),
            (Delivery::TypedNotSubmitted, "typed_not_submitted"),
            (Delivery::NoEvidence, "no_evidence"),
            (Delivery::SendFailed, "send_failed"),
        ] {
            assert_eq!(d.as_str(), text);
            assert_eq!(serde_json::to_string(&d).unwrap(), format!("\"{text}\""));
            assert_eq!(delivery(&format!(r#"{{"delivery":"{text}"}}"#)), Some(d));
        }
    }
}

#[cfg(test)]
mod props {
    //! Whatever the CLI prints, these parsers never panic and what they give
    //! is bounded by what they were given.

    use proptest::prelude::*;

    use super::*;
    use crate::fleet::props::{garbage_within, live_within};
    use crate::testing::{input, json, lossy, text, CASES};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(CASES))]

        #[test]
        fn show_never_panics_and_is_bounded(bytes in input()) {
            let out = lossy(&bytes);
            match show(&out) {
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
            match restart(&out) {
                Ok(RestartAnswer::Skipped(reason)) => prop_assert!(reason.len() <= out.len()),
                Ok(RestartAnswer::Restarted) => {}
                Err(g) => prop_assert!(garbage_within(&g)),
            }
        }

        #[test]
        fn spawn_failures_never_panic_and_never_keep_the_dying_output(
            bytes in input(),
            reason in json(),
            dying in text(),
            elapsed in json(),
        ) {
            let dying = format!("PANE-{dying}");
            let answer = serde_json::json!({
                "error": format!("failed to restart session: gone: {dying}"),
                "reason": reason, "success": false,
                "spawn_failure": {"dying_output": dying, "elapsed_ms": elapsed},
            })
            .to_string();
            for out in [lossy(&bytes), answer] {
                if let Some(f) = spawn_failure(&out) {
                    prop_assert!(f.reason.as_str().chars().count() <= 61);
                    let msg = spawn_error_message(&out, "", &f);
                    prop_assert!(msg.chars().count() <= 301);
                    prop_assert!(f.dying_output_digest.is_none() || !msg.contains("PANE-"), "{}", msg);
                }
            }
        }

        #[test]
        fn error_messages_never_panic_and_are_bounded(out in input(), err in input()) {
            let msg = error_message(&lossy(&out), &lossy(&err));
            prop_assert!(msg.chars().count() <= 301);
        }
    }
}
