//! Faults of a real fleet under the watchdog, on the real agent-deck
//! (#32): the binary renamed away for a few seconds, as an update in place
//! does, keeps the version it read; and a Claude conductor's continuity
//! message, which agent-deck's send takes seconds to deliver, never holds
//! up the next conductor's revive; a conductor that dies while another
//! process holds agent-deck's store gets one agent, not two; and a full
//! watchdog dir (a small tmpfs, where this user may mount one) loses whole
//! records only, counted, and the state write says so once.

use std::fs;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::sandbox::{is_healthy, Sandbox, Tool};
use crate::store_lock;
use crate::support::watchdog::Daemon;
use crate::support::{kill, now, wait_until};

/// What `status --json` says now.
fn status(sb: &Sandbox) -> Value {
    let out = sb.run_watchdog(&["status", "--json"], &[]);
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// Whether `d`'s pane watch covers every critical session, or (said on
/// stderr) cannot here.
fn armed(d: &Daemon) -> bool {
    let armed = wait_until(Duration::from_secs(20), || {
        d.stderr()
            .contains("the pane watch covers every critical session")
    });
    if !armed {
        eprintln!("the pane watch did not arm here: {}", d.stderr());
    }
    armed
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn the_version_survives_the_binary_renamed_away_for_four_seconds() {
    let sb = Sandbox::new();
    sb.launch("conductor-ops", "conductor", Tool::Custom, None);
    let d = sb.spawn_watchdog(&[
        ("SAFETY_POLL_INTERVAL_S", "0.5"),
        ("ARMED_POLL_INTERVAL_S", "0.5"),
    ]);
    sb.wait_for_polls(&d, 2, Duration::from_secs(20));
    let away = sb.logged.with_extension("away");
    fs::rename(&sb.logged, &away).unwrap();
    let renamed = Instant::now();
    let kept = wait_until(Duration::from_secs(4), || {
        let v = status(&sb);
        v["agent_deck_version_unconfirmed"] == true
    });
    std::thread::sleep(Duration::from_secs(4).saturating_sub(renamed.elapsed()));
    fs::rename(&away, &sb.logged).unwrap();
    assert!(
        kept,
        "never marked unconfirmed: {}\n{}",
        status(&sb),
        d.stderr()
    );
    assert_eq!(status(&sb)["agent_deck_version"], "1.14.0");
    let confirmed = wait_until(Duration::from_secs(20), || {
        let v = status(&sb);
        v["agent_deck_version"] == "1.14.0" && v["agent_deck_version_unconfirmed"] == false
    });
    assert!(confirmed, "{}\n{}", status(&sb), d.stderr());
    assert!(!d.stderr().contains("not known"), "{}", d.stderr());
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_claude_conductor_s_continuity_message_never_holds_up_the_next_revive() {
    let sb = Sandbox::new();
    let one = sb.add("conductor-one", "conductor", Tool::Claude, None);
    let two = sb.add("conductor-two", "conductor", Tool::Claude, None);
    for a in [&one, &two] {
        a.set_mode("chat");
        sb.start(a);
    }
    sb.age_past_freshness(&one);
    sb.age_past_freshness(&two);
    let d = sb.spawn_watchdog(&[("MIN_GLOBAL_RESTART_INTERVAL_S", "0")]);
    if !armed(&d) {
        return;
    }
    kill(sb.pane_pid(&one), 9);
    let sending = wait_until(Duration::from_secs(30), || {
        !sb.session_calls(&one, "send").is_empty()
    });
    assert!(sending, "no continuity message: {}", d.stderr());
    let died = now();
    kill(sb.pane_pid(&two), 9);
    let back = wait_until(Duration::from_secs(30), || {
        !sb.session_calls(&two, "restart").is_empty()
    });
    assert!(back, "{}", d.stderr());
    let call = &sb.session_calls(&two, "restart")[0];
    let at: f64 = call.split(' ').next().unwrap().parse().unwrap();
    let took = at - died;
    eprintln!("second conductor: restart call {took:.3}s after its death");
    assert!(took < 5.0, "held up {took:.1}s: {}", d.stderr());
    let sent = sb.session_calls(&one, "send");
    assert_eq!(sent.len(), 1, "{sent:?}");
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_conductor_that_dies_while_another_process_holds_the_store_gets_one_agent() {
    let sb = Sandbox::new();
    let a = sb.launch("conductor-ops", "conductor", Tool::Custom, None);
    sb.age_past_freshness(&a);
    // The default cooldown: the unsaved restart is not tried again under the lock.
    let d = sb.spawn_watchdog(&[
        ("SUBPROCESS_TIMEOUT_S", "20"),
        ("POST_RESTART_COOLDOWN_S", "30"),
    ]);
    if !armed(&d) {
        return;
    }
    // Another process, this test, holds a write transaction on
    // agent-deck's store for 25 s.
    let db = sb
        .home
        .join(".local/share/agent-deck/profiles/default/state.db");
    let held = store_lock::write_transaction(&db, Duration::from_secs(25));
    kill(sb.pane_pid(&a), 9);
    held.release();
    let ours = || -> Vec<String> {
        (sb.tmux_sessions().into_iter())
            .filter(|n| n.starts_with("agentdeck_conductor-ops_"))
            .collect()
    };
    let recorded = wait_until(Duration::from_secs(10), || {
        !sb.restarts_of(&a, "restart-unsaved").is_empty()
    });
    assert!(recorded, "{}", d.stderr());
    let unsaved = sb.restarts_of(&a, "restart-unsaved");
    assert_eq!(unsaved.len(), 1, "{}", d.stderr());
    let reason = unsaved[0].reason.clone().unwrap_or_default();
    let spawned = ours();
    assert_eq!(spawned.len(), 1, "one agent: {spawned:?}\n{}", d.stderr());
    assert!(reason.contains(&spawned[0]), "{reason}");
    // The store is back: that tmux session is ended and the conductor
    // restarted once, in a tmux session agent-deck knows.
    let known = wait_until(Duration::from_secs(40), || {
        let shown = sb.show(&a);
        let (status, name) = (shown["status"].as_str(), shown["tmux_session"].as_str());
        status.is_some_and(is_healthy) && ours() == [name.unwrap_or_default()]
    });
    assert!(known, "{:?} {}\n{}", ours(), sb.show(&a), d.stderr());
    assert!(!ours().contains(&spawned[0]));
    let ended = sb.restarts_of(&a, "unsaved-ended");
    assert_eq!(ended.len(), 1, "{}", d.stderr());
    assert!(ended[0]
        .reason
        .as_deref()
        .unwrap_or_default()
        .contains(&spawned[0]));
    assert_eq!(a.boots(), 3, "{}", a.fake_log());
    assert!(sb.session_calls(&a, "start").is_empty(), "{}", d.stderr());
    let said = |severity: &str| {
        let all = sb.escalations();
        all.iter()
            .filter(|e| e.severity.as_str() == severity)
            .count()
    };
    // Said once: store-locked when agent-deck answered the lock, or
    // restart-failed when the restart outwaited SUBPROCESS_TIMEOUT_S.
    let (locked, failed) = (said("store-locked"), said("restart-failed"));
    eprintln!("escalated: store-locked {locked}, restart-failed {failed}");
    let once = locked + failed;
    assert_eq!(once, 1, "{}", d.stderr());
    assert_eq!(said("fleet-vanished"), 0, "{}", d.stderr());
}

/// A small tmpfs mounted on a directory, unmounted on drop.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    /// Mounts one of `size` on `dir`; `None` where this user cannot mount.
    fn mount(dir: &std::path::Path, size: &str) -> Option<Tmpfs> {
        fs::create_dir_all(dir).unwrap();
        let opts = format!("size={size}");
        let args = [
            "-t",
            "tmpfs",
            "-o",
            &opts,
            "tmpfs",
            &dir.display().to_string(),
        ];
        let out = std::process::Command::new("mount")
            .args(args)
            .output()
            .ok()?;
        out.status.success().then(|| Tmpfs(dir.to_owned()))
    }

    /// Fills what is left with one file, and gives its path.
    fn fill(&self) -> std::path::PathBuf {
        use std::io::Write;
        let path = self.0.join("filler");
        let mut f = fs::File::create(&path).unwrap();
        while f.write_all(&[0; 4096]).is_ok() {}
        while f.write_all(&[0; 1]).is_ok() {}
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_full_watchdog_dir_loses_whole_records_only_and_says_so_once() {
    let sb = Sandbox::new();
    let Some(disk) = Tmpfs::mount(&sb.watchdog_dir(), "256k") else {
        return eprintln!("cannot mount a tmpfs here (not root?)");
    };
    let a = sb.launch("conductor-ops", "conductor", Tool::Custom, None);
    sb.age_past_freshness(&a);
    let d = sb.spawn_watchdog(&[]);
    if !armed(&d) {
        return;
    }
    let filler = disk.fill();
    kill(sb.pane_pid(&a), 9);
    let back = wait_until(Duration::from_secs(30), || {
        sb.session_calls(&a, "restart").len() == 1 && crate::sandbox::is_healthy(&sb.status(&a))
    });
    assert!(back, "the restart needs no disk: {}", d.stderr());
    std::thread::sleep(Duration::from_secs(3));
    fs::remove_file(filler).unwrap();
    std::thread::sleep(Duration::from_secs(4));
    kill(sb.pane_pid(&a), 9);
    let again = wait_until(Duration::from_secs(30), || {
        !sb.restarts_of(&a, "restarted").is_empty()
    });
    assert!(again, "{}", d.stderr());
    let log = fs::read_to_string(sb.watchdog_dir().join("restart.log")).unwrap();
    for line in log.lines() {
        let parsed = serde_json::from_str::<Value>(line);
        assert!(parsed.is_ok(), "a torn or glued record: {line:?}\n{log}");
    }
    let v = status(&sb);
    let files = v["records"]["files"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let lost: u64 = files
        .iter()
        .filter_map(|f| f["records_lost"].as_u64())
        .sum();
    assert!(lost >= 1, "no lost record counted: {v}");
    let err = d.stderr();
    let state = sb.watchdog_dir().join("state.json").display().to_string();
    let count = |text: &str| err.matches(text).count();
    assert_eq!(count(&format!("cannot write {state} (")), 1, "once: {err}");
    assert_eq!(count(&format!("{state} written again after")), 1, "{err}");
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_store_no_reader_can_open_is_no_vanished_fleet() {
    let sb = Sandbox::new();
    let a = sb.launch("conductor-ops", "conductor", Tool::Custom, None);
    let b = sb.launch("conductor-two", "conductor", Tool::Custom, None);
    let d = sb.spawn_watchdog(&[
        ("SAFETY_POLL_INTERVAL_S", "1"),
        ("ARMED_POLL_INTERVAL_S", "1"),
    ]);
    sb.wait_for_polls(&d, 2, Duration::from_secs(20));
    // SQLite's PENDING byte, write-locked: no process can take the shared
    // lock a read needs, so every agent-deck call waits out its busy timeout.
    let db = sb
        .home
        .join(".local/share/agent-deck/profiles/default/state.db");
    let held = store_lock::pending_byte(&db, Duration::from_secs(20));
    let said = wait_until(Duration::from_secs(19), || {
        d.stderr().contains("agent-deck's store is locked (")
    });
    held.release();
    assert!(said, "{}", d.stderr());
    let err = d.stderr();
    let why = err
        .lines()
        .find(|l| l.contains("agent-deck's store is locked ("));
    eprintln!("{}", why.unwrap_or_default());
    let read = wait_until(Duration::from_secs(30), || {
        d.stderr().contains("session list: readable again after")
    });
    assert!(read, "{}", d.stderr());
    let count = |severity: &str| {
        let all = sb.escalations();
        all.iter()
            .filter(|e| e.severity.as_str() == severity)
            .count()
    };
    assert_eq!(count("fleet-vanished"), 0, "{}", d.stderr());
    assert_eq!(count("store-locked"), 1, "{}", d.stderr());
    assert!(!d.stderr().contains("watching 0"), "{}", d.stderr());
    for s in [&a, &b] {
        assert!(sb.session_calls(s, "restart").is_empty(), "{}", d.stderr());
    }
}
