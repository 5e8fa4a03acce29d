//! Black-box tests of the deaf-but-alive poller check (SPEC §6.5): a
//! conductor whose `bun … telegram` poller runs but leaves Telegram updates
//! unread, against a local stand-in for the Bot API's `getWebhookInfo`.

use std::fs;

use std::net::TcpListener;
use std::path::PathBuf;

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::files::all_files_text;
use crate::support::fixtures::{telegram_conductor, Poller, CONDUCTOR};
use crate::support::telegram::TelegramStub;
use crate::support::watchdog::{assert_ok, Daemon, Wd};

/// The conductor's bot token, in the shape of a real one.
const TOKEN: &str = "5551234:AAF-deafPollerSecret_xyz";

/// One scripted answer of the stub.
#[derive(Clone)]
enum Answer {
    /// 200 with this `pending_update_count`.
    Pending(u64),
    /// This status line, with a body that echoes the request path (and so
    /// the token), the way an unwary client would end up logging it.
    Echo(&'static str),
}

/// The Bot API stub, its `getWebhookInfo` answers following `script`; after
/// its end the last answer repeats, or with `cycle` the script starts again.
struct WebhookStub(TelegramStub);

impl WebhookStub {
    fn start(script: Vec<Answer>, cycle: bool) -> WebhookStub {
        WebhookStub(TelegramStub::answering(move |count, request_line| {
            let n = count - 1;
            let i = if cycle {
                n % script.len()
            } else {
                n.min(script.len() - 1)
            };
            let path = request_line.split_whitespace().nth(1).unwrap_or_default();
            match &script[i] {
                Answer::Pending(count) => (
                    "200 OK",
                    json!({"ok": true, "result": {"url": "", "has_custom_certificate": false,
                                                  "pending_update_count": count}})
                    .to_string(),
                ),
                Answer::Echo(status) => (
                    *status,
                    json!({"ok": false, "description": format!("cannot serve {path}")}).to_string(),
                ),
            }
        }))
    }

    fn requests(&self) -> Vec<String> {
        self.0.requests()
    }

    fn webhook_requests(&self) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.starts_with(&format!("GET /bot{TOKEN}/getWebhookInfo ")))
            .count()
    }
}

/// A base URL nobody listens on: every call is refused at once.
fn api_down() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let base = format!("http://{}", listener.local_addr().expect("local addr"));
    drop(listener);
    base
}

/// A live conductor with the Telegram channel, its env file found through
/// agent-deck's config.toml, its bot token in `<TELEGRAM_STATE_DIR>/.env`,
/// and a running poller process. Checks every 0.3 s against `api`.
fn alive_but_deaf(api: &str, checks: Option<&str>) -> (Wd, Poller) {
    let mut wd = Wd::new()
        .env("POLLER_CHECK_INTERVAL_S", "0.3")
        .env("TELEGRAM_API_BASE", api);
    if let Some(n) = checks {
        wd = wd.env("POLLER_DEAF_CHECKS", n);
    }
    let home = wd.home.path();
    let state_dir = telegram_conductor(&wd);
    fs::create_dir_all(&state_dir).unwrap();
    fs::write(
        state_dir.join(".env"),
        format!("TELEGRAM_BOT_TOKEN={TOKEN}\n"),
    )
    .unwrap();
    let poller = Poller::start(&home.join("bin"), &state_dir);
    (wd, poller)
}

/// Waits for `n` more `getWebhookInfo` requests than so far.
fn wait_for_more_checks(stub: &WebhookStub, n: usize, d: &Daemon) {
    let target = stub.webhook_requests() + n;
    d.wait_for(Duration::from_secs(20), "the checks stopped", || {
        stub.webhook_requests() >= target
    });
}

fn wait_for_deaf_record(wd: &Wd, d: &Daemon) {
    d.wait_for(Duration::from_secs(20), "no poller-deaf record", || {
        !wd.restarts_with("poller-deaf").is_empty()
    });
}

#[test]
fn updates_unread_on_n_checks_restart_the_conductor_exactly_once() {
    use Answer::Pending;
    let stub = WebhookStub::start(vec![Pending(3), Pending(5), Pending(9)], false);
    let (wd, _poller) = alive_but_deaf(&stub.0.base, Some("3"));
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(20), "no restart", || {
        wd.restart_calls() >= 1
    });
    // Further full streaks of unread updates; the dedup window (an hour) holds.
    wait_for_more_checks(&stub, 6, &d);
    wd.wait_for_more_ticks(3);
    assert_eq!(wd.restart_calls(), 1, "stderr:\n{}", d.stderr());
    let rec = wd.restarts_with("poller-deaf");
    assert_eq!(rec.len(), 1, "{:?}", wd.restarts());
    assert_eq!(rec[0].id, CONDUCTOR);
    assert_eq!(
        rec[0].reason.as_deref(),
        Some("pending updates 3, 5, 9 over 3 checks")
    );
    assert!(!rec[0].dry_run);
    assert!(
        wd.restarts_with("poller-restart").is_empty(),
        "the poller process runs: no §6.1 restart"
    );
}

#[test]
fn a_draining_queue_restarts_nothing() {
    use Answer::Pending;
    let stub = WebhookStub::start(vec![Pending(6), Pending(2), Pending(0)], true);
    let (wd, _poller) = alive_but_deaf(&stub.0.base, Some("3"));
    let d = wd.spawn(&[]);
    wait_for_more_checks(&stub, 9, &d);
    wd.wait_for_more_ticks(2);
    assert_eq!(wd.restart_calls(), 0, "stderr:\n{}", d.stderr());
    assert!(wd.restarts().is_empty(), "{:?}", wd.restarts());
}

#[test]
fn the_api_down_restarts_nothing_and_warns_once() {
    let (wd, _poller) = alive_but_deaf(&api_down(), Some("2"));
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(20), "no getWebhookInfo warning", || {
        d.stderr().contains("getWebhookInfo for")
    });
    // About three seconds: ten checks, all unknown.
    wd.wait_for_more_ticks(15);
    assert_eq!(wd.restart_calls(), 0, "stderr:\n{}", d.stderr());
    assert!(wd.restarts().is_empty(), "{:?}", wd.restarts());
    let warnings = d.stderr().matches("getWebhookInfo for").count();
    assert_eq!(warnings, 1, "stderr:\n{}", d.stderr());
}

#[test]
fn failed_and_rate_limited_answers_neither_count_nor_reset() {
    use Answer::{Echo, Pending};
    let script = vec![
        Pending(5),
        Echo("429 Too Many Requests"),
        Pending(6),
        Echo("502 Bad Gateway"),
        Pending(7),
        Echo("502 Bad Gateway"),
    ];
    let stub = WebhookStub::start(script, false);
    let (wd, _poller) = alive_but_deaf(&stub.0.base, Some("3"));
    let d = wd.spawn(&[]);
    wait_for_deaf_record(&wd, &d);
    let rec = wd.restarts_with("poller-deaf");
    assert_eq!(
        rec[0].reason.as_deref(),
        Some("pending updates 5, 6, 7 over 3 checks")
    );
    assert_eq!(wd.restart_calls(), 1);
}

#[test]
fn dry_run_records_poller_deaf_but_restarts_nothing() {
    let stub = WebhookStub::start(vec![Answer::Pending(4)], false);
    let (wd, _poller) = alive_but_deaf(&stub.0.base, Some("2"));
    let d = wd.spawn(&["--dry-run"]);
    wait_for_deaf_record(&wd, &d);
    wait_for_more_checks(&stub, 6, &d);
    wd.wait_for_more_ticks(2);
    assert_eq!(wd.restart_calls(), 0);
    let rec = wd.restarts_with("poller-deaf");
    assert_eq!(rec.len(), 1, "{:?}", wd.restarts());
    assert!(rec[0].dry_run);
    assert_eq!(
        rec[0].reason.as_deref(),
        Some("pending updates 4, 4 over 2 checks")
    );
}

#[test]
fn off_by_default_telegram_is_never_asked() {
    let stub = WebhookStub::start(vec![Answer::Pending(9)], false);
    let (wd, _poller) = alive_but_deaf(&stub.0.base, None);
    let d = wd.spawn(&[]);
    // About two seconds: six poller checks.
    wd.wait_for_more_ticks(10);
    assert!(stub.requests().is_empty(), "{:?}", stub.requests());
    assert_eq!(wd.restart_calls(), 0, "stderr:\n{}", d.stderr());
}

#[test]
fn the_streak_survives_a_watchdog_restart() {
    // One check per `--once` run, saved in state.json between runs; the
    // third deaf answer is acted on by the run after it, which asks no more.
    let stub = WebhookStub::start(vec![Answer::Pending(8)], false);
    let (wd, _poller) = alive_but_deaf(&stub.0.base, Some("3"));
    for run in 1..=4 {
        assert_ok(&wd.run(&["--once"]));
        assert_eq!(stub.webhook_requests(), run.min(3));
        let expected = usize::from(run == 4);
        assert_eq!(wd.restart_calls(), expected, "after run {run}");
    }
    let rec = wd.restarts_with("poller-deaf");
    assert_eq!(rec.len(), 1, "{:?}", wd.restarts());
    assert_eq!(
        rec[0].reason.as_deref(),
        Some("pending updates 8, 8, 8 over 3 checks")
    );
}

#[test]
fn the_bot_token_never_reaches_logs_records_or_argv() {
    use Answer::{Echo, Pending};
    let script = vec![
        Echo("401 Unauthorized"),
        Echo("500 Internal Server Error"),
        Pending(3),
        Pending(3),
    ];
    let stub = WebhookStub::start(script, false);
    let (wd, _poller) = alive_but_deaf(&stub.0.base, Some("2"));
    let d = wd.spawn(&["--verbose"]);
    wait_for_deaf_record(&wd, &d);
    assert!(
        stub.webhook_requests() >= 4,
        "the token went into the request path: {:?}",
        stub.requests()
    );
    let secret = TOKEN.split_once(':').unwrap().1;
    let stderr = d.stderr();
    assert!(
        stderr.contains("HTTP 401"),
        "the failure is logged: {stderr}"
    );
    assert!(!stderr.contains(secret), "stderr:\n{stderr}");
    let files: Vec<(PathBuf, String)> = all_files_text(&wd.root);
    assert!(!files.is_empty());
    for (path, text) in files {
        assert!(!text.contains(secret), "{} holds the token", path.display());
    }
    let argv: Vec<Vec<String>> = wd.sim.calls();
    assert!(!argv.is_empty());
    assert!(
        argv.iter().flatten().all(|a| !a.contains(secret)),
        "{argv:?}"
    );
    let state: Value = wd.sim.state();
    assert!(!state.to_string().contains(secret));
}
