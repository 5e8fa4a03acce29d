//! The continuity message (SPEC §5.5): after a restart that worked, one
//! `session send <id> <message> --no-wait` tells the agent what happened.
//!
//! It goes out on its own worker, never on the restart worker: agent-deck's
//! send to a Claude pane runs a composer preflight, a draft guard and a
//! submit check (11.6–11.9 s measured on 1.14.0), and the next session's
//! revive must not wait behind that. Sending "after every queued restart"
//! instead would let a cascade, whose restarts stay queued for as long as
//! the serialization spaces them, starve the first sessions' messages.
//!
//! As before, each message is sent once, one agent-deck typed but could not
//! confirm is not sent again, and a failure is logged. A restart of a
//! session waits for its message to be done ([`Continuity::wait_sent`]), so
//! a send never overlaps a call on the same session. On shutdown a queued
//! message is dropped with a log line; one in flight ends with its call.
//!
//! From 1.16.29 agent-deck types a recovery turn of its own into a
//! conductor it finds restarted, and from 1.16.38 presses Enter again
//! while it sits in the composer: a message typed meanwhile would land in
//! the same composer. So on such a release the message waits until the
//! session has read at rest for [`QUIET_FOR_S`] (one `session show` every
//! [`QUIET_LOOK`]), for at most [`QUIET_WAIT_S`], and is not sent to a
//! session that reads `error` or `stopped` again (its next restart must
//! not wait behind it). 1.14.0 types no such turn: sent at once.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::act::context::Context;
use crate::decide::stall;
use crate::fleet::deck::Delivery;
use crate::fleet::session::{Live, Session, Status};
use crate::fleet::version::Version;
use crate::sys::clock::local_timestamp;
use crate::sys::shutdown::Shutdown;
use crate::sys::worker::Worker;

/// How often a restart waiting for a session's message looks again.
const LOOK_EVERY: Duration = Duration::from_millis(20);
/// How long a session must read at rest before its message goes out, on a
/// release that types a recovery turn; how often it is read meanwhile; and
/// how long it is waited for at most.
const QUIET_FOR_S: f64 = 6.0;
const QUIET_LOOK: Duration = Duration::from_secs(2);
const QUIET_WAIT_S: f64 = 180.0;

/// The sessions with a message queued or in flight, one entry per message.
type Pending = Arc<Mutex<Vec<String>>>;

/// The sender: its worker, and what it has yet to finish.
pub(crate) struct Continuity {
    ctx: Context,
    pending: Pending,
    worker: Mutex<Worker<(Session, String)>>,
}

impl Continuity {
    pub(crate) fn spawn(ctx: Context) -> std::io::Result<Continuity> {
        let pending = Pending::default();
        let (queued, sender) = (pending.clone(), ctx.clone());
        let worker = Worker::spawn("continuity", move |(s, text): (Session, String)| {
            let _done = Done(&queued, &s.id);
            send(&sender, &s, &text);
        })?;
        Ok(Continuity {
            ctx,
            pending,
            worker: Mutex::new(worker),
        })
    }

    /// Queues the message to `s`, stamped now; nothing when
    /// `CONTINUITY_MESSAGE` is empty.
    pub(crate) fn queue(&self, s: &Session) {
        let template = &self.ctx.cfg.continuity_message;
        if template.is_empty() {
            return;
        }
        let text = template.replace("{timestamp}", &local_timestamp(self.ctx.clock.now()));
        self.pending.lock().push(s.id.clone());
        self.worker.lock().submit((s.clone(), text));
    }

    /// Sends what is queued (drops it, on shutdown), then stops the worker.
    pub(crate) fn finish(&self) {
        self.worker.lock().finish();
    }

    /// Waits until no message to `id` is queued or in flight: whether it
    /// had to wait, `None` on shutdown.
    pub(crate) fn wait_sent(&self, id: &str, shutdown: &Shutdown) -> Option<bool> {
        let mut waited = false;
        while self.pending.lock().iter().any(|p| p == id) {
            if !waited {
                log::info!(
                    "{id} waits for its continuity message to go out before it is called on again"
                );
            }
            waited = true;
            if !shutdown.sleep(LOOK_EVERY) {
                return None;
            }
        }
        Some(waited)
    }
}

/// Takes one message off the pending list when it is done, whatever
/// happened to it (a bug's panic included).
struct Done<'a>(&'a Mutex<Vec<String>>, &'a str);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        let mut pending = self.0.lock();
        if let Some(i) = pending.iter().position(|p| p == self.1) {
            pending.swap_remove(i);
        }
    }
}

/// Sends `text` to `s` and logs how it went; dropped on shutdown.
fn send(ctx: &Context, s: &Session, text: &str) {
    if ctx.shutdown.is_set() {
        return log::info!("continuity message to {} dropped: shutting down", s.id);
    }
    let typed_by_deck = |v: Version| v.at_least(Version::RECOVERY_TURN);
    if ctx.deck.version().is_some_and(typed_by_deck) {
        if let Err(why) = wait_quiet(ctx, s) {
            return log::info!("continuity message to {} not sent: {why}", s.id);
        }
    }
    match ctx.deck.send(&s.profile, &s.id, text) {
        Ok(()) => log::info!("continuity message sent to {}", s.id),
        Err(e) if e.delivery().is_some_and(Delivery::arrived) => log::info!(
            "continuity message typed into the pane of {}, agent-deck saw no sign it was acted on ({e}); not sent again",
            s.id
        ),
        Err(e) => log::warn!(
            "continuity message to {} failed: {e}; the session runs without it",
            s.id
        ),
    }
}

/// Waits until `s` has read at rest for [`QUIET_FOR_S`], or for
/// [`QUIET_WAIT_S`] in all (then it goes out anyway, said); `Err`: not to
/// be sent (it reads `error` or `stopped` again, or shutdown came).
fn wait_quiet(ctx: &Context, s: &Session) -> Result<(), String> {
    let (start, mut since) = (ctx.clock.now(), None);
    loop {
        let at = ctx.clock.now();
        since = quiet_since(since, at, ctx.read_status(s).as_ref())
            .map_err(|status| format!("it reads {} again", status.as_str()))?;
        if since.is_some_and(|t| at - t >= QUIET_FOR_S) {
            return Ok(());
        }
        if at - start >= QUIET_WAIT_S {
            log::info!(
                "{} is still busy {QUIET_WAIT_S:.0}s after its restart; its continuity message goes out anyway",
                s.id
            );
            return Ok(());
        }
        if !ctx.shutdown.sleep(QUIET_LOOK) {
            return Err("shutting down".into());
        }
    }
}

/// Since when the session has read at rest, after reading `live` at `at`
/// (`None`: busy, or unreadable, which proves no quiet); `Err`: it reads
/// `error` or `stopped`.
fn quiet_since(since: Option<f64>, at: f64, live: Option<&Live>) -> Result<Option<f64>, Status> {
    match live.map(|l| (l.status(), stall::at_rest(l))) {
        Some((status @ (Status::Error | Status::Stopped), _)) => Err(status),
        Some((_, true)) => Ok(Some(since.unwrap_or(at))),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::act::context::tests::context;
    use crate::fleet::fake::{FakeDeck, Script};

    fn session(id: &str) -> Session {
        Session {
            id: id.into(),
            ..Session::default()
        }
    }

    #[test]
    fn a_message_waits_for_a_quiet_that_lasts_and_never_for_a_session_down_again() {
        use crate::fleet::fake::live;
        use crate::fleet::session::Substate;
        let (rest, busy) = (live(Status::Idle), live(Status::Running));
        let empty_prompt = Live {
            substate: Some(Substate::IdleAtEmptyPrompt.as_str().into()),
            ..busy.clone().unwrap()
        };
        // Reads, one a look apart from t = 0: when quiet began after each.
        let reads = [
            &rest,
            &rest,
            &busy,
            &rest,
            &live(Status::Waiting),
            &Some(empty_prompt),
            &None,
        ];
        let mut since = None;
        let got: Vec<_> = (reads.iter().enumerate())
            .map(|(i, l)| {
                since = quiet_since(since, 2.0 * i as f64, l.as_ref()).unwrap();
                since
            })
            .collect();
        let want = [
            Some(0.0),
            Some(0.0),
            None,
            Some(6.0),
            Some(6.0),
            Some(6.0),
            None,
        ];
        assert_eq!(got, want);
        for down in [Status::Error, Status::Stopped] {
            let l = live(down);
            assert_eq!(quiet_since(Some(0.0), 4.0, l.as_ref()), Err(down));
        }
    }

    #[test]
    fn on_shutdown_a_queued_message_is_dropped_and_no_wait_outlasts_it() {
        let tmp = tempfile::tempdir().unwrap();
        let (gate, held) = crossbeam_channel::bounded::<()>(0);
        let deck = Arc::new(FakeDeck::new(Script {
            send_gate: Some(held),
            ..Script::default()
        }));
        let (ctx, _) = context(tmp.path(), deck.clone());
        let continuity = Continuity::spawn(ctx.clone()).unwrap();
        continuity.queue(&session("a-1"));
        continuity.queue(&session("b-2"));
        assert!(deck.wait_for_calls("send a-1", 1, Duration::from_secs(5)));
        ctx.shutdown.trigger();
        assert_eq!(continuity.wait_sent("b-2", &ctx.shutdown), None);
        drop(gate);
        drop(continuity);
        assert_eq!(*deck.calls.lock(), ["send a-1"], "b-2's message is dropped");
    }
}
