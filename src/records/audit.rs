//! The JSON-lines audit records (`restart.log`, `liveness.log`,
//! `escalations.log`) as typed structs. Pane text, auth-hold evidence and
//! secrets have no field here, so they cannot be written; each text field is
//! clipped to [`MAX_FIELD_BYTES`].

use serde::{Deserialize, Serialize};

pub use crate::decide::liveness::{LivenessReason, PaneSamples, StatusRead};
pub use crate::decide::outcomes::{RestartAction, Severity};
use crate::fleet::panes::Proof;

pub const RESTART_LOG: &str = "restart.log";
pub const LIVENESS_LOG: &str = "liveness.log";
pub const ESCALATIONS_LOG: &str = "escalations.log";

/// The longest a text field of a record may be, in bytes (SPEC §11).
pub(crate) const MAX_FIELD_BYTES: usize = 4096;

/// `s` cut to at most [`MAX_FIELD_BYTES`], `…` marking the cut.
pub(crate) fn clip(s: &str) -> String {
    crate::text::clip_bytes(s, MAX_FIELD_BYTES)
}

/// Clips each of `fields` that is longer than [`MAX_FIELD_BYTES`].
fn clip_each<'a>(fields: impl IntoIterator<Item = &'a mut String>) {
    for f in fields.into_iter().filter(|f| f.len() > MAX_FIELD_BYTES) {
        *f = clip(f);
    }
}

/// One line of `restart.log`.
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck_for_s: Option<f64>,
    /// Why agent-deck (1.16.10+, #2265) says a failed spawn did not live:
    /// `spawn_died_fast`, `spawn_unverified`, `tmux_session_missing`, ….
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawn_reason: Option<String>,
    /// The digest of the dying process's last pane snapshot (never the text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dying_output_digest: Option<String>,
    /// Milliseconds from that spawn to the death agent-deck saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
    /// A stall's kind (SPEC §14): `usage-limit`, `api-overload`, ….
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Where a stall's evidence came from: `substate` or `pane`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// When a stall's resume is due, and where that time came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_at: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_from: Option<String>,
    /// Which resume of the stall this is, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

impl RestartRecord {
    /// A record about `session`, the optional fields unset.
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
        }
    }

    /// The record with every text field clipped.
    pub fn clipped(&self) -> RestartRecord {
        let mut r = self.clone();
        clip_each([&mut r.id, &mut r.title, &mut r.profile]);
        clip_each(r.reason.iter_mut().chain(&mut r.final_status));
        clip_each(r.spawn_reason.iter_mut().chain(&mut r.dying_output_digest));
        clip_each(
            r.kind
                .iter_mut()
                .chain(&mut r.evidence)
                .chain(&mut r.resume_from),
        );
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
    /// The record with every text field clipped.
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
    /// The record with every text field clipped.
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
}
