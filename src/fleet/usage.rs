//! `agent-deck [-p P] usage --json` (1.16.11 and later, `usage_cmd.go`):
//! the plan windows Claude's statusLine reports, per provider, as
//! `{"providers":[{"id","windows":[{"kind","used_percentage","resets_at"?}],
//! "stale",…}]}` (`internal/quota/model.go`). Only the `claude` provider's
//! five-hour and seven-day windows are read: a spend limit past 100 is
//! overage, not a block. Below 1.16.11 there is no `usage`: the word falls
//! through to the TUI, so it must never be asked.

use serde::Deserialize;

/// One plan window, as far as a reset needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Window {
    pub used_percentage: f64,
    /// Unix seconds; absent when Claude's statusLine hook does not feed it.
    pub resets_at: Option<f64>,
    /// The provider's answer is `stale`.
    pub stale: bool,
}

#[derive(Deserialize)]
struct Report {
    providers: Vec<Provider>,
}

#[derive(Deserialize)]
struct Provider {
    #[serde(default)]
    id: String,
    #[serde(default)]
    windows: Vec<Wire>,
    #[serde(default)]
    stale: bool,
}

#[derive(Deserialize)]
struct Wire {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    used_percentage: f64,
    resets_at: Option<f64>,
}

/// The Claude plan windows in a `usage --json` answer; why it is unreadable.
pub(crate) fn parse(text: &str) -> Result<Vec<Window>, String> {
    let report: Report = serde_json::from_str(text.trim()).map_err(|e| e.to_string())?;
    let claude = report.providers.into_iter().filter(|p| p.id == "claude");
    Ok(claude
        .flat_map(|p| {
            let stale = p.stale;
            let plan = p.windows.into_iter().filter(|w| w.kind != "spend_limit");
            plan.map(move |w| Window {
                used_percentage: w.used_percentage,
                resets_at: w.resets_at,
                stale,
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_claude_plan_windows_are_read() {
        let text = r#"{"providers":[
            {"id":"claude","label":"Claude","updated_at":1,"stale":false,"windows":[
                {"kind":"five_hour","label":"5h","used_percentage":100,"resets_at":1774760400},
                {"kind":"seven_day","label":"7d","used_percentage":41.5},
                {"kind":"spend_limit","label":"spend","used_percentage":130,"resets_at":1}]},
            {"id":"codex","stale":false,"windows":[
                {"kind":"five_hour","used_percentage":100,"resets_at":2}]}]}"#;
        let w = |used, resets_at| Window {
            used_percentage: used,
            resets_at,
            stale: false,
        };
        assert_eq!(
            parse(text),
            Ok(vec![w(100.0, Some(1_774_760_400.0)), w(41.5, None)])
        );
        assert_eq!(parse(r#"{"providers":[]}"#), Ok(vec![]));
        for garbled in [
            "",
            "null",
            "[]",
            "\u{1b}[?1049hError: error creating cancelreader",
        ] {
            assert!(parse(garbled).is_err(), "{garbled:?}");
        }
    }
}
