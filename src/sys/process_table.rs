//! The process table: each other process's pid and command line (its
//! environment on request), whether a pid is alive, its parent, and when it
//! started (so a reused pid is not mistaken for the registered one). Linux
//! reads `/proc` (a parameter, so tests lay out a fake one); macOS lists the
//! user's pids and reads each one's `sysctl` `KERN_PROCARGS2`, parsed by the
//! pure [`parse_procargs2`]. Callers decide what a match means.

use std::path::Path;

/// Where Linux keeps the process table; the other platforms ignore it.
pub(crate) const PROC_DIR: &str = "/proc";

/// One process seen by [`processes`].
#[derive(Debug, Clone)]
pub(crate) struct Process {
    pub pid: u32,
    /// NUL-separated argv, as the kernel keeps it.
    pub cmdline: Vec<u8>,
    /// `/proc/<pid>/environ`, read on request.
    #[cfg(target_os = "linux")]
    environ: std::path::PathBuf,
    /// Read with the command line, NUL-separated.
    #[cfg(target_os = "macos")]
    environ: Vec<u8>,
}

impl Process {
    /// The file name of the program (`argv[0]` without its directory).
    pub(crate) fn program_name(&self) -> Option<&std::ffi::OsStr> {
        use std::os::unix::ffi::OsStrExt;
        let argv0 = self.cmdline.split(|b| *b == 0).next()?;
        Path::new(std::ffi::OsStr::from_bytes(argv0)).file_name()
    }

    /// Whether the program itself (not just an argument, as in `journalctl -u
    /// agent-deck-watchdog`) is this binary or one named agent-deck-watchdog.
    pub(crate) fn is_watchdog(&self) -> bool {
        static OURS: std::sync::OnceLock<Option<std::ffi::OsString>> = std::sync::OnceLock::new();
        let ours = OURS.get_or_init(|| {
            let exe = std::env::current_exe().ok()?;
            exe.file_name().map(ToOwned::to_owned)
        });
        self.program_name()
            .is_some_and(|n| Some(n) == ours.as_deref() || n == "agent-deck-watchdog")
    }

    /// The command line with NULs as spaces, for text matching.
    pub(crate) fn command_text(&self) -> String {
        String::from_utf8_lossy(&self.cmdline).replace('\0', " ")
    }

    /// The value of `key` in the process's environment, if it is there.
    pub(crate) fn env_value(&self, key: &str) -> Option<Vec<u8>> {
        #[cfg(target_os = "linux")]
        let environ = std::fs::read(&self.environ).ok()?;
        #[cfg(target_os = "macos")]
        let environ = &self.environ;
        environ.split(|b| *b == 0).find_map(|kv| {
            kv.strip_prefix(key.as_bytes())?
                .strip_prefix(b"=")
                .map(<[u8]>::to_vec)
        })
    }
}

/// A `KERN_PROCARGS2` buffer (`argc` as a native `i32`, the executable path,
/// NUL padding, `argc` arguments, the environment up to an empty string) as
/// (argv, environment), NUL-terminated like `/proc/<pid>/cmdline`. `None`
/// when too short to hold `argc`; a truncated buffer yields what it holds.
#[cfg_attr(not(target_os = "macos"), allow(dead_code, reason = "macOS only"))]
pub(crate) fn parse_procargs2(buf: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let argc = i32::from_ne_bytes(buf.get(..4)?.try_into().ok()?);
    let rest = &buf[4..];
    // The executable path, then the padding after it.
    let path_end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
    let start = rest[path_end..]
        .iter()
        .position(|b| *b != 0)
        .map_or(rest.len(), |i| path_end + i);
    let mut strings = rest[start..].split(|b| *b == 0);
    let mut argv = Vec::new();
    for arg in strings.by_ref().take(usize::try_from(argc).unwrap_or(0)) {
        argv.extend_from_slice(arg);
        argv.push(0);
    }
    let mut environ = Vec::new();
    for kv in strings.take_while(|kv| !kv.is_empty()) {
        environ.extend_from_slice(kv);
        environ.push(0);
    }
    Some((argv, environ))
}

#[cfg(target_os = "linux")]
pub(crate) use linux::{has_children, parent_pid, pid_alive, process, processes, start_time};
#[cfg(target_os = "macos")]
pub(crate) use macos::{has_children, parent_pid, pid_alive, process, processes, start_time};

/// The shells a pane may be left running when its agent is gone.
const SHELLS: &[&str] = &[
    "bash", "zsh", "sh", "dash", "fish", "ksh", "mksh", "tcsh", "csh", "nu",
];

/// Whether `cmdline` (NUL-separated argv) is an interactive shell: a known
/// shell (`-bash` as a login shell names it) given options only, with no
/// script, no `-c` command and no option that takes a file. A bash script
/// (the live suite's fake agents, `bash /path/agent`) or `bash -c agent`
/// is not one.
pub(crate) fn is_interactive_shell(cmdline: &[u8]) -> bool {
    let mut argv = cmdline.split(|b| *b == 0).filter(|a| !a.is_empty());
    let Some(program) = argv.next().and_then(|a| std::str::from_utf8(a).ok()) else {
        return false;
    };
    let name = program.rsplit('/').next().unwrap_or(program);
    if !SHELLS.contains(&name.trim_start_matches('-')) {
        return false;
    }
    argv.all(|a| match a {
        [b'-', b'-', rest @ ..] => {
            !rest.is_empty() && !rest.contains(&b'=') && !matches!(rest, b"rcfile" | b"init-file")
        }
        [b'-' | b'+', flags @ ..] => !flags.is_empty() && !flags.contains(&b'c'),
        _ => false,
    })
}

/// Whether `pid` is a bare shell: an interactive shell (see
/// [`is_interactive_shell`]) with no child process. Anything unreadable
/// says no.
pub(crate) fn bare_shell(proc_dir: &Path, pid: u32) -> bool {
    let shell = process(proc_dir, pid).is_some_and(|p| is_interactive_shell(&p.cmdline));
    shell && has_children(proc_dir, pid) == Some(false)
}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;

    /// Every process but this one whose command line is readable.
    pub(crate) fn processes(proc_dir: &Path) -> impl Iterator<Item = Process> {
        let me = std::process::id();
        let root = proc_dir.to_path_buf();
        std::fs::read_dir(proc_dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(move |e| {
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                (pid != me).then(|| process(&root, pid))?
            })
    }

    /// One process, if its command line is readable.
    pub(crate) fn process(proc_dir: &Path, pid: u32) -> Option<Process> {
        let dir = proc_dir.join(pid.to_string());
        let cmdline = std::fs::read(dir.join("cmdline")).ok()?;
        Some(Process {
            pid,
            cmdline,
            environ: dir.join("environ"),
        })
    }

    /// Field `n` of `/proc/<pid>/stat`, counted from the state (field 3).
    fn stat_field(proc_dir: &Path, pid: u32, n: usize) -> Option<String> {
        let stat = std::fs::read_to_string(proc_dir.join(pid.to_string()).join("stat")).ok()?;
        let (_, fields) = stat.rsplit_once(") ")?;
        fields.split_whitespace().nth(n).map(str::to_owned)
    }

    /// Whether `pid` is a live (non-zombie) process.
    pub(crate) fn pid_alive(proc_dir: &Path, pid: u32) -> bool {
        stat_field(proc_dir, pid, 0).is_some_and(|state| state != "Z" && state != "X")
    }

    /// The parent of `pid` (field 4 of `stat`).
    pub(crate) fn parent_pid(proc_dir: &Path, pid: u32) -> Option<u32> {
        stat_field(proc_dir, pid, 1)?.parse().ok()
    }

    /// When `pid` started, in clock ticks since boot (field 22 of `stat`).
    pub(crate) fn start_time(proc_dir: &Path, pid: u32) -> Option<u64> {
        stat_field(proc_dir, pid, 19)?.parse().ok()
    }

    /// Whether `pid` has a child (the `children` of each of its threads);
    /// `None` when the kernel does not keep those files.
    pub(crate) fn has_children(proc_dir: &Path, pid: u32) -> Option<bool> {
        let tasks = std::fs::read_dir(proc_dir.join(pid.to_string()).join("task")).ok()?;
        let mut known = false;
        for task in tasks.flatten() {
            let Ok(children) = std::fs::read(task.path().join("children")) else {
                continue;
            };
            if children.iter().any(u8::is_ascii_digit) {
                return Some(true);
            }
            known = true;
        }
        known.then_some(false)
    }
}

#[cfg(target_os = "macos")]
mod macos {
    use super::*;
    use rustix::io::Errno;
    use rustix::process::{test_kill_process, Pid};

    /// Every pid on the system, as far as `proc_listallpids` will say.
    fn all_pids() -> Vec<libc::pid_t> {
        let mut pids: Vec<libc::pid_t> = vec![0; 4096];
        loop {
            let bytes =
                i32::try_from(pids.len() * std::mem::size_of::<libc::pid_t>()).unwrap_or(i32::MAX);
            // SAFETY: the buffer is writable for `bytes` bytes; the call
            // returns how many pids it wrote.
            let n = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), bytes) };
            let Ok(n) = usize::try_from(n) else {
                return Vec::new();
            };
            if n < pids.len() || pids.len() >= 1 << 20 {
                pids.truncate(n);
                return pids;
            }
            pids.resize(pids.len() * 2, 0);
        }
    }

    /// What `proc_pidinfo(PROC_PIDTBSDINFO)` says about `pid`.
    fn bsd_info(pid: libc::pid_t) -> Option<libc::proc_bsdinfo> {
        // SAFETY: proc_bsdinfo is plain data; zeroes are a valid value.
        let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::proc_bsdinfo>() as i32;
        // SAFETY: `info` is writable for `size` bytes for the whole call.
        let n = unsafe {
            libc::proc_pidinfo(
                pid,
                libc::PROC_PIDTBSDINFO,
                0,
                (&mut info as *mut libc::proc_bsdinfo).cast(),
                size,
            )
        };
        (n == size).then_some(info)
    }

    /// `sysctl` on `mib` into `buf` (none: a size query); bytes written or needed.
    fn sysctl(mib: &mut [libc::c_int; 3], buf: Option<&mut [u8]>) -> Option<usize> {
        let (ptr, mut len) = match buf {
            Some(b) => (b.as_mut_ptr().cast(), b.len()),
            None => (std::ptr::null_mut(), 0),
        };
        // SAFETY: `ptr` is null (a size query) or writable for `len` bytes;
        // the kernel sets `len` to what it wrote or needs.
        let rc =
            unsafe { libc::sysctl(mib.as_mut_ptr(), 3, ptr, &mut len, std::ptr::null_mut(), 0) };
        (rc == 0).then_some(len)
    }

    /// The raw `KERN_PROCARGS2` buffer of `pid` (same-user processes only).
    fn procargs2(pid: libc::pid_t) -> Option<Vec<u8>> {
        let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, pid];
        let mut buf = vec![0u8; sysctl(&mut mib, None).filter(|n| *n > 0)?];
        let written = sysctl(&mut mib, Some(&mut buf))?;
        buf.truncate(written);
        Some(buf)
    }

    /// Every process of this user but this one whose arguments are readable.
    pub(crate) fn processes(_proc_dir: &Path) -> impl Iterator<Item = Process> {
        let me = std::process::id();
        let uid = rustix::process::getuid().as_raw();
        all_pids().into_iter().filter_map(move |pid| {
            let pid_u = u32::try_from(pid).ok().filter(|p| *p != 0 && *p != me)?;
            (bsd_info(pid)?.pbi_uid == uid).then(|| process(Path::new(""), pid_u))?
        })
    }

    /// One process, if its arguments are readable.
    pub(crate) fn process(_proc_dir: &Path, pid: u32) -> Option<Process> {
        let (cmdline, environ) = parse_procargs2(&procargs2(libc::pid_t::try_from(pid).ok()?)?)?;
        Some(Process {
            pid,
            cmdline,
            environ,
        })
    }

    /// Whether `pid` is a live (non-zombie) process.
    pub(crate) fn pid_alive(_proc_dir: &Path, pid: u32) -> bool {
        let Some(id) = libc::pid_t::try_from(pid).ok().and_then(Pid::from_raw) else {
            return false;
        };
        // Signal 0 only checks that the process exists; EPERM means it does.
        let exists = matches!(test_kill_process(id), Ok(()) | Err(Errno::PERM));
        exists && bsd_info(id.as_raw_nonzero().get()).is_none_or(|i| i.pbi_status != libc::SZOMB)
    }

    /// The parent of `pid` (`proc_pidinfo`).
    pub(crate) fn parent_pid(_proc_dir: &Path, pid: u32) -> Option<u32> {
        Some(bsd_info(libc::pid_t::try_from(pid).ok()?)?.pbi_ppid)
    }

    /// When `pid` started, in microseconds since the epoch.
    pub(crate) fn start_time(_proc_dir: &Path, pid: u32) -> Option<u64> {
        let info = bsd_info(libc::pid_t::try_from(pid).ok()?)?;
        Some(info.pbi_start_tvsec * 1_000_000 + info.pbi_start_tvusec)
    }

    /// Whether `pid` has a child (`proc_listchildpids`).
    pub(crate) fn has_children(_proc_dir: &Path, pid: u32) -> Option<bool> {
        let pid = libc::pid_t::try_from(pid).ok()?;
        let mut kids: [libc::pid_t; 16] = [0; 16];
        let size = libc::c_int::try_from(std::mem::size_of_val(&kids)).ok()?;
        // SAFETY: the buffer is valid for `size` bytes, and the call writes
        // at most that many.
        let n = unsafe { libc::proc_listchildpids(pid, kids.as_mut_ptr().cast(), size) };
        (n >= 0).then_some(n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn procargs(argc: i32, rest: &[u8]) -> Vec<u8> {
        let mut buf = argc.to_ne_bytes().to_vec();
        buf.extend_from_slice(rest);
        buf
    }

    #[test]
    fn procargs2_yields_argv_and_environment() {
        let buf = procargs(
            3,
            b"/usr/local/bin/bun\0\0\0\0bun\0run\0telegram\0TELEGRAM_STATE_DIR=/s\0HOME=/h\0\0junk\0",
        );
        let (argv, env) = parse_procargs2(&buf).unwrap();
        assert_eq!(argv, b"bun\0run\0telegram\0");
        assert_eq!(env, b"TELEGRAM_STATE_DIR=/s\0HOME=/h\0");
    }

    #[test]
    fn procargs2_survives_short_and_odd_buffers() {
        assert_eq!(parse_procargs2(b"\x01\x00"), None);
        let (argv, env) = parse_procargs2(&procargs(5, b"/bin/x\0\0a\0b")).unwrap();
        assert_eq!(
            (argv.as_slice(), env.as_slice()),
            (&b"a\0b\0"[..], &b""[..])
        );
        let (argv, env) = parse_procargs2(&procargs(-1, b"/bin/x\0A=1\0")).unwrap();
        assert_eq!((argv.as_slice(), env.as_slice()), (&b""[..], &b"A=1\0"[..]));
        assert!(parse_procargs2(&procargs(i32::MAX, b"")).is_some());
    }

    #[test]
    fn an_interactive_shell_is_a_shell_given_options_only() {
        let bare: &[&[u8]] = &[
            b"bash\0",
            b"-bash\0",
            b"/bin/zsh\0-l\0",
            b"-zsh\0",
            b"/usr/bin/fish\0--login\0-i\0",
            b"bash\0--norc\0--noprofile\0",
            b"sh\0-i\0",
        ];
        for argv in bare {
            assert!(
                is_interactive_shell(argv),
                "{:?}",
                String::from_utf8_lossy(argv)
            );
        }
        let agents: &[&[u8]] = &[
            b"bash\0/home/u/fake-agent\0--session-id\0x\0",
            b"bash\0-c\0claude --resume x\0",
            b"/bin/bash\0-lc\0claude\0",
            b"zsh\0-o\0vi\0",
            b"bash\0--rcfile\0/tmp/rc\0",
            b"bash\0--init-file=/tmp/rc\0",
            b"claude\0",
            b"node\0/usr/lib/claude/cli.js\0",
            b"bashful\0",
            b"\xff\0",
            b"",
        ];
        for argv in agents {
            assert!(
                !is_interactive_shell(argv),
                "{:?}",
                String::from_utf8_lossy(argv)
            );
        }
    }

    #[test]
    fn this_test_is_no_bare_shell_and_neither_is_a_gone_pid() {
        let proc_dir = Path::new(PROC_DIR);
        assert!(!bare_shell(proc_dir, std::process::id()));
        assert!(!bare_shell(proc_dir, u32::MAX));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_bare_shell_is_an_interactive_shell_with_no_child() {
        let tmp = tempfile::tempdir().unwrap();
        let children = |pid: u32, text: &str| {
            let task = tmp.path().join(format!("{pid}/task/{pid}"));
            std::fs::create_dir_all(&task).unwrap();
            std::fs::write(task.join("children"), text).unwrap();
        };
        fake_process(tmp.path(), 20, b"-bash\0", b"", 'S');
        children(20, "");
        fake_process(tmp.path(), 21, b"-bash\0", b"", 'S');
        children(21, "4711 ");
        fake_process(tmp.path(), 22, b"-bash\0", b"", 'S');
        fake_process(tmp.path(), 23, b"bash\0/srv/agent\0", b"", 'S');
        children(23, "");
        assert!(bare_shell(tmp.path(), 20));
        assert!(!bare_shell(tmp.path(), 21), "its agent runs in it");
        assert!(!bare_shell(tmp.path(), 22), "no children file: not known");
        assert!(!bare_shell(tmp.path(), 23), "a script is an agent");
        assert_eq!(has_children(tmp.path(), 21), Some(true));
    }

    #[test]
    fn a_shell_with_a_child_has_children() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let here = has_children(Path::new(PROC_DIR), std::process::id());
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(here, Some(true));
    }

    #[cfg(target_os = "linux")]
    fn fake_process(root: &Path, pid: u32, cmdline: &[u8], environ: &[u8], state: char) {
        let dir = root.join(pid.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cmdline"), cmdline).unwrap();
        std::fs::write(dir.join("environ"), environ).unwrap();
        let stat =
            format!("{pid} (x y) {state} 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 4242 20");
        std::fs::write(dir.join("stat"), stat).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn scan_reads_command_lines_environments_and_start_times() {
        let tmp = tempfile::tempdir().unwrap();
        fake_process(tmp.path(), 10, b"bun\0run\0telegram\0", b"A=1\0B=2\0", 'S');
        fake_process(tmp.path(), 11, b"sleep\0", b"", 'Z');
        std::fs::create_dir_all(tmp.path().join("self")).unwrap();
        let mut seen: Vec<Process> = processes(tmp.path()).collect();
        seen.sort_by_key(|p| p.pid);
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].command_text(), "bun run telegram ");
        assert_eq!(seen[0].env_value("B").as_deref(), Some(&b"2"[..]));
        assert_eq!(seen[0].env_value("A=1"), None);
        assert_eq!(seen[1].env_value("B"), None);
        assert!(pid_alive(tmp.path(), 10));
        assert!(!pid_alive(tmp.path(), 11), "a zombie is not alive");
        assert!(!pid_alive(tmp.path(), 12));
        assert_eq!(start_time(tmp.path(), 10), Some(4242));
        assert_eq!(parent_pid(tmp.path(), 10), Some(1));
        assert_eq!(parent_pid(tmp.path(), 12), None);
        fake_process(
            tmp.path(),
            13,
            b"/usr/local/bin/agent-deck-watchdog\0--once\0",
            b"",
            'S',
        );
        let one = process(tmp.path(), 13).unwrap();
        assert_eq!(one.program_name(), Some("agent-deck-watchdog".as_ref()));
        assert!(process(tmp.path(), 14).is_none());
    }

    #[test]
    fn this_process_is_alive_and_has_a_start_time() {
        let root = Path::new("/proc");
        assert!(pid_alive(root, std::process::id()));
        assert!(start_time(root, std::process::id()).is_some());
    }

    #[test]
    fn a_child_s_parent_is_this_process() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let parent = parent_pid(Path::new(PROC_DIR), child.id());
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(parent, Some(std::process::id()));
    }
}
