//! The checks of a full context window (SPEC §15 "Surfaces"): which
//! critical conductors agent-deck's policy clears (`clear_on_compact`), and
//! whether the proactive clear is on. Informational: never a warning.

use super::Check;
use crate::config::{clears_on_compact_at, conductor_meta, Config};
use crate::fleet::cache::Fleet;

/// `clear_on_compact`: each critical conductor, whether agent-deck's policy
/// clears it and where that was read, and what each remedy is.
pub(super) fn clear_on_compact(cfg: &Config, fleet: Option<&Fleet>) -> Check {
    const NAME: &str = "clear_on_compact";
    let Some(fleet) = fleet else {
        return Check::ok(NAME, "unknown: agent-deck could not list the fleet");
    };
    let critical = fleet.critical();
    let each: Vec<String> = critical
        .iter()
        .filter_map(|s| {
            let meta = conductor_meta(cfg, s.conductor_name()?, &s.path);
            let yes = if clears_on_compact_at(meta.as_deref()) {
                "yes"
            } else {
                "no"
            };
            let from = meta.map_or("no meta.json: the default".into(), |m| {
                m.display().to_string()
            });
            Some(format!("{} {yes} ({from})", s.title))
        })
        .collect();
    let detail = if each.is_empty() {
        "no critical conductor (tool claude, group conductor, title conductor-<name>): a full context is compacted, then resumed".to_owned()
    } else {
        format!(
            "{}; a full context is cleared and re-briefed where yes, compacted then resumed elsewhere",
            each.join(", ")
        )
    };
    Check::ok(NAME, detail)
}

/// `proactive clear`: off, or the threshold and the window it is read
/// against.
pub(super) fn proactive_clear(cfg: &Config) -> Check {
    const NAME: &str = "proactive clear";
    let detail = match (cfg.context_clear_at_pct, cfg.context_window_tokens) {
        (None, _) => "off (CONTEXT_CLEAR_AT_PCT unset)".to_owned(),
        (Some(pct), Some(window)) => format!(
            "at {pct}% of {window} tokens (CONTEXT_WINDOW_TOKENS), for a clear_on_compact conductor at rest"
        ),
        (Some(pct), None) => format!(
            "at {pct}% of the largest window the model may have (CONTEXT_WINDOW_TOKENS unset), for a clear_on_compact conductor at rest"
        ),
    };
    Check::ok(NAME, detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::doctor::CheckStatus;

    #[test]
    fn the_proactive_clear_says_off_or_its_threshold_and_window() {
        let tmp = tempfile::tempdir().unwrap();
        let mut cfg = crate::config::test_config(tmp.path());
        let line = |cfg: &Config| proactive_clear(cfg).line();
        assert_eq!(
            line(&cfg),
            "✓ proactive clear: off (CONTEXT_CLEAR_AT_PCT unset)"
        );
        cfg.context_clear_at_pct = Some(80);
        assert!(
            line(&cfg)
                .starts_with("✓ proactive clear: at 80% of the largest window the model may have"),
            "{}",
            line(&cfg)
        );
        cfg.context_window_tokens = Some(200_000);
        assert!(
            line(&cfg)
                .starts_with("✓ proactive clear: at 80% of 200000 tokens (CONTEXT_WINDOW_TOKENS)"),
            "{}",
            line(&cfg)
        );
        assert_eq!(proactive_clear(&cfg).status, CheckStatus::Ok);
    }
}
