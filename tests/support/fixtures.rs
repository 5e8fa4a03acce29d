//! Sessions for the simulator's state file, in the shapes the tests need,
//! and a stand-in Telegram poller process.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use serde_json::{json, Value};

use crate::support::files::write_script;
use crate::support::watchdog::Wd;

/// A conductor id in the real shape `<8 hex>-<unix secs>`.
pub(crate) const CONDUCTOR: &str = "3f9c2a1b-1755891234";

/// A session in profile "default"; other keys take the simulator's defaults.
pub(crate) fn session(id: &str, title: &str, group: &str, status: &str) -> Value {
    json!({"id": id, "title": title, "group": group, "profile": "default", "status": status})
}

/// A conductor that was added and never started: it reads `error` like a
/// dead one, but nothing says it ever ran (no `claude_session_id`, no hook).
pub(crate) fn never_started(id: &str, title: &str) -> Value {
    let mut c = conductor(id, title, "error");
    c["claude_session_id"] = json!("");
    c
}

/// A conductor with a pane that does not move, which has run: its Claude
/// agent booted, so `session show` prints a `claude_session_id`.
pub(crate) fn conductor(id: &str, title: &str, status: &str) -> Value {
    let mut c = session(id, title, "conductor", status);
    c["claude_session_id"] = json!(format!("c1a0de00-{id}"));
    c["pane"] = json!("frozen pane");
    c["transcript"] = json!("");
    c
}

/// A Claude conductor whose context window is full, its turns ending on
/// `how` (`limit`, `prompt`, `compaction` or `thrashing`): 1.14.0 reads it
/// `running`/`idle-at-empty-prompt` after the error turn (context.md §1.7
/// has `waiting` from +135 s; tests/live/context.rs measured `running` to
/// +199 s).
pub(crate) fn full_conductor(id: &str, title: &str, how: &str) -> Value {
    let mut c = conductor(id, title, "running");
    c["substate"] = json!("idle-at-empty-prompt");
    c["full"] = json!(how);
    c
}

/// A conductor in error whose restarts never take: `session restart` answers
/// success but nothing changes, and `session start` finds it already running.
pub(crate) fn crash_looping(id: &str, title: &str) -> Value {
    let mut c = conductor(id, title, "error");
    c["on_restart"] = json!("no_effect");
    c["on_start"] = json!("already_running");
    c
}

/// A conductor in error whose login expired: agent-deck holds its restarts.
pub(crate) fn auth_held(id: &str, title: &str) -> Value {
    let mut c = conductor(id, title, "error");
    c["substate"] = json!("auth-401");
    c["auth_hold"] = json!({"reason": "auth_death", "remedy": "log in again",
                             "evidence": "API Error: 401", "boot_attempts": 1, "ts": 1755891300});
    c
}

/// The channel of agent-deck's Telegram plugin.
pub(crate) const TELEGRAM: &str = "plugin:telegram@claude-plugins-official";

/// A conductor with the Telegram channel whose env file (found through
/// agent-deck's config.toml) declares a TELEGRAM_STATE_DIR; that dir.
pub(crate) fn telegram_conductor(wd: &Wd) -> PathBuf {
    let home = wd.home.path();
    let state_dir = home.join("tg-ops");
    fs::write(
        home.join("ops.env"),
        format!("export TELEGRAM_STATE_DIR=\"{}\"\n", state_dir.display()),
    )
    .unwrap();
    fs::create_dir_all(home.join(".config/agent-deck")).unwrap();
    fs::write(
        home.join(".config/agent-deck/config.toml"),
        "[conductors.ops.claude]\nenv_file = \"~/ops.env\"\n",
    )
    .unwrap();
    let mut c = conductor(CONDUCTOR, "conductor-ops", "running");
    c["channels"] = json!([TELEGRAM]);
    wd.sessions(vec![c]);
    state_dir
}

/// A process whose command line reads `… bun telegram start`, carrying
/// `TELEGRAM_STATE_DIR` in its environment: a Telegram poller that is alive.
/// Killed when dropped.
pub(crate) struct Poller(Child);

impl Poller {
    pub(crate) fn start(dir: &Path, state_dir: &Path) -> Poller {
        let bun = dir.join("bun");
        write_script(&bun, "#!/bin/sh\nsleep 60\n");
        Poller(
            Command::new(&bun)
                .args(["telegram", "start"])
                .env("TELEGRAM_STATE_DIR", state_dir)
                .spawn()
                .expect("start the fake poller"),
        )
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
