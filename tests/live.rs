//! The live suite: the watchdog against the real `agent-deck` and real tmux.
//!
//! Every test is ignored in a plain `cargo test`; run them with
//! `AGENT_DECK_BIN=/path/to/agent-deck cargo test --test live -- --ignored`.
//! Run with `--ignored` but without `AGENT_DECK_BIN`, each fails saying so:
//! none passes by doing nothing. Each test owns a sandbox (`sandbox.rs`):
//! its own `HOME`, its own tmux server, no network, a fleet built through
//! the CLI and running our fake agent (`fake_agent.rs`).

#[allow(dead_code)]
mod support;

#[path = "live/contract.rs"]
mod contract;
#[path = "live/fake_agent.rs"]
mod fake_agent;
#[path = "live/pane_watch.rs"]
mod pane_watch;
#[path = "live/rollout.rs"]
mod rollout;
#[path = "live/sandbox.rs"]
mod sandbox;
#[path = "live/scenarios.rs"]
mod scenarios;
