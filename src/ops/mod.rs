//! Living with the daemon: `status`, `history`, systemd notify, log output,
//! and the demo with its simulated agent-deck.

pub(crate) mod demo;
pub(crate) mod history;
pub(crate) mod logging;
pub(crate) mod sd_notify;
pub(crate) mod status;
