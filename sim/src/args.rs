//! The simulated CLI's command line, parsed the way agent-deck's Go code does.
//! The global `-p NAME`, `-p=NAME`, `--profile NAME` and `--profile=NAME` count
//! only before the first subcommand token. Each subcommand's flags follow Go
//! `flag.ExitOnError` after `normalizeArgs`: flags may sit anywhere, `-x`
//! and `--x` are the same, a word starting with `-` is a flag, and a bad or
//! unknown flag is exit 2 with the usage on stderr (contract §0).

use std::collections::HashMap;

use serde::Serialize;

use super::reply::Reply;
use crate::release::Release;

/// The commands the simulator answers; serialized, the keys of `faults` and
/// `delay_s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum CommandKind {
    ListAll,
    List,
    Show,
    Restart,
    Start,
    Send,
    OutputPane,
    Output,
    Remove,
    /// `session set <id> claude-session-id <value>`, the one field the
    /// watchdog sets.
    Set,
}

/// One parsed invocation.
#[derive(Debug, Clone)]
pub(super) struct Call {
    pub kind: CommandKind,
    /// Boolean flags as given (`--json=false` is recorded as false).
    bools: HashMap<&'static str, bool>,
    /// Every `--env K=V` of `session restart`.
    pub env: Vec<String>,
    pub pos: Vec<String>,
    /// The `-p` argument as given, "" when none.
    pub profile_arg: String,
    /// The profile the call works in: `-p`, else `AGENTDECK_PROFILE`, else "default".
    pub profile: String,
}

impl Call {
    pub(super) fn on(&self, flag: &str) -> bool {
        self.bools.get(flag).copied().unwrap_or(false)
    }

    pub(super) fn quiet(&self) -> bool {
        self.on("quiet") || self.on("q")
    }
}

/// The boolean flags a subcommand defines (`restart`'s `--env K=V` aside).
fn bool_flags(sub: &str) -> &'static [&'static str] {
    match sub {
        "list" => &["json", "quiet", "q", "all"],
        "restart" => &["json", "quiet", "q", "force", "all"],
        // `session send` has -q but no --quiet (contract §3).
        "send" => &["json", "q", "no-wait"],
        "output" => &["json", "quiet", "q", "copy", "pane", "primary"],
        _ => &["json", "quiet", "q"],
    }
}

const SESSION_SUBCOMMANDS: [&str; 6] = ["show", "restart", "start", "send", "output", "set"];

/// Parses `args`; `env_profile` is `AGENTDECK_PROFILE` ("" when unset).
pub(super) fn parse(args: &[String], env_profile: &str) -> Result<Call, Reply> {
    let (profile_arg, rest) = global_profile(args)?;
    let unknown = || Reply::err(1, "Error: unknown command\n".into());
    let (sub, name, tail) = match rest {
        [first, tail @ ..] if first == "list" || first == "remove" => {
            (first.as_str(), first.clone(), tail)
        }
        [first, sub, tail @ ..]
            if first == "session" && SESSION_SUBCOMMANDS.contains(&sub.as_str()) =>
        {
            (sub.as_str(), format!("session {sub}"), tail)
        }
        _ => return Err(unknown()),
    };
    let (bools, env, pos) = parse_flags(&name, sub, tail)?;
    let flag = |n: &str| bools.get(n).copied().unwrap_or(false);
    let kind = match sub {
        "list" if flag("all") => CommandKind::ListAll,
        "list" => CommandKind::List,
        "show" => CommandKind::Show,
        "restart" => CommandKind::Restart,
        "start" => CommandKind::Start,
        "send" => CommandKind::Send,
        "output" if flag("pane") => CommandKind::OutputPane,
        "output" => CommandKind::Output,
        "set" => CommandKind::Set,
        _ => CommandKind::Remove,
    };
    let profile = [profile_arg.as_str(), env_profile]
        .into_iter()
        .find(|p| !p.is_empty())
        .unwrap_or("default")
        .to_owned();
    Ok(Call {
        kind,
        bools,
        env,
        pos,
        profile_arg,
        profile,
    })
}

/// The global profile flags before the first subcommand token.
fn global_profile(args: &[String]) -> Result<(String, &[String]), Reply> {
    let (mut profile, mut rest) = (String::new(), args);
    loop {
        match rest {
            [flag, name, tail @ ..] if flag == "-p" || flag == "--profile" => {
                (profile, rest) = (name.clone(), tail);
            }
            [flag] if flag == "-p" || flag == "--profile" => {
                let msg = format!("Error: {flag} requires a profile name\n");
                return Err(Reply::err(1, msg));
            }
            [arg, tail @ ..] => match arg
                .strip_prefix("-p=")
                .or_else(|| arg.strip_prefix("--profile="))
            {
                Some(name) => (profile, rest) = (name.to_owned(), tail),
                None => return Ok((profile, rest)),
            },
            [] => return Ok((profile, rest)),
        }
    }
}

/// The call as `release` parses it: `--primary` came with `session output
/// --pane --primary` (CHANGELOG 1.16.11, #2257), and before that Go's flag
/// package exits 2 on it, as [`parse_flags`] does on any unknown flag.
pub(super) fn defined_in(c: &Call, release: Release, args: &[String]) -> Result<(), Reply> {
    if !c.bools.contains_key("primary") || release >= Release::PRIMARY_PANE {
        return Ok(());
    }
    let name = match args.iter().position(|a| a == "session") {
        Some(i) => format!("session {}", args.get(i + 1).map_or("", String::as_str)),
        None => String::new(),
    };
    let usage = format!("Usage: agent-deck {name} [options]\n");
    Err(Reply::err(
        2,
        format!("flag provided but not defined: -primary\n{usage}"),
    ))
}

type Flags = (HashMap<&'static str, bool>, Vec<String>, Vec<String>);

/// Go's flag parsing of `sub`'s flags: boolean flags, `--env` values,
/// positionals.
fn parse_flags(name: &str, sub: &str, args: &[String]) -> Result<Flags, Reply> {
    let usage = format!("Usage: agent-deck {name} [options]\n");
    let bad = |msg: String| Reply::err(2, format!("{msg}\n{usage}"));
    let (mut bools, mut values, mut pos) = (HashMap::new(), Vec::new(), Vec::new());
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--" {
            pos.extend(it.by_ref().cloned());
            break;
        }
        if !arg.starts_with('-') || arg == "-" {
            pos.push(arg.clone());
            continue;
        }
        let body = arg.strip_prefix("--").unwrap_or(&arg[1..]);
        if body.is_empty() || body.starts_with('-') || body.starts_with('=') {
            return Err(bad(format!("bad flag syntax: {arg}")));
        }
        let (key, value) = match body.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (body, None),
        };
        if key == "h" || key == "help" {
            return Err(Reply::err(0, usage.clone()));
        }
        if sub == "restart" && key == "env" {
            let v = value
                .map(str::to_owned)
                .or_else(|| it.next().cloned())
                .ok_or_else(|| bad(format!("flag needs an argument: -{key}")))?;
            values.push(v);
            continue;
        }
        let Some(&key) = bool_flags(sub).iter().find(|k| **k == key) else {
            return Err(bad(format!("flag provided but not defined: -{key}")));
        };
        let on = match value.map(str::to_ascii_lowercase).as_deref() {
            None | Some("1" | "t" | "true") => true,
            Some("0" | "f" | "false") => false,
            Some(_) => {
                let v = value.unwrap_or_default();
                return Err(bad(format!(
                    "invalid boolean value \"{v}\" for -{key}: parse error"
                )));
            }
        };
        bools.insert(key, on);
    }
    Ok((bools, values, pos))
}
