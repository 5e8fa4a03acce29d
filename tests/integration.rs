//! The black-box tests, in one test binary: the built `agent-deck-watchdog`
//! run against the simulated agent-deck it carries (`sim`), one area per
//! module, with the shared helpers in `support`.

mod support;

#[path = "integration/child_env.rs"]
mod child_env;
#[path = "integration/cli.rs"]
mod cli;
#[path = "integration/contrib.rs"]
mod contrib;
#[path = "integration/deaf_poller.rs"]
mod deaf_poller;
#[path = "integration/first_pass.rs"]
mod first_pass;
#[path = "integration/fleet.rs"]
mod fleet;
#[path = "integration/hardening_files.rs"]
mod hardening_files;
#[path = "integration/hardening_proc.rs"]
mod hardening_proc;
#[path = "integration/hardening_settings.rs"]
mod hardening_settings;
#[path = "integration/hardening_tasks.rs"]
mod hardening_tasks;
#[path = "integration/history.rs"]
mod history;
#[path = "integration/holds.rs"]
mod holds;
#[path = "integration/ops.rs"]
mod ops;
#[path = "integration/pane_host.rs"]
mod pane_host;
#[path = "integration/pane_short_path.rs"]
mod pane_short_path;
#[path = "integration/pane_watch.rs"]
mod pane_watch;
#[path = "integration/patrols.rs"]
mod patrols;
#[path = "integration/restart.rs"]
mod restart;
#[path = "integration/retention.rs"]
mod retention;
#[path = "integration/rollout.rs"]
mod rollout;
#[path = "integration/scale.rs"]
mod scale;
#[path = "integration/sim_contract.rs"]
mod sim_contract;
#[path = "integration/tasks.rs"]
mod tasks;
