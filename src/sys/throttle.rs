//! The one throttle behind every rate-limited warning: at most one per key
//! per period, in bounded memory.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Keys remembered at most; a new key past that waits for old ones to expire.
const MAX_KEYS: usize = 1024;

/// When each key last let a warning through.
pub(crate) struct Throttle<K> {
    period: Duration,
    last: Mutex<BTreeMap<K, Instant>>,
}

impl<K: Ord> Throttle<K> {
    pub(crate) const fn new(period: Duration) -> Throttle<K> {
        Throttle {
            period,
            last: Mutex::new(BTreeMap::new()),
        }
    }

    /// Whether a warning about `key` may go out now; if so, it is noted.
    pub(crate) fn allows<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Ord + ToOwned<Owned = K> + ?Sized,
    {
        self.allows_at(key, Instant::now())
    }

    fn allows_at<Q>(&self, key: &Q, now: Instant) -> bool
    where
        K: Borrow<Q>,
        Q: Ord + ToOwned<Owned = K> + ?Sized,
    {
        let mut last = self.last.lock();
        let recent = |t: &Instant| now.saturating_duration_since(*t) < self.period;
        if last.get(key).is_some_and(recent) {
            return false;
        }
        if last.len() >= MAX_KEYS && !last.contains_key(key) {
            last.retain(|_, t| recent(t));
            if last.len() >= MAX_KEYS {
                return false;
            }
        }
        last.insert(key.to_owned(), now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    #[test]
    fn one_warning_per_key_per_period() {
        let throttle = Throttle::<()>::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert!(throttle.allows_at(&(), t0));
        assert!(!throttle.allows_at(&(), t0 + Duration::from_secs(9)));
        assert!(throttle.allows_at(&(), t0 + Duration::from_secs(10)));
        assert!(!throttle.allows_at(&(), t0 + Duration::from_secs(11)));
        assert!(
            !throttle.allows(&()),
            "the real clock is behind the fake one"
        );
    }

    #[test]
    fn one_warning_per_path_per_period_in_bounded_memory() {
        let limit = Throttle::<PathBuf>::new(Duration::from_secs(60));
        let t0 = Instant::now();
        let a = Path::new("/spool/a.json");
        assert!(limit.allows_at(a, t0));
        assert!(!limit.allows_at(a, t0 + Duration::from_secs(59)));
        assert!(limit.allows_at(Path::new("/spool/b.json"), t0));
        assert!(limit.allows_at(a, t0 + Duration::from_secs(60)));
        for i in 0..MAX_KEYS * 2 {
            limit.allows_at(&PathBuf::from(format!("/spool/{i}")), t0);
        }
        assert!(limit.last.lock().len() <= MAX_KEYS);
        assert!(limit.allows_at(Path::new("/spool/late"), t0 + Duration::from_secs(3600)));
    }
}
