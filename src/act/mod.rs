//! Actions: the restart job, the deaf-conductor check, the pending-updates
//! check, prompt-resume and the patrol errands, each run off the main thread
//! on a named worker.

pub(crate) mod deaf_conductor;
pub(crate) mod env_file;
pub(crate) mod errands;
pub(crate) mod job;
pub(crate) mod patrols;
pub(crate) mod pending_updates;
pub(crate) mod prompt_resume;
pub(crate) mod restart;
pub(crate) mod snapshot;
