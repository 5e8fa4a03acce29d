//! What the black-box tests share: the simulated agent-deck ([`sim`]), the
//! watchdog under test ([`watchdog`]), fleet fixtures, files written the way
//! agent-deck writes them, a Telegram stand-in, and waiting on a condition
//! with a deadline (never a fixed sleep).

pub mod files;
pub mod fixtures;
pub mod sim;
pub mod telegram;
pub mod watchdog;

use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_agent-deck-watchdog");

/// Polls `cond` every 20 ms until it is true (returns true) or `timeout`
/// passes (returns false). `cond` is always tried at least once.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
