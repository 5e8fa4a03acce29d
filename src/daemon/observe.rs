//! The first part of a tick: what the daemon observes of the fleet. The
//! session list read into the cache, and what a readable one means for a
//! vanished fleet (SPEC §5.6, #2323: told once, like a cascade, and the
//! sessions' state kept, see [`crate::decide::book::vanish`]); one `-p P list`
//! per profile that holds a critical session (with `RESUME_SCOPE=all`, a
//! Claude session); what the pane watch saw (bare shells, its listing) and
//! the map handed to it; the hook files of the sessions in error. Then the
//! second round: the reads [`plan::reads`] asks for, which only the first
//! look can tell (a `session show`, a usage limit's reset, a pane).
//!
//! The reads every tick makes are told as outages when they fail
//! ([`crate::sys::say_once`]): one line when one starts, a summary every
//! few minutes while it lasts (instead of a warning a tick), one line when
//! it ends.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::config::ResumeScope;
use crate::daemon::Daemon;
use crate::decide::book::vanish::{self, VanishNews};
use crate::decide::outcomes::Severity;
use crate::decide::plan::{self, Answer, HookSeen, LiveView, Observation, Read};
use crate::decide::restart::store;
use crate::decide::restart::Outcome;
use crate::decide::stall::occupancy::{self, Reading};
use crate::decide::stall::reset_time;
use crate::fleet::cache::Fleet;
use crate::fleet::deck::CliError;
use crate::fleet::session::{Live, Session, Status};
use crate::fleet::usage;
use crate::fleet::version::Version;
use crate::sys::say_once::{Said, ONCE};
use crate::triggers::event_queue::Batch;
use crate::triggers::hook_file;
use crate::triggers::pane_share::PaneMap;

/// What the outage of the session list is told as.
const LIST: &str = "session list";

/// What the locked store's escalation is said once under.
const STORE_LOCKED: &str = "store locked";

/// How often a lasting outage is summed up.
const SUMMARY_EVERY: Duration = Duration::from_secs(300);

impl Daemon {
    /// What the tick sees: the lists, the pane watch's news, the hook files
    /// of the sessions in error, then the second round of reads. 1 + P CLI
    /// calls when the fleet is healthy.
    pub(super) fn observe(&mut self) -> Observation {
        self.take_endings(&Batch::default());
        self.memory.hook_pacing.last_tick = Some(self.ctx.clock.now());
        self.fleet.reload_markers();
        self.sd_notify.alive();
        let refreshed = self.refresh_fleet();
        let failed = refreshed.as_ref().err().map(|e| {
            let n = self.fleet.len();
            format!(
                "session list is unreadable ({e}); keeping the last known fleet of {n} sessions"
            )
        });
        self.tell_outage(LIST, failed);
        let critical = self.fleet.critical();
        if refreshed.is_ok() || self.fleet.listed_once() {
            self.name_the_watched(&critical);
        }
        // With RESUME_SCOPE=all, the other Claude sessions, for the stall pass.
        let beyond = self.fleet.beyond_critical();
        let mut profiles = Fleet::profiles(&critical);
        profiles.extend(Fleet::profiles(&beyond));
        profiles.extend(self.fleet.child_profiles().cloned());
        let view = self.read_live(profiles);
        self.hand_over_panes(&critical, &view);
        self.forget_gone_unsaved(&critical);
        let gone = self.agent_gone(&critical, &view.live);
        let mut obs = Observation {
            listed: refreshed.is_ok(),
            critical,
            beyond,
            stalls: self.ctx.cfg.resume_scope != ResumeScope::Off,
            view,
            gone,
            release: self.ctx.deck.version(),
            ..Observation::default()
        };
        let in_error = obs.errored().map(|(s, _)| s.clone()).collect::<Vec<_>>();
        obs.hooks = (in_error.into_iter())
            .map(|s| (s.id.clone(), self.hook_seen(&s)))
            .collect();
        self.second_round(&mut obs);
        obs
    }

    /// The hook file of `s`: one `stat`, and the file read when the
    /// watchdog restarted `s` (a stale `dead` hook may be all that says
    /// `error`).
    pub(super) fn hook_seen(&self, s: &Session) -> HookSeen {
        let dir = &self.ctx.cfg.hooks_dir;
        let restarted =
            (self.ctx.state.lock().sessions.get(&s.id)).is_some_and(|b| b.restarted_at.is_some());
        HookSeen {
            exists: hook_file::hook_file_exists(dir, &s.id),
            hook: restarted
                .then(|| hook_file::read_hook(dir, &s.id))
                .flatten(),
        }
    }

    /// The reads [`plan::reads`] asks for, until it asks for none.
    fn second_round(&mut self, obs: &mut Observation) {
        loop {
            let now = self.ctx.clock.now();
            let st = self.ctx.state.lock();
            let todo = plan::reads(obs, &self.memory, &st, &self.ctx.limits, now);
            drop(st);
            if todo.is_empty() {
                return;
            }
            for (s, read) in todo {
                let answer = self.read(&s, read, obs);
                obs.answers.insert((s.id, read), answer);
            }
        }
    }

    /// One read of the second round; a failure is kept for the executor
    /// to say where the tick says it.
    fn read(&mut self, s: &Session, read: Read, obs: &Observation) -> Answer {
        let deck = self.ctx.deck.clone();
        let (profile, id) = (&s.profile, &s.id);
        match read {
            Read::Show => {
                // A show may take SUBPROCESS_TIMEOUT_S; keep systemd's watchdog fed.
                self.sd_notify.alive();
                Answer::Show(deck.show(profile, id).map_err(|e| e.to_string()))
            }
            Read::Pane => Answer::Pane(deck.pane(profile, id).map_err(|e| e.to_string())),
            Read::Output => Answer::Output(deck.transcript(profile, id).map_err(|e| e.to_string())),
            Read::Occupancy => {
                let shown = obs.answers.get(&(s.id.clone(), Read::Show));
                let Some(Answer::Show(Ok(l))) = shown else {
                    return Answer::Occupancy(None);
                };
                let id = l.claude_session_id.as_deref().unwrap_or_default();
                Answer::Occupancy(transcript_tail(&self.ctx.cfg, s, id))
            }
            Read::Policy => {
                let name = s.conductor_name().unwrap_or_default();
                Answer::Policy(crate::config::clears_on_compact(
                    &self.ctx.cfg,
                    name,
                    &s.path,
                ))
            }
            Read::Reset => {
                let mut warnings = Vec::new();
                let usage = self.usage(s, &mut warnings);
                let text = || {
                    let text = deck.transcript(profile, id);
                    text.unwrap_or_else(|e| {
                        warnings.push(format!("last response of {id} is unreadable ({e})"));
                        String::new()
                    })
                };
                let (now, probe) = (self.ctx.clock.now(), self.ctx.limits.stall.probe);
                let (at, from) = reset_time::reset(usage.as_deref(), text, now, now, probe);
                Answer::Reset { at, from, warnings }
            }
        }
    }

    /// The plan windows of `s`'s profile from `usage --json`, on an
    /// agent-deck that has it (1.16.11+; never asked of an older one, or of
    /// one whose release is not known); `None` otherwise or unreadable,
    /// with a warning.
    fn usage(&self, s: &Session, warnings: &mut Vec<String>) -> Option<Vec<reset_time::Window>> {
        if !self.ctx.deck.version()?.at_least(Version::USAGE_JSON) {
            return None;
        }
        let text = self.ctx.deck.usage(&s.profile).map_err(|e| e.to_string());
        let profile = &s.profile;
        let why = |e| format!("usage --json of profile '{profile}' is unreadable ({e})");
        (text.and_then(|t| usage::parse(&t)))
            .map_err(|e| warnings.push(why(e)))
            .ok()
    }

    /// The pane watch's news in `news` and the endings of the restart
    /// worker's jobs since the last look: the tmux session a restart
    /// brought a session back in is its name from now on (the main loop
    /// owns the names it hands the pane watch), and once a restart call
    /// went out, its old pane's bare shell is no proof about the new one
    /// until the watch says so again. The watch is handed the result at
    /// once (once a tick handed it a first map); a `--once` pass keeps the
    /// endings for its summary.
    pub(super) fn take_endings(&mut self, news: &Batch) {
        let memory = &mut self.memory;
        if let Some(listed) = &news.listed {
            memory.tmux_listed = Some(listed.clone());
        }
        if let Some(bare) = &news.bare {
            memory.bare_shells.clone_from(bare);
        }
        for (id, outcome) in self.workers.jobs.ended() {
            if let Outcome::Restarted {
                tmux: Some(name), ..
            } = &outcome
            {
                memory.tmux_names.insert(id.clone(), name.clone());
            }
            if outcome.called_restart() {
                memory.bare_shells.remove(&id);
            }
            if let Some(pass) = self.pass.as_mut() {
                pass.ended.insert(id, outcome);
            }
        }
        self.hand_down();
    }

    /// `list --all`, read into the cache, and what a readable one means for
    /// a vanished fleet; the last known fleet stays when it is unreadable.
    pub(super) fn refresh_fleet(&mut self) -> Result<(), CliError> {
        let held = self.held_critical();
        let profile = self.fleet.critical().into_iter().next().map(|s| s.profile);
        let deck = self.ctx.deck.clone();
        let started = std::time::Instant::now();
        // An empty answer after a fleet with critical sessions: a locked store?
        let unread = |n: usize| {
            if n > 0 || held.is_empty() {
                return None;
            }
            let probe = || {
                let mut rows = 0;
                let read = deck.list_profile(&profile?, &mut |_| rows += 1);
                Some(read.map(|()| rows).map_err(|e| e.to_string()))
            };
            store::empty_list_unread(started.elapsed(), probe).map(|why| store::named(&why))
        };
        let read = self.fleet.refresh_unless(deck.as_ref(), unread);
        self.note_store(&read);
        read?;
        self.watch_vanish(&held);
        Ok(())
    }

    /// Escalates `store-locked` once an episode of a store that cannot be
    /// read; the session list's outage says in the log when it starts and
    /// ends ([`Self::tell_outage`]).
    fn note_store(&mut self, read: &Result<(), CliError>) {
        let (said, now) = (&self.memory.said, self.ctx.clock.now());
        match read {
            Err(CliError::StoreUnreadable(why)) if said.note(STORE_LOCKED, now, ONCE).is_some() => {
                let msg = format!("{why}: the watchdog keeps the last known fleet and its pane watch, but cannot read a status or restart until the store reads again. Look for a process holding agent-deck's state.db.");
                let ctx = &self.ctx;
                ctx.escalator
                    .escalate(Severity::StoreLocked, &msg, None, true);
            }
            Ok(()) => _ = said.end(STORE_LOCKED, now),
            _ => {}
        }
    }

    /// [`Self::refresh_fleet`], unless the last try was less than a second
    /// ago (false: the caller comes back).
    pub(super) fn refresh_fleet_if_stale(&mut self) -> bool {
        if !self.fleet.may_refresh() {
            return false;
        }
        let failed = self
            .refresh_fleet()
            .err()
            .map(|e| format!("session list is unreadable ({e}); keeping the last known fleet"));
        self.tell_outage(LIST, failed);
        true
    }

    /// The critical sessions the last readable list held, by id, with their
    /// titles; before this run read one, the ones whose state was saved.
    fn held_critical(&self) -> BTreeMap<String, String> {
        if self.fleet.listed_once() {
            let critical = self.fleet.critical().into_iter();
            return critical.map(|s| (s.id, s.title)).collect();
        }
        let st = self.ctx.state.lock();
        let seen = st.sessions.iter().filter(|(_, b)| b.last_status.is_some());
        seen.map(|(id, b)| (id.clone(), b.title.clone())).collect()
    }

    /// A readable list that holds none of the two or more critical sessions
    /// the one before held: told once, like a cascade, and their state is
    /// kept until they are back or the hold is over (see
    /// [`crate::decide::book::vanish`]).
    fn watch_vanish(&self, held: &BTreeMap<String, String>) {
        let ids: BTreeSet<String> = held.keys().cloned().collect();
        let (fleet, now) = (&self.fleet, self.ctx.clock.now());
        let listed = |id: &str| fleet.knows(id);
        let news = vanish::observe_list(&mut self.ctx.state.lock(), &ids, &listed, now);
        let hold_min = vanish::VANISH_HOLD_S / 60.0;
        match news {
            VanishNews::Vanished(gone) => {
                let titles: Vec<&str> = gone
                    .iter()
                    .filter_map(|id| held.get(id).map(String::as_str))
                    .take(5)
                    .collect();
                let more = gone.len().saturating_sub(titles.len());
                let more = if more > 0 { format!(" and {more} more") } else { String::new() };
                let msg = format!(
                    "agent-deck's session list suddenly holds none of the {} restart-critical sessions it held ({}{more}): nothing is protected until they are listed again. agent-deck up to 1.16.13 could read an empty profile store beside the full one (#2323); check `agent-deck list --all` and the profiles under ~/.agent-deck and ~/.local/share/agent-deck. Their restart history is kept for {hold_min:.0} minutes.",
                    gone.len(),
                    titles.join(", ")
                );
                self.ctx
                    .escalator
                    .escalate(Severity::FleetVanished, &msg, None, true);
            }
            VanishNews::Back => log::info!(
                "the vanished critical sessions are listed again; their restart history was kept"
            ),
            VanishNews::Expired => log::warn!(
                "the vanished critical sessions were not listed again within {hold_min:.0} minutes; their restart history is forgotten"
            ),
            VanishNews::Quiet => {}
        }
    }

    /// Notes this tick's read of `what`: `failed`, the line that says how
    /// and what the daemon does meanwhile, or `None` when it read.
    pub(super) fn tell_outage(&mut self, what: &str, failed: Option<String>) {
        let (said, now) = (&self.memory.said, self.ctx.clock.now());
        let Some(line) = failed else {
            if let Some(Said::Ended { times, secs }) = said.end(what, now) {
                log::info!("{what}: readable again after {secs:.0}s and {times} failed reads");
            }
            return;
        };
        match said.note(what, now, SUMMARY_EVERY) {
            Some(Said::Started) => log::warn!("{line}"),
            Some(Said::Lasting { times, secs }) => log::warn!(
                "{what}: still unreadable after {secs:.0}s, {times} failed reads; the last: {line}"
            ),
            _ => {}
        }
    }

    /// Logs which sessions are restart-critical, when the fleet is first
    /// listed and whenever that set changes.
    fn name_the_watched(&mut self, critical: &[Session]) {
        let now: BTreeMap<String, String> = critical
            .iter()
            .map(|s| (s.id.clone(), s.title.clone()))
            .collect();
        if let Some(line) = super::watching::change_line(self.memory.watching.as_ref(), &now) {
            log::info!("{line}");
        }
        self.memory.watching = Some(now);
    }

    /// One `-p P list` per profile: the live state of the sessions the cache
    /// keeps whole, and the children it does not that are waiting (whole,
    /// from their row), for the waiting patrol. The other rows are read and
    /// dropped.
    fn read_live(&mut self, profiles: BTreeSet<String>) -> LiveView {
        let mut view = LiveView::default();
        for profile in profiles {
            // A hung call may take SUBPROCESS_TIMEOUT_S; keep systemd's watchdog fed between calls.
            self.sd_notify.alive();
            let fleet = &self.fleet;
            let mut live = BTreeMap::new();
            let mut children = Vec::new();
            let names = &mut view.tmux_names;
            let read = self.ctx.deck.list_profile(&profile, &mut |row| {
                if let Some(name) = row.tmux_session() {
                    names.insert(name.to_owned());
                }
                if fleet.get(&row.id).is_some() {
                    live.insert(row.id.to_string(), row.live());
                } else if row.status == Some(Status::Waiting)
                    && fleet.child_profile(&row.id).is_some()
                {
                    live.insert(row.id.to_string(), row.live());
                    children.push(Session {
                        profile: profile.clone(),
                        ..row.session()
                    });
                }
            });
            let what = format!("statuses of profile '{profile}'");
            match read {
                Ok(()) => {
                    view.live.extend(live);
                    view.children.extend(children);
                    self.tell_outage(&what, None);
                }
                Err(e) => {
                    let line = format!(
                        "{what} are unreadable ({e}); its sessions count as unknown while they are"
                    );
                    self.tell_outage(&what, Some(line));
                    view.children.extend(self.children_held(&profile));
                    view.unreadable.insert(profile);
                }
            }
        }
        view
    }

    /// The children the waiting patrol is timing in `profile`, whose list
    /// was unreadable this tick, so that they count as unknown, not as "no
    /// longer waiting". The cache keeps only their id and profile (and that
    /// they have a parent), which is all the patrol looks at for them.
    fn children_held(&self, profile: &str) -> Vec<Session> {
        let st = self.ctx.state.lock();
        let held = st.waiting.keys();
        held.filter(|id| self.fleet.child_profile(id) == Some(profile))
            .map(|id| Session {
                id: id.clone(),
                profile: profile.to_owned(),
                parent_session_id: Some(String::new()),
                ..Session::default()
            })
            .collect()
    }

    /// Hands the pane watch each critical session's tmux name, as its row
    /// gave it; a session of a profile whose list was unreadable keeps the
    /// name handed over before. A stopped session has no pane to watch: it
    /// is left out, and its name is not "known", so that the watch asks
    /// for a look once its pane is back. The bare shells and the jobs under
    /// way go down with them.
    fn hand_over_panes(&mut self, critical: &[Session], view: &LiveView) {
        let before = std::mem::take(&mut self.memory.tmux_names);
        let mut known = view.tmux_names.clone();
        for s in critical {
            let name = match view.live.get(&s.id) {
                Some(l) if l.status() == Status::Stopped => {
                    if let Some(n) = &l.tmux_session {
                        known.remove(n);
                    }
                    None
                }
                Some(l) => l.tmux_session.clone(),
                None if view.unreadable.contains(&s.profile) => before.get(&s.id).cloned(),
                None => None,
            };
            if let Some(name) = name {
                self.memory.tmux_names.insert(s.id.clone(), name);
            }
        }
        known.extend(self.memory.tmux_names.values().cloned());
        self.memory.tmux_known = Some(known);
        self.hand_down();
    }

    /// Hands the pane watch its map, from what the main loop knows now: the
    /// names, every known name, the bare shells and the jobs under way.
    /// Nothing before a tick has named the fleet's tmux sessions.
    fn hand_down(&self) {
        let memory = &self.memory;
        let Some(mut known) = memory.tmux_known.clone() else {
            return;
        };
        known.extend(memory.tmux_names.values().cloned());
        self.triggers.panes.hand_over(PaneMap {
            critical: memory.tmux_names.clone(),
            known,
            bare: memory.bare_shells.clone(),
            restarting: self.ctx.state.lock().in_flight.clone(),
        });
    }

    /// Ends the hold of each critical session whose restart's unsaved tmux
    /// session the pane watch's last listing no longer shows.
    fn forget_gone_unsaved(&self, critical: &[Session]) {
        let Some(listed) = &self.memory.tmux_listed else {
            return;
        };
        let mut st = self.ctx.state.lock();
        for s in critical {
            let Some(book) = st.sessions.get_mut(&s.id) else {
                continue;
            };
            if let Some(name) = book.unsaved.take_if(|n| !listed.contains(n.as_str())) {
                log::info!(
                    "{} ({}): the unsaved tmux session {name} is gone; it may be restarted again",
                    s.id,
                    s.title
                );
            }
        }
    }

    /// The critical sessions of an agent whose pane the watch found a bare
    /// shell while agent-deck reads them at rest (1.14.0 reads such a pane
    /// `waiting`): the agent is gone, so each is judged as in `error`, the
    /// view returned (SPEC §14, `proof: agent_gone`).
    fn agent_gone(
        &self,
        critical: &[Session],
        live: &BTreeMap<String, Live>,
    ) -> BTreeMap<String, Live> {
        let bare = &self.memory.bare_shells;
        let gone = critical
            .iter()
            .filter(|s| bare.contains(&s.id) && s.runs_an_agent());
        gone.filter_map(|s| {
            let l = live.get(&s.id)?;
            matches!(l.status(), Status::Waiting | Status::Idle).then(|| {
                log::debug!(
                    "{} reads {} but its pane is a bare shell",
                    s.id,
                    l.status().as_str()
                );
                let dead = Live {
                    status: Some(Status::Error),
                    ..l.clone()
                };
                (s.id.clone(), dead)
            })
        })
        .collect()
    }
}

/// How much of a transcript's end is read for its occupancy.
const TRANSCRIPT_TAIL: u64 = 64 * 1024;

/// The last reading of the tail of `s`'s Claude transcript `<id>.jsonl`:
/// where agent-deck looks for it (`projects/<its path, each character
/// that is not a letter or digit as '-'>/`, else any project), under the
/// profile's Claude config dir (`PROMPT_RESUME_PROFILES`), else
/// `~/.claude`. Read-only, at most [`TRANSCRIPT_TAIL`] bytes.
fn transcript_tail(cfg: &crate::config::Config, s: &Session, id: &str) -> Option<Reading> {
    if id.is_empty() || id.contains(['/', '\0']) || id.starts_with('.') {
        return None;
    }
    let profiles = &cfg.prompt_resume_profiles;
    let dir = profiles
        .iter()
        .find(|(p, _)| *p == s.profile)
        .map(|(_, d)| d.clone());
    let projects = dir
        .unwrap_or_else(|| cfg.home.join(".claude"))
        .join("projects");
    let slug: String = s
        .path
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let file = format!("{id}.jsonl");
    let own = projects.join(slug).join(&file);
    let path = own.is_file().then_some(own).or_else(|| {
        let dirs = std::fs::read_dir(&projects).ok()?;
        dirs.flatten()
            .map(|d| d.path().join(&file))
            .find(|p| p.is_file())
    })?;
    let (tail, whole) = crate::sys::fs::read_tail(&path, TRANSCRIPT_TAIL)
        .inspect_err(|e| log::debug!("transcript of {} unreadable ({})", s.id, e.reason()))
        .ok()?;
    occupancy::occupancy(&tail, whole)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::act::context::tests::severities;
    use crate::daemon::apply::tests::{daemon, daemon_and_clock};
    use crate::fleet::fake::{FakeDeck, Script};

    const COND: &str = "3f9c2a1b-1755891234";
    const COND2: &str = "4f9c2a1b-1755891235";

    /// `list --all` and the profile list of conductors `ids`, all waiting.
    fn conductors(ids: &[&str]) -> (String, String) {
        let rows = |status: &str| {
            let rows: Vec<String> = ids
                .iter()
                .map(|id| {
                    format!(
                        r#"{{"id":"{id}","title":"conductor-{id}","profile":"default"{status}}}"#
                    )
                })
                .collect();
            format!("[{}]", rows.join(","))
        };
        (rows(""), rows(r#","status":"waiting""#))
    }

    fn list(deck: &FakeDeck, ids: &[&str], empty: &str) {
        let (all, listed) = conductors(ids);
        let mut script = deck.script.lock();
        script.list_all = Some(if ids.is_empty() {
            empty.to_owned()
        } else {
            all
        });
        script.lists = [(
            "default".to_owned(),
            if ids.is_empty() {
                "[]".to_owned()
            } else {
                listed
            },
        )]
        .into();
    }

    #[test]
    fn a_list_that_suddenly_holds_none_of_two_conductors_alerts_once_and_keeps_their_state() {
        for empty in ["[]", "null", "No profiles found."] {
            let tmp = tempfile::tempdir().unwrap();
            let deck = Arc::new(FakeDeck::new(Script::default()));
            let (mut d, clock) = daemon_and_clock(tmp.path(), deck.clone());
            list(&deck, &[COND, COND2], empty);
            d.tick();
            d.ctx.state.lock().book(COND).consecutive_failures = 1;
            list(&deck, &[], empty);
            for _ in 0..5 {
                clock.advance(60.0);
                d.tick();
            }
            assert_eq!(severities(tmp.path()), ["fleet-vanished"], "{empty}");
            assert_eq!(
                d.ctx.state.lock().sessions[COND].consecutive_failures,
                1,
                "{empty}"
            );
            // A restarted watchdog finds the episode and keeps the state too.
            d.finish();
            let (mut d, clock) = daemon_and_clock(tmp.path(), deck.clone());
            clock.advance(600.0);
            d.tick();
            assert!(d.ctx.state.lock().sessions.contains_key(COND), "{empty}");
            list(&deck, &[COND, COND2], empty);
            d.tick();
            assert!(d.ctx.state.lock().vanished.is_none(), "{empty}: back");
            assert_eq!(
                d.ctx.state.lock().sessions[COND].consecutive_failures,
                1,
                "{empty}"
            );
            d.finish();
            assert_eq!(severities(tmp.path()), ["fleet-vanished"], "{empty}");
        }
    }

    #[test]
    fn a_vanished_fleet_that_stays_away_an_hour_is_forgotten() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script::default()));
        let (mut d, clock) = daemon_and_clock(tmp.path(), deck.clone());
        list(&deck, &[COND, COND2], "[]");
        d.tick();
        list(&deck, &[], "[]");
        d.tick();
        clock.advance(crate::decide::book::vanish::VANISH_HOLD_S);
        d.tick();
        d.finish();
        assert!(d.ctx.state.lock().sessions.is_empty());
        assert_eq!(severities(tmp.path()), ["fleet-vanished"]);
    }

    #[test]
    fn removing_the_only_conductor_or_one_of_two_raises_no_alarm() {
        let tmp = tempfile::tempdir().unwrap();
        let deck = Arc::new(FakeDeck::new(Script::default()));
        let mut d = daemon(tmp.path(), deck.clone());
        list(&deck, &[COND, COND2], "[]");
        d.tick();
        list(&deck, &[COND2], "[]");
        d.tick();
        list(&deck, &[], "null");
        d.tick();
        d.finish();
        assert!(severities(tmp.path()).is_empty());
        assert!(
            d.ctx.state.lock().sessions.is_empty(),
            "removed is forgotten"
        );
    }
}
