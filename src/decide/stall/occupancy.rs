//! How full a Claude conversation's context window is (SPEC §15's proactive
//! clear), pure, from the tail of its transcript.

use serde::Deserialize;

/// How much of its window the conversation fills, from its transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reading {
    /// `input + cache_creation + cache_read` tokens of the last reply.
    pub tokens: u64,
    /// The model that gave it.
    pub model: String,
}

/// One record of a Claude transcript, as far as occupancy needs it.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Record {
    #[serde(rename = "type")]
    kind: String,
    subtype: Option<String>,
    is_sidechain: bool,
    #[serde(rename = "agent_id")]
    agent_id: Option<serde_json::Value>,
    is_api_error_message: bool,
    message: Option<Message>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Message {
    model: Option<String>,
    usage: Option<Usage>,
    content: serde_json::Value,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Usage {
    input_tokens: u64,
    cache_creation_input_tokens: u64,
    cache_read_input_tokens: u64,
}

/// The occupancy the tail of a transcript shows: the last main-chain reply
/// that is not Claude's synthetic error record. `None` when there is none,
/// or when a compaction or a `/clear` came after it (the reading is old).
/// The first line of `tail` may be cut: it is skipped unless `whole`.
pub(crate) fn occupancy(tail: &str, whole: bool) -> Option<Reading> {
    let lines = tail.lines().skip(usize::from(!whole));
    for line in lines.collect::<Vec<_>>().into_iter().rev() {
        let Ok(r) = serde_json::from_str::<Record>(line) else {
            continue;
        };
        if r.is_sidechain || r.agent_id.is_some() {
            continue;
        }
        match r.kind.as_str() {
            "system" if r.subtype.as_deref() == Some("compact_boundary") => return None,
            "user" if reset_command(r.message.as_ref()) => return None,
            "assistant" => {
                let Some(m) = r.message else { continue };
                let model = m.model.unwrap_or_default();
                if r.is_api_error_message || model == "<synthetic>" {
                    continue;
                }
                let u = m.usage?;
                let tokens =
                    u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;
                return Some(Reading { tokens, model });
            }
            _ => {}
        }
    }
    None
}

/// A user record that is a `/clear` or a `/compact` typed at the prompt.
fn reset_command(m: Option<&Message>) -> bool {
    let text = m.map(|m| m.content.to_string()).unwrap_or_default();
    ["/clear", "/compact"]
        .iter()
        .any(|c| text.contains(&format!("<command-name>{c}</command-name>")))
}

/// Where the window the occupancy is measured against came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WindowFrom {
    /// `CONTEXT_WINDOW_TOKENS`.
    Setting,
    /// The largest window the model may have.
    Model,
    /// A reading past the model's smaller window proves the larger one.
    Observed,
}

impl WindowFrom {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            WindowFrom::Setting => "setting",
            WindowFrom::Model => "model",
            WindowFrom::Observed => "observed",
        }
    }
}

/// The large window, and the models that may run with it (Claude's 1M
/// context, on by a beta for the Sonnet 4 family): a prefix matches.
const MILLION: u64 = 1_000_000;
const MAY_HAVE_A_MILLION: [&str; 6] = [
    "claude-sonnet-4",
    "claude-opus-4-6",
    "claude-opus-4-7",
    "claude-opus-4-8",
    "claude-opus-5",
    "claude-sonnet-5",
];
/// The window of the models known never to have more.
const SMALL: [(&str, u64); 4] = [
    ("claude-opus-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("claude-3-5", 200_000),
    ("claude-3-opus", 200_000),
];

/// The window `reading` is measured against: the setting, else the largest
/// the model may have (an unknown model may have the largest of all), so
/// that a wrong guess errs late, never early.
pub(crate) fn window(reading: &Reading, setting: Option<u64>) -> (u64, WindowFrom) {
    if let Some(w) = setting {
        return (w, WindowFrom::Setting);
    }
    let m = reading.model.as_str();
    let small = SMALL
        .iter()
        .find(|(p, _)| m.starts_with(p))
        .map(|&(_, w)| w);
    match small {
        Some(w) if !MAY_HAVE_A_MILLION.iter().any(|p| m.starts_with(p)) => {
            if reading.tokens > w {
                (MILLION, WindowFrom::Observed)
            } else {
                (w, WindowFrom::Model)
            }
        }
        _ => (MILLION, WindowFrom::Model),
    }
}

/// The occupancy in whole percent of `window`.
pub(crate) fn percent(reading: &Reading, window: u64) -> u64 {
    reading.tokens.saturating_mul(100) / window.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(model: &str, input: u64, creation: u64, read: u64) -> String {
        format!(
            r#"{{"type":"assistant","message":{{"model":"{model}","usage":{{"input_tokens":{input},"cache_creation_input_tokens":{creation},"cache_read_input_tokens":{read}}},"content":[]}}}}"#
        )
    }

    const SYNTHETIC: &str = r#"{"type":"assistant","isApiErrorMessage":true,"error":"invalid_request","message":{"model":"<synthetic>","stop_reason":"stop_sequence","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"content":[{"type":"text","text":"Prompt is too long"}]}}"#;

    #[test]
    fn occupancy_counts_the_cache_and_skips_the_synthetic_error() {
        let tail = format!(
            "{{\"cut line\n{}\n{}\n",
            reply("claude-opus-4-5", 3, 15_000, 181_000),
            SYNTHETIC
        );
        let r = occupancy(&tail, false).unwrap();
        assert_eq!(r.tokens, 196_003);
        assert_eq!(r.model, "claude-opus-4-5");
        assert_eq!(percent(&r, 200_000), 98);
    }

    #[test]
    fn a_sidechain_reply_is_not_the_conductor_s() {
        let side = r#"{"type":"assistant","isSidechain":true,"message":{"model":"claude-haiku-4-5","usage":{"input_tokens":9,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}"#;
        let tail = format!("{}\n{side}\n", reply("claude-opus-4-5", 1, 2, 3));
        assert_eq!(occupancy(&tail, true).unwrap().tokens, 6);
    }

    #[test]
    fn after_a_compaction_or_a_clear_the_last_reading_is_old() {
        let boundary = r#"{"type":"system","subtype":"compact_boundary","compactMetadata":{"trigger":"manual","preTokens":190000}}"#;
        let tail = format!("{}\n{boundary}\n", reply("claude-opus-4-5", 1, 2, 190_000));
        assert_eq!(occupancy(&tail, true), None);
        let clear = r#"{"type":"user","message":{"role":"user","content":"<command-name>/clear</command-name>"}}"#;
        let tail = format!("{}\n{clear}\n", reply("claude-opus-4-5", 1, 2, 190_000));
        assert_eq!(occupancy(&tail, true), None);
        assert_eq!(occupancy("", true), None);
        assert_eq!(occupancy("not json\n", true), None);
    }

    #[test]
    fn the_window_errs_late_never_early() {
        let r = |model: &str, tokens| Reading {
            tokens,
            model: model.to_owned(),
        };
        // A model that may run with 1M is measured against 1M.
        assert_eq!(
            window(&r("claude-sonnet-4-5", 150_000), None),
            (MILLION, WindowFrom::Model)
        );
        // One that never has more is measured against its own.
        assert_eq!(
            window(&r("claude-opus-4-5", 150_000), None),
            (200_000, WindowFrom::Model)
        );
        // A reading past it proves it wrong: the larger window.
        assert_eq!(
            window(&r("claude-opus-4-5", 450_000), None),
            (MILLION, WindowFrom::Observed)
        );
        // An unknown model may have the largest.
        assert_eq!(
            window(&r("mystery", 10), None),
            (MILLION, WindowFrom::Model)
        );
        // The setting wins, both ways.
        assert_eq!(
            window(&r("claude-sonnet-4-5", 150_000), Some(200_000)),
            (200_000, WindowFrom::Setting)
        );
        assert_eq!(percent(&r("x", 800_000), MILLION), 80);
    }
}
