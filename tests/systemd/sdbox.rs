//! The box: a real systemd as PID 1 in a container (`systemd-nspawn -b`)
//! over a copy-on-write view of this machine's root (an overlay whose lower
//! layer is `/`), with a user manager for one user (linger on). The user is
//! created inside the box, so the host's `/etc/passwd` never changes.
//!
//! Each box has a temp state dir of its own under `/var/tmp` (the overlay's
//! upper and work dirs, the nspawn log). Dropping the box stops nspawn
//! (SIGTERM, then SIGKILL past a deadline), unmounts the overlay and deletes
//! the dir, also when the test failed. It never touches the host's own
//! systemd, users or files outside its dir.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::support::{kill, output_within, wait_until};

/// Why a systemd test is ignored, and what it says when it cannot run.
pub(crate) const NEEDS: &str = "needs root and systemd-nspawn: run as root, \
    cargo test --test systemd -- --ignored --test-threads=1";

/// The user whose manager runs the unit.
pub(crate) const USER: &str = "adwd";

/// How long systemd may take to boot, and the user manager to come up.
const BOOT_LIMIT: Duration = Duration::from_secs(90);
/// How long one command run in the box may take before the test fails.
const CALL_LIMIT: Duration = Duration::from_secs(60);
/// How long nspawn may take to stop after SIGTERM before it is killed.
const STOP_LIMIT: Duration = Duration::from_secs(20);

pub(crate) struct SdBox {
    /// Removed on drop, after the overlay is unmounted.
    dir: Option<tempfile::TempDir>,
    /// The overlay's mount point: the box's `/` seen from the host.
    root: PathBuf,
    nspawn: Child,
    /// The container's PID 1 (systemd), as the host sees it.
    pub pid1: i32,
    pub uid: u32,
}

impl SdBox {
    /// Boots the box and its user manager; fails the test saying why when
    /// this is not root, nspawn is missing, or systemd does not come up.
    pub(crate) fn boot() -> SdBox {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let euid = unsafe { libc::geteuid() };
        assert_eq!(euid, 0, "{NEEDS} (not root: euid {euid})");
        ensure_nspawn();
        let dir = tempfile::Builder::new()
            .prefix("adwd-systemd")
            .tempdir_in("/var/tmp")
            .expect("box state dir");
        let root = dir.path().join("root");
        for sub in ["up", "wk", "root"] {
            fs::create_dir_all(dir.path().join(sub)).expect("box dirs");
        }
        let opts = format!(
            "lowerdir=/,upperdir={},workdir={}",
            dir.path().join("up").display(),
            dir.path().join("wk").display()
        );
        let mounted = Command::new("mount")
            .args(["-t", "overlay", "overlay", "-o", &opts])
            .arg(&root)
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            mounted,
            "{NEEDS} (cannot mount the overlay on {})",
            root.display()
        );
        // nspawn wants an empty /dev; the whiteouts stay in the upper layer.
        for entry in fs::read_dir(root.join("dev")).expect("read the box's /dev") {
            let path = entry.expect("a /dev entry").path();
            let _ = fs::remove_dir_all(&path).or_else(|_| fs::remove_file(&path));
        }
        let log = fs::File::create(dir.path().join("nspawn.log")).expect("nspawn log");
        let nspawn = Command::new("systemd-nspawn")
            .args(["--keep-unit", "--register=no", "-M", "adwdbox", "-b"])
            .args(["--console=pipe", "--directory"])
            .arg(&root)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("nspawn log"))
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("start systemd-nspawn");
        let mut sdbox = SdBox {
            dir: Some(dir),
            root,
            pid1: 0,
            nspawn,
            uid: 0,
        };
        sdbox.pid1 = sdbox.find_pid1();
        sdbox.wait_booted();
        sdbox.add_user();
        sdbox
    }

    /// The host path of `inside`, a path in the box.
    pub(crate) fn host_path(&self, inside: &str) -> PathBuf {
        self.root.join(inside.trim_start_matches('/'))
    }

    /// The user's home, in the box.
    pub(crate) fn home(&self) -> String {
        format!("/home/{USER}")
    }

    /// Runs `script` with `/bin/sh` as root in the box.
    pub(crate) fn root_sh(&self, script: &str) -> Output {
        let mut cmd = self.enter();
        cmd.args(["/bin/sh", "-c", script]);
        output_within(cmd, CALL_LIMIT)
    }

    /// Runs `script` with `/bin/sh` as the user in the box, in their home,
    /// with `XDG_RUNTIME_DIR` set as a login would.
    pub(crate) fn user_sh(&self, script: &str) -> Output {
        let mut cmd = self.enter();
        let script = format!(
            "export XDG_RUNTIME_DIR=/run/user/{}; cd; {script}",
            self.uid
        );
        cmd.args(["su", "-s", "/bin/sh", USER, "-c", &script]);
        output_within(cmd, CALL_LIMIT)
    }

    /// Starts `script` with `/bin/sh` as the user in the box, in their
    /// home, stdin a pipe the caller holds; it does not wait.
    pub(crate) fn spawn_user(&self, script: &str) -> Child {
        let mut cmd = self.enter();
        cmd.args(["su", "-s", "/bin/sh", USER, "-c", &format!("cd; {script}")])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd.spawn().expect("start a process in the box")
    }

    /// [`SdBox::user_sh`]'s stdout, failing the test unless it exits 0.
    pub(crate) fn user_ok(&self, script: &str) -> String {
        let out = self.user_sh(script);
        assert!(
            out.status.success(),
            "`{script}` as {USER} in the box: {:?}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `nsenter` into every namespace of the box's PID 1.
    fn enter(&self) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.args(["-t", &self.pid1.to_string(), "-a"])
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::null());
        cmd
    }

    /// The child of nspawn that runs systemd: the container's PID 1. Not
    /// just any child: nspawn first forks a helper that soon exits.
    fn find_pid1(&self) -> i32 {
        let parent = self.nspawn.id() as i32;
        let mut pid1 = None;
        let found = wait_until(BOOT_LIMIT, || {
            pid1 = children_of(parent).into_iter().find(|pid| {
                fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "systemd")
            });
            pid1.is_some()
        });
        assert!(
            found,
            "{NEEDS} (nspawn started no PID 1: {})",
            self.nspawn_log()
        );
        pid1.unwrap_or_default()
    }

    fn wait_booted(&self) {
        let mut state = String::new();
        let up = wait_until(BOOT_LIMIT, || {
            let out = self.root_sh("systemctl is-system-running");
            state = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            state == "running" || state == "degraded"
        });
        assert!(
            up,
            "{NEEDS} (the box did not boot: {state:?})\n{}",
            self.nspawn_log()
        );
    }

    /// Creates the user in the box, turns linger on and waits until their
    /// manager answers.
    fn add_user(&mut self) {
        let out = self.root_sh(&format!(
            "useradd -m -s /bin/sh {USER} && loginctl enable-linger {USER} && id -u {USER}"
        ));
        assert!(
            out.status.success(),
            "cannot add {USER} in the box: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.uid = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("uid");
        let unit = format!("user@{}.service", self.uid);
        let up = wait_until(BOOT_LIMIT, || {
            self.user_sh("systemctl --user is-system-running")
                .stdout
                .starts_with(b"running")
        });
        let state = self.root_sh(&format!("systemctl status {unit}"));
        assert!(
            up,
            "{NEEDS} ({unit} did not come up)\n{}",
            String::from_utf8_lossy(&state.stdout)
        );
    }

    fn nspawn_log(&self) -> String {
        let path = self.dir.as_ref().map(|d| d.path().join("nspawn.log"));
        path.and_then(|p| fs::read_to_string(p).ok())
            .unwrap_or_default()
    }
}

impl Drop for SdBox {
    fn drop(&mut self) {
        let pid = self.nspawn.id() as i32;
        kill(pid, libc::SIGTERM);
        let stopped = wait_until(STOP_LIMIT, || matches!(self.nspawn.try_wait(), Ok(Some(_))));
        if !stopped {
            // Its whole process group: nspawn and what it left behind.
            kill(-pid, libc::SIGKILL);
            let _ = self.nspawn.wait();
        }
        let unmounted = unmount(&self.root, false) || unmount(&self.root, true);
        if unmounted {
            drop(self.dir.take());
        } else {
            // Never delete through a mounted view of the host's root.
            let kept = self.dir.take().map(tempfile::TempDir::keep);
            eprintln!(
                "systemd box: cannot unmount {}; left {kept:?}",
                self.root.display()
            );
        }
    }
}

/// Installs `systemd-container` with apt when `systemd-nspawn` is missing.
fn ensure_nspawn() {
    let found = || {
        Command::new("systemd-nspawn")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if found() {
        return;
    }
    let _ = Command::new("/bin/sh")
        .args([
            "-c",
            "apt-get update -qq && apt-get install -y -qq systemd-container",
        ])
        .stdout(Stdio::null())
        .status();
    assert!(
        found(),
        "{NEEDS} (no systemd-nspawn, and apt could not install systemd-container)"
    );
}

fn unmount(path: &Path, lazy: bool) -> bool {
    let mut cmd = Command::new("umount");
    if lazy {
        cmd.arg("-l");
    }
    cmd.arg(path)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Pids whose parent is `parent`.
fn children_of(parent: i32) -> Vec<i32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // The ppid is the second field after the parenthesised name.
            let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            after.split_whitespace().nth(1) == Some(&parent.to_string())
        })
        .collect()
}
