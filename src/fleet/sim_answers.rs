//! The simulator's answers as the daemon reads them: every answer the
//! watchdog parses, printed by `agent-deck-sim` and read back with
//! `listing` and `parse`. A test of this crate, since the simulator imports
//! nothing of the daemon's.

use std::path::PathBuf;

use agent_deck_sim::{run, transact, SimEnv, SimSession};
use serde_json::json;
use tempfile::TempDir;

use super::listing::{self, Shape};
use super::parse;

const ID: &str = "3f9c2a1b-1755891234";

/// A state file and a call log in a temp dir.
struct Sim {
    _dir: TempDir,
    state: PathBuf,
    log: PathBuf,
}

fn sim(sessions: Vec<SimSession>) -> Sim {
    let dir = tempfile::tempdir().expect("temp dir");
    let (state, log) = (dir.path().join("state.json"), dir.path().join("calls.log"));
    transact(&state, |st| st.sessions = sessions).expect("write state");
    Sim {
        _dir: dir,
        state,
        log,
    }
}

impl Sim {
    /// One in-process call: exit code, stdout, stderr.
    fn call(&self, args: &[&str]) -> (i32, String, String) {
        let env = SimEnv {
            state: Some(self.state.clone()),
            log: Some(self.log.clone()),
            ..SimEnv::default()
        };
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run(&args, &env, &mut out, &mut err);
        let text = |b: Vec<u8>| String::from_utf8(b).expect("utf-8 output");
        (code, text(out), text(err))
    }
}

fn held(status: &str) -> SimSession {
    let hold = json!({"reason": "auth_death", "remedy": "log in again", "evidence": "401",
                      "boot_attempts": 1, "ts": 1});
    SimSession {
        id: ID.into(),
        title: "conductor-ops".into(),
        status: Some(status.into()),
        auth_hold: Some(hold),
        ..SimSession::default()
    }
}

#[test]
fn watchdog_parser_reads_every_answer() {
    let mut s0 = held("error");
    s0.channels = vec!["plugin:telegram@claude-plugins-official".into()];
    let s = sim(vec![s0]);
    let out = |args: &[&str]| s.call(args).1;
    let list = |shape, answer: String| {
        let mut rows = Vec::new();
        listing::read(shape, answer.as_bytes(), &mut |r| {
            rows.push((r.session(), r.live()))
        })
        .map(|_| rows)
    };
    let fleet = list(Shape::All, out(&["list", "--all", "--json"])).expect("list --all");
    assert_eq!(fleet[0].0.id, ID);
    let live = list(Shape::Profile, out(&["-p", "default", "list", "--json"])).expect("list");
    assert_eq!(live[0].1.channels.len(), 1);
    let shown = parse::show(&out(&["-p", "default", "session", "show", ID, "--json"]));
    assert!(shown.expect("show").auth_hold.is_some());
    let skipped = parse::restart(&out(&["session", "restart", ID, "--json"])).expect("restart");
    assert!(matches!(skipped, parse::RestartAnswer::Skipped(_)));
    let (code, stdout, stderr) = s.call(&["session", "show", "nosuch", "--json"]);
    assert_eq!(code, 2);
    let msg = parse::error_message(&stdout, &stderr);
    assert_eq!(msg, "session 'nosuch' not found");
    assert!(list(Shape::All, sim(vec![]).call(&["list", "--all", "--json"]).1).is_ok());
}
