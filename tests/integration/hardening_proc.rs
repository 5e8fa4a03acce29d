//! Black-box tests of SPEC §11 for what the daemon starts and calls: a CLI
//! whose grandchild keeps the pipes open, a Telegram request that hangs at
//! shutdown, and a Telegram error that carries the bot token.

use std::fs;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::files::write_script;
use crate::support::fixtures::{auth_held, CONDUCTOR};
use crate::support::telegram::TelegramStub;
use crate::support::watchdog::{assert_ok, Wd};

const TOKEN: &str = "7777777:SECRET-BOT-TOKEN-abc";

/// A stand-in for the Telegram Bot API on loopback that never answers.
struct SilentStub {
    base: String,
    /// Requests whose first bytes arrived.
    received: Arc<AtomicUsize>,
}

impl SilentStub {
    fn start() -> SilentStub {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let base = format!("http://{}", listener.local_addr().expect("local addr"));
        let received = Arc::new(AtomicUsize::new(0));
        let seen = received.clone();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let seen = seen.clone();
                std::thread::spawn(move || {
                    if stream.read(&mut [0u8; 4096]).is_ok_and(|n| n > 0) {
                        seen.fetch_add(1, Ordering::SeqCst);
                    }
                    // Hold the connection, silent, for longer than any client timeout.
                    std::thread::sleep(Duration::from_secs(60));
                });
            }
        });
        SilentStub { base, received }
    }
}

/// Processes a test started in the background, killed when this drops.
struct Strays(PathBuf);

impl Drop for Strays {
    fn drop(&mut self) {
        let pids = fs::read_to_string(&self.0).unwrap_or_default();
        for pid in pids.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            crate::support::kill(pid, libc::SIGKILL);
        }
    }
}

/// An agent-deck that answers every call completely and at once, but leaves
/// behind a grandchild (`sleep 30`) holding its stdout and stderr. It knows
/// one conductor, in error until `session restart` was called.
fn cli_with_a_lingering_grandchild(dir: &Path) -> (PathBuf, PathBuf, Strays) {
    let script = dir.join("agent-deck");
    let calls = dir.join("calls.log");
    let pids = dir.join("grandchildren");
    let restarted = dir.join("restarted");
    let id = CONDUCTOR;
    let session = format!(
        r#""id":"{id}","title":"conductor-ops","path":"/tmp","group":"conductor","tool":"claude","profile":"default","created_at":"2026-01-01T00:00:00Z""#
    );
    let body = format!(
        r#"#!/bin/sh
echo "$*" >> '{calls}'
sleep 30 &
echo $! >> '{pids}'
status=error
[ -e '{restarted}' ] && status=running
case "$*" in
  "list --all --json") echo '[{{{session}}}]' ;;
  "-p default list --json") echo '[{{{session},"status":"'$status'","archived":false}}]' ;;
  "-p default session show {id} --json") echo '{{{session},"claude_session_id":"c1a0de00-1","status":"'$status'"}}' ;;
  "-p default session output {id} --pane -q") echo 'frozen pane' ;;
  "-p default session restart {id} --json") touch '{restarted}'; echo '{{"id":"{id}","success":true,"title":"conductor-ops"}}' ;;
esac
"#,
        calls = calls.display(),
        pids = pids.display(),
        restarted = restarted.display(),
    );
    write_script(&script, &body);
    (script, calls, Strays(pids))
}

#[test]
fn a_cli_whose_grandchild_holds_stdout_still_gets_the_errored_conductor_restarted() {
    let wd = Wd::new();
    let (cli, calls, _strays) = cli_with_a_lingering_grandchild(wd.home.path());
    let wd = wd.env("AGENT_DECK_BIN", &cli.display().to_string());
    let out = wd.run(&["--once"]);
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let calls = fs::read_to_string(&calls).unwrap_or_default();
    assert!(
        calls.contains(&format!("session restart {CONDUCTOR} --json")),
        "no restart; calls:\n{calls}\nstderr:\n{stderr}"
    );
    assert!(!stderr.contains("unreadable"), "{stderr}");
    let restarted: Vec<_> = wd
        .restarts()
        .into_iter()
        .filter(|r| r.action == "restarted" && r.id == CONDUCTOR)
        .collect();
    assert_eq!(restarted.len(), 1, "stderr:\n{stderr}");
}

#[test]
fn sigterm_during_a_hung_telegram_request_exits_within_a_second_and_a_half() {
    let stub = SilentStub::start();
    let wd = Wd::new().telegram(&stub.base);
    wd.sessions(vec![auth_held(CONDUCTOR, "conductor-ops")]);
    let mut d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(20), "no telegram request", || {
        stub.received.load(Ordering::SeqCst) > 0
    });
    let (code, took) = d.signal_and_wait(libc::SIGTERM, Duration::from_secs(15));
    assert_eq!(code, Some(0), "stderr:\n{}", d.stderr());
    assert!(
        took < Duration::from_millis(1500),
        "exit took {took:?}; stderr:\n{}",
        d.stderr()
    );
}

#[test]
fn a_telegram_error_never_logs_part_of_the_token_or_a_forged_line() {
    // The token straddles the 200th character; a raw newline would forge a line.
    let body = format!("bad request\n<0>forged {}{TOKEN} and more", "x".repeat(170));
    let stub = TelegramStub::answering(move |_, _| ("400 Bad Request", body.clone()));
    let wd = Wd::new()
        .telegram(&stub.base)
        .env("TELEGRAM_BOT_TOKEN", TOKEN);
    wd.sessions(vec![auth_held(CONDUCTOR, "conductor-ops")]);
    let out = wd.run(&["--once"]);
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stub.requests().is_empty(),
        "no telegram request; stderr:\n{stderr}"
    );
    assert!(
        stderr.contains("telegram escalation not delivered (HTTP 400"),
        "{stderr}"
    );
    assert!(!stderr.contains("7777777"), "part of the token: {stderr}");
    assert!(!stderr.contains("SECRET"), "part of the token: {stderr}");
    assert!(
        !stderr.lines().any(|l| l.starts_with("<0>")),
        "forged line: {stderr}"
    );
}
