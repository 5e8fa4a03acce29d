//! When a usage limit resets (SPEC §14), pure, from the best source there
//! is: `usage --json`'s `resets_at` of the exhausted window (agent-deck
//! 1.16.11 and later, when it is not `stale`), else the reset Claude printed
//! in its rejection ("You've hit your session limit · resets 8:50pm
//! (Europe/Skopje)", or the older "Claude AI usage limit reached|<epoch>"),
//! else a probe: the rejection time plus `RESUME_PROBE_S`, at most
//! [`PROBE_MAX_S`] (each rejected resume doubles the wait, see
//! [`crate::decide::stall`]).
//!
//! A time that is past, or more than [`WALL_TIME_HORIZON_S`] ahead, is not
//! believed.
//!
//! [`WALL_TIME_HORIZON_S`]: crate::sys::clock::WALL_TIME_HORIZON_S

pub(crate) use crate::fleet::usage::Window;
use crate::sys::clock::{believed, next_wall_time, time_of_day};

/// Claude's reset clock and its zone: 12-hour with am/pm, minutes or none.
const CLOCK: &[&str] = &["%I:%M %p ( %Q )", "%I %p ( %Q )"];

/// A probe never waits longer than the five-hour window.
pub(crate) const PROBE_MAX_S: f64 = 5.0 * 3_600.0;

/// Where a resume time came from: the `from` of a `stall-detected` record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResetFrom {
    UsageJson,
    Banner,
    Probe,
}

impl ResetFrom {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ResetFrom::UsageJson => "usage --json",
            ResetFrom::Banner => "banner",
            ResetFrom::Probe => "probe",
        }
    }
}

/// The reset of a limit rejected at `rejected`, read at `now`: from `usage`
/// (the windows of `usage --json`, `None` when it was not asked), else from
/// the rejection's text, read by `text` only when `usage` gave no reset,
/// else `probe_s` after the rejection (at most [`PROBE_MAX_S`]).
pub(crate) fn reset(
    usage: Option<&[Window]>,
    text: impl FnOnce() -> String,
    rejected: f64,
    now: f64,
    probe_s: f64,
) -> (f64, ResetFrom) {
    if let Some(at) = usage.and_then(|w| from_usage(w, now)) {
        return (at, ResetFrom::UsageJson);
    }
    if let Some(at) = from_text(&text(), rejected).filter(|at| *at > now) {
        return (at, ResetFrom::Banner);
    }
    let probe = rejected.max(now) + probe_s.min(PROBE_MAX_S);
    (probe, ResetFrom::Probe)
}

/// The latest reset among the exhausted, fresh windows: every one must
/// have reset before a resume can work.
pub(crate) fn from_usage(windows: &[Window], now: f64) -> Option<f64> {
    windows
        .iter()
        .filter(|w| w.used_percentage >= 100.0 && !w.stale)
        .filter_map(|w| w.resets_at)
        .filter(|at| believed(*at, now))
        .reduce(f64::max)
}

/// The reset a rejection text names, if it names one: `resets H[:MM]am|pm
/// (Zone)` is the first such wall time in that zone after `rejected`;
/// `usage limit reached|<epoch>` is that epoch.
pub(crate) fn from_text(text: &str, rejected: f64) -> Option<f64> {
    let lower = text.to_ascii_lowercase();
    if let Some((_, epoch)) = lower.split_once("usage limit reached|") {
        let digits = epoch.find(|c: char| !c.is_ascii_digit());
        let at = epoch[..digits.unwrap_or(epoch.len())].parse::<f64>().ok()?;
        return believed(at, rejected).then_some(at);
    }
    let i = lower.find("resets ")? + "resets ".len();
    let end = i + text[i..].find(')')?;
    let (time, zone) = time_of_day(&text[i..=end], CLOCK)?;
    let next = next_wall_time(rejected, time, &zone?)?;
    believed(next, rejected).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-03-28 20:00:00 UTC, a Saturday: Europe's clocks go forward at
    /// 01:00 UTC the next night.
    const SAT_20H: f64 = 1_774_728_000.0;

    fn utc(s: &str) -> f64 {
        s.parse::<jiff::Timestamp>().unwrap().as_second() as f64
    }

    #[test]
    fn the_banner_reset_is_the_next_such_wall_time_in_its_zone() {
        let cases = [
            // (text, rejected, reset)
            (
                "You've hit your session limit · resets 5:59am (UTC)",
                "2026-12-03T01:00:00Z",
                "2026-12-03T05:59:00Z",
            ),
            (
                "You've hit your session limit · resets 3pm (Europe/Berlin)",
                "2026-12-03T10:00:00Z",
                "2026-12-03T14:00:00Z",
            ),
            // Already past today: tomorrow, across midnight in the zone.
            (
                "resets 8:50pm (Europe/Skopje)",
                "2026-12-03T20:30:00Z",
                "2026-12-04T19:50:00Z",
            ),
            (
                "resets 12:15am (America/New_York)",
                "2026-12-03T04:00:00Z",
                "2026-12-03T05:15:00Z",
            ),
            // Across the spring-forward night: Berlin is UTC+2 on Sunday.
            (
                "resets 9am (Europe/Berlin)",
                "2026-03-28T20:00:00Z",
                "2026-03-29T07:00:00Z",
            ),
            (
                "Claude AI usage limit reached|1774760400",
                "2026-03-28T20:00:00Z",
                "2026-03-29T05:00:00Z",
            ),
        ];
        for (text, rejected, want) in cases {
            assert_eq!(from_text(text, utc(rejected)), Some(utc(want)), "{text}");
        }
        assert_eq!(utc("2026-03-28T20:00:00Z"), SAT_20H);
    }

    #[test]
    fn a_garbled_banner_names_no_reset() {
        for text in [
            "resets 13pm (UTC)",
            "resets 8:61pm (UTC)",
            "resets 8:50 (UTC)",
            "resets 8:50pm (Mars/Olympus)",
            "resets 8:50pm UTC",
            "resets soon",
            "Claude AI usage limit reached|",
            "Claude AI usage limit reached|99999999999",
            "the 529 in the docs resets nothing",
            "",
        ] {
            assert_eq!(from_text(text, SAT_20H), None, "{text}");
        }
    }

    /// Every shape of rejection text read today, and what it reads as:
    /// pinned before the parsing moved to `sys/clock.rs`.
    #[test]
    fn every_reset_shape_that_is_read() {
        let r = "2026-12-03T10:00:00Z";
        let cases = [
            // (text, rejected, reset)
            // The clock: minutes or none, AM/PM in any case, spaced or not.
            ("resets 8:50pm (UTC)", r, "2026-12-03T20:50:00Z"),
            ("resets 8:50 PM (UTC)", r, "2026-12-03T20:50:00Z"),
            ("resets 08:05AM (UTC)", r, "2026-12-04T08:05:00Z"),
            ("resets 8:5pm (UTC)", r, "2026-12-03T20:05:00Z"),
            ("resets 8pm (UTC)", r, "2026-12-03T20:00:00Z"),
            ("resets 8 pm (UTC)", r, "2026-12-03T20:00:00Z"),
            ("resets 12am (UTC)", r, "2026-12-04T00:00:00Z"),
            ("resets 12:30pm (UTC)", r, "2026-12-03T12:30:00Z"),
            // The framing: any case, spaces, text before and after.
            ("RESETS 8:50PM (UTC)", r, "2026-12-03T20:50:00Z"),
            ("resets   8:50pm   (  UTC  )", r, "2026-12-03T20:50:00Z"),
            ("resets 8:50pm(UTC)", r, "2026-12-03T20:50:00Z"),
            (
                "limit · resets 8:50pm (UTC) · /upgrade (more)",
                r,
                "2026-12-03T20:50:00Z",
            ),
            (
                "resets 8:50pm (UTC) resets 9pm (Europe/Berlin)",
                r,
                "2026-12-03T20:50:00Z",
            ),
            // The zone: as tzdb spells it, in any case.
            ("resets 8:50pm (Etc/GMT+5)", r, "2026-12-04T01:50:00Z"),
            (
                "resets 8:50pm (america/new_york)",
                r,
                "2026-12-04T01:50:00Z",
            ),
            ("resets 10am (Asia/Kolkata)", r, "2026-12-04T04:30:00Z"),
            // The time itself is tomorrow's.
            ("resets 10am (UTC)", r, "2026-12-04T10:00:00Z"),
            // The epoch form, anywhere in the text, any case.
            (
                "usage limit reached|1764799200",
                "2025-12-03T10:00:00Z",
                "2025-12-03T22:00:00Z",
            ),
            (
                "CLAUDE AI USAGE LIMIT REACHED|1764799200.",
                "2025-12-03T10:00:00Z",
                "2025-12-03T22:00:00Z",
            ),
            // The bound: eight days ahead is believed.
            (
                "usage limit reached|1765447200",
                "2025-12-03T10:00:00Z",
                "2025-12-11T10:00:00Z",
            ),
        ];
        for (text, rejected, want) in cases {
            assert_eq!(from_text(text, utc(rejected)), Some(utc(want)), "{text}");
        }
    }

    /// Every shape refused today: pinned with the ones read above.
    #[test]
    fn every_reset_shape_that_is_not_read() {
        let r = utc("2025-12-03T10:00:00Z");
        for text in [
            "resets 0am (UTC)",
            "resets 13:00pm (UTC)",
            "resets 8:60pm (UTC)",
            "resets 8:50 (UTC)",
            "resets 20:50 (UTC)",
            "resets 8:50xm (UTC)",
            "resets 8 :50pm (UTC)",
            "resets 8.50pm (UTC)",
            "resets at 8:50pm (UTC)",
            "resets8:50pm (UTC)",
            "resets 8:50pm UTC",
            "resets 8:50pm (UTC",
            "resets 8:50pm ()",
            "resets 8:50pm (+02:00)",
            "resets 8:50pm) (UTC)",
            // An epoch garbled, past, now, or more than eight days ahead;
            // a garbled one hides a clock reset beside it.
            "usage limit reached|x resets 9pm (UTC)",
            "usage limit reached|1764756000",
            "usage limit reached|1764700000",
            "usage limit reached|1765447201",
            "usage limit reached 1764799200",
        ] {
            assert_eq!(from_text(text, r), None, "{text}");
        }
    }

    #[test]
    fn usage_json_gives_the_latest_fresh_exhausted_reset() {
        let w = |used, resets_at, stale| Window {
            used_percentage: used,
            resets_at,
            stale,
        };
        let now = SAT_20H;
        let windows = [
            w(100.0, Some(now + 600.0), false),
            w(100.0, Some(now + 7200.0), false),
            w(40.0, Some(now + 9000.0), false),
        ];
        assert_eq!(from_usage(&windows, now), Some(now + 7200.0));
        // A stale answer, an unfed resets_at, a reset past: none is read.
        let unread = [
            w(100.0, Some(now + 600.0), true),
            w(100.0, None, false),
            w(100.0, Some(now - 1.0), false),
        ];
        assert_eq!(from_usage(&unread, now), None);
    }

    #[test]
    fn the_sources_are_taken_in_order_and_the_text_read_only_when_needed() {
        let now = SAT_20H;
        let fresh = [Window {
            used_percentage: 100.0,
            resets_at: Some(now + 60.0),
            stale: false,
        }];
        let banner = || "resets 9pm (UTC)".to_owned();
        let unread = || -> String { panic!("usage --json gave the reset") };
        assert_eq!(
            reset(Some(&fresh), unread, now, now, 1200.0),
            (now + 60.0, ResetFrom::UsageJson)
        );
        assert_eq!(
            reset(Some(&[]), banner, now, now, 1200.0),
            (now + 3600.0, ResetFrom::Banner)
        );
        assert_eq!(
            reset(None, || "no time".into(), now, now, 1200.0),
            (now + 1200.0, ResetFrom::Probe)
        );
        assert_eq!(reset(None, String::new, now, now, 1e6).0, now + PROBE_MAX_S);
        // A banner reset already past when it is read: the probe.
        assert_eq!(
            reset(None, banner, now, now + 7200.0, 1200.0).1,
            ResetFrom::Probe
        );
    }
}
