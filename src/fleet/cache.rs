//! The session cache: the last readable `list --all`, and which of those
//! sessions are restart-critical.
//!
//! An unreadable list keeps the last known fleet (unknown is never "no
//! sessions"). The opt-in markers are read with one directory listing, and
//! ids are validated before they are used as file names.
//!
//! Only the restart-critical sessions (by name or by marker, which covers
//! the conductors the patrols look at) are kept whole. Every other listed
//! session is kept as its id, and a child (`parent_session_id` set) also
//! as its profile, in a sorted list: a profile of 50,000 archived workers
//! costs a few megabytes, not tens. The waiting patrol takes the few
//! children it acts on from the tick's live lists ([`Fleet::child_profile`]
//! tells which ids are children). A session that gains a marker after the list was read
//! is kept whole from the next read on; [`Fleet::needs_refresh_for`] says
//! when a hook should cause one. With `RESUME_SCOPE=all` every Claude
//! session is kept whole too, for the stall pass ([`Fleet::beyond_critical`]).
//! A readable list that suddenly holds none
//! of the critical sessions is read like any other: what that means (a
//! vanished fleet, #2323) is decided by [`crate::decide::book::vanish`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::fleet::deck::{AgentDeck, CliError};
use crate::fleet::session::{self, NameRule, Session};

/// An unknown hook id refreshes the cache at most this often.
const MIN_REFRESH_GAP: Duration = Duration::from_secs(1);

#[derive(Default)]
pub(crate) struct Fleet {
    /// The sessions kept whole (see the module docs), by id.
    sessions: BTreeMap<String, Session>,
    /// Every other listed session, sorted by id, with the index of its
    /// profile in `child_profiles` if it is a child.
    others: Vec<(Box<str>, Option<usize>)>,
    /// The profiles of the children in `others`.
    child_profiles: Vec<String>,
    markers: BTreeSet<String>,
    /// `RESUME_SCOPE=all`: every Claude session is kept whole.
    claude_too: bool,
    autorestart_dir: PathBuf,
    last_refresh: Option<Instant>,
    listed_once: bool,
}

impl Fleet {
    pub(crate) fn new(autorestart_dir: PathBuf) -> Fleet {
        Fleet {
            autorestart_dir,
            ..Fleet::default()
        }
    }

    /// Keeps every Claude session whole too (`RESUME_SCOPE=all`).
    pub(crate) fn with_claude(self) -> Fleet {
        Fleet {
            claude_too: true,
            ..self
        }
    }

    /// Re-reads `list --all`; on failure the last known fleet stays.
    pub(crate) fn refresh(&mut self, deck: &dyn AgentDeck) -> Result<(), CliError> {
        self.refresh_unless(deck, |_| None)
    }

    /// [`Fleet::refresh`], but `unread`, given how many sessions the answer
    /// listed, may say why it cannot be believed: the last known fleet then
    /// stays, and that is the error ([`CliError::StoreUnreadable`]).
    pub(crate) fn refresh_unless(
        &mut self,
        deck: &dyn AgentDeck,
        unread: impl FnOnce(usize) -> Option<String>,
    ) -> Result<(), CliError> {
        self.last_refresh = Some(Instant::now());
        let mut sessions = BTreeMap::new();
        let mut others: Vec<(Box<str>, Option<usize>)> = Vec::new();
        let mut profiles: Vec<String> = Vec::new();
        let markers = &self.markers;
        let claude_too = self.claude_too;
        deck.list_all(&mut |row| {
            let marked = opted_in(markers, &row.id);
            if row.is_critical_by_name() || marked || (claude_too && row.tool == "claude") {
                sessions.insert(row.id.to_string(), row.session());
            } else {
                let child = row.parent_session_id.is_some().then(|| {
                    let known = profiles.iter().position(|p| *p == row.profile);
                    known.unwrap_or_else(|| {
                        profiles.push(row.profile.to_string());
                        profiles.len() - 1
                    })
                });
                others.push((row.id.as_ref().into(), child));
            }
        })?;
        others.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        others.dedup_by(|a, b| a.0 == b.0);
        if let Some(why) = unread(sessions.len() + others.len()) {
            return Err(CliError::StoreUnreadable(why));
        }
        self.child_profiles = profiles;
        self.sessions = sessions;
        self.others = others;
        self.listed_once = true;
        Ok(())
    }

    /// Whether a refresh may run now: the last one (readable or not) was at
    /// least a second ago. For hooks naming an id the cache lacks.
    pub(crate) fn may_refresh(&self) -> bool {
        self.last_refresh
            .is_none_or(|t| t.elapsed() >= MIN_REFRESH_GAP)
    }

    /// Whether a readable list was ever read into the cache.
    pub(crate) fn listed_once(&self) -> bool {
        self.listed_once
    }

    pub(crate) fn reload_markers(&mut self) {
        self.markers = match std::fs::read_dir(&self.autorestart_dir) {
            Ok(entries) => entries
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .filter(|name| session::is_valid_id(name))
                .collect(),
            Err(_) => BTreeSet::new(),
        };
    }

    /// A session kept whole: restart-critical by name or opted in.
    pub(crate) fn get(&self, id: &str) -> Option<&Session> {
        self.sessions.get(id)
    }

    /// Whether the last readable list had this session, whole or not.
    pub(crate) fn knows(&self, id: &str) -> bool {
        self.sessions.contains_key(id) || self.other(id).is_some()
    }

    /// Whether a hook for `id` should re-read the list first: the session is
    /// unknown, or has been opted in since the list was read.
    pub(crate) fn needs_refresh_for(&self, id: &str) -> bool {
        !self.knows(id) || (self.get(id).is_none() && self.markers.contains(id))
    }

    /// The profile of a child session not kept whole.
    pub(crate) fn child_profile(&self, id: &str) -> Option<&str> {
        let profile = self.other(id)??;
        self.child_profiles.get(profile).map(String::as_str)
    }

    /// A session not kept whole: the index of its profile if it is a child.
    fn other(&self, id: &str) -> Option<Option<usize>> {
        let at = self.others.binary_search_by(|(o, _)| o.as_ref().cmp(id));
        at.ok().map(|i| self.others[i].1)
    }

    /// The profiles holding a child session not kept whole.
    pub(crate) fn child_profiles(&self) -> impl Iterator<Item = &String> {
        self.child_profiles.iter()
    }

    /// Every listed session, whole or not.
    pub(crate) fn len(&self) -> usize {
        self.sessions.len() + self.others.len()
    }

    pub(crate) fn is_critical(&self, s: &Session) -> bool {
        session::is_critical_by_name(s) || opted_in(&self.markers, &s.id)
    }

    /// Why `s` is restart-critical, or `None` when it is not.
    pub(crate) fn critical_reason(&self, s: &Session) -> Option<String> {
        match session::critical_rule(&s.title, &s.group, s.is_conductor) {
            Some(NameRule::ConductorTitle) => Some("title conductor-*".into()),
            Some(NameRule::Group) => Some(format!("group {}", s.group)),
            Some(NameRule::IsConductor) => Some("is_conductor".into()),
            Some(NameRule::KnownTitle) => Some(format!("title {}", s.title)),
            None => self.is_critical(s).then(|| "autorestart marker".into()),
        }
    }

    /// The restart-critical sessions, in id order.
    pub(crate) fn critical(&self) -> Vec<Session> {
        self.sessions
            .values()
            .filter(|s| self.is_critical(s))
            .cloned()
            .collect()
    }

    /// The sessions kept whole that are not restart-critical: with
    /// `RESUME_SCOPE=all`, the other Claude sessions; none otherwise.
    pub(crate) fn beyond_critical(&self) -> Vec<Session> {
        let others = self.sessions.values().filter(|s| !self.is_critical(s));
        others.cloned().collect()
    }

    pub(crate) fn profiles(sessions: &[Session]) -> BTreeSet<String> {
        sessions.iter().map(|s| s.profile.clone()).collect()
    }

    /// The sessions kept whole, for patrols that look beyond the critical
    /// ones (conductors are among them; most children are not).
    pub(crate) fn all(&self) -> impl Iterator<Item = &Session> {
        self.sessions.values()
    }
}

/// Whether `id` has an opt-in marker.
fn opted_in(markers: &BTreeSet<String>, id: &str) -> bool {
    session::is_valid_id(id) && markers.contains(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::deck::{CliResult, RestartAnswer};
    use crate::fleet::listing::{self, Row, Shape};
    use crate::fleet::session::Live;

    /// An agent-deck whose `list --all` prints `answer`; nothing else works.
    struct Printing(String);

    impl AgentDeck for Printing {
        fn list_all(&self, each: &mut dyn FnMut(&Row<'_>)) -> CliResult<()> {
            listing::read(Shape::All, self.0.as_bytes(), each)?;
            Ok(())
        }
        fn list_profile(&self, _: &str, _: &mut dyn FnMut(&Row<'_>)) -> CliResult<()> {
            Err(CliError::Garbage("not here".into()))
        }
        fn show(&self, _: &str, _: &str) -> CliResult<Live> {
            Err(CliError::Garbage("not here".into()))
        }
        fn restart(&self, _: &str, _: &str) -> CliResult<RestartAnswer> {
            Err(CliError::Garbage("not here".into()))
        }
        fn start(&self, _: &str, _: &str) -> CliResult<()> {
            Err(CliError::Garbage("not here".into()))
        }
        fn send(&self, _: &str, _: &str, _: &str) -> CliResult<()> {
            Err(CliError::Garbage("not here".into()))
        }
        fn pane(&self, _: &str, _: &str) -> CliResult<String> {
            Err(CliError::Garbage("not here".into()))
        }
        fn transcript(&self, _: &str, _: &str) -> CliResult<String> {
            Err(CliError::Garbage("not here".into()))
        }
        fn usage(&self, _: &str) -> CliResult<String> {
            Err(CliError::Garbage("not here".into()))
        }
        fn remove(&self, _: &str, _: &str) -> CliResult<()> {
            Err(CliError::Garbage("not here".into()))
        }
        fn set_claude_session_id(&self, _: &str, _: &str, _: &str) -> CliResult<()> {
            Err(CliError::Garbage("not here".into()))
        }
    }

    fn row(id: &str, title: &str, group: &str, parent: &str) -> String {
        format!(
            r#"{{"id":"{id}","title":"{title}","group":"{group}","profile":"p","parent_session_id":"{parent}"}}"#
        )
    }

    #[test]
    fn each_reason_names_the_rule_that_made_it_critical() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a0b1c2d3-1755899999"), "").unwrap();
        let mut fleet = Fleet::new(tmp.path().to_path_buf());
        fleet.reload_markers();
        let s = |title: &str, group: &str| Session {
            id: "a0b1c2d3-1755899999".into(),
            title: title.into(),
            group: group.into(),
            ..Session::default()
        };
        let why = |s: &Session| fleet.critical_reason(s);
        assert_eq!(
            why(&s("conductor-ops", "")).as_deref(),
            Some("title conductor-*")
        );
        assert_eq!(why(&s("x", "watchers")).as_deref(), Some("group watchers"));
        assert_eq!(
            why(&s("gmail-watcher", "")).as_deref(),
            Some("title gmail-watcher")
        );
        assert_eq!(why(&s("worker", "")).as_deref(), Some("autorestart marker"));
        let other = Session {
            id: "ffffffff-1755899999".into(),
            ..s("worker", "")
        };
        assert_eq!(why(&other), None);
    }

    #[test]
    fn only_critical_sessions_are_kept_whole_and_every_one_is_known() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("m0000000-1"), "").unwrap();
        let mut f = Fleet::new(tmp.path().to_owned());
        f.reload_markers();
        let mut rows = vec![
            row("c0000000-1", "conductor-ops", "", ""),
            row("w0000000-1", "watcher", "watchers", ""),
            row("k0000000-1", "worker", "srv", "c0000000-1"),
            row("m0000000-1", "marked", "srv", ""),
        ];
        rows.extend((0..1000).map(|i| row(&format!("{i:08x}-2"), "archived", "srv", "")));
        f.refresh(&Printing(format!("[{}]", rows.join(","))))
            .unwrap();
        assert_eq!(f.len(), 1004);
        let whole: Vec<&str> = f.all().map(|s| s.id.as_str()).collect();
        assert_eq!(whole, ["c0000000-1", "m0000000-1", "w0000000-1"]);
        assert!(f.knows("k0000000-1"));
        assert_eq!(f.child_profile("k0000000-1"), Some("p"));
        assert_eq!(f.child_profile("000003e7-2"), None);
        assert_eq!(f.child_profiles().collect::<Vec<_>>(), ["p"]);
        let critical: Vec<String> = f.critical().into_iter().map(|s| s.id).collect();
        assert_eq!(critical, ["c0000000-1", "m0000000-1", "w0000000-1"]);
        assert!(f.knows("000003e7-2") && f.get("000003e7-2").is_none());
        assert!(!f.knows("000003e8-2"));
        assert!(!f.needs_refresh_for("000003e7-2"), "known, not critical");
        assert!(f.needs_refresh_for("000003e8-2"), "unknown");
        std::fs::write(tmp.path().join("000003e7-2"), "").unwrap();
        f.reload_markers();
        assert!(f.needs_refresh_for("000003e7-2"), "opted in since the list");
        f.refresh(&Printing(format!("[{}]", rows.join(","))))
            .unwrap();
        assert!(f.get("000003e7-2").is_some_and(|s| f.is_critical(s)));
        assert!(!f.needs_refresh_for("000003e7-2"));
    }

    #[test]
    fn resume_scope_all_keeps_the_other_claude_sessions_whole_and_no_other_tool() {
        let tmp = tempfile::tempdir().unwrap();
        let tool = |id: &str, title: &str, tool: &str| {
            format!(r#"{{"id":"{id}","title":"{title}","profile":"p","tool":{tool}}}"#)
        };
        let rows = [
            tool("c0000000-1", "conductor-ops", r#""claude""#),
            tool("a0000000-1", "worker", r#""claude""#),
            tool("b0000000-1", "worker", r#""codex""#),
            tool("d0000000-1", "worker", r#"{"name":"claude"}"#),
        ];
        let list = Printing(format!("[{}]", rows.join(",")));
        let mut f = Fleet::new(tmp.path().to_owned());
        f.refresh(&list).unwrap();
        assert!(f.beyond_critical().is_empty(), "RESUME_SCOPE=critical");
        let mut f = Fleet::new(tmp.path().to_owned()).with_claude();
        f.refresh(&list).unwrap();
        let beyond: Vec<String> = f.beyond_critical().into_iter().map(|s| s.id).collect();
        assert_eq!(beyond, ["a0000000-1"]);
        let critical: Vec<String> = f.critical().into_iter().map(|s| s.id).collect();
        assert_eq!(critical, ["c0000000-1"], "kept whole is not critical");
        assert!(f.knows("b0000000-1") && f.knows("d0000000-1"));
    }

    #[test]
    fn an_unreadable_list_keeps_the_last_known_fleet() {
        let tmp = tempfile::tempdir().unwrap();
        let mut f = Fleet::new(tmp.path().to_owned());
        let good = format!(
            "[{},{}]",
            row("c0000000-1", "conductor-ops", "", ""),
            row("a0000000-1", "archived", "", "")
        );
        f.refresh(&Printing(good)).unwrap();
        let cut = format!("[{},", row("b0000000-1", "conductor-b", "", ""));
        assert!(f.refresh(&Printing(cut)).is_err());
        assert!(f.get("c0000000-1").is_some() && f.knows("a0000000-1"));
        assert!(
            !f.knows("b0000000-1"),
            "rows of an unreadable list are dropped"
        );
        assert_eq!(f.len(), 2);
    }

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
