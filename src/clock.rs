//! Time, injected: the decision code asks a [`Clock`] instead of the system,
//! so tests drive it with [`FakeClock`] and never sleep.
//!
//! Times are float Unix seconds, the unit of every record and of `state.json`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub trait Clock: Send + Sync {
    /// Wall-clock time in float Unix seconds.
    fn now(&self) -> f64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> f64 {
        unix_now()
    }
}

/// `secs` as a `Duration`, clamped to [0, one day]: NaN, negative and huge
/// values (from a stepped clock or a bad file) never panic.
pub fn clamped(secs: f64) -> std::time::Duration {
    if secs.is_nan() {
        return std::time::Duration::ZERO;
    }
    std::time::Duration::from_secs_f64(secs.clamp(0.0, 86_400.0))
}

pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A clock that moves only when told to.
#[derive(Debug, Default)]
pub struct FakeClock {
    micros: AtomicU64,
}

impl FakeClock {
    pub fn at(secs: f64) -> FakeClock {
        FakeClock {
            micros: AtomicU64::new((secs * 1e6) as u64),
        }
    }

    pub fn advance(&self, secs: f64) {
        self.micros.fetch_add((secs * 1e6) as u64, Ordering::SeqCst);
    }
}

impl Clock for FakeClock {
    fn now(&self) -> f64 {
        self.micros.load(Ordering::SeqCst) as f64 / 1e6
    }
}

/// `secs` as local time, `YYYY-MM-DD HH:MM:SS ZONE`, for human-facing text.
pub fn local_timestamp(secs: f64) -> String {
    let t = secs as libc::time_t;
    // SAFETY: tm is plain old data, fully written by localtime_r before use;
    // strftime writes at most buf.len() bytes and returns how many it wrote.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return utc_timestamp(secs);
        }
        let mut buf = [0u8; 64];
        let n = libc::strftime(
            buf.as_mut_ptr().cast(),
            buf.len(),
            c"%Y-%m-%d %H:%M:%S %Z".as_ptr(),
            &tm,
        );
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}

/// `secs` as UTC, `YYYY-MM-DDTHH:MM:SS.mmmZ`, for log lines.
pub fn utc_timestamp(secs: f64) -> String {
    let total_ms = (secs.max(0.0) * 1000.0) as i64;
    let (days, ms_of_day) = (
        total_ms.div_euclid(86_400_000),
        total_ms.rem_euclid(86_400_000),
    );
    let (y, m, d) = civil_from_days(days);
    let s = ms_of_day / 1000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        s / 3600,
        s / 60 % 60,
        s % 60,
        ms_of_day % 1000
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
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
}
