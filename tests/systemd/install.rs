//! The unit as a user installs it, in a booted box: the binary cargo built
//! where the unit expects it (`~/.cargo/bin`, where `cargo install` puts
//! it), a checkout's `contrib/` in the user's home, settings in
//! `~/.config/agent-deck-watchdog.env`, then the README's steps verbatim
//! ("systemd (recommended)"), run as the user. The README does not create
//! `~/.config/systemd/user/`, which a fresh user lacks: that `mkdir -p` is
//! the one step added.
//!
//! The agent-deck it talks to has one running critical conductor and is
//! named to the unit as `AGENT_DECK_BIN` in the settings file: the real one
//! when the test's environment names it so (`deck.rs`), else the simulator
//! (`agent-deck-watchdog sim`). Its `version` call waits while
//! `~/hold-version` exists, so a test can hold the daemon before it arms.
//!
//! Also here: what the tests read back (the unit's properties, its status,
//! its journal) and how they act on the unit's main process.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};

use crate::deck::{self, RealDeck};
use crate::sdbox::{SdBox, USER};
use crate::support::fixtures;
use crate::support::sim::{self, Sim};
use crate::support::{wait_until, BIN};

/// The unit, as the README names it.
pub(crate) const UNIT: &str = "agent-deck-watchdog";

/// The README's steps, verbatim, after the one `mkdir` a fresh user needs.
/// Run in the checkout; `journalctl -f` (it follows forever) and
/// `enable-linger` (the box turned it on) are left out.
const README_STEPS: &str = "mkdir -p ~/.config/systemd/user && \
    cp contrib/agent-deck-watchdog.service ~/.config/systemd/user/ && \
    systemctl --user daemon-reload && \
    systemctl --user enable --now agent-deck-watchdog";

/// The file whose presence holds agent-deck's `version`, in the home.
const HOLD: &str = "hold-version";

/// The fleet's one conductor.
pub(crate) const CONDUCTOR: &str = "conductor-ops";

/// Which agent-deck the unit talks to.
pub(crate) enum Deck {
    /// The simulator's files, seen from the host (its `dir` is a scratch
    /// dir inside `~/sim`, so the state is replaced by a rename there).
    Sim(Sim),
    Real(RealDeck),
}

/// The unit installed in a box for the user, with its fleet.
pub(crate) struct Installed {
    pub deck: Deck,
    pub sdbox: SdBox,
}

impl Installed {
    /// Boots a box and prepares the user's home: binary, checkout, fleet,
    /// settings (`settings` added to agent-deck's), and `dropin` as
    /// `~/.config/systemd/user/agent-deck-watchdog.service.d/test.conf`.
    /// The unit is not installed yet: see [`Installed::readme_steps`].
    pub(crate) fn prepare(settings: &[(&str, &str)], dropin: Option<&str>) -> Installed {
        Installed::prepare_with(deck::named(), settings, dropin)
    }

    /// [`Installed::prepare`] on the simulator, whatever `AGENT_DECK_BIN`
    /// says: for a test of what only the simulator can play.
    pub(crate) fn prepare_sim(settings: &[(&str, &str)], dropin: Option<&str>) -> Installed {
        Installed::prepare_with(None, settings, dropin)
    }

    fn prepare_with(
        real: Option<PathBuf>,
        settings: &[(&str, &str)],
        dropin: Option<&str>,
    ) -> Installed {
        let sdbox = SdBox::boot();
        let home = sdbox.home();
        let host_home = sdbox.host_path(&home);
        let hold = format!("{home}/{HOLD}");
        let (deck, mut env) = match real {
            Some(bin) => {
                let real = RealDeck::install(&sdbox, &bin, &hold);
                let env = real.settings();
                (Deck::Real(real), env)
            }
            None => {
                let sim = install_sim(&sdbox, &hold);
                let env = format!(
                    "AGENT_DECK_BIN={home}/sim/agent-deck\n\
                     PATH={home}/sim:/usr/local/bin:/usr/bin:/bin\n\
                     {}={home}/sim/state.json\n{}={home}/sim/calls.log\n",
                    sim::STATE_ENV,
                    sim::LOG_ENV
                );
                (Deck::Sim(sim), env)
            }
        };
        for (k, v) in settings {
            env.push_str(&format!("{k}={v}\n"));
        }
        fs::create_dir_all(host_home.join(".config")).expect("~/.config");
        // agent-deck's hooks dir, as its first run leaves it: the daemon
        // warns about a missing one.
        fs::create_dir_all(host_home.join(".local/share/agent-deck/hooks")).expect("hooks dir");
        fs::write(host_home.join(".config/agent-deck-watchdog.env"), env).expect("env file");
        if let Some(text) = dropin {
            let dir = host_home.join(".config/systemd/user/agent-deck-watchdog.service.d");
            fs::create_dir_all(&dir).expect("drop-in dir");
            fs::write(dir.join("test.conf"), text).expect("drop-in");
        }
        let contrib = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib");
        let out = sdbox.root_sh(&format!(
            "install -D -m 0755 '{BIN}' {home}/.cargo/bin/agent-deck-watchdog && \
             mkdir -p {home}/agent-deck-watchdog && \
             cp -r '{}' {home}/agent-deck-watchdog/ && \
             chown -R {USER}: {home}",
            contrib.display()
        ));
        assert!(
            out.status.success(),
            "cannot prepare {home}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if let Deck::Real(real) = &deck {
            real.start_notify_daemon(&sdbox);
            real.launch(&sdbox, CONDUCTOR);
        }
        Installed { deck, sdbox }
    }

    /// The simulator; fails the test on the real agent-deck.
    pub(crate) fn sim(&self) -> &Sim {
        match &self.deck {
            Deck::Sim(sim) => sim,
            Deck::Real(_) => panic!("this test needs the simulator"),
        }
    }

    /// [`Installed::prepare`], then the README's steps, which must succeed.
    pub(crate) fn new(settings: &[(&str, &str)], dropin: Option<&str>) -> Installed {
        Installed::prepare(settings, dropin).installed()
    }

    /// The README's steps, which must succeed.
    pub(crate) fn installed(self) -> Installed {
        let out = self.readme_steps();
        assert!(
            out.status.success(),
            "the README's steps failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        self
    }

    /// Runs the README's steps as the user, in the checkout.
    pub(crate) fn readme_steps(&self) -> Output {
        self.sdbox
            .user_sh(&format!("cd agent-deck-watchdog && {README_STEPS}"))
    }

    /// Holds agent-deck's `version` call (the daemon's first) until
    /// [`Installed::release_version`].
    pub(crate) fn hold_version(&self) {
        fs::write(self.hold_path(), "").expect("hold-version");
    }

    pub(crate) fn release_version(&self) {
        fs::remove_file(self.hold_path()).expect("release hold-version");
    }

    fn hold_path(&self) -> PathBuf {
        self.sdbox
            .host_path(&format!("{}/{HOLD}", self.sdbox.home()))
    }

    /// One property of the unit (`systemctl --user show -p`).
    pub(crate) fn prop(&self, name: &str) -> String {
        self.sdbox
            .user_ok(&format!("systemctl --user show -p {name} --value {UNIT}"))
            .trim()
            .to_owned()
    }

    /// A numeric property (`NRestarts`, `MainPID`, …); 0 when unset.
    pub(crate) fn num(&self, name: &str) -> u64 {
        self.prop(name).parse().unwrap_or(0)
    }

    /// `systemctl --user status`, whatever its exit code.
    pub(crate) fn status(&self) -> String {
        let out = self.sdbox.user_sh(&format!(
            "systemctl --user status --no-pager -l -n 20 {UNIT}"
        ));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the unit is active with a main process; that pid (in
    /// the box's pid namespace).
    pub(crate) fn wait_active(&self, limit: Duration) -> u64 {
        let mut seen = (String::new(), 0);
        let up = wait_until(limit, || {
            seen = (self.prop("ActiveState"), self.num("MainPID"));
            seen.0 == "active" && seen.1 != 0
        });
        assert!(
            up,
            "{UNIT} not active within {limit:?}: {seen:?}\n{}",
            self.status()
        );
        seen.1
    }

    /// Sends `signal` (a `kill -s` name) to the unit's main process.
    pub(crate) fn signal_main(&self, signal: &str) {
        let pid = self.num("MainPID");
        assert_ne!(pid, 0, "{UNIT} has no main process:\n{}", self.status());
        self.sdbox.user_ok(&format!("kill -s {signal} {pid}"));
    }

    /// The unit's journal, one JSON object per entry (the daemon's lines
    /// and the user manager's about the unit).
    pub(crate) fn journal(&self) -> Vec<Value> {
        self.user_journal(&format!("-u {UNIT}"))
    }

    /// The user's journal entries that `matches` (journalctl's arguments)
    /// select, whatever unit journald put them under.
    pub(crate) fn user_journal(&self, matches: &str) -> Vec<Value> {
        let text = self
            .sdbox
            .user_ok(&format!("journalctl --user -o json --no-pager {matches}"));
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).expect("journalctl -o json line"))
            .collect()
    }

    /// The `MESSAGE`s of the journal, in order.
    pub(crate) fn messages(&self) -> Vec<String> {
        self.journal().iter().map(message).collect()
    }
}

/// The simulator in `~/sim` with one running conductor, its `version`
/// held while `hold` exists.
fn install_sim(sdbox: &SdBox, hold: &str) -> Sim {
    let sim_dir = sdbox.host_path(&sdbox.home()).join("sim");
    fs::create_dir_all(&sim_dir).expect("sim dir");
    let scratch = tempfile::tempdir_in(&sim_dir).expect("sim scratch dir");
    crate::support::files::write_script(
        &sim_dir.join("agent-deck"),
        &format!(
            "#!/bin/sh\nif [ \"$1\" = version ]; then\n  \
             while [ -e '{hold}' ]; do sleep 0.05; done\nfi\nexec {} \"$@\"\n",
            sim::shell_command()
        ),
    );
    sim::write_tmux_script(&sim_dir);
    fs::write(sim_dir.join("state.json.lock"), "").expect("sim lock file");
    let sim = Sim {
        dir: scratch,
        state: sim_dir.join("state.json"),
        log: sim_dir.join("calls.log"),
        bin: sim_dir.join("agent-deck"),
    };
    sim.set_state(&json!({
        "profiles_exist": true,
        "sessions": [fixtures::conductor("c0ffee01-1765000000", CONDUCTOR, "running")],
    }));
    sim
}

/// An entry's `MESSAGE` (journald gives bytes as an array of numbers).
pub(crate) fn message(entry: &Value) -> String {
    match &entry["MESSAGE"] {
        Value::String(s) => s.clone(),
        Value::Array(bytes) => {
            let bytes: Vec<u8> = bytes
                .iter()
                .filter_map(|b| u8::try_from(b.as_u64()?).ok())
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        }
        _ => String::new(),
    }
}
