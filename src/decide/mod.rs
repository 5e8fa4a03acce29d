//! The decision core, pure: it takes what was read, the restart book, the
//! limits and `now`, and returns a decision; nothing here spawns, sleeps or
//! writes a file. One folder per question, each beside its main file:
//! - `verdict`: what one critical session gets from a look at it;
//! - `restart`: one revive as a machine, and the gates it must pass;
//! - `stall`: a session alive and not working, and its resume;
//! - `book`: what the guardrails remember of the fleet, and its notes.
//!
//! Beside them: a tick's plan (`plan.rs`) over what the main loop remembers
//! between looks (`memory.rs`), the reads a decision may ask for
//! (`probe.rs`), the limits, the words of the records (`outcomes.rs`) and
//! the patrols' rules. No folder imports one that imports it back.

pub(crate) mod book;
pub(crate) mod limits;
pub(crate) mod memory;
pub(crate) mod outcomes;
pub(crate) mod patrol_rules;
pub(crate) mod plan;
pub(crate) mod probe;
pub(crate) mod restart;
pub(crate) mod stall;
pub(crate) mod verdict;
