//! What one critical session gets from a look at it, pure: a [`Verdict`]
//! from its status, what its error is ([`Errored`], judged from the
//! evidence by [`judge`]) and the restart book. The book is noted as the
//! gates note it (a status seen, a budget slot taken, a usage limit backed
//! off); the daemon then carries the verdict out: records, alerts, the
//! restart queue, the `--once` summary and the metrics all read it.
//!
//! A new kind of verdict is one [`Verdict`] variant, one arm in
//! [`decide`] and one in the daemon's executor; [`crate::decide::plan`]
//! puts the verdicts in a tick's plan.
//!
//! Beside it: where a batch of triggers goes (`route.rs`), when a hook file
//! earns a look (`hook_pacing.rs`), and a session at its plan's usage limit
//! (`usage_limit.rs`).

pub(crate) mod hook_pacing;
pub(crate) mod route;
pub(crate) mod usage_limit;

use std::collections::{BTreeMap, BTreeSet};

use jiff::tz::TimeZone;

use crate::decide::book::first_run::{self, Ran};
use crate::decide::book::State;
use crate::decide::probe::Probe;
use crate::decide::restart;
use crate::decide::restart::gates::{self, Gate, Hold, Limits};
use crate::decide::{book::notes, book::stop};
use crate::fleet::session::{Live, Session, Status, Substate};
use crate::fleet::version::Version;

/// What a critical session in error is, this tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Errored {
    /// It ran and is in error: the gates decide on its restart.
    Died,
    /// Not restarted, for this reason (recorded once per episode).
    Held(Hold),
    /// Whether it ever ran could not be read: looked at again next tick.
    Undecided,
    /// At its plan's usage limit: backed off, no restart before it resets.
    UsageLimited,
}

/// What the daemon does with one critical session.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// Running, waiting or idle.
    Healthy,
    /// Stopped on purpose: left alone.
    Stopped,
    /// Read with a status that is neither healthy, stopped nor error.
    Other(Status),
    /// Not read this tick: its profile's list was unreadable.
    Unread,
    /// In error, and whether it ever ran could not be read: next tick.
    Undecided,
    /// In error and not restarted now, for `why`; `new`: the first look of
    /// this hold, which is recorded (once per episode).
    Held { why: Hold, new: bool },
    /// In error with its restart budget spent: `rate-limit` is escalated.
    BudgetSpent { new: bool },
    /// The gates cleared it: its restart goes, with this budget slot,
    /// after `ending`, the tmux session its last restart left unsaved, is
    /// ended.
    Restart { slot: f64, ending: Option<String> },
}

impl Verdict {
    /// Whether the session was read in `error` (the metrics' count).
    pub(crate) fn in_error(&self) -> bool {
        !matches!(
            self,
            Verdict::Healthy | Verdict::Stopped | Verdict::Other(_) | Verdict::Unread
        )
    }
}

/// A verdict, and the usage limit backed off and the restart settled on
/// the way to it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decided {
    pub verdict: Verdict,
    pub backed_off: Option<BackedOff>,
    pub settled: Option<Settled>,
}

/// A restart no status read could verify (`restart-unverified`), settled
/// by this look's read ([`restart::unread_failed`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settled {
    /// The reason it was recorded unverified with.
    pub why: String,
    /// The status this look read.
    pub status: Status,
    /// A failure, the failures in a row (now counted); `None`: it worked.
    pub failures: Option<u32>,
}

/// A usage limit first seen in this error episode: backed off for
/// `seconds`, counted toward the circuit breaker.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BackedOff {
    /// agent-deck's `substate_detail`, empty when it gave none.
    pub detail: String,
    pub seconds: f64,
    /// This hit opened the circuit breaker.
    pub breaker_opened: bool,
}

/// What the daemon remembers of each session's error episode, beside the
/// book: the hold it was last recorded with, and which sessions showed no
/// evidence that they ever ran (their `session show` is not repeated).
#[derive(Debug, Clone, Default)]
pub(crate) struct Episodes {
    held: BTreeMap<String, Hold>,
    never_started: BTreeSet<String>,
}

impl Episodes {
    /// Whether a hold of `id` for `why` is new, and so recorded: a queued
    /// restart or its own quiet time is the normal course, not a hold.
    fn hold(&mut self, id: &str, why: Hold) -> bool {
        !matches!(why, Hold::InFlight | Hold::Cooldown)
            && self.held.insert(id.to_owned(), why) != Some(why)
    }

    /// Ends the error episode of `id`.
    fn end(&mut self, id: &str) {
        self.held.remove(id);
        self.never_started.remove(id);
    }

    /// Keeps only the sessions `keep` says are still known.
    pub(crate) fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.held.retain(|id, _| keep(id));
        self.never_started.retain(|id| keep(id));
    }
}

/// What the book knows of one session in error, read under the state
/// lock before the evidence is gathered without it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Known {
    /// It ran (the book's `ran` set).
    pub ran: bool,
    /// A stop was seen before this error, at an agent-deck that can report
    /// a deliberate stop as `error` (see [`crate::decide::book::stop`]).
    pub stopped_before: bool,
    /// When the watchdog last restarted it.
    pub restarted_at: Option<f64>,
}

impl Known {
    pub(crate) fn of(st: &State, id: &str, release: Option<Version>) -> Known {
        Known {
            ran: st.ran.contains(id),
            stopped_before: stop::held_by_stop(st, id, release),
            restarted_at: st.sessions.get(id).and_then(|b| b.restarted_at),
        }
    }
}

/// What a critical session in `error` (`l`) is: held because a stop was
/// seen before it, at its usage limit, held because it never ran (see
/// [`crate::decide::book::first_run`]) or because only a stale `dead` hook from
/// before its restart says `error` (`stale_hook`, asked with the restart's
/// time, only of a session that ran and was restarted), else died. The
/// `probe` is read at most once per error episode, and not when the book
/// knows it ran.
pub(crate) fn judge(
    known: Known,
    ep: &mut Episodes,
    s: &Session,
    l: &Live,
    probe: &dyn Probe,
    stale_hook: &dyn Fn(f64) -> bool,
) -> Errored {
    if known.stopped_before {
        return Errored::Held(Hold::StoppedBefore);
    }
    if l.usage_limited() {
        return Errored::UsageLimited;
    }
    if l.substate() == Some(Substate::ModelUnavailable) {
        return Errored::Held(Hold::ModelUnavailable);
    }
    match first_run::has_run(known.ran, ep.never_started.contains(&s.id), probe) {
        Ran::Yes => {
            ep.never_started.remove(&s.id);
            if known.restarted_at.is_some_and(stale_hook) {
                Errored::Held(Hold::StaleDeadHook)
            } else {
                Errored::Died
            }
        }
        Ran::Never => {
            ep.never_started.insert(s.id.clone());
            Errored::Held(Hold::NeverStarted)
        }
        Ran::Unknown => Errored::Undecided,
    }
}

/// Whether [`judge`] reads the probe's `session show` for `l`: neither the
/// book, the hook file (`hook_file`) nor this episode has said whether it
/// ran, and nothing else decides first.
pub(crate) fn needs_show(
    known: Known,
    ep: &Episodes,
    s: &Session,
    l: &Live,
    hook_file: bool,
) -> bool {
    let decided = known.stopped_before
        || l.usage_limited()
        || l.substate() == Some(Substate::ModelUnavailable);
    !(decided || known.ran || hook_file || ep.never_started.contains(&s.id))
}

/// One look at a critical session: its status as read (`None`: unread)
/// and, in error, what it is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Look<'a> {
    pub session: &'a Session,
    pub live: Option<&'a Live>,
    pub errored: Option<Errored>,
    /// The tmux session its last restart left unsaved, which may now be
    /// ended so that it is restarted once (SPEC §5.5; see
    /// [`crate::decide::plan`]).
    pub ending: Option<&'a str>,
}

/// The verdict on one `look`. Notes the status in the book, and runs the
/// gates for a session that died; `tz` gives the zone a usage limit's
/// retry time is read in, asked only for a limit first seen.
pub(crate) fn decide(
    st: &mut State,
    lim: &Limits,
    now: f64,
    tz: &dyn Fn() -> TimeZone,
    ep: &mut Episodes,
    look: Look<'_>,
) -> Decided {
    let (s, errored, ending) = (look.session, look.errored, look.ending);
    let Some(l) = look.live else {
        return Decided {
            verdict: Verdict::Unread,
            backed_off: None,
            settled: None,
        };
    };
    let settled = settle(st, &s.id, l.status(), errored);
    let mut backed_off = None;
    let verdict = match errored {
        Some(Errored::Held(why)) => {
            if why == Hold::StaleDeadHook {
                notes::note_ran(st, &s.id);
            }
            notes::note_status(st, s, Status::Error, now);
            let new = ep.hold(&s.id, why);
            Verdict::Held { why, new }
        }
        Some(Errored::Undecided) => {
            notes::note_status(st, s, Status::Error, now);
            Verdict::Undecided
        }
        Some(Errored::UsageLimited) => {
            backed_off = back_off(st, lim, now, tz, &s.id, l);
            seen(st, lim, now, ep, (s, ending), l.status())
        }
        Some(Errored::Died) => {
            notes::note_ran(st, &s.id);
            seen(st, lim, now, ep, (s, ending), l.status())
        }
        None => seen(st, lim, now, ep, (s, ending), l.status()),
    };

    Decided {
        verdict,
        backed_off,
        settled,
    }
}

/// Settles a restart of `id` left unverified, now that its `status` was
/// read (`errored`: what the look made of an `error`), counting the
/// failure it turns out to be.
fn settle(st: &mut State, id: &str, status: Status, errored: Option<Errored>) -> Option<Settled> {
    let why = st.sessions.get_mut(id)?.unverified.take()?;
    let stale = errored == Some(Errored::Held(Hold::StaleDeadHook));
    let failed = restart::unread_failed(status, stale);
    Some(Settled {
        why,
        status,
        failures: failed.then(|| notes::note_failure(st, id)),
    })
}

/// The verdict on a status seen: in error, the gates' (`ending`: the
/// unsaved tmux session its restart would end first).
fn seen(
    st: &mut State,
    lim: &Limits,
    now: f64,
    ep: &mut Episodes,
    (s, ending): (&Session, Option<&str>),
    status: Status,
) -> Verdict {
    notes::note_status(st, s, status, now);
    if status != Status::Error {
        ep.end(&s.id);
        return match status {
            Status::Stopped => Verdict::Stopped,
            s if s.is_healthy() => Verdict::Healthy,
            other => Verdict::Other(other),
        };
    }
    match gates::gate(st, lim, &s.id, now, ending) {
        Gate::Go => Verdict::Restart {
            slot: gates::reserve(st, lim, &s.id, now),
            ending: ending.map(str::to_owned),
        },
        Gate::BudgetSpent => Verdict::BudgetSpent {
            new: ep.hold(&s.id, Hold::BudgetSpent),
        },
        Gate::Skip(why) => Verdict::Held {
            why,
            new: ep.hold(&s.id, why),
        },
    }
}

/// The 429 path of a session at its usage limit, once per limit in the
/// episode: backed off until the retry time its `substate_detail` gives
/// (else `API_429_BACKOFF_S`), counted toward the circuit breaker.
fn back_off(
    st: &mut State,
    lim: &Limits,
    now: f64,
    tz: &dyn Fn() -> TimeZone,
    id: &str,
    l: &Live,
) -> Option<BackedOff> {
    let detail = l.substate_detail.as_deref().unwrap_or_default();
    if !usage_limit::first_sight(st, id, detail) {
        return None;
    }
    let seconds = usage_limit::backoff(detail, now, &tz(), lim.backoff_429);
    let breaker_opened = notes::note_rate_limited(st, lim, id, now, seconds);
    Some(BackedOff {
        detail: detail.to_owned(),
        seconds,
        breaker_opened,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::book::notes::tests::sess;
    use crate::decide::limits::tests::lim;

    const ID: &str = "3f9c2a1b-1755891234";
    const NOW: f64 = 1_760_000_000.0;

    fn live(status: Status) -> Live {
        crate::fleet::fake::live(status).unwrap()
    }

    /// What one look read, and what it judged.
    type Reading = (Option<Live>, Option<Errored>);

    /// The verdicts of looks at one session, one after the other, a second apart.
    fn verdicts(st: &mut State, looks: &[Reading]) -> Vec<Verdict> {
        let (s, mut ep, lim) = (sess(ID), Episodes::default(), lim());
        let looks = looks.iter().enumerate();
        looks
            .map(|(i, (live, errored))| {
                let look = Look {
                    session: &s,
                    live: live.as_ref(),
                    errored: *errored,
                    ending: None,
                };
                let now = NOW + i as f64;
                decide(st, &lim, now, &|| TimeZone::UTC, &mut ep, look).verdict
            })
            .collect()
    }

    #[test]
    fn each_look_gets_one_verdict() {
        use Verdict::*;
        let died = (Some(live(Status::Error)), Some(Errored::Died));
        let held = |why| (Some(live(Status::Error)), Some(Errored::Held(why)));
        #[rustfmt::skip]
        let table: Vec<(Reading, Verdict)> = vec![
            ((Some(live(Status::Running)), None), Healthy),
            ((Some(live(Status::Idle)), None), Healthy),
            ((Some(live(Status::Stopped)), None), Stopped),
            ((Some(live(Status::Unknown)), None), Other(Status::Unknown)),
            ((None, None), Unread),
            ((Some(live(Status::Error)), Some(Errored::Undecided)), Undecided),
            (held(Hold::NeverStarted), Held { why: Hold::NeverStarted, new: true }),
            (died, Restart { slot: NOW, ending: None }),
        ];
        for (i, (look, want)) in table.into_iter().enumerate() {
            let got = verdicts(&mut State::default(), &[look]);
            assert_eq!(got, [want], "row {i}");
        }
    }

    #[test]
    fn an_unverified_restart_is_settled_by_the_first_look_that_reads_a_status() {
        let error = |why| (Some(live(Status::Error)), Some(why));
        #[rustfmt::skip]
        let table: Vec<(Reading, Option<Option<u32>>)> = vec![
            ((None, None), None),
            ((Some(live(Status::Running)), None), Some(None)),
            (error(Errored::Held(Hold::StaleDeadHook)), Some(None)),
            (error(Errored::Died), Some(Some(2))),
        ];
        let (s, lim) = (sess(ID), lim());
        for (i, ((live, errored), want)) in table.into_iter().enumerate() {
            let mut st = State::default();
            st.book(ID).consecutive_failures = 1;
            st.book(ID).unverified = Some("status unreadable after start".into());
            let look = |live| Look {
                session: &s,
                live,
                errored,
                ending: None,
            };
            let mut ep = Episodes::default();
            let d = decide(
                &mut st,
                &lim,
                NOW,
                &|| TimeZone::UTC,
                &mut ep,
                look(live.as_ref()),
            );
            let got = d.settled.map(|t| t.failures);
            assert_eq!(got, want, "row {i}");
            assert_eq!(st.book(ID).unverified.is_some(), want.is_none(), "row {i}");
            assert_eq!(
                st.book(ID).consecutive_failures,
                want.flatten().unwrap_or(1)
            );
        }
    }

    #[test]
    fn a_hold_is_new_once_per_episode_and_a_healthy_look_ends_the_episode() {
        let held = (
            Some(live(Status::Error)),
            Some(Errored::Held(Hold::StaleDeadHook)),
        );
        let healthy = (Some(live(Status::Running)), None);
        let looks = [held.clone(), held.clone(), healthy, held];
        let news: Vec<bool> = verdicts(&mut State::default(), &looks)
            .into_iter()
            .filter_map(|v| match v {
                Verdict::Held { new, .. } => Some(new),
                _ => None,
            })
            .collect();
        assert_eq!(news, [true, false, true]);
    }

    #[test]
    fn a_death_runs_the_gates_and_a_spent_budget_is_said_once() {
        let died = (Some(live(Status::Error)), Some(Errored::Died));
        let mut st = State::default();
        let lim = lim();
        st.book(ID).restarts = vec![NOW - 1.0; lim.rate_max];
        let got = verdicts(&mut st, &[died.clone(), died]);
        let spent = |new| Verdict::BudgetSpent { new };
        assert_eq!(got, [spent(true), spent(false)]);
        // A queued restart is the normal course: never recorded as a hold.
        let mut st = State::default();
        st.in_flight.insert(ID.into());
        let died = (Some(live(Status::Error)), Some(Errored::Died));
        let held = Verdict::Held {
            why: Hold::InFlight,
            new: false,
        };
        assert_eq!(verdicts(&mut st, &[died]), [held]);
    }

    #[test]
    fn a_usage_limit_is_backed_off_once_and_held_until_the_backoff_ends() {
        let limited = Live {
            substate: Some("usage-limit".into()),
            ..live(Status::Error)
        };
        let (s, mut ep, lim) = (sess(ID), Episodes::default(), lim());
        let mut st = State::default();
        let look = Look {
            session: &s,
            live: Some(&limited),
            errored: Some(Errored::UsageLimited),
            ending: None,
        };
        let zones = std::cell::Cell::new(0);
        let tz = || {
            zones.set(zones.get() + 1);
            TimeZone::UTC
        };
        let mut at = |now| decide(&mut st, &lim, now, &tz, &mut ep, look);
        let first = at(NOW);
        let backed = BackedOff {
            detail: String::new(),
            seconds: lim.backoff_429,
            breaker_opened: false,
        };
        assert_eq!(first.backed_off, Some(backed));
        let backoff = Verdict::Held {
            why: Hold::Backoff429,
            new: true,
        };
        assert_eq!(first.verdict, backoff);
        assert_eq!(at(NOW + 1.0).backed_off, None, "once per limit");
        let after = at(NOW + lim.backoff_429 + 1.0);
        assert_eq!(
            after.verdict,
            Verdict::Restart {
                slot: NOW + lim.backoff_429 + 1.0,
                ending: None,
            }
        );
        assert_eq!(
            zones.get(),
            1,
            "the zone is read for a limit first seen only"
        );
    }

    /// A probe whose show says `show` (`None`: unreadable), counting reads.
    struct Shows {
        show: Option<Live>,
        reads: std::cell::Cell<u32>,
    }

    impl Probe for Shows {
        fn read(&self) -> Option<Live> {
            self.reads.set(self.reads.get() + 1);
            self.show.clone()
        }
        fn hook_file(&self) -> bool {
            false
        }
        fn pane(&self) -> Option<String> {
            None
        }
        fn wait(&self, _: std::time::Duration) -> bool {
            true
        }
        fn now(&self) -> f64 {
            NOW
        }
    }

    #[test]
    fn judging_an_error_looks_at_the_cheapest_evidence_first() {
        let s = sess(ID);
        let error = live(Status::Error);
        let probe = |show: Option<Live>| Shows {
            show,
            reads: Default::default(),
        };
        let never = probe(Some(live(Status::Error)));
        let mut ep = Episodes::default();
        let judge_with = |known, ep: &mut Episodes, p: &Shows, stale: bool| {
            judge(known, ep, &s, &error, p, &|_| stale)
        };
        let ran = Known {
            ran: true,
            ..Known::default()
        };
        let stopped = Known {
            stopped_before: true,
            ..ran
        };
        let restarted = Known {
            restarted_at: Some(NOW),
            ..ran
        };
        let held = |why| Errored::Held(why);
        assert_eq!(
            judge_with(stopped, &mut ep, &never, true),
            held(Hold::StoppedBefore)
        );
        assert_eq!(
            judge_with(ran, &mut ep, &never, true),
            Errored::Died,
            "never restarted"
        );
        assert_eq!(
            judge_with(restarted, &mut ep, &never, true),
            held(Hold::StaleDeadHook)
        );
        assert_eq!(never.reads.get(), 0, "the book knew it ran");
        let unknown = Known::default();
        assert_eq!(
            judge_with(unknown, &mut ep, &never, false),
            held(Hold::NeverStarted)
        );
        assert_eq!(
            judge_with(unknown, &mut ep, &never, false),
            held(Hold::NeverStarted)
        );
        assert_eq!(never.reads.get(), 1, "one show per episode");
        let unreadable = probe(None);
        let mut fresh = Episodes::default();
        assert_eq!(
            judge_with(unknown, &mut fresh, &unreadable, false),
            Errored::Undecided
        );
        let limited = Live {
            substate: Some("usage-limit".into()),
            ..live(Status::Error)
        };
        let at_limit = judge(ran, &mut ep, &s, &limited, &never, &|_| true);
        assert_eq!(at_limit, Errored::UsageLimited);
        let unavailable = Live {
            substate: Some("model-unavailable".into()),
            ..live(Status::Error)
        };
        let model = judge(ran, &mut ep, &s, &unavailable, &never, &|_| false);
        assert_eq!(
            model,
            held(Hold::ModelUnavailable),
            "a stall, never restarted"
        );
    }
}
