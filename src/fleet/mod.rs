//! The fleet as the CLI reports it: the agent-deck CLI behind a trait, its
//! answers parsed into typed sessions, which of them are critical, and the
//! cache of the last readable list. Nothing here restarts anything.

pub(crate) mod cache;
pub(crate) mod cli;
pub(crate) mod deck;
#[cfg(test)]
pub(crate) mod fake;
pub mod listing;
pub(crate) mod panes;
pub(crate) mod parse;
#[cfg(test)]
pub(crate) mod props;
pub(crate) mod session;
#[cfg(test)]
mod sim_answers;
pub(crate) mod usage;
pub(crate) mod version;
pub(crate) mod version_watch;
pub(crate) mod wire;
