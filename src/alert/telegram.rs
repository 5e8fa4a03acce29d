//! The Telegram Bot API client: `sendMessage` for escalations and
//! `getWebhookInfo` for the deaf-but-alive poller check (SPEC §6.5). Each
//! request runs on a short-lived thread the caller waits on together with
//! shutdown, so a stop abandons a hung request; a 429 is waited out once. The
//! bot token is part of the URL, so nothing from the HTTP client or the
//! server is logged before [`loggable`] redacts it.

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{bounded, select};
use serde_json::Value;

use crate::config::{Config, Secret};
use crate::sys::shutdown::Shutdown;

const TIMEOUT: Duration = Duration::from_secs(10);
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// At most this many characters of an error reach a log line.
const MAX_LOGGED: usize = 200;
/// At most this much of an answer's body is read.
const MAX_BODY: u64 = 64 * 1024;

/// The Bot API at one base URL, with one timeout; the token is per call.
pub(crate) struct BotApi {
    agent: ureq::Agent,
    base: String,
}

/// What one request came to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ApiAnswer<T> {
    Ok(T),
    /// HTTP 429, with the `retry_after` it asked for (bounded).
    RetryAfter(Duration),
    /// Anything else, fit for a log line (the token redacted).
    Failed(String),
}

impl BotApi {
    pub(crate) fn new(base: &str, timeout: Duration) -> BotApi {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .new_agent();
        BotApi {
            agent,
            base: base.to_owned(),
        }
    }

    fn url(&self, token: &str, method: &str) -> String {
        format!("{}/bot{token}/{method}", self.base)
    }

    /// `sendMessage` of `text` to `chat_id`.
    fn send_message(&self, token: &str, chat_id: &str, text: &str) -> ApiAnswer<()> {
        let form = [("chat_id", chat_id), ("text", text)];
        let sent = self
            .agent
            .post(&self.url(token, "sendMessage"))
            .send_form(form);
        answer(token, sent, |_| Some(()))
    }

    /// `getWebhookInfo`'s `pending_update_count`: updates awaiting the poller.
    pub(crate) fn pending_updates(&self, token: &str) -> ApiAnswer<u64> {
        let sent = self.agent.get(&self.url(token, "getWebhookInfo")).call();
        answer(token, sent, |v| {
            let count = v["result"]["pending_update_count"].as_u64();
            count.filter(|_| v["ok"] == true)
        })
    }

    /// `getMe`: the bot's username, proving the token (for `doctor --online`).
    pub(crate) fn bot_name(&self, token: &str) -> ApiAnswer<String> {
        let sent = self.agent.get(&self.url(token, "getMe")).call();
        answer(token, sent, |v| {
            Some(v["result"]["username"].as_str()?.to_owned())
        })
    }

    /// `getChat`: whether the bot can see `chat_id` (for `doctor --online`).
    pub(crate) fn chat_reachable(&self, token: &str, chat_id: &str) -> ApiAnswer<()> {
        let url = self.url(token, "getChat");
        let sent = self.agent.get(&url).query("chat_id", chat_id).call();
        answer(token, sent, |v| (v["ok"] == true).then_some(()))
    }
}

/// An HTTP answer: 200 that `read` understands is `Ok`, 429 `RetryAfter`, else `Failed`.
fn answer<T>(
    token: &str,
    sent: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    read: impl FnOnce(&Value) -> Option<T>,
) -> ApiAnswer<T> {
    let mut resp = match sent {
        Ok(resp) => resp,
        Err(e) => return ApiAnswer::Failed(loggable(token, &e.to_string())),
    };
    let status = resp.status().as_u16();
    let limited = resp.body_mut().with_config().limit(MAX_BODY);
    let body = match limited.read_to_string() {
        Ok(body) => body,
        Err(e) if status == 200 => return ApiAnswer::Failed(loggable(token, &e.to_string())),
        Err(_) => String::new(),
    };
    let json: Value = serde_json::from_str(&body).unwrap_or_default();
    match status {
        200 => match read(&json) {
            Some(v) => ApiAnswer::Ok(v),
            None => ApiAnswer::Failed(format!("unexpected answer: {}", loggable(token, &body))),
        },
        429 => ApiAnswer::RetryAfter(retry_after(&json)),
        _ => ApiAnswer::Failed(format!("HTTP {status}: {}", loggable(token, &body))),
    }
}

/// Runs `request` on a short-lived thread (or here, if none can be had) and
/// waits for its outcome or for shutdown (`None`: abandoned).
pub(crate) fn unless_shutdown<T: Send + 'static>(
    shutdown: &Shutdown,
    request: impl Fn() -> ApiAnswer<T> + Send + Sync + 'static,
) -> Option<ApiAnswer<T>> {
    if shutdown.is_set() {
        return None;
    }
    let request = Arc::new(request);
    let run = request.clone();
    let (tx, rx) = bounded(1);
    let spawned = std::thread::Builder::new()
        .name("telegram".into())
        .spawn(move || {
            // Nobody listens any more after a shutdown; that is fine.
            let _ = tx.send(run());
        });
    let Ok(handle) = spawned else {
        return Some(request());
    };
    select! {
        recv(rx) -> outcome => {
            let _ = handle.join();
            Some(outcome.unwrap_or_else(|_| ApiAnswer::Failed("the request thread panicked".into())))
        }
        recv(shutdown.receiver()) -> _ => None,
    }
}

/// The escalation messenger: `sendMessage` to the configured chat.
pub(crate) struct Telegram {
    api: BotApi,
    token: Secret,
    chat_id: String,
    shutdown: Shutdown,
}

impl Telegram {
    /// A messenger when both a chat id and a token are configured.
    pub(crate) fn from_config(cfg: &Config, shutdown: Shutdown) -> Option<Arc<Telegram>> {
        let chat_id = cfg.telegram_chat_id.clone()?;
        let Some(token) = cfg.telegram_token.clone() else {
            log::warn!(
                "TELEGRAM_ESCALATION_CHAT_ID is set but no bot token was found (TELEGRAM_BOT_TOKEN or ~/.claude/channels/telegram/.env); escalations go to escalations.log and escalate.sh only"
            );
            return None;
        };
        Some(Arc::new(Telegram {
            api: BotApi::new(&cfg.telegram_api_base, TIMEOUT),
            token,
            chat_id,
            shutdown,
        }))
    }

    /// One attempt, unless shutdown comes first (`None`: abandoned).
    fn attempt(self: &Arc<Self>, text: &str) -> Option<ApiAnswer<()>> {
        let (me, text) = (self.clone(), text.to_owned());
        unless_shutdown(&self.shutdown, move || {
            me.api.send_message(me.token.expose(), &me.chat_id, &text)
        })
    }

    /// Sends `text`, waiting out one 429; the outcome goes to the log only.
    pub(crate) fn notify(self: &Arc<Self>, text: &str) {
        let outcome = match self.attempt(text) {
            Some(ApiAnswer::RetryAfter(wait)) => {
                let secs = wait.as_secs_f64();
                log::warn!("telegram rate-limited the escalation; retrying in {secs:.0}s");
                // A shutdown during the wait makes the retry an abandoned attempt.
                self.shutdown.sleep(wait);
                self.attempt(text)
            }
            other => other,
        };
        let chat = &self.chat_id;
        match outcome {
            None => log::warn!(
                "telegram escalation dropped: shutting down; the alert is in escalations.log"
            ),
            Some(ApiAnswer::Ok(())) => log::info!("telegram escalation sent to chat {chat}"),
            Some(ApiAnswer::RetryAfter(_)) => {
                log::warn!("telegram escalation not delivered: still rate-limited")
            }
            Some(ApiAnswer::Failed(why)) => {
                log::warn!("telegram escalation not delivered ({why}); it is in escalations.log")
            }
        }
    }
}

/// `text` fit for a log line: every `token` cut out first (so a clip can
/// never leave part of it behind), then printable and clipped.
fn loggable(token: &str, text: &str) -> String {
    if token.is_empty() {
        crate::text::printable(text, MAX_LOGGED)
    } else {
        crate::text::printable(&text.replace(token, "<token>"), MAX_LOGGED)
    }
}

/// `parameters.retry_after` of a Telegram 429 body, bounded; 1s if absent.
fn retry_after(body: &Value) -> Duration {
    let secs = body["parameters"]["retry_after"]
        .as_f64()
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
        let telegram = Arc::new(Telegram {
            api: BotApi::new(&base, TIMEOUT),
            token: Secret::default(),
            chat_id: "42".into(),
            shutdown: shutdown.clone(),
        });
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
        let body = |text: &str| serde_json::from_str(text).unwrap_or_default();
        let given = r#"{"ok":false,"error_code":429,"description":"Too Many Requests","parameters":{"retry_after":3}}"#;
        assert_eq!(retry_after(&body(given)), Duration::from_secs(3));
        assert_eq!(
            retry_after(&body(r#"{"parameters":{"retry_after":99999}}"#)),
            MAX_RETRY_AFTER
        );
        assert_eq!(retry_after(&body("garbage")), Duration::from_secs(1));
    }

    /// A loopback server that answers one request with `status` and
    /// `body`, and hands back the request line it received.
    fn serve_once(
        status: &'static str,
        body: &'static str,
    ) -> (String, crossbeam_channel::Receiver<String>) {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = bounded(1);
        std::thread::spawn(move || {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            let mut reader = BufReader::new(stream);
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
            }
            let _ = write!(
                reader.get_mut(),
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = tx.send(first);
        });
        (base, rx)
    }

    #[test]
    fn pending_update_count_is_read_from_get_webhook_info() {
        let (base, request) = serve_once(
            "200 OK",
            r#"{"ok":true,"result":{"url":"","has_custom_certificate":false,"pending_update_count":7}}"#,
        );
        let api = BotApi::new(&base, Duration::from_secs(5));
        assert_eq!(api.pending_updates(TOKEN), ApiAnswer::Ok(7));
        let line = request.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(
            line.starts_with(&format!("GET /bot{TOKEN}/getWebhookInfo ")),
            "{line}"
        );
    }

    #[test]
    fn odd_webhook_answers_are_failures_with_the_token_redacted() {
        let (base, _) = serve_once("200 OK", r#"{"ok":false}"#);
        let api = BotApi::new(&base, Duration::from_secs(5));
        assert!(matches!(api.pending_updates(TOKEN), ApiAnswer::Failed(_)));
        let (base, _) = serve_once(
            "401 Unauthorized",
            r#"{"ok":false,"description":"Unauthorized: 7777777:SECRET-BOT-TOKEN-abc"}"#,
        );
        let api = BotApi::new(&base, Duration::from_secs(5));
        let ApiAnswer::Failed(why) = api.pending_updates(TOKEN) else {
            panic!("a 401 is a failure");
        };
        assert!(why.starts_with("HTTP 401"), "{why}");
        assert!(!why.contains("SECRET"), "{why}");
        let (base, _) = serve_once(
            "429 Too Many Requests",
            r#"{"parameters":{"retry_after":2}}"#,
        );
        let api = BotApi::new(&base, Duration::from_secs(5));
        assert_eq!(
            api.pending_updates(TOKEN),
            ApiAnswer::RetryAfter(Duration::from_secs(2))
        );
    }

    #[test]
    fn a_refused_connection_is_a_failure_without_the_token() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let api = BotApi::new(&base, Duration::from_secs(5));
        let ApiAnswer::Failed(why) = api.pending_updates(TOKEN) else {
            panic!("nobody listens");
        };
        assert!(!why.contains("SECRET"), "{why}");
    }
}
