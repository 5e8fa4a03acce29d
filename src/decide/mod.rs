//! The decision core, pure: gates, cascade, escalation dedup, liveness
//! verdicts, whether a session ever ran, whether a stale hook explains an
//! error, and patrol rules take the restart book, the limits and `now`, and
//! return a decision; the book notes what happened and is pruned by time.
//! Nothing here spawns, sleeps or writes a file.

pub(crate) mod banner;
pub(crate) mod book;
pub(crate) mod cascade;
pub(crate) mod dedup;
pub(crate) mod first_run;
pub(crate) mod gates;
pub(crate) mod hook_pacing;
pub(crate) mod limits;
pub(crate) mod liveness;
pub(crate) mod memory;
pub(crate) mod notes;
pub(crate) mod outcomes;
pub(crate) mod patrol_rules;
pub(crate) mod plan;
pub(crate) mod prune;
pub(crate) mod refusal;
pub(crate) mod reset_time;
pub(crate) mod restart;
pub(crate) mod route;
pub(crate) mod stale_hook;
pub(crate) mod stall;
pub(crate) mod stop;
pub(crate) mod store;
pub(crate) mod usage_limit;
pub(crate) mod vanish;
pub(crate) mod verdict;
