//! Tests of the pane watch's rounds with a scripted listing and a fake
//! kernel: no tmux, no pidfd, no sleeping.

use std::collections::VecDeque;

use parking_lot::Mutex;

use super::*;
use crate::fleet::panes::ListedPane;
use crate::triggers::event_queue::Batch;

const SERVER: u32 = 900;

/// Listings handed out in order; the last one repeats.
#[derive(Clone, Default)]
struct Script(Arc<Mutex<VecDeque<Result<Listing, ListError>>>>);

impl Script {
    fn push(&self, l: Result<Listing, ListError>) {
        self.0.lock().push_back(l);
    }
}

impl PaneSource for Script {
    fn list(&self) -> Result<Listing, ListError> {
        let mut q = self.0.lock();
        if q.len() > 1 {
            q.pop_front().unwrap()
        } else {
            q.front().cloned().unwrap_or(Err(ListError::NoServer))
        }
    }
}

#[derive(Default)]
struct FakeKernel {
    armed: BTreeSet<u32>,
    unsupported: bool,
}

impl Kernel for FakeKernel {
    fn arm(&mut self, pid: u32) -> Result<(), ArmError> {
        if self.unsupported {
            return Err(ArmError::Unsupported("no pidfd here".into()));
        }
        self.armed.insert(pid);
        Ok(())
    }
    fn disarm(&mut self, pid: u32) {
        self.armed.remove(&pid);
    }
    fn wait(&mut self, _: Duration) -> Woken {
        Woken::TimedOut
    }
}

/// Every pane's parent is the server, but pid 666's.
fn parent(pid: u32) -> Option<u32> {
    (pid != 666).then_some(SERVER)
}

fn listing(panes: &[(&str, u32, bool)]) -> Listing {
    Listing {
        server: (!panes.is_empty()).then_some(SERVER),
        panes: panes
            .iter()
            .map(|(n, pid, dead)| {
                let p = ListedPane {
                    window: 0,
                    pane: 0,
                    pid: *pid,
                    dead: *dead,
                };
                (n.to_string(), p)
            })
            .collect(),
    }
}

struct Fixture {
    watch: PaneWatch<Script, FakeKernel>,
    script: Script,
    share: Arc<PaneShare>,
    queue: Arc<EventQueue>,
}

/// A watch over critical `a` (tmux `agentdeck_a_1`) and `b` (`agentdeck_b_2`).
fn fixture() -> Fixture {
    let script = Script::default();
    let share = Arc::new(PaneShare::new("starting"));
    let queue = Arc::new(EventQueue::new(100));
    let critical: BTreeMap<String, String> = [("a", "agentdeck_a_1"), ("b", "agentdeck_b_2")]
        .iter()
        .map(|(i, n)| (i.to_string(), n.to_string()))
        .collect();
    let known = critical.values().cloned().collect();
    share.hand_over(PaneMap {
        critical,
        known,
        ..PaneMap::default()
    });
    let watch = PaneWatch::new(
        script.clone(),
        FakeKernel::default(),
        parent,
        share.clone(),
        queue.clone(),
    );
    Fixture {
        watch,
        script,
        share,
        queue,
    }
}

impl Fixture {
    fn round(&mut self) -> Round {
        self.watch.round().expect("no fatal error")
    }

    fn batch(&self) -> Batch {
        let s = Shutdown::new().unwrap();
        self.queue.next_batch(&s, Duration::ZERO).unwrap()
    }

    fn covered(&self) -> BTreeMap<String, u32> {
        let c = self.watch.covered.iter();
        c.map(|(id, c)| (id.clone(), c.pid)).collect()
    }

    /// Both sessions covered on pids 10 and 20.
    fn armed_on_both(&mut self) {
        self.script.push(Ok(listing(&[
            ("agentdeck_a_1", 10, false),
            ("agentdeck_b_2", 20, false),
        ])));
        self.round();
        assert_eq!(self.covered(), [("a".into(), 10), ("b".into(), 20)].into());
        assert!(self.share.status().armed);
        assert!(self.watch.kernel.armed.contains(&SERVER));
        let _ = self.batch();
        self.script.0.lock().clear();
    }
}

#[test]
fn every_critical_pane_on_the_server_is_armed_and_the_watch_says_so() {
    let mut f = fixture();
    f.armed_on_both();
    let st = f.share.status();
    assert_eq!((st.armed, st.covered, st.why_not), (true, 2, None));
}

#[test]
fn a_pid_whose_parent_is_not_the_server_is_not_armed() {
    let mut f = fixture();
    f.script.push(Ok(listing(&[
        ("agentdeck_a_1", 666, false),
        ("agentdeck_b_2", 20, false),
    ])));
    f.round();
    assert_eq!(f.covered(), [("b".into(), 20)].into());
    assert!(!f.watch.kernel.armed.contains(&666), "its handle is closed");
    let st = f.share.status();
    assert!(!st.armed && st.covered == 1);
    assert!(st.why_not.unwrap().contains("1 of 2"));
}

#[test]
fn a_pid_gone_between_the_two_listings_is_not_armed() {
    let mut f = fixture();
    let both = listing(&[("agentdeck_a_1", 10, false), ("agentdeck_b_2", 20, false)]);
    f.script.push(Ok(both));
    // The second listing: a's pane now holds another pid, b's is dead.
    f.script.push(Ok(listing(&[
        ("agentdeck_a_1", 11, false),
        ("agentdeck_b_2", 20, true),
    ])));
    f.round();
    assert!(f.covered().is_empty(), "{:?}", f.covered());
    assert!(!f.share.status().armed);
    assert!(f.batch().panes.is_empty(), "never covered: no death");
}

#[test]
fn a_respawn_under_the_same_name_is_re_armed_without_an_event() {
    let mut f = fixture();
    f.armed_on_both();
    f.watch.exited.insert(10);
    f.script.push(Ok(listing(&[
        ("agentdeck_a_1", 11, false),
        ("agentdeck_b_2", 20, false),
    ])));
    f.round();
    assert_eq!(f.covered(), [("a".into(), 11), ("b".into(), 20)].into());
    assert!(f.watch.kernel.armed.contains(&11) && !f.watch.kernel.armed.contains(&10));
    let news = Batch {
        bare: None,
        listed: None,
        ..f.batch()
    };
    assert_eq!(news, Batch::default(), "a respawn is no death");
    assert!(f.share.status().armed);
}

#[test]
fn a_covered_name_gone_from_the_listing_without_any_exit_is_a_death() {
    let mut f = fixture();
    f.armed_on_both();
    f.script.push(Ok(listing(&[("agentdeck_b_2", 20, false)])));
    f.round();
    let b = f.batch();
    assert_eq!(b.panes, [("a".into(), Proof::GoneFromListing)].into());
    assert!(!f.share.status().armed, "a is no longer covered");
    f.round();
    assert!(f.batch().panes.is_empty(), "told once");
}

#[test]
fn a_dead_pane_with_an_exit_is_proven_by_the_kernel() {
    let mut f = fixture();
    f.armed_on_both();
    f.watch.exited.insert(20);
    f.script.push(Ok(listing(&[
        ("agentdeck_a_1", 10, false),
        ("agentdeck_b_2", 20, true),
    ])));
    f.round();
    assert_eq!(f.batch().panes, [("b".into(), Proof::ProcessExited)].into());
}

#[test]
fn a_kill_server_is_one_message_for_all_its_sessions() {
    let mut f = fixture();
    f.armed_on_both();
    f.watch.exited.extend([10, 20, SERVER]);
    f.script.push(Err(ListError::NoServer));
    f.round();
    let n = f.queue.len();
    let b = f.batch();
    assert_eq!(n, 1, "one message");
    let want = [
        ("a".into(), Proof::ProcessExited),
        ("b".into(), Proof::ProcessExited),
    ];
    assert_eq!(b.panes, want.into());
    let st = f.share.status();
    assert!(!st.armed && st.why_not.unwrap().contains("no tmux server"));
}

#[test]
fn an_exit_tmux_has_not_reaped_yet_keeps_its_proof_for_the_next_round() {
    let mut f = fixture();
    f.armed_on_both();
    f.watch.exited.insert(10);
    f.script.push(Ok(listing(&[
        ("agentdeck_a_1", 10, false),
        ("agentdeck_b_2", 20, false),
    ])));
    let round = f.round();
    assert!(round.unreaped && f.batch().panes.is_empty());
    f.script.0.lock().clear();
    f.script.push(Ok(listing(&[("agentdeck_b_2", 20, false)])));
    f.round();
    assert_eq!(f.batch().panes, [("a".into(), Proof::ProcessExited)].into());
}

#[test]
fn a_critical_session_not_on_the_server_is_not_covered_and_not_dead() {
    let mut f = fixture();
    f.script.push(Ok(listing(&[("agentdeck_a_1", 10, false)])));
    f.round();
    f.round();
    assert_eq!(f.covered(), [("a".into(), 10)].into());
    assert!(f.batch().panes.is_empty());
    assert!(!f.share.status().armed);
}

#[test]
fn a_new_tmux_name_from_the_tick_re_maps_without_an_event() {
    let mut f = fixture();
    f.armed_on_both();
    let critical = [("a", "agentdeck_a_9"), ("b", "agentdeck_b_2")]
        .iter()
        .map(|(i, n)| (i.to_string(), n.to_string()))
        .collect::<BTreeMap<_, _>>();
    let known = critical.values().cloned().collect();
    f.share.hand_over(PaneMap {
        critical,
        known,
        ..PaneMap::default()
    });
    f.script.push(Ok(listing(&[
        ("agentdeck_a_9", 30, false),
        ("agentdeck_b_2", 20, false),
    ])));
    f.round();
    assert_eq!(f.covered(), [("a".into(), 30), ("b".into(), 20)].into());
    assert!(f.batch().panes.is_empty());
}

#[test]
fn an_agent_deck_name_no_row_carried_asks_for_one_fleet_look() {
    let mut f = fixture();
    f.script.push(Ok(listing(&[
        ("agentdeck_a_1", 10, false),
        ("agentdeck_new_3", 40, false),
        ("my-own-shell", 50, false),
    ])));
    f.round();
    assert!(f.batch().rescan);
    f.round();
    assert!(!f.batch().rescan, "asked once per name");
}

#[test]
fn a_new_name_during_our_restart_waits_for_its_ending_before_a_fleet_look() {
    let mut f = fixture();
    let renamed = || {
        Ok(listing(&[
            ("agentdeck_a_9", 11, false),
            ("agentdeck_b_2", 20, false),
        ]))
    };
    let before = f.share.map().unwrap();
    f.share.restart_queued("a");
    f.script.push(renamed());
    f.round();
    assert!(!f.batch().rescan, "the restart's ending names it");
    // The main loop took the ending: the new name, no restart under way.
    let mut map = before.clone();
    map.critical.insert("a".into(), "agentdeck_a_9".into());
    map.known.insert("agentdeck_a_9".into());
    f.share.hand_over(map.clone());
    f.script.push(renamed());
    f.round();
    assert!(!f.batch().rescan, "handed over: known");
    f.share.restart_queued("b");
    f.script
        .push(Ok(listing(&[("agentdeck_new_3", 40, false)])));
    f.round();
    f.share.hand_over(map);
    f.script
        .push(Ok(listing(&[("agentdeck_new_3", 40, false)])));
    f.round();
    assert!(f.batch().rescan, "still unknown once the restart is over");
}

#[test]
fn no_map_yet_is_waited_for() {
    let share = Arc::new(PaneShare::new("starting"));
    let queue = Arc::new(EventQueue::new(10));
    let script = Script::default();
    script.push(Ok(listing(&[("agentdeck_a_1", 10, false)])));
    let mut w = PaneWatch::new(script, FakeKernel::default(), parent, share.clone(), queue);
    assert!(w.round().unwrap().no_map);
    assert!(share
        .status()
        .why_not
        .unwrap()
        .contains("first safety poll"));
}

#[test]
fn a_kernel_without_pidfd_ends_the_watch_and_says_why() {
    let mut f = fixture();
    f.watch.kernel.unsupported = true;
    f.script.push(Ok(listing(&[("agentdeck_a_1", 10, false)])));
    let shutdown = Shutdown::new().unwrap();
    f.watch.run(Duration::from_secs(3600), &shutdown);
    let st = f.share.status();
    assert_eq!((st.armed, st.covered), (false, 0));
    assert_eq!(st.why_not.as_deref(), Some("no pidfd here"));
}

#[test]
fn no_tmux_is_said_and_nothing_is_dead() {
    let mut f = fixture();
    f.script
        .push(Err(ListError::NoTmux("No such file or directory".into())));
    f.round();
    assert!(f.batch().panes.is_empty());
    assert!(f
        .share
        .status()
        .why_not
        .unwrap()
        .contains("tmux cannot be run"));
}

#[test]
fn a_pane_that_stays_a_bare_shell_for_the_patience_is_sent_up_and_asks_once_for_a_look() {
    let mut f = fixture();
    f.watch.bare_shell = |pid| pid == 10;
    f.watch.patience = Duration::from_secs(3600);
    f.armed_on_both();
    assert!(
        f.watch.told.is_empty(),
        "a pane agent-deck just spawned is a shell for a moment"
    );
    f.watch.patience = Duration::ZERO;
    let both = listing(&[("agentdeck_a_1", 10, false), ("agentdeck_b_2", 20, false)]);
    f.script.push(Ok(both.clone()));
    f.round();
    let asked = f.batch();
    assert_eq!(asked.bare, Some(["a".to_owned()].into()));
    assert!(asked.rescan && asked.panes.is_empty(), "{asked:?}");
    // The main loop took it, and hands it back down.
    let mut map = f.share.map().unwrap();
    map.bare.insert("a".into());
    f.share.hand_over(map.clone());
    f.round();
    let again = f.batch();
    assert_eq!(again.bare.map(|b| b.len()), Some(1));
    assert!(!again.rescan, "asked once");
    // Its restart went out: the main loop no longer holds it bare.
    map.bare.clear();
    f.share.hand_over(map);
    f.round();
    assert!(
        f.batch().rescan,
        "still bare after a restart was queued: asked again"
    );
    // Its agent runs again in a new pane.
    f.script.0.lock().clear();
    f.script.push(Ok(listing(&[
        ("agentdeck_a_1", 11, false),
        ("agentdeck_b_2", 20, false),
    ])));
    f.round();
    assert_eq!(f.batch().bare, Some(BTreeSet::new()));
}

#[test]
fn each_round_sends_its_listing_up_and_no_server_lists_nothing() {
    let mut f = fixture();
    f.armed_on_both();
    f.script.push(Ok(listing(&[("agentdeck_b_2", 20, false)])));
    f.round();
    assert_eq!(f.batch().listed, Some(["agentdeck_b_2".to_owned()].into()));
    f.script.0.lock().clear();
    f.script.push(Err(ListError::NoServer));
    f.round();
    assert_eq!(f.batch().listed, Some(BTreeSet::new()));
}
