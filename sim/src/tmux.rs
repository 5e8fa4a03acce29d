//! The simulator as tmux (`sim tmux [-u] [-L SOCKET] <command>`), for the
//! drill's kill and the pane watch's listing; every call is logged.
//! `kill-session -t [=]NAME` crashes the session of that tmux name as `sim
//! crash` does, or ends a restart's unsaved one (`unsaved_tmux`); `list-panes -a -F FMT` and `display -p FMT` answer from the
//! pane host's record (`pane_host`).
//!
//! With `tmux_server: "down"`, or a `pane_host` whose pid is no live
//! process, and for `list-panes` and `display` also with no `pane_host`,
//! there is no server: exit 1 and tmux's `no server running on <socket>`.

use std::path::Path;

use super::reply::Reply;
use super::state::{SimSession, SimState};
use super::{kill_first, locked, state_path, SimEnv};

pub(super) fn tmux(args: &[String], env: &SimEnv) -> Result<Reply, Reply> {
    let path = state_path(env)?;
    let (mut socket, mut rest) = (None, args);
    loop {
        match rest {
            [u, more @ ..] if u == "-u" => rest = more,
            [l, name, more @ ..] if l == "-L" => (socket, rest) = (Some(name.as_str()), more),
            _ => break,
        }
    }
    let no_server = || {
        let dir = env.tmux_tmpdir.as_deref().unwrap_or(Path::new("/tmp"));
        let uid = rustix::process::getuid().as_raw();
        let shown = dir
            .join(format!("tmux-{uid}"))
            .join(socket.unwrap_or("default"));
        Reply::err(1, format!("no server running on {}\n", shown.display()))
    };
    match rest {
        [verb, more @ ..] if verb == "list-panes" => {
            let format =
                flags(more, &["-a"], "-F").ok_or_else(|| usage("list-panes -a -F format"))?;
            locked(path, |st| list_panes(st, format).ok_or_else(no_server))?
        }
        [verb, more @ ..] if verb == "display" || verb == "display-message" => {
            let format = flags(more, &[], "-p").ok_or_else(|| usage("display -p format"))?;
            locked(path, |st| display(st, format).ok_or_else(no_server))?
        }
        [verb, t, target] if verb == "kill-session" && t == "-t" => {
            let name = target.strip_prefix('=').unwrap_or(target);
            let killed = locked(path, |st| {
                let alive = |s: &SimSession| s.tmux_session == name && s.tmux_alive != Some(false);
                let unsaved = st.unsaved_tmux.iter().position(|n| n == name);
                (!no_server_to_kill(st)).then(|| match unsaved {
                    // A restart's unsaved tmux session: its agent ends with it.
                    Some(i) => {
                        st.unsaved_tmux.remove(i);
                        true
                    }
                    None => kill_first(st, alive),
                })
            })?;
            match killed {
                None => Err(no_server()),
                Some(true) => Ok(Reply::out(0, String::new())),
                Some(false) => Err(Reply::err(1, format!("can't find session: {name}\n"))),
            }
        }
        [verb, _, _] => Err(Reply::err(1, format!("unknown command: {verb}\n"))),
        _ => Err(usage("kill-session -t name")),
    }
}

fn usage(command: &str) -> Reply {
    Reply::err(1, format!("usage: tmux [-L socket] {command}\n"))
}

/// `value_flag`'s value when `args` are exactly it and all of `required`.
fn flags<'a>(args: &'a [String], required: &[&str], value_flag: &str) -> Option<&'a str> {
    let (mut value, mut seen) = (None, Vec::new());
    let mut rest = args;
    while let [first, more @ ..] = rest {
        rest = more;
        if first == value_flag {
            let [v, after @ ..] = rest else {
                return None;
            };
            (value, rest) = (Some(v.as_str()), after);
        } else if required.contains(&first.as_str()) {
            seen.push(first.as_str());
        } else {
            return None;
        }
    }
    required.iter().all(|r| seen.contains(r)).then_some(value?)
}

/// The server's pid: the pane host's, while it runs and the server is up.
fn server(st: &SimState) -> Option<u32> {
    let host = st.pane_host.as_ref().filter(|_| !st.server_down())?;
    alive(host.pid).then_some(host.pid)
}

/// Whether `pid` is a live process, not a zombie (`/proc/<pid>/stat`).
#[cfg(target_os = "linux")]
fn alive(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(") ")
        .and_then(|(_, f)| f.split_whitespace().next());
    state.is_some_and(|state| state != "Z" && state != "X")
}

/// Whether `pid` is a live process, not a zombie (signal 0, `proc_pidinfo`).
#[cfg(target_os = "macos")]
fn alive(pid: u32) -> bool {
    use rustix::process::{test_kill_process, Pid};
    let Some(id) = libc::pid_t::try_from(pid).ok().and_then(Pid::from_raw) else {
        return false;
    };
    // EPERM: it exists, as another user's.
    let exists = matches!(test_kill_process(id), Ok(()) | Err(rustix::io::Errno::PERM));
    // SAFETY: proc_bsdinfo is plain data; zeroes are a valid value.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::proc_bsdinfo>() as i32;
    let out = (&mut info as *mut libc::proc_bsdinfo).cast();
    // SAFETY: `info` is writable for `size` bytes for the whole call.
    let n = unsafe {
        libc::proc_pidinfo(
            id.as_raw_nonzero().get(),
            libc::PROC_PIDTBSDINFO,
            0,
            out,
            size,
        )
    };
    exists && (n != size || info.pbi_status != libc::SZOMB)
}

/// `kill-session` finds no server: it is down, or a recorded pane host has
/// died (killed outright, it could not say so).
fn no_server_to_kill(st: &SimState) -> bool {
    st.server_down() || (st.pane_host.is_some() && server(st).is_none())
}

/// `list-panes -a -F FORMAT`: a line per pane, by name; None without a server.
pub(super) fn list_panes(st: &SimState, format: &str) -> Option<Reply> {
    let pid = server(st)?.to_string();
    let host = st.pane_host.as_ref()?;
    // A restart's unsaved tmux session runs too (its pane pid: the server's, here).
    let panes = host.panes.iter().map(|(name, p)| (name, p.to_string()));
    let unsaved = st.unsaved_tmux.iter().map(|name| (name, pid.clone()));
    let mut text = String::new();
    for (name, pane_pid) in panes.chain(unsaved) {
        text.push_str(&expand(format, |var| match var {
            "session_name" => Some(name.as_str()),
            // One window and one pane per session.
            "window_index" | "pane_index" => Some("0"),
            "pane_pid" => Some(&pane_pid),
            // remain-on-exit is off, so a dead pane is never kept.
            "pane_dead" => Some("0"),
            "pid" => Some(&pid),
            _ => None,
        }));
        text.push('\n');
    }
    Some(Reply::out(0, text))
}

/// `display -p FORMAT`: the format with the server's pid; None without a server.
pub(super) fn display(st: &SimState, format: &str) -> Option<Reply> {
    let pid = server(st)?.to_string();
    let line = expand(format, |var| (var == "pid").then_some(pid.as_str()));
    Some(Reply::out(0, line + "\n"))
}

/// `format` with each `#{name}` replaced by `var(name)`, or by nothing (as
/// tmux expands a variable it does not know); an unclosed `#{` is kept.
pub(super) fn expand<'a>(format: &str, var: impl Fn(&str) -> Option<&'a str>) -> String {
    let mut out = String::new();
    let mut rest = format;
    while let Some(at) = rest.find("#{") {
        let Some(len) = rest[at + 2..].find('}') else {
            break;
        };
        out.push_str(&rest[..at]);
        out.push_str(var(&rest[at + 2..at + 2 + len]).unwrap_or_default());
        rest = &rest[at + 3 + len..];
    }
    out.push_str(rest);
    out
}
