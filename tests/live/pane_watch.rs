//! The pane watch on the real CLI and real tmux, one death a sandbox: a
//! custom-tool conductor that has run past the freshness window dies (its
//! tmux session killed, or its pane process `kill -9`ed) and is restarted
//! within seconds, with the safety poll at 30 s, so the records show the
//! watch saw it; a `session stop` is never restarted. A conductor whose
//! pane is left a bare shell is restarted with `proof: agent_gone`. Where
//! the kernel gives no pidfd the daemon must say why (and polls instead).

use std::time::{Duration, Instant};

use crate::sandbox::{is_healthy, Agent, Sandbox, Tool};
use crate::support::watchdog::Daemon;
use crate::support::{kill, now, wait_until};

/// The safety poll: a restart well inside it was set off by the watch.
const POLL: (&str, &str) = ("SAFETY_POLL_INTERVAL_S", "30");
/// How soon after the death the restart call must be on record.
const SEEN_WITHIN_S: f64 = 5.0;
/// Long enough for a restart and agent-deck's own start-up to finish.
const RECOVERY: Duration = Duration::from_secs(30);

/// A custom-tool conductor past the freshness window, watched by a daemon
/// polling every 30 s; `None` (after checking the daemon said why) when
/// the watch cannot arm here.
fn armed_fleet(sb: &Sandbox) -> Option<(Agent, Daemon)> {
    let a = sb.launch("conductor-ops", "conductor", Tool::Custom, None);
    let d = sb.spawn_watchdog(&[POLL]);
    let said = wait_until(Duration::from_secs(20), || {
        let err = d.stderr();
        err.contains("the pane watch covers every critical session")
            || err.contains("pane watch off:")
    });
    assert!(said, "the watch never armed nor said why: {}", d.stderr());
    if d.stderr().contains("pane watch off:") {
        assert!(
            d.stderr()
                .contains("deaths are seen by hooks and the safety poll"),
            "{}",
            d.stderr()
        );
        return None;
    }
    sb.age_past_freshness(&a);
    Some((a, d))
}

/// The restart of `a` is on record within [`SEEN_WITHIN_S`] of `died` (Unix
/// seconds), with the watch's line naming the death, and `a` comes back.
fn restarted_by_the_watch(sb: &Sandbox, a: &Agent, d: &Daemon, died: f64) {
    let back = wait_until(RECOVERY, || !sb.restarts_of(a, "restarted").is_empty());
    assert!(back, "never restarted; stderr:\n{}", d.stderr());
    let call = &sb.restarts_of(a, "restart")[0];
    let took = call.ts - died;
    eprintln!("{}: restart call {took:.3}s after the death", a.title);
    assert!(
        took < SEEN_WITHIN_S,
        "the restart came {took:.2}s after the death; stderr:\n{}",
        d.stderr()
    );
    let line = format!("pane watch: {} (process_exited) dead", a.id);
    assert!(d.stderr().contains(&line), "{}", d.stderr());
    assert!(
        wait_until(RECOVERY, || is_healthy(&sb.status(a))),
        "{}",
        sb.show(a)
    );
    assert_eq!(sb.session_calls(a, "restart").len(), 1, "restarted once");
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn the_pane_watch_sees_a_killed_tmux_session_and_the_conductor_is_back_in_seconds() {
    let sb = Sandbox::new();
    let Some((a, d)) = armed_fleet(&sb) else {
        return;
    };
    let died = now();
    sb.kill_tmux_session(&a);
    restarted_by_the_watch(&sb, &a, &d, died);
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn the_pane_watch_sees_a_pane_process_killed_and_the_conductor_is_back_in_seconds() {
    let sb = Sandbox::new();
    let Some((a, d)) = armed_fleet(&sb) else {
        return;
    };
    let pid = sb.pane_pid(&a);
    let died = now();
    kill(pid, libc::SIGKILL);
    restarted_by_the_watch(&sb, &a, &d, died);
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn the_pane_watch_sees_a_stopped_conductors_pane_go_and_it_is_never_restarted() {
    let sb = Sandbox::new();
    let Some((a, d)) = armed_fleet(&sb) else {
        return;
    };
    sb.stop(&a);
    let line = format!("pane watch: {} (process_exited) dead", a.id);
    let seen = wait_until(Duration::from_secs(10), || d.stderr().contains(&line));
    assert!(seen, "the watch never saw the pane go: {}", d.stderr());
    let since = Instant::now();
    let touched = wait_until(Duration::from_secs(10), || {
        !sb.session_calls(&a, "restart").is_empty() || !sb.session_calls(&a, "start").is_empty()
    });
    assert!(
        !touched,
        "touched {:.1}s after the stop was seen; stderr:\n{}",
        since.elapsed().as_secs_f64(),
        d.stderr()
    );
    assert_eq!(sb.status(&a), "stopped", "{}", sb.show(&a));
    assert!(
        sb.restarts_of(&a, "restart").is_empty(),
        "{:?}",
        sb.restarts()
    );
}

#[test]
#[ignore = "needs a real agent-deck: set AGENT_DECK_BIN"]
fn a_conductor_pane_left_a_bare_shell_is_restarted_as_agent_gone_and_a_chat_agent_is_not() {
    let sb = Sandbox::new();
    let gone = sb.add("conductor-gone", "conductor", Tool::Claude, None);
    gone.set_mode("shell");
    sb.start(&gone);
    let chat = sb.add("conductor-chat", "conductor", Tool::Claude, None);
    chat.set_mode("chat");
    sb.start(&chat);
    let status = sb.status(&gone);
    assert!(
        is_healthy(&status),
        "agent-deck reads a bare shell {status}"
    );
    sb.age_past_freshness(&gone);
    sb.age_past_freshness(&chat);
    // What the restart boots is an agent again.
    gone.set_mode("quiet");
    let d = sb.spawn_watchdog(&[
        ("PANE_LIST_INTERVAL_S", "1"),
        ("SAFETY_POLL_INTERVAL_S", "2"),
    ]);
    let back = wait_until(RECOVERY, || !sb.restarts_of(&gone, "restarted").is_empty());
    assert!(back, "never restarted; stderr:\n{}", d.stderr());
    let proof = sb.liveness().into_iter().find(|r| r.id == gone.id);
    let proof = proof.and_then(|r| r.proof.map(|p| p.as_str().to_owned()));
    assert_eq!(proof.as_deref(), Some("agent_gone"), "{}", d.stderr());
    assert_eq!(gone.boots(), 2, "{}", gone.fake_log());
    // A chat agent reading its composer has no child either: it is no shell.
    sb.wait_for_polls(&d, 3, Duration::from_secs(20));
    assert!(
        sb.restarts_of(&chat, "restart").is_empty(),
        "{}",
        d.stderr()
    );
    assert_eq!(sb.restarts_of(&gone, "restart").len(), 1, "{}", d.stderr());
    assert_eq!(chat.boots(), 1);
}
