//! Telegram escalation: `sendMessage` to the configured chat.
//!
//! Runs only on the escalation worker thread, with a bounded timeout. Each
//! request runs on a short-lived thread of its own that the worker waits on
//! together with the shutdown token, so a stop never waits for a hung
//! request: the request is abandoned (the alert is in `escalations.log`) and
//! its thread ends by itself within the timeout, touching nothing shared. A
//! 429 answer is honoured by waiting its `retry_after` (bounded,
//! interruptible by shutdown) and trying once more. The bot token is part of
//! the request URL, so nothing from the HTTP client or the server is ever
//! logged as is: [`loggable`] redacts the token first, then escapes control
//! characters and clips.

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{bounded, select};

use crate::alert::escalate::Messenger;
use crate::config::{Config, Secret};
use crate::sys::shutdown::Shutdown;

const TIMEOUT: Duration = Duration::from_secs(10);
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// At most this many characters of an error (after redaction and escaping)
/// reach a log line.
const MAX_LOGGED: usize = 200;

pub struct Telegram {
    endpoint: Arc<Endpoint>,
    shutdown: Shutdown,
}

/// Where and how to send; shared with the thread that runs a request.
struct Endpoint {
    agent: ureq::Agent,
    base: String,
    token: Secret,
    chat_id: String,
}

/// What one attempt came to.
enum Sent {
    Ok,
    RetryAfter(Duration),
    Failed(String),
}

impl Telegram {
    /// A messenger when both a chat id and a token are configured.
    pub fn from_config(cfg: &Config, shutdown: Shutdown) -> Option<Arc<dyn Messenger>> {
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
        Some(Arc::new(Telegram {
            endpoint: Arc::new(Endpoint {
                agent,
                base: cfg.telegram_api_base.clone(),
                token,
                chat_id,
            }),
            shutdown,
        }))
    }

    /// One attempt, unless shutdown comes first (`None`: abandoned).
    fn attempt(&self, text: &str) -> Option<Sent> {
        let (tx, rx) = bounded(1);
        let endpoint = self.endpoint.clone();
        let owned = text.to_owned();
        let request = std::thread::Builder::new()
            .name("telegram".into())
            .spawn(move || {
                // Nobody listens any more after a shutdown; that is fine.
                let _ = tx.send(endpoint.attempt(&owned));
            });
        let Ok(request) = request else {
            // No thread to spare: send from here, bounded by the timeout.
            return Some(self.endpoint.attempt(text));
        };
        select! {
            recv(rx) -> sent => {
                let _ = request.join();
                Some(sent.unwrap_or_else(|_| Sent::Failed("the request thread panicked".into())))
            }
            recv(self.shutdown.receiver()) -> _ => None,
        }
    }
}

impl Endpoint {
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
                    loggable(self.token.expose(), &body)
                ))
            }
            Err(e) => Sent::Failed(loggable(self.token.expose(), &e.to_string())),
        }
    }
}

impl Messenger for Telegram {
    fn notify(&self, text: &str) {
        const DROPPED: &str =
            "telegram escalation dropped: shutting down; the alert is in escalations.log";
        if self.shutdown.is_set() {
            return log::warn!("{DROPPED}");
        }
        let outcome = match self.attempt(text) {
            Some(Sent::RetryAfter(wait)) => {
                log::warn!(
                    "telegram rate-limited the escalation; retrying in {:.0}s",
                    wait.as_secs_f64()
                );
                if !self.shutdown.sleep(wait) {
                    return log::warn!("{DROPPED}");
                }
                self.attempt(text)
            }
            other => other,
        };
        match outcome {
            None => log::warn!("{DROPPED}"),
            Some(Sent::Ok) => {
                log::info!("telegram escalation sent to chat {}", self.endpoint.chat_id)
            }
            Some(Sent::RetryAfter(_)) => {
                log::warn!("telegram escalation not delivered: still rate-limited")
            }
            Some(Sent::Failed(why)) => {
                log::warn!("telegram escalation not delivered ({why}); it is in escalations.log")
            }
        }
    }
}

/// `text` fit for a log line: every `token` cut out first (so a clip can
/// never leave part of it behind), then control characters escaped (no
/// forged lines or journald prefixes), then clipped to [`MAX_LOGGED`]
/// characters without splitting an escape.
fn loggable(token: &str, text: &str) -> String {
    let redacted = if token.is_empty() {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(text.replace(token, "<token>"))
    };
    let mut out = String::new();
    let mut shown = 0;
    for c in redacted.chars() {
        let piece: String = if c.is_control() {
            c.escape_default().collect()
        } else {
            c.into()
        };
        let width = piece.chars().count();
        if shown + width > MAX_LOGGED {
            out.push('…');
            break;
        }
        shown += width;
        out.push_str(&piece);
    }
    out
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

    const TOKEN: &str = "7777777:SECRET-BOT-TOKEN-abc";

    #[test]
    fn a_token_straddling_the_clip_is_redacted_whole() {
        let body = format!("{}{TOKEN} and more", "x".repeat(MAX_LOGGED - 10));
        let logged = loggable(TOKEN, &body);
        assert!(!logged.contains("7777777"), "{logged}");
        assert!(!logged.contains("SECRET"), "{logged}");
        assert!(logged.contains("<token>"), "{logged}");
        assert!(logged.chars().count() <= MAX_LOGGED + 1, "{logged}");
    }

    #[test]
    fn control_characters_in_an_error_are_escaped_and_clipped_whole() {
        let logged = loggable(TOKEN, "bad\n<0>forged\r\u{1b}[31mred");
        assert_eq!(logged, "bad\\n<0>forged\\r\\u{1b}[31mred");
        let long = "\n".repeat(MAX_LOGGED);
        let clipped = loggable(TOKEN, &long);
        assert_eq!(clipped, format!("{}…", "\\n".repeat(MAX_LOGGED / 2)));
    }

    #[test]
    fn a_shutdown_abandons_a_hung_request_at_once() {
        // A server that accepts the connection and never answers.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (accepted_tx, accepted) = bounded(1);
        std::thread::spawn(move || {
            let held = listener.accept();
            let _ = accepted_tx.send(());
            std::thread::sleep(TIMEOUT + Duration::from_secs(5));
            drop(held);
        });
        let shutdown = Shutdown::new().unwrap();
        let telegram = Telegram {
            endpoint: Arc::new(Endpoint {
                agent: ureq::Agent::config_builder()
                    .timeout_global(Some(TIMEOUT))
                    .build()
                    .new_agent(),
                base,
                token: Secret::default(),
                chat_id: "42".into(),
            }),
            shutdown: shutdown.clone(),
        };
        let sender = std::thread::spawn(move || telegram.notify("alert"));
        accepted.recv_timeout(Duration::from_secs(5)).unwrap();
        let asked = std::time::Instant::now();
        shutdown.trigger();
        sender.join().unwrap();
        assert!(
            asked.elapsed() < Duration::from_secs(1),
            "{:?}",
            asked.elapsed()
        );
    }

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
