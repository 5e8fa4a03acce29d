//! Where one batch of triggers goes, pure: a full tick, the check of one
//! dead pane, the status checks of some sessions, or nothing. The cascade
//! arithmetic of SPEC §5.3's short path is here too: a death the kernel
//! proved skips the poll only while it cannot make a cascade.
//!
//! At most one full tick runs per batch: a tick reads every status, so the
//! hooks of a batch that ticks need no checks of their own. Several panes
//! dead at once (a tmux server died) go straight to a tick, which sees the
//! cascade before any restart starts.

use crate::fleet::panes::Proof;
use crate::triggers::event_queue::Batch;

/// What the main loop does with a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// A full tick. `first`: a single death the kernel proved, decided on
    /// its own before the tick, so it keeps its short path when a tick is
    /// due with it (the watch losing that session makes the ticker's next
    /// tick due at once).
    Tick { first: Option<Death> },
    /// Several panes died at once: a tick, after saying which.
    PanesDied(Vec<String>),
    /// Status checks: the one dead pane first (`death`), then each id with
    /// whether it is a check coming back (a deferred hook, a retry after a
    /// freshness refusal). The first check that finds its session in error
    /// ends the batch with a tick.
    Check {
        death: Option<Death>,
        checks: Vec<(String, bool)>,
    },
    /// Nothing to do: nothing changed that is worth saving.
    Idle,
}

/// One dead pane, and what its death in `error` leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Death {
    pub id: String,
    pub proof: Proof,
    pub path: DeathPath,
}

/// What a dead pane that agent-deck reads in `error` leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeathPath {
    /// The kernel proved it and it cannot make a cascade: decided alone,
    /// with no full tick.
    Short,
    /// The kernel proved it, but with the `dead` critical sessions already
    /// known dead it could make a cascade (or an episode is under way):
    /// the fleet is polled for the cascade check.
    CascadeCheck { dead: usize },
    /// Only a listing saw it go: the fleet is polled.
    Poll,
}

/// What routing knows of the fleet's deaths.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Deaths {
    /// A cascade episode is under way.
    pub episode: bool,
    /// Critical sessions dead at the last full tick.
    pub last_died: usize,
    /// Restarts queued or running.
    pub in_flight: usize,
    pub threshold: usize,
}

/// Routes `batch`. `tick`: a tick is due (the ticker asked, an owed rescan
/// may run, or a cascade's revive is owed now); `due`: deferred hook checks
/// whose gap has passed; `retries`: retries after a freshness refusal.
pub(crate) fn route(
    batch: &Batch,
    tick: bool,
    due: &[String],
    retries: &[String],
    deaths: Deaths,
) -> Route {
    let death = |(id, proof): (&String, &Proof)| Death {
        id: id.clone(),
        proof: *proof,
        path: death_path(*proof, deaths),
    };
    if tick {
        let one = batch.panes.iter().next().filter(|_| batch.panes.len() == 1);
        let first = one.filter(|(_, p)| **p == Proof::ProcessExited).map(death);
        return Route::Tick { first };
    }
    if batch.panes.len() > 1 {
        return Route::PanesDied(batch.panes.keys().cloned().collect());
    }
    let hooks = batch.hooks.iter().map(|id| (id.clone(), false));
    let later = due.iter().chain(retries).map(|id| (id.clone(), true));
    let checks: Vec<(String, bool)> = hooks.chain(later).collect();
    let death = batch.panes.iter().next().map(death);
    if death.is_none() && checks.is_empty() {
        return Route::Idle;
    }
    Route::Check { death, checks }
}

/// The cascade arithmetic: the dead already known (the last full tick's, or
/// the restarts queued since, whichever is more) plus this one.
fn death_path(proof: Proof, d: Deaths) -> DeathPath {
    if proof != Proof::ProcessExited {
        return DeathPath::Poll;
    }
    let dead = d.last_died.max(d.in_flight);
    if d.episode || dead + 1 >= d.threshold {
        DeathPath::CascadeCheck { dead }
    } else {
        DeathPath::Short
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALM: Deaths = Deaths {
        episode: false,
        last_died: 0,
        in_flight: 0,
        threshold: 3,
    };

    fn batch(hooks: &[&str], panes: &[(&str, Proof)]) -> Batch {
        Batch {
            hooks: hooks.iter().map(|h| h.to_string()).collect(),
            panes: panes.iter().map(|(id, p)| (id.to_string(), *p)).collect(),
            ..Batch::default()
        }
    }

    fn death(id: &str, proof: Proof, path: DeathPath) -> Option<Death> {
        let id = id.to_owned();
        Some(Death { id, proof, path })
    }

    /// A batch, whether a tick is due, the due checks, the retries, and the route.
    type Row = (
        Batch,
        bool,
        &'static [&'static str],
        &'static [&'static str],
        Route,
    );

    #[test]
    fn each_batch_goes_one_way() {
        use DeathPath::*;
        use Proof::{GoneFromListing as Listed, ProcessExited as Exited};
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let check = |v: &[(&str, bool)]| v.iter().map(|(x, r)| (x.to_string(), *r)).collect();
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            (batch(&[], &[]), false, &[], &[], Route::Idle),
            (batch(&[], &[]), true, &[], &[], Route::Tick { first: None }),
            (batch(&["a"], &[]), true, &["b"], &[], Route::Tick { first: None }),
            (batch(&[], &[("a", Exited)]), true, &[], &[],
             Route::Tick { first: death("a", Exited, Short) }),
            (batch(&[], &[("a", Listed)]), true, &[], &[], Route::Tick { first: None }),
            (batch(&[], &[("a", Exited), ("b", Exited)]), true, &[], &[],
             Route::Tick { first: None }),
            (batch(&["h"], &[("a", Exited), ("b", Listed)]), false, &[], &[],
             Route::PanesDied(s(&["a", "b"]))),
            (batch(&[], &[("a", Exited)]), false, &[], &[],
             Route::Check { death: death("a", Exited, Short), checks: vec![] }),
            (batch(&["h"], &[("a", Listed)]), false, &[], &[],
             Route::Check { death: death("a", Listed, Poll), checks: check(&[("h", false)]) }),
            (batch(&["h"], &[]), false, &["d"], &["r"],
             Route::Check { death: None, checks: check(&[("h", false), ("d", true), ("r", true)]) }),
            (batch(&[], &[]), false, &[], &["r"],
             Route::Check { death: None, checks: check(&[("r", true)]) }),
        ];
        for (i, (b, tick, due, retries, want)) in table.into_iter().enumerate() {
            let (due, retries) = (s(due), s(retries));
            assert_eq!(route(&b, tick, &due, &retries, CALM), want, "row {i}");
        }
    }

    #[test]
    fn a_proven_death_polls_when_it_could_make_a_cascade() {
        let one = batch(&[], &[("a", Proof::ProcessExited)]);
        let path = |d: Deaths| match route(&one, false, &[], &[], d) {
            Route::Check {
                death: Some(death), ..
            } => death.path,
            other => panic!("{other:?}"),
        };
        assert_eq!(path(CALM), DeathPath::Short);
        let known = |last_died, in_flight| Deaths {
            last_died,
            in_flight,
            ..CALM
        };
        assert_eq!(path(known(1, 0)), DeathPath::Short);
        assert_eq!(path(known(2, 0)), DeathPath::CascadeCheck { dead: 2 });
        assert_eq!(path(known(0, 2)), DeathPath::CascadeCheck { dead: 2 });
        assert_eq!(path(known(1, 2)), DeathPath::CascadeCheck { dead: 2 });
        let episode = Deaths {
            episode: true,
            ..CALM
        };
        assert_eq!(path(episode), DeathPath::CascadeCheck { dead: 0 });
    }
}
