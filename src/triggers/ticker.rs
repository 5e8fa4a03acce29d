//! Thread B: the safety-poll ticker. It sends one tick at once and then one
//! every `SAFETY_POLL_INTERVAL_S`, or every `ARMED_POLL_INTERVAL_S` while
//! the pane watch covers every critical session ([`poll_interval`]), into
//! the same queue as the other threads. It follows the watch both ways at
//! once (a watch that stops covering makes a tick due at the shorter
//! interval from the last one) and wakes for shutdown at once. It only
//! reports; the main loop does the tick.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::select;

use crate::error::{Error, Result};
use crate::sys::shutdown::Shutdown;
use crate::triggers::event_queue::{EventQueue, Trigger};
use crate::triggers::pane_share::PaneShare;

/// The two poll intervals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Intervals {
    /// `SAFETY_POLL_INTERVAL_S`.
    pub safety: Duration,
    /// `ARMED_POLL_INTERVAL_S`.
    pub armed: Duration,
}

/// The interval between ticks: the armed one while the pane watch covers
/// every critical session, else the safety poll's.
pub(crate) fn poll_interval(watch_armed: bool, every: Intervals) -> Duration {
    if watch_armed {
        every.armed
    } else {
        every.safety
    }
}

/// Thread B: a tick now, then one every [`poll_interval`].
pub(crate) fn spawn(
    every: Intervals,
    share: Arc<PaneShare>,
    queue: Arc<EventQueue>,
    shutdown: Shutdown,
) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("ticker".into())
        .spawn(move || run(every, &share, &queue, &shutdown))
        .map_err(|e| Error::runtime(format!("cannot start the ticker thread: {e}")))
}

fn run(every: Intervals, share: &PaneShare, queue: &EventQueue, shutdown: &Shutdown) {
    queue.send(Trigger::Tick);
    let mut last = Instant::now();
    let mut armed = false;
    while !shutdown.is_set() {
        let now_armed = share.status().armed;
        if now_armed != armed {
            armed = now_armed;
            let secs = poll_interval(armed, every).as_secs_f64();
            let covers = if armed { "covers" } else { "does not cover" };
            log::info!("the pane watch {covers} every critical session: polling agent-deck every {secs:.1}s");
        }
        let due = last + poll_interval(armed, every);
        let now = Instant::now();
        if now >= due {
            queue.send(Trigger::Tick);
            last = now;
            continue;
        }
        select! {
            recv(shutdown.receiver()) -> _ => return,
            recv(share.armed_changes()) -> _ => {},
            default(due - now) => {},
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_armed_interval_holds_only_while_the_watch_covers_every_session() {
        let every = Intervals {
            safety: Duration::from_secs(5),
            armed: Duration::from_secs(30),
        };
        assert_eq!(poll_interval(true, every), Duration::from_secs(30));
        assert_eq!(poll_interval(false, every), Duration::from_secs(5));
    }

    #[test]
    fn the_ticker_follows_the_watch_both_ways_at_once() {
        let every = Intervals {
            safety: Duration::from_millis(20),
            armed: Duration::from_secs(3600),
        };
        let share = Arc::new(PaneShare::new("starting"));
        let queue = Arc::new(EventQueue::new(100));
        let shutdown = Shutdown::new().unwrap();
        let t = spawn(every, share.clone(), queue.clone(), shutdown.clone()).unwrap();
        let tick = |within: Duration| {
            let b = queue.next_batch(&shutdown, within);
            b.is_some_and(|b| b.tick)
        };
        assert!(tick(Duration::from_secs(5)), "a tick at once");
        assert!(tick(Duration::from_secs(5)), "unarmed: every 20 ms");
        share.set_armed(true);
        // Drain what was sent before the switch was seen.
        while tick(Duration::from_millis(100)) {}
        assert!(!tick(Duration::from_millis(200)), "armed: the hour holds");
        share.set_armed(false);
        let started = std::time::Instant::now();
        assert!(
            tick(Duration::from_secs(5)),
            "unarmed again: a tick is due at once"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
        shutdown.trigger();
        t.join().unwrap();
    }
}
