//! The worker's jobs (a revive, a stall's resume, a poller restart),
//! performed: [`crate::decide::restart::Machine`] says each next thing to
//! do (the serialization wait, the last gates, liveness confirmation,
//! `session restart`, verification, the `session start` fallback, the 429
//! check, prompt-resume) and this module does it and tells the machine
//! what came of it, holding the state mutex only while the machine steps.
//! Its log lines are said as part of the action they lead or follow.
//!
//! [`Jobs`] runs these jobs one at a time on its own thread, so the main
//! loop never blocks on them and restarts never overlap; the continuity
//! message goes out on a worker of its own ([`Continuity`]). Each job ends
//! in an [`Outcome`], which [`apply()`] carries out and the main loop is
//! sent, woken through the queue to take it at once.

use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};

use crate::act::apply::{self, apply};
use crate::act::context::Context;
use crate::act::continuity::Continuity;
use crate::act::job::{self, Job};
use crate::act::{poller_restart, prompt_resume, resume};
use crate::decide::outcomes::{RestartAction, Severity};
use crate::decide::restart::{Action, Dropped, Event, Machine, Now, Outcome, Phase};
use crate::decide::{book::stale_hook, restart::gates, restart::liveness};
use crate::fleet::panes::{self, ListError, PaneSource, Tmux};
use crate::fleet::session::Session;
use crate::sys::clock::clamped;
use crate::sys::worker::Worker;
use crate::triggers::event_queue::Trigger;
use crate::triggers::pane_share::PaneShare;

/// The restart worker (one restart at a time, in the order they were
/// cleared) and, beside it, the continuity messages' own worker.
pub(crate) struct Jobs {
    // Dropped in this order: the restarts end before the messages they queued.
    restarts: Worker<Job>,
    continuity: Arc<Continuity>,
    /// Each job's ending: its session's id and its outcome.
    ended: Receiver<(String, Outcome)>,
    /// Where the pane watch is told a job is queued.
    panes: Option<Arc<PaneShare>>,
}

impl Jobs {
    pub(crate) fn submit(&self, job: Job) {
        if let Some(panes) = &self.panes {
            panes.restart_queued(&job.session.id);
        }
        self.restarts.submit(job);
    }

    /// Where a restart a later look found working sends its message.
    pub(crate) fn continuity(&self) -> &Continuity {
        &self.continuity
    }

    /// The endings of the jobs that ended since the last call, in order.
    pub(crate) fn ended(&self) -> Vec<(String, Outcome)> {
        self.ended.try_iter().collect()
    }

    /// Runs the queued restarts, then the messages they left, and stops both.
    pub(crate) fn finish(&mut self) {
        self.restarts.finish();
        self.continuity.finish();
    }
}

pub(crate) fn spawn(ctx: Context) -> std::io::Result<Jobs> {
    let continuity = Arc::new(Continuity::spawn(ctx.clone())?);
    let told = continuity.clone();
    let (tx, ended) = crossbeam_channel::unbounded();
    let panes = ctx.panes.clone();
    let restarts = Worker::spawn("restart", move |job: Job| {
        run_job(&ctx, &job, &told, &tx);
    })?;
    Ok(Jobs {
        restarts,
        continuity,
        ended,
        panes,
    })
}

/// Carries `job` out, applies its ending and sends it on. Whatever happens
/// in it (even a bug), the session must not stay in flight.
fn run_job(ctx: &Context, job: &Job, continuity: &Continuity, tx: &Sender<(String, Outcome)>) {
    let catch = |f: &dyn Fn() -> Outcome| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            .unwrap_or(Outcome::Dropped(Dropped::Panicked))
    };
    let run = JobRun {
        ctx,
        job,
        continuity,
    };
    let outcome = catch(&|| run.carry_out());
    let applied = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        apply(ctx, job, &outcome, continuity)
    }));
    if applied.is_err() {
        log::error!(
            "the ending of the restart of {} could not be carried out (a bug)",
            job.session.id
        );
    }
    // Sent before the session leaves flight, so a look that finds it out
    // of flight has its ending. The main loop may have stopped listening:
    // nothing is lost, as the ending is applied.
    let _ = tx.send((job.session.id.clone(), outcome));
    gates::finish(&mut ctx.state.lock(), &job.session.id);
    ctx.store.save(&ctx.state);
    if let Some(queue) = &ctx.queue {
        queue.send(Trigger::JobEnded);
    }
}

/// One restart job being carried out, over the shared context.
struct JobRun<'a> {
    ctx: &'a Context,
    job: &'a Job,
    continuity: &'a Continuity,
}

impl JobRun<'_> {
    /// Carries out one restart job, from its turn in the serialization to
    /// how it ended: the machine steps, under one lock, and each action it
    /// asks for is performed.
    fn carry_out(&self) -> Outcome {
        let (ctx, job) = (self.ctx, self.job);
        let mut machine = Machine {
            id: &job.session.id,
            kind: &job.kind,
            proof: job.proven.as_ref().map(|p| p.proof),
            ending: job.ending.as_deref(),
            dry_run: ctx.dry_run,
            cfg: &ctx.cfg,
            lim: &ctx.limits,
            phase: Phase::Start,
        };
        let mut event = Event::Done;
        loop {
            let now = Now {
                at: ctx.clock.now(),
                shutdown: ctx.shutdown.is_set(),
                release: ctx.deck.version(),
            };
            let action = machine.step(event, &mut ctx.state.lock(), now);
            event = match action {
                Action::Done(outcome) => return outcome,
                action => self.perform(action),
            };
        }
    }

    /// Performs `action`: what came of it.
    fn perform(&self, action: Action) -> Event {
        let (ctx, s) = (self.ctx, &self.job.session);
        match action {
            Action::WaitSent => Event::Waited(self.continuity.wait_sent(&s.id, &ctx.shutdown)),
            Action::Sleep(wait) => {
                log::info!(
                    "restart of {} waits {wait:.1}s: restarts are serialized",
                    s.id
                );
                Event::Waited(ctx.shutdown.sleep(clamped(wait)).then_some(true))
            }
            Action::Resume => Event::Ended(resume::resume(ctx, self.job)),
            Action::Poller => Event::Ended(poller_restart::restart(ctx, self.job)),
            Action::Confirm(shown) => {
                let proven = self.job.proven.as_ref();
                let first = proven.filter(|_| shown).map(|p| p.shown.clone());
                let (gap, proof) = (ctx.cfg.liveness_confirm_gap, proven.map(|p| p.proof));
                let evidence = liveness::confirm(&ctx.probe(s, first), gap, proof);
                let map = ctx.panes.as_ref().and_then(|p| p.map());
                let bare = map.is_some_and(|m| m.bare.contains(&s.id));
                Event::Confirmed { evidence, bare }
            }
            Action::Dead { evidence, gap_s } => {
                log::info!("liveness: {} ({}) confirmed dead", s.id, s.title);
                apply::liveness(ctx, s, &evidence, gap_s, None);
                Event::Done
            }
            Action::RecordCall(cascade) => {
                if let Some(msg) = cascade {
                    ctx.escalator.escalate(Severity::Cascade, &msg, None, true);
                }
                apply::record(ctx, s, RestartAction::Restart, None);
                Event::Done
            }
            Action::CallRestart => {
                log::info!("restarting {} ({}) profile={}", s.id, s.title, s.profile);
                let issued = ctx.clock.now();
                let answer = ctx.deck.restart(&s.profile, &s.id);
                Event::Restart { issued, answer }
            }
            Action::Verify { within, warn } => {
                if let Some(warn) = warn {
                    log::warn!("{warn}");
                }
                Event::Verified(job::verify(ctx, s, within))
            }
            Action::ReadHook(issued) => Event::Hook(self.only_a_stale_hook_says_error(s, issued)),
            Action::ListTmux => Event::Listed(self.spawned(s)),
            Action::EndUnsaved(name) => Event::EndedUnsaved(self.end_unsaved(s, &name)),
            Action::CallStart(warn) => {
                log::warn!("{warn}");
                Event::Started(ctx.deck.start(&s.profile, &s.id))
            }
            Action::ReadTranscript => {
                let text = ctx.deck.transcript(&s.profile, &s.id);
                Event::Transcript(text.unwrap_or_default())
            }
            Action::PromptResume(text) => {
                Event::Verified(prompt_resume::attempt(ctx, self.job, &text).unwrap_or_default())
            }
            Action::Done(_) => unreachable!("a job ends at Done"),
        }
    }

    /// Whether the `error` read after a restart issued at `issued` comes
    /// only from a `dead` hook written before it, which agent-deck honours
    /// for two minutes of its age and `session restart` does not remove.
    fn only_a_stale_hook_says_error(&self, s: &Session, issued: f64) -> bool {
        let Some(hook) = self.ctx.stale_dead_hook(s, issued) else {
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

    /// Ends `name`, the tmux session the last restart of `s` left unsaved,
    /// when a fresh listing of agent-deck's server still shows it and no
    /// name the main loop's map knows is it (SPEC §5.5): recorded
    /// `unsaved-ended` and said in one line. Anything else keeps the hold.
    fn end_unsaved(&self, s: &Session, name: &str) -> bool {
        let ctx = self.ctx;
        let tmux = Tmux::for_config(&ctx.cfg, ctx.shutdown.clone());
        let known = ctx.panes.as_ref().and_then(|p| p.map()).map(|m| m.known);
        let unsafe_why = match (known, tmux.list()) {
            (None, _) => Some("no map of agent-deck's tmux sessions yet".to_owned()),
            (_, Err(e)) => Some(format!("tmux cannot be listed ({e})")),
            (Some(known), _) if known.contains(name) => Some("agent-deck knows it now".into()),
            (_, Ok(listing)) if !listing.panes.contains_key(name) => {
                Some("it is gone already".into())
            }
            _ => None,
        };
        let ended = match unsafe_why {
            None => tmux.end_session(name),
            Some(why) => Err(why),
        };
        if let Err(why) = ended {
            log::warn!(
                "{} ({}): the unsaved tmux session {name} was not ended ({why}); the session stays held",
                s.id,
                s.title
            );
            return false;
        }
        let why = format!(
            "ended tmux session {name}, which its last restart spawned and agent-deck never saved, so that its restart runs one agent that agent-deck knows"
        );
        log::warn!("{} ({}): {why}", s.id, s.title);
        apply::record(ctx, s, RestartAction::UnsavedEnded, Some(why));
        true
    }

    /// The tmux session of `s` that agent-deck does not know (no name of
    /// the main loop's map), as a fresh listing of its server shows it: the
    /// one a restart spawned and did not save. The pane watch's listings
    /// are older than the restart call, and `--once` has none. `None`: tmux
    /// unreadable, or no tick named agent-deck's sessions yet; `Some(None)`:
    /// there is none.
    fn spawned(&self, s: &Session) -> Option<Option<String>> {
        let known = self.ctx.panes.as_ref()?.map()?.known;
        let tmux = Tmux::for_config(&self.ctx.cfg, self.ctx.shutdown.clone());
        match tmux.list() {
            Ok(listing) => Some(panes::unknown_of(&listing, &s.title, &known).map(str::to_owned)),
            Err(ListError::NoServer) => Some(None),
            Err(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::act::context::tests::{config, restart_records, severities, NOW};
    use crate::decide::outcomes::RestartAction;
    use crate::decide::restart::liveness::LivenessReason;
    use crate::decide::restart::JobKind;
    use crate::decide::{book::notes, restart::refusal};
    use crate::fleet::deck::{RestartAnswer, SpawnFailure, SpawnReason};
    use crate::fleet::fake::{live, FakeDeck, Script, SendAnswer};
    use crate::fleet::session::Status;
    use crate::records::audit::{Detail, LivenessRecord, SpawnDetail, LIVENESS_LOG};
    use crate::records::read_back::read_lines;

    const ID: &str = "3f9c2a1b-1755891234";

    /// A context over `deck` in `home`, every wait zero and restarts back to
    /// back (the fake clock never moves on).
    fn context(home: &std::path::Path, deck: Arc<FakeDeck>) -> Context {
        let (mut ctx, _) = crate::act::context::tests::context(home, deck);
        ctx.limits.min_interval = 0.0;
        ctx
    }

    /// Carries `job` out as the worker does; its continuity message goes out
    /// before it returns.
    fn carry_out(ctx: &Context, job: &Job) {
        let continuity = Continuity::spawn(ctx.clone()).unwrap();
        let (tx, _ended) = crossbeam_channel::unbounded();
        run_job(ctx, job, &continuity, &tx);
    }

    fn revive(ctx: &Context) {
        carry_out(
            ctx,
            &Job {
                session: Session {
                    id: ID.into(),
                    title: "conductor-ops".into(),
                    profile: "default".into(),
                    ..Session::default()
                },
                slot: None,
                kind: JobKind::Revive,
                proven: None,
                ending: None,
            },
        );
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
            .map(|r| {
                let status = match r.detail {
                    Detail::Restarted { final_status } => Some(final_status),
                    _ => None,
                };
                (r.action.to_string(), status)
            })
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
    fn reserved(ctx: &Context) -> Job {
        reserved_for(ctx, ID)
    }

    fn reserved_for(ctx: &Context, id: &str) -> Job {
        let slot = gates::reserve(&mut ctx.state.lock(), &ctx.limits, id, NOW);
        Job {
            session: Session {
                id: id.into(),
                title: "conductor-ops".into(),
                profile: "default".into(),
                ..Session::default()
            },
            slot: Some(slot),
            kind: JobKind::Revive,
            proven: None,
            ending: None,
        }
    }

    fn slots_used(ctx: &Context) -> usize {
        ctx.state
            .lock()
            .sessions
            .get(ID)
            .map_or(0, |b| b.restarts.len())
    }

    /// Two revivals in turn, each read `error` twice, then `running`; each
    /// continuity message waits for the test to open `gate`.
    fn two_revivals(gate: crossbeam_channel::Receiver<()>) -> Arc<FakeDeck> {
        let shows = [Status::Error, Status::Error, Status::Running].repeat(2);
        Arc::new(FakeDeck::new(Script {
            shows: shows.into_iter().map(live).collect(),
            send_gate: Some(gate),
            ..Script::default()
        }))
    }

    #[test]
    fn a_slow_continuity_message_does_not_hold_up_the_next_revive() {
        let tmp = tempfile::tempdir().unwrap();
        let (gate, held) = crossbeam_channel::bounded(0);
        let deck = two_revivals(held);
        let ctx = context(tmp.path(), deck.clone());
        let mut worker = super::spawn(ctx.clone()).unwrap();
        let other = "a0b1c2d3-1755899999";
        worker.submit(reserved(&ctx));
        worker.submit(reserved_for(&ctx, other));
        let second = deck.wait_for_calls(&format!("restart {other}"), 1, Duration::from_secs(5));
        let calls = deck.calls.lock().clone();
        drop(gate);
        worker.finish();
        assert!(
            second,
            "the second revive waited for the first message: {calls:?}"
        );
        assert_eq!(deck.count("send"), 2, "each message goes out once");
        let acts: Vec<String> = actions(tmp.path()).into_iter().map(|(a, _)| a).collect();
        assert_eq!(acts, ["restart", "restarted", "restart", "restarted"]);
    }

    #[test]
    fn a_session_is_not_called_on_while_its_continuity_message_goes_out() {
        let tmp = tempfile::tempdir().unwrap();
        let (gate, held) = crossbeam_channel::bounded(0);
        let deck = two_revivals(held);
        let ctx = context(tmp.path(), deck.clone());
        let mut worker = super::spawn(ctx.clone()).unwrap();
        worker.submit(reserved(&ctx));
        worker.submit(reserved(&ctx));
        let sending = deck.wait_for_calls(&format!("send {ID}"), 1, Duration::from_secs(5));
        // The first revival read it three times: two liveness reads, one verify.
        let show = format!("show {ID}");
        let early = deck.wait_for_calls(&show, 4, Duration::from_millis(200));
        drop(gate);
        worker.finish();
        assert!(sending && !early, "{:?}", deck.calls.lock());
        assert_eq!((deck.count("restart"), deck.count("send")), (2, 2));
    }

    #[test]
    fn a_call_whose_status_no_read_could_give_is_recorded_unverified_not_failed() {
        use Status::Error;
        #[rustfmt::skip]
        let cases = [
            (vec![live(Error), live(Error), None], 0, "status unreadable after restart"),
            (vec![live(Error), live(Error), live(Error), None], 1,
             "still in error after the restart; status unreadable after start"),
        ];
        for (shows, starts, why) in cases {
            let tmp = tempfile::tempdir().unwrap();
            let deck = Arc::new(FakeDeck::new(Script {
                shows: shows.into(),
                ..Script::default()
            }));
            let ctx = context(tmp.path(), deck.clone());
            carry_out(&ctx, &reserved(&ctx));
            assert_eq!((deck.count("start"), deck.count("send")), (starts, 0));
            let recs = restart_records(tmp.path());
            assert_eq!(recs[1].action, RestartAction::RestartUnverified);
            assert_eq!(recs[1].reason.as_deref(), Some(why));
            let book = &ctx.state.lock().sessions[ID];
            assert_eq!(book.unverified.as_deref(), Some(why), "settled later");
            assert_eq!((book.consecutive_failures, book.restarts.len()), (0, 1));
        }
    }

    #[test]
    fn a_confirmed_dead_conductor_is_restarted_and_keeps_its_slot() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script {
            shows: dead_then_running(),
            ..Script::default()
        }));
        let ctx = context(tmp.path(), deck.clone());
        carry_out(&ctx, &reserved(&ctx));
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

    /// A job for the conductor whose death the pane watch proved, carrying
    /// the `session show` that found it in error.
    fn proven(ctx: &Context) -> Job {
        Job {
            proven: Some(crate::act::job::Proven {
                proof: crate::fleet::panes::Proof::ProcessExited,
                shown: live(Status::Error).unwrap(),
            }),
            ..reserved(ctx)
        }
    }

    fn liveness_records(home: &std::path::Path) -> Vec<LivenessRecord> {
        read_lines::<LivenessRecord>(&config(home).watchdog_dir.join(LIVENESS_LOG))
    }

    #[test]
    fn a_kernel_proven_death_goes_from_its_one_show_to_the_restart_call_unsampled() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script {
            shows: [live(Status::Running)].into(),
            ..Script::default()
        }));
        let ctx = context(tmp.path(), deck.clone());
        carry_out(&ctx, &proven(&ctx));
        let calls = deck.calls.lock().clone();
        assert_eq!(
            calls[..2],
            [format!("restart {ID}"), format!("show {ID}")],
            "the show that found it in error is the only one before the restart call; then the verification"
        );
        let recs = liveness_records(tmp.path());
        assert_eq!(recs.len(), 1);
        let rec = &recs[0];
        assert_eq!(
            (rec.reason, rec.decision.as_str(), rec.gap_s),
            (LivenessReason::ConfirmedDead, "restart", 0.0)
        );
        assert_eq!(rec.reads.len(), 1);
        assert!(!rec.pane.sampled);
        assert_eq!(deck.count("output-pane"), 0, "no pane sample");
        let line = std::fs::read_to_string(config(tmp.path()).watchdog_dir.join(LIVENESS_LOG));
        assert!(line.unwrap().contains(r#""proof":"process_exited""#));
        assert_eq!(
            actions(tmp.path()),
            [
                ("restart".to_owned(), None),
                ("restarted".to_owned(), Some("running".to_owned()))
            ]
        );
    }

    #[test]
    fn a_death_without_proof_keeps_the_two_samples_and_writes_no_proof_key() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script {
            shows: dead_then_running(),
            ..Script::default()
        }));
        let ctx = context(tmp.path(), deck.clone());
        carry_out(&ctx, &reserved(&ctx));
        assert_eq!((deck.count("show"), deck.count("output-pane")), (3, 2));
        let line = std::fs::read_to_string(config(tmp.path()).watchdog_dir.join(LIVENESS_LOG));
        assert!(!line.unwrap().contains("proof"));
        let rec = &liveness_records(tmp.path())[0];
        assert_eq!((rec.reads.len(), rec.proof), (2, None));
    }

    /// A conductor in error whose every restart agent-deck declines, saying `why`.
    fn always_refused(why: &str) -> Arc<FakeDeck> {
        Arc::new(FakeDeck::new(Script {
            shows: [live(Status::Error)].into(),
            restart: Some(RestartAnswer::Skipped(why.into())),
            ..Script::default()
        }))
    }

    #[test]
    fn a_freshness_refusal_keeps_nothing_of_the_attempt_is_retried_and_recorded_once() {
        let tmp = tempfile::tempdir().unwrap();
        let fresh = "session is running and was started 8s ago (within 1m0s freshness window); use --force to restart anyway";
        let deck = always_refused(fresh);
        let mut ctx = context(tmp.path(), deck.clone());
        ctx.limits.min_interval = 60.0;
        carry_out(&ctx, &reserved(&ctx));
        gates::finish(&mut ctx.state.lock(), ID);
        {
            let st = ctx.state.lock();
            let book = &st.sessions[ID];
            assert!(book.restarts.is_empty(), "the slot is given back");
            assert!(book.cooldown_until <= NOW, "no cooldown left");
            assert_eq!(st.last_restart_at, None, "no serialization turn taken");
            assert!(st.recent_restarts.is_empty(), "no burst entry left");
            let run = book.refusal.as_ref().unwrap();
            assert_eq!(run.retry_at, Some(NOW + refusal::FIRST_RETRY_S));
            assert_eq!(
                gates::serialization_wait(&st, &ctx.limits, NOW),
                0.0,
                "the next restart of another session does not wait for it"
            );
        }
        // The retry, refused again: tried once more when the window ends.
        carry_out(&ctx, &reserved(&ctx));
        gates::finish(&mut ctx.state.lock(), ID);
        let retry_at = ctx.state.lock().sessions[ID]
            .refusal
            .as_ref()
            .unwrap()
            .retry_at;
        assert_eq!(retry_at, Some(NOW + 52.0 + refusal::MARGIN_S));
        assert_eq!((deck.count("restart"), deck.count("start")), (2, 0));
        let acts: Vec<String> = actions(tmp.path()).into_iter().map(|(a, _)| a).collect();
        assert_eq!(
            acts,
            ["restart", "cli-refused", "restart"],
            "one record per run"
        );
        assert_eq!(ctx.state.lock().sessions[ID].consecutive_failures, 0);
        assert!(severities(tmp.path()).is_empty());
    }

    #[test]
    fn a_refusal_by_another_guard_keeps_its_cooldown_and_turn_and_is_not_retried() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = always_refused("claude login expired (use --force to restart anyway)");
        let ctx = context(tmp.path(), deck.clone());
        carry_out(&ctx, &reserved(&ctx));
        carry_out(&ctx, &reserved(&ctx));
        let st = ctx.state.lock();
        let book = &st.sessions[ID];
        assert!(book.restarts.is_empty(), "the slot is given back");
        assert_eq!(book.cooldown_until, NOW + ctx.limits.cooldown);
        assert_eq!(book.refusal, None, "no retry");
        assert_eq!(st.last_restart_at, Some(NOW));
        drop(st);
        let acts: Vec<String> = actions(tmp.path()).into_iter().map(|(a, _)| a).collect();
        assert_eq!(acts, ["restart", "cli-refused", "restart", "cli-refused"]);
        assert_eq!((deck.count("restart"), deck.count("start")), (2, 0));
        assert_eq!(ctx.state.lock().sessions[ID].consecutive_failures, 0);
        assert!(severities(tmp.path()).is_empty());
    }

    #[test]
    fn a_failed_restart_falls_back_to_start_and_the_second_failure_escalates() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = restart_and_start_fail();
        let ctx = context(tmp.path(), deck.clone());
        carry_out(&ctx, &reserved(&ctx));
        assert_eq!((deck.count("restart"), deck.count("start")), (1, 1));
        assert!(severities(tmp.path()).is_empty(), "one failure is no alert");
        carry_out(&ctx, &reserved(&ctx));
        assert_eq!(deck.count("start"), 2);
        let acts: Vec<String> = actions(tmp.path()).into_iter().map(|(a, _)| a).collect();
        assert_eq!(
            acts,
            ["restart", "restart-failed", "restart", "restart-failed"]
        );
        assert_eq!(severities(tmp.path()), ["restart-failed"]);
        assert_eq!(slots_used(&ctx), 2, "real failures spend their slots");
        let recs = restart_records(tmp.path());
        assert_eq!(recs[1].detail, Detail::Plain {}, "no spawn keys");
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
            carry_out(&ctx, &reserved_for(&ctx, id));
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
        carry_out(&ctx, &reserved(&ctx));
        assert_eq!(deck.count("restart"), 3);
    }

    /// What agent-deck 1.16.10+ says of a spawn that failed for `reason`:
    /// the digest of a dying output, and how fast it died.
    fn spawn(reason: SpawnReason) -> SpawnFailure {
        SpawnFailure {
            reason,
            dying_output_digest: Some(crate::digest::digest("No conversation found to continue")),
            elapsed_ms: Some(980),
        }
    }

    /// A conductor in error whose restart fails saying `reason`, with the
    /// statuses `shows` (the liveness check reads the first two).
    fn restart_fails_with(reason: SpawnReason, shows: &[Status]) -> Arc<FakeDeck> {
        Arc::new(FakeDeck::new(Script {
            shows: shows.iter().map(|st| live(*st)).collect(),
            restart: None,
            restart_spawn: Some(spawn(reason)),
            ..Script::default()
        }))
    }

    #[test]
    fn a_spawn_that_died_fast_escalates_at_once_with_no_start_and_holds_the_session() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = restart_fails_with(SpawnReason::DiedFast, &[Status::Error]);
        let ctx = context(tmp.path(), deck.clone());
        carry_out(&ctx, &reserved(&ctx));
        assert_eq!((deck.count("restart"), deck.count("start")), (1, 0));
        assert_eq!(severities(tmp.path()), ["restart-failed"], "at once");
        let recs = restart_records(tmp.path());
        let failed = &recs[1];
        assert_eq!(failed.action, RestartAction::RestartFailed);
        let digest = crate::digest::digest("No conversation found to continue");
        let spawn = Detail::SpawnFailed(SpawnDetail {
            spawn_reason: "spawn_died_fast".into(),
            dying_output_digest: Some(digest),
            elapsed_ms: Some(980),
        });
        assert_eq!(failed.detail, spawn);
        let dir = config(tmp.path()).watchdog_dir;
        let esc: Vec<crate::records::audit::EscalationRecord> =
            read_lines(&dir.join(crate::records::audit::ESCALATIONS_LOG));
        assert!(
            esc[0].message.contains("spawn_died_fast") && esc[0].message.contains("980"),
            "{}",
            esc[0].message
        );
        assert_eq!(slots_used(&ctx), 1, "a real failure spends its slot");
        // Held: no more restarts, however much budget is left, until healthy.
        let later = NOW + 3600.0;
        let mut st = ctx.state.lock();
        assert_eq!(
            gates::gate(&mut st, &ctx.limits, ID, later, None),
            gates::Gate::Skip(gates::Hold::SpawnDiedFast)
        );
        let s = crate::decide::book::notes::tests::sess(ID);
        notes::note_status(&mut st, &s, Status::Error, later);
        assert_eq!(
            gates::recheck(&mut st, ID, later, None),
            Some(gates::Hold::SpawnDiedFast)
        );
        notes::note_status(&mut st, &s, Status::Running, later);
        assert_eq!(gates::recheck(&mut st, ID, later, None), None);
    }
}
