//! A stall's episode (SPEC §14), pure: a session alive and not working that
//! will not start again by itself gets one resume message at a time, never
//! a restart. Each look at it is one [`Step`]: wait, resume now, verified,
//! resumed by itself, or failed (and, with the attempts spent, unresolved).
//! Resumes across the fleet are paced by [`Pace`]: at least
//! `RESUME_STAGGER_S` apart, at most `RESUME_FLEET_MAX_PER_HOUR`, critical
//! sessions first. Nothing here counts toward the restart budget, the
//! cascade guard or the 429 breaker.
//!
//! Beside it: the API error banner a turn ended on (`banner.rs`) and when a
//! usage limit resets (`reset_time.rs`).

pub(crate) mod banner;
pub(crate) mod context;
pub(crate) mod occupancy;
pub(crate) mod reset_time;

use serde::{Deserialize, Serialize};

use crate::decide::outcomes::RestartAction;
use crate::decide::stall::context::PaneSays;
use crate::decide::stall::reset_time::PROBE_MAX_S;
use crate::fleet::session::{Live, Status, Substate};

/// What kind of stall a session is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum StallKind {
    UsageLimit,
    ApiOverload,
    ConnectionLost,
    ModelUnavailable,
    /// The context window is full (SPEC §15): its remedy is a [`Remedy`].
    ContextExhausted,
}

impl StallKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            StallKind::ContextExhausted => "context-exhausted",
            StallKind::UsageLimit => "usage-limit",
            StallKind::ApiOverload => "api-overload",
            StallKind::ConnectionLost => "connection-lost",
            StallKind::ModelUnavailable => "model-unavailable",
        }
    }
}

/// One stall episode, kept in `state.json` across the watchdog's restarts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Stall {
    pub kind: StallKind,
    /// Where the evidence came from: agent-deck's `substate`, or the `pane`.
    pub evidence: String,
    /// When it was first seen.
    pub since: f64,
    /// When the next resume is due.
    pub resume_at: f64,
    /// Where `resume_at` came from (`usage --json`, `banner`, `probe`,
    /// `dwell`, `backoff`).
    pub resume_from: String,
    /// Resumes sent in this episode.
    pub attempts: u32,
    /// When the resume now being verified was sent.
    pub sent_at: Option<f64>,
    /// No more resumes in this episode: `stall-unresolved` was escalated,
    /// or a dry run said what it would have sent.
    pub unresolved: bool,
    /// A full context's remedy and how far it got; `None` for other kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<Remedy>,
}

/// The remedy of a full context (SPEC §15): a command, `/clear` or
/// `/compact`, then once it took effect the message, the re-brief or the
/// resume, verified as any resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Remedy {
    /// `/clear` then the re-brief (a `clear_on_compact` conductor); else
    /// `/compact` then the resume.
    pub clear: bool,
    /// When the command went; `None`: it is the next send.
    pub command_at: Option<f64>,
    /// It took effect (an empty prompt, or compacted): the message is next.
    pub settled: bool,
    /// The `claude_session_id` before the `/clear`, which the re-brief's
    /// check finds changed.
    pub old_id: Option<String>,
    /// Sent at a threshold (`CONTEXT_CLEAR_AT_PCT`), not for an error.
    #[serde(default)]
    pub proactive: bool,
    /// The evidence already says compaction failed: no `/compact`.
    #[serde(default)]
    pub compaction_failed: bool,
    /// When this watchdog last cleared it, if it did.
    #[serde(default)]
    pub cleared_before: Option<f64>,
}

impl Remedy {
    /// The step after the command went at `at`, by what the pane says.
    fn settling(&self, pane: Option<PaneSays>, at: f64, now: f64, lim: &StallLimits) -> Step {
        let Some(pane) = pane else {
            return Step::Wait;
        };
        let (took, within, missed) = match self.clear {
            true => (PaneSays::Cleared, lim.verify, GaveUp::NotCleared),
            false => (PaneSays::Compacted, lim.compact, GaveUp::NotCompacted),
        };
        match pane {
            _ if pane == took => Step::Settled,
            PaneSays::Full(f) if !self.clear && f.compaction_failed() => {
                Step::GaveUp(GaveUp::CompactionFailed)
            }
            PaneSays::Compacting if now >= at + 2.0 * lim.compact => {
                Step::GaveUp(GaveUp::CompactionHung)
            }
            PaneSays::Compacting => Step::Wait,
            _ if now >= at + within => Step::GaveUp(missed),
            _ => Step::Wait,
        }
    }

    /// Cleared by this watchdog less than [`FULL_AGAIN_S`] before `now`.
    fn full_again(&self, now: f64) -> bool {
        self.cleared_before.is_some_and(|t| now - t < FULL_AGAIN_S)
    }

    /// What is typed first.
    pub(crate) fn command(&self) -> &'static str {
        if self.clear {
            "/clear"
        } else {
            "/compact"
        }
    }

    /// Where the remedy of `stall` stands, for [`Stall::said`].
    fn step_said(&self, stall: &Stall) -> String {
        let (message, next) = match self.clear {
            true => ("re-brief", "cleared"),
            false => ("resume", "compacted"),
        };
        match (
            stall.unresolved,
            self.command_at,
            self.settled,
            stall.sent_at,
        ) {
            (true, ..) => format!("nothing more is typed ({})", self.said()),
            (_, None, ..) => self.said().to_owned(),
            (_, Some(_), false, _) if self.clear => {
                "/clear sent, waiting for an empty prompt".into()
            }
            (_, Some(_), false, _) => "/compact sent, waiting for it to compact".into(),
            (_, _, true, None) => format!("{next}, its {message} next"),
            (_, _, true, Some(_)) => format!("{message} sent, waiting for a new turn"),
        }
    }

    /// The remedy and why, for the `--once` summary and `status`.
    pub(crate) fn said(&self) -> &'static str {
        if self.clear {
            "/clear then re-brief (clear_on_compact)"
        } else {
            "/compact then resume (not clear_on_compact)"
        }
    }
}

/// The `RESUME_*` settings a step needs, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct StallLimits {
    /// After a known reset, before a resume.
    pub grace: f64,
    pub probe: f64,
    pub dwell: f64,
    pub model_backoff: f64,
    pub verify: f64,
    pub max_attempts: u32,
    pub stagger: f64,
    pub max_per_hour: usize,
    /// `CONTEXT_COMPACT_S`: how long a `/compact` has to show it compacted.
    pub compact: f64,
    /// `CONTEXT_CLEAR_AT_PCT`: the proactive clear's threshold, if on.
    pub clear_at_pct: Option<u32>,
    /// `CONTEXT_WINDOW_TOKENS`.
    pub window_tokens: Option<u64>,
}

/// What a look at a stalled session shows now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// Still stalled: idle or waiting, the evidence unchanged.
    Stalled,
    /// A new turn started: `running`, the substate cleared, or the
    /// transcript grew.
    Working,
    /// Not to be typed into now: an `interactive-menu`, `background-work`.
    Closed,
}

impl StallKind {
    /// The kind of stall `l` shows by agent-deck's own reading, if any: its
    /// usage limit while idle or waiting, or its model unavailable (`error`).
    pub(crate) fn of(l: &Live) -> Option<StallKind> {
        match (l.status(), l.substate()?) {
            (Status::Idle | Status::Waiting, Substate::UsageLimit) => Some(StallKind::UsageLimit),
            (Status::Error, Substate::ModelUnavailable) => Some(StallKind::ModelUnavailable),
            _ => None,
        }
    }
}

impl StallKind {
    /// Whether its sign is agent-deck's substate (else the pane's banner,
    /// which a session at rest keeps showing).
    pub(crate) fn has_substate(self) -> bool {
        matches!(self, StallKind::UsageLimit | StallKind::ModelUnavailable)
    }
}

impl Seen {
    /// What `l` shows of a stall of `kind` (`None`: no stall yet). `None`
    /// when it shows neither a stall nor a new turn (say, a session in
    /// `error` for another reason, which the restart path takes).
    pub(crate) fn of(l: &Live, kind: Option<StallKind>) -> Option<Seen> {
        let at_rest = at_rest(l);
        match (StallKind::of(l), l.substate()) {
            _ if l.status() == Status::Running && !at_rest => Some(Seen::Working),
            (Some(shown), _) if kind.is_none_or(|k| k == shown) => Some(Seen::Stalled),
            // Another kind now: this one ended; the new one is seen next.
            (Some(_), _) => Some(Seen::Working),
            (None, Some(Substate::InteractiveMenu | Substate::BackgroundWork)) if at_rest => {
                Some(Seen::Closed)
            }
            // At rest without a substate's sign: a newer turn completed; a
            // banner's stall still sits at its prompt.
            (None, _) if at_rest => kind.map(|k| match k.has_substate() {
                true => Seen::Working,
                false => Seen::Stalled,
            }),
            (None, _) => None,
        }
    }
}

/// At the prompt: idle or waiting, or `running` with the substate
/// `idle-at-empty-prompt`, as agent-deck 1.14.0 reads a turn Claude ended
/// with `StopFailure` (a hook it does not install) for about two minutes.
pub(crate) fn at_rest(l: &Live) -> bool {
    match l.status() {
        Status::Idle | Status::Waiting => true,
        Status::Running => l.substate() == Some(Substate::IdleAtEmptyPrompt),
        _ => false,
    }
}

/// What to do with a stall now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Step {
    Wait,
    /// Send the resume message (its turn in the fleet's pace has come).
    Resume,
    /// The resume started a new turn: the episode is over.
    Verified,
    /// It started again with nothing sent: the episode is over.
    ResumedBySelf,
    /// The resume started no turn within `RESUME_VERIFY_S`; the next is due
    /// at `next_at`, unless the attempts are spent (`unresolved`: escalate
    /// once, and send no more).
    Failed {
        next_at: f64,
        unresolved: bool,
    },
    /// A full context's command took effect: its message is next.
    Settled,
    /// A full context's remedy can go no further: escalate once, type
    /// nothing more.
    GaveUp(GaveUp),
}

/// Why a full context's remedy went no further.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GaveUp {
    /// Claude already said compaction failed, or said so after `/compact`.
    CompactionFailed,
    /// `Compacting conversation…` past twice `CONTEXT_COMPACT_S`.
    CompactionHung,
    /// No compacted lines within `CONTEXT_COMPACT_S`.
    NotCompacted,
    /// No empty prompt after `/clear` within `RESUME_VERIFY_S`, or no new
    /// `claude_session_id`.
    NotCleared,
    /// Full again within ten minutes of a clear, or right after the remedy.
    FullAgain,
}

/// A context cleared less than this long ago that is full again is not
/// cleared again (SPEC §15).
pub(crate) const FULL_AGAIN_S: f64 = 600.0;

impl GaveUp {
    /// Why, as the record and the escalation say it.
    pub(crate) fn said(self, lim: &StallLimits) -> String {
        match self {
            GaveUp::CompactionFailed => "compaction failed".into(),
            GaveUp::CompactionHung => format!(
                "Compacting conversation… for more than {:.0}s with no new turn",
                2.0 * lim.compact
            ),
            GaveUp::NotCompacted => {
                format!("/compact showed no compaction within {:.0}s", lim.compact)
            }
            GaveUp::NotCleared => "/clear started no new conversation".into(),
            GaveUp::FullAgain => "the context is full again soon after it was cleared".into(),
        }
    }
}

/// A stall's change as a tick decided it, which `act/apply.rs` persists
/// (its record, the book, `state.json`) and says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Transition {
    /// First seen: recorded `stall-detected`, and kept.
    Detected(Stall),
    /// It works again (`resume-verified` or `resumed-by-itself`): recorded
    /// as `ended`, and forgotten.
    Ended { stall: Stall, ended: RestartAction },
    /// Its resume started no turn within `RESUME_VERIFY_S`: recorded, kept
    /// as `next`, and escalated once when that leaves it `unresolved`.
    Failed {
        next: Stall,
        why: String,
        unresolved: bool,
    },
    /// A full context's command took effect: kept as `next`, recorded
    /// `compacted` after a `/compact`.
    Settled(Stall),
    /// A full context's remedy went no further: recorded, kept as `next`
    /// (unresolved), escalated once.
    GaveUp { next: Stall, why: GaveUp },
    /// Not idle any more (say, in error): forgotten, with nothing said;
    /// the restart path has it.
    Gone,
}

impl Stall {
    /// The step for this stall when it looks `seen` at `now`; `paced`: the
    /// fleet's pace lets a resume go now.
    pub(crate) fn step(&self, seen: Seen, now: f64, lim: &StallLimits, paced: bool) -> Step {
        match (seen, self.sent_at) {
            (Seen::Working, Some(_)) => Step::Verified,
            (Seen::Working, None) => Step::ResumedBySelf,
            (_, Some(sent)) if now < sent + lim.verify => Step::Wait,
            (_, Some(_)) => Step::Failed {
                next_at: now + self.backoff(lim),
                unresolved: self.attempts >= lim.max_attempts,
            },
            (Seen::Stalled, None) if !self.unresolved && paced && now >= self.resume_at => {
                Step::Resume
            }
            _ => Step::Wait,
        }
    }

    /// The step of a stall whose remedy is a [`Remedy`] (else as
    /// [`Stall::step`]); `pane`: what its pane says now, when it was read.
    pub(crate) fn ladder_step(
        &self,
        seen: Seen,
        pane: Option<PaneSays>,
        now: f64,
        lim: &StallLimits,
        paced: bool,
    ) -> Step {
        let Some(r) = &self.remedy else {
            return self.step(seen, now, lim, paced);
        };
        if self.unresolved {
            // Given up on: nothing more, until it works again (a hung
            // compaction reads at work, and is not that).
            return match (seen, pane) {
                (Seen::Working, Some(p)) if p != PaneSays::Compacting => Step::ResumedBySelf,
                _ => Step::Wait,
            };
        }
        let stalled = seen == Seen::Stalled;
        match (r.command_at, r.settled, self.sent_at) {
            (None, ..) if stalled && r.full_again(now) => Step::GaveUp(GaveUp::FullAgain),
            (None, ..) if stalled && r.compaction_failed && !r.clear => {
                Step::GaveUp(GaveUp::CompactionFailed)
            }
            // Someone else typed: it works again.
            (None, ..) if seen == Seen::Working => Step::ResumedBySelf,
            (None, ..) if stalled && paced && now >= self.resume_at => Step::Resume,
            (None, ..) => Step::Wait,
            (Some(at), false, _) => r.settling(pane, at, now, lim),
            // The message goes as soon as the session is at its prompt.
            (Some(_), true, None) if stalled => Step::Resume,
            (Some(_), true, None) => Step::Wait,
            (Some(_), true, Some(sent)) => match (seen, pane) {
                (_, Some(PaneSays::Full(_))) => Step::GaveUp(GaveUp::FullAgain),
                (Seen::Working, _) | (_, Some(PaneSays::Answered)) => Step::Verified,
                _ if now < sent + lim.verify => Step::Wait,
                _ => Step::Failed {
                    next_at: now + self.backoff(lim),
                    unresolved: self.attempts >= lim.max_attempts,
                },
            },
        }
    }

    /// Whether a send of this stall is being waited on (its resume, or a
    /// full context's command), so it is not due another.
    pub(crate) fn awaiting(&self) -> bool {
        let command = |r: &Remedy| r.command_at.is_some() && !r.settled;
        self.sent_at.is_some() || self.remedy.as_ref().is_some_and(command)
    }

    /// What it is and what comes next, for the `--once` summary and
    /// `status`: `usage-limit, resume at 14:52 (in 2h10m, from banner)`,
    /// the time in `tz`.
    pub(crate) fn said(&self, now: f64, tz: &jiff::tz::TimeZone) -> String {
        let kind = self.kind.as_str();
        if let Some(r) = &self.remedy {
            return format!("{kind}, {}", r.step_said(self));
        }
        if self.unresolved {
            return format!("{kind}, no more resumes (after {})", self.attempts);
        }
        if self.sent_at.is_some() {
            return format!(
                "{kind}, resume {} sent, waiting for a new turn",
                self.attempts
            );
        }
        let at = jiff::Timestamp::from_second(self.resume_at as i64)
            .map(|t| {
                t.to_zoned_datetime(tz.clone())
                    .strftime("%H:%M")
                    .to_string()
            })
            .unwrap_or_else(|_| "?".into());
        let left = (self.resume_at - now).max(0.0) as u64;
        let (h, m, s) = (left / 3600, left % 3600 / 60, left % 60);
        let within = match (h, m) {
            (0, 0) => format!("{s}s"),
            (0, m) => format!("{m}m"),
            (h, m) => format!("{h}h{m:02}m"),
        };
        format!(
            "{kind}, resume at {at} (in {within}, from {})",
            self.resume_from
        )
    }

    /// Notes a resume sent at `now`.
    pub(crate) fn sent(&mut self, now: f64) {
        self.attempts += 1;
        self.sent_at = Some(now);
    }

    /// Notes a resume agent-deck could not deliver at `now` (a draft in the
    /// composer, a send that failed): one attempt spent. Whether that
    /// leaves the stall unresolved.
    pub(crate) fn undelivered(&mut self, now: f64, lim: &StallLimits) -> bool {
        self.attempts += 1;
        let unresolved = self.attempts >= lim.max_attempts;
        self.failed(now + self.backoff(lim), unresolved);
        unresolved
    }

    /// Notes a failed resume, as [`Stall::step`] said.
    pub(crate) fn failed(&mut self, next_at: f64, unresolved: bool) {
        self.sent_at = None;
        self.resume_at = next_at;
        self.resume_from = "backoff".into();
        self.unresolved = unresolved;
    }

    /// How long after a failed resume the next is due: the kind's first
    /// wait, doubled for each attempt so far, at most five hours.
    fn backoff(&self, lim: &StallLimits) -> f64 {
        let first = match self.kind {
            StallKind::UsageLimit => lim.probe,
            StallKind::ApiOverload | StallKind::ConnectionLost | StallKind::ContextExhausted => {
                lim.dwell
            }
            StallKind::ModelUnavailable => lim.model_backoff,
        };
        let doublings = self.attempts.min(16) as i32;
        (first * 2f64.powi(doublings)).min(PROBE_MAX_S)
    }
}

/// How long until the next look at a full context's remedy under way among
/// `stalls` (`None`: none is): its steps follow each other at most
/// `every` apart (`SAFETY_POLL_INTERVAL_S`), not at the armed poll's pace,
/// since each waits on the one before.
pub(crate) fn remedy_look_in<'a>(
    stalls: impl IntoIterator<Item = &'a Stall>,
    last_tick: Option<f64>,
    now: f64,
    every: f64,
) -> Option<f64> {
    let under_way = |s: &&Stall| s.remedy.is_some() && !s.unresolved;
    stalls.into_iter().find(under_way)?;
    Some(last_tick.map_or(0.0, |t| (t + every - now).max(0.0)))
}

/// The fleet's resumes of the last hour, for the stagger and the hourly cap.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Pace {
    sent: Vec<f64>,
}

impl Pace {
    /// Whether a resume may go at `now`.
    pub(crate) fn allows(&self, now: f64, lim: &StallLimits) -> bool {
        let last_hour = self.sent.iter().filter(|t| now - **t < 3600.0).count();
        let spaced = self.sent.last().is_none_or(|t| now - t >= lim.stagger);
        spaced && last_hour < lim.max_per_hour
    }

    /// Notes a resume sent at `now`, forgetting those over an hour old.
    pub(crate) fn note(&mut self, now: f64) {
        self.sent.retain(|t| now - t < 3600.0);
        self.sent.push(now);
    }
}

/// Of the stalls due at `now` (each with whether its session is
/// restart-critical), the one whose resume goes first: critical sessions
/// first, then the longest due.
pub(crate) fn first_due<'a>(
    due: impl IntoIterator<Item = (&'a str, &'a Stall, bool)>,
    now: f64,
) -> Option<&'a str> {
    due.into_iter()
        .filter(|(_, s, _)| !s.awaiting() && !s.unresolved && s.resume_at <= now)
        .min_by(|a, b| {
            (!a.2, a.1.resume_at)
                .partial_cmp(&(!b.2, b.1.resume_at))
                .unwrap()
        })
        .map(|(id, _, _)| id)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The settings' defaults.
    pub(crate) const LIM: StallLimits = StallLimits {
        grace: 120.0,
        probe: 1200.0,
        dwell: 60.0,
        model_backoff: 300.0,
        verify: 90.0,
        max_attempts: 3,
        stagger: 30.0,
        max_per_hour: 12,
        compact: 300.0,
        clear_at_pct: None,
        window_tokens: None,
    };

    pub(crate) fn stall_of(kind: StallKind) -> Stall {
        stall(kind, 0.0)
    }

    fn stall(kind: StallKind, resume_at: f64) -> Stall {
        Stall {
            kind,
            evidence: "substate".into(),
            since: 0.0,
            resume_at,
            resume_from: "banner".into(),
            attempts: 0,
            sent_at: None,
            unresolved: false,
            remedy: None,
        }
    }

    #[test]
    fn one_resume_waits_for_its_time_and_is_verified_by_a_new_turn() {
        let mut s = stall(StallKind::UsageLimit, 1000.0);
        assert_eq!(s.step(Seen::Stalled, 999.0, &LIM, true), Step::Wait);
        assert_eq!(s.step(Seen::Stalled, 1000.0, &LIM, false), Step::Wait);
        assert_eq!(s.step(Seen::Closed, 1000.0, &LIM, true), Step::Wait);
        assert_eq!(s.step(Seen::Stalled, 1000.0, &LIM, true), Step::Resume);
        s.sent(1000.0);
        // One at a time: nothing more while it is being verified.
        assert_eq!(s.step(Seen::Stalled, 1089.0, &LIM, true), Step::Wait);
        assert_eq!(s.step(Seen::Working, 1050.0, &LIM, true), Step::Verified);
    }

    #[test]
    fn a_stall_is_said_with_its_kind_and_next_resume() {
        let utc = jiff::tz::TimeZone::UTC;
        let mut s = stall(StallKind::UsageLimit, 1_774_728_000.0 + 7800.0);
        let now = 1_774_728_000.0;
        assert_eq!(
            s.said(now, &utc),
            "usage-limit, resume at 22:10 (in 2h10m, from banner)"
        );
        assert!(s.said(s.resume_at - 40.0, &utc).contains("(in 40s,"));
        s.sent(now);
        assert_eq!(
            s.said(now, &utc),
            "usage-limit, resume 1 sent, waiting for a new turn"
        );
        s.failed(now, true);
        assert_eq!(s.said(now, &utc), "usage-limit, no more resumes (after 1)");
    }

    #[test]
    fn what_a_reading_shows_of_a_stall() {
        use StallKind::{ModelUnavailable as Model, UsageLimit as Limit};
        let l = |status: Status, sub: &str| Live {
            status: Some(status),
            substate: (!sub.is_empty()).then(|| sub.to_owned()),
            ..Live::default()
        };
        let cases = [
            // (reading, the stall's kind, the kind it shows, what it is)
            (
                l(Status::Idle, "usage-limit"),
                None,
                Some(Limit),
                Some(Seen::Stalled),
            ),
            (
                l(Status::Waiting, "usage-limit"),
                Some(Limit),
                Some(Limit),
                Some(Seen::Stalled),
            ),
            (l(Status::Error, "usage-limit"), None, None, None),
            (
                l(Status::Error, "model-unavailable"),
                Some(Model),
                Some(Model),
                Some(Seen::Stalled),
            ),
            (l(Status::Idle, "model-unavailable"), None, None, None),
            (
                l(Status::Running, "usage-limit"),
                Some(Limit),
                None,
                Some(Seen::Working),
            ),
            (
                l(Status::Idle, "idle-at-empty-prompt"),
                Some(Limit),
                None,
                Some(Seen::Working),
            ),
            (l(Status::Idle, ""), Some(Model), None, Some(Seen::Working)),
            (
                l(Status::Idle, "usage-limit"),
                Some(Model),
                Some(Limit),
                Some(Seen::Working),
            ),
            (
                l(Status::Waiting, "interactive-menu"),
                Some(Limit),
                None,
                Some(Seen::Closed),
            ),
            (
                l(Status::Idle, "background-work"),
                Some(Limit),
                None,
                Some(Seen::Closed),
            ),
            (l(Status::Idle, ""), None, None, None),
            (
                l(Status::Idle, ""),
                Some(StallKind::ApiOverload),
                None,
                Some(Seen::Stalled),
            ),
            (
                l(Status::Running, ""),
                Some(StallKind::ConnectionLost),
                None,
                Some(Seen::Working),
            ),
            (l(Status::Error, "auth-401"), Some(Model), None, None),
        ];
        for (reading, kind, shows, seen) in cases {
            assert_eq!(StallKind::of(&reading), shows, "{reading:?}");
            assert_eq!(Seen::of(&reading, kind), seen, "{reading:?} with {kind:?}");
        }
    }

    #[test]
    fn a_stall_that_started_again_by_itself_gets_nothing() {
        let s = stall(StallKind::ApiOverload, 1000.0);
        assert_eq!(
            s.step(Seen::Working, 1000.0, &LIM, true),
            Step::ResumedBySelf
        );
    }

    #[test]
    fn bounced_resumes_back_off_doubling_then_are_unresolved_once() {
        let mut s = stall(StallKind::ModelUnavailable, 0.0);
        let mut now = 0.0;
        let mut waits = Vec::new();
        loop {
            assert_eq!(s.step(Seen::Stalled, now, &LIM, true), Step::Resume);
            s.sent(now);
            now += LIM.verify;
            let Step::Failed {
                next_at,
                unresolved,
            } = s.step(Seen::Stalled, now, &LIM, true)
            else {
                panic!("a resume that started nothing must fail")
            };
            s.failed(next_at, unresolved);
            if unresolved {
                break;
            }
            waits.push(next_at - now);
            now = next_at;
        }
        assert_eq!(waits, [600.0, 1200.0]);
        assert_eq!(s.attempts, LIM.max_attempts);
        // Unresolved: no more resumes, however long it waits.
        assert_eq!(s.step(Seen::Stalled, now + 1e6, &LIM, true), Step::Wait);
    }

    #[test]
    fn ten_sessions_resetting_in_one_minute_are_staggered_critical_first() {
        let mut stalls: Vec<(String, Stall, bool)> = (0..15)
            .map(|i| {
                let critical = i % 3 == 0;
                (
                    format!("s{i:02}"),
                    stall(StallKind::UsageLimit, 1000.0 + i as f64),
                    critical,
                )
            })
            .collect();
        let (mut pace, mut sent) = (Pace::default(), Vec::new());
        let mut now = 1000.0;
        while now < 1000.0 + 3600.0 {
            let due = stalls.iter().map(|(id, s, c)| (id.as_str(), s, *c));
            if let Some(id) = first_due(due, now).map(str::to_owned) {
                let entry = stalls.iter_mut().find(|e| e.0 == id).unwrap();
                if entry
                    .1
                    .step(Seen::Stalled, now, &LIM, pace.allows(now, &LIM))
                    == Step::Resume
                {
                    entry.1.sent(now);
                    pace.note(now);
                    sent.push((now, id, entry.2));
                }
            }
            now += 5.0;
        }
        assert_eq!(sent.len(), LIM.max_per_hour, "the hourly cap");
        assert!(sent.windows(2).all(|w| w[1].0 - w[0].0 >= LIM.stagger));
        let criticals = sent.iter().take_while(|(_, _, c)| *c).count();
        assert_eq!(
            criticals, 5,
            "the five critical sessions go first: {sent:?}"
        );
    }
}

#[cfg(test)]
pub(crate) mod ladder_tests {
    use super::tests::LIM;
    use super::*;
    use PaneSays as P;

    /// A full context's stall, its remedy `/clear` (else `/compact`) not
    /// yet typed.
    pub(crate) fn full(clear: bool) -> Stall {
        Stall {
            kind: StallKind::ContextExhausted,
            evidence: "pane and last message: Prompt is too long".into(),
            since: 0.0,
            resume_at: 0.0,
            resume_from: "seen".into(),
            attempts: 0,
            sent_at: None,
            unresolved: false,
            remedy: Some(Remedy {
                clear,
                command_at: None,
                settled: false,
                old_id: Some("old".into()),
                proactive: false,
                compaction_failed: false,
                cleared_before: None,
            }),
        }
    }

    fn sent(mut s: Stall, at: f64) -> Stall {
        s.remedy.as_mut().unwrap().command_at = Some(at);
        s
    }

    fn settled(s: Stall) -> Stall {
        let mut s = sent(s, 0.0);
        s.remedy.as_mut().unwrap().settled = true;
        s
    }

    /// A case, the stall, what the look saw, what its pane says, now, and
    /// the step.
    type Row = (&'static str, Stall, Seen, Option<PaneSays>, f64, Step);

    #[test]
    fn each_step_of_a_full_context_s_remedy() {
        use GaveUp::*;
        use Seen::{Closed, Stalled, Working};
        let mut again = full(true);
        again.remedy.as_mut().unwrap().cleared_before = Some(-300.0);
        let mut failed = full(false);
        failed.remedy.as_mut().unwrap().compaction_failed = true;
        let mut verifying = settled(full(true));
        verifying.sent(10.0);
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            ("the command is due", full(true), Stalled, None, 0.0, Step::Resume),
            ("never into a menu", full(true), Closed, None, 0.0, Step::Wait),
            ("someone else typed", full(true), Working, None, 0.0, Step::ResumedBySelf),
            ("full again within ten minutes", again, Stalled, None, 0.0, Step::GaveUp(FullAgain)),
            ("compaction already failed", failed.clone(), Stalled, None, 0.0, Step::GaveUp(CompactionFailed)),
            ("…which a clear does not mind", { let mut f = failed; f.remedy.as_mut().unwrap().clear = true; f },
             Stalled, None, 0.0, Step::Resume),
            ("the pane is read first", sent(full(true), 0.0), Stalled, None, 1.0, Step::Wait),
            ("cleared", sent(full(true), 0.0), Stalled, Some(P::Cleared), 1.0, Step::Settled),
            ("not cleared yet", sent(full(true), 0.0), Stalled, Some(P::Full(super::context::Full::PromptTooLong)), 89.0, Step::Wait),
            ("not cleared in time", sent(full(true), 0.0), Stalled, Some(P::Nothing), 90.0, Step::GaveUp(NotCleared)),
            ("compacted", sent(full(false), 0.0), Working, Some(P::Compacted), 1.0, Step::Settled),
            ("compacting", sent(full(false), 0.0), Working, Some(P::Compacting), 599.0, Step::Wait),
            ("compaction hung", sent(full(false), 0.0), Working, Some(P::Compacting), 600.0, Step::GaveUp(CompactionHung)),
            ("compaction failed", sent(full(false), 0.0), Stalled,
             Some(P::Full(super::context::Full::CompactionFailed)), 5.0, Step::GaveUp(CompactionFailed)),
            ("no compaction in time", sent(full(false), 0.0), Stalled, Some(P::Nothing), 300.0, Step::GaveUp(NotCompacted)),
            ("the message goes unpaced", settled(full(true)), Stalled, None, 1.0, Step::Resume),
            ("…never while at work", settled(full(true)), Working, None, 1.0, Step::Wait),
            ("a new turn", verifying.clone(), Working, None, 20.0, Step::Verified),
            ("a turn that came and went", verifying.clone(), Stalled, Some(P::Answered), 20.0, Step::Verified),
            ("full again at once", verifying.clone(), Stalled,
             Some(P::Full(super::context::Full::PromptTooLong)), 20.0, Step::GaveUp(FullAgain)),
            ("waiting for the turn", verifying.clone(), Stalled, Some(P::Nothing), 99.0, Step::Wait),
            ("no turn", verifying, Stalled, Some(P::Nothing), 100.0,
             Step::Failed { next_at: 100.0 + LIM.dwell * 2.0, unresolved: false }),
        ];
        for (case, stall, seen, pane, now, want) in table {
            assert_eq!(
                stall.ladder_step(seen, pane, now, &LIM, true),
                want,
                "{case}"
            );
        }
        // Unpaced, the command waits its turn in the fleet.
        assert_eq!(
            full(true).ladder_step(Seen::Stalled, None, 0.0, &LIM, false),
            Step::Wait
        );
    }

    #[test]
    fn a_remedy_given_up_on_waits_until_it_works_again() {
        let mut s = sent(full(false), 0.0);
        s.unresolved = true;
        let hung = Some(PaneSays::Compacting);
        assert_eq!(
            s.ladder_step(Seen::Working, hung, 1e6, &LIM, true),
            Step::Wait
        );
        assert_eq!(
            s.ladder_step(Seen::Stalled, None, 1e6, &LIM, true),
            Step::Wait
        );
        let answered = Some(PaneSays::Answered);
        assert_eq!(
            s.ladder_step(Seen::Working, answered, 1e6, &LIM, true),
            Step::ResumedBySelf
        );
    }

    #[test]
    fn a_remedy_under_way_is_looked_at_at_the_safety_poll_s_pace() {
        let idle = super::tests::stall_of(StallKind::UsageLimit);
        assert_eq!(remedy_look_in([&idle], Some(10.0), 12.0, 5.0), None);
        let s = full(true);
        assert_eq!(
            remedy_look_in([&idle, &s], Some(10.0), 12.0, 5.0),
            Some(3.0)
        );
        assert_eq!(remedy_look_in([&s], Some(10.0), 16.0, 5.0), Some(0.0));
        let mut given_up = s;
        given_up.unresolved = true;
        assert_eq!(remedy_look_in([&given_up], Some(10.0), 16.0, 5.0), None);
    }

    #[test]
    fn a_remedy_is_said_step_by_step() {
        let utc = jiff::tz::TimeZone::UTC;
        let said = |s: &Stall| s.said(0.0, &utc);
        assert_eq!(
            said(&full(true)),
            "context-exhausted, /clear then re-brief (clear_on_compact)"
        );
        assert_eq!(
            said(&sent(full(false), 0.0)),
            "context-exhausted, /compact sent, waiting for it to compact"
        );
        assert_eq!(
            said(&settled(full(true))),
            "context-exhausted, cleared, its re-brief next"
        );
        let mut s = settled(full(false));
        s.sent(1.0);
        assert_eq!(
            said(&s),
            "context-exhausted, resume sent, waiting for a new turn"
        );
        s.unresolved = true;
        assert_eq!(
            said(&s),
            "context-exhausted, nothing more is typed (/compact then resume (not clear_on_compact))"
        );
    }
}
