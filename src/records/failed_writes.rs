//! A file the daemon rewrites again and again (`state.json`, the metrics
//! files) whose failures come in episodes, a full disk for one: the first
//! failure of an episode is warned about, the rest are counted, and the
//! first write that works again says how many failed. It logs; it never
//! writes or retries.

use std::path::Path;

/// The failed writes of the episode in progress (0: none is).
#[derive(Debug, Default)]
pub(crate) struct FailedWrites(u64);

impl FailedWrites {
    /// Notes how a write of `path` went; `meanwhile` says what the daemon
    /// does until a write works.
    pub(crate) fn note(&mut self, path: &Path, result: &std::io::Result<()>, meanwhile: &str) {
        match result {
            Ok(()) if self.0 > 0 => {
                log::info!(
                    "{} written again after {} failed writes",
                    path.display(),
                    self.0
                );
                self.0 = 0;
            }
            Ok(()) => {}
            Err(e) => {
                if self.0 == 0 {
                    log::warn!("cannot write {} ({e}); {meanwhile}", path.display());
                }
                self.0 += 1;
            }
        }
    }

    /// The failed writes of the episode in progress.
    #[cfg(test)]
    pub(crate) fn failed(&self) -> u64 {
        self.0
    }
}
