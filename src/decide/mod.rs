//! The decision core, pure: gates, cascade, liveness verdicts and patrol
//! rules take the restart book, the limits and `now`, and return a decision.
//! Nothing here spawns, sleeps or writes a file.

pub(crate) mod book;
pub(crate) mod cascade;
pub(crate) mod gates;
pub(crate) mod liveness;
pub(crate) mod patrol_rules;
