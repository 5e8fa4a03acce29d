//! A tick's stalls (SPEC §14, §15), pure: which sessions in scope have a
//! stall case, the reads each case needs in turn (the pane at a turn's
//! end, then the last message, the conductor's policy, its transcript's
//! occupancy), and the step each takes once they are in.

use std::collections::BTreeSet;

use super::{Answer, Observation, Read, StallStep};
use crate::decide::book::State;
use crate::decide::memory::FleetMemory;
use crate::decide::outcomes::RestartAction;
use crate::decide::restart::gates::Limits;
use crate::decide::stall::banner::{self, ApiError};
use crate::decide::stall::context::{self, Full, PaneSays};
use crate::decide::stall::occupancy;
use crate::decide::stall::reset_time::ResetFrom;
use crate::decide::stall::{self, Remedy, Seen, Stall, StallKind, Step, Transition};
use crate::fleet::session::{Live, Session, Status};

/// What a look at one session in scope says of its stall.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum StallCase {
    /// A stall agent-deck's substate shows, not yet in the book.
    Detect(StallKind),
    /// A turn just ended: the pane tells whether on an API error banner.
    TurnEnded,
    /// A stall in the book, looking `seen`; `turn`: the fleet's pace lets
    /// its resume go now.
    Step {
        stall: Stall,
        seen: Seen,
        turn: bool,
    },
    /// It shows neither the stall nor a new turn: forgotten.
    Gone,
}

impl StallCase {
    /// The next read this case needs of `s`, given what was `answered`.
    pub(super) fn next_read<'a>(
        &self,
        s: &Session,
        answered: impl Fn(Read) -> Option<&'a Answer>,
        now: f64,
        lim: &Limits,
    ) -> Option<Read> {
        let need = |r: Read| answered(r).is_none().then_some(r);
        match self {
            StallCase::Detect(StallKind::UsageLimit) => need(Read::Reset),
            StallCase::TurnEnded => {
                let Some(Answer::Pane(Ok(pane))) = answered(Read::Pane) else {
                    return need(Read::Pane);
                };
                let conductor = s.conductor_name().is_some();
                let says = banner::ended_on(pane)
                    .is_none()
                    .then(|| context::pane_says(pane));
                match says? {
                    PaneSays::Full(_) => match answered(Read::Output) {
                        None => Some(Read::Output),
                        Some(_) => conductor.then(|| need(Read::Policy)).flatten(),
                    },
                    // The proactive clear's reads, one after the other.
                    PaneSays::Answered if conductor && lim.stall.clear_at_pct.is_some() => {
                        match (answered(Read::Policy), answered(Read::Show)) {
                            (None, _) => Some(Read::Policy),
                            (Some(Answer::Policy(true)), None) => Some(Read::Show),
                            (_, Some(Answer::Show(Ok(_)))) => need(Read::Occupancy),
                            _ => None,
                        }
                    }
                    _ => None,
                }
            }
            StallCase::Step { stall, seen, turn } => {
                let pane = match &stall.remedy {
                    // A remedy given up on: whether it works again.
                    Some(_) if stall.unresolved => *seen == Seen::Working,
                    // The command's effect and the message's turn show there.
                    Some(r) => r.command_at.is_some() && (!r.settled || stall.sent_at.is_some()),
                    None => {
                        // A banner's stall at rest looks the same after a
                        // turn that came and went between two looks: the
                        // pane tells, when a step hinges on it.
                        let step = stall.step(*seen, now, &lim.stall, *turn);
                        let hinges = matches!(step, Step::Resume | Step::Failed { .. });
                        hinges && !stall.kind.has_substate()
                    }
                };
                pane.then(|| need(Read::Pane)).flatten()
            }
            StallCase::Detect(_) | StallCase::Gone => None,
        }
    }
}

/// The sessions in scope whose turn may just have ended, so that their
/// pane is looked at once they read at rest: last seen at work; last seen
/// `running` at an empty prompt and now idle or waiting (1.14.0 reads a
/// turn so while its hook says running and its pane shows the prompt);
/// never seen (a first look is a turn's end: one that sat on a banner when
/// the watchdog started is looked at once); or owed a second look at a
/// full context.
pub(super) fn turn_ended(mem: &FleetMemory, obs: &Observation) -> BTreeSet<String> {
    let idle_now = |s: &Session| {
        let l = obs.view.live.get(&s.id);
        l.is_some_and(|l| matches!(l.status(), Status::Idle | Status::Waiting))
    };
    let ended = |s: &&Session| {
        mem.working.contains(&s.id)
            || (mem.running_idle.contains(&s.id) && idle_now(s))
            || !mem.looked.contains(&s.id)
            || mem.full_pane.contains_key(&s.id)
    };
    let in_scope = obs.in_scope();
    in_scope
        .into_iter()
        .filter(ended)
        .map(|s| s.id.clone())
        .collect()
}

/// Each session in scope whose stall has a case, in the order of the
/// sessions, then the stalls due a resume (SPEC §14: one at a time across
/// the fleet, at its pace, critical sessions first, then the longest due).
pub(super) fn stall_cases<'a>(
    obs: &'a Observation,
    st: &State,
    lim: &Limits,
    now: f64,
    ended: &BTreeSet<String>,
) -> Vec<(&'a Session, StallCase)> {
    let mut cases = Vec::new();
    let mut due = Vec::new();
    for s in obs.in_scope() {
        let stall = st.sessions.get(&s.id).and_then(|b| b.stall.clone());
        let in_flight = st.in_flight.contains(&s.id);
        let Some(l) = obs.view.live.get(&s.id).filter(|_| !in_flight) else {
            continue;
        };
        let kind = stall.as_ref().map(|x| x.kind);
        let case = match (stall, Seen::of(l, kind)) {
            (None, Some(Seen::Stalled)) => StallKind::of(l).map(StallCase::Detect),
            (None, None) if ended.contains(&s.id) && stall::at_rest(l) && claude(l) => {
                Some(StallCase::TurnEnded)
            }
            (None, _) => None,
            (Some(stall), Some(Seen::Stalled)) if !stall.awaiting() => {
                due.push((s, stall));
                None
            }
            (Some(stall), Some(seen)) => Some(StallCase::Step {
                stall,
                seen,
                turn: false,
            }),
            (Some(_), None) => Some(StallCase::Gone),
        };
        cases.extend(case.map(|c| (s, c)));
    }
    let critical = |s: &Session| obs.critical.iter().any(|c| c.id == s.id);
    let due_now = due.iter().map(|(s, x)| (s.id.as_str(), x, critical(s)));
    let first = stall::first_due(due_now, now).map(str::to_owned);
    let paced = st.resumes.allows(now, &lim.stall);
    for (s, stall) in due {
        let turn = paced && first.as_deref() == Some(s.id.as_str());
        let seen = Seen::Stalled;
        cases.push((s, StallCase::Step { stall, seen, turn }));
    }
    cases
}

/// A Claude session (or one whose tool the row does not print): the
/// banner forms are Claude's.
fn claude(l: &Live) -> bool {
    l.tool.as_deref().is_none_or(|t| t == "claude")
}

/// The step a stall `case` of `s` takes; `None` when there is nothing to
/// do now, or a read it needs is missing (the worker changed the book
/// between the reads and the plan: the next tick looks again).
pub(super) fn stall_step(
    obs: &Observation,
    mem: &mut FleetMemory,
    st: &State,
    lim: &Limits,
    now: f64,
    s: &Session,
    case: StallCase,
) -> Option<StallStep> {
    let pane = || match obs.answer(s, Read::Pane)? {
        Answer::Pane(Ok(pane)) => Some(Some(pane.as_str())),
        _ => Some(None),
    };
    let detected = |kind, evidence: &str, resume_at, from: &str| Stall {
        kind,
        evidence: evidence.into(),
        since: now,
        resume_at,
        resume_from: from.into(),
        attempts: 0,
        sent_at: None,
        unresolved: false,
        remedy: None,
    };
    let transition = |t| Some(StallStep::Transition(t));
    let stall = match case {
        StallCase::Detect(StallKind::UsageLimit) => {
            let Some(Answer::Reset { at, from, .. }) = obs.answer(s, Read::Reset) else {
                return None;
            };
            let grace = if *from == ResetFrom::Probe {
                0.0
            } else {
                lim.stall.grace
            };
            let kind = StallKind::UsageLimit;
            detected(kind, "substate", at + grace, from.as_str())
        }
        StallCase::Detect(kind) => {
            let at = now + lim.stall.model_backoff;
            detected(kind, "substate", at, "backoff")
        }
        StallCase::TurnEnded => {
            let pane = pane()??;
            if let Some(api) = banner::ended_on(pane) {
                let kind = match api {
                    ApiError::Overload => StallKind::ApiOverload,
                    ApiError::ConnectionLost => StallKind::ConnectionLost,
                };
                detected(kind, "pane", now + lim.stall.dwell, "dwell")
            } else if let Some(stall) = proactive(obs, mem, lim, now, s, pane) {
                stall
            } else {
                let (full, evidence) = full_context(obs, mem, now, s, pane)?;
                let mut stall = detected(StallKind::ContextExhausted, &evidence, now, "seen");
                let clear = matches!(obs.answer(s, Read::Policy), Some(Answer::Policy(true)));
                let live = obs.view.live.get(&s.id);
                stall.remedy = Some(Remedy {
                    clear,
                    command_at: None,
                    settled: false,
                    old_id: live.and_then(|l| l.claude_session_id.clone()),
                    proactive: false,
                    compaction_failed: full.compaction_failed(),
                    cleared_before: st.sessions.get(&s.id).and_then(|b| b.context_cleared_at),
                });
                stall
            }
        }
        StallCase::Gone => return transition(Transition::Gone),
        StallCase::Step { stall, seen, turn } => {
            let says = match &stall.remedy {
                Some(_) => pane().flatten().map(context::pane_says),
                None => None,
            };
            let mut step = stall.ladder_step(seen, says, now, &lim.stall, turn);
            let hinges = matches!(step, Step::Resume | Step::Failed { .. });
            let banner_stall = stall.remedy.is_none() && !stall.kind.has_substate();
            if hinges && banner_stall && banner::ended_on(pane()?.unwrap_or_default()).is_none() {
                step = stall.step(Seen::Working, now, &lim.stall, turn);
            }
            let mut next = stall.clone();
            let ended = match step {
                Step::Wait => return None,
                Step::Resume => return Some(StallStep::Resume),
                Step::Verified => RestartAction::ResumeVerified,
                Step::ResumedBySelf => RestartAction::ResumedByItself,
                Step::Settled => {
                    if let Some(r) = &mut next.remedy {
                        r.settled = true;
                    }
                    next.resume_at = now;
                    return transition(Transition::Settled(next));
                }
                Step::GaveUp(why) => {
                    (next.unresolved, next.sent_at) = (true, None);
                    return transition(Transition::GaveUp { next, why });
                }
                Step::Failed {
                    next_at,
                    unresolved,
                } => {
                    next.failed(next_at, unresolved);
                    let verify = lim.stall.verify;
                    let why = format!("no new turn within {verify:.0}s of the resume");
                    return transition(Transition::Failed {
                        next,
                        why,
                        unresolved,
                    });
                }
            };
            return transition(Transition::Ended { stall, ended });
        }
    };
    transition(Transition::Detected(stall))
}

/// Whether the turn that ended on `pane` left `s`'s context full, and the
/// evidence: the pane and the last message agree, or, when the message
/// cannot be read, the pane alone on two looks at least 30 s apart.
fn full_context(
    obs: &Observation,
    mem: &mut FleetMemory,
    now: f64,
    s: &Session,
    pane: &str,
) -> Option<(Full, String)> {
    let PaneSays::Full(full) = context::pane_says(pane) else {
        mem.full_pane.remove(&s.id);
        return None;
    };
    let text = full.text();
    let evidence = match obs.answer(s, Read::Output)? {
        Answer::Output(Ok(message)) => {
            context::message_says(message)?;
            format!("pane and last message: {text}")
        }
        _ => {
            let first = *mem.full_pane.entry(s.id.clone()).or_insert(now);
            if now - first < PANE_ALONE_S {
                return None;
            }
            format!("pane, twice {PANE_ALONE_S:.0}s apart (last message unreadable): {text}")
        }
    };
    mem.full_pane.remove(&s.id);
    Some((full, evidence))
}

/// The proactive clear of conductor `s` whose turn ended on `pane`, when
/// its transcript's last reading is at or past `CONTEXT_CLEAR_AT_PCT` of
/// its window, and no `/clear` or compaction someone else made is less
/// than a minute old (seen on the pane at a turn's end).
fn proactive(
    obs: &Observation,
    mem: &mut FleetMemory,
    lim: &Limits,
    now: f64,
    s: &Session,
    pane: &str,
) -> Option<Stall> {
    let at = lim.stall.clear_at_pct?;
    let recent = |t: &f64| now - t < OTHERS_RESET_S;
    mem.reset_seen.retain(|_, t| recent(t));
    if matches!(
        context::pane_says(pane),
        PaneSays::Cleared | PaneSays::Compacted
    ) {
        mem.reset_seen.insert(s.id.clone(), now);
    }
    let Some(Answer::Occupancy(Some(reading))) = obs.answer(s, Read::Occupancy) else {
        return None;
    };
    if mem.reset_seen.contains_key(&s.id) {
        return None;
    }
    let (window, from) = occupancy::window(reading, lim.stall.window_tokens);
    let percent = occupancy::percent(reading, window);
    if percent < u64::from(at) {
        return None;
    }
    let evidence = format!(
        "occupancy {percent}% ({} of {window} tokens, window from {}, {})",
        reading.tokens,
        from.as_str(),
        reading.model
    );
    let old_id = match obs.answer(s, Read::Show) {
        Some(Answer::Show(Ok(l))) => l.claude_session_id.clone(),
        _ => None,
    };
    Some(Stall {
        kind: StallKind::ContextExhausted,
        evidence,
        since: now,
        resume_at: now,
        resume_from: "seen".into(),
        attempts: 0,
        sent_at: None,
        unresolved: false,
        remedy: Some(Remedy {
            clear: true,
            command_at: None,
            settled: false,
            old_id,
            proactive: true,
            compaction_failed: false,
            cleared_before: None,
        }),
    })
}

/// No proactive clear within this long of a `/clear` or compaction
/// someone else made.
const OTHERS_RESET_S: f64 = 60.0;

/// How far apart two looks at a pane alone must be to tell a full context.
const PANE_ALONE_S: f64 = 30.0;
