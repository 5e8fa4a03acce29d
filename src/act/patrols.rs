//! The patrols of SPEC §6, run once per safety tick from the daemon's
//! snapshot of the fleet: waiting-too-long nudges, the Telegram poller check
//! with its opt-in deaf-poller check, and the opt-in stale cleanup.
//!
//! Sampling (a pane capture per waiting child, a `/proc` scan per poller
//! check) happens here; the Bot API is asked on the webhook-check worker,
//! which notes its answers in the book; decisions come from
//! [`crate::decide::patrol_rules`]; slow actions go to the errand worker or,
//! for restarts, to the restart worker so restarts stay serialized.

use std::collections::{BTreeMap, BTreeSet};

use crate::act::context::Context;
use crate::act::deaf_poller_check::WebhookWorker;
use crate::act::errands::{self, Errand};
use crate::act::job::Job;
use crate::act::job_worker::Jobs;
use crate::act::snapshot::Snapshot;
use crate::act::telegram_pollers;
use crate::decide::restart::JobKind;
use crate::decide::{book::stop, patrol_rules};
use crate::digest::digest;
use crate::error::{Error, Result};
use crate::fleet::session::{Live, Session, Status};
use crate::sys::worker::Worker;

/// A removal that did not take is tried again after this long.
const REMOVAL_RETRY_S: f64 = 60.0;

pub(crate) struct Patrols {
    ctx: Context,
    proc_dir: std::path::PathBuf,
    errands: Worker<Errand>,
    /// The deaf-poller check (SPEC §6.5); `None`: off.
    webhook: Option<WebhookWorker>,
    last_poller_check: Option<f64>,
    /// Removals queued and when: a slow, failed or dry-run removal is queued
    /// again only after [`REMOVAL_RETRY_S`].
    removals: BTreeMap<String, f64>,
}

impl Patrols {
    /// The patrols, with their errand and webhook-check workers started.
    pub(crate) fn spawn(ctx: Context) -> Result<Patrols> {
        let started = |what: &'static str| {
            move |e: std::io::Error| Error::runtime(format!("cannot start the {what} thread: {e}"))
        };
        Ok(Patrols {
            proc_dir: crate::sys::process_table::PROC_DIR.into(),
            errands: errands::spawn(ctx.clone()).map_err(started("errands"))?,
            webhook: WebhookWorker::spawn(ctx.clone()).map_err(started("webhook-checks"))?,
            ctx,
            last_poller_check: None,
            removals: BTreeMap::new(),
        })
    }

    /// One patrol pass; `alive` is called before each slow pane read, so
    /// the caller can tell its supervisor the pass is still moving.
    pub(crate) fn run(&mut self, snap: &Snapshot, jobs: &Jobs, alive: &mut dyn FnMut()) {
        self.nudge_waiting(snap, alive);
        self.check_pollers(snap, jobs);
        self.clean_stale(snap);
    }

    /// §6.2: one pane sample per waiting child. A child at an open menu or
    /// dialog (substate `interactive-menu`, 1.16.11+) is not waiting for a
    /// nudge but for a human's choice, which "report status?" and Enter
    /// could make: it is never typed into, and its timer starts over once
    /// the menu is gone.
    fn nudge_waiting(&mut self, snap: &Snapshot, alive: &mut dyn FnMut()) {
        let in_menu = |s: &Session| snap.live.get(&s.id).is_some_and(Live::in_menu);
        let waiting: Vec<&Session> = snap
            .sessions
            .iter()
            .copied()
            .filter(|s| {
                s.parent_session_id.is_some()
                    && snap.status(s) == Some(Status::Waiting)
                    && !in_menu(s)
            })
            .collect();
        // Children of an unreadable profile are unknown this tick, not "not waiting".
        let unknown = snap
            .sessions
            .iter()
            .filter(|s| snap.unreadable.contains(&s.profile));
        let keep: BTreeSet<String> = unknown.chain(&waiting).map(|s| s.id.clone()).collect();
        patrol_rules::forget_not_waiting(&mut self.ctx.state.lock(), &keep);
        let cfg = &self.ctx.cfg;
        let threshold = cfg.waiting_patrol_threshold.as_secs_f64();
        let dedup = cfg.waiting_patrol_nudge_dedup.as_secs_f64();
        for s in waiting {
            alive();
            let pane = match self.ctx.deck.pane(&s.profile, &s.id) {
                Ok(p) => digest(&p),
                Err(e) => {
                    log::debug!(
                        "pane of waiting child {} unreadable ({e}); looking again next tick",
                        s.id
                    );
                    continue;
                }
            };
            let now = self.ctx.clock.now();
            let mut st = self.ctx.state.lock();
            let nudge = patrol_rules::observe_waiting(&mut st, &s.id, &pane, now, threshold, dedup);
            drop(st);
            if let Some(waited_s) = nudge {
                let session = s.clone();
                self.errands.submit(Errand::Nudge { session, waited_s });
            }
        }
    }

    /// §6.1, every `POLLER_CHECK_INTERVAL_S`: a live conductor with a
    /// Telegram channel whose poller process is gone is restarted; one whose
    /// poller runs gets a `getWebhookInfo` check when §6.5 is on. A poller
    /// found deaf by those checks is restarted at the next tick.
    fn check_pollers(&mut self, snap: &Snapshot, jobs: &Jobs) {
        self.restart_deaf_pollers(snap, jobs);
        let now = self.ctx.clock.now();
        let interval = self.ctx.cfg.poller_check_interval.as_secs_f64();
        if self.last_poller_check.is_some_and(|t| now - t < interval) {
            return;
        }
        self.last_poller_check = Some(now);
        if let Some(w) = &self.webhook {
            patrol_rules::forget_stale_streaks(&mut self.ctx.state.lock(), now, w.max_gap);
        }
        for seen in telegram_pollers::telegram_pollers(snap, &self.ctx.cfg, &self.proc_dir) {
            let s = &seen.session;
            if !seen.running {
                if self.claim_poller_restart(&s.id, now) {
                    log::warn!(
                        "{} ({}) is deaf: no Telegram poller for {}; queueing a restart",
                        s.id,
                        s.title,
                        seen.state_dir.display()
                    );
                    jobs.submit(Job::poller(s, JobKind::PollerMissing));
                }
            } else if let Some(w) = &self.webhook {
                if !self.ctx.state.lock().in_flight.contains(&s.id) {
                    w.submit(seen);
                }
            }
        }
    }

    /// §6.5: a live conductor whose poller left Telegram updates unread on
    /// `POLLER_DEAF_CHECKS` checks in a row is restarted through the §6.1
    /// path and dedup. Its streak is used up: should agent-deck refuse, a
    /// new streak is needed before the next try.
    fn restart_deaf_pollers(&mut self, snap: &Snapshot, jobs: &Jobs) {
        let Some(w) = &self.webhook else {
            return;
        };
        let now = self.ctx.clock.now();
        let deaf = patrol_rules::deaf_pollers(&self.ctx.state.lock(), now, w.checks, w.max_gap);
        for (id, pending) in deaf {
            let Some(s) = snap.sessions.iter().copied().find(|s| s.id == id) else {
                continue;
            };
            if !telegram_pollers::is_live_telegram_conductor(snap, s)
                || !self.claim_poller_restart(&s.id, now)
            {
                continue;
            }
            self.ctx.state.lock().pending_updates.remove(&s.id);
            log::warn!(
                "{} ({}) is deaf: its Telegram poller runs but leaves updates unread ({}); queueing a restart",
                s.id,
                s.title,
                patrol_rules::deaf_reason(&pending)
            );
            jobs.submit(Job::poller(s, JobKind::PollerDeaf { pending }));
        }
    }

    /// Whether a poller restart of `id` may be queued now (the dedup window
    /// is over and none is queued or running); if so, it is marked in flight.
    fn claim_poller_restart(&self, id: &str, now: f64) -> bool {
        let dedup = self.ctx.cfg.poller_restart_dedup.as_secs_f64();
        let mut state = self.ctx.state.lock();
        patrol_rules::poller_restart_allowed(&state, id, now, dedup)
            && state.in_flight.insert(id.to_owned())
    }

    /// §6.3, opt-in: remove restart-critical, non-escalating sessions stuck
    /// in error for `STALE_ERROR_CLEANUP_S`.
    fn clean_stale(&mut self, snap: &Snapshot) {
        let stale_after = self.ctx.cfg.stale_error_cleanup.as_secs_f64();
        if stale_after <= 0.0 {
            return;
        }
        let now = self.ctx.clock.now();
        self.removals.retain(|id, at| {
            now - *at < REMOVAL_RETRY_S && snap.critical.iter().any(|s| s.id == *id)
        });
        for s in snap.critical {
            // A session a human stopped that then read `error` (#2453) is theirs.
            let release = self.ctx.deck.version();
            let stopped = stop::held_by_stop(&self.ctx.state.lock(), &s.id, release);
            if snap.status(s) != Some(Status::Error)
                || !patrol_rules::stale_candidate(s, true)
                || self.removals.contains_key(&s.id)
                || stopped
            {
                continue;
            }
            let stuck =
                patrol_rules::stuck_for(self.ctx.state.lock().book(&s.id), now, stale_after);
            if let Some(stuck_for_s) = stuck {
                self.removals.insert(s.id.clone(), now);
                let session = s.clone();
                self.errands.submit(Errand::Remove {
                    session,
                    stuck_for_s,
                });
            }
        }
    }

    /// Runs the queued errands and webhook checks, then stops their workers
    /// (dropping one finishes it).
    pub(crate) fn finish(&mut self) {
        drop(self.webhook.take());
        self.errands.finish();
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::act::context::tests::{actions, config, context_with, NOW};
    use crate::act::job_worker;
    use crate::config::Config;
    use crate::decide::book::PendingStreak;
    use crate::fleet::fake::{FakeDeck, Script, SendAnswer};
    use crate::fleet::parse::Delivery;
    use crate::sys::clock::{Clock, FakeClock};

    const COND: &str = "3f9c2a1b-1755891234";
    const KID: &str = "a0b1c2d3-1755899999";

    /// Patrols over `deck` with the settings `cfg`, and their clock.
    fn patrols(cfg: &Config, deck: Arc<FakeDeck>) -> (Patrols, Arc<FakeClock>) {
        let (ctx, clock) = context_with(cfg, deck);
        (Patrols::spawn(ctx).unwrap(), clock)
    }

    /// Runs the errands queued so far, then starts a fresh errand worker.
    fn run_errands(p: &mut Patrols) {
        p.errands.finish();
        p.errands = errands::spawn(p.ctx.clone()).unwrap();
    }

    fn live(status: Status, channels: &[&str]) -> Live {
        Live {
            status: Some(status),
            channels: channels.iter().map(|c| c.to_string()).collect(),
            ..Live::default()
        }
    }

    /// What a tick saw: `sessions`, all of them critical, seen as `live`.
    fn snapshot<'a>(
        sessions: &'a [Session],
        live: &'a BTreeMap<String, Live>,
        unreadable: &'a BTreeSet<String>,
    ) -> Snapshot<'a> {
        Snapshot {
            sessions: sessions.iter().collect(),
            critical: sessions,
            live,
            unreadable,
        }
    }

    #[test]
    fn a_failed_removal_is_queued_again_after_a_minute_and_not_before() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script {
            remove_ok: false,
            ..Script::default()
        }));
        let mut cfg = config(tmp.path());
        cfg.stale_error_cleanup = Duration::from_secs(600);
        let (mut p, clock) = patrols(&cfg, deck.clone());
        let stuck = [Session {
            id: KID.into(),
            title: "meeting-watcher".into(),
            profile: "default".into(),
            ..Session::default()
        }];
        p.ctx.state.lock().book(KID).error_since = Some(NOW - 700.0);
        let seen = [(KID.to_owned(), live(Status::Error, &[]))].into();
        let none = BTreeSet::new();
        let snap = snapshot(&stuck, &seen, &none);
        let mut removals = Vec::new();
        for step in [0.0, 30.0, 31.0] {
            clock.advance(step);
            p.clean_stale(&snap);
            run_errands(&mut p);
            removals.push(deck.count("remove"));
        }
        assert_eq!(removals, [1, 1, 2], "the second try waits a minute");
        assert_eq!(actions(tmp.path()), ["stale-remove-failed"; 2]);
    }

    /// The conductor's child `worker-1`, as the waiting patrol sees it.
    fn waiting_child() -> Session {
        Session {
            id: KID.into(),
            title: "worker-1".into(),
            profile: "default".into(),
            parent_session_id: Some(COND.into()),
            ..Session::default()
        }
    }

    #[test]
    fn a_failed_nudge_is_not_sent_again_before_the_dedup_window() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script {
            send: SendAnswer::Undelivered(Delivery::SendFailed),
            ..Script::default()
        }));
        let mut cfg = config(tmp.path());
        cfg.waiting_patrol_threshold = Duration::from_secs(600);
        cfg.waiting_patrol_nudge_dedup = Duration::from_secs(3600);
        let (mut p, clock) = patrols(&cfg, deck.clone());
        let child = [waiting_child()];
        let seen = [(KID.to_owned(), live(Status::Waiting, &[]))].into();
        let none = BTreeSet::new();
        let snap = snapshot(&child, &seen, &none);
        let mut sends = Vec::new();
        for step in [0.0, 600.0, 60.0, 3540.0] {
            clock.advance(step);
            p.nudge_waiting(&snap, &mut || ());
            run_errands(&mut p);
            sends.push(deck.count("send"));
        }
        assert_eq!(sends, [0, 1, 1, 2], "frozen for 600 s, then once an hour");
        assert_eq!(actions(tmp.path()), ["nudge-failed"; 2]);
    }

    #[test]
    fn a_child_at_an_open_menu_is_never_typed_into_and_its_wait_starts_over() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script::default()));
        let mut cfg = config(tmp.path());
        cfg.waiting_patrol_threshold = Duration::from_secs(600);
        let (mut p, clock) = patrols(&cfg, deck.clone());
        let child = [waiting_child()];
        let none = BTreeSet::new();
        let with = |substate: &str| -> BTreeMap<String, Live> {
            let l = Live {
                substate: Some(substate.into()),
                ..live(Status::Waiting, &[])
            };
            [(KID.to_owned(), l)].into()
        };
        let (menu, plain) = (with("interactive-menu"), with("idle-at-empty-prompt"));
        let mut pass = |seen: &BTreeMap<String, Live>, step: f64| {
            clock.advance(step);
            p.nudge_waiting(&snapshot(&child, seen, &none), &mut || ());
            run_errands(&mut p);
            (deck.count("output-pane"), deck.count("send"))
        };
        assert_eq!(pass(&plain, 0.0), (1, 0));
        // The menu opens: an hour frozen at it is no reason to type.
        assert_eq!(pass(&menu, 300.0), (1, 0), "not even sampled");
        assert_eq!(pass(&menu, 3600.0), (1, 0));
        // Closed again: its wait is counted from now, not from the first sample.
        assert_eq!(pass(&plain, 1.0), (2, 0));
        assert_eq!(pass(&plain, 599.0), (3, 0));
        assert_eq!(pass(&plain, 1.0), (4, 1));
        assert_eq!(actions(tmp.path()), ["nudge"]);
    }

    /// A conductor with a Telegram channel whose env file names
    /// `TELEGRAM_STATE_DIR`, and a process table with no poller in it.
    fn conductor_without_poller(home: &Path, p: &mut Patrols) -> Session {
        p.proc_dir = home.join("proc");
        std::fs::create_dir_all(&p.proc_dir).unwrap();
        std::fs::create_dir_all(home.join(".config/agent-deck")).unwrap();
        std::fs::write(home.join("ops.env"), "TELEGRAM_STATE_DIR=~/tg-ops\n").unwrap();
        std::fs::write(
            home.join(".config/agent-deck/config.toml"),
            "[conductors.ops.claude]\nenv_file = \"~/ops.env\"\n",
        )
        .unwrap();
        Session {
            id: COND.into(),
            title: "conductor-ops".into(),
            profile: "default".into(),
            ..Session::default()
        }
    }

    const TELEGRAM: &[&str] = &["plugin:telegram@claude-plugins-official"];

    #[test]
    fn a_conductor_whose_poller_is_gone_is_restarted_once_per_dedup_window() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script::default()));
        let (mut p, clock) = patrols(&config(tmp.path()), deck.clone());
        let conductor = [conductor_without_poller(tmp.path(), &mut p)];
        let seen = [(COND.to_owned(), live(Status::Running, TELEGRAM))].into();
        let none = BTreeSet::new();
        let snap = snapshot(&conductor, &seen, &none);
        // One pass per restart worker, so each pass sees the last one done.
        let restarts_after = |p: &mut Patrols, step: f64| {
            let mut worker = job_worker::spawn(p.ctx.clone()).unwrap();
            clock.advance(step);
            p.run(&snap, &worker, &mut || ());
            worker.finish();
            deck.count("restart")
        };
        let cfg = &p.ctx.cfg;
        let interval = cfg.poller_check_interval.as_secs_f64();
        let dedup = cfg.poller_restart_dedup.as_secs_f64();
        assert_eq!(restarts_after(&mut p, 0.0), 1);
        assert_eq!(restarts_after(&mut p, interval), 1, "the dedup holds");
        assert_eq!(restarts_after(&mut p, dedup - interval), 2);
        assert_eq!(actions(tmp.path()), ["poller-restart"; 2]);
        assert!(p.ctx.state.lock().in_flight.is_empty());
    }

    #[test]
    fn a_poller_deaf_on_enough_checks_in_a_row_is_restarted_and_its_streak_used_up() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script::default()));
        let mut cfg = config(tmp.path());
        cfg.poller_deaf_checks = 2;
        cfg.telegram_api_base = "http://127.0.0.1:9".into();
        let (mut p, clock) = patrols(&cfg, deck.clone());
        let conductor = [conductor_without_poller(tmp.path(), &mut p)];
        let seen = [(COND.to_owned(), live(Status::Running, TELEGRAM))].into();
        let none = BTreeSet::new();
        // No poller check is due this pass: only the streak speaks.
        p.last_poller_check = Some(clock.now());
        let streak = PendingStreak {
            counts: vec![4, 6],
            last_check: clock.now(),
        };
        p.ctx
            .state
            .lock()
            .pending_updates
            .insert(COND.into(), streak);
        let mut worker = job_worker::spawn(p.ctx.clone()).unwrap();
        p.run(&snapshot(&conductor, &seen, &none), &worker, &mut || ());
        worker.finish();
        assert_eq!(deck.count("restart"), 1);
        let recs = crate::act::context::tests::restart_records(tmp.path());
        assert_eq!(recs[0].action, "poller-deaf");
        assert_eq!(
            recs[0].reason.as_deref(),
            Some("pending updates 4, 6 over 2 checks")
        );
        assert!(p.ctx.state.lock().pending_updates.is_empty());
    }
}
