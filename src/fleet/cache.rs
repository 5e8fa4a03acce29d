//! The session cache: the last readable `list --all`, and which of those
//! sessions are restart-critical.
//!
//! An unreadable list keeps the last known fleet (unknown is never "no
//! sessions"). The opt-in markers are read with one directory listing, and
//! ids are validated before they are used as file names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::fleet::deck::{AgentDeck, CliError};
use crate::fleet::session::{self, Session};

/// An unknown hook id refreshes the cache at most this often.
const MIN_REFRESH_GAP: Duration = Duration::from_secs(1);

pub struct Fleet {
    sessions: BTreeMap<String, Session>,
    markers: BTreeSet<String>,
    autorestart_dir: PathBuf,
    last_refresh: Option<Instant>,
}

impl Fleet {
    pub fn new(autorestart_dir: PathBuf) -> Fleet {
        Fleet {
            sessions: BTreeMap::new(),
            markers: BTreeSet::new(),
            autorestart_dir,
            last_refresh: None,
        }
    }

    /// Re-reads `list --all`; on failure the last known fleet stays.
    pub fn refresh(&mut self, deck: &dyn AgentDeck) -> Result<(), CliError> {
        self.last_refresh = Some(Instant::now());
        let list = deck.list_all()?;
        self.sessions = list.into_iter().map(|s| (s.id.clone(), s)).collect();
        Ok(())
    }

    /// Refreshes unless that happened less than a second ago.
    pub fn refresh_if_stale(&mut self, deck: &dyn AgentDeck) {
        if self
            .last_refresh
            .is_some_and(|t| t.elapsed() < MIN_REFRESH_GAP)
        {
            return;
        }
        if let Err(e) = self.refresh(deck) {
            log::warn!("session list is unreadable ({e}); keeping the last known fleet");
        }
    }

    /// Re-reads the opt-in marker directory.
    pub fn reload_markers(&mut self) {
        self.markers = match std::fs::read_dir(&self.autorestart_dir) {
            Ok(entries) => entries
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .filter(|name| session::is_valid_id(name))
                .collect(),
            Err(_) => BTreeSet::new(),
        };
    }

    pub fn get(&self, id: &str) -> Option<&Session> {
        self.sessions.get(id)
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_critical(&self, s: &Session) -> bool {
        session::is_critical_by_name(s)
            || (session::is_valid_id(&s.id) && self.markers.contains(&s.id))
    }

    /// The restart-critical sessions, in id order.
    pub fn critical(&self) -> Vec<Session> {
        self.sessions
            .values()
            .filter(|s| self.is_critical(s))
            .cloned()
            .collect()
    }

    /// The distinct profiles of `sessions`.
    pub fn profiles(sessions: &[Session]) -> BTreeSet<String> {
        sessions.iter().map(|s| s.profile.clone()).collect()
    }

    /// All sessions, for patrols that look beyond the critical ones.
    pub fn all(&self) -> impl Iterator<Item = &Session> {
        self.sessions.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_opt_in_and_traversal() {
        let tmp = tempfile::tempdir().unwrap();
        let mut f = Fleet::new(tmp.path().to_owned());
        let worker = Session {
            id: "a0b1c2d3-1755899999".into(),
            title: "worker-1".into(),
            ..Session::default()
        };
        let sneaky = Session {
            id: "../a0b1c2d3-1755899999".into(),
            ..worker.clone()
        };
        f.reload_markers();
        assert!(!f.is_critical(&worker));
        std::fs::write(tmp.path().join(&worker.id), "").unwrap();
        f.reload_markers();
        assert!(f.is_critical(&worker));
        assert!(!f.is_critical(&sneaky));
    }
}
