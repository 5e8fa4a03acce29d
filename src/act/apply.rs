//! The one executor of endings: a job of the restart worker ends in an
//! [`Outcome`], and [`apply`] makes of it the book changes, the budget slot
//! given back, the log lines, the `restart.log` record and the alerts. It
//! decides nothing the outcome does not say: which ending it was is decided
//! by the job ([`crate::act::job_worker`]) and the rules it asks
//! ([`crate::decide`]).
//!
//! Every `restart.log` record is written from here: the endings, and the
//! records other rooms make on their way (a restart about to be called, a
//! hold, a stall seen, a patrol errand) through [`record`].

use crate::act::context::Context;
use crate::act::continuity::Continuity;
use crate::act::job::Job;
use crate::decide::outcomes::{RestartAction, Severity};
use crate::decide::restart::liveness::LivenessReason;
use crate::decide::restart::{Dropped, Outcome};
use crate::decide::stall::{GaveUp, Stall, StallKind, Transition};
use crate::decide::{book::dedup, book::notes, restart::refusal};
use crate::fleet::deck::{SpawnFailure, SpawnReason};
use crate::fleet::session::{Session, Status};
use crate::records::audit::{Detail, LivenessRecord, RestartRecord, SpawnDetail, StallDetail};
use crate::records::writer::Records;

/// Carries out how `job` ended; `continuity` takes a revived session's
/// message.
pub(crate) fn apply(ctx: &Context, job: &Job, outcome: &Outcome, continuity: &Continuity) {
    let s = &job.session;
    if outcome.gives_back() {
        if let Some(slot) = job.slot {
            ctx.state.lock().give_back_slot(&s.id, slot);
        }
    }
    match outcome {
        Outcome::Restarted { status, .. } => restarted(ctx, s, *status, continuity),
        Outcome::WouldRestart => {
            log::info!("dry-run: would restart {} ({}) now", s.id, s.title);
        }
        Outcome::Refused {
            reason,
            fresh,
            call,
        } => refused(ctx, job, reason, *fresh, call),
        Outcome::Failed { why, spawn } => match spawn {
            Some(f) if f.reason == SpawnReason::DiedFast => died_fast(ctx, s, why, f),
            _ => {
                let n = notes::note_failure(&mut ctx.state.lock(), &s.id);
                failed(ctx, s, n, why, spawn.as_ref());
            }
        },
        Outcome::RateLimited => {
            let lim = &ctx.limits;
            ctx.back_off_rate_limited(&s.id, ctx.clock.now(), lim.backoff_429);
            log::warn!(
                "restart of {} hit an API rate limit; backing off {:.0}s, not counted as a crash",
                s.id,
                lim.backoff_429
            );
            let rec = ctx.record(s, RestartAction::RateLimited, None);
            let backoff_s = lim.backoff_429;
            write(&ctx.records, &rec.with(Detail::RateLimited { backoff_s }));
        }
        Outcome::Unsaved { why, tmux, store } => unsaved(ctx, s, why, tmux.clone(), *store),
        Outcome::StoreLocked { why } => store_locked(ctx, s, why),
        Outcome::Unverified { why } => {
            log::warn!(
                "{}: {why}; whether it is back is settled when its status is read",
                s.id
            );
            ctx.state.lock().book(&s.id).unverified = Some(why.clone());
            record(ctx, s, RestartAction::RestartUnverified, Some(why.clone()));
        }
        Outcome::Interrupted { why } => {
            log::info!(
                "restart of {} interrupted by shutdown; not counted as a failure",
                s.id
            );
            record(ctx, s, RestartAction::RestartInterrupted, Some(why.clone()));
        }
        Outcome::Alive { evidence, gap_s } => alive(ctx, s, evidence, *gap_s),
        Outcome::Dropped(why) => dropped(s, why),
        Outcome::Resumed { stall, unconfirmed } => resumed(ctx, s, stall, unconfirmed.as_deref()),
        Outcome::ResumeFailed {
            stall,
            why,
            unresolved,
        } => {
            ctx.state.lock().book(&s.id).stall = Some(stall.clone());
            let escalate = unresolved.then_some(Severity::StallUnresolved);
            resume_failed(ctx, s, stall, why.clone(), escalate);
        }
        Outcome::Poller { action, reason } => {
            if *action != RestartAction::PollerRefused {
                let now = ctx.clock.now();
                crate::decide::patrol_rules::note_poller_restarted(
                    &mut ctx.state.lock(),
                    &s.id,
                    now,
                );
            }
            record(ctx, s, action.clone(), Some(reason.clone()));
        }
    }
}

/// Writes a `restart.log` record about `s` with nothing but its reason.
pub(crate) fn record(ctx: &Context, s: &Session, action: RestartAction, reason: Option<String>) {
    write(&ctx.records, &ctx.record(s, action, reason));
}

/// Writes a `restart.log` record, to `records` (`drill` has no daemon's
/// context).
pub(crate) fn write(records: &Records, rec: &RestartRecord) {
    records.restart(rec);
}

/// A job that did nothing, said as it was dropped.
fn dropped(s: &Session, why: &Dropped) {
    match why {
        Dropped::Shutdown => log::info!("restart of {} abandoned: shutting down", s.id),
        Dropped::Held(hold) => log::info!("restart of {} skipped after the wait: {hold}", s.id),
        Dropped::Stopped => log::info!("restart of {} dropped: it was seen stopped", s.id),
        Dropped::Panicked => log::error!(
            "the restart of {} panicked (a bug); its budget slot is given back",
            s.id
        ),
        Dropped::NoStall => {}
        Dropped::StatusUnread => {
            log::info!("resume of {} put off: its status is unreadable", s.id)
        }
        Dropped::NotStalled(status) => log::info!(
            "resume of {} not sent: it reads {} now; the next tick looks again",
            s.id,
            status.as_str()
        ),
    }
}

/// A restart of `s` that brought it back as `status`: noted, recorded, and
/// its continuity message handed to `continuity`.
pub(crate) fn restarted(ctx: &Context, s: &Session, status: Status, continuity: &Continuity) {
    let status = status.as_str();
    log::info!("restart of {} ({}) worked: status {status}", s.id, s.title);
    notes::note_success(&mut ctx.state.lock(), &s.id);
    let rec = ctx.record(s, RestartAction::Restarted, None);
    let final_status = status.to_owned();
    write(&ctx.records, &rec.with(Detail::Restarted { final_status }));
    continuity.queue(s);
}

/// The `n`th real failure in a row of a restart of `s`, for `err`: logged,
/// recorded with what agent-deck said of a failed `spawn`, and escalated
/// from the second on.
pub(crate) fn failed(ctx: &Context, s: &Session, n: u32, err: &str, spawn: Option<&SpawnFailure>) {
    log::warn!(
        "restart of {} ({}) failed ({n} in a row): {err}",
        s.id,
        s.title
    );
    let rec = ctx.record(s, RestartAction::RestartFailed, Some(err.to_owned()));
    let detail = spawn.map_or(Detail::Plain {}, spawn_detail);
    write(&ctx.records, &rec.with(detail));
    if n >= 2 {
        let msg = format!(
            "{} ({}) failed to restart {n}x consecutively; last err: {err}",
            s.title, s.id
        );
        ctx.alert(s, Severity::RestartFailed, &msg);
    }
}

/// What agent-deck said of a failed spawn, for its record: its reason, the
/// digest of the dying output (never the text) and `elapsed_ms`.
fn spawn_detail(f: &SpawnFailure) -> Detail {
    Detail::SpawnFailed(SpawnDetail {
        spawn_reason: f.reason.to_string(),
        dying_output_digest: f.dying_output_digest.clone(),
        elapsed_ms: f.elapsed_ms,
    })
}

/// agent-deck declined the restart on purpose (`skipped`): no start
/// fallback and no failure. A refusal from its freshness guard gives back
/// everything the attempt took and is tried again (SPEC §5.5,
/// [`refusal`]), recorded once per run; any other (an auth hold) gave back
/// its budget slot and is recorded.
fn refused(
    ctx: &Context,
    job: &Job,
    reason: &str,
    fresh: Option<refusal::Freshness>,
    call: &crate::decide::book::cascade::Call,
) {
    let s = &job.session;
    let rec = format!("agent-deck refused the restart: {reason}");
    let Some(fresh) = fresh else {
        log::info!(
            "agent-deck declined to restart {}: {reason}; not falling back to session start",
            s.id
        );
        return record(ctx, s, RestartAction::CliRefused, Some(rec));
    };
    let now = ctx.clock.now();
    let verdict = refusal::note_refused(
        &mut ctx.state.lock(),
        &ctx.limits,
        &s.id,
        job.slot,
        call,
        fresh,
        now,
    );
    match verdict.retry_at {
        Some(at) => log::info!(
            "agent-deck's freshness guard declined to restart {} ({reason}); nothing of the attempt is kept, and it is looked at again in {:.1}s",
            s.id,
            at - now
        ),
        None => log::warn!(
            "agent-deck's freshness guard declined to restart {} again ({reason}); its retries are spent, so it waits for its cooldown and the next look",
            s.id
        ),
    }
    if verdict.first {
        record(ctx, s, RestartAction::CliRefused, Some(rec));
    }
}

/// A spawn agent-deck saw die at once (`spawn_died_fast`): `restart-failed`
/// escalated now (naming the reason and how fast it died), and the session
/// held from restarts until it is seen healthy, instead of spending the
/// rest of its budget on a death a restart cannot fix (#2099).
fn died_fast(ctx: &Context, s: &Session, why: &str, f: &SpawnFailure) {
    let n = {
        let mut st = ctx.state.lock();
        notes::note_spawn_died_fast(&mut st, &s.id, ctx.clock.now());
        notes::note_failure(&mut st, &s.id)
    };
    let after = f
        .elapsed_ms
        .map_or_else(|| "an unknown time".to_owned(), |ms| format!("{ms} ms"));
    log::warn!(
        "restart of {} ({}) failed ({n} in a row): {why}; its new process died after {after}, which a start cannot fix: escalating now, and no more restarts of it until it is seen healthy",
        s.id,
        s.title
    );
    let rec = ctx.record(s, RestartAction::RestartFailed, Some(why.to_owned()));
    write(&ctx.records, &rec.with(spawn_detail(f)));
    let msg = format!(
        "{} ({}) cannot be restarted: agent-deck reports {} (elapsed_ms {}) — its new process exits at once, which a restart or start cannot fix. It is held from restarts until it is seen healthy; last err: {why}",
        s.title,
        s.id,
        f.reason,
        f.elapsed_ms.map_or_else(|| "unknown".to_owned(), |ms| ms.to_string()),
    );
    ctx.alert(s, Severity::RestartFailed, &msg);
}

/// The restart spawned `name` (when tmux could tell) and agent-deck did
/// not save it (`store`: its store said locked), or may have: recorded
/// `restart-unsaved` and said once an episode, with no start fallback and
/// no failure counted. Its slot stays spent (the restart ran), and the
/// session is held until it is seen healthy or `name` is gone.
fn unsaved(ctx: &Context, s: &Session, why: &str, name: Option<String>, store: bool) {
    let runs = name.as_deref().map_or_else(
        || "tmux could not be read to tell whether it spawned an agent".to_owned(),
        |n| format!("its agent runs in tmux session {n}, which agent-deck does not know"),
    );
    let reason = format!("{why}; {runs}; no session start, so as not to run a second agent");
    log::warn!("{} ({}): {reason}", s.id, s.title);
    {
        let mut st = ctx.state.lock();
        notes::note_restarted(&mut st, &s.id, ctx.clock.now());
        st.book(&s.id).unsaved = name;
    }
    record(ctx, s, RestartAction::RestartUnsaved, Some(reason.clone()));
    let severity = if store {
        Severity::StoreLocked
    } else {
        Severity::RestartFailed
    };
    if dedup::first_in_episode(&mut ctx.state.lock(), &s.id, severity.clone()) {
        let msg = format!(
            "{} ({}): {reason}. Once agent-deck's store reads again, attach to that tmux session or end it, then restart the session with agent-deck.",
            s.title, s.id
        );
        ctx.alert(s, severity, &msg);
    }
}

/// The restart could not open or save agent-deck's store and spawned
/// nothing: not a failed restart. The locked store is said once an
/// episode; the next poll that reads the session decides again.
fn store_locked(ctx: &Context, s: &Session, why: &str) {
    log::warn!(
        "{} ({}): agent-deck's store is locked ({why}); not restarted, tried again once it reads",
        s.id,
        s.title
    );
    let reason = format!("agent-deck's store is locked and nothing was spawned: {why}");
    record(ctx, s, RestartAction::RestartUnsaved, Some(reason));
    if dedup::first_in_episode(&mut ctx.state.lock(), &s.id, Severity::StoreLocked) {
        let msg = format!(
            "{} ({}) could not be restarted: agent-deck's store is locked ({why}). Look for a process holding agent-deck's state.db; it is restarted once the store reads again.",
            s.title, s.id
        );
        ctx.alert(s, Severity::StoreLocked, &msg);
    }
}

/// The liveness check found `s` alive: a pane that kept moving is counted
/// (and said once it keeps happening), an auth hold is said once an
/// episode; recorded in `restart.log` and `liveness.log`.
fn alive(ctx: &Context, s: &Session, ev: &crate::decide::restart::liveness::Evidence, gap_s: f64) {
    let reason = ev.reason;
    let mut consecutive = None;
    if reason == LivenessReason::PaneActive {
        let (n, alert) = notes::note_pane_active(&mut ctx.state.lock(), &ctx.limits, &s.id);
        consecutive = Some(n);
        if alert {
            let msg = format!(
                "{} ({}) has reported status=error {n}x while its pane kept producing output — the session is alive and the restart was skipped each time. This is a status-classification problem, not a dead session.",
                s.title, s.id
            );
            ctx.alert(s, Severity::LivenessMismatch, &msg);
        }
    }
    if reason == LivenessReason::AuthHold
        && dedup::first_in_episode(&mut ctx.state.lock(), &s.id, Severity::AuthHold)
    {
        let msg = format!(
            "{} ({}) is held for an auth failure ({}) — a restart cannot fix a credential. Repair the login, then restart it explicitly.",
            s.title,
            s.id,
            ev.auth_hold_reason.as_deref().unwrap_or("unknown")
        );
        ctx.alert(s, Severity::AuthHold, &msg);
    }
    log::info!("liveness: not restarting {} ({}): {reason}", s.id, s.title);
    record(
        ctx,
        s,
        RestartAction::SkippedAlive,
        Some(reason.to_string()),
    );
    liveness(ctx, s, ev, gap_s, consecutive);
}

/// The `liveness.log` record of the check of `s` that found `ev`.
pub(crate) fn liveness(
    ctx: &Context,
    s: &Session,
    ev: &crate::decide::restart::liveness::Evidence,
    gap_s: f64,
    consecutive_skips: Option<u32>,
) {
    let dead = ev.reason == LivenessReason::ConfirmedDead;
    ctx.records.liveness(&LivenessRecord {
        ts: ctx.clock.now(),
        id: s.id.clone(),
        title: s.title.clone(),
        profile: s.profile.clone(),
        gap_s,
        reads: ev.reads.clone(),
        pane: ev.pane.clone(),
        auth_hold_reason: ev.auth_hold_reason.clone(),
        decision: if dead { "restart" } else { "skip" }.into(),
        reason: ev.reason,
        consecutive_skips,
        dry_run: ctx.dry_run,
        proof: ev.proof,
    });
}

/// Persists and says a stall's `change` that a tick decided: its record,
/// the book and `state.json`.
pub(crate) fn stall(ctx: &Context, s: &Session, change: Transition) {
    let kept = match change {
        Transition::Detected(stall) if stall.remedy.as_ref().is_some_and(|r| r.proactive) => {
            // No stall: its record is the `context-cleared` of its `/clear`.
            let (id, title, evidence) = (&s.id, &s.title, &stall.evidence);
            log::info!("{id} ({title}) is at its proactive clear: {evidence}; clearing it");
            Some(stall)
        }
        Transition::Detected(stall) => {
            log::warn!(
                "{} ({}) is stalled: {}; resuming at {} (from {})",
                s.id,
                s.title,
                stall.kind.as_str(),
                crate::sys::clock::local_timestamp(stall.resume_at),
                stall.resume_from
            );
            stall_record(ctx, s, RestartAction::StallDetected, &stall, None);
            Some(stall)
        }
        Transition::Ended { stall, ended } => {
            log::info!("{} ({}) works again: {ended}", s.id, s.title);
            stall_record(ctx, s, ended.clone(), &stall, None);
            let cleared = stall.remedy.as_ref().is_some_and(|r| r.clear);
            if cleared && ended == RestartAction::ResumeVerified {
                ctx.state.lock().book(&s.id).context_cleared_at = Some(ctx.clock.now());
            }
            None
        }
        Transition::Failed {
            next,
            why,
            unresolved,
        } => {
            let escalate = unresolved.then_some(Severity::StallUnresolved);
            resume_failed(ctx, s, &next, why, escalate);
            Some(next)
        }
        Transition::Settled(next) => {
            let remedy = next.remedy.as_ref();
            if remedy.is_some_and(|r| !r.clear) {
                log::info!("{} ({}) compacted; resuming it", s.id, s.title);
                stall_record(ctx, s, RestartAction::Compacted, &next, None);
            } else {
                log::info!(
                    "{} ({}) cleared: an empty prompt; re-briefing it",
                    s.id,
                    s.title
                );
            }
            Some(next)
        }
        Transition::GaveUp { next, why } => {
            let severity = match why {
                GaveUp::CompactionHung => Severity::CompactionHung,
                _ => Severity::StallUnresolved,
            };
            resume_failed(ctx, s, &next, why.said(&ctx.limits.stall), Some(severity));
            Some(next)
        }
        Transition::Gone => {
            ctx.state.lock().book(&s.id).stall = None;
            return;
        }
    };
    ctx.state.lock().book(&s.id).stall = kept;
    ctx.store.save(&ctx.state);
}

/// A stall's resume that went out (or, in a dry run, would have), or a
/// full context's command: recorded `resume-sent`, or `clear-sent`,
/// `compact-sent` (`context-cleared` for a proactive clear).
fn resumed(ctx: &Context, s: &Session, stall: &Stall, unconfirmed: Option<&str>) {
    let kind = stall.kind.as_str();
    let command = (stall.remedy.as_ref()).filter(|_| stall.sent_at.is_none() || ctx.dry_run);
    let action = match command {
        Some(r) if r.proactive => RestartAction::ContextCleared,
        Some(r) if r.clear => RestartAction::ClearSent,
        Some(_) => RestartAction::CompactSent,
        None => RestartAction::ResumeSent,
    };
    let what = command.map_or("resume", |r| r.command());
    if ctx.dry_run {
        log::info!("dry-run: would {what} {} ({}) now: {kind}", s.id, s.title);
        ctx.state.lock().book(&s.id).stall = Some(stall.clone());
    } else {
        if let Some(e) = unconfirmed {
            log::info!("{what} typed into the pane of {}, unconfirmed ({e})", s.id);
        }
        log::info!("{what} sent to {} ({}): {kind}", s.id, s.title);
        let mut st = ctx.state.lock();
        st.resumes
            .note(stall.sent_at.unwrap_or_else(|| ctx.clock.now()));
        st.book(&s.id).stall = Some(stall.clone());
    }
    stall_record(ctx, s, action, stall, None);
}

/// A resume that started no turn, or was not delivered, or a full
/// context's remedy that went no further (`why`): recorded, and escalated
/// once as `escalate` when that leaves the stall for a human.
fn resume_failed(
    ctx: &Context,
    s: &Session,
    stall: &Stall,
    why: String,
    escalate: Option<Severity>,
) {
    log::warn!(
        "resume {} of {} ({}) failed: {why}",
        stall.attempts,
        s.id,
        s.title
    );
    let Some(severity) = escalate else {
        stall_record(ctx, s, RestartAction::ResumeFailed, stall, Some(why));
        return;
    };
    let msg = match stall.kind {
        StallKind::ContextExhausted => format!(
            "{} ({}): full context window, {why}; nothing more is typed — it needs a human",
            s.title, s.id
        ),
        kind => format!(
            "{} ({}) is stalled ({}) and {} resumes did not bring it back — it needs a human",
            s.title,
            s.id,
            kind.as_str(),
            ctx.limits.stall.max_attempts
        ),
    };
    stall_record(ctx, s, RestartAction::ResumeFailed, stall, Some(why));
    ctx.alert(s, severity, &msg);
}

/// Writes a `restart.log` record of `action` about the stall of `s`.
fn stall_record(
    ctx: &Context,
    s: &Session,
    action: RestartAction,
    stall: &Stall,
    reason: Option<String>,
) {
    let detail = Detail::Stall(StallDetail {
        kind: stall.kind.as_str().into(),
        evidence: stall.evidence.clone(),
        resume_at: stall.resume_at,
        resume_from: stall.resume_from.clone(),
        attempt: (stall.attempts > 0).then_some(stall.attempts),
        remedy: stall.remedy.as_ref().map(|r| r.said().to_owned()),
    });
    write(&ctx.records, &ctx.record(s, action, reason).with(detail));
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Carries out `outcome` of `job` as the worker does, with a
    /// continuity worker of its own.
    pub(crate) fn apply_now(ctx: &Context, job: &Job, outcome: &Outcome) {
        let continuity = Continuity::spawn(ctx.clone()).unwrap();
        apply(ctx, job, outcome, &continuity);
        continuity.finish();
    }
}
