//! The last part of a tick: its [`Plan`] carried out, in the plan's order.
//! The verdicts: records (a hold once per episode, a usage limit backed
//! off), alerts (a spent budget, an opened circuit breaker, a cascade) and
//! the restarts the gates cleared, queued on the [`crate::act::job_worker`];
//! the stalls: each transition persisted once by [`apply::stall`], a resume
//! queued on the same worker. Then the sessions agent-deck no longer lists
//! leave the state, the patrols and the task follow-up run, and the tick
//! reports: `metrics.prom`, `daemon-status.json`, the systemd status line
//! and, for `--once`, its notes.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::act::apply;
use crate::act::job::{Job, Proven};
use crate::act::snapshot::Snapshot;
use crate::daemon::Daemon;
use crate::decide::book::cascade::CascadeNews;
use crate::decide::book::stale_hook;
use crate::decide::outcomes::{RestartAction, Severity};
use crate::decide::plan::{self, Act, Answer, Observation, Plan, StallStep};
use crate::decide::restart::gates::Hold;
use crate::decide::restart::JobKind;
use crate::decide::verdict::{BackedOff, Decided, Settled, Verdict};
use crate::decide::{book::prune, book::vanish};
use crate::fleet::panes::Proof;
use crate::fleet::session::{Live, Session};
use crate::records::audit::Detail;
use crate::records::metrics::DaemonStatus;
use crate::sys::clock::local_timestamp;

impl Daemon {
    /// One safety-poll pass: observe, plan, apply.
    pub(crate) fn tick(&mut self) {
        let started = Instant::now();
        let obs = self.observe();
        let now = self.ctx.clock.now();
        let mut st = self.ctx.state.lock();
        let plan = plan::plan(&obs, &mut self.memory, &mut st, &self.ctx.limits, now);
        drop(st);
        self.apply(obs, plan, started);
    }

    /// Carries out `plan`, made from `obs`.
    fn apply(&mut self, obs: Observation, plan: Plan, started: Instant) {
        for act in &plan.acts {
            match act {
                Act::Judged {
                    id,
                    show_failed,
                    undecided,
                } => {
                    if let Some(e) = show_failed {
                        log::warn!("status of {id} is unreadable: {e}");
                    }
                    if *undecided {
                        log::info!(
                            "{id} is in error; whether it ever ran is decided on the next tick"
                        );
                    }
                }
                Act::Cascade { news, died } => self.tell_cascade(*news, *died),
                Act::Verdict {
                    session,
                    decided,
                    agent_gone,
                } => {
                    let proven = agent_gone.then(|| Proven {
                        proof: Proof::AgentGone,
                        shown: obs.view.live[&session.id].clone(),
                    });
                    self.carry_out(session, decided, proven);
                }
                Act::Stall { session, step } => self.stall(&obs, session, step.as_ref()),
            }
        }
        if obs.listed {
            self.forget_gone();
        }
        let now = self.ctx.clock.now();
        prune::prune_state(&mut self.ctx.state.lock(), &self.ctx.limits, now);
        let (critical, view) = (&obs.critical, &obs.view);
        let snap = Snapshot {
            sessions: self.fleet.all().chain(&view.children).collect(),
            critical,
            live: &view.live,
            unreadable: &view.unreadable,
        };
        self.workers
            .patrols
            .run(&snap, &self.workers.jobs, &mut || self.sd_notify.alive());
        self.workers.tasks.run();
        self.name_interrupted(&view.live);
        let seconds = started.elapsed().as_secs_f64();
        self.report(critical.len(), plan.in_error, seconds);
        if let Some(p) = &mut self.pass {
            p.listed = self.fleet.len();
            let status = |s: &Session| view.live.get(&s.id).map(Live::status);
            p.beyond = (obs.beyond.iter())
                .map(|s| (status(s), s.clone()))
                .collect();
            p.critical = (plan.verdicts())
                .map(|(s, d)| (s.clone(), status(s), d.verdict.clone()))
                .collect();
        }
    }

    /// A stall's step, after what its reads said when they failed.
    fn stall(&mut self, obs: &Observation, s: &Session, step: Option<&StallStep>) {
        let answers = obs.answers.iter().filter(|((id, _), _)| *id == s.id);
        for (_, answer) in answers {
            match answer {
                Answer::Reset { warnings, .. } => warnings.iter().for_each(|w| log::warn!("{w}")),
                Answer::Pane(Err(e)) => log::debug!("pane of {} unreadable ({e})", s.id),
                Answer::Output(Err(e)) => log::debug!("last message of {} unreadable ({e})", s.id),
                _ => {}
            }
        }
        match step {
            None => {}
            Some(StallStep::Transition(t)) => apply::stall(&self.ctx, s, t.clone()),
            Some(StallStep::Resume) => {
                self.ctx.state.lock().in_flight.insert(s.id.clone());
                log::info!("{} ({}) is due its resume; queueing it", s.id, s.title);
                self.workers.jobs.submit(Job {
                    session: s.clone(),
                    slot: None,
                    kind: JobKind::Resume,
                    proven: None,
                    ending: None,
                });
            }
        }
    }

    /// Carries out the verdict on `s`; `proven`: the pane watch proved its
    /// death, which its restart job carries.
    pub(super) fn carry_out(&mut self, s: &Session, d: &Decided, proven: Option<Proven>) {
        if let Some(b) = &d.backed_off {
            self.backed_off(s, b);
        }
        if let Some(t) = &d.settled {
            self.settled(s, t);
        }
        match d.verdict {
            Verdict::Healthy
            | Verdict::Stopped
            | Verdict::Other(_)
            | Verdict::Unread
            | Verdict::Undecided => {}
            Verdict::Held { why, new } => self.held(s, why, new),
            Verdict::BudgetSpent { new } => {
                if new {
                    self.record_hold(s, Hold::BudgetSpent);
                }
                let msg = format!(
                    "Session {} ({}) keeps crashing — needs human attention",
                    s.title, s.id
                );
                if self.ctx.alert(s, Severity::RateLimit, &msg) {
                    log::warn!(
                        "{} used its {} restarts in {:.0}s; no more restarts until the window moves",
                        s.id,
                        self.ctx.limits.rate_max,
                        self.ctx.limits.rate_window
                    );
                }
            }
            Verdict::Restart { slot, ref ending } => {
                // Saved before the restart can run, so a crash right after still counts it.
                self.ctx.store.save(&self.ctx.state);
                let gone = proven.as_ref().is_some_and(|p| p.proof == Proof::AgentGone);
                let why = if gone {
                    "has lost its agent"
                } else {
                    "is in error"
                };
                log::info!("{} ({}) {why}; queueing a restart", s.id, s.title);
                self.workers.jobs.submit(Job {
                    session: s.clone(),
                    slot: Some(slot),
                    kind: JobKind::Revive,
                    proven,
                    ending: ending.clone(),
                });
            }
        }
    }

    /// A critical session in error not restarted now for `why`; `new`: the
    /// hold starts, and is recorded.
    fn held(&mut self, s: &Session, why: Hold, new: bool) {
        let said = match why {
            Hold::NeverStarted => format!(
                "{} ({}) is in error but shows no sign it was ever started; not restarting it (it is watched like any other once it runs)",
                s.id, s.title
            ),
            Hold::StaleDeadHook => format!(
                "{} ({}) reads error only because of its dead hook from before the restart; not restarting it again for that hook (a newer hook, or one over {:.0}s old, is looked at as usual)",
                s.id,
                s.title,
                stale_hook::HOOK_FRESH_S
            ),
            Hold::ModelUnavailable => format!(
                "{} ({}) is in error because its model is unavailable; a restart would boot into the same model, so it is not restarted (a stall, resumed after MODEL_UNAVAILABLE_BACKOFF_S)",
                s.id, s.title
            ),
            Hold::UnsavedAgent => format!(
                "{} ({}) reads error, but the agent its last restart spawned runs unsaved in tmux; not restarting it while that runs, so as not to run two",
                s.id, s.title
            ),
            Hold::StoppedBefore => format!(
                "{} ({}) reads error after it was seen stopped, which agent-deck before 1.16.23 can report for a deliberate stop (#2453); not restarting it until it is seen running again",
                s.id, s.title
            ),
            _ => {
                log::debug!("{} is in error but not restarted now: {why}", s.id);
                if new {
                    self.record_hold(s, why);
                }
                return;
            }
        };
        if new {
            self.record_hold(s, why);
            log::info!("{said}");
        }
    }

    /// A restart whose status was unreadable after it, settled by this
    /// look: `restarted`, with its continuity message, or `restart-failed`.
    fn settled(&self, s: &Session, t: &Settled) {
        let Some(n) = t.failures else {
            return apply::restarted(&self.ctx, s, t.status, self.workers.jobs.continuity());
        };
        let why = format!("{}; status error when next read", t.why);
        apply::failed(&self.ctx, s, n, &why, None);
    }

    /// One `restart.log` line when a session starts being held.
    fn record_hold(&self, s: &Session, why: Hold) {
        apply::record(&self.ctx, s, RestartAction::Skipped, Some(why.to_string()));
    }

    /// A critical session in `error` at a usage limit first seen in this
    /// episode: recorded `rate-limited`, with one alert if that opened the
    /// circuit breaker; the gates hold it (`backoff_429`) until the backoff
    /// is over.
    fn backed_off(&mut self, s: &Session, b: &BackedOff) {
        if b.breaker_opened {
            self.ctx.breaker_opened();
        }
        let retry = if b.detail.is_empty() {
            "no retry time given"
        } else {
            &b.detail
        };
        log::warn!(
            "{} ({}) is at its usage limit ({}); backing off {:.0}s, no restart before then",
            s.id,
            s.title,
            crate::text::printable(retry, 80),
            b.seconds
        );
        let reason = format!("usage-limit: {retry}");
        let rec = self.ctx.record(s, RestartAction::RateLimited, Some(reason));
        let backoff_s = b.seconds;
        let detail = Detail::RateLimited { backoff_s };
        apply::write(&self.ctx.records, &rec.with(detail));
        self.ctx.store.save(&self.ctx.state);
    }

    /// Names each restart a stopped watchdog left with no outcome, and what
    /// its session reads now: once, after the first tick.
    fn name_interrupted(&mut self, live: &BTreeMap<String, Live>) {
        for (id, at) in std::mem::take(&mut self.memory.interrupted) {
            let title = self.fleet.get(&id).map(|s| format!(" ({})", s.title));
            let reads = live.get(&id).map_or("unread", |l| l.status().as_str());
            log::warn!(
                "the restart of {id}{} at {} has no outcome on record: the watchdog stopped during it; it reads {reads} now",
                title.unwrap_or_default(),
                local_timestamp(at)
            );
        }
    }

    /// Sessions agent-deck no longer lists leave the state and the caches.
    fn forget_gone(&mut self) {
        let fleet = &self.fleet;
        {
            let mut st = self.ctx.state.lock();
            let in_flight = st.in_flight.clone();
            let vanished = st.vanished.clone();
            let kept = |id: &String| vanished.as_ref().is_some_and(|v| v.ids.contains(id));
            let keep = |id: &String| fleet.knows(id) || in_flight.contains(id) || kept(id);
            st.sessions.retain(|id, _| keep(id));
            st.waiting.retain(|id, _| keep(id));
            st.poller_restarted.retain(|id, _| keep(id));
            st.ran.retain(|id| keep(id));
            st.stopped.retain(|id| keep(id));
        }
        let kept = |id: &str| fleet.knows(id) || vanish::kept(&self.ctx.state.lock(), id);
        self.memory.hook_pacing.retain(|id| kept(id));
        self.memory.episodes.retain(kept);
    }

    /// `metrics.prom`, `daemon-status.json` and the systemd status line,
    /// after each tick.
    fn report(&mut self, critical: usize, errored: usize, tick_seconds: f64) {
        let now = self.ctx.clock.now();
        let (breaker_open, in_window, stalled) = {
            let st = self.ctx.state.lock();
            let window = self.ctx.limits.rate_window;
            let mut stalled = BTreeMap::new();
            let stalls = st.sessions.values().filter_map(|b| b.stall.as_ref());
            // A proactive clear is no stall.
            let proactive =
                |s: &&crate::decide::stall::Stall| s.remedy.as_ref().is_some_and(|r| r.proactive);
            for stall in stalls.filter(|s| !proactive(s)) {
                *stalled.entry(stall.kind.as_str().to_owned()).or_default() += 1;
            }
            let in_window = st.restarts_within(window, now);
            (st.breaker_open_until > now, in_window, stalled)
        };
        let sample = DaemonStatus {
            last_tick: now,
            tick_seconds,
            tally: self.ctx.records.tally(),
            cli: self.ctx.deck.stats().into(),
            queue_drops: self.triggers.queue.drops(),
            sessions_seen: self.fleet.len(),
            sessions_critical: critical,
            sessions_errored: errored,
            breaker_open,
            rate_limit_max: self.ctx.limits.rate_max,
            rate_limit_window_s: self.ctx.limits.rate_window,
            agent_deck_version: self.ctx.deck.version().map(|v| v.to_string()),
            agent_deck_version_unconfirmed: self.ctx.deck.version_unconfirmed(),
            pane_watch: self.triggers.panes.status(),
            stalled,
        };
        self.metrics.write(&self.ctx.cfg.watchdog_dir, &sample);
        let breaker = breaker_open.then_some("; circuit breaker OPEN");
        self.sd_notify.status(&format!(
            "{critical} critical sessions, {errored} in error; {in_window} restarts in the window{}",
            breaker.unwrap_or_default()
        ));
    }

    /// Settle-and-revive: many critical sessions in error at once hold every
    /// restart for the settle time, with one alert per episode.
    fn tell_cascade(&self, news: CascadeNews, errored: usize) {
        let ctx = &self.ctx;
        let wait = ctx.limits.cascade_wait;
        let msg = match news {
            CascadeNews::Detected => format!(
                "{errored} critical sessions in error simultaneously — waiting {wait:.0}s to stabilize, then reviving them one at a time"
            ),
            CascadeNews::Reminder => format!("{errored} critical sessions are still in error after the cascade; they need a human"),
            CascadeNews::Cleared => {
                log::info!("cascade over: {errored} critical sessions in error");
                return;
            }
            CascadeNews::Quiet => return,
        };
        ctx.escalator
            .escalate(Severity::CascadeDetected, &msg, None, true);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::sync::Arc;

    use std::collections::BTreeSet;

    use super::*;
    use crate::act::context::tests::{actions, config, severities, NOW};
    use crate::daemon::RunFlags;
    use crate::fleet::fake::{live, FakeDeck, Script};
    use crate::fleet::session::Status;
    use crate::sys::clock::FakeClock;
    use crate::sys::shutdown::Shutdown;
    use crate::triggers::event_queue::Batch;

    const COND: &str = "3f9c2a1b-1755891234";
    const WORKER: &str = "a0b1c2d3-1755899999";

    /// A fleet of one conductor and one worker in profile `default`, the
    /// conductor's list row saying `status`.
    fn fleet(status: &str) -> Script {
        let row = |id: &str, title: &str, status: &str| {
            format!(
                r#"{{"id":"{id}","title":"{title}","profile":"default","path":"/srv"{status}}}"#
            )
        };
        let all = format!(
            "[{},{}]",
            row(COND, "conductor-ops", ""),
            row(WORKER, "worker-1", "")
        );
        let listed = format!(
            "[{},{}]",
            row(COND, "conductor-ops", &format!(r#","status":"{status}""#)),
            row(WORKER, "worker-1", r#","status":"running""#)
        );
        Script {
            list_all: Some(all),
            lists: [("default".to_owned(), listed)].into(),
            ..Script::default()
        }
    }

    /// A daemon over `deck` under `home`, every restart wait zero.
    pub(in crate::daemon) fn daemon(home: &std::path::Path, deck: Arc<FakeDeck>) -> Daemon {
        daemon_and_clock(home, deck).0
    }

    /// A daemon as [`daemon`], and its clock.
    pub(in crate::daemon) fn daemon_and_clock(
        home: &std::path::Path,
        deck: Arc<FakeDeck>,
    ) -> (Daemon, Arc<FakeClock>) {
        let cfg = config(home);
        let flags = RunFlags {
            dry_run: false,
            once: true,
            verbose: false,
            json: false,
        };
        let clock = Arc::new(FakeClock::at(NOW));
        let d = Daemon::new(&cfg, flags, deck, clock.clone(), Shutdown::new().unwrap()).unwrap();
        (d, clock)
    }

    #[test]
    fn the_tick_hands_the_pane_watch_each_running_critical_session_s_tmux_name() {
        let tmp = tempfile::tempdir().unwrap();
        let mut script = fleet("running");
        let with_names = |status: &str| {
            format!(
                r#"[{{"id":"{COND}","title":"conductor-ops","profile":"default","status":"{status}","tmux_session":"agentdeck_conductor-ops_3f9c2a1b"}},
                   {{"id":"{WORKER}","title":"worker-1","profile":"default","status":"running","tmux_session":"agentdeck_worker-1_a0b1c2d3"}}]"#
            )
        };
        script.lists.insert("default".into(), with_names("running"));
        let deck = Arc::new(FakeDeck::new(script));
        let mut d = daemon(tmp.path(), deck.clone());
        d.tick();
        let map = d.triggers.panes.map().unwrap();
        let want = [(
            COND.to_owned(),
            "agentdeck_conductor-ops_3f9c2a1b".to_owned(),
        )];
        assert_eq!(map.critical, want.into());
        assert!(map.known.contains("agentdeck_worker-1_a0b1c2d3"));
        // Stopped: nothing to watch, and its name is no longer known.
        deck.script
            .lock()
            .lists
            .insert("default".into(), with_names("stopped"));
        d.tick();
        let map = d.triggers.panes.map().unwrap();
        assert!(map.critical.is_empty());
        assert!(!map.known.contains("agentdeck_conductor-ops_3f9c2a1b"));
        // An unreadable profile keeps the name handed over before.
        deck.script
            .lock()
            .lists
            .insert("default".into(), with_names("running"));
        d.tick();
        deck.script.lock().lists.clear();
        d.tick();
        assert_eq!(d.triggers.panes.map().unwrap().critical.len(), 1);
    }

    #[test]
    fn one_dead_pane_takes_the_hook_s_check_and_several_go_straight_to_a_tick() {
        use crate::fleet::panes::Proof;
        use crate::triggers::event_queue::Batch;
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(fleet("running")));
        let mut d = daemon(tmp.path(), deck.clone());
        d.tick();
        deck.calls.lock().clear();
        let one = Batch {
            panes: [(COND.to_owned(), Proof::ProcessExited)].into(),
            ..Batch::default()
        };
        assert!(d.handle(one));
        assert_eq!((deck.count("show"), deck.count("list-all")), (1, 0));
        // A hook file written before the death says running: no answer for
        // a dead pane, and a second death at once is not paced away.
        let hook = config(tmp.path()).hooks_dir.join(format!("{COND}.json"));
        std::fs::write(hook, r#"{"status":"running"}"#).unwrap();
        let again = Batch {
            panes: [(COND.to_owned(), Proof::ProcessExited)].into(),
            ..Batch::default()
        };
        assert!(d.handle(again));
        assert_eq!(deck.count("show"), 2);
        deck.calls.lock().clear();
        let many = Batch {
            panes: [
                (COND.to_owned(), Proof::ProcessExited),
                (WORKER.to_owned(), Proof::GoneFromListing),
            ]
            .into(),
            ..Batch::default()
        };
        assert!(d.handle(many));
        assert_eq!(
            (deck.count("show"), deck.count("list-all")),
            (0, 1),
            "a tick, not N shows"
        );
    }

    fn metrics(home: &std::path::Path) -> String {
        let file = crate::records::metrics::METRICS_FILE;
        std::fs::read_to_string(config(home).watchdog_dir.join(file)).unwrap()
    }

    #[test]
    fn a_healthy_tick_costs_one_list_per_profile_and_the_list_of_all() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(fleet("waiting")));
        let mut d = daemon(tmp.path(), deck.clone());
        d.tick();
        // The first look at a session at rest is a turn's end: its pane.
        let first = [
            "list-all ",
            "list default",
            "output-pane 3f9c2a1b-1755891234",
        ];
        assert_eq!(*deck.calls.lock(), first);
        deck.calls.lock().clear();
        d.tick();
        d.finish();
        assert_eq!(*deck.calls.lock(), ["list-all ", "list default"]);
        assert!(actions(tmp.path()).is_empty());
        let m = metrics(tmp.path());
        assert!(m.contains(r#"sessions{kind="critical"} 1"#), "{m}");
        assert!(m.contains(r#"sessions{kind="errored"} 0"#), "{m}");
    }

    #[test]
    fn a_tick_that_finds_a_conductor_dead_restarts_it_and_saves_the_slot() {
        let tmp = tempfile::tempdir().unwrap();
        let mut script = fleet("error");
        // Evidence that it ran, two `error` reads to confirm it is dead,
        // then `running` after the restart.
        let booted = Some(Live {
            claude_session_id: Some("5d0e9c1a-aaaa".into()),
            ..live(Status::Error).unwrap()
        });
        script.shows = [
            booted,
            live(Status::Error),
            live(Status::Error),
            live(Status::Running),
        ]
        .into();
        let deck = Arc::new(FakeDeck::new(script));
        let mut d = daemon(tmp.path(), deck.clone());
        d.tick();
        d.finish();
        assert_eq!(deck.count("restart"), 1, "{:?}", deck.calls.lock());
        assert_eq!(deck.count("list"), 1, "one tick, one list of the profile");
        assert_eq!(actions(tmp.path()), ["restart", "restarted"]);
        assert!(metrics(tmp.path()).contains(r#"sessions{kind="errored"} 1"#));
        let saved = crate::records::state_file::Store::new(&config(tmp.path()).watchdog_dir, false)
            .load(&d.ctx.limits, NOW);
        assert_eq!(
            saved.sessions[COND].restarts,
            [NOW],
            "the slot is spent and saved"
        );
        assert!(saved.ran.contains(COND));
        assert!(!saved.sessions.contains_key(WORKER),);
    }

    #[test]
    fn a_critical_pane_found_a_bare_shell_is_restarted_as_agent_gone_if_its_tool_is_an_agent() {
        use crate::records::audit::{LivenessRecord, LIVENESS_LOG};
        use crate::records::read_back::read_lines;
        for (tool, status, restarts) in [
            ("claude", "waiting", 1),
            ("claude", "idle", 1),
            ("shell", "waiting", 0),
            ("", "waiting", 0),
            ("claude", "running", 0),
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let mut script = fleet(status);
            script.list_all = Some(format!(
                r#"[{{"id":"{COND}","title":"conductor-ops","profile":"default","tool":"{tool}"}}]"#
            ));
            script.shows = [live(Status::Running)].into();
            let deck = Arc::new(FakeDeck::new(script));
            let mut d = daemon(tmp.path(), deck.clone());
            d.ctx.state.lock().ran.insert(COND.into());
            d.memory.bare_shells = [COND.to_owned()].into();
            d.tick();
            d.finish();
            let case = format!("{tool:?} {status}");
            assert_eq!(deck.count("restart"), restarts, "{case}");
            if restarts == 0 {
                continue;
            }
            // The main loop takes the restart's ending.
            d.take_endings(&Batch::default());
            assert!(d.memory.bare_shells.is_empty(), "forgotten once restarted");
            let dir = config(tmp.path()).watchdog_dir;
            let rec = &read_lines::<LivenessRecord>(&dir.join(LIVENESS_LOG))[0];
            assert_eq!(rec.proof, Some(Proof::AgentGone), "{case}");
            let raw = std::fs::read_to_string(dir.join(LIVENESS_LOG)).unwrap();
            assert!(raw.contains(r#""proof":"agent_gone""#), "{raw}");
            assert_eq!(rec.reads[0].status, status, "the status as read: {case}");
            assert_eq!(actions(tmp.path()), ["restart", "restarted"], "{case}");
        }
    }

    #[test]
    fn a_session_whose_restart_left_an_unsaved_agent_is_held_until_that_tmux_session_is_gone() {
        let tmp = tempfile::tempdir().unwrap();
        let mut script = fleet("error");
        script.shows = [
            live(Status::Error),
            live(Status::Error),
            live(Status::Running),
        ]
        .into();
        let deck = Arc::new(FakeDeck::new(script));
        let mut d = daemon(tmp.path(), deck.clone());
        d.ctx.state.lock().ran.insert(COND.into());
        let unsaved = "agentdeck_conductor-ops_5e6f7a8b".to_owned();
        d.ctx.state.lock().book(COND).unsaved = Some(unsaved.clone());
        // One unsaved session was ended in this budget window already, so
        // nothing but this one's end lets a restart go.
        let now = d.ctx.clock.now();
        d.ctx.state.lock().book(COND).unsaved_ended_at = Some(now - 1.0);
        d.memory.tmux_listed = Some([unsaved.clone()].into());
        d.tick();
        assert_eq!(deck.count("restart"), 0, "held while it runs");
        let held = d.ctx.state.lock().sessions[COND].unsaved.clone();
        assert_eq!(held, Some(unsaved));
        d.memory.tmux_listed = Some(BTreeSet::new());
        d.tick();
        d.finish();
        assert_eq!(deck.count("restart"), 1, "revived once it is gone");
        assert_eq!(d.ctx.state.lock().sessions[COND].unsaved, None);
    }

    #[test]
    fn a_usage_limit_that_is_the_breakers_third_hit_opens_it_with_one_alert() {
        let tmp = tempfile::tempdir().unwrap();
        let mut script = fleet("error");
        let row = format!(
            r#"[{{"id":"{COND}","title":"conductor-ops","profile":"default","status":"error","substate":"usage-limit"}}]"#
        );
        script.lists = [("default".to_owned(), row)].into();
        script.shows = [live(Status::Error)].into();
        let deck = Arc::new(FakeDeck::new(script));
        let (mut d, _clock) = daemon_and_clock(tmp.path(), deck.clone());
        d.ctx.state.lock().ran.insert(COND.into());
        d.ctx.state.lock().breaker_hits = vec![NOW - 20.0, NOW - 10.0];
        d.tick();
        d.tick();
        d.finish();
        assert!(d.ctx.state.lock().breaker_open_until > NOW);
        assert_eq!(severities(tmp.path()), ["circuit-breaker"]);
        assert_eq!(deck.count("restart"), 0);
    }
}
