//! What the safety tick and the pane watch share ([`PaneShare`]): the map
//! of critical sessions to tmux names the tick hands over ([`PaneMap`]),
//! what the watch covers ([`WatchStatus`]), which the ticker follows, the
//! critical sessions whose pane is a bare shell, and the restarts of ours
//! under way.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

/// What the safety tick last learned: each critical session's tmux name,
/// and every tmux name a list row carried (so a name that is no session of
/// a listed profile can be told apart).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PaneMap {
    /// By critical session id.
    pub critical: BTreeMap<String, String>,
    pub known: BTreeSet<String>,
}

/// What the watch covers now, for the ticker, `status` and the metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub(crate) struct WatchStatus {
    /// Every critical session is covered (and there is at least one).
    pub armed: bool,
    /// Critical sessions whose pane process is watched.
    pub covered: usize,
    /// Why it is not armed, when it is not.
    pub why_not: Option<String>,
}

impl WatchStatus {
    pub(super) fn not_armed(why: &str) -> WatchStatus {
        WatchStatus {
            why_not: Some(why.to_owned()),
            ..WatchStatus::default()
        }
    }
}

/// Shared between the safety tick (which hands over the map), the watch
/// thread (which publishes its status) and the ticker (which follows it).
/// Never held across a call. A new map is taken at the watch's next round
/// (at most `PANE_LIST_INTERVAL_S` later): names change only by restarts,
/// which the listing sees as well.
pub(crate) struct PaneShare {
    inner: Mutex<Shared>,
    /// Restarts of ours under way, whose new tmux name the verifying
    /// `session show` is about to hand over ([`Self::rename`]).
    restarting: AtomicUsize,
    /// One wake-up of the ticker when `armed` changed.
    armed_tx: Sender<()>,
    armed_rx: Receiver<()>,
}

/// The map and the status, under one lock.
struct Shared {
    map: Option<PaneMap>,
    status: WatchStatus,
    /// The critical sessions whose pane the watch found a bare shell
    /// (SPEC §14): their agent is gone.
    bare: BTreeSet<String>,
    /// Every tmux session name the watch's last listing showed; `None`
    /// before one was read.
    listed: Option<BTreeSet<String>>,
}

impl PaneShare {
    pub(crate) fn new(why_not: &str) -> PaneShare {
        let (armed_tx, armed_rx) = crossbeam_channel::bounded(1);
        PaneShare {
            inner: Mutex::new(Shared {
                map: None,
                status: WatchStatus::not_armed(why_not),
                bare: BTreeSet::new(),
                listed: None,
            }),
            restarting: AtomicUsize::new(0),
            armed_tx,
            armed_rx,
        }
    }

    /// The safety tick's map.
    pub(crate) fn hand_over(&self, map: PaneMap) {
        self.inner.lock().map = Some(map);
    }

    /// The tmux name of critical session `id` is now `name` (read after a
    /// restart); true when that changed the map. Nothing before the first
    /// tick, nor for a session the map does not hold.
    pub(crate) fn rename(&self, id: &str, name: &str) -> bool {
        let mut inner = self.inner.lock();
        let Some(map) = inner.map.as_mut() else {
            return false;
        };
        match map.critical.get_mut(id) {
            Some(old) if old != name => {
                *old = name.to_owned();
                map.known.insert(name.to_owned());
                true
            }
            _ => false,
        }
    }

    /// Marks a restart of ours under way until the guard drops: a new
    /// `agentdeck_*` name seen meanwhile is most likely the one it gives,
    /// which its verifying show hands over, so the watch asks the fleet
    /// about it only if it is still unknown after that.
    pub(crate) fn restarting(&self) -> Restarting<'_> {
        self.restarting.fetch_add(1, Ordering::SeqCst);
        Restarting(self)
    }

    pub(super) fn restart_under_way(&self) -> bool {
        self.restarting.load(Ordering::SeqCst) > 0
    }

    /// The critical sessions whose pane is a bare shell, as the watch's
    /// last round found them.
    pub(crate) fn bare(&self) -> BTreeSet<String> {
        self.inner.lock().bare.clone()
    }

    /// The watch's round found these panes bare shells.
    pub(crate) fn set_bare(&self, bare: BTreeSet<String>) {
        self.inner.lock().bare = bare;
    }

    /// The tmux session names the watch's last listing showed, if it read one.
    pub(crate) fn listed(&self) -> Option<BTreeSet<String>> {
        self.inner.lock().listed.clone()
    }

    /// The watch's round listed these names.
    pub(crate) fn set_listed(&self, names: BTreeSet<String>) {
        self.inner.lock().listed = Some(names);
    }

    /// A restart of `id` is under way: its old pane's shell is no proof
    /// about the new one, until the watch's next round looks again.
    pub(crate) fn forget_bare(&self, id: &str) {
        self.inner.lock().bare.remove(id);
    }

    /// The map last handed over; `None` before the first tick.
    pub(crate) fn map(&self) -> Option<PaneMap> {
        self.inner.lock().map.clone()
    }

    pub(crate) fn status(&self) -> WatchStatus {
        self.inner.lock().status.clone()
    }

    pub(crate) fn armed(&self) -> bool {
        self.inner.lock().status.armed
    }

    pub(super) fn publish(&self, status: WatchStatus) {
        let mut inner = self.inner.lock();
        let flipped = inner.status.armed != status.armed;
        inner.status = status;
        if flipped {
            let _ = self.armed_tx.try_send(());
        }
    }

    /// The watch cannot work here at all (no pidfd, no kqueue): said, and
    /// published for the ticker and `status`.
    pub(super) fn turn_off(&self, why: &str) {
        log::warn!(
            "pane watch off: {why}; deaths are seen by hooks and the safety poll as without it"
        );
        self.publish(WatchStatus::not_armed(why));
    }

    /// Sets what the watch covers, as a round would.
    #[cfg(test)]
    pub(crate) fn set_armed(&self, armed: bool) {
        let covered = usize::from(armed);
        self.publish(WatchStatus {
            armed,
            covered,
            why_not: None,
        });
    }

    /// Turns ready when `armed` may have changed; for the ticker.
    pub(crate) fn armed_changes(&self) -> &Receiver<()> {
        &self.armed_rx
    }
}

/// A restart of ours under way; see [`PaneShare::restarting`].
pub(crate) struct Restarting<'a>(&'a PaneShare);

impl Drop for Restarting<'_> {
    fn drop(&mut self) {
        self.0.restarting.fetch_sub(1, Ordering::SeqCst);
    }
}
