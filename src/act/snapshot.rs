//! What one safety tick saw of the fleet, as the patrols and the
//! Telegram poller check read it. Plain data, borrowed from the tick.

use std::collections::{BTreeMap, BTreeSet};

use crate::fleet::session::{Live, Session, Status};

pub(crate) struct Snapshot<'a> {
    pub sessions: Vec<&'a Session>,
    pub critical: &'a [Session],
    pub live: &'a BTreeMap<String, Live>,
    /// Profiles whose live list could not be read this tick.
    pub unreadable: &'a BTreeSet<String>,
}

impl Snapshot<'_> {
    /// The status this tick saw for `s`, if its profile was read.
    pub(crate) fn status(&self, s: &Session) -> Option<Status> {
        self.live.get(&s.id).map(Live::status)
    }
}
