//! One restart, carried out: the serialization wait, the last gate re-check,
//! liveness confirmation, `session restart`, verification, the `session
//! start` fallback, the 429 check, the records, the continuity message.
//!
//! [`Restarter`] runs these jobs one at a time on its own thread, so the main
//! loop never blocks on them and restarts never overlap. Decisions come from
//! [`crate::decide`]; this module does the calls and holds the state mutex
//! only between them.

use crate::act::context::{Context, SessionProbe};
use crate::act::job::{RestartJob, RestartKind};
use crate::act::{poller_restart, prompt_resume};
use crate::decide::cascade;
use crate::decide::liveness::{self, LivenessReason};
use crate::decide::outcomes::{RestartAction, Severity};
use crate::decide::stale_hook;
use crate::decide::{dedup, gates, notes, stop};
use crate::fleet::deck::RestartAnswer;
use crate::fleet::session::{Session, Status};
use crate::records::audit::LivenessRecord;
use crate::sys::worker::Worker;

/// The restart worker: one restart at a time, in the order they were cleared.
pub(crate) type Restarter = Worker<RestartJob>;

pub(crate) fn spawn(ctx: Context) -> std::io::Result<Restarter> {
    Worker::spawn("restart", move |job: RestartJob| {
        // Whatever happens in run (even a bug), the session must not stay in flight.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ctx.run(&job)));
        if outcome.is_err() {
            log::error!(
                "the restart of {} panicked (a bug); its budget slot is given back",
                job.session.id
            );
            ctx.give_back(&job);
        }
        gates::finish(&mut ctx.state.lock(), &job.session.id);
        ctx.store.save(&ctx.state);
    })
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

impl Context {
    fn run(&self, job: &RestartJob) {
        let s = &job.session;
        if !self.wait_turn(s) {
            log::info!("restart of {} abandoned: shutting down", s.id);
            self.give_back(job);
            return;
        }
        // Bound first: an `if let` would hold the state lock through its body.
        let held = gates::recheck(&mut self.state.lock(), &s.id, self.clock.now());
        if let Some(why) = held {
            log::info!("restart of {} skipped after the wait: {why}", s.id);
            self.give_back(job);
            return;
        }
        if job.kind != RestartKind::Revive {
            return poller_restart::restart(self, job);
        }
        // Seen stopped since the tick queued it (a hook's or a liveness read).
        let release = self.deck.version();
        if stop::held_by_stop(&self.state.lock(), &s.id, release) {
            log::info!("restart of {} dropped: it was seen stopped", s.id);
            self.give_back(job);
            return;
        }
        if !self.confirm_dead(job) {
            return;
        }
        let lim = &self.limits;
        if cascade::note_restart_call(&mut self.state.lock(), lim, &s.id, self.clock.now()) {
            let msg = format!(
                "{} restarts within {:.0}s — pausing every restart for {:.0}s",
                lim.cascade_threshold, lim.cascade_window, lim.cascade_pause
            );
            self.escalator.escalate(Severity::Cascade, &msg, None, true);
        }
        self.note(s, RestartAction::Restart, None);
        if self.dry_run {
            log::info!("dry-run: would restart {} ({}) now", s.id, s.title);
            return;
        }
        log::info!("restarting {} ({}) profile={}", s.id, s.title, s.profile);
        let issued = self.clock.now();
        let failed = match self.deck.restart(&s.profile, &s.id) {
            Ok(RestartAnswer::Skipped(reason)) => {
                log::info!("agent-deck declined to restart {}: {reason}; not falling back to session start", s.id);
                self.give_back(job);
                let reason = format!("agent-deck refused the restart: {reason}");
                self.note(s, RestartAction::CliRefused, Some(reason));
                return;
            }
            Ok(RestartAnswer::Restarted) => {
                notes::note_restarted(&mut self.state.lock(), &s.id, issued);
                None
            }
            // SPEC §5.5: any answer but `skipped` is followed by the status
            // poll and, still in error, the start fallback; agent-deck's own
            // guards (a missing project dir, a live tmux session) refuse a
            // start that could not be right.
            Err(e) => {
                let why = format!("restart {e}");
                log::warn!(
                    "restart of {} failed: {why}; reading its status before the start fallback",
                    s.id
                );
                Some(why)
            }
        };
        match self.verify(s, self.cfg.restart_verify) {
            Some(status) if status != Status::Error => self.succeeded(s, status),
            // Only a restart agent-deck carried out leaves a stale hook behind.
            Some(status) if failed.is_none() && self.only_a_stale_hook_says_error(s, issued) => {
                self.succeeded(s, status)
            }
            _ => {
                let why = failed.as_deref();
                self.fall_back_to_start(job, why.unwrap_or("still in error after the restart"))
            }
        }
    }

    /// Waits for the global serialization; false on shutdown.
    fn wait_turn(&self, s: &Session) -> bool {
        loop {
            let wait =
                gates::serialization_wait(&self.state.lock(), &self.limits, self.clock.now());
            if wait <= 0.0 {
                return true;
            }
            log::info!(
                "restart of {} waits {wait:.1}s: restarts are serialized",
                s.id
            );
            if !self.shutdown.sleep(crate::sys::clock::clamped(wait)) {
                return false;
            }
        }
    }

    /// Liveness confirmation with its records and alerts; true if dead.
    fn confirm_dead(&self, job: &RestartJob) -> bool {
        let s = &job.session;
        let probe = SessionProbe {
            ctx: self,
            session: s,
        };
        let ev = liveness::confirm(&probe, self.cfg.liveness_confirm_gap);
        let (reason, dead) = (ev.reason, ev.reason == LivenessReason::ConfirmedDead);
        let mut consecutive = None;
        if dead {
            log::info!("liveness: {} ({}) confirmed dead", s.id, s.title);
        } else {
            self.give_back(job);
            if reason == LivenessReason::PaneActive {
                let (n, alert) =
                    notes::note_pane_active(&mut self.state.lock(), &self.limits, &s.id);
                consecutive = Some(n);
                if alert {
                    let msg = format!(
                        "{} ({}) has reported status=error {n}x while its pane kept producing output — the session is alive and the restart was skipped each time. This is a status-classification problem, not a dead session.",
                        s.title, s.id
                    );
                    self.alert(s, Severity::LivenessMismatch, &msg);
                }
            }
            if reason == LivenessReason::AuthHold
                && dedup::first_in_episode(&mut self.state.lock(), &s.id, Severity::AuthHold)
            {
                let msg = format!(
                    "{} ({}) is held for an auth failure ({}) — a restart cannot fix a credential. Repair the login, then restart it explicitly.",
                    s.title,
                    s.id,
                    ev.auth_hold_reason.as_deref().unwrap_or("unknown")
                );
                self.alert(s, Severity::AuthHold, &msg);
            }
            log::info!("liveness: not restarting {} ({}): {reason}", s.id, s.title);
            self.note(s, RestartAction::SkippedAlive, Some(reason.to_string()));
        }
        self.records.liveness(&LivenessRecord {
            ts: self.clock.now(),
            id: s.id.clone(),
            title: s.title.clone(),
            profile: s.profile.clone(),
            gap_s: self.cfg.liveness_confirm_gap.as_secs_f64(),
            reads: ev.reads,
            pane: ev.pane,
            auth_hold_reason: ev.auth_hold_reason,
            decision: if dead { "restart" } else { "skip" }.into(),
            reason,
            consecutive_skips: consecutive,
            dry_run: self.dry_run,
        });
        dead
    }

    /// Whether the `error` read after a restart issued at `issued` comes
    /// only from a `dead` hook written before it, which agent-deck honours
    /// for two minutes of its age and `session restart` does not remove.
    fn only_a_stale_hook_says_error(&self, s: &Session, issued: f64) -> bool {
        let Some(hook) = self.stale_dead_hook(s, issued) else {
            return false;
        };
        log::info!(
            "{} still reads error after its restart only because its dead hook from before the restart (ts {:.0}) colours the status for {:.0}s of its age; not falling back to session start",
            s.id,
            hook.ts.unwrap_or_default(),
            stale_hook::HOOK_FRESH_S
        );
        true
    }

    /// `session start` after a restart that did not bring the session back;
    /// `why` says what the restart did, and leads a failure's reason.
    fn fall_back_to_start(&self, job: &RestartJob, why: &str) {
        let s = &job.session;
        if self.shutdown.is_set() {
            return self.failed(job, "shutdown during verification".into());
        }
        log::warn!("{}: {why}; falling back to session start", s.id);
        if let Err(e) = self.deck.start(&s.profile, &s.id) {
            return self.failed(job, format!("{why}; fallback start {e}"));
        }
        notes::note_ran(&mut self.state.lock(), &s.id);
        let within = self.cfg.start_verify;
        let secs = within.as_secs_f64();
        match self.verify(s, within) {
            Some(status) if status != Status::Error => self.succeeded(s, status),
            _ => self.failed(
                job,
                format!("fallback start returned success but status still error after {secs:.0}s"),
            ),
        }
    }

    /// A failed restart: a 429 backs off and gives the slot back; anything
    /// else counts as a crash and escalates on the second in a row.
    fn failed(&self, job: &RestartJob, err: String) {
        let (s, lim) = (&job.session, &self.limits);
        if self.shutdown.is_set() {
            // Cut short by our own shutdown: not the session's failure.
            self.give_back(job);
            log::info!(
                "restart of {} interrupted by shutdown; not counted as a failure",
                s.id
            );
            return self.note(s, RestartAction::RestartInterrupted, Some(err));
        }
        let transcript = self.deck.transcript(&s.profile, &s.id).unwrap_or_default();
        if is_rate_limited(&transcript) {
            let now = self.clock.now();
            let tripped = notes::note_rate_limited(&mut self.state.lock(), lim, &s.id, now);
            self.give_back(job);
            if tripped {
                let msg = format!(
                    "circuit breaker open: {} API rate-limited boots within {:.0}s — pausing every restart for {:.0}s",
                    lim.breaker_threshold, lim.breaker_window, lim.breaker_pause
                );
                self.escalator
                    .escalate(Severity::CircuitBreaker, &msg, None, true);
            }
            log::warn!(
                "restart of {} hit an API rate limit; backing off {:.0}s, not counted as a crash",
                s.id,
                lim.backoff_429
            );
            let mut rec = self.record(s, RestartAction::RateLimited, None);
            rec.backoff_s = Some(lim.backoff_429);
            return self.records.restart(&rec);
        }
        if prompt_resume::attempt(self, job, &transcript) {
            return;
        }
        let n = notes::note_failure(&mut self.state.lock(), &s.id);
        log::warn!(
            "restart of {} ({}) failed ({n} in a row): {err}",
            s.id,
            s.title
        );
        self.note(s, RestartAction::RestartFailed, Some(err.clone()));
        if n >= 2 {
            let msg = format!(
                "{} ({}) failed to restart {n}x consecutively; last err: {err}",
                s.title, s.id
            );
            self.alert(s, Severity::RestartFailed, &msg);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::act::context::tests::{config, restart_records, severities, NOW};
    use crate::fleet::fake::{live, FakeDeck, Script, SendAnswer};
    use crate::records::audit::LIVENESS_LOG;
    use crate::records::read_back::read_lines;

    const ID: &str = "3f9c2a1b-1755891234";

    /// A context over `deck` in `home`, every wait zero and restarts back to
    /// back (the fake clock never moves on).
    fn context(home: &std::path::Path, deck: Arc<FakeDeck>) -> Context {
        let (mut ctx, _) = crate::act::context::tests::context(home, deck);
        ctx.limits.min_interval = 0.0;
        ctx
    }

    fn revive(ctx: &Context) {
        ctx.run(&RestartJob {
            session: Session {
                id: ID.into(),
                title: "conductor-ops".into(),
                profile: "default".into(),
                ..Session::default()
            },
            slot: None,
            kind: RestartKind::Revive,
        });
    }

    /// A conductor in error whose `session restart` works, but whose status
    /// keeps reading `error` (as a fresh `dead` hook makes agent-deck do).
    fn still_error_after_restart(send: SendAnswer) -> Arc<FakeDeck> {
        Arc::new(FakeDeck::new(Script {
            shows: [live(Status::Error)].into(),
            start_ok: false,
            send,
            ..Script::default()
        }))
    }

    /// Two `error` reads for the liveness check, then `running` after the
    /// restart.
    fn dead_then_running() -> std::collections::VecDeque<Option<crate::fleet::session::Live>> {
        [
            live(Status::Error),
            live(Status::Error),
            live(Status::Running),
        ]
        .into()
    }

    /// A conductor in error whose `session restart` and `session start` both
    /// fail.
    fn restart_and_start_fail() -> Arc<FakeDeck> {
        Arc::new(FakeDeck::new(Script {
            shows: [live(Status::Error)].into(),
            restart: None,
            start_ok: false,
            ..Script::default()
        }))
    }

    fn dead_hook(ctx: &Context, ts: f64) {
        std::fs::write(
            ctx.cfg.hooks_dir.join(format!("{ID}.json")),
            format!(r#"{{"status":"dead","event":"SessionEnd","ts":{ts}}}"#),
        )
        .unwrap();
    }

    /// The `action`s and `final_status`es of `restart.log`.
    fn actions(home: &std::path::Path) -> Vec<(String, Option<String>)> {
        restart_records(home)
            .into_iter()
            .map(|r| (r.action.to_string(), r.final_status))
            .collect()
    }

    #[test]
    fn a_dead_hook_from_before_the_restart_causes_no_start_fallback_and_no_failure() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = still_error_after_restart(SendAnswer::Delivered);
        let ctx = context(tmp.path(), deck.clone());
        dead_hook(&ctx, (NOW - 30.0).floor());
        revive(&ctx);
        assert_eq!(deck.count("restart"), 1);
        assert_eq!(deck.count("start"), 0, "{:?}", deck.calls.lock());
        assert_eq!(
            actions(tmp.path()),
            [
                ("restart".to_owned(), None),
                ("restarted".to_owned(), Some("error".to_owned()))
            ]
        );
        let st = ctx.state.lock();
        let book = &st.sessions[ID];
        assert_eq!(book.consecutive_failures, 0);
        assert_eq!(book.restarted_at, Some(NOW));
        assert!(st.ran.contains(ID));
        assert_eq!(deck.count("send"), 1, "the continuity message goes out");
    }

    #[test]
    fn a_dead_hook_written_after_the_restart_is_handled_as_a_death() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = still_error_after_restart(SendAnswer::Delivered);
        let ctx = context(tmp.path(), deck.clone());
        // Same second as the restart: it may be a new death.
        dead_hook(&ctx, NOW.floor());
        revive(&ctx);
        assert_eq!(deck.count("start"), 1, "falls back to session start");
        let acts: Vec<String> = actions(tmp.path()).into_iter().map(|(a, _)| a).collect();
        assert_eq!(acts, ["restart", "restart-failed"]);
        assert_eq!(ctx.state.lock().sessions[ID].consecutive_failures, 1);
    }

    #[test]
    fn a_failed_restart_call_is_no_restart_a_stale_hook_could_excuse() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = restart_and_start_fail();
        let ctx = context(tmp.path(), deck.clone());
        dead_hook(&ctx, (NOW - 30.0).floor());
        revive(&ctx);
        assert_eq!(deck.count("start"), 1, "falls back to session start");
        let acts: Vec<String> = actions(tmp.path()).into_iter().map(|(a, _)| a).collect();
        assert_eq!(acts, ["restart", "restart-failed"]);
    }

    #[test]
    fn a_dead_hook_agent_deck_no_longer_honours_is_no_excuse() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = still_error_after_restart(SendAnswer::Delivered);
        let ctx = context(tmp.path(), deck.clone());
        dead_hook(&ctx, (NOW - 130.0).floor());
        revive(&ctx);
        assert_eq!(deck.count("start"), 1);
    }

    #[test]
    fn a_continuity_message_typed_into_the_pane_is_sent_once_and_the_restart_stands() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script {
            shows: dead_then_running(),
            send: SendAnswer::Undelivered(crate::fleet::parse::Delivery::Typed),
            ..Script::default()
        }));
        let ctx = context(tmp.path(), deck.clone());
        revive(&ctx);
        assert_eq!(deck.count("send"), 1, "not sent again");
        assert_eq!(
            actions(tmp.path()),
            [
                ("restart".to_owned(), None),
                ("restarted".to_owned(), Some("running".to_owned()))
            ]
        );
        assert_eq!(ctx.state.lock().sessions[ID].consecutive_failures, 0);
    }

    /// A job for the conductor holding a rate-limit slot reserved now.
    fn reserved(ctx: &Context) -> RestartJob {
        reserved_for(ctx, ID)
    }

    fn reserved_for(ctx: &Context, id: &str) -> RestartJob {
        let slot = gates::reserve(&mut ctx.state.lock(), &ctx.limits, id, NOW);
        RestartJob {
            session: Session {
                id: id.into(),
                title: "conductor-ops".into(),
                profile: "default".into(),
                ..Session::default()
            },
            slot: Some(slot),
            kind: RestartKind::Revive,
        }
    }

    fn slots_used(ctx: &Context) -> usize {
        ctx.state
            .lock()
            .sessions
            .get(ID)
            .map_or(0, |b| b.restarts.len())
    }

    #[test]
    fn a_confirmed_dead_conductor_is_restarted_and_keeps_its_slot() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script {
            shows: dead_then_running(),
            ..Script::default()
        }));
        let ctx = context(tmp.path(), deck.clone());
        ctx.run(&reserved(&ctx));
        assert_eq!(deck.count("output-pane"), 2, "{:?}", deck.calls.lock());
        assert_eq!((deck.count("restart"), deck.count("start")), (1, 0));
        assert_eq!(
            actions(tmp.path()),
            [
                ("restart".to_owned(), None),
                ("restarted".to_owned(), Some("running".to_owned()))
            ]
        );
        assert_eq!(slots_used(&ctx), 1, "a real restart spends its slot");
        let dir = config(tmp.path()).watchdog_dir;
        let liveness = read_lines::<LivenessRecord>(&dir.join(LIVENESS_LOG));
        assert_eq!(liveness.len(), 1);
        assert_eq!(liveness[0].reason, LivenessReason::ConfirmedDead);
    }

    #[test]
    fn a_skipped_answer_is_a_cli_refusal_with_no_start_and_the_slot_given_back() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script {
            shows: [live(Status::Error)].into(),
            restart: Some(RestartAnswer::Skipped("started 12s ago".into())),
            ..Script::default()
        }));
        let ctx = context(tmp.path(), deck.clone());
        ctx.run(&reserved(&ctx));
        assert_eq!((deck.count("restart"), deck.count("start")), (1, 0));
        let acts: Vec<String> = actions(tmp.path()).into_iter().map(|(a, _)| a).collect();
        assert_eq!(acts, ["restart", "cli-refused"]);
        assert_eq!(slots_used(&ctx), 0);
        assert_eq!(ctx.state.lock().sessions[ID].consecutive_failures, 0);
        assert!(severities(tmp.path()).is_empty());
    }

    #[test]
    fn a_failed_restart_falls_back_to_start_and_the_second_failure_escalates() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = restart_and_start_fail();
        let ctx = context(tmp.path(), deck.clone());
        ctx.run(&reserved(&ctx));
        assert_eq!((deck.count("restart"), deck.count("start")), (1, 1));
        assert!(severities(tmp.path()).is_empty(), "one failure is no alert");
        ctx.run(&reserved(&ctx));
        assert_eq!(deck.count("start"), 2);
        let acts: Vec<String> = actions(tmp.path()).into_iter().map(|(a, _)| a).collect();
        assert_eq!(
            acts,
            ["restart", "restart-failed", "restart", "restart-failed"]
        );
        assert_eq!(severities(tmp.path()), ["restart-failed"]);
        assert_eq!(slots_used(&ctx), 2, "real failures spend their slots");
    }

    #[test]
    fn rate_limited_boots_give_their_slot_back_and_the_third_opens_the_breaker() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script {
            shows: [live(Status::Error)].into(),
            restart: None,
            start_ok: false,
            transcript: "API Error: HTTP 429 Too Many Requests".into(),
            ..Script::default()
        }));
        let ctx = context(tmp.path(), deck.clone());
        // Three conductors, each booting into the same API rate limit.
        let ids = [ID, "a0b1c2d3-1755899999", "b0b1c2d3-1755899998"];
        assert_eq!(ctx.limits.breaker_threshold, ids.len());
        for id in ids {
            ctx.run(&reserved_for(&ctx, id));
        }
        let acts: Vec<String> = actions(tmp.path()).into_iter().map(|(a, _)| a).collect();
        assert_eq!(
            acts.iter().filter(|a| *a == "rate-limited").count(),
            3,
            "{acts:?}"
        );
        assert!(
            !acts.contains(&"restart-failed".to_owned()),
            "a 429 is no crash"
        );
        let st = ctx.state.lock();
        for id in ids {
            let book = &st.sessions[id];
            assert!(book.restarts.is_empty(), "{id}: its slot was given back");
            assert_eq!(book.consecutive_failures, 0);
        }
        assert!(st.breaker_open_until > NOW);
        drop(st);
        assert_eq!(severities(tmp.path()), ["circuit-breaker"]);
        // A fourth restart waits for the breaker.
        ctx.run(&reserved(&ctx));
        assert_eq!(deck.count("restart"), 3);
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
}
