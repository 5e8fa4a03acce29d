//! Actions: the restart job, the Telegram poller check and restart, the
//! pending-updates check, prompt-resume and the patrol errands, each run off
//! the main thread on a named worker, all over one shared context.

pub(crate) mod apply;
pub(crate) mod context;
pub(crate) mod continuity;
pub(crate) mod deaf_poller_check;
pub(crate) mod errands;
pub(crate) mod job;
pub(crate) mod job_worker;
pub(crate) mod patrols;
pub(crate) mod poller_restart;
pub(crate) mod prompt_resume;
pub(crate) mod resume;
pub(crate) mod snapshot;
pub(crate) mod telegram_pollers;
