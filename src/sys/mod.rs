//! The platform layer: the one place that spawns processes, file access that
//! cannot block or follow a symlink, the flock, the process scan, waiting for a process to exit (pidfd, kqueue), the clock,
//! the shutdown wake-up, the warning throttle and the named worker thread. Everything above it is platform-neutral.

pub(crate) mod clock;
pub(crate) mod flock;
pub(crate) mod fs;
pub(crate) mod pid_watch;
pub(crate) mod process;
pub(crate) mod process_table;
pub(crate) mod shutdown;
pub(crate) mod throttle;
pub(crate) mod worker;
