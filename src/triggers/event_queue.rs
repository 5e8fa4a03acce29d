//! The bounded event channel between the trigger threads (hooks, ticker,
//! pane watch, the restart worker's endings) and the main loop.
//!
//! On overflow the OLDEST message is dropped (never the newest), the drop is
//! counted and logged at a bounded rate, and a full rescan is flagged so that
//! nothing is lost for good. The consumer takes messages in batches and
//! coalesces duplicates for the same session. What the pane watch's round
//! found (the bare shells, the tmux listing) is no message: it waits beside
//! the channel, the newest kept, for the next batch, so the bound never
//! drops it and it wakes no one.
//!
//! The bound is enforced here, on a growable crossbeam channel, rather than
//! by `crossbeam_channel::bounded`, which allocates every slot up front: the
//! memory held follows the messages queued, never the configured maximum.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crossbeam_channel::{select, Receiver, Sender};
use parking_lot::Mutex;

use crate::fleet::panes::Proof;
use crate::sys::say_once::SayOnce;
use crate::sys::shutdown::Shutdown;
use crate::triggers::hook_file::hook_id;

/// A full queue is warned about at most this often.
const DROP_WARN_EVERY: Duration = Duration::from_secs(10);

/// What a trigger thread reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// A hook file for this session id was written.
    Hook(String),
    /// Time for a safety poll.
    Tick,
    /// The pane watch saw these critical sessions' panes die, all in one
    /// listing (a kill-server is one message), each with its proof.
    PanesDied(BTreeMap<String, Proof>),
    /// Something may have been missed: look at everything.
    Rescan,
    /// The critical sessions whose pane the pane watch's round found a bare
    /// shell (SPEC §14): their agent is gone. Kept beside the channel.
    BareShells(BTreeSet<String>),
    /// Every tmux session name the pane watch's round listed (none when no
    /// server runs). Kept beside the channel.
    Listed(BTreeSet<String>),
    /// A job of the restart worker ended; its ending waits in
    /// [`crate::act::job_worker::Jobs`]. Only a wake-up, one at a time.
    JobEnded,
}

/// Everything that arrived since the last batch, with duplicates folded.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Batch {
    pub tick: bool,
    pub rescan: bool,
    pub hooks: BTreeSet<String>,
    /// Pane deaths by session id; of two proofs for one, the kernel's wins.
    pub panes: BTreeMap<String, Proof>,
    /// The pane watch's newest [`Trigger::BareShells`], if one came.
    pub bare: Option<BTreeSet<String>>,
    /// The pane watch's newest [`Trigger::Listed`], if one came.
    pub listed: Option<BTreeSet<String>>,
}

impl Batch {
    fn add(&mut self, e: Trigger) {
        match e {
            Trigger::Hook(id) => {
                self.hooks.insert(id);
            }
            Trigger::Tick => self.tick = true,
            Trigger::PanesDied(dead) => {
                for (id, proof) in dead {
                    let kept = self.panes.entry(id).or_insert(proof);
                    if proof == Proof::ProcessExited {
                        *kept = proof;
                    }
                }
            }
            Trigger::Rescan => self.rescan = true,
            Trigger::BareShells(ids) => self.bare = Some(ids),
            Trigger::Listed(names) => self.listed = Some(names),
            Trigger::JobEnded => {}
        }
    }
}

pub(crate) struct EventQueue {
    tx: Sender<Trigger>,
    rx: Receiver<Trigger>,
    capacity: usize,
    /// Held by a sender from its length check to its send, so two trigger
    /// threads together cannot overshoot the bound.
    sending: Mutex<()>,
    drops: AtomicU64,
    rescan_owed: AtomicBool,
    /// A [`Trigger::JobEnded`] is queued and not yet taken.
    ended_queued: AtomicBool,
    /// The round's news, beside the channel.
    kept: Mutex<Batch>,
    drop_warnings: SayOnce<()>,
}

impl EventQueue {
    pub(crate) fn new(capacity: usize) -> EventQueue {
        let (tx, rx) = crossbeam_channel::unbounded();
        EventQueue {
            tx,
            rx,
            capacity: capacity.max(1),
            sending: Mutex::new(()),
            drops: AtomicU64::new(0),
            rescan_owed: AtomicBool::new(false),
            ended_queued: AtomicBool::new(false),
            kept: Mutex::new(Batch::default()),
            drop_warnings: SayOnce::new(),
        }
    }

    /// Queues `e`, dropping the oldest message if the queue is full; the
    /// round's news is kept beside it instead.
    pub(crate) fn send(&self, e: Trigger) {
        match e {
            Trigger::BareShells(_) | Trigger::Listed(_) => return self.kept.lock().add(e),
            Trigger::JobEnded if self.ended_queued.swap(true, Ordering::SeqCst) => return,
            _ => {}
        }
        let _sending = self.sending.lock();
        // Only the consumer takes messages meanwhile, which makes room.
        while self.tx.len() >= self.capacity {
            let Ok(old) = self.rx.try_recv() else {
                break;
            };
            let total = self.drops.fetch_add(1, Ordering::Relaxed) + 1;
            self.rescan_owed.store(true, Ordering::SeqCst);
            if self.drop_warnings.allows(&(), DROP_WARN_EVERY) {
                log::warn!("event queue full: dropped the oldest event ({old:?}), {total} dropped so far; a full rescan follows");
            }
        }
        let _ = self.tx.send(e);
    }

    /// Queues the hook of the session whose status file is named `name`, if
    /// it is one ([`hook_id`]).
    pub(crate) fn send_hook(&self, name: &OsStr) {
        if let Some(id) = name.to_str().and_then(hook_id) {
            self.send(Trigger::Hook(id.to_owned()));
        }
    }

    /// Messages waiting.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.tx.len()
    }

    /// Messages dropped since start.
    pub(crate) fn drops(&self) -> u64 {
        self.drops.load(Ordering::Relaxed)
    }

    /// Waits up to `timeout` for at least one message, then takes all that are
    /// queued. `None` on shutdown.
    pub(crate) fn next_batch(&self, shutdown: &Shutdown, timeout: Duration) -> Option<Batch> {
        let mut batch = Batch::default();
        select! {
            recv(self.rx) -> e => if let Ok(e) = e { batch.add(e) },
            recv(shutdown.receiver()) -> _ => return None,
            default(timeout) => {},
        }
        if shutdown.is_set() {
            return None;
        }
        self.ended_queued.store(false, Ordering::SeqCst);
        while let Ok(e) = self.rx.try_recv() {
            batch.add(e);
        }
        let kept = std::mem::take(&mut *self.kept.lock());
        (batch.bare, batch.listed) = (kept.bare, kept.listed);
        batch.rescan |= self.rescan_owed.swap(false, Ordering::SeqCst);
        Some(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_drops_the_oldest_and_owes_a_rescan() {
        let q = EventQueue::new(2);
        q.send(Trigger::Hook("a".into()));
        q.send(Trigger::Hook("b".into()));
        q.send(Trigger::Hook("c".into()));
        assert_eq!(q.drops(), 1);
        let s = Shutdown::new().unwrap();
        let b = q.next_batch(&s, Duration::from_millis(1)).unwrap();
        assert!(b.rescan);
        assert_eq!(
            b.hooks.into_iter().collect::<Vec<_>>(),
            vec!["b".to_string(), "c".to_string()]
        );
    }

    #[test]
    fn duplicates_coalesce() {
        let q = EventQueue::new(100);
        for _ in 0..50 {
            q.send(Trigger::Hook("x".into()));
            q.send(Trigger::Tick);
        }
        let s = Shutdown::new().unwrap();
        let b = q.next_batch(&s, Duration::from_millis(1)).unwrap();
        assert!(b.tick && !b.rescan);
        assert_eq!(b.hooks.len(), 1);
    }

    #[test]
    fn pane_deaths_fold_into_one_set_and_the_kernel_s_proof_wins() {
        let q = EventQueue::new(100);
        let dead = |pairs: &[(&str, Proof)]| {
            Trigger::PanesDied(pairs.iter().map(|(i, p)| (i.to_string(), *p)).collect())
        };
        q.send(dead(&[
            ("a", Proof::GoneFromListing),
            ("b", Proof::ProcessExited),
        ]));
        q.send(dead(&[
            ("a", Proof::ProcessExited),
            ("b", Proof::GoneFromListing),
        ]));
        let s = Shutdown::new().unwrap();
        let b = q.next_batch(&s, Duration::from_millis(1)).unwrap();
        let want = [
            ("a".to_string(), Proof::ProcessExited),
            ("b".to_string(), Proof::ProcessExited),
        ];
        assert_eq!(b.panes, want.into());
        assert!(!b.tick && b.hooks.is_empty());
    }

    #[test]
    fn a_round_s_news_outlives_a_full_queue_and_the_newest_wins() {
        let q = EventQueue::new(1);
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        q.send(Trigger::Listed(names(&["agentdeck_a_1"])));
        q.send(Trigger::BareShells(names(&["a"])));
        q.send(Trigger::Listed(names(&["agentdeck_a_2"])));
        assert_eq!(q.len(), 0, "news is no message");
        q.send(Trigger::Hook("x".into()));
        q.send(Trigger::Hook("y".into()));
        assert_eq!(q.drops(), 1);
        let s = Shutdown::new().unwrap();
        let b = q.next_batch(&s, Duration::from_millis(1)).unwrap();
        assert_eq!(b.listed, Some(names(&["agentdeck_a_2"])));
        assert_eq!(b.bare, Some(names(&["a"])));
        assert!(b.rescan);
        q.send(Trigger::Tick);
        let b = q.next_batch(&s, Duration::from_millis(1)).unwrap();
        assert_eq!((b.listed, b.bare), (None, None), "taken once");
    }

    #[test]
    fn job_endings_wake_the_main_loop_once_until_it_takes_them() {
        let q = EventQueue::new(10);
        for _ in 0..3 {
            q.send(Trigger::JobEnded);
        }
        assert_eq!(q.len(), 1);
        let s = Shutdown::new().unwrap();
        assert_eq!(
            q.next_batch(&s, Duration::from_millis(1)),
            Some(Batch::default())
        );
        q.send(Trigger::JobEnded);
        assert_eq!(q.len(), 1, "a new ending wakes again");
    }

    #[test]
    fn shutdown_ends_the_wait() {
        let q = EventQueue::new(1);
        let s = Shutdown::new().unwrap();
        s.trigger();
        assert_eq!(q.next_batch(&s, Duration::from_secs(30)), None);
    }

    #[test]
    fn flood_keeps_memory_bounded() {
        let q = EventQueue::new(10);
        for i in 0..20_000 {
            q.send(Trigger::Hook(format!("id-{i}")));
        }
        assert_eq!(q.drops(), 19_990);
        let s = Shutdown::new().unwrap();
        let b = q.next_batch(&s, Duration::from_millis(1)).unwrap();
        assert_eq!(b.hooks.len(), 10);
        assert!(b.rescan);
    }

    /// Resident memory of this process in KiB.
    #[cfg(target_os = "linux")]
    fn rss_kib() -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_large_maximum_is_not_allocated_up_front() {
        let before = rss_kib();
        // Preallocated, five queues of a million slots would take 200 MB.
        let queues: Vec<EventQueue> = (0..5).map(|_| EventQueue::new(1_000_000)).collect();
        for q in &queues {
            q.send(Trigger::Tick);
        }
        let grown = rss_kib().saturating_sub(before);
        assert!(grown < 50_000, "five empty queues took {grown} KiB");
        assert!(queues.iter().all(|q| q.drops() == 0));
    }

    #[test]
    fn two_senders_never_overshoot_the_bound() {
        let q = std::sync::Arc::new(EventQueue::new(8));
        let threads: Vec<_> = (0..2)
            .map(|t| {
                let q = q.clone();
                std::thread::spawn(move || {
                    for i in 0..5_000 {
                        q.send(Trigger::Hook(format!("{t}-{i}")));
                        assert!(q.tx.len() <= 8);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(q.drops(), 10_000 - 8);
    }
}
