//! `drill ID [--yes] [--timeout DUR]`, step 3 of the rollout (SPEC §13): kills
//! a restart-critical session's tmux session as a crash would (never `session
//! stop`, which the watchdog leaves alone), records it in `restart.log` as
//! `"action": "drill"`, follows the daemon's records until the session is
//! healthy again and prints the timeline and a verdict. [`refusal`] (pure)
//! weighs first what could make it prove nothing or do harm; a refusal
//! touches nothing.

mod follow;

use std::io::{BufRead, IsTerminal, Write};

use std::time::Duration;

use crate::config::{deck_files, Config};
use crate::decide::book::State;
use crate::decide::limits::Limits;
use crate::decide::outcomes::RestartAction;
use crate::decide::restart::gates::{self, Gate};
use crate::error::{Error, Result};
use crate::fleet::cache::Fleet;
use crate::fleet::cli::Cli;
use crate::fleet::panes::Tmux;
use crate::fleet::session::{Session, Status};
use crate::ops::preflight::{show, status_writer, Shown};
use crate::records::audit::RestartRecord;
use crate::records::instance_lock::{self, Holder};
use crate::records::metrics;
use crate::records::state_file;
use crate::records::writer::Records;
use crate::sys::clock::unix_now;
use crate::sys::fs::{read_text, SMALL_FILE_MAX};

use crate::sys::shutdown::Shutdown;

pub(crate) const DEFAULT_TIMEOUT_S: f64 = 60.0;
/// agent-deck's freshness window (`restart_guard.go`).
const FRESHNESS_S: f64 = 60.0;
/// A daemon quiet for longer than this is not trusted with a kill.
const STALE_TICK_S: f64 = 120.0;
/// The design's recovery target.
const TARGET_S: f64 = 10.0;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Args {
    pub id: String,
    pub yes: bool,
    pub timeout_s: f64,
}

/// What [`refusal`] weighs.
#[derive(Debug, Clone)]
pub(crate) struct DrillFacts<'a> {
    pub status: Status,
    pub daemon: Option<&'a Holder>,
    /// The daemon's last tick, from `daemon-status.json`.
    pub last_tick: Option<f64>,
    pub state: &'a State,
    pub limits: &'a Limits,
    pub now: f64,
    /// A TUI or notify-daemon keeps agent-deck's stored status current.
    pub status_writer: bool,
    /// The last time the session was started, as far as anyone says.
    pub last_start: Option<f64>,
}

/// Why the drill must not run now, or `None` when it may.
pub(crate) fn refusal(id: &str, f: &DrillFacts<'_>) -> Option<String> {
    if !drillable(f.status) {
        return Some(format!(
            "{id} is {} now: a drill needs a healthy session (running, waiting or idle)",
            f.status.as_str()
        ));
    }
    let Some(h) = f.daemon else {
        return Some(
            "no watchdog daemon runs (as this shell's AGENT_DECK_ROOT sees it): nothing would restart it"
                .into(),
        );
    };
    let pid = h.pid;
    if h.once {
        return Some(format!("pid {pid} is a --once pass, not a daemon"));
    }
    if h.dry_run {
        return Some(format!(
            "the daemon (pid {pid}) runs in --dry-run: it would restart nothing"
        ));
    }
    let quiet = match f.last_tick {
        None => "has not finished a tick yet".to_owned(),
        Some(t) if f.now - t > STALE_TICK_S => format!(
            "has not finished a tick in {:.0} s: it may be stuck",
            f.now - t
        ),
        Some(_) => String::new(),
    };
    if !quiet.is_empty() {
        return Some(format!(
            "the daemon (pid {pid}) {quiet}, and would not notice the kill"
        ));
    }
    let held = match gates::gate(&mut f.state.clone(), f.limits, id, f.now, None) {
        Gate::Go => None,
        Gate::Skip(hold) => Some(format!(
            "the daemon would hold the restart now ({hold}); try again when `status` shows it clear"
        )),
        Gate::BudgetSpent => Some(format!(
            "{id} has no restart left in its rate-limit window ({} in {:.0} s)",
            f.limits.rate_max, f.limits.rate_window
        )),
    };
    if held.is_some() {
        return held;
    }
    let fresh = f.last_start.is_some_and(|t| f.now - t < FRESHNESS_S);
    if fresh && !f.status_writer {
        return Some(format!(
            "{id} started less than {FRESHNESS_S:.0} s ago and no TUI or notify-daemon runs, so agent-deck's freshness guard would refuse the restart; wait a minute, or run `agent-deck notify-daemon`"
        ));
    }
    None
}

/// A drill cleared to run: the session, how agent-deck shows it, and the
/// kill.
struct Plan {
    s: Session,
    shown: Shown,
    socket: Option<String>,
    /// The kill as a command line, for the prompt and the record.
    target: String,
}

/// Everything [`refusal`] weighs, read afresh, and the plan if it clears.
fn prepare(cfg: &Config, cli: &Cli, id: &str, shutdown: &Shutdown) -> Result<Plan> {
    let refuse = |why: String| Error::usage(format!("drill refused: {why}"));
    let mut fleet = Fleet::new(cfg.autorestart_dir());
    fleet.reload_markers();
    fleet
        .refresh(cli)
        .map_err(|e| Error::runtime(format!("drill: cannot list the fleet: {e}")))?;
    let s = resolve(&fleet, id).map_err(refuse)?;
    let shown = show(cfg, &s, shutdown)?;
    let dir = &cfg.watchdog_dir;
    let state = state_file::peek(dir)
        .map_err(|why| refuse(format!("the daemon's {why}, so its gates cannot be read")))?
        .unwrap_or_default();
    let holder = instance_lock::holder(dir);
    // The budget is the daemon's, as its last tick says, over this shell's.
    let mut limits = Limits::from_config(cfg);
    let ticked = holder.as_ref().and_then(|h| metrics::read_of(dir, h));
    if let Some(st) = ticked.as_ref().filter(|st| st.rate_limit_max > 0) {
        limits.rate_max = st.rate_limit_max;
        limits.rate_window = st.rate_limit_window_s;
    }
    let created = shown
        .created_at
        .parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_millisecond() as f64 / 1000.0);
    let restarted = state.sessions.get(&s.id).and_then(|b| b.restarted_at);
    let facts = DrillFacts {
        status: Status::parse(&shown.status),
        daemon: holder.as_ref(),
        last_tick: ticked.map(|st| st.last_tick),
        state: &state,
        limits: &limits,
        now: unix_now(),
        status_writer: status_writer(cfg).is_some(),
        last_start: created.into_iter().chain(restarted).reduce(f64::max),
    };
    if let Some(why) = refusal(&s.id, &facts) {
        return Err(refuse(why));
    }
    if shown.tmux_session.is_empty() {
        return Err(refuse(format!(
            "agent-deck names no tmux session for {}",
            s.id
        )));
    }
    let socket = tmux_socket(cfg)?;
    let on_socket = socket
        .as_deref()
        .map_or(String::new(), |s| format!(" -L {s}"));
    let target = format!("tmux{on_socket} kill-session -t ={}", shown.tmux_session);
    Ok(Plan {
        s,
        shown,
        socket,
        target,
    })
}

pub(crate) fn run(cfg: &Config, args: &Args) -> Result<()> {
    let shutdown = Shutdown::new().map_err(|e| Error::runtime(format!("drill: {e}")))?;
    let cli = Cli::new(cfg.bin.clone(), cfg.subprocess_timeout, shutdown.clone());
    let mut plan = prepare(cfg, &cli, &args.id, &shutdown)?;
    if !args.yes {
        if !confirmed(&plan.s, &plan.target)? {
            return Err(Error::usage("drill refused: not confirmed"));
        }
        // The answer may have come much later: everything is weighed again.
        plan = prepare(cfg, &cli, &args.id, &shutdown)?;
    }
    let dir = &cfg.watchdog_dir;
    let follow = follow::Follow::start(dir);
    let killed_at = unix_now();
    kill(&plan, &shutdown)?;
    let (s, target) = (&plan.s, &plan.target);
    let why = format!("killed while {}: {target}", plan.shown.status);
    let record = RestartRecord::new(killed_at, s, RestartAction::Drill, Some(why), false);
    crate::act::apply::write(&Records::from_config(cfg), &record);
    println!("killed {} ({}): {target}", s.title, s.id);
    let healthy = || show(cfg, s, &shutdown).is_ok_and(|sh| drillable(Status::parse(&sh.status)));
    let timeout = Duration::from_secs_f64(args.timeout_s);
    let outcome = follow.wait(s, killed_at, &cfg.hooks_dir, timeout, &shutdown, healthy);
    print!("{}", follow::timeline(dir, s, killed_at, &outcome));
    match outcome.recovered {
        Ok(at) => {
            let took = at - killed_at;
            let verdict = if took <= TARGET_S { "within" } else { "over" };
            println!("recovered in {took:.1} s ({verdict} the design's {TARGET_S:.0} s)");
            Ok(())
        }
        Err(instead) => Err(Error::runtime(format!(
            "not recovered within {:.0} s: {instead}",
            args.timeout_s
        ))),
    }
}

/// `ID` as agent-deck resolves it, among the restart-critical sessions: an
/// exact title, else an id or an id prefix of at least 6 characters.
fn resolve(fleet: &Fleet, id: &str) -> std::result::Result<Session, String> {
    let critical = fleet.critical();
    let by_title: Vec<&Session> = critical.iter().filter(|s| s.title == id).collect();
    let by_id: Vec<&Session> = critical
        .iter()
        .filter(|s| s.id == id || (id.len() >= 6 && s.id.starts_with(id)))
        .collect();
    let found = if by_title.is_empty() { by_id } else { by_title };
    match found.as_slice() {
        [one] => Ok((*one).clone()),
        [] if fleet.knows(id) => Err(format!(
            "{id} is not restart-critical: the watchdog would not restart it"
        )),
        [] => Err(format!(
            "no restart-critical session has the id or title {id:?}"
        )),
        many => {
            let ids: Vec<&str> = many.iter().map(|s| s.id.as_str()).collect();
            let (n, ids) = (many.len(), ids.join(", "));
            Err(format!("{id:?} names {n} sessions ({ids}); give the id"))
        }
    }
}

/// agent-deck's `[tmux] socket_name`, `None` for the default socket.
fn tmux_socket(cfg: &Config) -> Result<Option<String>> {
    let Some(path) = deck_files::find(&cfg.home, cfg.xdg_config_home.as_deref(), &cfg.root) else {
        return Ok(None);
    };
    let shown = path.display();
    let text = read_text(&path, SMALL_FILE_MAX)
        .map_err(|e| Error::runtime(format!("drill: cannot read {shown}: {}", e.reason())))?;
    deck_files::tmux_socket_name(&text)
        .map_err(|e| Error::runtime(format!("drill: cannot parse {shown}: {e}")))
}

/// Asks on the terminal; no terminal is no.
fn confirmed(s: &Session, target: &str) -> Result<bool> {
    if !std::io::stdin().is_terminal() {
        return Err(Error::usage(
            "drill refused: no terminal to confirm on; pass --yes to drill without asking",
        ));
    }
    eprint!(
        "drill: kill {} ({}) now, as a crash would ({target})? [y/N] ",
        s.title, s.id
    );
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| Error::runtime(format!("drill: cannot read the answer: {e}")))?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// Healthy as the drill means it, before and after: running, waiting or
/// idle (`queued` has no pane to kill).
fn drillable(status: Status) -> bool {
    matches!(status, Status::Running | Status::Waiting | Status::Idle)
}

/// `tmux [-L socket] kill-session -t =NAME` (the plan's `target`): the
/// exact name, nothing else.
fn kill(plan: &Plan, shutdown: &Shutdown) -> Result<()> {
    let tmux = Tmux {
        socket: plan.socket.clone(),
        shutdown: shutdown.clone(),
    };
    tmux.end_session(&plan.shown.tmux_session).map_err(|why| {
        Error::runtime(format!(
            "drill: {} failed, nothing was killed: {why}",
            plan.target
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::book::SessionBook;

    const ID: &str = "3f9c2a1b-1755891234";

    fn limits() -> Limits {
        Limits::from_config(&crate::config::test_config(std::path::Path::new("/tmp/x")))
    }

    fn daemon() -> Holder {
        Holder {
            pid: 4242,
            dry_run: false,
            once: false,
            started_at: Some(900.0),
        }
    }

    fn facts<'a>(state: &'a State, lim: &'a Limits, holder: Option<&'a Holder>) -> DrillFacts<'a> {
        DrillFacts {
            status: Status::Running,
            daemon: holder,
            last_tick: Some(995.0),
            state,
            limits: lim,
            now: 1000.0,
            status_writer: true,
            last_start: Some(100.0),
        }
    }

    #[test]
    fn a_healthy_critical_session_under_a_live_daemon_may_be_drilled() {
        let (state, lim, d) = (State::default(), limits(), daemon());
        for status in [Status::Running, Status::Waiting, Status::Idle] {
            let f = DrillFacts {
                status,
                ..facts(&state, &lim, Some(&d))
            };
            assert_eq!(refusal(ID, &f), None, "{status:?}");
        }
    }

    #[test]
    fn each_reason_to_refuse_is_named() {
        let (lim, d) = (limits(), daemon());
        let clear = State::default();
        let refused = |f: DrillFacts<'_>, says: &str| {
            let why = refusal(ID, &f).unwrap_or_default();
            assert!(why.contains(says), "{why:?} should say {says:?}");
        };
        for status in [
            Status::Error,
            Status::Stopped,
            Status::Unknown,
            Status::Queued,
        ] {
            refused(
                DrillFacts {
                    status,
                    ..facts(&clear, &lim, Some(&d))
                },
                "needs a healthy session",
            );
        }
        refused(facts(&clear, &lim, None), "no watchdog daemon");
        let dry = Holder {
            dry_run: true,
            ..daemon()
        };
        refused(facts(&clear, &lim, Some(&dry)), "--dry-run");
        let once = Holder {
            once: true,
            ..daemon()
        };
        refused(facts(&clear, &lim, Some(&once)), "--once");
        let breaker = State {
            breaker_open_until: 2000.0,
            ..State::default()
        };
        refused(facts(&breaker, &lim, Some(&d)), "breaker_open");
        let pause = State {
            cascade_pause_until: 2000.0,
            ..State::default()
        };
        refused(facts(&pause, &lim, Some(&d)), "cascade_pause");
        let with_book = |b: SessionBook| {
            let mut st = State::default();
            st.sessions.insert(ID.into(), b);
            st
        };
        let cooling = with_book(SessionBook {
            cooldown_until: 1010.0,
            ..SessionBook::default()
        });
        refused(facts(&cooling, &lim, Some(&d)), "cooldown");
        let backoff = with_book(SessionBook {
            backoff_until: 1010.0,
            ..SessionBook::default()
        });
        refused(facts(&backoff, &lim, Some(&d)), "backoff_429");
        let spent = with_book(SessionBook {
            restarts: vec![990.0; lim.rate_max],
            ..SessionBook::default()
        });
        refused(facts(&spent, &lim, Some(&d)), "no restart left");
        let fresh = DrillFacts {
            last_start: Some(970.0),
            status_writer: false,
            ..facts(&clear, &lim, Some(&d))
        };
        refused(fresh, "freshness guard");
        let stuck = DrillFacts {
            last_tick: Some(800.0),
            ..facts(&clear, &lim, Some(&d))
        };
        refused(stuck, "has not finished a tick in 200 s");
        let never = DrillFacts {
            last_tick: None,
            ..facts(&clear, &lim, Some(&d))
        };
        refused(never, "has not finished a tick yet");
    }

    #[test]
    fn a_fresh_start_is_fine_when_the_stored_status_is_kept_current() {
        let (state, lim, d) = (State::default(), limits(), daemon());
        let f = DrillFacts {
            last_start: Some(970.0),
            ..facts(&state, &lim, Some(&d))
        };
        assert_eq!(refusal(ID, &f), None);
    }
}
