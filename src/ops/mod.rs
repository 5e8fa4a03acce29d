//! Living with the daemon: `status`, `history`, systemd notify, log output,
//! and the simulated agent-deck the demo (`crate::demo`), the tests and the
//! benchmarks run against.

pub(crate) mod history;
pub(crate) mod logging;
pub(crate) mod sd_notify;
/// Public so the benchmark can lay out its fleet; the program it implements is
/// `agent-deck-watchdog sim`.
pub mod sim;
pub(crate) mod status;
