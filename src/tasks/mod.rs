//! Task follow-up (SPEC §8): the registry, the follow-up rules, the pass that
//! carries them out, the `.partial` signature and the `task` subcommands.

pub(crate) mod cli;
pub(crate) mod followup;
pub mod registry;
pub(crate) mod rules;
pub(crate) mod sign;

pub use registry::{Task, TaskStatus};
