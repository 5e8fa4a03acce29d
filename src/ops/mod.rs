//! Living with the daemon: `doctor` before it runs, `status` and `history`
//! while it runs, systemd notify, log output,
//! and the simulated agent-deck the demo (`crate::demo`), the tests and the
//! benchmarks run against.

pub(crate) mod doctor;
pub(crate) mod drill;
pub(crate) mod history;
pub(crate) mod logging;
pub(crate) mod preflight;
pub(crate) mod sd_notify;
/// Public so the benchmark can lay out its fleet; the program it implements is
/// `agent-deck-watchdog sim`.
pub mod sim;
pub(crate) mod status;
