//! Alerts: telling a human, once, through `escalate.sh` and Telegram.

pub(crate) mod escalate;
pub(crate) mod telegram;

/// Sends the text of an alert somewhere a human reads it ([`telegram`]);
/// [`escalate`] holds one.
pub(crate) trait Messenger: Send + Sync {
    fn notify(&self, text: &str);
}
