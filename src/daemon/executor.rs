//! The one executor of [`Verdict`]s: what the daemon does once
//! [`crate::decide::verdict`] has decided on a critical session. It writes
//! the records (a hold once per episode, a usage limit backed off), raises
//! the alerts (a spent budget, an opened circuit breaker) and queues the
//! restarts the gates cleared. Judging a session in error (its evidence,
//! read through a probe) is here too, as it feeds the decision.

use crate::act::apply;
use crate::act::job::{Job, Proven};
use crate::daemon::Daemon;
use crate::decide::gates::Hold;
use crate::decide::outcomes::{RestartAction, Severity};
use crate::decide::restart::JobKind;
use crate::decide::stale_hook;
use crate::decide::verdict::{self, BackedOff, Decided, Errored, Known, Look, Settled, Verdict};
use crate::fleet::panes::Proof;
use crate::fleet::session::{Live, Session};
use crate::records::audit::Detail;

impl Daemon {
    /// What critical session `s`, read in error as `l`, is (see
    /// [`verdict::judge`]). Costs no CLI call for a session the book knows
    /// ran or that has a hook file, and at most one `session show` per
    /// error episode for the others; none when `l` is itself a show
    /// (`shown`).
    pub(super) fn judge_errored(&mut self, s: &Session, l: &Live, shown: bool) -> Errored {
        let release = self.ctx.deck.version();
        let known = Known::of(&self.ctx.state.lock(), &s.id, release);
        // A show may take SUBPROCESS_TIMEOUT_S; keep systemd's watchdog fed.
        self.sd_notify.alive();
        let ctx = &self.ctx;
        let probe = ctx.probe(s, shown.then(|| l.clone()));
        let stale = |restarted_at| ctx.stale_dead_hook(s, restarted_at).is_some();
        let errored = verdict::judge(known, &mut self.memory.episodes, s, l, &probe, &stale);
        if errored == Errored::Undecided {
            log::info!(
                "{} is in error; whether it ever ran is decided on the next tick",
                s.id
            );
        }
        errored
    }

    /// The verdict on `s`, read as `live` and, in error, judged `errored`.
    pub(super) fn decide(
        &mut self,
        session: &Session,
        live: Option<&Live>,
        errored: Option<Errored>,
    ) -> Decided {
        let look = Look {
            session,
            live,
            errored,
        };
        let now = self.ctx.clock.now();
        let mut st = self.ctx.state.lock();
        let lim = &self.ctx.limits;
        let tz = jiff::tz::TimeZone::system;
        verdict::decide(&mut st, lim, now, &tz, &mut self.memory.episodes, look)
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
            Verdict::Restart { slot } => {
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
}
