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
//! (`install.rs`), against the simulated agent-deck, and drops the box when
//! it ends, also when it failed. `unit.rs` holds the unit's promises,
//! `revival.rs` a fleet revived across the watchdog's own restarts. A test
//! ignored as a "defect" shows a promise that does not hold yet.

#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

mod install;
mod revival;
mod sdbox;
mod unit;
