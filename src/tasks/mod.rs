//! Task follow-up (SPEC §8): the registry, the follow-up rules, the pass that
//! carries them out (and the daemon's run of it after each tick), the pruning of old finished tasks, the `.partial`
//! signature and the `task` subcommands.

pub(crate) mod commands;
pub(crate) mod followup;
pub(crate) mod registry;
#[doc(hidden)]
pub mod retention;
pub(crate) mod rules;
pub(crate) mod sign;
