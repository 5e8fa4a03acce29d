//! The systemd notify protocol: `READY=1`, `STATUS=…`, `WATCHDOG=1`,
//! `STOPPING=1` as datagrams to `$NOTIFY_SOCKET`.
//!
//! The socket path and the watchdog interval come from [`Config`] (read once
//! at start); without `NOTIFY_SOCKET` every call is a no-op, and so is every
//! call on a system other than Linux (systemd is Linux only). A failed send
//! is logged once and never stops the daemon. A fatal error's last word
//! ([`last_status`]) is given the socket by its caller: there may be no
//! `Config` by then.

use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::sys::say_once::{SayOnce, ONCE};

/// The least watchdog interval honoured. systemd sets `WATCHDOG_USEC`; a
/// value below a second (0 and 1 have been seen) would make the main loop
/// spin to ping in time, so it is raised to a second with a warning rather
/// than refused: refusing would leave the fleet unwatched in a restart loop.
const MIN_WATCHDOG: Duration = Duration::from_secs(1);

/// How often to ping for a watchdog interval of `usec`: half of it, and
/// never more often than every half second.
fn ping_interval(usec: u64) -> Duration {
    let interval = Duration::from_micros(usec);
    if interval < MIN_WATCHDOG {
        log::warn!(
            "WATCHDOG_USEC={usec} is below a second; pinging the systemd watchdog as if it were {}s (set WatchdogSec= to a second or more)",
            MIN_WATCHDOG.as_secs()
        );
    }
    interval.max(MIN_WATCHDOG) / 2
}

pub(crate) struct SdNotify {
    socket: Option<(UnixDatagram, String)>,
    /// Half the systemd watchdog interval, when one is configured.
    ping_every: Option<Duration>,
    last_ping: Option<Instant>,
    last_status: String,
    failing: SayOnce<()>,
}

impl SdNotify {
    pub(crate) fn from_config(cfg: &Config) -> SdNotify {
        let socket = cfg
            .notify_socket
            .as_ref()
            .filter(|_| cfg!(target_os = "linux"));
        let socket = socket.and_then(|path| match UnixDatagram::unbound() {
            Ok(s) => Some((s, path.clone())),
            Err(e) => {
                log::warn!(
                    "cannot create a socket for systemd notifications ({e}); running without them"
                );
                None
            }
        });
        SdNotify {
            socket,
            ping_every: cfg.watchdog_usec.map(ping_interval),
            last_ping: None,
            last_status: String::new(),
            failing: SayOnce::new(),
        }
    }

    fn send(&mut self, msg: &str) {
        let Some((sock, path)) = &self.socket else {
            return;
        };
        if let Err(e) = send_to(sock, path, msg) {
            if self.failing.allows(&(), ONCE) {
                log::warn!("systemd notification to {path} failed ({e}); carrying on without");
            }
        }
    }

    /// Both trigger threads are armed.
    pub(crate) fn ready(&mut self) {
        self.send("READY=1\n");
        self.last_ping = Some(Instant::now());
    }

    /// A one-line summary; sent only when it changed.
    pub(crate) fn status(&mut self, line: &str) {
        if line != self.last_status {
            self.last_status = line.to_owned();
            let line = crate::text::printable(line, usize::MAX);
            self.send(&format!("STATUS={line}\n"));
        }
    }

    /// The main loop went round: ping the systemd watchdog if it is due.
    pub(crate) fn alive(&mut self) {
        let Some(every) = self.ping_every else {
            return;
        };
        if self.last_ping.is_none_or(|t| t.elapsed() >= every) {
            self.send("WATCHDOG=1\n");
            self.last_ping = Some(Instant::now());
        }
    }

    /// The longest the main loop may sleep and still ping in time.
    pub(crate) fn max_sleep(&self, default: Duration) -> Duration {
        self.ping_every.map_or(default, |p| p.min(default))
    }

    pub(crate) fn stopping(&mut self) {
        self.send("STOPPING=1\n");
    }
}

/// Sends one notification to the socket at `path` (`@` for the abstract
/// namespace).
fn send_to(sock: &UnixDatagram, path: &str, msg: &str) -> std::io::Result<()> {
    match path.strip_prefix('@') {
        // The abstract namespace, which only Linux has (and the socket is
        // only made there).
        #[cfg(target_os = "linux")]
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
                .and_then(|addr| sock.send_to_addr(msg.as_bytes(), &addr))
        }
        #[cfg(not(target_os = "linux"))]
        Some(_) => Err(std::io::ErrorKind::Unsupported.into()),
        None => sock.send_to(msg.as_bytes(), path),
    }
    .map(drop)
}

/// A fatal error's message as the unit's `STATUS=`, sent just before the
/// process exits, to `socket` (`NOTIFY_SOCKET`; nothing without it). The
/// error is also logged, but a process that exits at once leaves journald
/// unable to tie the line to the unit, and `systemctl status` missed it in
/// about one first start in five (systemd 252); the manager reads a
/// notification before the exit of the process that sent it, and `status`
/// shows a failed unit's last `Status:`. Best effort: the process is ending.
pub(crate) fn last_status(socket: Option<&str>, message: &str) {
    let Some(path) = socket.filter(|_| cfg!(target_os = "linux")) else {
        return;
    };
    let line = message.lines().next().unwrap_or_default();
    let line = crate::text::printable(line, usize::MAX);
    if let Ok(sock) = UnixDatagram::unbound() {
        let _ = send_to(&sock, path, &format!("STATUS={line}\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Env;

    fn with_usec(usec: &str) -> SdNotify {
        let env: Env = [("HOME", "/nonexistent"), ("WATCHDOG_USEC", usec)]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        SdNotify::from_config(&Config::from_env(&env).unwrap())
    }

    #[test]
    fn a_sub_second_watchdog_usec_does_not_make_the_loop_spin() {
        let idle = Duration::from_secs(5);
        for usec in ["0", "1", "999999"] {
            assert_eq!(
                with_usec(usec).max_sleep(idle),
                Duration::from_millis(500),
                "WATCHDOG_USEC={usec}"
            );
        }
        assert_eq!(with_usec("4000000").max_sleep(idle), Duration::from_secs(2));
        assert_eq!(with_usec("60000000").max_sleep(idle), idle);
    }

    #[test]
    fn a_fatal_error_is_the_last_status_under_systemd() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify.sock");
        let sock = UnixDatagram::bind(&path).unwrap();
        sock.set_nonblocking(true).unwrap();
        let path = path.display().to_string();
        last_status(
            Some(&path),
            "agent-deck-watchdog: RATE_LIMIT_MAX: bad\nmore",
        );
        let mut buf = [0; 256];
        let n = sock.recv(&mut buf).expect("a notification");
        assert_eq!(
            String::from_utf8_lossy(&buf[..n]),
            "STATUS=agent-deck-watchdog: RATE_LIMIT_MAX: bad\n"
        );
        last_status(None, "agent-deck-watchdog: not under systemd");
        assert!(sock.recv(&mut buf).is_err(), "sent without NOTIFY_SOCKET");
    }
}
