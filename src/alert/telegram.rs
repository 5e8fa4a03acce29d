//! Telegram escalation: `sendMessage` to the configured chat.
//!
//! Runs only on the escalation worker thread, with a bounded timeout. A 429
//! answer is honoured by waiting its `retry_after` (bounded, interruptible by
//! shutdown) and trying once more. The bot token is part of the request URL,
//! so no error from the HTTP client is ever logged as is: every message passes
//! through [`Telegram::redact`] first.

use std::time::Duration;

use crate::alert::escalate::Messenger;
use crate::config::{Config, Secret};
use crate::sys::shutdown::Shutdown;

const TIMEOUT: Duration = Duration::from_secs(10);
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

pub struct Telegram {
    agent: ureq::Agent,
    base: String,
    token: Secret,
    chat_id: String,
    shutdown: Shutdown,
}

/// What one attempt came to.
enum Sent {
    Ok,
    RetryAfter(Duration),
    Failed(String),
}

impl Telegram {
    /// A messenger when both a chat id and a token are configured.
    pub fn from_config(cfg: &Config, shutdown: Shutdown) -> Option<std::sync::Arc<dyn Messenger>> {
        let chat_id = cfg.telegram_chat_id.clone()?;
        let Some(token) = cfg.telegram_token.clone() else {
            log::warn!(
                "TELEGRAM_ESCALATION_CHAT_ID is set but no bot token was found (TELEGRAM_BOT_TOKEN or ~/.claude/channels/telegram/.env); escalations go to escalations.log and escalate.sh only"
            );
            return None;
        };
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(TIMEOUT))
            .http_status_as_error(false)
            .build()
            .new_agent();
        Some(std::sync::Arc::new(Telegram {
            agent,
            base: cfg.telegram_api_base.clone(),
            token,
            chat_id,
            shutdown,
        }))
    }

    /// `text` with the token cut out.
    fn redact(&self, text: &str) -> String {
        let token = self.token.expose();
        if token.is_empty() {
            text.to_owned()
        } else {
            text.replace(token, "<token>")
        }
    }

    fn attempt(&self, text: &str) -> Sent {
        let url = format!("{}/bot{}/sendMessage", self.base, self.token.expose());
        let form = [("chat_id", self.chat_id.as_str()), ("text", text)];
        match self.agent.post(&url).send_form(form) {
            Ok(mut resp) => {
                let status = resp.status().as_u16();
                if status == 200 {
                    return Sent::Ok;
                }
                let body = resp.body_mut().read_to_string().unwrap_or_default();
                if status == 429 {
                    return Sent::RetryAfter(retry_after(&body));
                }
                Sent::Failed(format!(
                    "HTTP {status}: {}",
                    self.redact(&body.chars().take(200).collect::<String>())
                ))
            }
            Err(e) => Sent::Failed(self.redact(&e.to_string())),
        }
    }
}

impl Messenger for Telegram {
    fn notify(&self, text: &str) {
        if self.shutdown.is_set() {
            // Each attempt may take 10s, longer than a stop may take; the alert is in escalations.log.
            return log::warn!("telegram escalation dropped: shutting down");
        }
        let outcome = match self.attempt(text) {
            Sent::RetryAfter(wait) => {
                log::warn!(
                    "telegram rate-limited the escalation; retrying in {:.0}s",
                    wait.as_secs_f64()
                );
                if !self.shutdown.sleep(wait) {
                    return log::warn!("telegram escalation dropped: shutting down");
                }
                self.attempt(text)
            }
            other => other,
        };
        match outcome {
            Sent::Ok => log::info!("telegram escalation sent to chat {}", self.chat_id),
            Sent::RetryAfter(_) => {
                log::warn!("telegram escalation not delivered: still rate-limited")
            }
            Sent::Failed(why) => {
                log::warn!("telegram escalation not delivered ({why}); it is in escalations.log")
            }
        }
    }
}

/// `parameters.retry_after` of a Telegram 429 body, bounded; 1s if absent.
fn retry_after(body: &str) -> Duration {
    let secs = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/parameters/retry_after")
                .and_then(serde_json::Value::as_f64)
        })
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(1.0);
    crate::sys::clock::clamped(secs.min(MAX_RETRY_AFTER.as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_read_and_bounded() {
        let body = r#"{"ok":false,"error_code":429,"description":"Too Many Requests","parameters":{"retry_after":3}}"#;
        assert_eq!(retry_after(body), Duration::from_secs(3));
        assert_eq!(
            retry_after(r#"{"parameters":{"retry_after":99999}}"#),
            MAX_RETRY_AFTER
        );
        assert_eq!(retry_after("garbage"), Duration::from_secs(1));
    }
}
