//! What comes after agent-deck answers a restart or start call, pure (SPEC
//! §5.5): from its answer, the status read after it and, for a restart it
//! carried out that still reads `error`, whether only a stale `dead` hook
//! says so. `act/restart.rs` carries each step out.
//!
//! A `skipped` answer (a refusal) never reaches here: nothing of the
//! attempt is kept ([`crate::decide::refusal`]).

use crate::fleet::deck::SpawnReason;
use crate::fleet::session::Status;

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
}
