//! The live suite: the watchdog against the real `agent-deck` and real tmux.
//!
//! Every test is ignored in a plain `cargo test`; run them with
//! `AGENT_DECK_BIN=/path/to/agent-deck cargo test --test live -- --ignored`.
//! Run with `--ignored` but without `AGENT_DECK_BIN`, each fails saying so:
//! none passes by doing nothing. Each test owns a sandbox (`sandbox.rs`):
//! its own `HOME`, its own tmux server, no network, a fleet built through
//! the CLI and running our fake agent (`fake_agent.rs`).

#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

mod actors;
mod context;
mod context_remedy;
mod contract;
mod fake_agent;
mod faults;
mod pane_watch;
mod rollout;
mod sandbox;
mod scenarios;
mod soak;
mod stalls;
mod store_lock;
