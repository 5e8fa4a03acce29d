//! The files in `contrib/` that operators copy as they are: the launchd
//! agent must be a property list launchd accepts, carrying what SPEC §12 and
//! the README promise.

use std::path::Path;

use plist::{Dictionary, Value};

fn launchd_agent() -> Dictionary {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/com.agent-deck.watchdog.plist");
    match plist::Value::from_file(&path) {
        Ok(Value::Dictionary(d)) => d,
        Ok(other) => panic!("{} is not a dictionary: {other:?}", path.display()),
        Err(e) => panic!("{} is not a property list: {e}", path.display()),
    }
}

fn string<'a>(d: &'a Dictionary, key: &str) -> &'a str {
    d.get(key)
        .and_then(Value::as_string)
        .unwrap_or_else(|| panic!("{key} is not a string: {:?}", d.get(key)))
}

#[test]
fn the_launchd_agent_is_a_property_list_with_what_launchd_needs() {
    let agent = launchd_agent();
    assert_eq!(string(&agent, "Label"), "com.agent-deck.watchdog");
    let program = agent
        .get("ProgramArguments")
        .and_then(Value::as_array)
        .expect("ProgramArguments is an array");
    let binary = program
        .first()
        .and_then(Value::as_string)
        .expect("the first argument is the binary");
    assert!(
        binary.starts_with('/') && binary.ends_with("/agent-deck-watchdog"),
        "launchd needs an absolute path to the installed binary: {binary}"
    );
    assert_eq!(
        agent.get("KeepAlive").and_then(Value::as_boolean),
        Some(true)
    );
    assert_eq!(
        agent.get("RunAtLoad").and_then(Value::as_boolean),
        Some(true)
    );
    let throttle = agent
        .get("ThrottleInterval")
        .and_then(Value::as_signed_integer)
        .expect("ThrottleInterval is an integer");
    assert!((1..=60).contains(&throttle), "ThrottleInterval {throttle}");
    let env = agent
        .get("EnvironmentVariables")
        .and_then(Value::as_dictionary)
        .expect("EnvironmentVariables is a dictionary");
    assert!(
        string(env, "PATH").contains("/opt/homebrew/bin"),
        "PATH must reach a Homebrew agent-deck and tmux"
    );
    let stderr = string(&agent, "StandardErrorPath");
    assert!(
        stderr.starts_with("/Users/") && stderr.contains("/Library/Logs/"),
        "stderr goes under ~/Library/Logs/: {stderr}"
    );
}
