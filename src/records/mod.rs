//! What the daemon writes down: the audit logs (rotated at a size bound), the
//! state file that survives its own restart, the metrics textfile with its
//! typed twin `daemon-status.json`, and the instance lock.

pub mod audit;
pub(crate) mod daemon_status;
pub(crate) mod instance_lock;
pub(crate) mod metrics;
pub mod read_back;
pub mod rotation;
pub(crate) mod state_file;
pub mod tally;
pub mod writer;

pub use audit::{EscalationRecord, LivenessRecord, RestartRecord};
