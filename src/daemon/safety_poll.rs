//! The safety-poll pass: one `list --all`, one `list` per profile that holds a
//! critical session, whether each critical session in error ever ran (and
//! whether a stale hook from before its restart, a stop seen before it, or
//! its plan's usage limit is all that says `error`), the cascade check, the
//! gates for each that died, the stalls, the patrols, the task follow-up,
//! then metrics and the systemd status line. 1 + P CLI calls when the fleet
//! is healthy (with `RESUME_SCOPE=all`, P counts every profile holding a
//! Claude session).

use std::collections::{BTreeMap, BTreeSet};

use crate::act::job::Proven;
use crate::act::snapshot::Snapshot;
use crate::daemon::Daemon;
use crate::decide::cascade::{self, CascadeNews};
use crate::decide::outcomes::Severity;
use crate::decide::restart::Outcome;
use crate::decide::verdict::{Decided, Errored};
use crate::decide::{prune, vanish};
use crate::fleet::cache::Fleet;
use crate::fleet::panes::Proof;
use crate::fleet::session::{Live, Session, Status};
use crate::records::daemon_status::DaemonStatus;
use crate::sys::clock::local_timestamp;
use crate::triggers::event_queue::Batch;
use crate::triggers::pane_share::PaneMap;

/// What the outage of the session list is told as.
pub(super) const LIST: &str = "session list";

/// What the live lists of one tick said.
#[derive(Default)]
struct LiveView {
    /// By id: the sessions kept whole, and the waiting children.
    live: BTreeMap<String, Live>,
    /// Profiles whose list could not be read.
    unreadable: BTreeSet<String>,
    /// The waiting children the cache does not keep whole, from their row
    /// or, in an unreadable profile, as the waiting patrol is timing them.
    children: Vec<Session>,
    /// Every tmux session name a row carried, for the pane watch.
    tmux_names: BTreeSet<String>,
}

impl Daemon {
    /// One safety-poll pass: 1 + P CLI calls when the fleet is healthy.
    pub(crate) fn tick(&mut self) {
        let started = std::time::Instant::now();
        self.take_endings(&Batch::default());
        self.memory.hook_pacing.ticked(self.ctx.clock.now());
        self.fleet.reload_markers();
        self.sd_notify.alive();
        let refreshed = self.refresh_fleet();
        let failed = refreshed.as_ref().err().map(|e| {
            let n = self.fleet.len();
            format!(
                "session list is unreadable ({e}); keeping the last known fleet of {n} sessions"
            )
        });
        self.tell_outage(LIST, failed);
        let critical = self.fleet.critical();
        if refreshed.is_ok() || self.fleet.listed_once() {
            self.name_the_watched(&critical);
        }
        // With RESUME_SCOPE=all, the other Claude sessions, for the stall pass.
        let beyond = self.fleet.beyond_critical();
        let mut profiles = Fleet::profiles(&critical);
        profiles.extend(Fleet::profiles(&beyond));
        profiles.extend(self.fleet.child_profiles().cloned());
        let view = self.read_live(profiles);
        self.hand_over_panes(&critical, &view);
        let (live, unreadable, children) = (&view.live, &view.unreadable, &view.children);
        self.forget_gone_unsaved(&critical);
        let gone = self.agent_gone(&critical, live);
        let live_of = |s: &Session| gone.get(&s.id).or(live.get(&s.id));
        let errored: BTreeMap<&str, Errored> = critical
            .iter()
            .filter_map(|s| {
                let l = live_of(s).filter(|l| l.status() == Status::Error)?;
                Some((s.id.as_str(), self.judge_errored(s, l, false)))
            })
            .collect();
        // A session that never ran, that a stale hook colours, or that sits
        // at its usage limit did not die: it is no part of a cascade.
        let died = errored.values().filter(|v| **v == Errored::Died).count();
        // A partial view would undercount: cascade episodes are judged on full ticks only.
        if unreadable.is_empty() {
            self.watch_cascade(died);
            self.memory.last_died = died;
        }
        let in_scope: Vec<Session> = critical.iter().chain(&beyond).cloned().collect();
        let were_running = self.were_running(&in_scope);
        let verdicts: Vec<Decided> = critical
            .iter()
            .map(|s| self.decide(s, live_of(s), errored.get(s.id.as_str()).copied()))
            .collect();
        for (s, d) in critical.iter().zip(&verdicts) {
            let proven = gone.contains_key(&s.id).then(|| Proven {
                proof: Proof::AgentGone,
                shown: live[&s.id].clone(),
            });
            self.carry_out(s, d, proven);
        }
        self.look_for_stalls(&in_scope, live, &were_running);
        self.memory.running_beyond = (beyond.iter())
            .filter(|s| {
                live.get(&s.id)
                    .is_some_and(|l| l.status() == Status::Running)
            })
            .map(|s| s.id.clone())
            .collect();
        if refreshed.is_ok() {
            self.forget_gone();
        }
        let now = self.ctx.clock.now();
        prune::prune_state(&mut self.ctx.state.lock(), &self.ctx.limits, now);
        let snap = Snapshot {
            sessions: self.fleet.all().chain(children).collect(),
            critical: &critical,
            live,
            unreadable,
        };
        self.workers
            .patrols
            .run(&snap, &self.workers.jobs, &mut || self.sd_notify.alive());
        self.workers.tasks.run();
        self.name_interrupted(live);
        let in_error = verdicts.iter().filter(|d| d.verdict.in_error()).count();
        self.report(critical.len(), in_error, started.elapsed().as_secs_f64());
        if let Some(p) = &mut self.pass {
            p.listed = self.fleet.len();
            let status = |s: &Session| live.get(&s.id).map(Live::status);
            p.beyond = beyond.into_iter().map(|s| (status(&s), s)).collect();
            p.critical = critical
                .into_iter()
                .zip(verdicts)
                .map(|(s, d)| {
                    let status = live.get(&s.id).map(Live::status);
                    (s, status, d.verdict)
                })
                .collect();
        }
    }

    /// The critical sessions of an agent whose pane the watch found a bare
    /// shell while agent-deck reads them at rest (1.14.0 reads such a pane
    /// `waiting`): the agent is gone, so each is judged as in `error`, the
    /// view returned (SPEC §14, `proof: agent_gone`).
    fn agent_gone(
        &self,
        critical: &[Session],
        live: &BTreeMap<String, Live>,
    ) -> BTreeMap<String, Live> {
        let bare = &self.memory.bare_shells;
        let gone = critical
            .iter()
            .filter(|s| bare.contains(&s.id) && s.runs_an_agent());
        gone.filter_map(|s| {
            let l = live.get(&s.id)?;
            matches!(l.status(), Status::Waiting | Status::Idle).then(|| {
                log::debug!(
                    "{} reads {} but its pane is a bare shell",
                    s.id,
                    l.status().as_str()
                );
                let dead = Live {
                    status: Some(Status::Error),
                    ..l.clone()
                };
                (s.id.clone(), dead)
            })
        })
        .collect()
    }

    /// Ends the hold of each critical session whose restart's unsaved tmux
    /// session the pane watch's last listing no longer shows.
    fn forget_gone_unsaved(&self, critical: &[Session]) {
        let Some(listed) = &self.memory.tmux_listed else {
            return;
        };
        let mut st = self.ctx.state.lock();
        for s in critical {
            let Some(book) = st.sessions.get_mut(&s.id) else {
                continue;
            };
            if let Some(name) = book.unsaved.take_if(|n| !listed.contains(n.as_str())) {
                log::info!(
                    "{} ({}): the unsaved tmux session {name} is gone; it may be restarted again",
                    s.id,
                    s.title
                );
            }
        }
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

    /// Logs which sessions are restart-critical, when the fleet is first
    /// listed and whenever that set changes.
    fn name_the_watched(&mut self, critical: &[Session]) {
        let now: BTreeMap<String, String> = critical
            .iter()
            .map(|s| (s.id.clone(), s.title.clone()))
            .collect();
        if let Some(line) = super::watching::change_line(self.memory.watching.as_ref(), &now) {
            log::info!("{line}");
        }
        self.memory.watching = Some(now);
    }

    /// One `-p P list` per profile: the live state of the sessions the cache
    /// keeps whole, and the children it does not that are waiting (whole,
    /// from their row), for the waiting patrol. The other rows are read and
    /// dropped.
    fn read_live(&mut self, profiles: BTreeSet<String>) -> LiveView {
        let mut view = LiveView::default();
        for profile in profiles {
            // A hung call may take SUBPROCESS_TIMEOUT_S; keep systemd's watchdog fed between calls.
            self.sd_notify.alive();
            let fleet = &self.fleet;
            let mut live = BTreeMap::new();
            let mut children = Vec::new();
            let names = &mut view.tmux_names;
            let read = self.ctx.deck.list_profile(&profile, &mut |row| {
                if let Some(name) = row.tmux_session() {
                    names.insert(name.to_owned());
                }
                if fleet.get(&row.id).is_some() {
                    live.insert(row.id.to_string(), row.live());
                } else if row.status == Some(Status::Waiting)
                    && fleet.child_profile(&row.id).is_some()
                {
                    live.insert(row.id.to_string(), row.live());
                    children.push(Session {
                        profile: profile.clone(),
                        ..row.session()
                    });
                }
            });
            let what = format!("statuses of profile '{profile}'");
            match read {
                Ok(()) => {
                    view.live.extend(live);
                    view.children.extend(children);
                    self.tell_outage(&what, None);
                }
                Err(e) => {
                    let line = format!(
                        "{what} are unreadable ({e}); its sessions count as unknown while they are"
                    );
                    self.tell_outage(&what, Some(line));
                    view.children.extend(self.children_held(&profile));
                    view.unreadable.insert(profile);
                }
            }
        }
        view
    }

    /// Hands the pane watch each critical session's tmux name, as its row
    /// gave it; a session of a profile whose list was unreadable keeps the
    /// name handed over before. A stopped session has no pane to watch: it
    /// is left out, and its name is not "known", so that the watch asks
    /// for a look once its pane is back. The bare shells and the jobs under
    /// way go down with them.
    fn hand_over_panes(&mut self, critical: &[Session], view: &LiveView) {
        let before = std::mem::take(&mut self.memory.tmux_names);
        let mut known = view.tmux_names.clone();
        for s in critical {
            let name = match view.live.get(&s.id) {
                Some(l) if l.status() == Status::Stopped => {
                    if let Some(n) = &l.tmux_session {
                        known.remove(n);
                    }
                    None
                }
                Some(l) => l.tmux_session.clone(),
                None if view.unreadable.contains(&s.profile) => before.get(&s.id).cloned(),
                None => None,
            };
            if let Some(name) = name {
                self.memory.tmux_names.insert(s.id.clone(), name);
            }
        }
        known.extend(self.memory.tmux_names.values().cloned());
        self.triggers.panes.hand_over(PaneMap {
            critical: self.memory.tmux_names.clone(),
            known: known.clone(),
            bare: self.memory.bare_shells.clone(),
            restarting: self.ctx.state.lock().in_flight.clone(),
        });
        self.memory.tmux_known = Some(known);
    }

    /// The children the waiting patrol is timing in `profile`, whose list
    /// was unreadable this tick, so that they count as unknown, not as "no
    /// longer waiting". The cache keeps only their id and profile (and that
    /// they have a parent), which is all the patrol looks at for them.
    fn children_held(&self, profile: &str) -> Vec<Session> {
        let st = self.ctx.state.lock();
        let held = st.waiting.keys();
        held.filter(|id| self.fleet.child_profile(id) == Some(profile))
            .map(|id| Session {
                id: id.clone(),
                profile: profile.to_owned(),
                parent_session_id: Some(String::new()),
                ..Session::default()
            })
            .collect()
    }

    /// The pane watch's news in `news` and the endings of the restart
    /// worker's jobs since the last look: the tmux session a restart
    /// brought a session back in is its name from now on (the main loop
    /// owns the names it hands the pane watch), and once a restart call
    /// went out, its old pane's bare shell is no proof about the new one
    /// until the watch says so again. The watch is handed the result at
    /// once (once a tick handed it a first map); a `--once` pass keeps the
    /// endings for its summary.
    pub(super) fn take_endings(&mut self, news: &Batch) {
        let memory = &mut self.memory;
        if let Some(listed) = &news.listed {
            memory.tmux_listed = Some(listed.clone());
        }
        if let Some(bare) = &news.bare {
            memory.bare_shells.clone_from(bare);
        }
        for (id, outcome) in self.workers.jobs.ended() {
            if let Outcome::Restarted {
                tmux: Some(name), ..
            } = &outcome
            {
                memory.tmux_names.insert(id.clone(), name.clone());
            }
            // The endings of a restart call that agent-deck did not decline.
            let called = matches!(
                outcome,
                Outcome::Restarted { .. }
                    | Outcome::Failed { .. }
                    | Outcome::RateLimited
                    | Outcome::Unsaved { .. }
                    | Outcome::StoreLocked { .. }
                    | Outcome::Unverified { .. }
                    | Outcome::Interrupted { .. }
            );
            if called {
                memory.bare_shells.remove(&id);
            }
            if let Some(pass) = self.pass.as_mut() {
                pass.ended.insert(id, outcome);
            }
        }
        let Some(mut known) = memory.tmux_known.clone() else {
            return;
        };
        known.extend(memory.tmux_names.values().cloned());
        self.triggers.panes.hand_over(PaneMap {
            critical: memory.tmux_names.clone(),
            known,
            bare: memory.bare_shells.clone(),
            restarting: self.ctx.state.lock().in_flight.clone(),
        });
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
            for stall in st.sessions.values().filter_map(|b| b.stall.as_ref()) {
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
    fn watch_cascade(&self, errored: usize) {
        let ctx = &self.ctx;
        let now = ctx.clock.now();
        let news = cascade::observe_cascade(&mut ctx.state.lock(), &ctx.limits, errored, now);
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

    use super::*;
    use crate::act::context::tests::{actions, config, severities, NOW};
    use crate::daemon::RunFlags;
    use crate::fleet::fake::{live, FakeDeck, Script};
    use crate::sys::clock::FakeClock;
    use crate::sys::shutdown::Shutdown;

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
