//! agent-deck's tmux server as the pane watch sees it: which server
//! (agent-deck's `[tmux] socket_name`, else the default socket; never the
//! watchdog's own `$TMUX`, which no child is handed), the one read-only
//! call made to it (`tmux -u [-L S] list-panes -a -F …`, through
//! [`crate::sys::process`], the one place that spawns), and the pure parse
//! of its answer into one pane per session.
//!
//! It sends tmux nothing but `list-panes` and SPEC §5.5's two kills
//! (`kill-session -t =NAME`, the exact name: `drill`'s, and the end of a
//! restart's unsaved tmux session): no control mode, no hook, no key. What
//! a pane's death means is decided elsewhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::{deck_files, Config};
use crate::spelled::spelled;
use crate::sys::fs::{read_text, SMALL_FILE_MAX};
use crate::sys::process::{self, Cmd, RunError};
use crate::sys::shutdown::Shutdown;

spelled! {
    /// How a death was seen: the proof the consumer may lean on.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
    pub enum Proof {
        /// The kernel said the pane's process exited, and tmux shows the
        /// session gone or its pane dead.
        ProcessExited = "process_exited",
        /// Only a listing saw it: the name is gone or the pane dead, and no
        /// handle fired (an agent that outlived its session).
        GoneFromListing = "gone_from_listing",
        /// The pane lives, but its process is a bare interactive shell with
        /// nothing running in it, while the session's tool is an agent (a
        /// layout restored by tmux-resurrect; an agent that exited to its
        /// shell): SPEC §14's death with `proof: agent_gone`.
        AgentGone = "agent_gone",
    }
}

/// The fields asked for, one pane a line. The separator is `:`, which tmux
/// never lets into a session name (`new-session` and `rename-session`
/// rewrite `:` and `.` to `_`), and which `-u` or a missing client never
/// rewrites (a TAB becomes `_` without `-u`). The name comes last, so even
/// a name that held one would still parse whole.
pub(crate) const FORMAT: &str =
    "#{window_index}:#{pane_index}:#{pane_pid}:#{pane_dead}:#{pid}:#{session_name}";

/// The most lines read from one listing; the rest is dropped (a server
/// with more panes than this is not agent-deck's).
pub(crate) const MAX_LINES: usize = 100_000;

/// How long one `list-panes` may take (measured: 2 ms).
pub(crate) const LIST_TIMEOUT: Duration = Duration::from_secs(5);

/// A session's first pane: its first window's first pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ListedPane {
    pub window: u32,
    pub pane: u32,
    pub pid: u32,
    /// Kept by `remain-on-exit` after its process ended.
    pub dead: bool,
}

/// The live tmux session of a session titled `title` in `listing` that is
/// none of `known`: one a restart spawned and agent-deck did not save.
/// agent-deck names its tmux sessions `agentdeck_<title>_<8 hex>`, the title
/// with each run of characters other than ASCII letters, digits and `-`
/// made one `-`.
pub(crate) fn unknown_of<'a>(
    listing: &'a Listing,
    title: &str,
    known: &BTreeSet<String>,
) -> Option<&'a str> {
    let (mut prefix, mut run) = (String::from("agentdeck_"), false);
    for c in title.chars() {
        let kept = c.is_ascii_alphanumeric() || c == '-';
        if kept || !run {
            prefix.push(if kept { c } else { '-' });
        }
        run = !kept;
    }
    prefix.push('_');
    let ours = |n: &str| {
        n.strip_prefix(&prefix)
            .is_some_and(|id| !id.is_empty() && !id.contains('_'))
    };
    let live = listing
        .panes
        .iter()
        .filter(|(n, p)| !p.dead && ours(n) && !known.contains(*n));
    live.map(|(n, _)| n.as_str()).next()
}

/// One listing of the server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Listing {
    /// The server's pid, as every row gives it; `None` with no row.
    pub server: Option<u32>,
    /// By tmux session name.
    pub panes: BTreeMap<String, ListedPane>,
}

/// Why there is no listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListError {
    /// No `tmux` to run.
    NoTmux(String),
    /// tmux answered that no server runs on the socket (yet).
    NoServer,
    /// Anything else: it failed, timed out, or printed garbage.
    Failed(String),
}

impl std::fmt::Display for ListError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListError::NoTmux(e) => write!(f, "tmux cannot be run ({e})"),
            ListError::NoServer => f.write_str("no tmux server runs on agent-deck's socket yet"),
            ListError::Failed(e) => write!(f, "tmux list-panes failed ({e})"),
        }
    }
}

/// What lists the server's panes: tmux itself, or a test's stand-in.
pub(crate) trait PaneSource: Send {
    fn list(&self) -> Result<Listing, ListError>;
}

/// Parses `list-panes -F` [`FORMAT`] output. A line that does not parse is
/// skipped; of several panes under one name, the lowest window, then pane,
/// is the session's. At most [`MAX_LINES`] lines are read.
pub(crate) fn parse(text: &str) -> Listing {
    let mut listing = Listing::default();
    for line in text.lines().take(MAX_LINES) {
        let Some((server, name, pane)) = parse_line(line) else {
            continue;
        };
        listing.server.get_or_insert(server);
        let first = listing.panes.entry(name.to_owned()).or_insert(pane);
        if (pane.window, pane.pane) < (first.window, first.pane) {
            *first = pane;
        }
    }
    listing
}

/// One line: the server pid, the session name and its pane.
fn parse_line(line: &str) -> Option<(u32, &str, ListedPane)> {
    let mut f = line.splitn(6, ':');
    let mut num = || f.next()?.trim().parse::<u32>().ok();
    let (window, pane, pid, dead, server) = (num()?, num()?, num()?, num()?, num()?);
    let name = f.next().filter(|n| !n.is_empty())?;
    if pid == 0 || server == 0 || dead > 1 {
        return None;
    }
    let pane = ListedPane {
        window,
        pane,
        pid,
        dead: dead == 1,
    };
    Some((server, name, pane))
}

/// agent-deck's tmux server, listed by running `tmux`.
pub(crate) struct Tmux {
    /// `-L` name; `None` for the default socket.
    pub socket: Option<String>,
    pub shutdown: Shutdown,
}

impl Tmux {
    /// The server agent-deck uses, as its `config.toml` names it. An
    /// unreadable or unparsable file is said, and the default socket used.
    pub(crate) fn for_config(cfg: &Config, shutdown: Shutdown) -> Tmux {
        let find = deck_files::find(&cfg.home, cfg.xdg_config_home.as_deref(), &cfg.root);
        Tmux {
            socket: find.and_then(|p| socket_name(&p)),
            shutdown,
        }
    }
}

/// The `[tmux] socket_name` in `path`; `None` (the default) when absent or
/// unreadable, said once here.
fn socket_name(path: &Path) -> Option<String> {
    let read = read_text(path, SMALL_FILE_MAX).map_err(|e| e.reason());
    match read.and_then(|t| deck_files::tmux_socket_name(&t)) {
        Ok(name) => name,
        Err(e) => {
            log::warn!(
                "cannot read [tmux] socket_name from {} ({e}); the pane watch lists the default tmux socket",
                path.display()
            );
            None
        }
    }
}

impl Tmux {
    /// `job` (`tmux …`) on agent-deck's server: only the socket (or
    /// `TMUX_TMPDIR`'s default) chooses it, never a tmux the watchdog
    /// itself runs in.
    fn on_server(&self, job: Cmd) -> Cmd {
        match &self.socket {
            Some(s) => job.arg("-L").arg(s),
            None => job,
        }
    }

    /// `kill-session -t =NAME`: the tmux session of exactly that name (the
    /// `=` keeps tmux from taking a prefix or a pattern), nothing else.
    pub(crate) fn end_session(&self, name: &str) -> Result<(), String> {
        let job = self.on_server(Cmd::new("tmux"));
        let job = job.args(["kill-session", "-t", &format!("={name}")]);
        let out = process::run(&job, LIST_TIMEOUT, &self.shutdown).map_err(|e| e.to_string())?;
        match out.success() {
            true => Ok(()),
            false => Err(out.stderr.trim().chars().take(200).collect()),
        }
    }
}

impl PaneSource for Tmux {
    fn list(&self) -> Result<Listing, ListError> {
        let job = self.on_server(Cmd::new("tmux").arg("-u"));
        let job = job.args(["list-panes", "-a", "-F", FORMAT]);
        let out = process::run(&job, LIST_TIMEOUT, &self.shutdown).map_err(|e| match e {
            RunError::Spawn(e) => ListError::NoTmux(e.to_string()),
            e => ListError::Failed(e.to_string()),
        })?;
        if out.success() {
            return Ok(parse(&out.stdout));
        }
        let said = out.stderr.trim();
        if said.contains("no server running") || said.contains("error connecting to") {
            return Err(ListError::NoServer);
        }
        let first = said.lines().next().unwrap_or_default();
        let first: String = first.chars().take(200).collect();
        Err(ListError::Failed(format!("exited {:?}: {first}", out.code)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_session_is_its_first_windows_first_pane() {
        let l = parse(
            "1:0:300:0:99:agentdeck_a_1\n0:1:301:0:99:agentdeck_a_1\n0:0:302:1:99:agentdeck_a_1\n0:0:400:0:99:agentdeck_b_2\n",
        );
        assert_eq!(l.server, Some(99));
        let a = l.panes["agentdeck_a_1"];
        assert_eq!((a.pid, a.dead), (302, true));
        assert_eq!(l.panes["agentdeck_b_2"].pid, 400);
        assert_eq!(l.panes.len(), 2);
    }

    #[test]
    fn an_unknown_tmux_session_of_a_title_is_one_named_as_agent_deck_names_it() {
        let listing = parse(
            "0:0:10:0:9:agentdeck_conductor-ops_1a2b3c4d\n\
             0:0:11:0:9:agentdeck_conductor-ops_5e6f7a8b\n\
             0:0:12:0:9:agentdeck_my-plan-x_0badc0de\n\
             0:0:13:1:9:agentdeck_conductor-two_00000000\n\
             0:0:14:0:9:agentdeck_conductor-ops_x_1a2b3c4d\n",
        );
        let known: BTreeSet<String> = ["agentdeck_conductor-ops_1a2b3c4d".to_owned()].into();
        assert_eq!(
            unknown_of(&listing, "conductor-ops", &known),
            Some("agentdeck_conductor-ops_5e6f7a8b")
        );
        assert_eq!(
            unknown_of(&listing, "my plan: x", &BTreeSet::new()),
            Some("agentdeck_my-plan-x_0badc0de")
        );
        assert_eq!(unknown_of(&listing, "conductor-two", &known), None, "dead");
        assert_eq!(unknown_of(&listing, "conductor", &known), None);
        let all = listing.panes.keys().cloned().collect();
        assert_eq!(unknown_of(&listing, "conductor-ops", &all), None);
    }

    #[test]
    fn garbage_and_short_lines_are_skipped() {
        let l = parse(
            "\n:::::\n0:0:1\nx:0:5:0:9:n\n0:0:0:0:9:zero-pid\n0:0:5:2:9:bad-dead\n0:0:5:0:9:\n0:0:7:0:9:ok\n",
        );
        assert_eq!(l.panes.keys().collect::<Vec<_>>(), ["ok"]);
        assert_eq!(parse("").server, None);
    }

    #[test]
    fn a_name_holding_the_separator_still_parses_whole() {
        let l = parse("0:0:7:0:9:odd:name\t \n");
        assert_eq!(l.panes["odd:name\t "].pid, 7);
    }

    #[test]
    fn a_huge_listing_is_read_only_up_to_its_bound() {
        let text: String = (0..MAX_LINES + 500)
            .map(|i| format!("0:0:{}:0:9:s{i}\n", i + 1))
            .collect();
        assert_eq!(parse(&text).panes.len(), MAX_LINES);
    }

    proptest! {
        #[test]
        fn parse_never_panics_and_keeps_one_pane_per_name(text in "[0-9:a-z_\\n\\t]{0,400}") {
            let l = parse(&text);
            prop_assert!(l.panes.len() <= text.lines().count());
            prop_assert!(l.panes.values().all(|p| p.pid > 0));
        }
    }
}
