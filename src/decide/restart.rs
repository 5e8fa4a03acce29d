//! One revive as a machine, pure (SPEC §5.3–§5.5): [`Machine::step`] takes
//! what came of the last [`Action`] (an [`Event`]) and the restart book,
//! and says the one next thing to do, until the job is [`Action::Done`]
//! with its [`Outcome`]. `act/job_worker.rs` performs the actions; nothing
//! here calls, sleeps, logs or writes a file.
//!
//! Its rules: what agent-deck's answer to a restart or start leads to
//! ([`Machine::answered`]); an `error` read after a restart agent-deck
//! carried out may come only from a stale `dead` hook (agent-deck honours
//! one for two minutes of its age), which is no failure; a `skipped` answer
//! (a refusal) keeps nothing of the attempt ([`crate::decide::restart::refusal`]);
//! a failed boot that hit an API rate limit is no crash
//! ([`is_rate_limited`]). And never a second agent (#32): with agent-deck's
//! store locked, 1.14.0's `session restart` spawns its new tmux session and
//! then fails to save it (`database is locked`), or our timeout kills it
//! first; the store still names the old tmux session, so the session reads
//! `error`, and a `session start` would spawn a second agent beside the
//! unsaved one. So the fallback looks at tmux's own listing first: it
//! starts only when no tmux session of this one was created since the
//! restart began.
//!
//! Beside it, what a restart must pass: the gates (`gates.rs`), agent-deck's
//! freshness guard (`refusal.rs`), the liveness confirmation before a pane is
//! torn down (`liveness.rs`) and whether agent-deck's store could be read
//! (`store.rs`).

pub(crate) mod gates;
pub(crate) mod liveness;
pub(crate) mod refusal;
pub(crate) mod store;

use std::time::Duration;

use crate::config::Config;
use crate::decide::book::State;
use crate::decide::limits::Limits;
use crate::decide::outcomes::RestartAction;
use crate::decide::restart::gates::Hold;
use crate::decide::restart::liveness::{Evidence, LivenessReason};
use crate::decide::stall::Stall;
use crate::decide::{book::cascade, book::notes, book::stop};
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
    /// ([`crate::decide::restart::refusal`] says when).
    Refused {
        reason: String,
        fresh: Option<crate::decide::restart::refusal::Freshness>,
        call: crate::decide::book::cascade::Call,
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
    /// Our own shutdown cut it short after its call went out: its slot
    /// stays spent, so the watchdog started again counts it.
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
    /// ([`crate::decide::restart::refusal::note_refused`]).
    pub(crate) fn gives_back(&self) -> bool {
        match self {
            Outcome::Refused { fresh, .. } => fresh.is_none(),
            Outcome::Dropped(_)
            | Outcome::Alive { .. }
            | Outcome::StoreLocked { .. }
            | Outcome::RateLimited => true,
            _ => false,
        }
    }

    /// Whether a restart call went out and agent-deck did not decline it:
    /// the old pane is gone, so what the pane watch said of it (a bare
    /// shell) is no proof about the new one.
    pub(crate) fn called_restart(&self) -> bool {
        matches!(
            self,
            Outcome::Restarted { .. }
                | Outcome::Failed { .. }
                | Outcome::RateLimited
                | Outcome::Unsaved { .. }
                | Outcome::StoreLocked { .. }
                | Outcome::Unverified { .. }
                | Outcome::Interrupted { .. }
        )
    }
}

/// What a job does to its session. A revive is the machine's whole run;
/// the others only share its turn (a stall's resume, before the gates; a
/// poller restart, after them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JobKind {
    /// It is in error: confirm it is dead, restart, verify, fall back.
    Revive,
    /// It is alive but its Telegram poller process is missing (SPEC §6.1).
    PollerMissing,
    /// It is alive, its poller process too, but Telegram updates stayed
    /// unread on this many checks in a row (SPEC §6.5).
    PollerDeaf { pending: Vec<u64> },
    /// It is stalled (SPEC §14): one resume message, never a restart.
    Resume,
}

/// What the machine reads afresh at each step: the time, whether our own
/// shutdown has begun, and the agent-deck release read last.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Now {
    pub at: f64,
    pub shutdown: bool,
    pub release: Option<Version>,
}

/// One thing to do. Each log line is said by the action it leads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Action {
    /// Wait until no continuity message to it is queued or in flight.
    WaitSent,
    /// Say so, and wait this many seconds for the serialization.
    Sleep(f64),
    /// Run the stall's resume, or the poller restart, to its ending.
    Resume,
    Poller,
    /// Confirm the death (SPEC §5.3), leaning on the `session show` that
    /// found a proven death if true (the job did not wait since).
    Confirm(bool),
    /// Say it is confirmed dead, and write its `liveness.log` record.
    Dead {
        evidence: Evidence,
        gap_s: f64,
    },
    /// Escalate the burst this call makes, if it does, and write the
    /// `restart` record.
    RecordCall(Option<String>),
    /// Say so, and call `session restart`.
    CallRestart,
    /// Say `warn`, if any, and poll the status for `within`.
    Verify {
        within: Duration,
        warn: Option<String>,
    },
    /// Whether only a `dead` hook from before the restart issued at
    /// `issued` says `error` (said if so).
    ReadHook(f64),
    /// List tmux for a session of it agent-deck does not know.
    ListTmux,
    /// End the tmux session its last restart left unsaved, once a fresh
    /// listing still shows it and agent-deck still does not know it.
    EndUnsaved(String),
    /// Say this, and call `session start`.
    CallStart(String),
    ReadTranscript,
    /// Prompt-resume (SPEC §6.4), over this transcript.
    PromptResume(String),
    /// The job ended so.
    Done(Outcome),
}

/// What came of an action.
#[derive(Debug)]
pub(crate) enum Event {
    /// Done, with nothing to tell (and the first event).
    Done,
    /// A wait ended: whether it had to wait; `None`: shutdown came.
    Waited(Option<bool>),
    /// The resume or poller restart ended so.
    Ended(Outcome),
    /// `bare`: the pane watch still finds its pane a bare shell.
    Confirmed {
        evidence: Evidence,
        bare: bool,
    },
    Restart {
        issued: f64,
        answer: Result<RestartAnswer, CliError>,
    },
    Verified(Verified),
    Hook(bool),
    /// Its tmux session agent-deck does not know; `None`: tmux unreadable.
    Listed(Option<Option<String>>),
    /// Whether the unsaved tmux session was ended.
    EndedUnsaved(bool),
    Started(Result<(), CliError>),
    Transcript(String),
}

/// What the status poll after a call read: the last status (`None`: no
/// read worked), and the tmux session of the read that found it out of
/// `error` (a custom tool's restart changes it).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Verified {
    pub status: Option<Status>,
    pub tmux: Option<String>,
}

/// A read that named no tmux session (the tables' shorthand).
#[cfg(test)]
impl From<Option<Status>> for Verified {
    fn from(status: Option<Status>) -> Verified {
        Verified { status, tmux: None }
    }
}

/// Where a job is, with what it carries.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Phase {
    Start,
    /// Waiting its turn; `waited`: whether it had to.
    Turn(bool),
    Confirming,
    /// Confirmed dead and recorded: its call is noted next.
    Dead,
    /// Ending the tmux session its last restart left unsaved.
    Ending,
    /// The call noted (what it took from the book), recorded, then called.
    Noted(cascade::Call),
    /// Polling after the call.
    Verifying(Tried),
    /// Reading `error` after a restart agent-deck carried out.
    Hook(Tried),
    /// Listing tmux before the fallback.
    Listing(Tried),
    Starting(Tried),
    /// A failure, unless a 429 or prompt-resume says otherwise.
    Failing {
        why: String,
        spawn: Option<SpawnFailure>,
    },
}

/// What the restart, and the start after it, left.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tried {
    pub issued: f64,
    /// The call was the `session start` fallback.
    pub start: bool,
    /// What the restart did, which leads the start's reasons.
    pub why: String,
    /// The call's failure, as said.
    pub failed: Option<String>,
    /// Why agent-deck said a spawn failed, the start's before the restart's.
    pub spawn: Option<SpawnFailure>,
    /// agent-deck carried the call out, or may have (an unverified spawn).
    pub carried_out: bool,
    /// The restart's answer said agent-deck's store could not be read.
    pub store: bool,
    /// The restart may have spawned a tmux session: it timed out, or its
    /// store could not be read.
    pub may_have_spawned: bool,
}

/// One job's machine: its facts, fixed for its run, and its phase.
pub(crate) struct Machine<'a> {
    pub id: &'a str,
    pub kind: &'a JobKind,
    /// How the pane watch proved the death, when it did.
    pub proof: Option<Proof>,
    /// The tmux session its last restart left unsaved, to end first.
    pub ending: Option<&'a str>,
    pub dry_run: bool,
    pub cfg: &'a Config,
    pub lim: &'a Limits,
    pub phase: Phase,
}

impl Machine<'_> {
    /// The next action after `event`, over the book `st` (the one lock of
    /// the step), at `now`.
    pub(crate) fn step(&mut self, event: Event, st: &mut State, now: Now) -> Action {
        use Action::Done;
        let id = self.id;
        match (std::mem::replace(&mut self.phase, Phase::Start), event) {
            (_, Event::Ended(outcome)) => Done(outcome),
            (Phase::Start, Event::Done) => self.to(Phase::Turn(false), Action::WaitSent),
            (Phase::Turn(_), Event::Waited(None)) => Done(Outcome::Dropped(Dropped::Shutdown)),
            (Phase::Turn(waited), Event::Waited(Some(w))) => self.turn(st, now, waited || w),
            (Phase::Confirming, Event::Confirmed { evidence, bare }) => {
                self.confirmed(evidence, bare)
            }
            (Phase::Dead, Event::Done) => match self.ending {
                Some(name) if !self.dry_run => {
                    self.to(Phase::Ending, Action::EndUnsaved(name.to_owned()))
                }
                _ => self.note(st, now),
            },
            (Phase::Ending, Event::EndedUnsaved(false)) => {
                Done(Outcome::Dropped(Dropped::Held(Hold::UnsavedAgent)))
            }
            (Phase::Ending, Event::EndedUnsaved(true)) => {
                let book = st.book(id);
                (book.unsaved, book.unsaved_ended_at) = (None, Some(now.at));
                self.note(st, now)
            }
            (Phase::Noted(_), Event::Done) if self.dry_run => Done(Outcome::WouldRestart),
            (Phase::Noted(call), Event::Done) => self.to(Phase::Noted(call), Action::CallRestart),
            (Phase::Noted(call), Event::Restart { issued, answer }) => {
                let e = match answer {
                    Ok(RestartAnswer::Skipped(reason)) => {
                        let fresh = refusal::freshness(&reason);
                        return Done(Outcome::Refused {
                            reason,
                            fresh,
                            call,
                        });
                    }
                    Ok(RestartAnswer::Restarted) => None,
                    Err(e) => Some(e),
                };
                refusal::note_answered(st, id);
                if e.is_none() {
                    notes::note_restarted(st, id, issued);
                }
                let failed = e.as_ref().map(|e| format!("restart {e}"));
                let store = failed.as_deref().is_some_and(store::says_unreadable);
                let timed_out = matches!(e, Some(CliError::Run(RunError::TimedOut(_))));
                let tried = Tried {
                    issued,
                    start: false,
                    why: (failed.clone())
                        .unwrap_or_else(|| "still in error after the restart".into()),
                    failed,
                    spawn: e.as_ref().and_then(CliError::spawn).cloned(),
                    carried_out: true,
                    store,
                    may_have_spawned: store || timed_out,
                };
                self.answered(now, tried, e.as_ref())
            }
            (
                Phase::Verifying(t),
                Event::Verified(Verified {
                    status: Some(status),
                    tmux,
                }),
            ) if status != Status::Error => self.came_up(st, t, status, tmux),
            (Phase::Verifying(t), Event::Verified(v))
                if v.status.is_some() && t.carried_out && !t.start =>
            {
                let issued = t.issued;
                self.to(Phase::Hook(t), Action::ReadHook(issued))
            }
            (Phase::Verifying(t), Event::Verified(v)) if v.status.is_none() && t.carried_out => {
                let (after, lead) = match t.start {
                    true => ("start", t.failed.or(Some(t.why))),
                    false => ("restart", t.failed),
                };
                if now.shutdown {
                    return interrupted();
                }
                let why = match lead {
                    Some(lead) => format!("{lead}; status unreadable after {after}"),
                    None => format!("status unreadable after {after}"),
                };
                Done(Outcome::Unverified { why })
            }
            (Phase::Verifying(t), Event::Verified(_)) if t.start => {
                let secs = self.cfg.start_verify.as_secs_f64();
                let why = match t.failed {
                    Some(why) => format!("{why}; status still error after {secs:.0}s"),
                    None => format!(
                        "fallback start returned success but status still error after {secs:.0}s"
                    ),
                };
                self.failed(now, why, t.spawn)
            }
            (Phase::Hook(t), Event::Hook(true)) => self.came_up(st, t, Status::Error, None),
            (Phase::Verifying(_) | Phase::Hook(_), _) if now.shutdown => interrupted(),
            (Phase::Verifying(t) | Phase::Hook(t), _) => {
                self.to(Phase::Listing(t), Action::ListTmux)
            }
            (Phase::Listing(t), Event::Listed(spawned)) => {
                match spawned.as_ref().map(Option::is_some) {
                    Some(true) => {}
                    None if t.may_have_spawned => {}
                    Some(false) if t.store => return Done(Outcome::StoreLocked { why: t.why }),
                    _ => {
                        let warn = format!("{id}: {}; falling back to session start", t.why);
                        return self.to(Phase::Starting(t), Action::CallStart(warn));
                    }
                }
                let tmux = spawned.flatten();
                let (why, store) = (t.why, t.store);
                Done(Outcome::Unsaved { why, tmux, store })
            }
            (Phase::Starting(mut t), Event::Started(started)) => {
                let e = started.err();
                (t.start, t.carried_out) = (true, true);
                t.failed = e.as_ref().map(|e| format!("{}; fallback start {e}", t.why));
                t.spawn = e.as_ref().and_then(CliError::spawn).cloned().or(t.spawn);
                if e.is_none() {
                    notes::note_ran(st, id);
                }
                self.answered(now, t, e.as_ref())
            }
            (Phase::Failing { why, spawn }, Event::Transcript(text)) => {
                if is_rate_limited(&text) {
                    return Done(Outcome::RateLimited);
                }
                self.to(Phase::Failing { why, spawn }, Action::PromptResume(text))
            }
            (Phase::Failing { why, spawn }, Event::Verified(v)) => match v.status {
                Some(status) => Done(Outcome::Restarted {
                    status,
                    tmux: v.tmux,
                }),
                None => Done(Outcome::Failed { why, spawn }),
            },
            (phase, event) => unreachable!("restart of {id}: {event:?} in {phase:?}"),
        }
    }

    fn to(&mut self, phase: Phase, action: Action) -> Action {
        self.phase = phase;
        action
    }

    /// The call about to go out is noted (a burst it makes is said), then
    /// recorded.
    fn note(&mut self, st: &mut State, now: Now) -> Action {
        let lim = self.lim;
        let (burst, call) = cascade::note_call(st, lim, self.id, now.at);
        let cascade = burst.then(|| {
            format!(
                "{} restarts within {:.0}s — pausing every restart for {:.0}s",
                lim.cascade_threshold, lim.cascade_window, lim.cascade_pause
            )
        });
        self.to(Phase::Noted(call), Action::RecordCall(cascade))
    }

    /// Its turn in the serialization, then the last gates (a resume passes
    /// none, a poller restart only the re-check) and a stop seen meanwhile.
    fn turn(&mut self, st: &mut State, now: Now, waited: bool) -> Action {
        let wait = gates::serialization_wait(st, self.lim, now.at);
        if wait > 0.0 {
            return self.to(Phase::Turn(true), Action::Sleep(wait));
        }
        if *self.kind == JobKind::Resume {
            return Action::Resume;
        }
        if let Some(why) = gates::recheck(st, self.id, now.at, self.ending) {
            return Action::Done(Outcome::Dropped(Dropped::Held(why)));
        }
        if *self.kind != JobKind::Revive {
            return Action::Poller;
        }
        if stop::held_by_stop(st, self.id, now.release) {
            return Action::Done(Outcome::Dropped(Dropped::Stopped));
        }
        self.to(Phase::Confirming, Action::Confirm(!waited))
    }

    /// What the liveness check found. An agent-gone death whose bare shell
    /// the watch no longer finds has its agent back; a kernel-proven death
    /// waited no gap (SPEC §5.3).
    fn confirmed(&mut self, mut evidence: Evidence, bare: bool) -> Action {
        let dead = evidence.reason == LivenessReason::ConfirmedDead;
        if self.proof == Some(Proof::AgentGone) && dead && !bare {
            evidence.reason = LivenessReason::RecoveredBeforeRestart;
        }
        let gap = self.cfg.liveness_confirm_gap;
        let gap_s = liveness::settle(evidence.proof, gap).as_secs_f64();
        if evidence.reason != LivenessReason::ConfirmedDead {
            return Action::Done(Outcome::Alive { evidence, gap_s });
        }
        self.to(Phase::Dead, Action::Dead { evidence, gap_s })
    }

    /// After agent-deck answered the call `t` says, failing with `e` if it
    /// did (SPEC §5.5). A spawn that died at once is held, with no start:
    /// a start cannot fix it (#2099). One agent-deck could not verify may
    /// be up, so it is polled as a success. Any other failure of a restart
    /// is polled too, then falls back to a start (agent-deck's own guards
    /// refuse one that could not be right); of a start, it is a failure.
    fn answered(&mut self, now: Now, mut t: Tried, e: Option<&CliError>) -> Action {
        let within = if t.start {
            self.cfg.start_verify
        } else {
            self.cfg.restart_verify
        };
        let Some(why) = t.failed.clone() else {
            return self.to(Phase::Verifying(t), Action::Verify { within, warn: None });
        };
        let id = self.id;
        let warn = match e.and_then(CliError::spawn).map(|f| &f.reason) {
            Some(SpawnReason::DiedFast) => {
                let spawn = t.spawn;
                return Action::Done(Outcome::Failed { why, spawn });
            }
            Some(SpawnReason::Unverified) => format!(
                "{id}: {why}; agent-deck could not tell whether it came up, so its status is polled as after a success"
            ),
            _ if t.start => return self.failed(now, why, t.spawn),
            _ => {
                t.carried_out = false;
                format!("restart of {id} failed: {why}; reading its status before the start fallback")
            }
        };
        let warn = Some(warn);
        self.to(Phase::Verifying(t), Action::Verify { within, warn })
    }

    /// It came up after `t`, reading `status` (or only a stale hook says
    /// `error`); a failed or unverified answer is noted now.
    fn came_up(
        &mut self,
        st: &mut State,
        t: Tried,
        status: Status,
        tmux: Option<String>,
    ) -> Action {
        if t.failed.is_some() {
            if t.start {
                notes::note_ran(st, self.id);
            } else {
                notes::note_restarted(st, self.id, t.issued);
            }
        }
        Action::Done(Outcome::Restarted { status, tmux })
    }

    /// A failed restart, for `why`: cut short by our own shutdown, else
    /// the transcript says whether it was a 429, and prompt-resume may
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

/// What a later look that reads `status` makes of a call no status read
/// after it could verify ([`Outcome::Unverified`]): whether it failed.
/// `error` is a failure then, unless only a stale `dead` hook from before
/// the restart says so (`stale_hook`); anything else is a success.
pub(crate) fn unread_failed(status: Status, stale_hook: bool) -> bool {
    status == Status::Error && !stale_hook
}

/// Whether a transcript shows an API rate limit (HTTP 429).
fn is_rate_limited(text: &str) -> bool {
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
    fn a_status_read_later_decides_what_an_unread_call_was() {
        use Status::*;
        #[rustfmt::skip]
        let table = [
            // status at the later look, only a stale hook says error, failed
            (Running, false, false),
            (Waiting, false, false),
            (Stopped, false, false),
            (Error, true, false),
            (Error, false, true),
        ];
        for (status, stale, want) in table {
            assert_eq!(unread_failed(status, stale), want, "{status:?} {stale}");
        }
    }

    /// Each ending: whether its slot goes back, and whether a restart call
    /// went out that agent-deck did not decline.
    #[test]
    fn each_ending_says_if_its_slot_goes_back_and_if_a_restart_call_went_out() {
        use crate::decide::restart::liveness::{Evidence, LivenessReason};
        let why = || "w".to_owned();
        let fresh = Some(crate::decide::restart::refusal::Freshness {
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
            (Outcome::Restarted { status: Status::Idle, tmux: None }, false, true),
            (Outcome::WouldRestart, false, false),
            (refused(None), true, false),
            // A freshness refusal gave back all of the attempt itself.
            (refused(fresh), false, false),
            (Outcome::Failed { why: why(), spawn: None }, false, true),
            (Outcome::RateLimited, true, true),
            (Outcome::Unsaved { why: why(), tmux: None, store: true }, false, true),
            (Outcome::StoreLocked { why: why() }, true, true),
            (Outcome::Unverified { why: why() }, false, true),
            // Our own stop came after agent-deck took the call: it ran.
            (Outcome::Interrupted { why: why() }, false, true),
            (alive, true, false),
            (Outcome::Dropped(Dropped::Shutdown), true, false),
            (Outcome::Poller { action: RestartAction::PollerRestart, reason: why() }, false, false),
        ];
        for (outcome, back, called) in table {
            assert_eq!(outcome.gives_back(), back, "{outcome:?}");
            assert_eq!(outcome.called_restart(), called, "{outcome:?}");
        }
    }

    fn exit1(message: &str) -> CliError {
        CliError::Exit {
            code: Some(1),
            message: message.into(),
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
    use crate::decide::restart::liveness::PaneSamples;
    use crate::decide::restart::refusal::Freshness;
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
    fn machine<'a>(
        cfg: &'a Config,
        lim: &'a Limits,
        kind: &'a JobKind,
        phase: Phase,
    ) -> Machine<'a> {
        let (id, proof, dry_run) = (ID, None, false);
        Machine {
            id,
            kind,
            proof,
            ending: None,
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
        let mut m = machine(&cfg, &lim, &JobKind::Revive, Phase::Start);
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
        events.push(Event::Verified(Some(Running).into()));
        let mut st = State::default();
        let actions = run_in(&mut st, NOW, false, events);
        let dead = evidence(LivenessReason::ConfirmedDead, None);
        #[rustfmt::skip]
        let want = [
            Action::WaitSent,
            Action::Confirm(true),
            Action::Dead { evidence: dead, gap_s: 2.0 },
            Action::RecordCall(None),
            Action::CallRestart,
            verify(10, None),
            done(Outcome::Restarted { status: Running, tmux: None }),
        ];
        assert_eq!(actions, want);
        let book = &st.sessions[ID];
        assert_eq!(
            (book.restarted_at, st.last_restart_at),
            (Some(AT), Some(AT))
        );
    }

    #[test]
    fn a_restart_that_ends_an_unsaved_tmux_session_is_held_unless_it_was_ended() {
        let name = "agentdeck_conductor-ops_5e6f7a8b";
        let (cfg, lim) = (cfg(), lim());
        let unsaved = || {
            let mut st = State::default();
            st.book(ID).unsaved = Some(name.into());
            st
        };
        // The first `n` events to the call, then whether it was ended.
        let run = |st: &mut State, ending, dry_run, n, ended: Option<bool>| {
            let mut m = machine(&cfg, &lim, &JobKind::Revive, Phase::Start);
            (m.ending, m.dry_run) = (ending, dry_run);
            let mut events = to_the_call();
            events.truncate(n);
            events.extend(ended.map(Event::EndedUnsaved));
            (events.into_iter())
                .map(|e| m.step(e, st, NOW))
                .collect::<Vec<_>>()
        };
        let held = done(Outcome::Dropped(Dropped::Held(Hold::UnsavedAgent)));
        // Another restart is held while the unsaved agent runs.
        let actions = run(&mut unsaved(), None, false, 2, None);
        assert_eq!(actions[1], held);
        // A restart of a session whose unsaved agent is another one, too.
        let actions = run(
            &mut unsaved(),
            Some("agentdeck_conductor-ops_0"),
            false,
            2,
            None,
        );
        assert_eq!(actions[1], held);
        // Ended: the hold ends, and the call is noted and goes.
        let mut st = unsaved();
        let actions = run(&mut st, Some(name), false, 4, Some(true));
        assert_eq!(actions[3], Action::EndUnsaved(name.into()));
        assert_eq!(actions[4], Action::RecordCall(None));
        assert_eq!(st.sessions[ID].unsaved, None);
        assert_eq!(st.sessions[ID].unsaved_ended_at, Some(AT));
        // Not ended: held as before, no call, nothing noted.
        let mut st = unsaved();
        let actions = run(&mut st, Some(name), false, 4, Some(false));
        assert_eq!(actions[4], held);
        assert_eq!(st.sessions[ID].unsaved.as_deref(), Some(name));
        assert_eq!(st.last_restart_at, None);
        // A dry run ends nothing.
        let actions = run(&mut unsaved(), Some(name), true, 4, None);
        assert_eq!(actions[3], Action::RecordCall(None));
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
        assert_eq!(actions[1], Action::Confirm(false));
        let events = vec![Done, Waited(Some(false))];
        let actions = run_in(&mut st, NOW, false, events);
        assert_eq!(actions[1], Action::Confirm(true));
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
        for kind in [&JobKind::Resume, &JobKind::PollerMissing] {
            let mut m = machine(&cfg, &lim, kind, Phase::Start);
            m.step(Done, &mut st, NOW);
            assert_eq!(m.step(Waited(Some(false)), &mut st, NOW), want[0]);
            st.breaker_open_until = 0.0;
            want = [Action::Poller, Action::Poller];
        }
        let mut m = machine(&cfg, &lim, &JobKind::PollerMissing, Phase::Start);
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
            (Some(Proof::ProcessExited), ConfirmedDead, false, None, 0.5),
            (None, ConfirmedDead, false, None, 2.0),
        ];
        for (proof, found, bare, alive, gap_s) in table {
            let mut m = machine(&cfg, &lim, &JobKind::Revive, Phase::Confirming);
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
        assert_eq!(actions[3], Action::RecordCall(Some(cascade.into())));
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
        for answer in [
            spawn_failed(TmuxSessionMissing),
            spawn_failed(Other("spawn_on_mars".into())),
            exit1("boom"),
        ] {
            let warn = format!("restart of {ID} failed: restart {answer}; reading its status before the start fallback");
            let want = Action::Verify {
                within: Duration::from_secs(10),
                warn: Some(warn),
            };
            assert_eq!(last(answered(Err(answer))), want);
        }
        for (answer, want) in table {
            let got = last(answered(answer));
            assert_eq!(got, want);
        }
    }

    /// A revive whose restart answered `answer`, then read `status`.
    fn verified(answer: Result<RestartAnswer, CliError>, status: Option<Status>) -> Vec<Event> {
        let mut events = answered(answer);
        events.push(Event::Verified(status.into()));
        events
    }

    #[test]
    fn each_status_read_after_the_restart_leads_to_one_next_step() {
        let ok = || Ok(RestartAnswer::Restarted);
        let unverified = || Err(spawn_failed(SpawnReason::Unverified));
        let restarted = |status| done(Outcome::Restarted { status, tmux: None });
        let unread = "status unreadable after restart";
        #[rustfmt::skip]
        let table = [
            (verified(ok(), Some(Running)), restarted(Running)),
            (verified(Err(exit1("boom")), Some(Running)), restarted(Running)),
            (verified(ok(), Some(Error)), Action::ReadHook(AT)),
            (verified(unverified(), Some(Error)), Action::ReadHook(AT)),
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
        let start = Action::CallStart(format!(
            "{ID}: restart exited 1: boom; falling back to session start"
        ));
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
        assert_eq!(last(events), Action::CallStart(warn));
    }

    #[test]
    fn each_answer_and_tmux_listing_leads_to_one_fallback() {
        #[derive(Debug, PartialEq)]
        enum Then {
            Unsaved { store: bool },
            StoreLocked,
            Start,
        }
        let timeout = || CliError::Run(RunError::TimedOut(Duration::from_secs(30)));
        let locked = || exit1("failed to save session state: database is locked (5) (SQLITE_BUSY)");
        let storage = || exit1("Error: failed to initialize storage: unable to open database file");
        let missing =
            || exit1("tmux session agentdeck_ops_1a2b3c4d not found (tmux_session_missing)");
        let (spawned, unreadable, none): (_, Option<Option<&str>>, _) =
            (Some(Some("ops_2")), None, Some(None));
        let unsaved = |store| Then::Unsaved { store };
        #[rustfmt::skip]
        let table = [
            (Some(timeout()), spawned, unsaved(false)),
            (Some(timeout()), unreadable, unsaved(false)),
            (Some(timeout()), none, Then::Start),
            (Some(locked()), spawned, unsaved(true)),
            (Some(locked()), unreadable, unsaved(true)),
            (Some(locked()), none, Then::StoreLocked),
            (Some(storage()), spawned, unsaved(true)),
            (Some(storage()), unreadable, unsaved(true)),
            (Some(storage()), none, Then::StoreLocked),
            (Some(missing()), spawned, unsaved(false)),
            (Some(missing()), unreadable, Then::Start),
            (Some(missing()), none, Then::Start),
            (None, spawned, unsaved(false)),
            (None, unreadable, Then::Start),
            (None, none, Then::Start),
        ];
        for (answer, seen, want) in table {
            let label = format!("{:?} {seen:?}", answer.as_ref().map(ToString::to_string));
            let events = match answer {
                Some(e) => listed(e, seen),
                None => {
                    let mut events = verified(Ok(RestartAnswer::Restarted), Some(Error));
                    let seen = seen.map(|l| l.map(str::to_owned));
                    events.extend([Event::Hook(false), Event::Listed(seen)]);
                    events
                }
            };
            let got = match last(events) {
                Action::Done(Outcome::Unsaved { store, tmux, .. }) => {
                    assert_eq!(tmux.as_deref(), seen.flatten(), "{label}");
                    Then::Unsaved { store }
                }
                Action::Done(Outcome::StoreLocked { .. }) => Then::StoreLocked,
                Action::CallStart(_) => Then::Start,
                other => panic!("{label}: {other:?}"),
            };
            assert_eq!(got, want, "{label}");
        }
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
        let restarted = |status| done(Outcome::Restarted { status, tmux: None });
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
            (then(started(Ok(())), vec![Event::Verified(Some(Running).into())]), restarted(Running)),
            (then(started(unverified()), vec![Event::Verified(Some(Running).into())]), restarted(Running)),
            (then(started(Ok(())), vec![Event::Verified(None.into())]),
             done(Outcome::Unverified { why: "restart exited 1: boom; status unreadable after start".into() })),
            (then(started(unverified()), vec![Event::Verified(None.into())]),
             done(Outcome::Unverified { why: format!("{lead} spawn failed (reason: spawn_unverified); status unreadable after start") })),
            (then(started(Ok(())), vec![Event::Verified(Some(Error).into()), Event::Transcript(String::new()), Event::Verified(None.into())]),
             failed("fallback start returned success but status still error after 20s", None)),
            (then(started(unverified()), vec![Event::Verified(Some(Error).into()), Event::Transcript(String::new()), Event::Verified(None.into())]),
             failed(&format!("{lead} spawn failed (reason: spawn_unverified); status still error after 20s"), unverified_spawn)),
            (then(started(Err(exit1("nope"))), vec![Event::Transcript(String::new()), Event::Verified(None.into())]),
             failed(&format!("{lead} nope"), None)),
        ];
        for (events, want) in table {
            assert_eq!(last(events), want);
        }
        let mut st = State::default();
        run_in(&mut st, NOW, false, started(Ok(())));
        assert!(st.ran.contains(ID), "a start that worked is noted run");
        let mut st = State::default();
        let events = then(
            started(unverified()),
            vec![Event::Verified(Some(Running).into())],
        );
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
            (then(vec![Event::Transcript("quiet".into()), Event::Verified(Some(Running).into())]),
             done(Outcome::Restarted { status: Running, tmux: None })),
            (then(vec![Event::Transcript("quiet".into()), Event::Verified(None.into())]), failed(why, None)),
        ];
        for (events, want) in table {
            assert_eq!(last(events), want);
        }
        // Shutdown came while the start ran.
        let (cfg, lim) = (cfg(), lim());
        let (mut m, mut st) = (
            machine(&cfg, &lim, &JobKind::Revive, Phase::Start),
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
