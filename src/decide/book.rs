//! The restart book: everything the guardrails remember, in one serde struct.
//!
//! It lives behind one `parking_lot::Mutex`, held only while deciding. The
//! struct is plain data so it can be saved to `state.json` and loaded after the
//! watchdog's own restart; the rules that read and change it are the rest of
//! [`crate::decide`].
//!
//! Beside it, what the book notes and how it is kept: the notes of what
//! happened (`notes.rs`), its time hygiene (`prune.rs`), escalation dedup,
//! cascades, a vanished fleet, and the facts a note rests on: whether a
//! session ever ran, a stop, a stale `dead` hook.

pub(crate) mod cascade;
pub(crate) mod dedup;
pub(crate) mod first_run;
pub(crate) mod notes;
pub(crate) mod prune;
pub(crate) mod stale_hook;
pub(crate) mod stop;
pub(crate) mod vanish;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct SessionBook {
    /// Start times of the restart attempts that count against the budget.
    pub restarts: Vec<f64>,
    /// No restart attempt before this time (post-restart quiet time).
    pub cooldown_until: f64,
    /// No restart attempt before this time (API rate-limited boot).
    pub backoff_until: f64,
    /// Real restart failures in a row.
    pub consecutive_failures: u32,
    /// `pane_active` liveness skips in a row in this error episode.
    pub liveness_skips: u32,
    /// Alerts already sent in this error episode.
    pub alerted: BTreeSet<String>,
    /// The session's title when last seen, for `status`.
    pub title: String,
    /// The last status seen, and since when it has been that.
    pub last_status: Option<String>,
    pub status_since: f64,
    /// When the session was first seen in error in this episode.
    pub error_since: Option<f64>,
    /// When the watchdog last issued a `session restart` that agent-deck
    /// carried out: a `dead` hook older than this is about the old pane.
    pub restarted_at: Option<f64>,
    /// When agent-deck said a restart or start of it died at once
    /// (`spawn_died_fast`, 1.16.10+): no more restarts until it is seen
    /// healthy, which clears it.
    pub spawn_died_fast_at: Option<f64>,
    /// How long the backoff in force was set for, when not
    /// `API_429_BACKOFF_S` (a usage limit's retry time); 0 otherwise.
    pub backoff_s: f64,
    /// The `substate_detail` of the usage limit this error episode was
    /// backed off for (`""` when it had none): each limit is noted once.
    pub usage_limit: Option<String>,
    /// The run of freshness-guard refusals in progress, if any (see
    /// [`crate::decide::restart::refusal`]); saved, so a scheduled retry outlives
    /// the watchdog's own restart.
    pub refusal: Option<Refusal>,
    /// The stall episode in progress, if any (SPEC §14).
    pub stall: Option<crate::decide::stall::Stall>,
    /// When this watchdog's `/clear` of its full context was last verified
    /// (SPEC §15): full again soon after, it is not cleared again.
    pub context_cleared_at: Option<f64>,
    /// The tmux session a restart of it spawned and agent-deck did not save
    /// (its store locked): no more restarts while it runs, so that no second
    /// agent is spawned beside it (see [`crate::decide::restart`]).
    pub unsaved: Option<String>,
    /// When the watchdog last ended the tmux session a restart of it left
    /// unsaved, to restart it once (SPEC §5.5): another is ended only once
    /// `RATE_LIMIT_WINDOW_S` has passed, or after the session read healthy.
    pub unsaved_ended_at: Option<f64>,
    /// The reason of a `restart-unverified` record (no status could be read
    /// after the call) until a look reads the status and settles it.
    pub unverified: Option<String>,
}

/// A run of calls agent-deck's freshness guard refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Refusal {
    /// When the first call of the run was refused.
    pub first_at: f64,
    /// How many calls of the run were refused.
    pub refused: u32,
    /// When the session is tried again, while a retry is scheduled.
    pub retry_at: Option<f64>,
}

/// A fleet that vanished (see [`crate::decide::book::vanish`]): the critical
/// sessions a `list --all` held a tick before and suddenly did not.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Vanished {
    /// When the list first held none of them.
    pub since: f64,
    /// Their ids: their state is kept until one is listed again or the
    /// hold is over.
    pub ids: BTreeSet<String>,
}

/// A cascade episode: many critical sessions in error at once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Cascade {
    pub started: f64,
    /// Restarts are held until then, so the fleet can settle.
    pub settle_until: f64,
    /// When the last `cascade-detected` alert (or reminder) went out.
    pub last_alert: f64,
    /// How many were in error when it was detected.
    pub size: usize,
}

/// A child session seen in `waiting`: its pane digest, since when it has
/// not changed, and when it was last nudged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct WaitWatch {
    pub digest: String,
    pub since: f64,
    pub nudged_at: Option<f64>,
}

/// A conductor's run of `getWebhookInfo` checks with updates waiting
/// (deaf-but-alive poller, SPEC §6.5).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct PendingStreak {
    /// The `pending_update_count`s seen, oldest first; at most
    /// `POLLER_DEAF_CHECKS` of them, none 0.
    pub counts: Vec<u64>,
    /// When the last check ran, answered or not.
    pub last_check: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct State {
    pub sessions: BTreeMap<String, SessionBook>,
    /// When the last restart call ran, for the global serialization.
    pub last_restart_at: Option<f64>,
    /// Times of recent restart calls, for the burst guard.
    pub recent_restarts: Vec<f64>,
    /// Every restart paused until then (restart-burst guard).
    pub cascade_pause_until: f64,
    /// The cascade in progress, if any (settle-and-revive).
    pub cascade: Option<Cascade>,
    /// Times of recent rate-limited boots, for the 429 circuit breaker.
    pub breaker_hits: Vec<f64>,
    /// Every restart paused until then (429 circuit breaker open).
    pub breaker_open_until: f64,
    /// Deaf-conductor patrol: when each conductor was last restarted for a
    /// missing Telegram poller.
    pub poller_restarted: BTreeMap<String, f64>,
    /// Deaf-but-alive poller check: each conductor's streak of checks with
    /// Telegram updates waiting. Saved, so a watchdog restart (or a run of
    /// `--once`) keeps counting.
    pub pending_updates: BTreeMap<String, PendingStreak>,
    /// Waiting-too-long patrol: the children seen in `waiting`.
    pub waiting: BTreeMap<String, WaitWatch>,
    /// `<sid or _global>|<severity>` → when it last escalated.
    pub escalated: BTreeMap<String, f64>,
    /// Critical sessions known to have run at least once (see
    /// [`crate::decide::book::first_run`]): only these are revived from `error`.
    /// Ids that leave the fleet are dropped.
    pub ran: BTreeSet<String>,
    /// Critical sessions seen `stopped` and not seen healthy since: a human
    /// stopped them (see [`crate::decide::book::stop`]).
    pub stopped: BTreeSet<String>,
    /// The vanished fleet whose state is being kept, if any.
    pub vanished: Option<Vanished>,
    /// The fleet's recent resumes of stalls, for their pace (SPEC §14).
    pub resumes: crate::decide::stall::Pace,
    /// Sessions with a restart queued or running (not saved).
    #[serde(skip)]
    pub in_flight: BTreeSet<String>,
}

impl SessionBook {
    /// Nothing worth remembering is left (what it looked like last is not).
    pub(crate) fn is_empty(&self) -> bool {
        let last_look = SessionBook {
            title: self.title.clone(),
            status_since: self.status_since,
            error_since: self.error_since,
            backoff_s: self.backoff_s,
            ..SessionBook::default()
        };
        *self == last_look
    }
}

impl State {
    /// Restarts of every session within the last `window` seconds.
    pub(crate) fn restarts_within(&self, window: f64, now: f64) -> usize {
        let recent = |b: &SessionBook| b.restarts.iter().filter(|t| now - **t < window).count();
        self.sessions.values().map(recent).sum()
    }

    /// Returns a reserved slot: a restart that never happened is not an
    /// attempt.
    pub(crate) fn give_back_slot(&mut self, id: &str, slot: f64) {
        let book = self.book(id);
        if let Some(i) = book.restarts.iter().position(|t| *t == slot) {
            book.restarts.remove(i);
        }
    }

    pub(crate) fn book(&mut self, id: &str) -> &mut SessionBook {
        self.sessions.entry(id.to_owned()).or_default()
    }
}
