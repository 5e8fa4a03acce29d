//! A read that fails tick after tick (agent-deck gone, its store locked) as
//! one outage, pure: said when it starts, summed up every
//! [`SUMMARY_EVERY_S`] while it lasts, and said when it ends, instead of a
//! warning a tick (24 lines a minute at the default poll).

/// How often a lasting outage is summed up.
pub(crate) const SUMMARY_EVERY_S: f64 = 300.0;

/// One outage's tally; the default is none.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Outage {
    /// When the first failure of this outage was seen.
    since: Option<f64>,
    /// The failures seen in it.
    failures: u64,
    /// When it was last said.
    said_at: f64,
}

/// What to say of a read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Said {
    /// The first failure.
    Started,
    /// Still failing: `failures` so far, over `secs`.
    Lasting { failures: u64, secs: f64 },
    /// It read again after `failures` failures over `secs`.
    Ended { failures: u64, secs: f64 },
}

impl Outage {
    /// Notes a read at `now` that `failed` or not; what to say of it, if
    /// anything.
    pub(crate) fn note(&mut self, failed: bool, now: f64) -> Option<Said> {
        let Some(since) = self.since else {
            if failed {
                *self = Outage {
                    since: Some(now),
                    failures: 1,
                    said_at: now,
                };
                return Some(Said::Started);
            }
            return None;
        };
        let (failures, secs) = (self.failures, now - since);
        if !failed {
            *self = Outage::default();
            return Some(Said::Ended { failures, secs });
        }
        self.failures += 1;
        if now - self.said_at < SUMMARY_EVERY_S {
            return None;
        }
        self.said_at = now;
        Some(Said::Lasting {
            failures: self.failures,
            secs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_is_said_when_it_starts_every_few_minutes_and_when_it_ends() {
        let mut o = Outage::default();
        assert_eq!(o.note(false, 0.0), None, "no outage, nothing to say");
        assert_eq!(o.note(true, 10.0), Some(Said::Started));
        let said: Vec<Said> = (1..=120)
            .filter_map(|i| o.note(true, 10.0 + 5.0 * f64::from(i)))
            .collect();
        assert_eq!(
            said,
            [
                Said::Lasting {
                    failures: 61,
                    secs: 300.0
                },
                Said::Lasting {
                    failures: 121,
                    secs: 600.0
                },
            ],
            "a summary every five minutes, not a line a tick"
        );
        assert_eq!(
            o.note(false, 612.0),
            Some(Said::Ended {
                failures: 121,
                secs: 602.0
            })
        );
        assert_eq!(o.note(false, 620.0), None);
        assert_eq!(o.note(true, 630.0), Some(Said::Started), "a new outage");
    }
}
