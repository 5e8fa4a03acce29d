//! The one sink behind every warning that must not repeat a tick: by key,
//! a condition is said when it starts, again at most once per period while
//! it lasts (never again with [`ONCE`]), and when it ends, in bounded
//! memory. A rate limit is the same thing with an end nobody reports.
//! Pure over `now`, given in whatever clock the caller keeps: it never
//! logs, it says what to say.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Keys remembered at most; a new key past that waits for old ones to expire.
const MAX_KEYS: usize = 1024;

/// The period of a condition said once until it ends.
pub(crate) const ONCE: Duration = Duration::MAX;

/// A moment of a clock: an `Instant`, or the injected clock's seconds.
pub(crate) trait Moment: Copy {
    /// Seconds from `earlier` to `self`.
    fn secs_since(self, earlier: Self) -> f64;
}

impl Moment for Instant {
    fn secs_since(self, earlier: Instant) -> f64 {
        self.saturating_duration_since(earlier).as_secs_f64()
    }
}

impl Moment for f64 {
    fn secs_since(self, earlier: f64) -> f64 {
        self - earlier
    }
}

/// What to say of a condition, if anything.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Said {
    /// It started.
    Started,
    /// Still there: noted `times` so far, over `secs`.
    Lasting { times: u64, secs: f64 },
    /// It ended after being noted `times` times over `secs`.
    Ended { times: u64, secs: f64 },
}

/// One condition while it lasts.
#[derive(Debug)]
struct Heard<T> {
    since: T,
    said_at: T,
    times: u64,
}

/// Each key's condition, while it lasts.
#[derive(Debug)]
pub(crate) struct SayOnce<K, T = Instant> {
    heard: Mutex<BTreeMap<K, Heard<T>>>,
}

impl<K, T> Default for SayOnce<K, T> {
    fn default() -> Self {
        SayOnce::new()
    }
}

impl<K, T> SayOnce<K, T> {
    pub(crate) const fn new() -> SayOnce<K, T> {
        SayOnce {
            heard: Mutex::new(BTreeMap::new()),
        }
    }
}

impl<K: Ord, T: Moment> SayOnce<K, T> {
    /// Notes `key`'s condition at `now`, said at most once per `every`;
    /// what to say of it, if anything. Past [`MAX_KEYS`], a new key is not
    /// said until some other was last said more than `every` ago.
    pub(crate) fn note<Q>(&self, key: &Q, now: T, every: Duration) -> Option<Said>
    where
        K: Borrow<Q>,
        Q: Ord + ToOwned<Owned = K> + ?Sized,
    {
        let every = every.as_secs_f64();
        let mut heard = self.heard.lock();
        if let Some(h) = heard.get_mut(key) {
            h.times += 1;
            if now.secs_since(h.said_at) < every {
                return None;
            }
            h.said_at = now;
            let (times, secs) = (h.times, now.secs_since(h.since));
            return Some(Said::Lasting { times, secs });
        }
        if heard.len() >= MAX_KEYS {
            heard.retain(|_, h| now.secs_since(h.said_at) < every);
            if heard.len() >= MAX_KEYS {
                return None;
            }
        }
        let h = Heard {
            since: now,
            said_at: now,
            times: 1,
        };
        heard.insert(key.to_owned(), h);
        Some(Said::Started)
    }

    /// `key`'s condition is over at `now`: [`Said::Ended`] if it was on.
    pub(crate) fn end<Q>(&self, key: &Q, now: T) -> Option<Said>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let h = self.heard.lock().remove(key)?;
        let (times, secs) = (h.times, now.secs_since(h.since));
        Some(Said::Ended { times, secs })
    }
}

impl<K: Ord> SayOnce<K> {
    /// Whether `key` may be said now, at most once per `every`.
    pub(crate) fn allows<Q>(&self, key: &Q, every: Duration) -> bool
    where
        K: Borrow<Q>,
        Q: Ord + ToOwned<Owned = K> + ?Sized,
    {
        self.note(key, Instant::now(), every).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    const TEN: Duration = Duration::from_secs(10);

    #[test]
    fn one_warning_per_key_per_period() {
        let sink = SayOnce::<()>::new();
        let t0 = Instant::now();
        let said = |at: u64| sink.note(&(), t0 + Duration::from_secs(at), TEN).is_some();
        assert!(said(0));
        assert!(!said(9));
        assert!(said(10));
        assert!(!said(11));
        assert!(
            !sink.allows(&(), TEN),
            "the real clock is behind the fake one"
        );
    }

    #[test]
    fn once_is_until_it_ends() {
        let sink = SayOnce::<(), f64>::new();
        assert_eq!(sink.note(&(), 0.0, ONCE), Some(Said::Started));
        assert_eq!(sink.note(&(), 1e12, ONCE), None, "never again");
        let ended = Some(Said::Ended {
            times: 2,
            secs: 1e12 + 1.0,
        });
        assert_eq!(sink.end(&(), 1e12 + 1.0), ended);
        assert_eq!(sink.note(&(), 1e12 + 2.0, ONCE), Some(Said::Started));
        sink.end(&(), 1e12 + 2.5);
        assert_eq!(sink.note(&(), 1e12 + 3.0, ONCE), Some(Said::Started));
    }

    #[test]
    fn an_outage_is_said_when_it_starts_every_few_minutes_and_when_it_ends() {
        let sink = SayOnce::<String, f64>::new();
        let every = Duration::from_secs(300);
        assert_eq!(sink.end("list", 0.0), None, "no outage, nothing to say");
        assert_eq!(sink.note("list", 10.0, every), Some(Said::Started));
        let said: Vec<Said> = (1..=120)
            .filter_map(|i| sink.note("list", 10.0 + 5.0 * f64::from(i), every))
            .collect();
        let lasting = |times, secs| Said::Lasting { times, secs };
        assert_eq!(
            said,
            [lasting(61, 300.0), lasting(121, 600.0)],
            "a summary every five minutes, not a line a tick"
        );
        let ended = Some(Said::Ended {
            times: 121,
            secs: 602.0,
        });
        assert_eq!(sink.end("list", 612.0), ended);
        assert_eq!(sink.end("list", 620.0), None);
        assert_eq!(sink.note("list", 630.0, every), Some(Said::Started), "anew");
    }

    #[test]
    fn one_warning_per_path_per_period_in_bounded_memory() {
        let sink = SayOnce::<PathBuf>::new();
        let minute = Duration::from_secs(60);
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let a = Path::new("/spool/a.json");
        assert!(sink.note(a, t0, minute).is_some());
        assert!(sink.note(a, at(59), minute).is_none());
        assert!(sink.note(Path::new("/spool/b.json"), t0, minute).is_some());
        assert!(sink.note(a, at(60), minute).is_some());
        for i in 0..MAX_KEYS * 2 {
            sink.note(&PathBuf::from(format!("/spool/{i}")), t0, minute);
        }
        assert!(sink.heard.lock().len() <= MAX_KEYS);
        let late = sink.note(Path::new("/spool/late"), at(3600), minute);
        assert!(late.is_some());
    }
}
