//! The checks of the host: kernel notifications and Telegram.

use std::time::Duration;

use super::Check;
use crate::alert::telegram::{ApiAnswer, BotApi};
use crate::config::Config;

/// `kernel notifications`: room for the hook watch (inotify on Linux).
#[cfg(target_os = "linux")]
pub(super) fn kernel_notifications() -> Check {
    const NAME: &str = "kernel notifications";
    let limit = |name: &str| -> Option<u64> {
        std::fs::read_to_string(format!("/proc/sys/fs/inotify/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let (Some(max_instances), Some(max_watches)) =
        (limit("max_user_instances"), limit("max_user_watches"))
    else {
        return Check::warn(
            NAME,
            "the inotify limits are unreadable: the hook watch may fall back to scanning",
            "check that /proc/sys/fs/inotify is mounted and readable",
        );
    };
    let (instances, watches) = inotify_in_use();
    let detail = format!(
        "inotify: {instances} of {max_instances} instances and {watches} of {max_watches} watches in use by this user"
    );
    let scarce = |used: u64, max: u64| max == 0 || used.saturating_mul(10) >= max.saturating_mul(9);
    if scarce(instances, max_instances) || scarce(watches, max_watches) {
        return Check::warn(
            NAME,
            format!("{detail}: under 10 % free, so the watch may fall back to scanning every 250 ms"),
            "raise fs.inotify.max_user_instances and max_user_watches (sysctl -w, and in /etc/sysctl.d/ to keep it)",
        );
    }
    Check::ok(NAME, detail)
}

/// This user's inotify instances and watches: the `anon_inode:inotify`
/// descriptors under `/proc/*/fd` and their `inotify wd:` lines in `fdinfo`.
#[cfg(target_os = "linux")]
fn inotify_in_use() -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;
    let me = rustix::process::geteuid().as_raw();
    let (mut instances, mut watches) = (0, 0);
    let entries = |d: &Path| std::fs::read_dir(d).into_iter().flatten().flatten();
    let procs = entries(Path::new(crate::sys::process_table::PROC_DIR));
    for p in procs.filter(|p| p.metadata().is_ok_and(|m| m.uid() == me)) {
        for fd in entries(&p.path().join("fd")) {
            let is_inotify =
                std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == "anon_inode:inotify");
            if is_inotify {
                instances += 1;
                let info = p.path().join("fdinfo").join(fd.file_name());
                watches += std::fs::read_to_string(info).map_or(0, |t| {
                    t.lines().filter(|l| l.starts_with("inotify wd:")).count() as u64
                });
            }
        }
    }
    (instances, watches)
}

/// `kernel notifications` on macOS: kqueue has no per-user limit to run out of.
#[cfg(not(target_os = "linux"))]
pub(crate) fn kernel_notifications() -> Check {
    Check::ok("kernel notifications", "kqueue")
}

/// A bot token's shape: `<bot id>:<secret>`, the secret 30 or more of
/// `A-Z a-z 0-9 _ -`.
pub(super) fn token_shaped(token: &str) -> bool {
    token.split_once(':').is_some_and(|(id, secret)| {
        !id.is_empty()
            && id.bytes().all(|b| b.is_ascii_digit())
            && secret.len() >= 30
            && secret
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    })
}

/// `Telegram`: off, or a well-formed token (and with `--online`, a bot that
/// answers and sees the chat). The token is never shown.
pub(super) fn telegram(cfg: &Config, online: bool) -> Check {
    const NAME: &str = "Telegram";
    let Some(chat) = &cfg.telegram_chat_id else {
        return Check::ok(NAME, "off (TELEGRAM_ESCALATION_CHAT_ID is empty)");
    };
    let Some(token) = &cfg.telegram_token else {
        return Check::fail(
            NAME,
            format!("chat {chat} is set but there is no bot token: escalations cannot be sent"),
            "set TELEGRAM_BOT_TOKEN, or the TELEGRAM_BOT_TOKEN= line of ~/.claude/channels/telegram/.env",
        );
    };
    let token = token.expose();
    if !token_shaped(token) {
        return Check::fail(
            NAME,
            "the bot token is set but is not shaped like one (<digits>:<30+ letters, digits, _ or ->)",
            "copy the token again from @BotFather, without quotes or spaces",
        );
    }
    if !online {
        return Check::ok(
            NAME,
            format!("chat {chat}, token set (shape checked; --online asks Telegram)"),
        );
    }
    let api = BotApi::new(&cfg.telegram_api_base, Duration::from_secs(10));
    let later = |d: Duration| {
        let secs = d.as_secs();
        Check::warn(
            NAME,
            format!("Telegram asked to wait {secs} s (429): not checked"),
            "run `agent-deck-watchdog doctor --online` again in a minute",
        )
    };
    let bot = match api.bot_name(token) {
        ApiAnswer::Ok(name) => name,
        ApiAnswer::RetryAfter(d) => return later(d),
        ApiAnswer::Failed(why) => {
            return Check::fail(
                NAME,
                format!("getMe failed: {why}"),
                "check the token with @BotFather, and that this host reaches TELEGRAM_API_BASE",
            )
        }
    };
    match api.chat_reachable(token, chat) {
        ApiAnswer::RetryAfter(d) => later(d),
        ApiAnswer::Failed(why) => Check::fail(
            NAME,
            format!("bot @{bot} cannot see chat {chat}: {why}"),
            "add the bot to that chat (or send it /start), and check TELEGRAM_ESCALATION_CHAT_ID",
        ),
        ApiAnswer::Ok(()) => Check::ok(NAME, format!("bot @{bot} answers and sees chat {chat}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bot_token_is_digits_colon_and_a_long_secret() {
        assert!(token_shaped("123456789:AAHk_ex-ampleSECRETexampleSECRET12"));
        assert!(!token_shaped("123:abc"));
        assert!(!token_shaped("abc:AAHk_ex-ampleSECRETexampleSECRET12"));
        assert!(!token_shaped(
            "123456789:AAHk ex ampleSECRETexampleSECRET12"
        ));
        assert!(!token_shaped(
            "\"123456789:AAHkexampleSECRETexampleSECRET12\""
        ));
    }
}
