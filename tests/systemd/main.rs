//! The systemd suite: the watchdog's user unit under a real systemd.
//!
//! Every test is ignored in a plain `cargo test`; run them as root where
//! `systemd-nspawn` works (it is installed with apt when missing):
//! `cargo test --test systemd -- --ignored --test-threads=1`. Run with
//! `--ignored` but not as root, without nspawn, or where the box cannot
//! boot, each fails saying which: none passes by doing nothing.
//!
//! Each test boots its own box (`sdbox.rs`: systemd 252 as PID 1 in a
//! container over a copy-on-write view of this machine's root, a user with
//! linger), installs the unit from `contrib/` as the README tells a user to
//! (`install.rs`), and drops the box when it ends, also when it failed.
//! The agent-deck is the real one when `AGENT_DECK_BIN` names it
//! (`deck.rs`: copied into the box, `launch_as` at its default, the live
//! suite's fake Claude as the agent), else the simulator; the two tests
//! whose CLI faults only the simulator plays always use it. `unit.rs` holds
//! the unit's promises, `revival.rs` a fleet revived across the watchdog's
//! own restarts. A test ignored as a "defect" shows a promise that does not
//! hold yet.

#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

mod deck;
#[allow(dead_code)]
#[path = "../live/fake_agent.rs"]
mod fake_agent;
mod install;
mod revival;
mod sdbox;
mod unit;
