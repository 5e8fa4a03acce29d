//! A `dead` hook that outlived the restart it caused.
//!
//! agent-deck lets a Claude-family session's hook file set its status while
//! the hook is under two minutes old and tmux is alive, and a `dead` hook
//! reads `error`. `session restart` leaves the hook file in place, so a
//! session the watchdog restarted because its agent ended keeps reading
//! `error` for up to two minutes after the hook was written, although its
//! new pane is alive, until the new agent writes a hook of its own. Such an
//! `error` is no death: no `session start` fallback, no failure, and no
//! second restart because of the same hook. A hook written after the restart
//! is a new death and is handled like any other.
//!
//! Pure: the hook is read by the caller.

use crate::triggers::hook_file::{Hook, HookStatus};

/// How long agent-deck lets a hook set a Claude-family session's status.
pub(crate) const HOOK_FRESH_S: f64 = 120.0;

/// Whether `hook` alone can explain an `error` read at `now` after a
/// restart issued at `restarted_at`: it says `dead`, agent-deck still honours
/// it, and it was written before the restart. Its `ts` is whole seconds, so
/// a hook from the same second as the restart counts as newer (a real death
/// is never ignored).
pub(crate) fn is_stale_dead_hook(hook: &Hook, restarted_at: f64, now: f64) -> bool {
    hook.status == HookStatus::Dead
        && hook
            .ts
            .is_some_and(|ts| ts + 1.0 <= restarted_at && now - ts < HOOK_FRESH_S)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(status: HookStatus, ts: f64) -> Hook {
        Hook {
            status,
            ts: Some(ts),
        }
    }

    const RESTART: f64 = 1_000_010.4;

    #[test]
    fn a_dead_hook_from_before_the_restart_explains_error_for_two_minutes_of_its_age() {
        let h = hook(HookStatus::Dead, 1_000_000.0);
        assert!(is_stale_dead_hook(&h, RESTART, RESTART + 4.0));
        assert!(is_stale_dead_hook(&h, RESTART, 1_000_119.9));
        assert!(
            !is_stale_dead_hook(&h, RESTART, 1_000_120.0),
            "agent-deck no longer honours it: the error is real"
        );
    }

    #[test]
    fn a_hook_written_after_the_restart_is_a_new_death() {
        let h = hook(HookStatus::Dead, 1_000_011.0);
        assert!(!is_stale_dead_hook(&h, RESTART, RESTART + 4.0));
        let same_second = hook(HookStatus::Dead, 1_000_010.0);
        assert!(
            !is_stale_dead_hook(&same_second, RESTART, RESTART + 4.0),
            "the same second may be after the restart"
        );
        let second_before = hook(HookStatus::Dead, 1_000_009.0);
        assert!(is_stale_dead_hook(&second_before, RESTART, RESTART + 4.0));
    }

    #[test]
    fn only_a_dead_hook_with_a_time_explains_error() {
        for status in [HookStatus::Running, HookStatus::Waiting, HookStatus::Other] {
            assert!(!is_stale_dead_hook(
                &hook(status, 1_000_000.0),
                RESTART,
                RESTART + 4.0
            ));
        }
        let untimed = Hook {
            status: HookStatus::Dead,
            ts: None,
        };
        assert!(!is_stale_dead_hook(&untimed, RESTART, RESTART + 4.0));
    }
}
