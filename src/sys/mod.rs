//! The platform layer: spawning, safe file access, flock, the process table,
//! exit waits, the clock, shutdown, the say-once sink and the worker
//! thread. Everything above it is platform-neutral.

pub(crate) mod clock;
pub(crate) mod file_lock;
pub(crate) mod fs;
pub(crate) mod pid_watch;
pub(crate) mod process;
pub(crate) mod process_table;
pub(crate) mod say_once;
pub(crate) mod shutdown;
pub(crate) mod worker;
