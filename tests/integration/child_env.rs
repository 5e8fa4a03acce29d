//! Black-box tests of what the daemon's children inherit (SPEC §5.5): a
//! watchdog started from a shell inside a tmux server, or inside an
//! agent-deck pane, hands agent-deck none of that place's variables.

use serde_json::json;

use crate::support::files::write_script;
use crate::support::fixtures::{conductor, CONDUCTOR};
use crate::support::watchdog::{assert_ok, Wd};

/// The variables of a tmux client and of an agent-deck pane, with values a
/// shell inside a private tmux server and an agent-deck pane would have.
const PANE_VARS: [(&str, &str); 8] = [
    ("TMUX", "/tmp/tmux-1000/private,4242,0"),
    ("TMUX_PANE", "%3"),
    ("AGENTDECK_INSTANCE_ID", "0a1b2c3d-1755890000"),
    ("AGENTDECK_TITLE", "conductor-elsewhere"),
    ("AGENTDECK_TOOL", "claude"),
    ("AGENTDECK_RESOLVED_CONFIG_DIR", "/home/u/.claude-work"),
    ("AGENTDECK_HOOK_GENERATION", "7"),
    ("AGENTDECK_TOOL_SESSION_ID", "s-123"),
];

/// What is handed on: where, not from inside what.
const KEPT_VARS: [(&str, &str); 3] = [
    ("TMUX_TMPDIR", "/tmp/sockets-here"),
    ("AGENTDECK_PROFILE", "default"),
    ("CLAUDE_CONFIG_DIR", "/home/u/.claude-work"),
];

const OTHER: &str = "b4c5d6e7-1755890001";

fn inside_a_pane(mut wd: Wd) -> Wd {
    for (k, v) in PANE_VARS.iter().chain(&KEPT_VARS) {
        wd = wd.env(k, v);
    }
    wd
}

#[test]
fn no_agent_deck_call_is_handed_the_variables_of_a_tmux_client_or_an_agent_deck_pane() {
    let wd = inside_a_pane(Wd::new());
    // Every call dumps its environment, then runs the simulator.
    let dumps = wd.home.path().join("env.log");
    let spy = wd.home.path().join("bin").join("agent-deck");
    write_script(
        &spy,
        &format!(
            "#!/bin/sh\nenv >> '{}'\necho '--- end of call' >> '{}'\nexec '{}' \"$@\"\n",
            dumps.display(),
            dumps.display(),
            wd.sim.bin.display()
        ),
    );
    let wd = wd.env("AGENT_DECK_BIN", &spy.display().to_string());
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "error")]);
    let out = wd.run(&["--once"]);
    assert_ok(&out);
    assert_eq!(wd.restart_calls(), 1, "the dead conductor is restarted");
    let text = std::fs::read_to_string(&dumps).expect("the calls' environments");
    let calls: Vec<&str> = text
        .split("--- end of call\n")
        .filter(|c| !c.is_empty())
        .collect();
    assert!(
        calls.len() >= 4,
        "list --all, list, show, output, restart…: {}",
        calls.len()
    );
    for call in calls {
        let vars: Vec<&str> = call.lines().collect();
        for (k, _) in PANE_VARS {
            assert!(
                !vars.iter().any(|l| l.starts_with(&format!("{k}="))),
                "{k} reached agent-deck:\n{call}"
            );
        }
        for (k, v) in KEPT_VARS {
            assert!(
                vars.contains(&format!("{k}={v}").as_str()),
                "{k} was dropped:\n{call}"
            );
        }
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let named = "AGENTDECK_HOOK_GENERATION, AGENTDECK_INSTANCE_ID, AGENTDECK_RESOLVED_CONFIG_DIR, AGENTDECK_TITLE, AGENTDECK_TOOL, AGENTDECK_TOOL_SESSION_ID, TMUX, TMUX_PANE";
    let said = stderr
        .matches(&format!("not handing {named} to agent-deck"))
        .count();
    assert_eq!(said, 1, "the dropped variables are named once:\n{stderr}");
    let warned = stderr.matches("CLAUDE_CONFIG_DIR looks inherited").count();
    assert_eq!(warned, 1, "{stderr}");
}

#[test]
fn outside_any_pane_nothing_is_said_about_dropped_variables() {
    let wd = Wd::new().env("CLAUDE_CONFIG_DIR", "/home/u/.claude");
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let out = wd.run(&["--once"]);
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("not handing"), "{stderr}");
    assert!(!stderr.contains("looks inherited"), "{stderr}");
}

/// A dead conductor and a live one, read by a watchdog whose `TMUX` names
/// another server than the fleet's: up to 1.16.16 a leaked `TMUX` reads
/// both `error`, so the live one would be torn down too; from 1.16.17 the
/// last known status is kept.
#[test]
fn a_watchdog_started_inside_another_tmux_server_revives_the_dead_conductor_only() {
    for version in ["1.14.0", "1.16.5", "1.16.26"] {
        let wd = Wd::new()
            .env("TMUX", "/tmp/tmux-1000/private,4242,0")
            .env("TMUX_PANE", "%1");
        wd.sim.set_state(&json!({
            "profiles_exist": true,
            "version": version,
            "sessions": [conductor(CONDUCTOR, "conductor-ops", "error"),
                         conductor(OTHER, "conductor-two", "running")],
        }));
        let out = wd.run(&["--once"]);
        assert_ok(&out);
        let restarted: Vec<String> = wd
            .sim
            .calls_with(&["session", "restart"])
            .into_iter()
            .map(|argv| argv[argv.len() - 2].clone())
            .collect();
        assert_eq!(restarted, [CONDUCTOR], "at {version}");
    }
}
