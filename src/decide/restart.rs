//! One revive as a machine, pure (SPEC §5.3–§5.5): [`Machine::step`] takes
//! what came of the last [`Action`] (an [`Event`]) and the restart book,
//! and says the one next thing to do, until the job is [`Action::Done`]
//! with its [`Outcome`]. `act/restart.rs` performs the actions; nothing
//! here calls, sleeps, logs or writes a file.
//!
//! The rules it follows: what agent-deck's answer to a restart or start
//! leads to ([`after_answer`], [`after_verify`], [`after_unread`]); never a
//! `session start` beside a restart agent-deck spawned and did not save
//! ([`after_restart`], #32); a failed boot that hit an API rate limit is no
//! crash ([`is_rate_limited`]). A `skipped` answer (a refusal) keeps
//! nothing of the attempt ([`crate::decide::refusal`]).

use std::time::Duration;

use crate::config::Config;
use crate::decide::book::State;
use crate::decide::gates::{self, Hold};
use crate::decide::limits::Limits;
use crate::decide::liveness::{Evidence, LivenessReason};
use crate::decide::outcomes::RestartAction;
use crate::decide::stall::Stall;
use crate::decide::{cascade, notes, refusal, stop, store};
use crate::fleet::deck::{CliError, RestartAnswer, SpawnFailure, SpawnReason};
use crate::fleet::panes::Proof;
use crate::fleet::session::Status;
use crate::fleet::version::Version;
use crate::sys::process::RunError;

/// How one job of the restart worker ended: a revive, a stall's resume or
/// a poller restart. `act/apply.rs` makes its records, alerts and book
/// changes from it alone, and the main loop is sent it (the `--once`
/// summary says what came of each restart from it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    /// It is back, reading `status`.
    Restarted { status: Status },
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

/// Which job the machine runs: a revive, or a job that only shares its
/// turn (a stall's resume, before the gates; a poller restart, after them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Revive,
    Resume,
    Poller,
}

/// What the machine reads afresh at each step.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Now {
    pub at: f64,
    /// Our own shutdown has begun.
    pub shutdown: bool,
    /// The agent-deck release read last.
    pub release: Option<Version>,
}

/// One thing to do; `act/restart.rs` performs it and says what came of it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Action {
    /// Wait until no continuity message to it is queued or in flight.
    WaitSent,
    /// Wait this many seconds for the serialization (said as it starts).
    Sleep(f64),
    /// Run the stall's resume, or the poller restart, to its ending.
    Resume,
    Poller,
    /// Confirm the death (SPEC §5.3); `shown`: lean on the `session show`
    /// that found a proven death in error, as the job did not wait.
    Confirm {
        shown: bool,
    },
    /// Say it is confirmed dead and write its `liveness.log` record.
    Dead {
        evidence: Evidence,
        gap_s: f64,
    },
    /// Escalate the burst this call makes, if it does, then write the
    /// `restart` record before the call.
    RecordCall {
        cascade: Option<String>,
    },
    /// Say so, then `session restart` (the pane watch told a restart is
    /// under way until the job ends).
    CallRestart,
    /// Say `warn` if there is one, then poll its status for `within`.
    Verify {
        within: Duration,
        warn: Option<String>,
    },
    /// Whether only a `dead` hook from before the restart issued at `issued`
    /// makes it read `error` (said if so).
    ReadHook {
        issued: f64,
    },
    /// List tmux for a session of it agent-deck does not know.
    ListTmux,
    /// Say `warn`, then `session start`.
    CallStart {
        warn: String,
    },
    ReadTranscript,
    /// Prompt-resume (SPEC §6.4) over this transcript.
    PromptResume(String),
    /// The job ended.
    Done(Outcome),
}

/// What came of an action.
#[derive(Debug)]
pub(crate) enum Event {
    /// Done, nothing to tell (also the first event).
    Done,
    /// A wait ended: whether it had to wait; `None` on shutdown.
    Waited(Option<bool>),
    /// The job a revive does not run ended so.
    Ended(Outcome),
    /// The liveness evidence; `bare`: the pane watch still finds its pane
    /// a bare shell.
    Confirmed {
        evidence: Evidence,
        bare: bool,
    },
    /// agent-deck's answer to the restart issued at `issued`.
    Restart {
        issued: f64,
        answer: Result<RestartAnswer, CliError>,
    },
    /// The last status read (`None`: no read worked).
    Verified(Option<Status>),
    /// Only a stale hook says `error`.
    Hook(bool),
    /// Its tmux session agent-deck does not know (`None`: tmux unreadable).
    Listed(Option<Option<String>>),
    Started(Result<(), CliError>),
    Transcript(String),
    /// Prompt-resume brought it back reading this.
    Resumed(Option<Status>),
}

/// Where a job is: what it carries from the calls made so far.
#[derive(Debug)]
pub(crate) enum Phase {
    Start,
    /// Waiting its turn; `waited`: whether it had to.
    Turn {
        waited: bool,
    },
    Confirming,
    /// Confirmed dead and recorded: its call is noted next.
    Dead,
    /// The call noted and recorded: what it took from the book.
    Noted(cascade::Call),
    Calling(cascade::Call),
    /// Polling after the restart issued at `issued`, with its failure and
    /// the reason said for it.
    Verifying {
        issued: f64,
        failure: Option<(CliError, String)>,
        carried_out: bool,
    },
    /// It reads `error` after a restart agent-deck carried out.
    Hook {
        issued: f64,
        failure: Option<(CliError, String)>,
    },
    /// Listing tmux before the fallback; `why`: what the restart did.
    Listing {
        why: String,
        answer: Option<CliError>,
    },
    /// `session start` called; `spawn`: the restart's spawn failure.
    Starting {
        why: String,
        spawn: Option<SpawnFailure>,
    },
    /// Polling after the start, which failed saying `failure` if it did.
    StartVerifying {
        why: String,
        failure: Option<String>,
        spawn: Option<SpawnFailure>,
        carried_out: bool,
    },
    /// A failure, unless the transcript or prompt-resume says otherwise.
    Failing {
        why: String,
        spawn: Option<SpawnFailure>,
    },
}

/// One job's machine: its facts, fixed for its run, and its phase.
pub(crate) struct Machine<'a> {
    pub id: &'a str,
    pub kind: Kind,
    /// How the pane watch proved the death, when it did.
    pub proof: Option<Proof>,
    pub dry_run: bool,
    pub cfg: &'a Config,
    pub lim: &'a Limits,
    pub phase: Phase,
}

impl Machine<'_> {
    /// The next action after `event`, over the book `st` (its one lock per
    /// step), at `now`.
    pub(crate) fn step(&mut self, event: Event, st: &mut State, now: Now) -> Action {
        use Action::Done;
        let id = self.id;
        match (std::mem::replace(&mut self.phase, Phase::Start), event) {
            (_, Event::Ended(outcome)) => Done(outcome),
            (Phase::Start, Event::Done) => self.to(Phase::Turn { waited: false }, Action::WaitSent),
            (Phase::Turn { .. }, Event::Waited(None)) => Done(Outcome::Dropped(Dropped::Shutdown)),
            (Phase::Turn { waited }, Event::Waited(Some(w))) => self.turn(st, now, waited || w),
            (Phase::Confirming, Event::Confirmed { evidence, bare }) => {
                self.confirmed(evidence, bare)
            }
            (Phase::Dead, Event::Done) => {
                let (burst, call) = cascade::note_call(st, self.lim, id, now.at);
                let lim = self.lim;
                let cascade = burst.then(|| {
                    format!(
                        "{} restarts within {:.0}s — pausing every restart for {:.0}s",
                        lim.cascade_threshold, lim.cascade_window, lim.cascade_pause
                    )
                });
                self.to(Phase::Noted(call), Action::RecordCall { cascade })
            }
            (Phase::Noted(_), Event::Done) if self.dry_run => Done(Outcome::WouldRestart),
            (Phase::Noted(call), Event::Done) => self.to(Phase::Calling(call), Action::CallRestart),
            (Phase::Calling(call), Event::Restart { issued, answer }) => {
                let failure = match answer {
                    Ok(RestartAnswer::Skipped(reason)) => {
                        let fresh = refusal::freshness(&reason);
                        return Done(Outcome::Refused {
                            reason,
                            fresh,
                            call,
                        });
                    }
                    Ok(RestartAnswer::Restarted) => None,
                    Err(e) => {
                        let why = format!("restart {e}");
                        Some((e, why))
                    }
                };
                refusal::note_answered(st, id);
                if failure.is_none() {
                    notes::note_restarted(st, id, issued);
                }
                let (step, warn) = self.answered(Call::Restart, failure.as_ref());
                let Step::Verify { carried_out } = step else {
                    return Done(died(failure));
                };
                let within = self.cfg.restart_verify;
                let phase = Phase::Verifying {
                    issued,
                    failure,
                    carried_out,
                };
                self.to(phase, Action::Verify { within, warn })
            }
            (
                Phase::Verifying {
                    issued,
                    failure,
                    carried_out: true,
                },
                Event::Verified(Some(Status::Error)),
            ) => self.to(Phase::Hook { issued, failure }, Action::ReadHook { issued }),
            (
                Phase::Verifying {
                    issued,
                    failure,
                    carried_out,
                },
                Event::Verified(status),
            ) => self.restart_verified(st, now, (issued, failure, carried_out), status, false),
            (Phase::Hook { issued, failure }, Event::Hook(stale)) => {
                let status = Some(Status::Error);
                self.restart_verified(st, now, (issued, failure, true), status, stale)
            }
            (Phase::Listing { why, answer }, Event::Listed(spawned)) => {
                let seen = spawned.as_ref().map(Option::is_some);
                match after_restart(answer.as_ref(), seen) {
                    Fallback::Unsaved { store } => Done(Outcome::Unsaved {
                        why,
                        tmux: spawned.flatten(),
                        store,
                    }),
                    Fallback::StoreLocked => Done(Outcome::StoreLocked { why }),
                    Fallback::Start => {
                        let warn = format!("{id}: {why}; falling back to session start");
                        let spawn = answer.as_ref().and_then(CliError::spawn).cloned();
                        self.to(Phase::Starting { why, spawn }, Action::CallStart { warn })
                    }
                }
            }
            (Phase::Starting { why, spawn }, Event::Started(started)) => {
                let failed = started.err().map(|e| {
                    let failed = format!("{why}; fallback start {e}");
                    (e, failed)
                });
                let spawn = failed.as_ref().and_then(|f| f.0.spawn()).cloned().or(spawn);
                let (step, warn) = self.answered(Call::Start, failed.as_ref());
                let failure = failed.map(|f| f.1);
                match step {
                    Step::Held => Done(Outcome::Failed {
                        why: failure.unwrap_or_default(),
                        spawn,
                    }),
                    Step::Failed => self.failed(now, failure.unwrap_or(why), spawn),
                    Step::Verify { carried_out } => {
                        if failure.is_none() {
                            notes::note_ran(st, id);
                        }
                        let within = self.cfg.start_verify;
                        let phase = Phase::StartVerifying {
                            why,
                            failure,
                            spawn,
                            carried_out,
                        };
                        self.to(phase, Action::Verify { within, warn })
                    }
                }
            }
            (
                Phase::StartVerifying {
                    why,
                    failure,
                    spawn,
                    carried_out,
                },
                Event::Verified(status),
            ) => match (
                after_verify(Call::Start, carried_out, status, || false),
                status,
            ) {
                (Next::Succeeded, Some(status)) => {
                    if failure.is_some() {
                        // An unverified start brought it up.
                        notes::note_ran(st, id);
                    }
                    Done(Outcome::Restarted { status })
                }
                (Next::Unread, _) => unread(now, "start", Some(failure.unwrap_or(why))),
                _ => {
                    let secs = self.cfg.start_verify.as_secs_f64();
                    let why = match failure {
                        Some(why) => format!("{why}; status still error after {secs:.0}s"),
                        None => format!(
                            "fallback start returned success but status still error after {secs:.0}s"
                        ),
                    };
                    self.failed(now, why, spawn)
                }
            },
            (Phase::Failing { why, spawn }, Event::Transcript(text)) => {
                if is_rate_limited(&text) {
                    return Done(Outcome::RateLimited);
                }
                self.to(Phase::Failing { why, spawn }, Action::PromptResume(text))
            }
            (Phase::Failing { .. }, Event::Resumed(Some(status))) => {
                Done(Outcome::Restarted { status })
            }
            (Phase::Failing { why, spawn }, Event::Resumed(None)) => {
                Done(Outcome::Failed { why, spawn })
            }
            (phase, event) => unreachable!("restart of {id}: {event:?} in {phase:?}"),
        }
    }

    /// Goes on to `phase` with `action`.
    fn to(&mut self, phase: Phase, action: Action) -> Action {
        self.phase = phase;
        action
    }

    /// Its turn in the serialization, then the last gates (a resume passes
    /// none, a poller restart only the re-check) and a stop seen meanwhile.
    fn turn(&mut self, st: &mut State, now: Now, waited: bool) -> Action {
        let wait = gates::serialization_wait(st, self.lim, now.at);
        if wait > 0.0 {
            return self.to(Phase::Turn { waited: true }, Action::Sleep(wait));
        }
        if self.kind == Kind::Resume {
            return Action::Resume;
        }
        if let Some(why) = gates::recheck(st, self.id, now.at) {
            return Action::Done(Outcome::Dropped(Dropped::Held(why)));
        }
        if self.kind == Kind::Poller {
            return Action::Poller;
        }
        if stop::held_by_stop(st, self.id, now.release) {
            return Action::Done(Outcome::Dropped(Dropped::Stopped));
        }
        self.to(Phase::Confirming, Action::Confirm { shown: !waited })
    }

    /// What the liveness check found. An agent-gone death whose bare shell
    /// the watch no longer finds has its agent back; a kernel-proven death
    /// waited no gap (SPEC §5.3).
    fn confirmed(&mut self, mut evidence: Evidence, bare: bool) -> Action {
        let dead = evidence.reason == LivenessReason::ConfirmedDead;
        if self.proof == Some(Proof::AgentGone) && dead && !bare {
            evidence.reason = LivenessReason::RecoveredBeforeRestart;
        }
        let gap_s = match evidence.proof {
            Some(_) => 0.0,
            None => self.cfg.liveness_confirm_gap.as_secs_f64(),
        };
        if evidence.reason != LivenessReason::ConfirmedDead {
            return Action::Done(Outcome::Alive { evidence, gap_s });
        }
        self.to(Phase::Dead, Action::Dead { evidence, gap_s })
    }

    /// The step after agent-deck's answer to `call`, and the warning that
    /// says a failure before its status poll.
    fn answered(&self, call: Call, failure: Option<&(CliError, String)>) -> (Step, Option<String>) {
        let answer = failure.map_or(Answer::Done, |(e, _)| {
            Answer::Failed(e.spawn().map(|f| &f.reason))
        });
        let step = after_answer(call, answer);
        let (id, why) = (self.id, failure.map(|f| &f.1));
        let warn = match (step, why) {
            (Step::Verify { carried_out: true }, Some(why)) => Some(format!(
                "{id}: {why}; agent-deck could not tell whether it came up, so its status is polled as after a success"
            )),
            (Step::Verify { carried_out: false }, Some(why)) => Some(format!(
                "restart of {id} failed: {why}; reading its status before the start fallback"
            )),
            _ => None,
        };
        (step, warn)
    }

    /// What the status read after the restart leads to; `stale`: only a
    /// stale hook says `error` (asked only of a carried-out restart).
    fn restart_verified(
        &mut self,
        st: &mut State,
        now: Now,
        (issued, failure, carried_out): (f64, Option<(CliError, String)>, bool),
        status: Option<Status>,
        stale: bool,
    ) -> Action {
        match (
            after_verify(Call::Restart, carried_out, status, || stale),
            status,
        ) {
            (Next::Succeeded, Some(status)) => {
                if failure.is_some() {
                    // A failed or unverified answer, and yet it came up.
                    notes::note_restarted(st, self.id, issued);
                }
                Action::Done(Outcome::Restarted { status })
            }
            (Next::Unread, _) => unread(now, "restart", failure.map(|f| f.1)),
            _ => {
                let (answer, why) = match failure {
                    Some((e, why)) => (Some(e), why),
                    None => (None, "still in error after the restart".to_owned()),
                };
                if now.shutdown {
                    return interrupted();
                }
                self.to(Phase::Listing { why, answer }, Action::ListTmux)
            }
        }
    }

    /// A failed restart, for `why`: cut short by our own shutdown, else
    /// the transcript says whether it was a 429 and prompt-resume may
    /// bring it back; `spawn` joins the failure's record.
    fn failed(&mut self, now: Now, why: String, spawn: Option<SpawnFailure>) -> Action {
        if now.shutdown {
            return Action::Done(Outcome::Interrupted { why });
        }
        self.to(Phase::Failing { why, spawn }, Action::ReadTranscript)
    }
}

/// Our own shutdown came during the verification.
fn interrupted() -> Action {
    let why = "shutdown during verification".into();
    Action::Done(Outcome::Interrupted { why })
}

/// A call agent-deck carried out, `after` which no status read worked:
/// `restart-unverified`, its `lead` (what went before) first. Neither a
/// success nor a failure until a look reads the status
/// ([`crate::decide::verdict`] settles it); its budget slot stays spent.
fn unread(now: Now, after: &str, lead: Option<String>) -> Action {
    if now.shutdown {
        return interrupted();
    }
    let why = match lead {
        Some(lead) => format!("{lead}; status unreadable after {after}"),
        None => format!("status unreadable after {after}"),
    };
    Action::Done(Outcome::Unverified { why })
}

/// A spawn agent-deck saw die at once (`spawn_died_fast`): failed, with no
/// start fallback (`act/apply.rs` holds it).
fn died(failure: Option<(CliError, String)>) -> Outcome {
    let (why, spawn) = failure.map_or((String::new(), None), |(e, why)| (why, e.spawn().cloned()));
    Outcome::Failed { why, spawn }
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

/// What comes after a restart that did not come up (#32): never a second
/// agent. With agent-deck's store locked, 1.14.0's `session restart` spawns
/// its new tmux session and then fails to save it (`database is locked`), or
/// our timeout kills it first; the store still names the old tmux session, so
/// the session reads `error`, and a `session start` would spawn a second
/// agent beside the unsaved one. So the fallback looks at tmux's own listing
/// first: it starts only when no tmux session of this one was created since
/// the restart began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fallback {
    /// No new tmux session of it exists: `session start` it.
    Start,
    /// Its restart spawned a tmux session that agent-deck did not save, or
    /// tmux could not be read after an answer that may have spawned one:
    /// never start another. `store`: agent-deck said its store is locked.
    Unsaved { store: bool },
    /// agent-deck could not open or save its store and tmux shows no spawn:
    /// the restart did not run, and a start would fail the same way. Not a
    /// failed restart: its slot is given back.
    StoreLocked,
}

/// The fallback after a restart that answered `answer` (`None`: it said
/// it succeeded) and then did not come up; `spawned`: whether tmux holds a
/// session of it created since the restart began (`None`: tmux unreadable).
pub(crate) fn after_restart(answer: Option<&CliError>, spawned: Option<bool>) -> Fallback {
    let store = answer.is_some_and(|e| store::says_unreadable(&e.to_string()));
    let may_have_spawned = store || matches!(answer, Some(CliError::Run(RunError::TimedOut(_))));
    match spawned {
        Some(true) => Fallback::Unsaved { store },
        None if may_have_spawned => Fallback::Unsaved { store },
        Some(false) if store => Fallback::StoreLocked,
        _ => Fallback::Start,
    }
}

/// Whether a transcript shows an API rate limit (HTTP 429).
pub(crate) fn is_rate_limited(text: &str) -> bool {
    text.lines().any(|line| {
        let l = line.to_lowercase();
        let glued = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
        // One of `needles` not glued to the word before it (nor, if `whole`, after it).
        let word = |needles: [&str; 3], whole: bool| {
            needles.iter().any(|needle| {
                l.match_indices(needle).any(|(i, m)| {
                    let (before, after) =
                        (l[..i].chars().next_back(), l[i + m.len()..].chars().next());
                    !(glued(before) || whole && glued(after))
                })
            })
        };
        let exceeded = l
            .find("exceed")
            .and_then(|i| l[i..].find("rate").map(|j| i + j))
            .is_some_and(|k| l[k..].contains("limit"));
        word(["rate limit", "rate-limit", "ratelimit"], false)
            || word(["http 429", "http/429", "http429"], true)
            || line.contains("(429)")
            || exceeded
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

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
            (Outcome::Restarted { status: Status::Idle }, false),
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

    fn exit1(message: &str) -> CliError {
        CliError::Exit {
            code: Some(1),
            message: message.into(),
        }
    }

    #[test]
    fn a_start_follows_only_when_no_tmux_session_of_the_restart_exists() {
        let timeout = CliError::Run(RunError::TimedOut(Duration::from_secs(30)));
        let locked = exit1("failed to save session state: database is locked (5) (SQLITE_BUSY)");
        let storage = exit1("Error: failed to initialize storage: unable to open database file");
        let missing = exit1("tmux session agentdeck_ops_1a2b3c4d not found (tmux_session_missing)");
        let unsaved = |store| Fallback::Unsaved { store };
        let table: [(Option<&CliError>, Option<bool>, Fallback); 15] = [
            (Some(&timeout), Some(true), unsaved(false)),
            (Some(&timeout), None, unsaved(false)),
            (Some(&timeout), Some(false), Fallback::Start),
            (Some(&locked), Some(true), unsaved(true)),
            (Some(&locked), None, unsaved(true)),
            (Some(&locked), Some(false), Fallback::StoreLocked),
            (Some(&storage), Some(true), unsaved(true)),
            (Some(&storage), None, unsaved(true)),
            (Some(&storage), Some(false), Fallback::StoreLocked),
            (Some(&missing), Some(true), unsaved(false)),
            (Some(&missing), None, Fallback::Start),
            (Some(&missing), Some(false), Fallback::Start),
            (None, Some(true), unsaved(false)),
            (None, None, Fallback::Start),
            (None, Some(false), Fallback::Start),
        ];
        for (answer, spawned, want) in table {
            let got = after_restart(answer, spawned);
            assert_eq!(
                got,
                want,
                "{:?} {spawned:?}",
                answer.map(ToString::to_string)
            );
        }
    }

    #[test]
    fn rate_limit_patterns() {
        for yes in [
            "API Error: Rate limit reached",
            "rate-limit exceeded",
            "got HTTP 429 from upstream",
            "HTTP/429",
            "error (429) too many",
            "You have exceeded your rate limit",
            "line one\nEXCEEDED the RATE LIMIT",
        ] {
            assert!(is_rate_limited(yes), "{yes}");
        }
        for no in [
            "all good",
            "moderate limit",
            "HTTP 4290",
            "429 apples",
            "exceeded the budget\nrate of progress",
        ] {
            assert!(!is_rate_limited(no), "{no}");
        }
    }

    // The machine, step by step.

    use crate::decide::limits::tests::lim;
    use crate::decide::liveness::PaneSamples;
    use crate::decide::refusal::Freshness;
    use crate::fleet::deck::{RestartAnswer, SpawnReason};
    use Status::{Error, Running};

    const ID: &str = "3f9c2a1b-1755891234";
    const AT: f64 = 1_755_900_000.0;
    const NOW: Now = Now {
        at: AT,
        shutdown: false,
        release: None,
    };

    /// The settings the tests run under: a 2 s liveness gap, 10 s of
    /// restart verification, 20 s of start verification.
    fn cfg() -> Config {
        let mut cfg = crate::config::test_config(std::path::Path::new("/nonexistent"));
        cfg.liveness_confirm_gap = Duration::from_secs(2);
        cfg.restart_verify = Duration::from_secs(10);
        cfg.start_verify = Duration::from_secs(20);
        cfg
    }

    /// What the liveness check found, for `reason`, leaning on `proof`.
    fn evidence(reason: LivenessReason, proof: Option<Proof>) -> Evidence {
        Evidence {
            reads: Vec::new(),
            pane: PaneSamples::default(),
            auth_hold_reason: None,
            reason,
            proof,
        }
    }

    fn confirmed(reason: LivenessReason) -> Event {
        let evidence = evidence(reason, None);
        Event::Confirmed {
            evidence,
            bare: false,
        }
    }

    /// The events of a revive up to its restart call: its turn, confirmed
    /// dead, recorded, noted.
    fn to_the_call() -> Vec<Event> {
        use Event::{Done, Waited};
        let dead = confirmed(LivenessReason::ConfirmedDead);
        vec![Done, Waited(Some(false)), dead, Done, Done]
    }

    /// [`to_the_call`], then agent-deck's `answer` to the restart.
    fn answered(answer: Result<RestartAnswer, CliError>) -> Vec<Event> {
        let mut events = to_the_call();
        events.push(Event::Restart { issued: AT, answer });
        events
    }

    fn spawn_failure(reason: SpawnReason) -> SpawnFailure {
        SpawnFailure {
            reason,
            dying_output_digest: None,
            elapsed_ms: Some(980),
        }
    }

    /// A restart or start that failed, saying its spawn failed for `reason`.
    fn spawn_failed(reason: SpawnReason) -> CliError {
        CliError::Spawn {
            code: Some(1),
            failure: spawn_failure(reason),
            message: "spawn failed".into(),
        }
    }

    /// A machine for [`ID`] of `kind` in `phase`, with no proof.
    fn machine<'a>(cfg: &'a Config, lim: &'a Limits, kind: Kind, phase: Phase) -> Machine<'a> {
        let (id, proof, dry_run) = (ID, None, false);
        Machine {
            id,
            kind,
            proof,
            dry_run,
            cfg,
            lim,
            phase,
        }
    }

    /// Runs a revive of [`ID`] through `events` over `st` at `now` (a dry
    /// run if `dry_run`): every action it asked for, in order.
    fn run_in(st: &mut State, now: Now, dry_run: bool, events: Vec<Event>) -> Vec<Action> {
        let (cfg, lim) = (cfg(), lim());
        let mut m = machine(&cfg, &lim, Kind::Revive, Phase::Start);
        m.dry_run = dry_run;
        events.into_iter().map(|e| m.step(e, st, now)).collect()
    }

    /// The last action of a revive through `events` over a fresh book.
    fn last(events: Vec<Event>) -> Action {
        let actions = run_in(&mut State::default(), NOW, false, events);
        actions.into_iter().last().unwrap()
    }

    fn done(outcome: Outcome) -> Action {
        Action::Done(outcome)
    }

    fn failed(why: &str, spawn: Option<SpawnFailure>) -> Action {
        let why = why.into();
        done(Outcome::Failed { why, spawn })
    }

    fn verify(secs: u64, warn: Option<&str>) -> Action {
        let warn = warn.map(|w| format!("{ID}: {w}"));
        Action::Verify {
            within: Duration::from_secs(secs),
            warn,
        }
    }

    #[test]
    fn a_revive_goes_from_its_turn_to_the_restart_call_in_order() {
        let mut events = to_the_call();
        events.push(Event::Restart {
            issued: AT,
            answer: Ok(RestartAnswer::Restarted),
        });
        events.push(Event::Verified(Some(Running)));
        let mut st = State::default();
        let actions = run_in(&mut st, NOW, false, events);
        let dead = evidence(LivenessReason::ConfirmedDead, None);
        #[rustfmt::skip]
        let want = [
            Action::WaitSent,
            Action::Confirm { shown: true },
            Action::Dead { evidence: dead, gap_s: 2.0 },
            Action::RecordCall { cascade: None },
            Action::CallRestart,
            verify(10, None),
            done(Outcome::Restarted { status: Running }),
        ];
        assert_eq!(actions, want);
        let book = &st.sessions[ID];
        assert_eq!(
            (book.restarted_at, st.last_restart_at),
            (Some(AT), Some(AT))
        );
    }

    #[test]
    fn a_job_waits_its_turn_and_then_reads_a_proven_death_afresh() {
        use Event::{Done, Waited};
        let mut st = State {
            last_restart_at: Some(AT - 20.0),
            ..State::default()
        };
        let events = vec![Done, Waited(Some(false)), Waited(Some(true))];
        let actions = run_in(&mut st, NOW, false, events);
        assert_eq!(actions[1], Action::Sleep(40.0), "min_interval 60 s");
        assert_eq!(actions[2], Action::Sleep(40.0), "the clock did not move");
        st.last_restart_at = None;
        let events = vec![Done, Waited(Some(true))];
        let actions = run_in(&mut st, NOW, false, events);
        assert_eq!(actions[1], Action::Confirm { shown: false });
        let events = vec![Done, Waited(Some(false))];
        let actions = run_in(&mut st, NOW, false, events);
        assert_eq!(actions[1], Action::Confirm { shown: true });
    }

    #[test]
    fn a_job_is_dropped_on_shutdown_by_a_gate_or_a_stop() {
        use Event::{Done, Waited};
        let dropped = |why| done(Outcome::Dropped(why));
        let mut st = State::default();
        assert_eq!(last(vec![Done, Waited(None)]), dropped(Dropped::Shutdown));
        let (mut held, mut stopped) = (State::default(), State::default());
        held.breaker_open_until = AT + 1.0;
        stopped.stopped.insert(ID.into());
        for (st, want) in [
            (&mut held, Dropped::Held(Hold::BreakerOpen)),
            (&mut stopped, Dropped::Stopped),
        ] {
            let actions = run_in(st, NOW, false, vec![Done, Waited(Some(false))]);
            assert_eq!(actions[1], dropped(want));
        }
        let after_sleep = vec![Done, Waited(Some(false)), Waited(None)];
        st.last_restart_at = Some(AT);
        let actions = run_in(&mut st, NOW, false, after_sleep);
        assert_eq!(actions[2], dropped(Dropped::Shutdown));
    }

    #[test]
    fn a_resume_passes_no_gate_and_a_poller_restart_only_the_recheck() {
        use Event::{Done, Ended, Waited};
        let (cfg, lim) = (cfg(), lim());
        let mut st = State {
            breaker_open_until: AT + 1.0,
            ..State::default()
        };
        let mut want = [
            Action::Resume,
            done(Outcome::Dropped(Dropped::Held(Hold::BreakerOpen))),
        ];
        for kind in [Kind::Resume, Kind::Poller] {
            let mut m = machine(&cfg, &lim, kind, Phase::Start);
            m.step(Done, &mut st, NOW);
            assert_eq!(m.step(Waited(Some(false)), &mut st, NOW), want[0]);
            st.breaker_open_until = 0.0;
            want = [Action::Poller, Action::Poller];
        }
        let mut m = machine(&cfg, &lim, Kind::Poller, Phase::Start);
        m.step(Done, &mut st, NOW);
        assert_eq!(m.step(Waited(Some(false)), &mut st, NOW), Action::Poller);
        let ended = Outcome::Dropped(Dropped::NoStall);
        assert_eq!(m.step(Ended(ended.clone()), &mut st, NOW), done(ended));
    }

    #[test]
    fn a_session_the_liveness_check_finds_alive_is_left_alone_with_its_gap() {
        use LivenessReason::*;
        let (cfg, lim) = (cfg(), lim());
        #[rustfmt::skip]
        let table = [
            // proof the watch had, what the check found, bare shell still, kept?, gap
            (None, PaneActive, false, Some(PaneActive), 2.0),
            (None, AuthHold, false, Some(AuthHold), 2.0),
            (Some(Proof::ProcessExited), RecoveredBeforeRestart, false, Some(RecoveredBeforeRestart), 2.0),
            (Some(Proof::AgentGone), ConfirmedDead, false, Some(RecoveredBeforeRestart), 0.0),
            (Some(Proof::AgentGone), ConfirmedDead, true, None, 0.0),
            (Some(Proof::ProcessExited), ConfirmedDead, false, None, 0.0),
            (None, ConfirmedDead, false, None, 2.0),
        ];
        for (proof, found, bare, alive, gap_s) in table {
            let mut m = machine(&cfg, &lim, Kind::Revive, Phase::Confirming);
            m.proof = proof;
            // confirm() sets the proof it leaned on when it skipped the gap.
            let leaned = proof.filter(|_| found == ConfirmedDead);
            let seen = evidence(found, leaned);
            let event = Event::Confirmed {
                evidence: seen,
                bare,
            };
            let got = m.step(event, &mut State::default(), NOW);
            let want = match alive {
                Some(reason) => done(Outcome::Alive {
                    evidence: evidence(reason, leaned),
                    gap_s,
                }),
                None => Action::Dead {
                    evidence: evidence(ConfirmedDead, leaned),
                    gap_s,
                },
            };
            assert_eq!(got, want, "{proof:?} {found:?} bare {bare}");
        }
    }

    #[test]
    fn the_call_that_makes_a_burst_escalates_the_cascade_before_its_record() {
        let mut st = State {
            recent_restarts: vec![AT - 1.0; 4],
            ..State::default()
        };
        let actions = run_in(&mut st, NOW, false, to_the_call());
        let cascade = "5 restarts within 10s — pausing every restart for 60s";
        assert_eq!(
            actions[3],
            Action::RecordCall {
                cascade: Some(cascade.into())
            }
        );
        assert!(st.cascade_pause_until > AT);
    }

    #[test]
    fn a_dry_run_ends_after_its_record_with_no_call() {
        let actions = run_in(&mut State::default(), NOW, true, to_the_call());
        assert_eq!(actions[4], done(Outcome::WouldRestart));
    }

    #[test]
    fn a_skipped_answer_is_a_refusal_that_says_whether_it_is_freshness() {
        let fresh = "session is running and was started 8s ago (within 1m0s freshness window)";
        #[rustfmt::skip]
        let table = [
            (fresh, Some(Freshness { age: Some(8.0), window: Some(60.0) })),
            ("claude login expired", None),
        ];
        for (reason, want) in table {
            let skipped = Ok(RestartAnswer::Skipped(reason.into()));
            let Action::Done(Outcome::Refused { fresh, call, .. }) = last(answered(skipped)) else {
                panic!("{reason}: no refusal");
            };
            assert_eq!((fresh, call.at), (want, AT), "{reason}");
        }
    }

    #[test]
    fn an_answered_call_ends_the_run_of_refusals_and_a_restarted_one_is_noted() {
        let mut st = State::default();
        st.book(ID).refusal = Some(crate::decide::book::Refusal {
            first_at: AT,
            refused: 1,
            retry_at: None,
        });
        let events = answered(Err(exit1("boom")));
        run_in(&mut st, NOW, false, events);
        let book = &st.sessions[ID];
        assert_eq!((&book.refusal, book.restarted_at), (&None, None));
    }

    #[test]
    fn each_answer_to_the_restart_leads_to_one_poll_or_ending() {
        use SpawnReason::*;
        let fresh = || Ok(RestartAnswer::Restarted);
        let died = spawn_failed(DiedFast);
        #[rustfmt::skip]
        let table = [
            (fresh(), verify(10, None)),
            (Err(spawn_failed(Unverified)), verify(10, Some("restart exited 1: spawn failed (reason: spawn_unverified); agent-deck could not tell whether it came up, so its status is polled as after a success"))),
            (Err(exit1("boom")), Action::Verify { within: Duration::from_secs(10), warn: Some(format!("restart of {ID} failed: restart exited 1: boom; reading its status before the start fallback")) }),
            (Err(died), failed("restart exited 1: spawn failed (reason: spawn_died_fast)", Some(spawn_failure(DiedFast)))),
        ];
        for (answer, want) in table {
            let got = last(answered(answer));
            assert_eq!(got, want);
        }
    }

    /// A revive whose restart answered `answer`, then read `status`.
    fn verified(answer: Result<RestartAnswer, CliError>, status: Option<Status>) -> Vec<Event> {
        let mut events = answered(answer);
        events.push(Event::Verified(status));
        events
    }

    #[test]
    fn each_status_read_after_the_restart_leads_to_one_next_step() {
        let ok = || Ok(RestartAnswer::Restarted);
        let unverified = || Err(spawn_failed(SpawnReason::Unverified));
        let restarted = |status| done(Outcome::Restarted { status });
        let unread = "status unreadable after restart";
        #[rustfmt::skip]
        let table = [
            (verified(ok(), Some(Running)), restarted(Running)),
            (verified(Err(exit1("boom")), Some(Running)), restarted(Running)),
            (verified(ok(), Some(Error)), Action::ReadHook { issued: AT }),
            (verified(unverified(), Some(Error)), Action::ReadHook { issued: AT }),
            (verified(Err(exit1("boom")), Some(Error)), Action::ListTmux),
            (verified(ok(), None), done(Outcome::Unverified { why: unread.into() })),
            (verified(unverified(), None), done(Outcome::Unverified { why: format!("restart exited 1: spawn failed (reason: spawn_unverified); {unread}") })),
            (verified(Err(exit1("boom")), None), Action::ListTmux),
        ];
        for (events, want) in table {
            assert_eq!(last(events), want);
        }
        // Only a stale hook says error: a success; else the fallback.
        for (stale, want) in [(true, restarted(Error)), (false, Action::ListTmux)] {
            let mut events = verified(ok(), Some(Error));
            events.push(Event::Hook(stale));
            assert_eq!(last(events), want, "{stale}");
        }
        // A failed or unverified answer that came up is noted restarted then.
        let mut st = State::default();
        run_in(&mut st, NOW, false, verified(unverified(), Some(Running)));
        assert_eq!(st.sessions[ID].restarted_at, Some(AT));
    }

    #[test]
    fn shutdown_during_verification_interrupts_the_fallback_and_the_unread() {
        let interrupted = done(Outcome::Interrupted {
            why: "shutdown during verification".into(),
        });
        let down = Now {
            shutdown: true,
            ..NOW
        };
        for status in [Some(Error), None] {
            let events = verified(Err(exit1("boom")), status);
            let actions = run_in(&mut State::default(), down, false, events);
            assert_eq!(actions.last(), Some(&interrupted), "{status:?}");
        }
        let events = verified(Ok(RestartAnswer::Restarted), None);
        let actions = run_in(&mut State::default(), down, false, events);
        assert_eq!(actions.last(), Some(&interrupted));
    }

    /// A revive whose restart failed for `e`, read `error` after it, then
    /// listed tmux as `listed`.
    fn listed(e: CliError, listed: Option<Option<&str>>) -> Vec<Event> {
        let mut events = verified(Err(e), Some(Error));
        events.push(Event::Listed(listed.map(|l| l.map(str::to_owned))));
        events
    }

    #[test]
    fn the_fallback_starts_only_when_no_tmux_session_of_the_restart_exists() {
        let locked = || exit1("failed to save session state: database is locked");
        let why = "restart exited 1: failed to save session state: database is locked";
        let unsaved = |tmux: Option<&str>, store| {
            let (why, tmux) = (why.to_owned(), tmux.map(str::to_owned));
            done(Outcome::Unsaved { why, tmux, store })
        };
        let start = Action::CallStart {
            warn: format!("{ID}: restart exited 1: boom; falling back to session start"),
        };
        #[rustfmt::skip]
        let table = [
            (listed(locked(), Some(Some("ops_2"))), unsaved(Some("ops_2"), true)),
            (listed(locked(), None), unsaved(None, true)),
            (listed(locked(), Some(None)), done(Outcome::StoreLocked { why: why.into() })),
            (listed(exit1("boom"), Some(None)), start.clone()),
            (listed(exit1("boom"), None), start),
        ];
        for (events, want) in table {
            assert_eq!(last(events), want);
        }
        // A restart that said it worked and still reads error.
        let mut events = verified(Ok(RestartAnswer::Restarted), Some(Error));
        events.extend([Event::Hook(false), Event::Listed(Some(None))]);
        let warn = format!("{ID}: still in error after the restart; falling back to session start");
        assert_eq!(last(events), Action::CallStart { warn });
    }

    /// A revive that fell back to `session start`, which answered `started`.
    fn started(started: Result<(), CliError>) -> Vec<Event> {
        let mut events = listed(exit1("boom"), Some(None));
        events.push(Event::Started(started));
        events
    }

    #[test]
    fn each_answer_to_the_start_and_the_status_after_it_leads_to_one_ending() {
        use SpawnReason::*;
        let then = |mut events: Vec<Event>, more: Vec<Event>| {
            events.extend(more);
            events
        };
        let restarted = |status| done(Outcome::Restarted { status });
        let lead = "restart exited 1: boom; fallback start exited 1:";
        let unverified = || Err(spawn_failed(Unverified));
        let unverified_spawn = Some(spawn_failure(Unverified));
        let verify_start = Action::Verify {
            within: Duration::from_secs(20),
            warn: Some(format!("{ID}: {lead} spawn failed (reason: spawn_unverified); agent-deck could not tell whether it came up, so its status is polled as after a success")),
        };
        #[rustfmt::skip]
        let table = [
            (started(Ok(())), verify(20, None)),
            (started(unverified()), verify_start),
            (started(Err(spawn_failed(DiedFast))), failed(&format!("{lead} spawn failed (reason: spawn_died_fast)"), Some(spawn_failure(DiedFast)))),
            (started(Err(exit1("nope"))), Action::ReadTranscript),
            (started(Err(spawn_failed(TmuxSessionMissing))), Action::ReadTranscript),
            (then(started(Ok(())), vec![Event::Verified(Some(Running))]), restarted(Running)),
            (then(started(unverified()), vec![Event::Verified(Some(Running))]), restarted(Running)),
            (then(started(Ok(())), vec![Event::Verified(None)]),
             done(Outcome::Unverified { why: "restart exited 1: boom; status unreadable after start".into() })),
            (then(started(unverified()), vec![Event::Verified(None)]),
             done(Outcome::Unverified { why: format!("{lead} spawn failed (reason: spawn_unverified); status unreadable after start") })),
            (then(started(Ok(())), vec![Event::Verified(Some(Error)), Event::Transcript(String::new()), Event::Resumed(None)]),
             failed("fallback start returned success but status still error after 20s", None)),
            (then(started(unverified()), vec![Event::Verified(Some(Error)), Event::Transcript(String::new()), Event::Resumed(None)]),
             failed(&format!("{lead} spawn failed (reason: spawn_unverified); status still error after 20s"), unverified_spawn)),
            (then(started(Err(exit1("nope"))), vec![Event::Transcript(String::new()), Event::Resumed(None)]),
             failed(&format!("{lead} nope"), None)),
        ];
        for (events, want) in table {
            assert_eq!(last(events), want);
        }
        let mut st = State::default();
        run_in(&mut st, NOW, false, started(Ok(())));
        assert!(st.ran.contains(ID), "a start that worked is noted run");
        let mut st = State::default();
        let events = then(started(unverified()), vec![Event::Verified(Some(Running))]);
        run_in(&mut st, NOW, false, events);
        assert!(st.ran.contains(ID), "so is an unverified one that came up");
    }

    #[test]
    fn a_failure_is_a_429_a_prompt_resume_or_a_failure_unless_shutdown_cut_it_short() {
        let failing = || started(Err(exit1("nope")));
        let then = |more: Vec<Event>| {
            let mut events = failing();
            events.extend(more);
            events
        };
        let why = "restart exited 1: boom; fallback start exited 1: nope";
        let text = "API Error: HTTP 429 Too Many Requests";
        #[rustfmt::skip]
        let table = [
            (then(vec![Event::Transcript(text.into())]), done(Outcome::RateLimited)),
            (then(vec![Event::Transcript("quiet".into())]), Action::PromptResume("quiet".into())),
            (then(vec![Event::Transcript("quiet".into()), Event::Resumed(Some(Running))]),
             done(Outcome::Restarted { status: Running })),
            (then(vec![Event::Transcript("quiet".into()), Event::Resumed(None)]), failed(why, None)),
        ];
        for (events, want) in table {
            assert_eq!(last(events), want);
        }
        // Shutdown came while the start ran.
        let (cfg, lim) = (cfg(), lim());
        let (mut m, mut st) = (
            machine(&cfg, &lim, Kind::Revive, Phase::Start),
            State::default(),
        );
        let mut events = failing();
        let started = events.pop().unwrap();
        for event in events {
            m.step(event, &mut st, NOW);
        }
        let down = Now {
            shutdown: true,
            ..NOW
        };
        let why = why.into();
        let want = done(Outcome::Interrupted { why });
        assert_eq!(m.step(started, &mut st, down), want);
    }
}
