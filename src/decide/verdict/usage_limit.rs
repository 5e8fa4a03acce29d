//! A session in `error` at its plan's usage limit (substate `usage-limit`:
//! Codex's "You've hit your usage limit" banner, CHANGELOG 1.16.11), pure: it
//! goes the 429 path, backed off until the retry time agent-deck gives in
//! `substate_detail`, once per limit in an error episode.
//!
//! The detail is free text. agent-deck's only writer is the Codex banner
//! scan, and its own test pins the text as `try again at Oct 10th, 2026 8:03
//! AM` (`SubstateDetail` in `internal/tmux/substate.go`, and the status-light
//! audit test beside it, 1.16.11): the banner's local wall-clock time, with
//! no zone. Read here: that shape, `[try again at] <Month> <day>[st|nd|rd|th],
//! <year> <h>:<mm> [AM|PM]`, or the time alone (`8:03 AM`: its next
//! occurrence). Anything else, a time already past, or one more than
//! [`WALL_TIME_HORIZON_S`] ahead is "cannot be read": `API_429_BACKOFF_S`.
//!
//! [`WALL_TIME_HORIZON_S`]: crate::sys::clock::WALL_TIME_HORIZON_S

use jiff::tz::TimeZone;

use crate::decide::book::State;
use crate::sys::clock::{self, civil_date, next_wall_time, time_of_day, wall_time};

/// The banner's clock, its words run together: 12-hour with AM/PM, or
/// 24-hour; minutes always.
const CLOCK: &[&str] = &["%I:%M%p", "%H:%M"];

/// When the limit named by `detail` resets, as Unix seconds in `tz`, if it
/// can be read and is believed ([`clock::believed`]).
pub(crate) fn retry_at(detail: &str, now: f64, tz: &TimeZone) -> Option<f64> {
    let text = detail.trim().trim_end_matches('.').to_ascii_lowercase();
    let text = text.strip_prefix("try again at").unwrap_or(&text).trim();
    let words: Vec<&str> = text.split_whitespace().collect();
    let retry = match words.as_slice() {
        [month, day, year, time @ ..] => {
            let day = civil_date(month, day, year)?;
            wall_time(day, time_of_day(&time.concat(), CLOCK)?.0, tz)?
        }
        time => next_wall_time(now, time_of_day(&time.concat(), CLOCK)?.0, tz)?,
    };
    clock::believed(retry, now).then_some(retry)
}

/// Whether the usage limit `detail` is new in this error episode of `id`
/// (it is noted): one limit is backed off for, and recorded, once.
pub(crate) fn first_sight(state: &mut State, id: &str, detail: &str) -> bool {
    let book = state.book(id);
    if book.usage_limit.as_deref() == Some(detail) {
        return false;
    }
    book.usage_limit = Some(detail.to_owned());
    true
}

/// How long to back off for `detail` at `now`: until its retry time, else
/// `fallback` (`API_429_BACKOFF_S`).
pub(crate) fn backoff(detail: &str, now: f64, tz: &TimeZone, fallback: f64) -> f64 {
    retry_at(detail, now, tz).map_or(fallback, |t| t - now)
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;

    use super::*;
    use crate::decide::book::notes::note_status;
    use crate::decide::book::notes::tests::sess;
    use crate::fleet::session::Status;
    use crate::sys::clock::{Clock, FakeClock};

    /// 2026-10-10 06:00:00 UTC.
    const MORNING: f64 = 1_791_612_000.0;

    #[test]
    fn the_banner_time_agent_deck_gives_is_read_in_the_local_zone() {
        let utc = TimeZone::UTC;
        let detail = "try again at Oct 10th, 2026 8:03 AM";
        assert_eq!(retry_at(detail, MORNING, &utc), Some(MORNING + 7_380.0));
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        // 8:03 in Berlin (UTC+2 in October) is 6:03 UTC.
        assert_eq!(retry_at(detail, MORNING, &berlin), Some(MORNING + 180.0));
        for same in [
            "Oct 10, 2026 8:03 am",
            "try again at October 10th, 2026 8:03AM.",
            "Try again at Oct 10th 2026 08:03 AM",
            "oct 10th, 2026 8:03",
        ] {
            assert_eq!(
                retry_at(same, MORNING, &utc),
                Some(MORNING + 7_380.0),
                "{same}"
            );
        }
        let pm = retry_at("try again at Oct 10th, 2026 12:30 PM", MORNING, &utc);
        assert_eq!(pm, Some(MORNING + 6.5 * 3600.0));
    }

    #[test]
    fn a_time_alone_is_its_next_occurrence() {
        let utc = TimeZone::UTC;
        assert_eq!(
            retry_at("try again at 8:03 AM", MORNING, &utc),
            Some(MORNING + 7_380.0)
        );
        assert_eq!(
            retry_at("try again at 5:00 AM", MORNING, &utc),
            Some(MORNING + 23.0 * 3600.0),
            "already past today: tomorrow"
        );
    }

    #[test]
    fn what_cannot_be_read_backs_off_the_default() {
        let utc = TimeZone::UTC;
        for unread in [
            "",
            "soon",
            "try again later",
            "in 5 minutes",
            "workflow comms 3/5 · 18m32s",
            "try again at Oct 32nd, 2026 8:03 AM",
            "try again at Foo 10th, 2026 8:03 AM",
            "try again at Oct 10xx, 2026 8:03 AM",
            "try again at Oct 10th, 2026 13:03 PM",
            "try again at Oct 10th, 2026 8:60 AM",
            "try again at Oct 9th, 2026 8:03 AM",
            "try again at Oct 10th, 2027 8:03 AM",
            "1791619380",
            "try again at Öct 10th, 2026 8:03 AM",
            "try again at Oct 1０th, 2026 8:03 AM",
            "try again at Oct 10th, 2026 ８:03 AM",
        ] {
            assert_eq!(retry_at(unread, MORNING, &utc), None, "{unread}");
            assert_eq!(backoff(unread, MORNING, &utc, 180.0), 180.0, "{unread}");
        }
        let at = backoff("try again at Oct 10th, 2026 8:03 AM", MORNING, &utc, 180.0);
        assert_eq!(at, 7_380.0);
    }

    fn utc(s: &str) -> f64 {
        s.parse::<Timestamp>().unwrap().as_second() as f64
    }

    /// Every shape of retry time read today, and what it reads as (in UTC,
    /// at `MORNING`): pinned before the parsing moved to `sys/clock.rs`.
    #[test]
    fn every_retry_time_shape_that_is_read() {
        let cases = [
            // The framing: the prefix in any case or none, dots, spaces.
            (
                "try again at Oct 10th, 2026 8:03 AM",
                "2026-10-10T08:03:00Z",
            ),
            (
                "TRY AGAIN AT OCT 10TH, 2026 8:03 AM",
                "2026-10-10T08:03:00Z",
            ),
            ("Oct 10th, 2026 8:03 AM", "2026-10-10T08:03:00Z"),
            (
                "  try again at  Oct  10th,  2026  8:03  AM..  ",
                "2026-10-10T08:03:00Z",
            ),
            ("try again atOct 10th, 2026 8:03 AM", "2026-10-10T08:03:00Z"),
            // The month: abbreviated, with a dot, whole, any prefix of 3+.
            (
                "try again at Oct. 10th, 2026 8:03 AM",
                "2026-10-10T08:03:00Z",
            ),
            (
                "try again at October 10th, 2026 8:03 AM",
                "2026-10-10T08:03:00Z",
            ),
            (
                "try again at Octob 10th, 2026 8:03 AM",
                "2026-10-10T08:03:00Z",
            ),
            // The day: every suffix or none (not checked against the
            // number), commas or none.
            (
                "try again at Oct 11st, 2026 8:03 AM",
                "2026-10-11T08:03:00Z",
            ),
            (
                "try again at Oct 12nd, 2026 8:03 AM",
                "2026-10-12T08:03:00Z",
            ),
            (
                "try again at Oct 13rd, 2026 8:03 AM",
                "2026-10-13T08:03:00Z",
            ),
            ("try again at Oct 14 2026 8:03 AM", "2026-10-14T08:03:00Z"),
            ("try again at Oct 15,, 2026 8:03 AM", "2026-10-15T08:03:00Z"),
            (
                "try again at Oct 010th, 2026 8:03 AM",
                "2026-10-10T08:03:00Z",
            ),
            // The clock: 12-hour with AM/PM in any case, spaced or not,
            // or 24-hour; one or two digits.
            ("try again at Oct 10th, 2026 8:03am", "2026-10-10T08:03:00Z"),
            (
                "try again at Oct 10th, 2026 08:03 pm",
                "2026-10-10T20:03:00Z",
            ),
            (
                "try again at Oct 10th, 2026 12:30 PM",
                "2026-10-10T12:30:00Z",
            ),
            (
                "try again at Oct 11th, 2026 12:05 AM",
                "2026-10-11T00:05:00Z",
            ),
            ("try again at Oct 10th, 2026 8:3 AM", "2026-10-10T08:03:00Z"),
            (
                "try again at Oct 10th, 2026 8:03 A M",
                "2026-10-10T08:03:00Z",
            ),
            ("try again at Oct 10th, 2026 20:03", "2026-10-10T20:03:00Z"),
            ("try again at Oct 11th, 2026 0:03", "2026-10-11T00:03:00Z"),
            // A time alone: its next occurrence, today's or tomorrow's.
            ("try again at 8:03 AM", "2026-10-10T08:03:00Z"),
            ("8:03pm.", "2026-10-10T20:03:00Z"),
            ("try again at 23:59", "2026-10-10T23:59:00Z"),
            ("try again at 6:00 AM", "2026-10-11T06:00:00Z"),
            ("try again at 12:00 AM", "2026-10-11T00:00:00Z"),
            ("try again at 0:00", "2026-10-11T00:00:00Z"),
            // The bound: eight days ahead is believed.
            (
                "try again at Oct 18th, 2026 6:00 AM",
                "2026-10-18T06:00:00Z",
            ),
        ];
        let tz = TimeZone::UTC;
        for (detail, want) in cases {
            assert_eq!(retry_at(detail, MORNING, &tz), Some(utc(want)), "{detail}");
        }
        // Dates across a year end, in the banner's zone.
        let new_year = utc("2026-12-30T12:00:00Z");
        let sept = "try again at Sept 1st, 2027 8:03 AM";
        assert_eq!(
            retry_at("Jan 2nd, 2027 9:00 AM", new_year, &tz),
            Some(utc("2027-01-02T09:00:00Z"))
        );
        assert_eq!(
            retry_at(sept, utc("2027-08-30T00:00:00Z"), &tz),
            Some(utc("2027-09-01T08:03:00Z"))
        );
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        assert_eq!(
            retry_at("Dec 31st, 2026 11:30 PM", new_year, &berlin),
            Some(utc("2026-12-31T22:30:00Z"))
        );
    }

    /// Every shape refused today: pinned with the ones read above.
    #[test]
    fn every_retry_time_shape_that_is_not_read() {
        let tz = TimeZone::UTC;
        for unread in [
            // No clock, or no minutes, or not a clock.
            "try again at Oct 10th, 2026",
            "try again at Oct 10th, 2026 8 AM",
            "try again at 8 AM",
            "try again at 8.03 AM",
            "try again at 8:03 XM",
            "try again at 8:03 AM UTC",
            "try again at 8:03 AM tomorrow",
            "try again at Oct 10",
            // Hours and minutes out of range.
            "try again at 0:03 AM",
            "try again at 13:03 AM",
            "try again at 24:00",
            "try again at 8:60",
            "try again at 8:-1",
            // The month: too short, unknown, longer than the name.
            "try again at Oc 10th, 2026 8:03 AM",
            "try again at Octx 10th, 2026 8:03 AM",
            "try again at Octobers 10th, 2026 8:03 AM",
            // The day: a suffix that is none, no number, no such day.
            "try again at Oct 10xx, 2026 8:03 AM",
            "try again at Oct th, 2026 8:03 AM",
            "try again at Oct 0th, 2026 8:03 AM",
            "try again at Feb 30th, 2027 8:03 AM",
            "try again at Oct 10.th, 2026 8:03 AM",
            // The year: not a bare number.
            "try again at Oct 10th, 2026, 8:03 AM",
            "try again at Oct 10th, '26 8:03 AM",
            // A time past, or more than eight days ahead.
            "try again at Oct 10th, 2026 6:00 AM",
            "try again at Oct 18th, 2026 6:01 AM",
            "try again at Oct 10th, 2025 8:03 AM",
        ] {
            assert_eq!(retry_at(unread, MORNING, &tz), None, "{unread}");
        }
    }

    /// A year outside jiff's range (±9999) panicked building the date.
    #[test]
    fn a_year_jiff_cannot_hold_is_not_read_and_does_not_panic() {
        for year in ["12345", "-10000", "32767"] {
            let detail = format!("try again at Oct 10th, {year} 8:03 AM");
            assert_eq!(retry_at(&detail, MORNING, &TimeZone::UTC), None, "{detail}");
        }
    }

    #[test]
    fn each_limit_is_noted_once_per_error_episode() {
        let (c, mut s) = (FakeClock::at(MORNING), State::default());
        let id = "c0dex000-1";
        note_status(&mut s, &sess(id), Status::Error, c.now());
        assert!(first_sight(&mut s, id, "try again at 8:03 AM"));
        assert!(!first_sight(&mut s, id, "try again at 8:03 AM"));
        assert!(
            first_sight(&mut s, id, "try again at 9:15 AM"),
            "a new limit"
        );
        c.advance(60.0);
        note_status(&mut s, &sess(id), Status::Running, c.now());
        assert!(
            first_sight(&mut s, id, "try again at 9:15 AM"),
            "a new episode"
        );
    }
}
