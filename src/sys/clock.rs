//! Time, injected: the decision code asks a [`Clock`] instead of the system,
//! so tests drive it with [`FakeClock`] and never sleep. Times are float Unix
//! seconds, the unit of every record and of `state.json`. Wall-clock time
//! as text, both ways, is here too: written for people and logs, and read
//! from the retry and reset times agent-deck and Claude print (the words
//! around them are read where they are used, in `decide/`).

#[cfg(test)]
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use jiff::civil::{date, Date, Time};
use jiff::fmt::strtime::BrokenDownTime;
use jiff::tz::TimeZone;
use jiff::Timestamp;

/// A retry or reset time further ahead than this is not believed: the
/// longest plan window is a week.
pub(crate) const WALL_TIME_HORIZON_S: f64 = 8.0 * 86_400.0;

pub(crate) trait Clock: Send + Sync {
    /// Wall-clock time in float Unix seconds.
    fn now(&self) -> f64;
}

#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> f64 {
        unix_now()
    }
}

/// `secs` as a `Duration`, clamped to [0, one day]: NaN, negative and huge
/// values (from a stepped clock or a bad file) never panic.
pub(crate) fn clamped(secs: f64) -> std::time::Duration {
    // NaN passes the clamp and fails the conversion: zero.
    std::time::Duration::try_from_secs_f64(secs.clamp(0.0, 86_400.0)).unwrap_or_default()
}

pub(crate) fn unix_now() -> f64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH);
    since.map_or(0.0, |d| d.as_secs_f64())
}

/// A clock that moves only when told to.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct FakeClock {
    micros: AtomicU64,
}

#[cfg(test)]
impl FakeClock {
    pub(crate) fn at(secs: f64) -> FakeClock {
        FakeClock {
            micros: AtomicU64::new((secs * 1e6) as u64),
        }
    }

    pub(crate) fn advance(&self, secs: f64) {
        self.micros.fetch_add((secs * 1e6) as u64, Ordering::SeqCst);
    }
}

#[cfg(test)]
impl Clock for FakeClock {
    fn now(&self) -> f64 {
        self.micros.load(Ordering::SeqCst) as f64 / 1e6
    }
}

/// `secs` as a jiff timestamp; out-of-range or NaN input reads as the epoch
/// (the cast saturates, and NaN casts to 0).
fn timestamp(secs: f64) -> Timestamp {
    Timestamp::from_millisecond((secs * 1000.0) as i64).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// `secs` as local time, `YYYY-MM-DD HH:MM:SS ZONE`, for human-facing text.
pub(crate) fn local_timestamp(secs: f64) -> String {
    let local = timestamp(secs).to_zoned_datetime(TimeZone::system());
    local.strftime("%Y-%m-%d %H:%M:%S %Z").to_string()
}

/// `secs` as UTC, `YYYY-MM-DDTHH:MM:SS.mmmZ`, for log lines.
pub(crate) fn utc_timestamp(secs: f64) -> String {
    timestamp(secs.max(0.0))
        .strftime("%Y-%m-%dT%H:%M:%S.%3fZ")
        .to_string()
}

/// The local calendar day of `secs`, as days since 1970-01-01.
pub(crate) fn local_day(secs: f64) -> i64 {
    day_in(secs, &TimeZone::system())
}

fn day_in(secs: f64, tz: &TimeZone) -> i64 {
    let epoch = jiff::civil::date(1970, 1, 1);
    i64::from((timestamp(secs).to_zoned_datetime(tz.clone()).date() - epoch).get_days())
}

/// The first instant of the local day after the one holding `secs`.
pub(crate) fn next_local_midnight(secs: f64) -> f64 {
    next_midnight_in(secs, &TimeZone::system())
}

fn next_midnight_in(secs: f64, tz: &TimeZone) -> f64 {
    timestamp(secs)
        .to_zoned_datetime(tz.clone())
        .tomorrow()
        .and_then(|z| z.start_of_day())
        .map(|z| z.timestamp().as_millisecond() as f64 / 1000.0)
        .unwrap_or(secs + 86_400.0)
}

/// Whether a retry or reset time `at` that agent-deck or Claude gave is
/// believed at `now`: ahead, by at most [`WALL_TIME_HORIZON_S`].
pub(crate) fn believed(at: f64, now: f64) -> bool {
    at > now && at - now <= WALL_TIME_HORIZON_S
}

/// `text`, all of it, as a time of day by the first of `formats` (jiff's
/// `strtime`) that reads it, with the zone it names (`%Q`), if any.
pub(crate) fn time_of_day(text: &str, formats: &[&str]) -> Option<(Time, Option<TimeZone>)> {
    formats.iter().find_map(|format| {
        let read = BrokenDownTime::parse(format, text).ok()?;
        let zone = read.iana_time_zone().map(TimeZone::get).transpose().ok()?;
        Some((read.to_time().ok()?, zone))
    })
}

/// The words `oct`, `10th,`, `2026` as a date: a month named by 3 letters
/// or more of its name, a day with an ordinal suffix or none. By hand:
/// `strtime` reads neither the suffix nor a month's longer prefixes.
pub(crate) fn civil_date(month: &str, day: &str, year: &str) -> Option<Date> {
    let month = month.trim_end_matches('.');
    let m = (1..=12).find(|&m| {
        let name = date(2000, m, 1).strftime("%B").to_string();
        let start = name.get(..month.len());
        month.len() >= 3 && start.is_some_and(|s| s.eq_ignore_ascii_case(month))
    })?;
    let day = day.trim_end_matches(',');
    let digits = day.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &day[digits.len()..];
    if !["", "st", "nd", "rd", "th"].contains(&&*suffix.to_ascii_lowercase()) {
        return None;
    }
    let (d, y): (i8, i16) = (digits.parse().ok()?, year.parse().ok()?);
    Date::new(y, m, d).ok()
}

/// `time` on `day` in `tz`, as Unix seconds (a time a DST change skips
/// reads as jiff's compatible one).
pub(crate) fn wall_time(day: Date, time: Time, tz: &TimeZone) -> Option<f64> {
    let zoned = day.to_datetime(time).to_zoned_datetime(tz.clone()).ok()?;
    Some(zoned.timestamp().as_second() as f64)
}

/// The first `time` of day in `tz` after `after` (Unix seconds): today's,
/// else tomorrow's.
pub(crate) fn next_wall_time(after: f64, time: Time, tz: &TimeZone) -> Option<f64> {
    let today = Timestamp::from_second(after as i64)
        .ok()?
        .to_zoned_datetime(tz.clone())
        .date();
    let first = wall_time(today, time, tz)?;
    if first > after {
        return Some(first);
    }
    wall_time(today.tomorrow().ok()?, time, tz)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_clock_moves_only_when_told() {
        let c = FakeClock::at(1000.0);
        assert_eq!(c.now(), 1000.0);
        c.advance(2.5);
        assert_eq!(c.now(), 1002.5);
    }

    #[test]
    fn utc_format() {
        assert_eq!(utc_timestamp(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc_timestamp(1_755_891_234.5), "2025-08-22T19:33:54.500Z");
    }

    #[test]
    fn local_format_has_date_and_time() {
        let s = local_timestamp(1_755_891_234.0);
        assert!(s.starts_with("2025-08-2"), "{s}");
    }

    #[test]
    fn the_day_is_the_operators_local_day() {
        let seoul = TimeZone::fixed(jiff::tz::offset(9));
        let new_york = TimeZone::fixed(jiff::tz::offset(-5));
        // 2026-11-30 20:00 UTC: already Dec 1 in Seoul, still Nov 30 in New York.
        let t = 1_796_068_800.0;
        assert_eq!(day_in(t, &TimeZone::UTC), 20_787);
        assert_eq!(day_in(t, &seoul), 20_788);
        assert_eq!(day_in(t, &new_york), 20_787);
        // Midnight in Seoul is 15:00 UTC.
        assert_eq!(next_midnight_in(t, &seoul), 1_796_137_200.0);
        assert_eq!(next_midnight_in(t, &TimeZone::UTC), 1_796_083_200.0);
    }

    #[test]
    fn nan_and_huge_times_do_not_panic() {
        for t in [f64::NAN, f64::INFINITY, -1e300, 1e300] {
            let _ = (local_timestamp(t), utc_timestamp(t), local_day(t));
            let _ = next_local_midnight(t);
        }
        assert_eq!(clamped(f64::NAN), std::time::Duration::ZERO);
        assert_eq!(clamped(-1.0), std::time::Duration::ZERO);
        assert_eq!(clamped(1e300), std::time::Duration::from_secs(86_400));
    }
}
