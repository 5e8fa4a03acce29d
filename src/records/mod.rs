//! What the daemon writes down: the audit logs, the state file, the metrics
//! files and the instance lock.

pub(crate) mod audit;
pub(crate) mod failed_writes;
pub(crate) mod instance_lock;
pub(crate) mod metrics;
pub(crate) mod read_back;
pub(crate) mod rotation;
pub(crate) mod state_file;
pub(crate) mod writer;
