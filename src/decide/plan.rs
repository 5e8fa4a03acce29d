//! The plan of one tick, pure: from what the daemon observed of the fleet
//! (an [`Observation`]), the fleet memory, the restart book and `now`, what
//! it does, as an ordered list of [`Act`]s: each critical session in error
//! judged, the cascade check, one [`Decided`] verdict per critical session,
//! then each stall's step. The daemon's executor carries the acts out in
//! the order given (records, alerts, the jobs submitted, the stalls'
//! transitions persisted); nothing here calls the CLI or writes a file.
//!
//! Some reads depend on the first look: whether a session in error ever ran
//! (`session show`), when a usage limit resets, whether a turn ended on an
//! API error banner. [`reads`] says which a tick needs, as [`Read`] values;
//! the daemon makes them (the second round of its observation) and the plan
//! reads the [`Answer`]s. A new stall kind with its own evidence is one
//! more [`Read`] and one more [`StallCase`].

use std::collections::{BTreeMap, BTreeSet};

use crate::decide::book::cascade::{self, CascadeNews};
use crate::decide::book::stale_hook::is_stale_dead_hook;
use crate::decide::book::stop;
use crate::decide::book::State;
use crate::decide::memory::FleetMemory;
use crate::decide::probe::Probe;
use crate::decide::restart::gates::Limits;
use crate::decide::stall::occupancy::Reading;
use crate::decide::stall::reset_time::ResetFrom;
use crate::decide::stall::{self, Transition};
use crate::decide::verdict::{self, Decided, Episodes, Errored, Known, Look};

mod stall_cases;
use crate::fleet::session::{Live, Session, Status};
use crate::fleet::version::Version;
use crate::triggers::hook_file::Hook;
use stall_cases::{stall_cases, stall_step, turn_ended};

/// What the live lists of one tick said.
#[derive(Debug, Default)]
pub(crate) struct LiveView {
    /// By id: the sessions kept whole, and the waiting children.
    pub live: BTreeMap<String, Live>,
    /// Profiles whose list could not be read.
    pub unreadable: BTreeSet<String>,
    /// The waiting children the cache does not keep whole, from their row
    /// or, in an unreadable profile, as the waiting patrol is timing them.
    pub children: Vec<Session>,
    /// Every tmux session name a row carried, for the pane watch.
    pub tmux_names: BTreeSet<String>,
}

/// The hook file of a critical session in error: whether there is one,
/// and, for a session the watchdog restarted, what it says.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct HookSeen {
    pub exists: bool,
    pub hook: Option<Hook>,
}

/// One more read a session needs once the first look is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Read {
    /// `session show`: whether a critical session in error ever ran.
    Show,
    /// `usage --json`, then the last response when that names no reset:
    /// when a usage limit resets.
    Reset,
    /// The pane: whether a turn ended on an API error banner or a full
    /// context, and how a full context's remedy goes.
    Pane,
    /// `session output -q`, the last assistant message: whether it agrees
    /// that the context is full.
    Output,
    /// agent-deck's policy for a conductor (its `meta.json`): whether a
    /// full context is cleared.
    Policy,
    /// The tail of a conductor's Claude transcript (its `claude_session_id`
    /// from the `show`): how full its context is, for the proactive clear.
    Occupancy,
}

/// What a [`Read`] brought back; a failed read keeps its error, which the
/// executor says where the tick used to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    Show(Result<Live, String>),
    /// The reset, and the warnings its reads gave.
    Reset {
        at: f64,
        from: ResetFrom,
        warnings: Vec<String>,
    },
    Pane(Result<String, String>),
    Output(Result<String, String>),
    /// `clear_on_compact`.
    Policy(bool),
    /// The last reading of the transcript's tail, if there is one.
    Occupancy(Option<Reading>),
}

/// What one tick saw.
#[derive(Debug, Default)]
pub(crate) struct Observation {
    /// `list --all` was read (else the cache is the last known fleet).
    pub listed: bool,
    pub critical: Vec<Session>,
    /// With `RESUME_SCOPE=all`, the other Claude sessions.
    pub beyond: Vec<Session>,
    /// Whether stalls are looked for (`RESUME_SCOPE` is not `off`).
    pub stalls: bool,
    pub view: LiveView,
    /// The critical sessions whose pane the watch found a bare shell while
    /// agent-deck reads them at rest: as read, but in `error`.
    pub gone: BTreeMap<String, Live>,
    /// agent-deck's release, as last read.
    pub release: Option<Version>,
    /// The hook file of each critical session in error, by id.
    pub hooks: BTreeMap<String, HookSeen>,
    /// The second round: what each [`Read`] of a session brought back.
    pub answers: BTreeMap<(String, Read), Answer>,
}

impl Observation {
    /// The status `s` is judged by: in `error` when its agent is gone.
    pub(crate) fn live_of(&self, s: &Session) -> Option<&Live> {
        self.gone.get(&s.id).or(self.view.live.get(&s.id))
    }

    /// The sessions whose stalls are looked for: the critical ones, then
    /// the others in `RESUME_SCOPE`.
    fn in_scope(&self) -> Vec<&Session> {
        let all = self.critical.iter().chain(&self.beyond);
        all.filter(|_| self.stalls).collect()
    }

    fn answer(&self, s: &Session, read: Read) -> Option<&Answer> {
        self.answers.get(&(s.id.clone(), read))
    }

    /// The critical sessions in error, each with what it reads.
    pub(crate) fn errored(&self) -> impl Iterator<Item = (&Session, &Live)> {
        self.critical.iter().filter_map(|s| {
            let l = self.live_of(s).filter(|l| l.status() == Status::Error)?;
            Some((s, l))
        })
    }
}

/// What the tick does, in this order; the variants' order is the plan's:
/// every restart is queued (a [`Act::Verdict`]) before any resume (a
/// [`Act::Stall`]), so a revive never waits behind a resume of the same
/// tick on the worker.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Act {
    /// A critical session in error judged: its show could not be read
    /// (`show_failed`), or whether it ever ran is left to the next tick.
    Judged {
        id: String,
        show_failed: Option<String>,
        undecided: bool,
    },
    /// The cascade check, on a full view, and the critical sessions that
    /// died.
    Cascade { news: CascadeNews, died: usize },
    /// The verdict on a critical session; `agent_gone`: the pane watch
    /// proved its death.
    Verdict {
        session: Session,
        decided: Decided,
        agent_gone: bool,
    },
    /// A stall's step, after the reads it took.
    Stall {
        session: Session,
        step: Option<StallStep>,
    },
}

impl Act {
    /// Where an act goes in the plan: the variants' order.
    fn rank(&self) -> u8 {
        match self {
            Act::Judged { .. } => 0,
            Act::Cascade { .. } => 1,
            Act::Verdict { .. } => 2,
            Act::Stall { .. } => 3,
        }
    }
}

/// What a stall's look leads to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StallStep {
    /// Persisted (and said) by the executor.
    Transition(Transition),
    /// Its resume goes to the worker.
    Resume,
}

/// What a tick does.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// In the order they are carried out (see [`Act`]).
    pub acts: Vec<Act>,
    /// The critical sessions read in `error`, for the metrics.
    pub in_error: usize,
}

impl Plan {
    /// The verdicts, in the order of the critical sessions.
    pub(crate) fn verdicts(&self) -> impl Iterator<Item = (&Session, &Decided)> {
        self.acts.iter().filter_map(|a| match a {
            Act::Verdict {
                session, decided, ..
            } => Some((session, decided)),
            _ => None,
        })
    }
}

/// The second round of a tick's observation: the [`Read`]s still to make,
/// in the order the tick makes them. First the `session show`s that judge
/// the critical sessions in error; once those are in, the stalls' reads,
/// found by deciding the verdicts on a copy of the book (a restart they
/// reserve takes its session out of the stall pass). Empty when every
/// read is in.
pub(crate) fn reads(
    obs: &Observation,
    mem: &FleetMemory,
    st: &State,
    lim: &Limits,
    now: f64,
) -> Vec<(Session, Read)> {
    let mut shows = Vec::new();
    for (s, l) in obs.errored() {
        let known = Known::of(st, &s.id, obs.release);
        let hook = obs.hooks.get(&s.id).is_some_and(|h| h.exists);
        let unread = obs.answer(s, Read::Show).is_none();
        if verdict::needs_show(known, &mem.episodes, s, l, hook) && unread {
            shows.push((s.clone(), Read::Show));
        }
    }
    if !shows.is_empty() {
        return shows;
    }
    let (mut st, mut episodes) = (st.clone(), mem.episodes.clone());
    let (ended, endings) = (
        turn_ended(mem, obs),
        unsaved_to_end(obs, mem, &st, lim, now),
    );
    verdicts(obs, &mut episodes, &mut st, lim, now, &endings);
    let mut out = Vec::new();
    for (s, case) in stall_cases(obs, &st, lim, now, &ended) {
        let read = case.next_read(s, |r| obs.answer(s, r), now, lim);
        out.extend(read.map(|r| (s.clone(), r)));
    }
    out
}

/// The evidence a [`verdict::judge`] reads, as observed: the show (if it
/// was read) and whether a hook file exists.
struct Observed<'a> {
    show: Option<&'a Result<Live, String>>,
    hook_file: bool,
    now: f64,
}

impl Probe for Observed<'_> {
    fn read(&self) -> Option<Live> {
        self.show.and_then(|r| r.as_ref().ok()).cloned()
    }
    fn hook_file(&self) -> bool {
        self.hook_file
    }
    fn pane(&self) -> Option<String> {
        None
    }
    fn wait(&self, _: std::time::Duration) -> bool {
        true
    }
    fn now(&self) -> f64 {
        self.now
    }
}

/// What critical session `s`, read in `error` as `l`, is ([`verdict::judge`]
/// over its hook file and, when read, its `show`, which is noted as any
/// status read is).
#[allow(clippy::too_many_arguments)]
pub(crate) fn judge(
    st: &mut State,
    ep: &mut Episodes,
    release: Option<Version>,
    s: &Session,
    l: &Live,
    hook: &HookSeen,
    show: Option<&Result<Live, String>>,
    now: f64,
) -> Errored {
    let known = Known::of(st, &s.id, release);
    let probe = Observed {
        show,
        hook_file: hook.exists,
        now,
    };
    let stale = |at| (hook.hook.as_ref()).is_some_and(|h| is_stale_dead_hook(h, at, now));
    let errored = verdict::judge(known, ep, s, l, &probe, &stale);
    if let Some(Ok(shown)) = show {
        stop::note_seen(st, &s.id, shown.status());
    }
    errored
}

/// The verdict of `look`, at `now`.
pub(crate) fn decide(
    st: &mut State,
    ep: &mut Episodes,
    lim: &Limits,
    now: f64,
    look: Look<'_>,
) -> Decided {
    verdict::decide(st, lim, now, &jiff::tz::TimeZone::system, ep, look)
}

/// The plan of one tick over `obs`: notes the book and the memory as the
/// decisions go (a status seen, a slot reserved, a cascade, an episode).
pub(crate) fn plan(
    obs: &Observation,
    mem: &mut FleetMemory,
    st: &mut State,
    lim: &Limits,
    now: f64,
) -> Plan {
    let ended = turn_ended(mem, obs);
    let endings = unsaved_to_end(obs, mem, st, lim, now);
    let (mut acts, died) = verdicts(obs, &mut mem.episodes, st, lim, now, &endings);
    mem.last_died = died.unwrap_or(mem.last_died);
    for (s, case) in stall_cases(obs, st, lim, now, &ended) {
        let step = stall_step(obs, mem, st, lim, now, s, case);
        let session = s.clone();
        acts.push(Act::Stall { session, step });
    }
    // What the next tick's turn ends are told by.
    let live = |s: &Session| obs.view.live.get(&s.id);
    let running = |l: &Live, idle: bool| l.status() == Status::Running && stall::at_rest(l) == idle;
    let in_scope = obs.in_scope();
    let ids = |idle| {
        let these = in_scope
            .iter()
            .filter(|s| live(s).is_some_and(|l| running(l, idle)));
        these.map(|s| s.id.clone()).collect()
    };
    (mem.working, mem.running_idle) = (ids(false), ids(true));
    // Kept for the sessions in scope only, so a fleet's churn does not grow it.
    let ids_in_scope: BTreeSet<&str> = in_scope.iter().map(|s| s.id.as_str()).collect();
    mem.looked.retain(|id| ids_in_scope.contains(id.as_str()));
    let seen = in_scope.iter().filter(|s| live(s).is_some());
    mem.looked.extend(seen.map(|s| s.id.clone()));
    mem.full_pane.retain(|id, _| ended.contains(id));
    acts.sort_by_key(Act::rank);
    let in_error = (acts.iter())
        .filter(|a| matches!(a, Act::Verdict { decided, .. } if decided.verdict.in_error()))
        .count();
    Plan { acts, in_error }
}

/// The tmux session each critical session's last restart left unsaved
/// that may now be ended, so that it is restarted once (SPEC §5.5): the
/// store reads again (every profile's list was read this tick), agent-deck
/// still reads the session `error`, the pane watch's last listing shows
/// that tmux session, and no row names it. Reads go on while another
/// process holds a write transaction on the store (measured on 1.14.0), so
/// a restart may be left unsaved again: one is ended once, and another only
/// once the budget window has passed since.
fn unsaved_to_end(
    obs: &Observation,
    mem: &FleetMemory,
    st: &State,
    lim: &Limits,
    now: f64,
) -> BTreeMap<String, String> {
    let (Some(listed), Some(known)) = (&mem.tmux_listed, &mem.tmux_known) else {
        return BTreeMap::new();
    };
    let full = obs.view.unreadable.is_empty();
    let in_error = |s: &&Session| obs.live_of(s).is_some_and(|l| l.status() == Status::Error);
    let unsaved = (obs.critical.iter().filter(|s| full && in_error(s)))
        .filter_map(|s| Some((s, st.sessions.get(&s.id)?)))
        .filter(|(_, b)| {
            b.unsaved_ended_at
                .is_none_or(|t| now - t >= lim.rate_window)
        });
    unsaved
        .filter_map(|(s, b)| Some((s, b.unsaved.as_ref()?)))
        .filter(|(_, name)| listed.contains(*name) && !known.contains(*name))
        .map(|(s, name)| (s.id.clone(), name.clone()))
        .collect()
}

/// The first half of a plan: each critical session in error judged, the
/// cascade check (and the deaths it counted, on a full view only), and
/// each critical session's verdict (`endings`: [`unsaved_to_end`]).
fn verdicts(
    obs: &Observation,
    ep: &mut Episodes,
    st: &mut State,
    lim: &Limits,
    now: f64,
    endings: &BTreeMap<String, String>,
) -> (Vec<Act>, Option<usize>) {
    let mut acts = Vec::new();
    let mut errored = BTreeMap::new();
    for (s, l) in obs.errored() {
        let hook = obs.hooks.get(&s.id).cloned().unwrap_or_default();
        let show = match obs.answer(s, Read::Show) {
            Some(Answer::Show(r)) => Some(r),
            _ => None,
        };
        let e = judge(st, ep, obs.release, s, l, &hook, show, now);
        acts.push(Act::Judged {
            id: s.id.clone(),
            show_failed: show.and_then(|r| r.as_ref().err()).cloned(),
            undecided: e == Errored::Undecided,
        });
        errored.insert(s.id.clone(), e);
    }
    // A session that never ran, that a stale hook colours, or that sits
    // at its usage limit did not die: it is no part of a cascade.
    let died = errored.values().filter(|v| **v == Errored::Died).count();
    // A partial view would undercount: cascade episodes are judged on full ticks only.
    let full = obs.view.unreadable.is_empty();
    if full {
        let news = cascade::observe_cascade(st, lim, died, now);
        acts.push(Act::Cascade { news, died });
    }
    for s in &obs.critical {
        let look = Look {
            session: s,
            live: obs.live_of(s),
            errored: errored.get(&s.id).copied(),
            ending: endings.get(&s.id).map(String::as_str),
        };
        let decided = decide(st, ep, lim, now, look);
        let agent_gone = obs.gone.contains_key(&s.id);
        acts.push(Act::Verdict {
            session: s.clone(),
            decided,
            agent_gone,
        });
    }
    (acts, full.then_some(died))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::limits::tests::lim;
    use crate::decide::outcomes::RestartAction;
    use crate::decide::restart::gates::Hold;
    use crate::decide::stall::tests::LIM;
    use crate::decide::stall::{Stall, StallKind};
    use crate::decide::verdict::Verdict;
    use crate::fleet::fake::live;
    use crate::sys::clock::{Clock, FakeClock};

    const ID: &str = "3f9c2a1b-1755891234";
    const NOW: f64 = 1_755_900_000.0;

    fn sess() -> Session {
        Session {
            id: ID.into(),
            title: "conductor-ops".into(),
            profile: "default".into(),
            ..Session::default()
        }
    }

    fn at(status: Status, substate: &str) -> Live {
        Live {
            substate: (!substate.is_empty()).then(|| substate.into()),
            ..live(status).unwrap()
        }
    }

    /// One critical session read as `l` (`None`: its profile unreadable),
    /// stalls looked for.
    fn seen(l: Option<Live>) -> Observation {
        let mut view = LiveView::default();
        match l {
            Some(l) => _ = view.live.insert(ID.into(), l),
            None => _ = view.unreadable.insert("default".into()),
        }
        Observation {
            listed: true,
            critical: vec![sess()],
            stalls: true,
            view,
            ..Observation::default()
        }
    }

    fn answered(mut obs: Observation, read: Read, a: Answer) -> Observation {
        obs.answers.insert((ID.into(), read), a);
        obs
    }

    fn book(ran: bool, restarts: usize) -> State {
        let mut st = State::default();
        if ran {
            st.ran.insert(ID.into());
        }
        st.book(ID).restarts = vec![NOW - 1.0; restarts];
        st
    }

    fn verdict(plan: &Plan) -> Verdict {
        plan.verdicts().next().unwrap().1.verdict.clone()
    }

    /// A case, what the tick saw, the book, and whether the verdict is right.
    type Row = (&'static str, Observation, State, fn(&Verdict) -> bool);

    #[test]
    fn each_look_at_a_critical_session_gets_its_verdict() {
        let shown = |l: Option<Live>| Answer::Show(l.ok_or_else(|| "exited 1".to_owned()));
        let error = || seen(live(Status::Error));
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            ("healthy", seen(live(Status::Running)), book(true, 0), |v| *v == Verdict::Healthy),
            ("stopped", seen(live(Status::Stopped)), book(true, 0), |v| *v == Verdict::Stopped),
            ("other", seen(live(Status::Unknown)), book(true, 0),
             |v| *v == Verdict::Other(Status::Unknown)),
            ("unread", seen(None), book(true, 0), |v| *v == Verdict::Unread),
            ("undecided", answered(error(), Read::Show, shown(None)), book(false, 0),
             |v| *v == Verdict::Undecided),
            ("never started", answered(error(), Read::Show, shown(live(Status::Error))),
             book(false, 0), |v| *v == Verdict::Held { why: Hold::NeverStarted, new: true }),
            ("model unavailable", seen(Some(at(Status::Error, "model-unavailable"))),
             book(true, 0), |v| *v == Verdict::Held { why: Hold::ModelUnavailable, new: true }),
            ("budget spent", error(), book(true, 3), |v| *v == Verdict::BudgetSpent { new: true }),
            ("restart", error(), book(true, 0), |v| matches!(v, Verdict::Restart { .. })),
        ];
        for (case, obs, mut st, want) in table {
            let mut mem = FleetMemory::default();
            let plan = plan(&obs, &mut mem, &mut st, &lim(), NOW);
            let v = verdict(&plan);
            assert!(want(&v), "{case}: {v:?}");
            assert_eq!(plan.in_error, usize::from(v.in_error()), "{case}");
        }
    }

    #[test]
    fn an_unsaved_restart_is_finished_once_the_store_reads_and_only_then() {
        const UNSAVED: &str = "agentdeck_conductor-ops_5e6f7a8b";
        let names = |n: &[&str]| Some(n.iter().map(|s| s.to_string()).collect());
        // What the tick saw, when one was ended last, what tmux lists, what
        // agent-deck's rows name, whether it is ended.
        #[rustfmt::skip]
        let table = [
            ("store reads, error, listed, unknown", live(Status::Error), None, names(&[UNSAVED]), names(&[]), true),
            ("its list unreadable", None, None, names(&[UNSAVED]), names(&[]), false),
            ("reads healthy", live(Status::Running), None, names(&[UNSAVED]), names(&[]), false),
            ("gone from tmux", live(Status::Error), None, names(&[]), names(&[]), false),
            ("agent-deck knows it now", live(Status::Error), None, names(&[UNSAVED]), names(&[UNSAVED]), false),
            ("tmux never listed", live(Status::Error), None, None, names(&[]), false),
            ("one ended in this window", live(Status::Error), Some(NOW - 10.0), names(&[UNSAVED]), names(&[]), false),
        ];
        for (case, l, ended_at, listed, known, want) in table {
            let obs = seen(l);
            let mut st = book(true, 1);
            st.book(ID).unsaved = Some(UNSAVED.into());
            st.book(ID).unsaved_ended_at = ended_at;
            let mut mem = FleetMemory {
                tmux_listed: listed,
                tmux_known: known,
                ..FleetMemory::default()
            };
            let plan = plan(&obs, &mut mem, &mut st, &lim(), NOW);
            let v = verdict(&plan);
            let ending = Some(UNSAVED.to_owned());
            assert_eq!(
                matches!(v, Verdict::Restart { ending: ref e, .. } if *e == ending),
                want,
                "{case}: {v:?}"
            );
            if want {
                continue;
            }
            let held = matches!(
                v,
                Verdict::Held {
                    why: Hold::UnsavedAgent,
                    ..
                }
            );
            assert!(
                held || !v.in_error() || matches!(v, Verdict::Unread | Verdict::BudgetSpent { .. }),
                "{case}: {v:?}"
            );
        }
        // The window has passed since: ended again, however many restarts
        // the window holds.
        let mut st = book(true, 2);
        st.book(ID).unsaved_ended_at = Some(NOW - lim().rate_window);
        st.book(ID).unsaved = Some(UNSAVED.into());
        let mut mem = FleetMemory {
            tmux_listed: names(&[UNSAVED]),
            tmux_known: names(&[]),
            ..FleetMemory::default()
        };
        let plan = plan(&seen(live(Status::Error)), &mut mem, &mut st, &lim(), NOW);
        assert!(matches!(
            verdict(&plan),
            Verdict::Restart {
                ending: Some(_),
                ..
            }
        ));
    }

    #[test]
    fn a_show_that_failed_is_said_and_leaves_the_question_to_the_next_tick() {
        let obs = seen(live(Status::Error));
        let (mem, st) = (FleetMemory::default(), book(false, 0));
        assert_eq!(reads(&obs, &mem, &st, &lim(), NOW), [(sess(), Read::Show)]);
        let obs = answered(obs, Read::Show, Answer::Show(Err("exited 1".into())));
        assert!(reads(&obs, &mem, &st, &lim(), NOW).is_empty());
        let (mut mem, mut st) = (mem, st);
        let plan = plan(&obs, &mut mem, &mut st, &lim(), NOW);
        let judged = Act::Judged {
            id: ID.into(),
            show_failed: Some("exited 1".into()),
            undecided: true,
        };
        assert_eq!(plan.acts[0], judged);
        assert!(matches!(plan.acts[1], Act::Cascade { died: 0, .. }));
    }

    #[test]
    fn a_pane_watch_s_bare_shell_is_a_death_whose_restart_takes_it_out_of_the_stall_pass() {
        let waiting = at(Status::Waiting, "");
        let mut obs = seen(Some(waiting.clone()));
        let dead = Live {
            status: Some(Status::Error),
            ..waiting
        };
        obs.gone.insert(ID.into(), dead);
        obs.hooks.insert(ID.into(), HookSeen::default());
        let (mut mem, mut st) = (FleetMemory::default(), book(true, 0));
        // A turn that ended would have its pane read, but for the restart.
        st.book(ID).last_status = Some("running".into());
        assert!(reads(&obs, &mem, &st, &lim(), NOW).is_empty());
        let plan = plan(&obs, &mut mem, &mut st, &lim(), NOW);
        let Act::Verdict {
            agent_gone,
            decided,
            ..
        } = &plan.acts[2]
        else {
            panic!("{:?}", plan.acts);
        };
        assert!(*agent_gone && matches!(decided.verdict, Verdict::Restart { .. }));
        assert_eq!(plan.acts.len(), 3, "no stall look: {:?}", plan.acts);
    }

    fn stall(kind: StallKind, resume_at: f64, sent_at: Option<f64>) -> Stall {
        Stall {
            kind,
            evidence: "substate".into(),
            since: NOW - 600.0,
            resume_at,
            resume_from: "usage --json".into(),
            attempts: u32::from(sent_at.is_some()),
            sent_at,
            unresolved: false,
            remedy: None,
        }
    }

    /// The stall step of one session in scope.
    fn stall_step(obs: &Observation, st: &mut State) -> Option<StallStep> {
        let mut mem = FleetMemory::default();
        let plan = plan(obs, &mut mem, st, &lim(), NOW);
        plan.acts.into_iter().find_map(|a| match a {
            Act::Stall { step, .. } => step,
            _ => None,
        })
    }

    #[test]
    fn each_stall_takes_its_step_in_the_plan() {
        use StallKind::{ApiOverload, UsageLimit};
        let limited = || Some(at(Status::Idle, "usage-limit"));
        let banner = "⏺ API Error: 529 Overloaded\n❯ \n";
        let reset = Answer::Reset {
            at: NOW + 100.0,
            from: ResetFrom::UsageJson,
            warnings: Vec::new(),
        };
        let detected = |kind, evidence: &str, resume_at, from: &str| {
            let mut s = stall(kind, resume_at, None);
            (s.evidence, s.since, s.resume_from) = (evidence.into(), NOW, from.into());
            Some(StallStep::Transition(Transition::Detected(s)))
        };
        let ended =
            |s: Stall, ended| Some(StallStep::Transition(Transition::Ended { stall: s, ended }));
        let sent = stall(UsageLimit, NOW - 200.0, Some(NOW - 100.0));
        let mut failed = sent.clone();
        failed.failed(NOW + LIM.probe * 2.0, false);
        #[rustfmt::skip]
        let table: Vec<(&str, Observation, Option<Stall>, Option<StallStep>)> = vec![
            ("a usage limit seen", answered(seen(limited()), Read::Reset, reset),
             None, detected(UsageLimit, "substate", NOW + 100.0 + LIM.grace, "usage --json")),
            ("a turn that ended on a banner",
             answered(seen(Some(at(Status::Idle, ""))), Read::Pane, Answer::Pane(Ok(banner.into()))),
             None, detected(ApiOverload, "pane", NOW + LIM.dwell, "dwell")),
            ("not due yet", seen(limited()), Some(stall(UsageLimit, NOW + 1.0, None)), None),
            ("due", seen(limited()), Some(stall(UsageLimit, NOW, None)), Some(StallStep::Resume)),
            ("verified", seen(live(Status::Running)), Some(sent.clone()),
             ended(sent.clone(), RestartAction::ResumeVerified)),
            ("resumed by itself", seen(live(Status::Running)), Some(stall(UsageLimit, NOW, None)),
             ended(stall(UsageLimit, NOW, None), RestartAction::ResumedByItself)),
            ("failed", seen(limited()), Some(sent.clone()),
             Some(StallStep::Transition(Transition::Failed {
                 next: failed, why: "no new turn within 90s of the resume".into(), unresolved: false,
             }))),
            ("gone", seen(live(Status::Stopped)), Some(stall(UsageLimit, NOW, None)),
             Some(StallStep::Transition(Transition::Gone))),
        ];
        for (case, obs, kept, want) in table {
            let mut st = book(true, 0);
            st.book(ID).last_status = Some("running".into());
            st.book(ID).stall = kept;
            assert_eq!(stall_step(&obs, &mut st), want, "{case}");
        }
    }

    #[test]
    fn a_banner_s_stall_due_its_resume_looks_at_the_pane_first() {
        let mut st = book(true, 0);
        st.book(ID).stall = Some(stall(StallKind::ApiOverload, NOW, None));
        let obs = seen(Some(at(Status::Idle, "")));
        let mem = FleetMemory::default();
        assert_eq!(reads(&obs, &mem, &st, &lim(), NOW), [(sess(), Read::Pane)]);
        let gone = answered(
            seen(Some(at(Status::Idle, ""))),
            Read::Pane,
            Answer::Pane(Ok("❯".into())),
        );
        let want = Transition::Ended {
            stall: stall(StallKind::ApiOverload, NOW, None),
            ended: RestartAction::ResumedByItself,
        };
        assert_eq!(
            stall_step(&gone, &mut st.clone()),
            Some(StallStep::Transition(want))
        );
        let still = "⏺ API Error: 529 Overloaded\n❯ \n";
        let still = answered(obs, Read::Pane, Answer::Pane(Ok(still.into())));
        assert_eq!(stall_step(&still, &mut st), Some(StallStep::Resume));
    }

    #[test]
    fn restarts_go_before_resumes() {
        // A conductor that died, and another session whose resume is due.
        let other = Session {
            id: "a0b1c2d3-1755899999".into(),
            ..sess()
        };
        let mut obs = seen(live(Status::Error));
        obs.beyond.push(other.clone());
        obs.view
            .live
            .insert(other.id.clone(), at(Status::Idle, "usage-limit"));
        let mut st = book(true, 0);
        st.book(&other.id).stall = Some(stall(StallKind::UsageLimit, NOW, None));
        let mut mem = FleetMemory::default();
        let plan = plan(&obs, &mut mem, &mut st, &lim(), NOW);
        let ranks: Vec<u8> = plan.acts.iter().map(Act::rank).collect();
        assert_eq!(ranks, [0, 1, 2, 3]);
        assert!(matches!(&plan.acts[2], Act::Verdict { decided, .. }
            if matches!(decided.verdict, Verdict::Restart { .. })));
        assert!(matches!(
            &plan.acts[3],
            Act::Stall {
                step: Some(StallStep::Resume),
                ..
            }
        ));
        assert!(ranks.is_sorted(), "the plan's order is its acts' rank");
    }

    #[test]
    fn the_cascade_is_judged_on_a_full_view_only() {
        let clock = FakeClock::at(NOW);
        let mut obs = seen(live(Status::Error));
        let (mut mem, mut st) = (FleetMemory::default(), book(true, 0));
        obs.view.unreadable.insert("other".into());
        let plan = plan(&obs, &mut mem, &mut st, &lim(), clock.now());
        assert!(!plan.acts.iter().any(|a| matches!(a, Act::Cascade { .. })));
        assert_eq!(mem.last_died, 0, "not counted on a partial view");
        obs.view.unreadable.clear();
        let mut st = book(true, 0);
        let _ = super::plan(&obs, &mut mem, &mut st, &lim(), clock.now());
        assert_eq!(mem.last_died, 1);
    }

    /// The conductor `conductor-ops` (group `conductor`, Claude), read
    /// `running` at an empty prompt, as 1.14.0 reads a full context.
    fn full_seen() -> Observation {
        let mut obs = seen(Some(at(Status::Running, "idle-at-empty-prompt")));
        obs.critical[0].group = "conductor".into();
        obs.critical[0].tool = "claude".into();
        obs
    }

    const FULL_PANE: &str =
        "❯ Check the fleet\n⏺ Reading.\n  ⎿  Prompt is too long\n❯ \n  ? for shortcuts\n";

    #[test]
    fn a_full_context_is_seen_by_its_pane_then_its_last_message_then_its_policy() {
        let (mem, st) = (FleetMemory::default(), book(true, 0));
        let mut obs = full_seen();
        let next = |obs: &Observation| reads(obs, &mem, &st, &lim(), NOW);
        assert_eq!(next(&obs), [(obs.critical[0].clone(), Read::Pane)]);
        obs.answers
            .insert((ID.into(), Read::Pane), Answer::Pane(Ok(FULL_PANE.into())));
        assert_eq!(next(&obs)[0].1, Read::Output);
        let said = Answer::Output(Ok("Prompt is too long\n".into()));
        obs.answers.insert((ID.into(), Read::Output), said);
        assert_eq!(next(&obs)[0].1, Read::Policy);
        obs.answers
            .insert((ID.into(), Read::Policy), Answer::Policy(false));
        assert!(next(&obs).is_empty());
        let (mut mem, mut st) = (mem, st);
        let plan = plan(&obs, &mut mem, &mut st, &lim(), NOW);
        let Some(Act::Stall {
            step: Some(StallStep::Transition(Transition::Detected(s))),
            ..
        }) = plan.acts.last()
        else {
            panic!("{:?}", plan.acts);
        };
        assert_eq!(s.kind, StallKind::ContextExhausted);
        assert_eq!(s.evidence, "pane and last message: Prompt is too long");
        let r = s.remedy.as_ref().unwrap();
        assert!(!r.clear && !r.compaction_failed && r.command_at.is_none());
        // Seen once: the next tick reads nothing more of it.
        assert!(reads(&full_seen(), &mem, &st, &lim(), NOW + 1.0)
            .iter()
            .all(|(_, r)| *r != Read::Output));
    }

    #[test]
    fn a_message_that_disagrees_is_no_full_context_and_a_pane_alone_takes_two_looks() {
        let mut obs = full_seen();
        obs.answers
            .insert((ID.into(), Read::Pane), Answer::Pane(Ok(FULL_PANE.into())));
        let answered = |obs: &Observation, out: Answer| {
            let mut obs = Observation {
                answers: obs.answers.clone(),
                ..full_seen()
            };
            obs.answers.insert((ID.into(), Read::Output), out);
            obs.answers
                .insert((ID.into(), Read::Policy), Answer::Policy(true));
            obs
        };
        let prose = answered(
            &obs,
            Answer::Output(Ok("The prompt is too long, so I split it.".into())),
        );
        let (mut mem, mut st) = (FleetMemory::default(), book(true, 0));
        assert_eq!(stall_step(&prose, &mut st), None);
        let unread = answered(&obs, Answer::Output(Err("exited 1".into())));
        let detected = |mem: &mut FleetMemory, st: &mut State, now| {
            let plan = plan(&unread, mem, st, &lim(), now);
            plan.acts.iter().any(|a| {
                matches!(
                    a,
                    Act::Stall {
                        step: Some(StallStep::Transition(Transition::Detected(_))),
                        ..
                    }
                )
            })
        };
        assert!(
            !detected(&mut mem, &mut st, NOW),
            "one look at the pane alone"
        );
        assert!(mem.full_pane.contains_key(ID), "a second look is owed");
        assert!(!detected(&mut mem, &mut st, NOW + 29.0));
        assert!(
            detected(&mut mem, &mut st, NOW + 30.0),
            "two looks 30 s apart"
        );
    }

    #[test]
    fn a_turn_read_running_at_an_empty_prompt_ends_when_it_reads_waiting() {
        // 1.14.0 reads a turn so while the hook says running and the pane
        // shows the prompt; the banner it ended on shows once it is waiting.
        let (mut mem, mut st) = (FleetMemory::default(), book(true, 0));
        let running_idle = seen(Some(at(Status::Running, "idle-at-empty-prompt")));
        plan(&running_idle, &mut mem, &mut st, &lim(), NOW);
        assert!(mem.running_idle.contains(ID));
        let again = reads(&running_idle, &mem, &st, &lim(), NOW + 1.0);
        assert!(again.is_empty(), "no new end: {again:?}");
        let waiting = seen(Some(at(Status::Waiting, "")));
        assert_eq!(
            reads(&waiting, &mem, &st, &lim(), NOW + 2.0),
            [(sess(), Read::Pane)]
        );
    }

    #[test]
    fn what_the_turn_ends_remember_is_only_of_the_sessions_in_scope() {
        let (mut mem, mut st) = (FleetMemory::default(), book(true, 0));
        mem.looked.insert("gone-1755890000".into());
        plan(&seen(live(Status::Idle)), &mut mem, &mut st, &lim(), NOW);
        assert_eq!(mem.looked, [ID.to_owned()].into(), "memory stays flat");
    }
}
