//! The JSON-lines audit records (`restart.log`, `liveness.log`,
//! `escalations.log`) as typed structs. Pane text, auth-hold evidence and
//! secrets have no field here, so they cannot be written; each text field is
//! clipped to [`MAX_FIELD_BYTES`].

use serde::{Deserialize, Serialize};

pub use crate::decide::outcomes::{RestartAction, Severity};
pub use crate::decide::restart::liveness::{LivenessReason, PaneSamples, StatusRead};
use crate::fleet::panes::Proof;

pub const RESTART_LOG: &str = "restart.log";
pub const LIVENESS_LOG: &str = "liveness.log";
pub const ESCALATIONS_LOG: &str = "escalations.log";

/// The longest a text field of a record may be, in bytes (SPEC §11).
pub(crate) const MAX_FIELD_BYTES: usize = 4096;

/// Clips each of `fields` that is longer than [`MAX_FIELD_BYTES`], `…`
/// marking the cut.
fn clip_each<'a>(fields: impl IntoIterator<Item = &'a mut String>) {
    for f in fields.into_iter().filter(|f| f.len() > MAX_FIELD_BYTES) {
        *f = crate::text::clip_bytes(f, MAX_FIELD_BYTES);
    }
}

/// One line of `restart.log`, its [`Detail`]'s keys last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RestartRecord {
    pub ts: f64,
    pub id: String,
    pub title: String,
    pub profile: String,
    pub action: RestartAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub dry_run: bool,
    #[serde(flatten)]
    pub detail: Detail,
}

/// What a record says beyond its action and reason, as keys of the record.
/// Read by its keys, not its action (a `drill` once had `final_status`): the
/// first shape in this order that fits, other keys ignored; else `Plain`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Detail {
    /// A stall seen, resumed or ended.
    Stall(StallDetail),
    /// A restart or start whose spawn failed.
    SpawnFailed(SpawnDetail),
    /// `rate-limited`: how long restarts of it are held.
    RateLimited { backoff_s: f64 },
    /// `restarted`: the status it came back with.
    Restarted { final_status: String },
    /// A stale session removed (or not): how long it had been in error.
    Stale { stuck_for_s: f64 },
    /// Nothing more.
    Plain {},
}

/// A stall (SPEC §14): its kind, where its evidence came from (`substate`,
/// `pane`), when its resume is due and from where, which resume this is (from 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StallDetail {
    pub kind: String,
    pub evidence: String,
    pub resume_at: f64,
    pub resume_from: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// A full context's remedy (SPEC §15), as `status` says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
}

/// A failed spawn as agent-deck (1.16.10+, #2265) tells it: why (`spawn_died_fast`,
/// …), the digest of the dying pane (never the text), the milliseconds it lived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpawnDetail {
    pub spawn_reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dying_output_digest: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
}

impl RestartRecord {
    /// A record about `session` with no [`Detail`].
    pub fn new(
        ts: f64,
        session: &crate::fleet::session::Session,
        action: RestartAction,
        reason: Option<String>,
        dry_run: bool,
    ) -> RestartRecord {
        RestartRecord {
            ts,
            id: session.id.clone(),
            title: session.title.clone(),
            profile: session.profile.clone(),
            action,
            reason,
            dry_run,
            detail: Detail::Plain {},
        }
    }

    pub fn with(self, detail: Detail) -> RestartRecord {
        RestartRecord { detail, ..self }
    }

    pub fn clipped(&self) -> RestartRecord {
        let mut r = self.clone();
        clip_each([&mut r.id, &mut r.title, &mut r.profile]);
        clip_each(&mut r.reason);
        match &mut r.detail {
            Detail::Stall(d) => clip_each([&mut d.kind, &mut d.evidence, &mut d.resume_from]),
            Detail::SpawnFailed(d) => {
                clip_each(std::iter::once(&mut d.spawn_reason).chain(&mut d.dying_output_digest));
            }
            Detail::Restarted { final_status } => clip_each([final_status]),
            _ => {}
        }
        r
    }
}

/// One line of `liveness.log`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LivenessRecord {
    pub ts: f64,
    pub id: String,
    pub title: String,
    pub profile: String,
    pub gap_s: f64,
    pub reads: Vec<StatusRead>,
    pub pane: PaneSamples,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_hold_reason: Option<String>,
    pub decision: String,
    pub reason: LivenessReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consecutive_skips: Option<u32>,
    pub dry_run: bool,
    /// `process_exited` when the kernel proved the death and the pane was
    /// not sampled (SPEC §5.3's last paragraph); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<Proof>,
}

impl LivenessRecord {
    pub fn clipped(&self) -> LivenessRecord {
        let mut r = self.clone();
        clip_each([&mut r.id, &mut r.title, &mut r.profile, &mut r.decision]);
        clip_each([&mut r.pane.first, &mut r.pane.second]);
        clip_each(&mut r.auth_hold_reason);
        for read in &mut r.reads {
            clip_each(std::iter::once(&mut read.status).chain(&mut read.substate));
        }
        r
    }
}

/// One line of `escalations.log`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EscalationRecord {
    pub ts: f64,
    pub severity: Severity,
    pub message: String,
    pub sid: Option<String>,
    pub telegram: bool,
    #[serde(default)]
    pub dry_run: bool,
}

impl EscalationRecord {
    pub fn clipped(&self) -> EscalationRecord {
        let mut r = self.clone();
        clip_each(std::iter::once(&mut r.message).chain(&mut r.sid));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn clipping_cuts_on_a_character_boundary() {
        let clip = |s: &str| {
            let mut s = s.to_owned();
            clip_each([&mut s]);
            s
        };
        for pad in 0..4 {
            let s = format!("{}{}", "a".repeat(pad), "한".repeat(3000));
            let c = clip(&s);
            assert!(c.len() <= MAX_FIELD_BYTES && c.ends_with('…'), "{pad}");
            assert!(s.starts_with(c.trim_end_matches('…')));
        }
        assert_eq!(clip("short"), "short");
        let exact = "b".repeat(MAX_FIELD_BYTES);
        assert_eq!(clip(&exact), exact);
    }

    /// `RestartRecord` as it was before its per-action fields became one
    /// [`Detail`] (b8c8e09): the layout of every `restart.log` line written
    /// so far, kept here to prove the bytes did not change.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Flat {
        ts: f64,
        id: String,
        title: String,
        profile: String,
        action: RestartAction,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        dry_run: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        backoff_s: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        final_status: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stuck_for_s: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spawn_reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dying_output_digest: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        elapsed_ms: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        evidence: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resume_at: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resume_from: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        remedy: Option<String>,
    }

    impl Flat {
        /// `r` as the old layout held it.
        fn of(r: &RestartRecord) -> Flat {
            let mut f = Flat {
                ts: r.ts,
                id: r.id.clone(),
                title: r.title.clone(),
                profile: r.profile.clone(),
                action: r.action.clone(),
                reason: r.reason.clone(),
                dry_run: r.dry_run,
                backoff_s: None,
                final_status: None,
                stuck_for_s: None,
                spawn_reason: None,
                dying_output_digest: None,
                elapsed_ms: None,
                kind: None,
                evidence: None,
                resume_at: None,
                resume_from: None,
                attempt: None,
                remedy: None,
            };
            match r.detail.clone() {
                Detail::Stall(d) => {
                    (f.kind, f.evidence) = (Some(d.kind), Some(d.evidence));
                    (f.resume_at, f.resume_from) = (Some(d.resume_at), Some(d.resume_from));
                    (f.attempt, f.remedy) = (d.attempt, d.remedy);
                }
                Detail::SpawnFailed(d) => {
                    f.spawn_reason = Some(d.spawn_reason);
                    f.dying_output_digest = d.dying_output_digest;
                    f.elapsed_ms = d.elapsed_ms;
                }
                Detail::RateLimited { backoff_s } => f.backoff_s = Some(backoff_s),
                Detail::Restarted { final_status } => f.final_status = Some(final_status),
                Detail::Stale { stuck_for_s } => f.stuck_for_s = Some(stuck_for_s),
                Detail::Plain {} => {}
            }
            f
        }
    }

    fn record(action: &str, reason: Option<&str>, detail: Detail) -> RestartRecord {
        RestartRecord {
            ts: 1_796_062_857.913_443_3,
            id: "3f9c2a1b-1755891234".into(),
            title: "conductor-ops".into(),
            profile: "default".into(),
            action: serde_json::from_value(serde_json::json!(action)).unwrap(),
            reason: reason.map(str::to_owned),
            dry_run: false,
            detail,
        }
    }

    fn stall(resume_at: f64, attempt: Option<u32>) -> Detail {
        Detail::Stall(StallDetail {
            kind: "usage-limit".into(),
            evidence: "substate".into(),
            resume_at,
            resume_from: "banner".into(),
            attempt,
            remedy: None,
        })
    }

    fn spawn(digest: Option<&str>, elapsed_ms: Option<u64>) -> Detail {
        Detail::SpawnFailed(SpawnDetail {
            spawn_reason: "spawn_died_fast".into(),
            dying_output_digest: digest.map(str::to_owned),
            elapsed_ms,
        })
    }

    /// One record of each detail the daemon writes, as the daemon writes it.
    fn one_of_each() -> Vec<RestartRecord> {
        let why = Some("exited 1: failed to restart session");
        vec![
            record("restart", None, Detail::Plain {}),
            record("skipped-alive", Some("pane_active"), Detail::Plain {}),
            record(
                "restarted",
                None,
                Detail::Restarted {
                    final_status: "running".into(),
                },
            ),
            record("restart-failed", why, Detail::Plain {}),
            record(
                "restart-failed",
                why,
                spawn(Some("0123456789abcdef"), Some(980)),
            ),
            record("restart-failed", why, spawn(None, None)),
            record(
                "rate-limited",
                None,
                Detail::RateLimited { backoff_s: 900.0 },
            ),
            record(
                "rate-limited",
                Some("usage-limit: resets 5:59am (UTC)"),
                Detail::RateLimited {
                    backoff_s: 7_137.000_000_000_1,
                },
            ),
            record(
                "stale-removed",
                Some("in error for 302s"),
                Detail::Stale { stuck_for_s: 301.7 },
            ),
            record(
                "stale-remove-failed",
                None,
                Detail::Stale {
                    stuck_for_s: 0.1 + 0.2,
                },
            ),
            record("stall-detected", None, stall(1_774_760_520.0, None)),
            record("resume-sent", None, stall(1_774_760_520.123_456_7, Some(1))),
            record(
                "resume-failed",
                Some("no turn started"),
                stall(0.3, Some(2)),
            ),
            record("drill", Some("killed it (running)"), Detail::Plain {}),
        ]
    }

    #[test]
    fn every_detail_is_written_in_the_bytes_of_the_flat_layout_and_read_back() {
        for r in one_of_each() {
            let (line, old) = (serde_json::to_string(&r).unwrap(), Flat::of(&r));
            assert_eq!(line, serde_json::to_string(&old).unwrap());
            assert_eq!(
                serde_json::from_str::<RestartRecord>(&line).unwrap(),
                r,
                "{line}"
            );
            assert_eq!(serde_json::from_str::<Flat>(&line).unwrap(), old, "{line}");
            let clipped = serde_json::to_string(&r.clipped()).unwrap();
            assert_eq!(clipped, line, "short fields are kept whole");
        }
        let golden = [
            r#"{"ts":1796062857.9134433,"id":"3f9c2a1b-1755891234","title":"conductor-ops","profile":"default","action":"restart-failed","reason":"exited 1: failed to restart session","dry_run":false,"spawn_reason":"spawn_died_fast","dying_output_digest":"0123456789abcdef","elapsed_ms":980}"#,
            r#"{"ts":1796062857.9134433,"id":"3f9c2a1b-1755891234","title":"conductor-ops","profile":"default","action":"resume-sent","dry_run":false,"kind":"usage-limit","evidence":"substate","resume_at":1774760520.1234567,"resume_from":"banner","attempt":1}"#,
        ];
        let lines: Vec<String> = (one_of_each().iter())
            .map(|r| serde_json::to_string(r).unwrap())
            .collect();
        assert_eq!([&lines[4], &lines[11]], golden);
    }

    #[test]
    fn a_line_is_read_by_its_keys_and_no_line_fails_for_its_detail() {
        let head = r#""ts":5,"id":"a-1","title":"t","profile":"p","action":"#;
        let read = |rest: &str| -> RestartRecord {
            let line = format!("{{{head}{rest}}}");
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"))
        };
        let restarted = Detail::Restarted {
            final_status: "error".into(),
        };
        // An older drill carried the status it killed; a newer key is ignored.
        let r = read(r#""drill","dry_run":false,"final_status":"error","pane_text":"x""#);
        assert_eq!(
            (r.ts, r.action.as_str(), &r.detail),
            (5.0, "drill", &restarted)
        );
        // A whole number where a float is written; null where nothing is.
        let r = read(r#""rate-limited","dry_run":true,"backoff_s":2"#);
        assert_eq!(r.detail, Detail::RateLimited { backoff_s: 2.0 });
        let r = read(r#""restarted","dry_run":false,"final_status":null"#);
        assert_eq!(r.detail, Detail::Plain {});
        // An action this version does not write, and half a stall.
        let r = read(r#""stall-retried","reason":"r","dry_run":false,"kind":"usage-limit""#);
        assert_eq!(
            (r.action.as_str(), r.reason.as_deref()),
            ("stall-retried", Some("r"))
        );
        assert_eq!(r.detail, Detail::Plain {});
    }

    proptest::proptest! {
        #[test]
        fn any_detail_has_the_flat_layouts_bytes_and_reads_back_equal(
            (shape, x, text, n, opt) in (
                0..6u8,
                proptest::num::f64::NORMAL | proptest::num::f64::ZERO | proptest::num::f64::SUBNORMAL,
                "\\PC{0,12}",
                proptest::prelude::any::<u32>(),
                proptest::prelude::any::<bool>(),
            )
        ) {
            let detail = match shape {
                0 => Detail::Stall(StallDetail {
                    kind: text.clone(),
                    evidence: text.clone(),
                    resume_at: x,
                    resume_from: text.clone(),
                    attempt: opt.then_some(n),
                    remedy: opt.then_some(text),
                }),
                1 => Detail::SpawnFailed(SpawnDetail {
                    spawn_reason: text.clone(),
                    dying_output_digest: opt.then_some(text),
                    elapsed_ms: (!opt).then_some(u64::from(n) << 20),
                }),
                2 => Detail::RateLimited { backoff_s: x },
                3 => Detail::Restarted { final_status: text },
                4 => Detail::Stale { stuck_for_s: x },
                _ => Detail::Plain {},
            };
            let r = RestartRecord { ts: x, ..record("restarted", opt.then_some("why"), detail) };
            let line = serde_json::to_string(&r).unwrap();
            proptest::prop_assert_eq!(&line, &serde_json::to_string(&Flat::of(&r)).unwrap());
            proptest::prop_assert_eq!(serde_json::from_str::<RestartRecord>(&line).unwrap(), r);
        }
    }
}
