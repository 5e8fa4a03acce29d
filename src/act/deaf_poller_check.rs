//! The deaf-but-alive poller check of SPEC §6.5, run off the main thread:
//! for a conductor whose poller process exists, read the bot token from
//! `<TELEGRAM_STATE_DIR>/.env`, ask `getWebhookInfo` how many updates wait,
//! and note the answer in the book's streak.
//!
//! Checks run one at a time on their own worker ("webhook-checks"), so a slow
//! or hung Bot API holds neither the main loop nor a nudge or a removal; a
//! check of a conductor whose last one has not finished is not queued again,
//! and a shutdown abandons the request in flight. The token is read here,
//! goes into the URL path of one in-process HTTPS request and is dropped: it
//! is never stored, logged, recorded, put in an argv or handed to a child,
//! and the client redacts it from every error. This module only observes;
//! the patrol decides the restart from the streak on the main thread.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::act::context::Context;
use crate::act::telegram_pollers::PollerSeen;
use crate::alert::telegram::{unless_shutdown, ApiAnswer, BotApi};
use crate::config::deck_files::{env_value, read_small};
use crate::decide::patrol_rules::{self, WebhookAnswer};
use crate::fleet::session::Session;
use crate::sys::worker::Worker;

/// How long one `getWebhookInfo` call may take.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(5);

/// The check worker, and which conductors it has queued or running.
pub(crate) struct WebhookWorker {
    worker: Worker<PollerSeen>,
    busy: Arc<Mutex<BTreeSet<String>>>,
    /// `POLLER_DEAF_CHECKS`.
    pub checks: u32,
    /// A streak with no check for this long starts over.
    pub max_gap: f64,
}

impl WebhookWorker {
    /// The check worker, when `POLLER_DEAF_CHECKS` > 0.
    pub(crate) fn spawn(ctx: Context) -> std::io::Result<Option<WebhookWorker>> {
        let cfg = ctx.cfg.clone();
        let checks = cfg.poller_deaf_checks;
        if checks == 0 {
            return Ok(None);
        }
        // Three missed checks, and the time two slow answers may add.
        let max_gap = 3.0 * cfg.poller_check_interval.as_secs_f64() + 2.0 * TIMEOUT.as_secs_f64();
        let mut asker = Asker {
            api: BotApi::new(&cfg.telegram_api_base, TIMEOUT).into(),
            ctx,
            checks,
            max_gap,
            no_token: BTreeSet::new(),
            unanswered: BTreeSet::new(),
        };
        let busy = Arc::new(Mutex::new(BTreeSet::new()));
        let done = busy.clone();
        let worker = Worker::spawn("webhook-checks", move |seen: PollerSeen| {
            let outcome =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| asker.check(&seen)));
            // Even after a bug, the conductor must be checked again.
            let id = &seen.session.id;
            done.lock().remove(id);
            if outcome.is_err() {
                log::error!(
                    "the webhook check of {id} panicked (a bug); checking it again at the next check"
                );
            }
        })?;
        Ok(Some(WebhookWorker {
            worker,
            busy,
            checks,
            max_gap,
        }))
    }

    /// Queues a check of a conductor whose poller runs, unless one for the
    /// same conductor is queued or running.
    pub(crate) fn submit(&self, seen: PollerSeen) {
        if self.busy.lock().insert(seen.session.id.clone()) {
            self.worker.submit(seen);
        }
    }
}

/// What the checks need, and what they already warned about, so a lasting
/// problem is one warning, not one a minute.
struct Asker {
    api: Arc<BotApi>,
    ctx: Context,
    checks: u32,
    max_gap: f64,
    /// Conductors whose bot token could not be found.
    no_token: BTreeSet<String>,
    /// Conductors whose last answer was unknown.
    unanswered: BTreeSet<String>,
}

impl Asker {
    fn check(&mut self, seen: &PollerSeen) {
        if self.ctx.shutdown.is_set() {
            return;
        }
        let c = &seen.session;
        let env_file = seen.state_dir.join(".env");
        let Some(token) = bot_token(&env_file) else {
            if self.no_token.insert(c.id.clone()) {
                log::warn!(
                    "{} ({}): no usable TELEGRAM_BOT_TOKEN in {}; its pending Telegram updates are not checked",
                    c.id,
                    c.title,
                    env_file.display()
                );
            }
            return;
        };
        self.no_token.remove(&c.id);
        let ask = self.api.clone();
        let Some(outcome) =
            unless_shutdown(&self.ctx.shutdown, move || ask.pending_updates(&token))
        else {
            return;
        };
        let answer = match outcome {
            ApiAnswer::Ok(n) => {
                self.unanswered.remove(&c.id);
                WebhookAnswer::Pending(n)
            }
            ApiAnswer::RetryAfter(_) => self.unknown(c, "rate-limited (HTTP 429)"),
            ApiAnswer::Failed(why) => self.unknown(c, &why),
        };
        let now = self.ctx.clock.now();
        let streak = patrol_rules::observe_webhook(
            &mut self.ctx.state.lock(),
            &c.id,
            answer,
            now,
            self.checks,
            self.max_gap,
        );
        if let WebhookAnswer::Pending(n) = answer {
            log::debug!(
                "{} ({}): {n} Telegram update(s) unread, {streak} of {} checks in a row",
                c.id,
                c.title,
                self.checks
            );
        }
    }

    fn unknown(&mut self, c: &Session, why: &str) -> WebhookAnswer {
        if self.unanswered.insert(c.id.clone()) {
            log::warn!(
                "getWebhookInfo for {} ({}) failed: {why}; the streak stays as it was; asking again at the next check",
                c.id,
                c.title
            );
        } else {
            log::debug!("getWebhookInfo for {} failed again: {why}", c.id);
        }
        WebhookAnswer::Unknown
    }
}

/// The `TELEGRAM_BOT_TOKEN` of an env file, if it has one in the shape of a
/// bot token (`<digits>:<letters, digits, _ or ->`): anything else could
/// change the request's URL. A missing file is silent, an unreadable one
/// warned about (rate-limited); the value itself never reaches a log.
fn bot_token(env_file: &Path) -> Option<String> {
    let text = read_small(env_file, "its pending Telegram updates are not checked")?;
    env_value(&text, "TELEGRAM_BOT_TOKEN").filter(|t| is_bot_token(t))
}

fn is_bot_token(t: &str) -> bool {
    t.split_once(':').is_some_and(|(bot, secret)| {
        !bot.is_empty()
            && bot.bytes().all(|b| b.is_ascii_digit())
            && !secret.is_empty()
            && secret
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_token_shaped_value_is_used() {
        assert!(is_bot_token("123456:AAH-x_y9"));
        for bad in [
            "",
            "123456",
            ":abc",
            "12a:abc",
            "123:",
            "123:abc/sendMessage",
            "123:abc?x=1",
            "123:abc def",
            "123:abc#",
        ] {
            assert!(!is_bot_token(bad), "{bad:?}");
        }
    }

    #[test]
    fn the_token_is_read_like_agent_deck_reads_env_files() {
        let tmp = tempfile::tempdir().unwrap();
        let env = tmp.path().join(".env");
        assert_eq!(bot_token(&env), None, "missing");
        std::fs::write(&env, "# bot\nexport TELEGRAM_BOT_TOKEN=\"42:abc-DEF_9\"\n").unwrap();
        assert_eq!(bot_token(&env).as_deref(), Some("42:abc-DEF_9"));
        std::fs::write(&env, "TELEGRAM_BOT_TOKEN=42:abc/../x\n").unwrap();
        assert_eq!(bot_token(&env), None, "not a token's shape");
        std::fs::remove_file(&env).unwrap();
        crate::sys::fs::mkfifo(&env);
        assert_eq!(bot_token(&env), None, "a FIFO is skipped, not waited on");
    }
}
