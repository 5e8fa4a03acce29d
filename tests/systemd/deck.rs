//! The real agent-deck in the box, when the test's environment names one
//! as `AGENT_DECK_BIN`: copied into the user's `~/.local/bin`, configured as
//! a new user leaves it (only the agent, the status line and the update
//! check set: `launch_as` stays at its default, so each tmux server is
//! started in a scope of its own under the user manager), with the live
//! suite's fake agent as `[claude] command` and `agent-deck notify-daemon`
//! running as a user service beside the fleet, as the live suite runs it.
//!
//! The unit gets a wrapper as `AGENT_DECK_BIN` that logs each call
//! (`<ts> <argv…>`) before it runs the real CLI. The fleet is built and
//! read through the real CLI, run as the user.

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::fake_agent;
use crate::sdbox::SdBox;
use crate::support::files::write_script;
use crate::support::wait_until;

/// Where the real CLI and its wrapper live in the user's home.
const BIN: &str = ".local/bin/agent-deck";
const WRAPPER: &str = "deck/agent-deck";
const CALLS: &str = "deck/calls.log";
/// The fake agent, in the user's home.
const FAKE: &str = "deck/fake-agent";
/// Where a session's project dir is, under the user's home.
const PROJECTS: &str = "projects";

/// agent-deck's freshness guard: it refuses a restart of a session started
/// less than this long ago (60 s, and a second to spare).
pub(crate) const FRESHNESS: Duration = Duration::from_secs(61);

/// The real agent-deck named by `AGENT_DECK_BIN`, when it is set.
pub(crate) fn named() -> Option<PathBuf> {
    std::env::var_os("AGENT_DECK_BIN")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// The real agent-deck installed for the user of a box.
pub(crate) struct RealDeck {
    home: String,
    /// The calls log, seen from the host.
    calls: PathBuf,
}

impl RealDeck {
    /// Installs `bin`, its config, the fake agent and the logging wrapper in
    /// the user's home (the files are the user's once `prepare` chowns the
    /// home). `hold` is the file whose presence holds `version` calls.
    pub(crate) fn install(sdbox: &SdBox, bin: &std::path::Path, hold: &str) -> RealDeck {
        let home = sdbox.home();
        let host_home = sdbox.host_path(&home);
        for dir in [".local/bin", "deck", ".config/agent-deck", PROJECTS] {
            fs::create_dir_all(host_home.join(dir)).expect("agent-deck dirs");
        }
        fs::copy(bin, host_home.join(BIN)).expect("copy agent-deck into the box");
        let real = format!("{home}/{BIN}");
        fake_agent::install(&host_home.join(FAKE), std::path::Path::new(&real));
        let config = format!(
            "[tmux]\ninject_status_line = false\n\n\
             [updates]\ncheck_enabled = false\nnotify_in_cli = false\n\n\
             [claude]\ncommand = \"{home}/{FAKE}\"\n"
        );
        fs::write(host_home.join(".config/agent-deck/config.toml"), config).expect("config");
        write_script(
            &host_home.join(WRAPPER),
            &format!(
                "#!/bin/sh\nprintf '%s %s\\n' \"$(date +%s.%N)\" \"$*\" >> '{home}/{CALLS}'\n\
                 if [ \"$1\" = version ]; then\n  \
                 while [ -e '{hold}' ]; do sleep 0.05; done\nfi\nexec '{real}' \"$@\"\n"
            ),
        );
        RealDeck {
            calls: host_home.join(CALLS),
            home,
        }
    }

    /// What the unit's settings file says about agent-deck.
    pub(crate) fn settings(&self) -> String {
        let home = &self.home;
        format!(
            "AGENT_DECK_BIN={home}/{WRAPPER}\nPATH={home}/.local/bin:/usr/local/bin:/usr/bin:/bin\n\
             AGENTDECK_SKIP_UPDATE_CHECK=1\n"
        )
    }

    /// Starts `notify-daemon` as a user service: it keeps the stored status
    /// current, as a running TUI would.
    pub(crate) fn start_notify_daemon(&self, sdbox: &SdBox) {
        sdbox.user_ok(&format!(
            "systemd-run --user --quiet --unit=agent-deck-notify \
             -E AGENTDECK_SKIP_UPDATE_CHECK=1 {}/{BIN} notify-daemon",
            self.home
        ));
    }

    /// One call of the real CLI as the user, which must succeed; its stdout.
    pub(crate) fn cli(&self, sdbox: &SdBox, args: &str) -> String {
        sdbox.user_ok(&format!(
            "AGENTDECK_SKIP_UPDATE_CHECK=1 {}/{BIN} {args}",
            self.home
        ))
    }

    /// One `--json` call, parsed.
    pub(crate) fn json(&self, sdbox: &SdBox, args: &str) -> Value {
        let text = self.cli(sdbox, &format!("{args} --json"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("agent-deck {args}: {e}: {text}"))
    }

    /// Adds a conductor running the fake Claude (in `chat` mode: it takes
    /// the continuity message as Claude does) and starts it; waits until the
    /// fake booted and agent-deck reads it healthy. Its id.
    pub(crate) fn launch(&self, sdbox: &SdBox, title: &str) -> String {
        let dir = format!("{}/{PROJECTS}/{title}", self.home);
        sdbox.user_ok(&format!("mkdir -p {dir} && echo chat > {dir}/fake-mode"));
        let added = self.json(
            sdbox,
            &format!("add {dir} -t {title} -g conductor -c claude"),
        );
        let id = added["id"]
            .as_str()
            .expect("add --json has an id")
            .to_owned();
        self.json(sdbox, &format!("session start {id}"));
        let boots = sdbox.host_path(&format!("{dir}/boots"));
        let up = wait_until(Duration::from_secs(30), || {
            fs::metadata(&boots).is_ok() && healthy(&self.status(sdbox, &id))
        });
        assert!(
            up,
            "{title} never booted: {}",
            self.json(sdbox, &format!("session show {id}"))
        );
        id
    }

    /// The ids of every session agent-deck lists.
    pub(crate) fn ids(&self, sdbox: &SdBox) -> Vec<String> {
        let rows = self.json(sdbox, "list");
        let rows = rows.as_array().map(Vec::as_slice).unwrap_or_default();
        rows.iter()
            .filter_map(|r| Some(r["id"].as_str()?.to_owned()))
            .collect()
    }

    /// `session show`'s status.
    pub(crate) fn status(&self, sdbox: &SdBox, id: &str) -> String {
        self.json(sdbox, &format!("session show {id}"))["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// `tmux` as the user, on agent-deck's server (the default socket: its
    /// config names none).
    pub(crate) fn tmux(&self, sdbox: &SdBox, args: &str) -> std::process::Output {
        sdbox.user_sh(&format!("tmux {args}"))
    }

    /// The tmux server's pid, when one runs.
    pub(crate) fn tmux_server(&self, sdbox: &SdBox) -> Option<u32> {
        let out = self.tmux(sdbox, "display-message -p '#{pid}'");
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    }

    /// Each tmux session's pane process: name → pid.
    pub(crate) fn panes(&self, sdbox: &SdBox) -> Vec<(String, u32)> {
        let out = self.tmux(sdbox, "list-panes -a -F '#{session_name} #{pane_pid}'");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let (name, pid) = l.split_once(' ')?;
                Some((name.to_owned(), pid.parse().ok()?))
            })
            .collect()
    }

    /// The calls of the unit's CLI whose argv holds every one of `words`.
    pub(crate) fn calls_with(&self, words: &[&str]) -> Vec<String> {
        fs::read_to_string(&self.calls)
            .unwrap_or_default()
            .lines()
            .filter(|l| {
                let argv: Vec<&str> = l.split_whitespace().skip(1).collect();
                words.iter().all(|w| argv.contains(w))
            })
            .map(str::to_owned)
            .collect()
    }
}

/// A status the watchdog leaves alone.
pub(crate) fn healthy(status: &str) -> bool {
    matches!(status, "running" | "waiting" | "idle")
}

/// `pid`'s cgroup in the box (the unified hierarchy's path).
pub(crate) fn cgroup(sdbox: &SdBox, pid: u32) -> String {
    let out = sdbox.root_sh(&format!("cat /proc/{pid}/cgroup"));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .unwrap_or_default()
        .to_owned()
}

/// Whether `pid` lives in the box (as root: the user's may be in a scope).
pub(crate) fn alive(sdbox: &SdBox, pid: u32) -> bool {
    sdbox.root_sh(&format!("kill -0 {pid}")).status.success()
}
