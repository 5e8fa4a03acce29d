//! Liveness confirmation: the last look before a pane is torn down.
//!
//! The status is re-read, the pane sampled twice a gap apart, the status read
//! again; any sign of life is a skip with its reason. A death the kernel
//! proved (the pane watch's [`Proof::ProcessExited`]) has no pane left to
//! sample: two status reads a short settle apart decide it (SPEC §5.3's
//! last paragraph, as #38 amends it: agent-deck's own restart through a new
//! tmux session reads `error` for an instant). The sequence runs over
//! a [`Probe`], so the reads, the gap and the clock are all injectable; the
//! result is the evidence that goes to `liveness.log`, digests only; its
//! types ([`StatusRead`], [`PaneSamples`]) are defined here and written by
//! [`crate::records::audit`], never the other way round.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::decide::probe::Probe;
use crate::digest::digest;
use crate::fleet::panes::Proof;
use crate::fleet::session::Status;
use crate::spelled::spelled;

/// One status read during liveness confirmation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusRead {
    pub ts: f64,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub substate: Option<String>,
}

/// The two pane samples, as digests only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PaneSamples {
    pub first: String,
    pub second: String,
    pub sampled: bool,
    pub changed: bool,
    pub empty: bool,
}

spelled! {
    /// Why liveness confirmation decided what it did: the `reason` of a
    /// `liveness.log` record.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    pub enum LivenessReason {
        /// Dead: restart it.
        ConfirmedDead = "confirmed_dead",
        StatusUnreadable = "status_unreadable",
        RecoveredBeforeRestart = "recovered_before_restart",
        AuthHold = "auth_hold",
        ShuttingDown = "shutting_down",
        /// Exactly one of the two pane captures failed: the samples cannot be compared.
        PaneUnreadable = "pane_unreadable",
        PaneActive = "pane_active",
    }
}

/// What was seen, for the record, and the outcome.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Evidence {
    pub reads: Vec<StatusRead>,
    pub pane: PaneSamples,
    pub auth_hold_reason: Option<String>,
    /// `confirmed_dead`: restart it; any other: leave it alone, for that reason.
    pub reason: LivenessReason,
    /// The kernel's proof the short path leaned on; `None` when the pane
    /// was sampled as usual.
    pub proof: Option<Proof>,
}

/// Whether `proof` lets the pane samples and their gap be skipped: a
/// process the kernel saw exit, whose session tmux shows gone or dead, or
/// a pane whose process is a bare shell (its agent gone; a shell's pane
/// says nothing by moving or not). A name that is merely gone from a
/// listing may belong to an agent that outlived its session, so it is
/// sampled as any other `error`.
pub(crate) fn skips_the_gap(proof: Option<Proof>) -> bool {
    matches!(proof, Some(Proof::ProcessExited | Proof::AgentGone))
}

/// The longest a kernel-proven death waits between its two status reads.
const KERNEL_SETTLE: Duration = Duration::from_millis(500);

/// How long a death seen as `proof` waits between its status reads: the
/// settle for a pane whose process exited (a restart someone else made
/// replaces it within it), none for a bare shell, else the gap.
pub(crate) fn settle(proof: Option<Proof>, gap: Duration) -> Duration {
    match proof {
        Some(Proof::ProcessExited) => gap.min(KERNEL_SETTLE),
        Some(Proof::AgentGone) => Duration::ZERO,
        _ => gap,
    }
}

/// Runs the confirmation sequence of SPEC §5.3; `proof`: how the death was
/// seen, when the pane watch saw it. A kernel-proven death (see
/// [`skips_the_gap`]) samples no pane: its status and auth hold are read,
/// and, for an exited process, read again after [`settle`], so that an
/// `error` agent-deck reads for the instant its own restart takes is no
/// confirmation.
pub(crate) fn confirm(probe: &dyn Probe, gap: Duration, proof: Option<Proof>) -> Evidence {
    let mut ev = Evidence {
        reads: Vec::new(),
        pane: PaneSamples::default(),
        auth_hold_reason: None,
        reason: LivenessReason::ConfirmedDead,
        proof: None,
    };
    let at_rest_is_dead = proof == Some(Proof::AgentGone);
    if let Some(skip) = read_status(probe, &mut ev, true, at_rest_is_dead) {
        ev.reason = skip;
        return ev;
    }
    if skips_the_gap(proof) {
        ev.proof = proof;
        let settle = settle(proof, gap);
        if settle.is_zero() {
            return ev;
        }
        if !probe.wait(settle) {
            ev.reason = LivenessReason::ShuttingDown;
        } else if let Some(skip) = read_status(probe, &mut ev, false, false) {
            ev.reason = skip;
        }
        return ev;
    }
    let first = probe.pane();
    let completed = probe.wait(gap);
    let second = if completed { probe.pane() } else { None };
    ev.pane = PaneSamples {
        first: first.as_deref().map(digest).unwrap_or_default(),
        second: second.as_deref().map(digest).unwrap_or_default(),
        sampled: first.is_some() && second.is_some(),
        changed: matches!((&first, &second), (Some(a), Some(b)) if a != b),
        empty: first.as_deref().is_none_or(|t| t.trim().is_empty())
            && second.as_deref().is_none_or(|t| t.trim().is_empty()),
    };
    if !completed {
        ev.reason = LivenessReason::ShuttingDown;
    } else if first.is_some() != second.is_some() {
        // One capture failed: the samples cannot be compared, so the pane may be live.
        ev.reason = LivenessReason::PaneUnreadable;
    } else if ev.pane.changed {
        ev.reason = LivenessReason::PaneActive;
    } else if let Some(skip) = read_status(probe, &mut ev, false, false) {
        ev.reason = skip;
    }
    ev
}

/// One status read; a reason to skip, if it gives one;
/// `at_rest_is_dead`: the agent is gone from a pane agent-deck reads
/// `waiting` or `idle`, which is then no recovery.
fn read_status(
    probe: &dyn Probe,
    ev: &mut Evidence,
    check_auth: bool,
    at_rest_is_dead: bool,
) -> Option<LivenessReason> {
    let live = probe.read().filter(|l| l.status.is_some());
    ev.reads.push(StatusRead {
        ts: probe.now(),
        status: live
            .as_ref()
            .map_or("unreadable", |l| l.status().as_str())
            .into(),
        substate: live.as_ref().and_then(|l| l.substate.clone()),
    });
    let Some(live) = live else {
        return Some(LivenessReason::StatusUnreadable);
    };
    let at_rest = matches!(live.status(), Status::Waiting | Status::Idle);
    if live.status() != Status::Error && !(at_rest_is_dead && at_rest) {
        return Some(LivenessReason::RecoveredBeforeRestart);
    }
    if check_auth {
        if let Some(reason) = live.auth_hold {
            ev.auth_hold_reason = Some(reason);
            return Some(LivenessReason::AuthHold);
        }
        // Codex at its login-required banner (1.16.11): held like an auth
        // hold, with no sidecar to name a reason; the substate is the reason.
        if live.codex_auth_failed() {
            ev.auth_hold_reason = live.substate.clone();
            return Some(LivenessReason::AuthHold);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::VecDeque;

    use crate::fleet::session::Live;

    /// Scripted readings; an empty script reads as unreadable.
    #[derive(Default)]
    struct Script {
        reads: RefCell<VecDeque<Option<Live>>>,
        panes: RefCell<VecDeque<Option<String>>>,
        shutdown_in_gap: bool,
        waited: RefCell<Vec<Duration>>,
    }

    impl Probe for Script {
        fn read(&self) -> Option<Live> {
            self.reads.borrow_mut().pop_front().flatten()
        }
        fn hook_file(&self) -> bool {
            unreachable!("liveness confirmation reads no hook file")
        }
        fn pane(&self) -> Option<String> {
            self.panes.borrow_mut().pop_front().flatten()
        }
        fn wait(&self, gap: Duration) -> bool {
            self.waited.borrow_mut().push(gap);
            !self.shutdown_in_gap
        }
        fn now(&self) -> f64 {
            42.0
        }
    }

    fn live(status: Status) -> Option<Live> {
        Some(Live {
            status: Some(status),
            ..Live::default()
        })
    }

    fn script(reads: Vec<Option<Live>>, panes: Vec<Option<&str>>) -> Script {
        Script {
            reads: RefCell::new(reads.into()),
            panes: RefCell::new(panes.into_iter().map(|p| p.map(str::to_owned)).collect()),
            ..Script::default()
        }
    }

    const GAP: Duration = Duration::from_secs(2);

    #[test]
    fn frozen_pane_and_two_error_reads_is_dead() {
        let s = script(
            vec![live(Status::Error), live(Status::Error)],
            vec![Some("x"), Some("x")],
        );
        let ev = confirm(&s, GAP, None);
        assert_eq!(ev.reason, LivenessReason::ConfirmedDead);
        assert_eq!(ev.reads.len(), 2);
        assert!(ev.pane.sampled && !ev.pane.changed && !ev.pane.empty);
        assert_eq!(ev.pane.first, digest("x"));
        assert_eq!(*s.waited.borrow(), vec![GAP]);
    }

    #[test]
    fn moving_pane_is_active() {
        let s = script(vec![live(Status::Error)], vec![Some("a"), Some("b")]);
        let ev = confirm(&s, GAP, None);
        assert_eq!(ev.reason, LivenessReason::PaneActive);
        assert!(ev.pane.changed);
    }

    #[test]
    fn unreadable_first_read() {
        let ev = confirm(&script(vec![None], vec![]), GAP, None);
        assert_eq!(ev.reason, LivenessReason::StatusUnreadable);
        assert_eq!(ev.reads[0].status, "unreadable");
    }

    #[test]
    fn unreadable_second_read() {
        let ev = confirm(
            &script(vec![live(Status::Error), None], vec![Some("a"), Some("a")]),
            GAP,
            None,
        );
        assert_eq!(ev.reason, LivenessReason::StatusUnreadable);
    }

    #[test]
    fn recovered_before_or_after_sampling() {
        let ev = confirm(&script(vec![live(Status::Running)], vec![]), GAP, None);
        assert_eq!(ev.reason, LivenessReason::RecoveredBeforeRestart);
        let ev = confirm(
            &script(
                vec![live(Status::Error), live(Status::Waiting)],
                vec![Some("a"), Some("a")],
            ),
            GAP,
            None,
        );
        assert_eq!(ev.reason, LivenessReason::RecoveredBeforeRestart);
    }

    #[test]
    fn auth_hold_is_never_restarted() {
        let held = Some(Live {
            status: Some(Status::Error),
            auth_hold: Some("auth_death".into()),
            ..Live::default()
        });
        let ev = confirm(&script(vec![held], vec![]), GAP, None);
        assert_eq!(ev.reason, LivenessReason::AuthHold);
        assert_eq!(ev.auth_hold_reason.as_deref(), Some("auth_death"));
    }

    #[test]
    fn codex_at_its_login_banner_is_an_auth_hold_and_claude_without_a_hold_is_not() {
        let banner = |tool: &str| {
            Some(Live {
                status: Some(Status::Error),
                substate: Some("auth-401".into()),
                tool: Some(tool.into()),
                ..Live::default()
            })
        };
        let ev = confirm(&script(vec![banner("codex")], vec![]), GAP, None);
        assert_eq!(ev.reason, LivenessReason::AuthHold);
        assert_eq!(ev.auth_hold_reason.as_deref(), Some("auth-401"));
        let ev = confirm(
            &script(
                vec![banner("claude"), banner("claude")],
                vec![Some("a"), Some("a")],
            ),
            GAP,
            None,
        );
        assert_eq!(ev.reason, LivenessReason::ConfirmedDead);
    }

    #[test]
    fn shutdown_during_the_gap() {
        let mut s = script(vec![live(Status::Error)], vec![Some("a"), Some("a")]);
        s.shutdown_in_gap = true;
        let ev = confirm(&s, GAP, None);
        assert_eq!(ev.reason, LivenessReason::ShuttingDown);
        assert!(!ev.pane.sampled);
    }

    #[test]
    fn one_failed_capture_is_no_proof_of_death() {
        let ev = confirm(
            &script(
                vec![live(Status::Error), live(Status::Error)],
                vec![None, Some("busy")],
            ),
            GAP,
            None,
        );
        assert_eq!(ev.reason, LivenessReason::PaneUnreadable);
        let ev = confirm(
            &script(
                vec![live(Status::Error), live(Status::Error)],
                vec![Some("busy"), None],
            ),
            GAP,
            None,
        );
        assert_eq!(ev.reason, LivenessReason::PaneUnreadable);
    }

    #[test]
    fn dead_pane_that_cannot_be_captured_is_dead() {
        let ev = confirm(
            &script(
                vec![live(Status::Error), live(Status::Error)],
                vec![None, None],
            ),
            GAP,
            None,
        );
        assert_eq!(ev.reason, LivenessReason::ConfirmedDead);
        assert!(!ev.pane.sampled && ev.pane.empty);
    }

    #[test]
    fn only_a_kernel_proven_death_skips_the_samples_and_the_gap() {
        // An exited process: two status reads a settle apart, no pane.
        let error = || live(Status::Error);
        let s = script(vec![error(), error()], vec![Some("a"), Some("b")]);
        let ev = confirm(&s, GAP, Some(Proof::ProcessExited));
        assert_eq!(ev.reason, LivenessReason::ConfirmedDead);
        assert_eq!(ev.proof, Some(Proof::ProcessExited));
        assert_eq!(ev.reads.len(), 2, "read again after the settle");
        assert!(!ev.pane.sampled);
        assert_eq!(*s.waited.borrow(), [GAP.min(KERNEL_SETTLE)]);
        assert_eq!(s.panes.borrow().len(), 2, "no pane captured");
        // agent-deck's own restart read `error` for an instant (#38).
        let s = script(vec![error(), live(Status::Running)], vec![]);
        let ev = confirm(&s, Duration::from_secs(2), Some(Proof::ProcessExited));
        assert_eq!(ev.reason, LivenessReason::RecoveredBeforeRestart);
        assert_eq!(*s.waited.borrow(), [KERNEL_SETTLE], "at most the settle");
        // A bare shell: one read, no wait.
        let s = script(vec![error()], vec![]);
        let ev = confirm(&s, GAP, Some(Proof::AgentGone));
        assert_eq!(
            (ev.reason, ev.reads.len()),
            (LivenessReason::ConfirmedDead, 1)
        );
        assert!(s.waited.borrow().is_empty(), "no gap");
        // A name gone from a listing, or no proof at all: the two samples.
        for proof in [Some(Proof::GoneFromListing), None] {
            let s = script(
                vec![live(Status::Error), live(Status::Error)],
                vec![Some("x"), Some("x")],
            );
            let ev = confirm(&s, GAP, proof);
            assert_eq!(ev.reason, LivenessReason::ConfirmedDead);
            assert_eq!((ev.proof, ev.reads.len()), (None, 2), "{proof:?}");
            assert!(ev.pane.sampled);
            assert_eq!(*s.waited.borrow(), vec![GAP]);
        }
        assert!(skips_the_gap(Some(Proof::ProcessExited)));
        assert!(!skips_the_gap(Some(Proof::GoneFromListing)) && !skips_the_gap(None));
    }

    #[test]
    fn an_agent_gone_from_a_pane_read_at_rest_is_dead_unsampled_but_running_is_not() {
        let gone = Some(Proof::AgentGone);
        for status in [Status::Waiting, Status::Idle, Status::Error] {
            let s = script(vec![live(status)], vec![Some("$ "), Some("$ ")]);
            let ev = confirm(&s, GAP, gone);
            assert_eq!(ev.reason, LivenessReason::ConfirmedDead, "{status:?}");
            assert_eq!((ev.proof, ev.reads.len()), (gone, 1));
            assert_eq!(ev.reads[0].status, status.as_str(), "the status as read");
            assert!(s.waited.borrow().is_empty() && !ev.pane.sampled);
        }
        for status in [Status::Running, Status::Stopped] {
            let ev = confirm(&script(vec![live(status)], vec![]), GAP, gone);
            assert_eq!(ev.reason, LivenessReason::RecoveredBeforeRestart);
        }
        let s = script(
            vec![live(Status::Waiting), live(Status::Waiting)],
            vec![Some("a"), Some("a")],
        );
        let ev = confirm(&s, GAP, None);
        assert_eq!(
            ev.reason,
            LivenessReason::RecoveredBeforeRestart,
            "no proof: waiting lives"
        );
    }

    #[test]
    fn a_kernel_proven_death_the_cli_calls_stopped_or_held_is_left_alone() {
        let proven = Some(Proof::ProcessExited);
        let s = script(vec![live(Status::Stopped)], vec![]);
        let ev = confirm(&s, GAP, proven);
        assert_eq!(ev.reason, LivenessReason::RecoveredBeforeRestart);
        assert_eq!(ev.proof, None);
        let held = Some(Live {
            status: Some(Status::Error),
            auth_hold: Some("auth_death".into()),
            ..Live::default()
        });
        let ev = confirm(&script(vec![held], vec![]), GAP, proven);
        assert_eq!(ev.reason, LivenessReason::AuthHold);
        let ev = confirm(&script(vec![None], vec![]), GAP, proven);
        assert_eq!(ev.reason, LivenessReason::StatusUnreadable);
    }

    #[test]
    fn digest_is_16_hex() {
        let d = digest("pane text");
        assert_eq!(d.len(), 16);
        assert!(d.chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn liveness_reasons_are_written_as_the_record_strings() {
        use LivenessReason::*;
        for (r, text) in [
            (ConfirmedDead, "confirmed_dead"),
            (StatusUnreadable, "status_unreadable"),
            (RecoveredBeforeRestart, "recovered_before_restart"),
            (AuthHold, "auth_hold"),
            (ShuttingDown, "shutting_down"),
            (PaneUnreadable, "pane_unreadable"),
            (PaneActive, "pane_active"),
        ] {
            assert_eq!(r.as_str(), text);
            assert_eq!(serde_json::to_string(&r).unwrap(), format!("\"{text}\""));
            assert_eq!(
                serde_json::from_str::<LivenessReason>(&format!("\"{text}\"")).unwrap(),
                r
            );
        }
    }
}
