//! The command line: turns argv into a [`Command`].
//!
//! Parsing only. Nothing here reads the environment or touches the filesystem;
//! a mistake is an [`Error::Usage`] that names the offending word.

use std::ffi::OsString;

use crate::error::{Error, Result};

pub const USAGE: &str = "\
agent-deck-watchdog: keeps critical agent-deck sessions alive

usage:
  agent-deck-watchdog [--dry-run] [--once] [--verbose]   run the daemon, or one pass with --once
  agent-deck-watchdog --print-config                       effective settings and their sources
  agent-deck-watchdog status [--json]                      what the daemon knows and will do next
  agent-deck-watchdog task <add|list|show|cancel|check|sign> …   task follow-up (task --help)
  agent-deck-watchdog demo                                 a simulated fleet, revived end to end
  agent-deck-watchdog --help | --version

flags:
  --dry-run       decide and log everything, but restart, start, send, remove nothing,
                  run no escalate.sh and send no Telegram message (the read-only
                  getWebhookInfo check of POLLER_DEAF_CHECKS still runs)
  --once          one safety-poll pass, wait for the work it started, exit 0
  --verbose       debug logging
  --print-config  print every setting, its value and where it came from

settings come from the environment only; see README.md for the list.
exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error,
            3 another watchdog holds the instance lock";

/// Flags shared by the daemon and `--once`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunFlags {
    pub dry_run: bool,
    pub once: bool,
    pub verbose: bool,
}

/// What the user asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Run(RunFlags),
    PrintConfig(RunFlags),
    Task(RunFlags, crate::tasks::cli::TaskCommand),
    Status { json: bool },
    Demo,
    Help,
    Version,
}

/// Parses the arguments after the program name.
pub fn parse(mut args: Vec<OsString>) -> Result<Command> {
    if let Some(i) = args.iter().position(|a| a == "task") {
        // Everything after `task` belongs to it; only the global flags may come before.
        let rest = args.split_off(i + 1);
        args.pop();
        let mut global = pico_args::Arguments::from_vec(args);
        let flags = RunFlags {
            dry_run: global.contains("--dry-run"),
            once: false,
            verbose: global.contains(["-v", "--verbose"]),
        };
        reject_leftovers(global.finish())?;
        let (mut rest, mut extra) = (rest, RunFlags::default());
        let split = rest.iter().position(|a| a == "--").unwrap_or(rest.len());
        let mut tail = rest.split_off(split);
        rest.retain(|a| match a.to_str() {
            Some("--dry-run") => {
                extra.dry_run = true;
                false
            }
            Some("--verbose") | Some("-v") => {
                extra.verbose = true;
                false
            }
            _ => true,
        });
        rest.append(&mut tail);
        let flags = RunFlags {
            dry_run: flags.dry_run || extra.dry_run,
            verbose: flags.verbose || extra.verbose,
            once: false,
        };
        return Ok(Command::Task(flags, crate::tasks::cli::parse(rest)?));
    }
    if let Some(first) = args.first().and_then(|a| a.to_str()) {
        if first == "status" || first == "demo" {
            let mut rest = pico_args::Arguments::from_vec(args[1..].to_vec());
            let json = first == "status" && rest.contains("--json");
            reject_leftovers(rest.finish())?;
            return Ok(if first == "status" {
                Command::Status { json }
            } else {
                Command::Demo
            });
        }
    }
    let mut args = pico_args::Arguments::from_vec(args);
    if args.contains(["-h", "--help"]) {
        return Ok(Command::Help);
    }
    if args.contains(["-V", "--version"]) {
        return Ok(Command::Version);
    }
    let flags = RunFlags {
        dry_run: args.contains("--dry-run"),
        once: args.contains("--once"),
        verbose: args.contains(["-v", "--verbose"]),
    };
    let print_config = args.contains("--print-config");
    reject_leftovers(args.finish())?;
    Ok(if print_config {
        Command::PrintConfig(flags)
    } else {
        Command::Run(flags)
    })
}

/// Turns whatever pico-args did not consume into a usage error naming it.
fn reject_leftovers(rest: Vec<OsString>) -> Result<()> {
    let Some(first) = rest.first() else {
        return Ok(());
    };
    let word = first.to_string_lossy();
    if word.starts_with('-') {
        Err(Error::usage(format!("unknown flag '{word}' (see --help)")))
    } else {
        Err(Error::usage(format!(
            "unknown command '{word}' (see --help)"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(words: &[&str]) -> Result<Command> {
        parse(words.iter().map(OsString::from).collect())
    }

    #[test]
    fn default_is_daemon() {
        assert_eq!(p(&[]).unwrap(), Command::Run(RunFlags::default()));
    }

    #[test]
    fn flags_combine() {
        let want = RunFlags {
            dry_run: true,
            once: true,
            verbose: true,
        };
        assert_eq!(
            p(&["--once", "--dry-run", "--verbose"]).unwrap(),
            Command::Run(want)
        );
    }

    #[test]
    fn unknown_flag_is_named() {
        let err = p(&["--bogus"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("--bogus"), "{err}");
    }

    #[test]
    fn unknown_command_is_named() {
        let err = p(&["frobnicate"]).unwrap_err();
        assert!(err.to_string().contains("frobnicate"), "{err}");
    }
}
