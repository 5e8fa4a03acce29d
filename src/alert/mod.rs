//! Alerts: telling a human, once, through `escalate.sh` and Telegram.

pub(crate) mod escalate;
pub(crate) mod telegram;
