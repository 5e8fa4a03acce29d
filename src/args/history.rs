//! `history --since`: `all`, or a duration (see [`super::duration`]).

use super::duration::{self, Bounds};
use crate::error::{Error, Result};
use crate::ops::history::Since;

/// `--since`: more than zero, up to 100 years.
const SINCE_BOUNDS: Bounds = Bounds {
    zero_ok: false,
    max_s: 100.0 * 365.0 * 86_400.0,
};

/// `--since`: `all`, or a duration (see [`SINCE_BOUNDS`]).
pub(super) fn since(raw: &str) -> Result<Since> {
    let t = raw.trim();
    if t == "all" {
        return Ok(Since::All);
    }
    let secs = duration::parse("--since", raw, SINCE_BOUNDS).map_err(|_| {
        Error::usage(format!(
            "--since {raw:?} is invalid: expected a duration such as 30s, 90m, 6h, 2d, \
             plain seconds, or all"
        ))
    })?;
    let plain = t.chars().all(|c| c.is_ascii_digit() || c == '.');
    let label = if plain { format!("{t}s") } else { t.to_owned() };
    Ok(Since::Last { secs, label })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_accepts_units_plain_seconds_and_all() {
        let secs = |raw: &str| match since(raw).unwrap() {
            Since::Last { secs, .. } => secs,
            Since::All => f64::INFINITY,
        };
        assert_eq!(secs("30s"), 30.0);
        assert_eq!(secs("90m"), 5400.0);
        assert_eq!(secs("6h"), 21_600.0);
        assert_eq!(secs("2d"), 172_800.0);
        assert_eq!(secs("1.5d"), 129_600.0);
        assert_eq!(secs("5400"), 5400.0);
        assert_eq!(secs(" 7d "), 604_800.0);
        assert_eq!(secs("all"), f64::INFINITY);
        assert_eq!(since("5400").unwrap().describe(), "the last 5400s");
        assert_eq!(Since::default().describe(), "the last 24h");
    }

    #[test]
    fn since_rejects_bad_values_naming_the_flag_and_value() {
        for bad in [
            "",
            "h",
            "0",
            "0h",
            "-5m",
            "+5m",
            "6x",
            "1e3",
            "nan",
            "inf",
            "6hh",
            "36501000d",
            "ALL",
        ] {
            let err = since(bad).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad:?}");
            let msg = err.to_string();
            assert!(
                msg.contains("--since") && msg.contains(&format!("{bad:?}")),
                "{msg}"
            );
        }
    }
}
