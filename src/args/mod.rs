//! Our own command line: turns argv into an [`Invocation`]. Parsing only:
//! nothing here reads the environment or touches the filesystem, and a
//! mistake is an [`Error::Usage`] that names the offending word.

use std::ffi::OsString;

use duration::Bounds;

pub(crate) use crate::daemon::RunFlags;
use crate::error::{Error, Result};
use crate::ops::drill;
use crate::ops::history::Since;
use crate::tasks::commands;

mod duration;
mod task;

pub(crate) const USAGE: &str = "\
agent-deck-watchdog: keeps critical agent-deck sessions alive

usage:
  agent-deck-watchdog [--dry-run] [--once [--json]] [--verbose]   run the daemon, or one pass with --once
  agent-deck-watchdog --print-config                       effective settings and their sources
  agent-deck-watchdog status [--json]                      what the daemon knows and will do next
  agent-deck-watchdog history [ID] [--since DUR] [--json|--report]   the decision timeline
  agent-deck-watchdog task <add|list|show|cancel|check|sign> …   task follow-up (task --help)
  agent-deck-watchdog demo                                 a simulated fleet, revived end to end
  agent-deck-watchdog doctor [--json] [--online]           read-only checks of the install
  agent-deck-watchdog drill ID [--yes] [--timeout DUR]     kill one critical session, time its recovery
  agent-deck-watchdog --help | --version

flags:
  --dry-run       decide and log everything, but restart, start, send, remove nothing,
                  run no escalate.sh and send no Telegram message (the read-only
                  getWebhookInfo check of POLLER_DEAF_CHECKS still runs)
  --once          one safety-poll pass, wait for the work it started, print what
                  it saw and did (one line per restart-critical session), exit 0
  --json          with --once: that summary as one JSON object
  --verbose       debug logging
  --print-config  print every setting, its value and where it came from

history: liveness, restart and escalation records (.1 files included) merged oldest
first, one line per decision in local time.
  ID              one session only (escalations by their sid)
  --since DUR     how far back: a decimal number with an optional unit s, m, h or d
                  (30s, 90m, 6h, 2d, plain seconds), or all (default 24h)
  --json          every record as one JSON line, with \"log\": liveness|restart|escalations
  --report        a block to paste into a bug report (no pane text, no secret): with ID
                  for that session, without for every session with records, worst first
  exit 1 when no record mentions ID; an empty window is exit 0 with a note on stderr

doctor: one line per check (✓ ok, ! warning, ✗ failure, with the fix); writes
nothing, takes no lock. exit 1 when a check fails.
  --json          one JSON array of {check, status: ok|warn|fail, detail, fix}
  --online        also ask Telegram (getMe, getChat)

drill: kills the tmux session of ID (a session id or title) on agent-deck's socket,
as a crash would, and follows the daemon's records until it is healthy again.
Refuses (exit 2, touching nothing) unless ID is restart-critical and healthy, a
daemon runs outside dry-run, and no gate would hold the restart.
  --yes           do not ask for confirmation (needed without a terminal)
  --timeout DUR   how long to wait for the recovery (default 60s)
  exit 0 recovered within the timeout, 1 not

testing:
  agent-deck-watchdog sim <agent-deck arguments…>
                  a simulated agent-deck CLI, the one the demo, the tests and the
                  benchmark run against: it answers version, list, session show|
                  restart|start|send|output and remove like the real CLI, from
                  the JSON state file named by FAKE_AGENT_DECK_STATE, and logs
                  each call to FAKE_AGENT_DECK_LOG. As `sim tmux [-L S]
                  kill-session -t NAME` it crashes the session of that tmux
                  name. It never touches tmux or agent-deck.

settings come from the environment only; see README.md for the list.
exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error,
            3 another watchdog holds the instance lock";

/// What the user asked for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Invocation {
    Run(RunFlags),
    PrintConfig(RunFlags),
    Task(RunFlags, commands::TaskCommand),
    Status { json: bool },
    Doctor { json: bool, online: bool },
    Drill(drill::Args),
    History(crate::ops::history::Args),
    Demo,
    Help,
    Version,
}

pub(crate) fn parse(mut args: Vec<OsString>) -> Result<Invocation> {
    // Owned, so that `args` can be split below.
    let first = args.first().and_then(|a| a.to_str()).map(str::to_owned);
    match first.as_deref().unwrap_or_default() {
        "history" => return parse_history(args.split_off(1)),
        "drill" => return parse_drill(args.split_off(1)),
        first @ ("status" | "demo" | "doctor") => {
            let mut rest = pico_args::Arguments::from_vec(args.split_off(1));
            let json = first != "demo" && rest.contains("--json");
            let online = first == "doctor" && rest.contains("--online");
            reject_leftovers(rest.finish())?;
            return Ok(match first {
                "status" => Invocation::Status { json },
                "doctor" => Invocation::Doctor { json, online },
                _ => Invocation::Demo,
            });
        }
        _ => {}
    }
    // The command is the first word that is not a flag: a later `task` (a
    // session id, a task's argv) is an argument, not the command.
    let command = args
        .iter()
        .position(|a| !a.as_encoded_bytes().starts_with(b"-"));
    if let Some(i) = command.filter(|&i| args[i] == "task") {
        // Everything after `task` belongs to it; the global flags may come
        // before it, and among its words before `--`.
        let rest = args.split_off(i + 1);
        args.pop();
        let mut global = pico_args::Arguments::from_vec(args);
        let mut flags = RunFlags {
            dry_run: global.contains("--dry-run"),
            verbose: global.contains(["-v", "--verbose"]),
            ..RunFlags::default()
        };
        reject_leftovers(global.finish())?;
        let end = rest.iter().position(|a| a == "--").unwrap_or(rest.len());
        let mut words = Vec::new();
        for (j, word) in rest.into_iter().enumerate() {
            match word.to_str() {
                Some("--dry-run") if j < end => flags.dry_run = true,
                Some("--verbose" | "-v") if j < end => flags.verbose = true,
                _ => words.push(word),
            }
        }
        return Ok(Invocation::Task(flags, task::parse(words)?));
    }
    let mut args = pico_args::Arguments::from_vec(args);
    if args.contains(["-h", "--help"]) {
        return Ok(Invocation::Help);
    }
    if args.contains(["-V", "--version"]) {
        return Ok(Invocation::Version);
    }
    let flags = RunFlags {
        dry_run: args.contains("--dry-run"),
        once: args.contains("--once"),
        verbose: args.contains(["-v", "--verbose"]),
        json: args.contains("--json"),
    };
    if flags.json && !flags.once {
        return Err(Error::usage(
            "--json needs --once: it prints that pass's summary as JSON",
        ));
    }
    let print_config = args.contains("--print-config");
    reject_leftovers(args.finish())?;
    Ok(if print_config {
        Invocation::PrintConfig(flags)
    } else {
        Invocation::Run(flags)
    })
}

/// `history [ID] [--since DUR] [--json|--report]`.
fn parse_history(args: Vec<OsString>) -> Result<Invocation> {
    use crate::ops::history::{Args, View};
    let mut rest = pico_args::Arguments::from_vec(args);
    if rest.contains(["-h", "--help"]) {
        return Ok(Invocation::Help);
    }
    let json = rest.contains("--json");
    let report = rest.contains("--report");
    let given: Option<String> = rest.opt_value_from_str("--since").map_err(|e| match e {
        pico_args::Error::Utf8ArgumentParsingFailed { value, .. } => {
            Error::usage(format!("--since {value:?} is invalid: not UTF-8"))
        }
        _ => Error::usage(
            "--since needs a value: a duration such as 30s, 90m, 6h, 2d, plain seconds, or all",
        ),
    })?;
    let since = given.as_deref().map_or(Ok(Since::default()), since)?;
    let id = one_session("history", "session id", rest.finish())?;
    let view = match (json, report) {
        (true, true) => Err("history: --json and --report cannot be combined"),
        (true, false) => Ok(View::Json),
        (false, true) => Ok(View::Report),
        (false, false) => Ok(View::Lines),
    }
    .map_err(Error::usage)?;
    Ok(Invocation::History(Args { id, since, view }))
}

/// `--since`: more than zero, up to 100 years.
const SINCE_BOUNDS: Bounds = Bounds {
    zero_ok: false,
    max_s: 100.0 * 365.0 * 86_400.0,
};

/// `--since`: `all`, or a duration within [`SINCE_BOUNDS`].
fn since(raw: &str) -> Result<Since> {
    let t = raw.trim();
    if t == "all" {
        return Ok(Since::All);
    }
    let secs = duration::parse("--since", raw, SINCE_BOUNDS).map_err(|_| {
        Error::usage(format!(
            "--since {raw:?} is invalid: expected a duration such as 30s, 90m, 6h, 2d, \
             plain seconds, or all"
        ))
    })?;
    let plain = t.chars().all(|c| c.is_ascii_digit() || c == '.');
    let label = if plain { format!("{t}s") } else { t.to_owned() };
    Ok(Since::Last { secs, label })
}

/// `drill ID [--yes] [--timeout DUR]`.
fn parse_drill(args: Vec<OsString>) -> Result<Invocation> {
    let mut rest = pico_args::Arguments::from_vec(args);
    if rest.contains(["-h", "--help"]) {
        return Ok(Invocation::Help);
    }
    let yes = rest.contains("--yes");
    let timeout: Option<String> = rest
        .opt_value_from_str("--timeout")
        .map_err(|_| Error::usage("--timeout needs a value: a duration such as 60, 90s or 2m"))?;
    let bounds = Bounds {
        zero_ok: false,
        max_s: 3600.0,
    };
    let timeout_s = match timeout {
        Some(raw) => duration::parse("--timeout", &raw, bounds)?,
        None => drill::DEFAULT_TIMEOUT_S,
    };
    let id = one_session("drill", "session", rest.finish())?
        .ok_or_else(|| Error::usage("drill needs a session: drill ID [--yes] [--timeout DUR]"))?;
    Ok(Invocation::Drill(drill::Args { id, yes, timeout_s }))
}

/// The one session `cmd` takes (its messages call it `noun`), from the
/// words pico-args left: text, not empty, not a flag, at most one.
fn one_session(cmd: &str, noun: &str, words: Vec<OsString>) -> Result<Option<String>> {
    let mut id: Option<String> = None;
    for word in words {
        let Some(text) = word.to_str() else {
            return Err(Error::usage(format!(
                "{cmd}: the {noun} {word:?} is not valid UTF-8"
            )));
        };
        if text.starts_with('-') {
            return Err(Error::usage(format!(
                "unknown flag '{text}' for {cmd} (see --help)"
            )));
        }
        if text.is_empty() {
            return Err(Error::usage(format!("{cmd}: the {noun} is empty")));
        }
        if let Some(first) = &id {
            return Err(Error::usage(format!(
                "{cmd} takes one {noun}, got '{first}' and '{text}'"
            )));
        }
        id = Some(text.to_owned());
    }
    Ok(id)
}

/// Turns whatever pico-args did not consume into a usage error naming it.
fn reject_leftovers(rest: Vec<OsString>) -> Result<()> {
    let Some(word) = rest.first().map(|w| w.to_string_lossy()) else {
        return Ok(());
    };
    let what = if word.starts_with('-') {
        "flag"
    } else {
        "command"
    };
    Err(Error::usage(format!(
        "unknown {what} '{word}' (see --help)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(words: &[&str]) -> Result<Invocation> {
        parse(words.iter().map(OsString::from).collect())
    }

    #[test]
    fn drill_waits_60_s_unless_told_and_bounds_its_timeout() {
        let drill = |words: &[&str]| match p(words) {
            Ok(Invocation::Drill(a)) => Ok(a),
            Ok(other) => panic!("{other:?}"),
            Err(e) => Err(e.exit_code()),
        };
        let a = drill(&["drill", "conductor-ops"]).unwrap();
        assert_eq!(
            (a.id.as_str(), a.yes, a.timeout_s),
            ("conductor-ops", false, 60.0)
        );
        let a = drill(&["drill", "x", "--yes", "--timeout", "2m"]).unwrap();
        assert_eq!((a.yes, a.timeout_s), (true, 120.0));
        for bad in ["0", "3601", "-5", "soon"] {
            assert_eq!(
                drill(&["drill", "x", "--timeout", bad]).unwrap_err(),
                2,
                "{bad}"
            );
        }
        assert_eq!(
            p(&["doctor", "--json", "--online"]).unwrap(),
            Invocation::Doctor {
                json: true,
                online: true
            }
        );
        assert_eq!(p(&["doctor", "--bogus"]).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn default_is_daemon() {
        assert_eq!(p(&[]).unwrap(), Invocation::Run(RunFlags::default()));
    }

    #[test]
    fn flags_combine() {
        let want = RunFlags {
            dry_run: true,
            once: true,
            verbose: true,
            json: false,
        };
        assert_eq!(
            p(&["--once", "--dry-run", "--verbose"]).unwrap(),
            Invocation::Run(want)
        );
    }

    #[test]
    fn unknown_flag_is_named() {
        let err = p(&["--bogus"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("--bogus"), "{err}");
    }

    #[test]
    fn only_the_first_word_can_be_the_task_command() {
        assert!(matches!(
            p(&["--dry-run", "task", "list"]).unwrap(),
            Invocation::Task(RunFlags { dry_run: true, .. }, _)
        ));
        let err = p(&["demo", "task"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("task"), "{err}");
        assert!(matches!(
            p(&["history", "task"]).unwrap(),
            Invocation::History(ref a) if a.id.as_deref() == Some("task")
        ));
    }

    #[test]
    fn unknown_command_is_named() {
        let err = p(&["frobnicate"]).unwrap_err();
        assert!(err.to_string().contains("frobnicate"), "{err}");
    }

    #[test]
    fn history_takes_an_id_a_window_and_a_view() {
        use crate::ops::history::{Args, Since, View};
        assert_eq!(
            p(&["history"]).unwrap(),
            Invocation::History(Args::default())
        );
        let want = Args {
            id: Some("3f9c2a1b-1755891234".into()),
            since: since("6h").unwrap(),
            view: View::Report,
        };
        assert_eq!(
            p(&[
                "history",
                "3f9c2a1b-1755891234",
                "--since",
                "6h",
                "--report"
            ])
            .unwrap(),
            Invocation::History(want)
        );
        // `--since=`, and a session whose id is a command word.
        let want = Args {
            id: Some("task".into()),
            since: Since::All,
            view: View::Json,
        };
        assert_eq!(
            p(&["history", "--since=all", "--json", "task"]).unwrap(),
            Invocation::History(want)
        );
    }

    #[test]
    fn history_usage_errors_name_the_problem() {
        for (words, want) in [
            (&["history", "--since", "soon"][..], "--since \"soon\""),
            (&["history", "--since"], "--since needs a value"),
            (
                &["history", "a-1", "--json", "--report"],
                "cannot be combined",
            ),
            (&["history", "a-1", "b-2"], "one session id"),
            (&["history", "--bogus"], "--bogus"),
            (&["history", ""], "empty"),
        ] {
            let err = p(words).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{words:?}");
            assert!(err.to_string().contains(want), "{words:?}: {err}");
        }
    }

    #[test]
    fn since_accepts_units_plain_seconds_and_all() {
        let secs = |raw: &str| match since(raw).unwrap() {
            Since::Last { secs, .. } => secs,
            Since::All => f64::INFINITY,
        };
        assert_eq!(secs("30s"), 30.0);
        assert_eq!(secs("90m"), 5400.0);
        assert_eq!(secs("6h"), 21_600.0);
        assert_eq!(secs("2d"), 172_800.0);
        assert_eq!(secs("1.5d"), 129_600.0);
        assert_eq!(secs("5400"), 5400.0);
        assert_eq!(secs(" 7d "), 604_800.0);
        assert_eq!(secs("all"), f64::INFINITY);
        assert_eq!(since("5400").unwrap().describe(), "the last 5400s");
        assert_eq!(Since::default().describe(), "the last 24h");
    }

    #[test]
    fn since_rejects_bad_values_naming_the_flag_and_value() {
        for bad in [
            "",
            "h",
            "0",
            "0h",
            "-5m",
            "+5m",
            "6x",
            "1e3",
            "nan",
            "inf",
            "6hh",
            "36501000d",
            "ALL",
        ] {
            let err = since(bad).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad:?}");
            let msg = err.to_string();
            assert!(
                msg.contains("--since") && msg.contains(&format!("{bad:?}")),
                "{msg}"
            );
        }
    }
}
