//! The one context the main loop and every worker share: the settings, the
//! agent-deck client, the restart book and its store, the records, the
//! escalator, the limits, the clock, the shutdown token and dry-run. The
//! daemon builds it once; each worker holds a clone. Nothing here decides.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::alert::escalate::{Escalator, Shared};
use crate::config::Config;
use crate::decide::book::stale_hook::is_stale_dead_hook;
use crate::decide::book::State;
use crate::decide::limits::Limits;
use crate::decide::outcomes::{RestartAction, Severity};
use crate::decide::probe::Probe;
use crate::decide::{book::notes, book::stop};
use crate::fleet::deck::AgentDeck;
use crate::fleet::session::{is_escalation_critical, Live, Session};
use crate::records::audit::RestartRecord;
use crate::records::state_file::Store;
use crate::records::writer::Records;
use crate::sys::clock::Clock;
use crate::sys::shutdown::Shutdown;
use crate::triggers::event_queue::EventQueue;
use crate::triggers::hook_file::{self, Hook};
use crate::triggers::pane_share::PaneShare;

#[derive(Clone)]
pub(crate) struct Context {
    pub cfg: Arc<Config>,
    pub deck: Arc<dyn AgentDeck>,
    pub state: Arc<Mutex<State>>,
    pub store: Arc<Store>,
    pub records: Arc<Records>,
    pub escalator: Arc<Escalator>,
    pub limits: Limits,
    pub clock: Arc<dyn Clock>,
    pub shutdown: Shutdown,
    pub dry_run: bool,
    /// The map the main loop hands down, which a restart reads (the known
    /// tmux names, the bare shells); `None` until the daemon shares it.
    pub panes: Option<Arc<PaneShare>>,
    /// Where a job's ending wakes the main loop; `None` outside the daemon.
    pub queue: Option<Arc<EventQueue>>,
}

impl Context {
    /// The context over `deck`, with the restart book loaded from
    /// `state.json` (a dry run reads it but never writes it).
    pub(crate) fn from_config(
        cfg: &Config,
        dry_run: bool,
        deck: Arc<dyn AgentDeck>,
        clock: Arc<dyn Clock>,
        shutdown: Shutdown,
    ) -> Context {
        let limits = Limits::from_config(cfg);
        let store = Arc::new(Store::new(&cfg.watchdog_dir, !dry_run));
        let state = Arc::new(Mutex::new(store.load(&limits, clock.now())));
        let records = Arc::new(Records::from_config(cfg));
        let shared = Shared {
            records: records.clone(),
            state: state.clone(),
            store: Some(store.clone()),
        };
        let escalator = Arc::new(Escalator::new(
            cfg,
            shared,
            dry_run,
            clock.clone(),
            &shutdown,
        ));
        Context {
            cfg: Arc::new(cfg.clone()),
            deck,
            state,
            store,
            records,
            escalator,
            limits,
            clock,
            shutdown,
            dry_run,
            panes: None,
            queue: None,
        }
    }

    /// `session show`; `None`, with a warning, when it is unreadable. A
    /// stop it sees (or a start) is noted, whoever asked.
    pub(crate) fn read_status(&self, s: &Session) -> Option<Live> {
        let live = self.deck.show(&s.profile, &s.id);
        let live = live
            .inspect_err(|e| log::warn!("status of {} is unreadable: {e}", s.id))
            .ok()?;
        stop::note_seen(&mut self.state.lock(), &s.id, live.status());
        Some(live)
    }

    /// A `restart.log` record about `s`, stamped now; the caller adds its
    /// [`Detail`](crate::records::audit::Detail).
    pub(crate) fn record(
        &self,
        s: &Session,
        action: RestartAction,
        reason: Option<String>,
    ) -> RestartRecord {
        RestartRecord::new(self.clock.now(), s, action, reason, self.dry_run)
    }

    /// The `dead` hook of `s` from before a restart at `restarted_at` that
    /// agent-deck still honours, if that is what makes `s` read `error`.
    pub(crate) fn stale_dead_hook(&self, s: &Session, restarted_at: f64) -> Option<Hook> {
        let hook = hook_file::read_hook(&self.cfg.hooks_dir, &s.id)?;
        is_stale_dead_hook(&hook, restarted_at, self.clock.now()).then_some(hook)
    }

    /// Escalates about `s`, to Telegram too when it is escalation-critical;
    /// false when the dedup dropped it.
    pub(crate) fn alert(&self, s: &Session, severity: Severity, msg: &str) -> bool {
        let telegram = is_escalation_critical(s);
        self.escalator
            .escalate(severity, msg, Some(&s.id), telegram)
    }

    /// Backs `id` off `backoff` seconds from `now` after a rate-limited boot
    /// and counts it toward the circuit breaker, escalating once when that
    /// opens the breaker.
    pub(crate) fn back_off_rate_limited(&self, id: &str, now: f64, backoff: f64) {
        let lim = &self.limits;
        if notes::note_rate_limited(&mut self.state.lock(), lim, id, now, backoff) {
            self.breaker_opened();
        }
    }

    /// The one alert of a circuit breaker that a rate-limited boot opened.
    pub(crate) fn breaker_opened(&self) {
        let lim = &self.limits;
        let msg = format!(
            "circuit breaker open: {} API rate-limited boots within {:.0}s — pausing every restart for {:.0}s",
            lim.breaker_threshold, lim.breaker_window, lim.breaker_pause
        );
        self.escalator
            .escalate(Severity::CircuitBreaker, &msg, None, true);
    }

    /// The probe of `s`, whose first read is `first` when one was made.
    pub(crate) fn probe<'a>(&'a self, s: &'a Session, first: Option<Live>) -> SessionProbe<'a> {
        SessionProbe {
            ctx: self,
            session: s,
            first: first.into(),
        }
    }
}

/// One session's readings through the CLI and the hook spool, for liveness
/// confirmation and for the evidence that it ever ran. Its first status read
/// may be one already made (the `session show` that found a kernel-proven
/// death in error), so it is not made twice; every later read asks the CLI.
pub(crate) struct SessionProbe<'a> {
    ctx: &'a Context,
    session: &'a Session,
    first: std::cell::RefCell<Option<Live>>,
}

impl Probe for SessionProbe<'_> {
    fn read(&self) -> Option<Live> {
        let first = self.first.borrow_mut().take();
        first.or_else(|| self.ctx.read_status(self.session))
    }

    fn hook_file(&self) -> bool {
        hook_file::hook_file_exists(&self.ctx.cfg.hooks_dir, &self.session.id)
    }

    fn pane(&self) -> Option<String> {
        let s = self.session;
        let text = self.ctx.deck.pane(&s.profile, &s.id);
        text.inspect_err(|e| log::debug!("pane of {} could not be captured: {e}", s.id))
            .ok()
    }

    fn wait(&self, gap: std::time::Duration) -> bool {
        self.ctx.shutdown.sleep(gap)
    }

    fn now(&self) -> f64 {
        self.ctx.clock.now()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::fleet::fake::FakeDeck;
    use crate::records::audit::{ESCALATIONS_LOG, RESTART_LOG};
    use crate::records::read_back::read_lines;
    use crate::sys::clock::FakeClock;
    use std::time::Duration;

    /// The fake clock's wall time when a test starts.
    pub(crate) const NOW: f64 = 1_755_900_000.5;

    /// The settings of a test under `home`, every restart wait zero, its
    /// watchdog and hooks directories made.
    pub(crate) fn config(home: &std::path::Path) -> Config {
        let mut cfg = crate::config::test_config(home);
        cfg.liveness_confirm_gap = Duration::ZERO;
        cfg.restart_verify = Duration::ZERO;
        cfg.start_verify = Duration::ZERO;
        cfg.hooks_dir = home.join("hooks");
        std::fs::create_dir_all(&cfg.watchdog_dir).unwrap();
        std::fs::create_dir_all(&cfg.hooks_dir).unwrap();
        cfg
    }

    /// A context over `deck` with the settings `cfg` at [`NOW`], and its
    /// clock.
    pub(crate) fn context_with(cfg: &Config, deck: Arc<FakeDeck>) -> (Context, Arc<FakeClock>) {
        let clock = Arc::new(FakeClock::at(NOW));
        let shutdown = Shutdown::new().unwrap();
        let ctx = Context::from_config(cfg, false, deck, clock.clone(), shutdown);
        (ctx, clock)
    }

    /// A context over `deck` under `home` ([`config`]) at [`NOW`].
    pub(crate) fn context(
        home: &std::path::Path,
        deck: Arc<FakeDeck>,
    ) -> (Context, Arc<FakeClock>) {
        context_with(&config(home), deck)
    }

    /// The records of `restart.log` under `home`, in order.
    pub(crate) fn restart_records(home: &std::path::Path) -> Vec<RestartRecord> {
        read_lines(
            &crate::config::test_config(home)
                .watchdog_dir
                .join(RESTART_LOG),
        )
    }

    /// The `action`s of `restart.log` under `home`, in order.
    pub(crate) fn actions(home: &std::path::Path) -> Vec<String> {
        restart_records(home)
            .into_iter()
            .map(|r| r.action.to_string())
            .collect()
    }

    /// The severities of `escalations.log` under `home`, in order.
    pub(crate) fn severities(home: &std::path::Path) -> Vec<String> {
        let dir = crate::config::test_config(home).watchdog_dir;
        read_lines::<crate::records::audit::EscalationRecord>(&dir.join(ESCALATIONS_LOG))
            .into_iter()
            .map(|e| e.severity.to_string())
            .collect()
    }
}
