//! The black-box tests, in one test binary: the built `agent-deck-watchdog`
//! run against the simulated agent-deck it carries (`sim`), one area per
//! module, with the shared helpers in `support`.

#[path = "../support/mod.rs"]
mod support;

mod child_env;
mod cli;
mod context;
mod contrib;
mod deaf_poller;
mod first_pass;
mod fleet;
mod full_disk;
mod hardening_files;
mod hardening_proc;
mod hardening_settings;
mod hardening_tasks;
mod history;
mod holds;
mod ops;
mod pane_host;
mod pane_short_path;
mod pane_watch;
mod patrols;
mod restart;
mod retention;
mod rollout;
mod scale;
mod sim_contract;
mod source_tree;
mod stalls;
mod tasks;
