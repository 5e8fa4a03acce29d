//! The stall pass of a tick (SPEC §14), for the sessions in `RESUME_SCOPE`:
//! the critical ones, or with `all` every Claude session too. A stall is
//! detected once: agent-deck's
//! `usage-limit` on an idle or waiting session (its resume time from `usage
//! --json`, the rejection's text, or the probe: at most two calls), its
//! `model-unavailable` in `error` (no call), or a turn that just ended on
//! an API error banner (one pane read when a running session comes to
//! rest). Then each tick takes its [`Step`]: wait, resume (on the restart
//! worker, one at a time across the fleet, at the fleet's pace, critical
//! sessions first), verified, resumed by itself, or failed. A healthy
//! fleet costs no CLI call here but that one pane read per turn that ends.

use std::collections::{BTreeMap, BTreeSet};

use crate::act::apply;
use crate::act::job::Job;
use crate::config::ResumeScope;
use crate::daemon::Daemon;
use crate::decide::banner::{self, ApiError};
use crate::decide::outcomes::RestartAction;
use crate::decide::reset_time::{self, ResetFrom};
use crate::decide::restart::JobKind;
use crate::decide::stall::{self, Seen, Stall, StallKind, Step, Transition};
use crate::fleet::session::{Live, Session, Status};
use crate::fleet::usage;
use crate::fleet::version::Version;

impl Daemon {
    /// The sessions of `in_scope` last seen `running` (a critical one's
    /// book, read before the tick notes its new status), so a turn's end
    /// shows.
    pub(super) fn were_running(&self, in_scope: &[Session]) -> BTreeSet<String> {
        let st = self.ctx.state.lock();
        let running = |s: &&Session| {
            let book = st.sessions.get(&s.id);
            book.and_then(|b| b.last_status.as_deref()) == Some("running")
                || self.memory.running_beyond.contains(&s.id)
        };
        in_scope
            .iter()
            .filter(running)
            .map(|s| s.id.clone())
            .collect()
    }

    /// One look at the stalls among `in_scope`, read as `live`; `ended`:
    /// those that were running, whose turn may have ended on an API error.
    pub(super) fn look_for_stalls(
        &mut self,
        in_scope: &[Session],
        live: &BTreeMap<String, Live>,
        ended: &BTreeSet<String>,
    ) {
        if self.ctx.cfg.resume_scope == ResumeScope::Off {
            return;
        }
        let now = self.ctx.clock.now();
        let mut due = Vec::new();
        for s in in_scope {
            let (stall, in_flight) = {
                let st = self.ctx.state.lock();
                let stall = st.sessions.get(&s.id).and_then(|b| b.stall.clone());
                (stall, st.in_flight.contains(&s.id))
            };
            let Some(l) = live.get(&s.id).filter(|_| !in_flight) else {
                continue;
            };
            let seen = Seen::of(l, stall.as_ref().map(|x| x.kind));
            match (stall, seen) {
                (None, Some(Seen::Stalled)) => self.stall_detected(s, l, now),
                (None, None) if ended.contains(&s.id) && at_rest(l) && claude(l) => {
                    self.look_at_the_banner(s, now)
                }
                (None, _) => {}
                (Some(stall), Some(Seen::Stalled)) if stall.sent_at.is_none() => {
                    due.push((s, stall));
                }
                (Some(stall), Some(seen)) => self.stall_step(s, &stall, seen, now, false),
                (Some(_), None) => apply::stall(&self.ctx, s, Transition::Gone),
            }
        }
        let fleet = &self.fleet;
        let due_now = due
            .iter()
            .map(|(s, st)| (s.id.as_str(), st, fleet.is_critical(s)));
        let first = stall::first_due(due_now, now);
        let paced = self
            .ctx
            .state
            .lock()
            .resumes
            .allows(now, &self.ctx.limits.stall);
        for (s, stall) in &due {
            let turn = paced && first == Some(s.id.as_str());
            self.stall_step(s, stall, Seen::Stalled, now, turn);
        }
    }

    /// A stall first seen in `l` at `now`, and when to resume it: a usage
    /// limit at the reset its rejection names (one `session output`), else
    /// after the probe; an unavailable model after its backoff. Recorded
    /// `stall-detected`.
    fn stall_detected(&mut self, s: &Session, l: &Live, now: f64) {
        let Some(kind) = StallKind::of(l) else {
            return;
        };
        let lim = &self.ctx.limits;
        let (resume_at, from) = match kind {
            StallKind::UsageLimit => {
                let usage = self.usage(s);
                let text = || {
                    let text = self.ctx.deck.transcript(&s.profile, &s.id);
                    text.inspect_err(|e| {
                        log::warn!("last response of {} is unreadable ({e})", s.id)
                    })
                    .unwrap_or_default()
                };
                let (at, from) =
                    reset_time::reset(usage.as_deref(), text, now, now, lim.stall.probe);
                let grace = if from == ResetFrom::Probe {
                    0.0
                } else {
                    lim.stall.grace
                };
                (at + grace, from.as_str())
            }
            _ => (now + lim.stall.model_backoff, "backoff"),
        };
        self.detected(s, kind, "substate", resume_at, from, now);
    }

    /// A turn of `s` that just ended: one pane read, and a stall if the turn
    /// ended on an API error banner, resumed after `RESUME_DWELL_S`.
    fn look_at_the_banner(&mut self, s: &Session, now: f64) {
        let Some(error) = self.banner(s) else {
            return;
        };
        let kind = match error {
            ApiError::Overload => StallKind::ApiOverload,
            ApiError::ConnectionLost => StallKind::ConnectionLost,
        };
        let at = now + self.ctx.limits.stall.dwell;
        self.detected(s, kind, "pane", at, "dwell", now);
    }

    /// The API error `s`'s pane shows its last turn ended on, if any.
    fn banner(&self, s: &Session) -> Option<ApiError> {
        let pane = self.ctx.deck.pane(&s.profile, &s.id);
        let pane = pane.inspect_err(|e| log::debug!("pane of {} unreadable ({e})", s.id));
        banner::ended_on(&pane.ok()?)
    }

    /// A stall of `s` first seen at `now`.
    fn detected(
        &mut self,
        s: &Session,
        kind: StallKind,
        evidence: &str,
        resume_at: f64,
        from: &str,
        now: f64,
    ) {
        let stall = Stall {
            kind,
            evidence: evidence.into(),
            since: now,
            resume_at,
            resume_from: from.into(),
            attempts: 0,
            sent_at: None,
            unresolved: false,
        };
        apply::stall(&self.ctx, s, Transition::Detected(stall));
    }

    /// The plan windows of `s`'s profile from `usage --json`, on an
    /// agent-deck that has it (1.16.11+; never asked of an older one, or of
    /// one whose release is not known); `None` otherwise or unreadable.
    fn usage(&self, s: &Session) -> Option<Vec<reset_time::Window>> {
        let release = self.ctx.deck.version()?;
        if !release.at_least(Version::USAGE_JSON) {
            return None;
        }
        let text = self.ctx.deck.usage(&s.profile);
        let read = text
            .map_err(|e| e.to_string())
            .and_then(|t| usage::parse(&t));
        read.inspect_err(|e| {
            log::warn!(
                "usage --json of profile '{}' is unreadable ({e})",
                s.profile
            )
        })
        .ok()
    }

    /// Takes the step of `stall` of `s`, seen `seen`; `turn`: the fleet's
    /// pace lets its resume go now.
    fn stall_step(&mut self, s: &Session, stall: &Stall, seen: Seen, now: f64, turn: bool) {
        let lim = self.ctx.limits.stall;
        let mut step = stall.step(seen, now, &lim, turn);
        // A banner's stall at rest looks the same after a turn that came and
        // went between two looks: the pane tells, when a step hinges on it.
        let hinges = matches!(step, Step::Resume | Step::Failed { .. });
        if hinges && !stall.kind.has_substate() && self.banner(s).is_none() {
            step = stall.step(Seen::Working, now, &lim, turn);
        }
        let ctx = &self.ctx;
        let ended = match step {
            Step::Wait => return,
            Step::Resume => {
                ctx.state.lock().in_flight.insert(s.id.clone());
                log::info!("{} ({}) is due its resume; queueing it", s.id, s.title);
                return self.workers.jobs.submit(Job {
                    session: s.clone(),
                    slot: None,
                    kind: JobKind::Resume,
                    proven: None,
                });
            }
            Step::Verified => RestartAction::ResumeVerified,
            Step::ResumedBySelf => RestartAction::ResumedByItself,
            Step::Failed {
                next_at,
                unresolved,
            } => {
                let mut next = stall.clone();
                next.failed(next_at, unresolved);
                let verify = ctx.limits.stall.verify;
                let why = format!("no new turn within {verify:.0}s of the resume");
                let failed = Transition::Failed {
                    next,
                    why,
                    unresolved,
                };
                return apply::stall(ctx, s, failed);
            }
        };
        let stall = stall.clone();
        apply::stall(ctx, s, Transition::Ended { stall, ended });
    }
}

/// Idle or waiting: at the prompt.
fn at_rest(l: &Live) -> bool {
    matches!(l.status(), Status::Idle | Status::Waiting)
}

/// A Claude session (or one whose tool the row does not print): the
/// banner forms are Claude's.
fn claude(l: &Live) -> bool {
    l.tool.as_deref().is_none_or(|t| t == "claude")
}
