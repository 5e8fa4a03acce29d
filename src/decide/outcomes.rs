//! What the records say happened: the `action` of a `restart.log` line and
//! the `severity` of an escalation (also `escalate.sh`'s first argument).
//! Each value is spelled once, here, as its serde name, so the record bytes
//! are the strings the files have always held. A value this version does not
//! know (a later version wrote it) reads back as `Other`, verbatim, so
//! `history` still shows it. A leaf: it imports only [`crate::spelled`].

use serde::{Deserialize, Serialize};

use crate::spelled::spelled;

spelled! {
    /// The `action` of a `restart.log` record.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
    pub enum RestartAction {
        /// About to run `session restart` (or, in dry-run, would).
        Restart = "restart",
        Restarted = "restarted",
        RestartFailed = "restart-failed",
        /// Our own shutdown cut the restart short.
        RestartInterrupted = "restart-interrupted",
        /// The restart spawned its tmux session, but agent-deck did not save
        /// it (its store locked): no start fallback, no failure counted.
        RestartUnsaved = "restart-unsaved",
        /// The tmux session a restart left unsaved was ended, once the store
        /// read again, so that the restart after it runs one agent.
        UnsavedEnded = "unsaved-ended",
        /// agent-deck carried the call out, and no status read after it
        /// succeeded: settled `restarted` or `restart-failed` by a later look.
        RestartUnverified = "restart-unverified",
        /// Held by a gate; the reason names it.
        Skipped = "skipped",
        /// Liveness confirmation found the session alive.
        SkippedAlive = "skipped-alive",
        /// agent-deck answered `skipped: true`.
        CliRefused = "cli-refused",
        RateLimited = "rate-limited",
        PromptResumeAttempt = "prompt-resume-attempt",
        PollerRestart = "poller-restart",
        PollerDeaf = "poller-deaf",
        PollerRefused = "poller-refused",
        PollerRestartFailed = "poller-restart-failed",
        Nudge = "nudge",
        NudgeFailed = "nudge-failed",
        StaleRemoved = "stale-removed",
        StaleRemoveFailed = "stale-remove-failed",
        /// `agent-deck-watchdog drill` killed the session on purpose.
        Drill = "drill",
        /// A stall seen (SPEC §14), with its kind, evidence and resume time.
        StallDetected = "stall-detected",
        ResumeSent = "resume-sent",
        ResumeVerified = "resume-verified",
        ResumeFailed = "resume-failed",
        ResumedByItself = "resumed-by-itself",
        /// A full context's remedy (SPEC §15): `/clear` typed.
        ClearSent = "clear-sent",
        /// `/compact` typed, and its effect seen.
        CompactSent = "compact-sent",
        Compacted = "compacted",
        /// The proactive clear at `CONTEXT_CLEAR_AT_PCT`: `/clear` typed.
        ContextCleared = "context-cleared",
    }
    unknown => Other
}

spelled! {
    /// The `severity` of an escalation.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
    pub enum Severity {
        RateLimit = "rate-limit",
        LivenessMismatch = "liveness-mismatch",
        AuthHold = "auth-hold",
        RestartFailed = "restart-failed",
        CircuitBreaker = "circuit-breaker",
        /// The burst guard paused every restart.
        Cascade = "cascade",
        /// Many critical sessions in error at once: settle, then revive.
        CascadeDetected = "cascade-detected",
        /// A `list --all` suddenly holds none of the critical sessions it
        /// held (see `decide::book::vanish`).
        FleetVanished = "fleet-vanished",
        TaskRetry = "task-retry",
        TaskExhausted = "task-exhausted",
        TaskTampered = "task-tampered",
        PartialTampered = "partial-tampered",
        RedispatchCap = "redispatch-cap",
        /// A stall's resumes are spent (SPEC §14).
        StallUnresolved = "stall-unresolved",
        /// `Compacting conversation…` past twice `CONTEXT_COMPACT_S`.
        CompactionHung = "compaction-hung",
        /// agent-deck's store could not be read: told once an episode.
        StoreLocked = "store-locked",
    }
    unknown => Other
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spellings are interface (SPEC §5.5–§8, README's record table,
    /// `escalate.sh`'s argument): each variant's exact JSON text.
    #[test]
    fn every_variant_is_written_as_the_records_have_always_spelled_it() {
        use RestartAction as A;
        let actions = [
            (A::Restart, "restart"),
            (A::Restarted, "restarted"),
            (A::RestartFailed, "restart-failed"),
            (A::RestartInterrupted, "restart-interrupted"),
            (A::Skipped, "skipped"),
            (A::SkippedAlive, "skipped-alive"),
            (A::CliRefused, "cli-refused"),
            (A::RateLimited, "rate-limited"),
            (A::PromptResumeAttempt, "prompt-resume-attempt"),
            (A::PollerRestart, "poller-restart"),
            (A::PollerDeaf, "poller-deaf"),
            (A::PollerRefused, "poller-refused"),
            (A::PollerRestartFailed, "poller-restart-failed"),
            (A::Nudge, "nudge"),
            (A::NudgeFailed, "nudge-failed"),
            (A::StaleRemoved, "stale-removed"),
            (A::StaleRemoveFailed, "stale-remove-failed"),
            (A::Drill, "drill"),
            (A::RestartUnverified, "restart-unverified"),
            (A::RestartUnsaved, "restart-unsaved"),
            (A::UnsavedEnded, "unsaved-ended"),
            (A::ClearSent, "clear-sent"),
            (A::CompactSent, "compact-sent"),
            (A::Compacted, "compacted"),
            (A::ContextCleared, "context-cleared"),
        ];
        use Severity as S;
        let severities = [
            (S::RateLimit, "rate-limit"),
            (S::LivenessMismatch, "liveness-mismatch"),
            (S::AuthHold, "auth-hold"),
            (S::RestartFailed, "restart-failed"),
            (S::CircuitBreaker, "circuit-breaker"),
            (S::Cascade, "cascade"),
            (S::CascadeDetected, "cascade-detected"),
            (S::FleetVanished, "fleet-vanished"),
            (S::TaskRetry, "task-retry"),
            (S::TaskExhausted, "task-exhausted"),
            (S::TaskTampered, "task-tampered"),
            (S::PartialTampered, "partial-tampered"),
            (S::RedispatchCap, "redispatch-cap"),
            (S::StallUnresolved, "stall-unresolved"),
            (S::CompactionHung, "compaction-hung"),
            (S::StoreLocked, "store-locked"),
        ];
        for (a, text) in actions {
            assert_eq!(serde_json::to_string(&a).unwrap(), format!("\"{text}\""));
            assert_eq!(
                serde_json::from_str::<A>(&format!("\"{text}\"")).unwrap(),
                a
            );
            assert_eq!((a.as_str(), a.to_string()), (text, text.to_owned()));
        }
        for (s, text) in severities {
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{text}\""));
            assert_eq!(
                serde_json::from_str::<S>(&format!("\"{text}\"")).unwrap(),
                s
            );
            assert_eq!((s.as_str(), s.to_string()), (text, text.to_owned()));
        }
    }

    #[test]
    fn a_value_a_later_version_wrote_reads_back_verbatim() {
        let a: RestartAction = serde_json::from_str("\"restart-teleported\"").unwrap();
        assert_eq!(a, RestartAction::Other("restart-teleported".into()));
        assert_eq!(serde_json::to_string(&a).unwrap(), "\"restart-teleported\"");
        let s: Severity = serde_json::from_str("\"moon-phase\"").unwrap();
        assert_eq!(s.as_str(), "moon-phase");
        assert!(serde_json::from_str::<Severity>("42").is_err());
    }
}
