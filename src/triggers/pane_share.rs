//! What the main loop hands down and the pane watch publishes
//! ([`PaneShare`]): the map of critical sessions to tmux names the main
//! loop hands over ([`PaneMap`]), which only it writes and the watch and
//! the restart worker read, and what the watch covers ([`WatchStatus`]),
//! which only the watch writes and the ticker follows. What the watch finds
//! goes up the queue ([`crate::triggers::event_queue`]), never here.

use std::collections::{BTreeMap, BTreeSet};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

/// What the main loop last knew: each critical session's tmux name, every
/// tmux name a list row carried (so a name that is no session of a listed
/// profile can be told apart), the critical sessions whose pane it holds a
/// bare shell, and those with a job of ours under way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PaneMap {
    /// By critical session id.
    pub critical: BTreeMap<String, String>,
    pub known: BTreeSet<String>,
    /// As the watch last said (SPEC §14), less those restarted since.
    pub bare: BTreeSet<String>,
    /// A new `agentdeck_*` name seen meanwhile is most likely the one such
    /// a restart gives, which comes back with its ending.
    pub restarting: BTreeSet<String>,
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

/// The main loop's map and the watch's status, each written by one thread.
/// Never held across a call. A new map is taken at the watch's next round
/// (at most `PANE_LIST_INTERVAL_S` later).
pub(crate) struct PaneShare {
    inner: Mutex<Shared>,
    /// One wake-up of the ticker when `armed` changed.
    armed_tx: Sender<()>,
    armed_rx: Receiver<()>,
}

/// The map and the status, under one lock.
struct Shared {
    map: Option<PaneMap>,
    status: WatchStatus,
}

impl PaneShare {
    pub(crate) fn new(why_not: &str) -> PaneShare {
        let (armed_tx, armed_rx) = crossbeam_channel::bounded(1);
        PaneShare {
            inner: Mutex::new(Shared {
                map: None,
                status: WatchStatus::not_armed(why_not),
            }),
            armed_tx,
            armed_rx,
        }
    }

    /// The main loop's map.
    pub(crate) fn hand_over(&self, map: PaneMap) {
        self.inner.lock().map = Some(map);
    }

    /// The main loop queued a job of `id`: it is restarting until the main
    /// loop takes the job's ending and hands a new map. Nothing before the
    /// first map.
    pub(crate) fn restart_queued(&self, id: &str) {
        if let Some(map) = self.inner.lock().map.as_mut() {
            map.restarting.insert(id.to_owned());
        }
    }

    /// The map last handed over; `None` before the first tick.
    pub(crate) fn map(&self) -> Option<PaneMap> {
        self.inner.lock().map.clone()
    }

    pub(crate) fn status(&self) -> WatchStatus {
        self.inner.lock().status.clone()
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
