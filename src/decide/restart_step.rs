//! What comes after agent-deck answers a restart or start call, pure (SPEC
//! §5.5): from its answer, the status read after it and, for a restart it
//! carried out that still reads `error`, whether only a stale `dead` hook
//! says so. `act/restart.rs` carries each step out.
//!
//! A `skipped` answer (a refusal) never reaches here: nothing of the
//! attempt is kept ([`crate::decide::refusal`]).

use crate::decide::gates::Hold;
use crate::decide::liveness::Evidence;
use crate::decide::outcomes::RestartAction;
use crate::decide::stall::Stall;
use crate::fleet::deck::{SpawnFailure, SpawnReason};
use crate::fleet::session::Status;

/// How one job of the restart worker ended: a revive, a stall's resume or
/// a poller restart. `act/apply.rs` makes its records, alerts and book
/// changes from it alone, and the main loop is sent it (the `--once`
/// summary says what came of each restart from it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    /// It is back, reading `status`; `tmux`: the tmux session it runs in
    /// now, when the read that found it back named one.
    Restarted {
        status: Status,
        tmux: Option<String>,
    },
    /// `--dry-run`: it would have been restarted now.
    WouldRestart,
    /// agent-deck declined the restart (`skipped`) for `reason`; `fresh`:
    /// its freshness guard did, and it is tried again
    /// ([`crate::decide::refusal`] says when).
    Refused {
        reason: String,
        fresh: Option<crate::decide::refusal::Freshness>,
        call: crate::decide::cascade::Call,
    },
    /// The restart and its fallback failed, for `why`, with the spawn
    /// failure agent-deck named, if it did (`spawn_died_fast`: held and
    /// escalated at once, no fallback).
    Failed {
        why: String,
        spawn: Option<SpawnFailure>,
    },
    /// The boot hit an API rate limit: backed off, not a crash.
    RateLimited,
    /// The restart spawned `tmux` (`None`: tmux could not tell) and
    /// agent-deck did not save it (`store`: its store said locked).
    Unsaved {
        why: String,
        tmux: Option<String>,
        store: bool,
    },
    /// agent-deck's store is locked and nothing was spawned.
    StoreLocked { why: String },
    /// agent-deck carried the call out, and no status read after it worked.
    Unverified { why: String },
    /// Our own shutdown cut it short.
    Interrupted { why: String },
    /// The liveness check found it alive; `gap_s`: the gap it waited.
    Alive { evidence: Evidence, gap_s: f64 },
    /// Nothing was done.
    Dropped(Dropped),
    /// A stall's resume went out (or, in a dry run, would have): the stall
    /// as it is now; `unconfirmed`: typed into the pane, unconfirmed.
    Resumed {
        stall: Stall,
        unconfirmed: Option<String>,
    },
    /// A stall's resume was not delivered, for `why`: the stall as it is
    /// now, `unresolved` when that leaves it for a human.
    ResumeFailed {
        stall: Stall,
        why: String,
        unresolved: bool,
    },
    /// A poller restart, recorded as `action` for `reason`.
    Poller {
        action: RestartAction,
        reason: String,
    },
}

/// Why a job did nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Dropped {
    /// Our shutdown came while it waited its turn.
    Shutdown,
    /// A gate holds it after the wait.
    Held(Hold),
    /// It was seen stopped since it was queued.
    Stopped,
    /// The job panicked (a bug).
    Panicked,
    /// The stall it was to resume is no longer in the book.
    NoStall,
    /// Its status could not be read: the resume is put off.
    StatusUnread,
    /// It reads this status now, not stalled: no resume.
    NotStalled(Status),
}

impl Outcome {
    /// Whether the job's budget slot goes back: the attempt did not count.
    /// A freshness refusal gave back its slot with the rest of the attempt
    /// ([`crate::decide::refusal::note_refused`]).
    pub(crate) fn gives_back(&self) -> bool {
        match self {
            Outcome::Refused { fresh, .. } => fresh.is_none(),
            Outcome::Dropped(_)
            | Outcome::Alive { .. }
            | Outcome::StoreLocked { .. }
            | Outcome::Interrupted { .. }
            | Outcome::RateLimited => true,
            _ => false,
        }
    }
}

/// Which call was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Call {
    Restart,
    /// The `session start` fallback.
    Start,
}

/// How agent-deck answered the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer<'a> {
    /// It said the spawn worked.
    Done,
    /// It said the call failed, with its spawn failure's reason (1.16.10+)
    /// if it gave one.
    Failed(Option<&'a SpawnReason>),
}

/// What the answer leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The spawn died at once (`spawn_died_fast`, #2099): a start cannot
    /// fix it, so it is held until seen healthy, with no fallback.
    Held,
    /// Poll the status. `carried_out`: agent-deck did it, or may have (an
    /// unverified spawn may be up).
    Verify { carried_out: bool },
    /// A failed start: nothing is left to try.
    Failed,
}

/// What the status read after the call leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// It is up (or only a stale hook from before the restart says not).
    Succeeded,
    /// A restart that did not bring it back: `session start`.
    FallBack,
    /// A start that did not bring it back.
    Failed,
    /// No status read succeeded after a call agent-deck carried out: not a
    /// failure, nor a success, until a later look reads the status
    /// ([`after_unread`]). No start goes blind: the restart may be up.
    Unread,
}

/// The step after agent-deck's `answer` to `call`. Any failure of a
/// restart but a spawn that died at once is followed by the status poll
/// and, still in error, the start fallback: agent-deck's own guards refuse
/// a start that could not be right.
pub(crate) fn after_answer(call: Call, answer: Answer<'_>) -> Step {
    match (answer, call) {
        (Answer::Failed(Some(SpawnReason::DiedFast)), _) => Step::Held,
        (Answer::Done | Answer::Failed(Some(SpawnReason::Unverified)), _) => {
            Step::Verify { carried_out: true }
        }
        (Answer::Failed(_), Call::Restart) => Step::Verify { carried_out: false },
        (Answer::Failed(_), Call::Start) => Step::Failed,
    }
}

/// The next step once `status` was read (`None`: no read succeeded) after
/// `call`. `stale_hook` is asked only of a restart agent-deck `carried_out`
/// that reads `error`: only such a restart leaves a stale `dead` hook
/// behind (agent-deck honours one for two minutes of its age). A call that
/// failed outright and left nothing readable is still a failure.
pub(crate) fn after_verify(
    call: Call,
    carried_out: bool,
    status: Option<Status>,
    stale_hook: impl FnOnce() -> bool,
) -> Next {
    match status {
        Some(s) if s != Status::Error => Next::Succeeded,
        Some(_) if call == Call::Restart && carried_out && stale_hook() => Next::Succeeded,
        None if carried_out => Next::Unread,
        _ if call == Call::Restart => Next::FallBack,
        _ => Next::Failed,
    }
}

/// What a later look that reads `status` makes of a call that left it
/// [`Next::Unread`]: `error` is the failure it is counted as then, unless
/// only a stale `dead` hook from before the restart says so
/// (`stale_hook`, as in [`after_verify`]); anything else is a success.
pub(crate) fn after_unread(status: Status, stale_hook: bool) -> Next {
    if status == Status::Error && !stale_hook {
        Next::Failed
    } else {
        Next::Succeeded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_answer_leads_to_one_step() {
        use Answer::*;
        use SpawnReason::*;
        let verify = |carried_out| Step::Verify { carried_out };
        let other = Other("spawn_on_mars".into());
        #[rustfmt::skip]
        let table = [
            (Call::Restart, Done, verify(true)),
            (Call::Restart, Failed(Some(&Unverified)), verify(true)),
            (Call::Restart, Failed(Some(&DiedFast)), Step::Held),
            (Call::Restart, Failed(Some(&TmuxSessionMissing)), verify(false)),
            (Call::Restart, Failed(Some(&other)), verify(false)),
            (Call::Restart, Failed(None), verify(false)),
            (Call::Start, Done, verify(true)),
            (Call::Start, Failed(Some(&Unverified)), verify(true)),
            (Call::Start, Failed(Some(&DiedFast)), Step::Held),
            (Call::Start, Failed(Some(&TmuxSessionMissing)), Step::Failed),
            (Call::Start, Failed(None), Step::Failed),
        ];
        for (call, answer, want) in table {
            assert_eq!(after_answer(call, answer), want, "{call:?} {answer:?}");
        }
    }

    #[test]
    fn each_status_read_after_the_call_leads_to_one_next_step() {
        use Status::*;
        #[rustfmt::skip]
        let table = [
            // call, carried out, status, only a stale hook says error, next
            (Call::Restart, true, Some(Running), false, Next::Succeeded),
            (Call::Restart, false, Some(Waiting), false, Next::Succeeded),
            (Call::Restart, true, Some(Error), true, Next::Succeeded),
            (Call::Restart, false, Some(Error), true, Next::FallBack),
            (Call::Restart, true, Some(Error), false, Next::FallBack),
            (Call::Restart, true, None, true, Next::Unread),
            (Call::Restart, false, None, false, Next::FallBack),
            (Call::Start, true, Some(Idle), false, Next::Succeeded),
            (Call::Start, true, Some(Error), true, Next::Failed),
            (Call::Start, true, None, false, Next::Unread),
            (Call::Start, false, None, false, Next::Failed),
        ];
        for (call, carried_out, status, stale, want) in table {
            let got = after_verify(call, carried_out, status, || stale);
            assert_eq!(got, want, "{call:?} {carried_out} {status:?} {stale}");
        }
    }

    #[test]
    fn a_status_read_later_decides_what_an_unread_call_was() {
        use Status::*;
        #[rustfmt::skip]
        let table = [
            // status at the later look, only a stale hook says error, next
            (Running, false, Next::Succeeded),
            (Waiting, false, Next::Succeeded),
            (Stopped, false, Next::Succeeded),
            (Error, true, Next::Succeeded),
            (Error, false, Next::Failed),
        ];
        for (status, stale, want) in table {
            assert_eq!(after_unread(status, stale), want, "{status:?} {stale}");
        }
    }

    #[test]
    fn the_hook_is_read_only_for_a_carried_out_restart_that_reads_error() {
        let asked = std::cell::Cell::new(0);
        let ask = || {
            asked.set(asked.get() + 1);
            false
        };
        after_verify(Call::Restart, true, Some(Status::Running), ask);
        after_verify(Call::Restart, false, Some(Status::Error), ask);
        after_verify(Call::Start, true, Some(Status::Error), ask);
        assert_eq!(asked.get(), 0);
        after_verify(Call::Restart, true, Some(Status::Error), ask);
        assert_eq!(asked.get(), 1);
    }

    #[test]
    fn only_an_attempt_that_did_not_count_gives_its_slot_back() {
        use crate::decide::liveness::{Evidence, LivenessReason};
        let why = || "w".to_owned();
        let fresh = Some(crate::decide::refusal::Freshness {
            age: None,
            window: None,
        });
        let refused = |fresh| Outcome::Refused {
            reason: why(),
            fresh,
            call: Default::default(),
        };
        let alive = Outcome::Alive {
            evidence: Evidence {
                reads: Vec::new(),
                pane: Default::default(),
                auth_hold_reason: None,
                reason: LivenessReason::PaneActive,
                proof: None,
            },
            gap_s: 0.0,
        };
        #[rustfmt::skip]
        let table = [
            (Outcome::Restarted { status: Status::Idle, tmux: None }, false),
            (Outcome::WouldRestart, false),
            (refused(None), true),
            // A freshness refusal gave back all of the attempt itself.
            (refused(fresh), false),
            (Outcome::Failed { why: why(), spawn: None }, false),
            (Outcome::RateLimited, true),
            (Outcome::Unsaved { why: why(), tmux: None, store: true }, false),
            (Outcome::StoreLocked { why: why() }, true),
            (Outcome::Unverified { why: why() }, false),
            (Outcome::Interrupted { why: why() }, true),
            (alive, true),
            (Outcome::Dropped(Dropped::Shutdown), true),
            (Outcome::Poller { action: RestartAction::PollerRestart, reason: why() }, false),
        ];
        for (outcome, back) in table {
            assert_eq!(outcome.gives_back(), back, "{outcome:?}");
        }
    }
}
