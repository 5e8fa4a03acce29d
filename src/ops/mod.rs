//! The operator's commands: `doctor` before the daemon runs, `drill` to
//! prove it, `status` and `history` while it runs, and what `doctor` and
//! `drill` both ask first (`preflight`).

pub(crate) mod doctor;
pub(crate) mod drill;
pub(crate) mod history;
pub(crate) mod preflight;
pub(crate) mod status;
