//! The limits the guardrails count against (restart budget, cooldown,
//! cascade and breaker windows, escalation dedup), read once from the
//! [`Config`] as float seconds, and the fixed ones.
//!
//! Plain data: the gates and the cascade rules both read it, so it sits
//! below them and imports neither.

use std::time::Duration;

use crate::config::Config;
use crate::decide::stall::StallLimits;

/// A cascade that does not clear is recalled at most this often.
pub(crate) const CASCADE_REMINDER_S: f64 = 3600.0;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Limits {
    pub rate_max: usize,
    pub rate_window: f64,
    pub cooldown: f64,
    pub min_interval: f64,
    pub cascade_threshold: usize,
    pub cascade_window: f64,
    pub cascade_pause: f64,
    pub dedup: f64,
    pub backoff_429: f64,
    pub skip_escalate_after: u32,
    pub cascade_wait: f64,
    pub breaker_threshold: usize,
    pub breaker_window: f64,
    pub breaker_pause: f64,
    pub stall: StallLimits,
}

impl Limits {
    pub(crate) fn from_config(c: &Config) -> Limits {
        let s = Duration::as_secs_f64;
        Limits {
            rate_max: c.rate_limit_max as usize,
            rate_window: s(&c.rate_limit_window),
            cooldown: s(&c.post_restart_cooldown),
            min_interval: s(&c.min_global_restart_interval),
            cascade_threshold: c.cascade_threshold as usize,
            cascade_window: s(&c.cascade_window),
            cascade_pause: s(&c.cascade_pause),
            dedup: s(&c.escalation_dedup),
            backoff_429: s(&c.api_429_backoff),
            skip_escalate_after: c.liveness_skip_escalate_after,
            cascade_wait: s(&c.cascade_wait),
            breaker_threshold: c.breaker_threshold as usize,
            breaker_window: s(&c.breaker_window),
            breaker_pause: s(&c.breaker_pause),
            stall: StallLimits {
                grace: s(&c.resume_grace),
                probe: s(&c.resume_probe),
                dwell: s(&c.resume_dwell),
                model_backoff: s(&c.model_unavailable_backoff),
                verify: s(&c.resume_verify),
                max_attempts: c.resume_max_attempts,
                stagger: s(&c.resume_stagger),
                max_per_hour: c.resume_fleet_max_per_hour as usize,
                compact: s(&c.context_compact),
                clear_at_pct: c.context_clear_at_pct,
                window_tokens: c.context_window_tokens,
            },
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::Limits;

    /// Small limits for the tests of the rules.
    pub(crate) fn lim() -> Limits {
        Limits {
            rate_max: 3,
            rate_window: 300.0,
            cooldown: 30.0,
            min_interval: 60.0,
            cascade_threshold: 5,
            cascade_window: 10.0,
            cascade_pause: 60.0,
            dedup: 300.0,
            backoff_429: 180.0,
            skip_escalate_after: 3,
            cascade_wait: 30.0,
            breaker_threshold: 3,
            breaker_window: 600.0,
            breaker_pause: 600.0,
            stall: crate::decide::stall::tests::LIM,
        }
    }
}
