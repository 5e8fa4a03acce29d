//! Escalation dedup, pure: whether an alert may go out now, by session and
//! severity inside the dedup window, or once per error episode.

use crate::decide::book::State;
use crate::decide::limits::Limits;
use crate::decide::outcomes::Severity;

/// Whether an escalation of `severity` for `sid` (None: fleet-wide) may go out
/// now; if so, it is recorded so duplicates inside the window are dropped.
pub(crate) fn may_escalate(
    state: &mut State,
    lim: &Limits,
    sid: Option<&str>,
    severity: &str,
    now: f64,
) -> bool {
    let key = format!("{}|{severity}", sid.unwrap_or("_global"));
    match state.escalated.get(&key) {
        Some(t) if now - t < lim.dedup => false,
        _ => {
            state.escalated.insert(key, now);
            true
        }
    }
}

/// Once-per-episode alerts (`auth-hold`, `liveness-mismatch`): true the first
/// time in an error episode.
pub(crate) fn first_in_episode(state: &mut State, id: &str, alert: Severity) -> bool {
    state.book(id).alerted.insert(alert.as_str().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::limits::tests::lim;
    use crate::sys::clock::{Clock, FakeClock};

    const ID: &str = "3f9c2a1b-1755891234";

    #[test]
    fn escalations_dedup_per_session_and_severity() {
        let (l, c, mut s) = (lim(), FakeClock::at(1000.0), State::default());
        assert!(may_escalate(&mut s, &l, Some(ID), "rate-limit", c.now()));
        assert!(!may_escalate(
            &mut s,
            &l,
            Some(ID),
            "rate-limit",
            c.now() + 299.0
        ));
        assert!(may_escalate(
            &mut s,
            &l,
            Some(ID),
            "restart-failed",
            c.now()
        ));
        assert!(may_escalate(&mut s, &l, None, "rate-limit", c.now()));
        assert!(may_escalate(
            &mut s,
            &l,
            Some(ID),
            "rate-limit",
            c.now() + 301.0
        ));
    }
}
