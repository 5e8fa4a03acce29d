//! The one grammar of the duration flags (`--after`, `--since`, `--timeout`):
//! a decimal number with an optional unit `s`, `m`, `h` or `d`, no sign, no
//! exponent. Settings keep SPEC §3's decimal seconds (`config/read.rs`).

use crate::error::{Error, Result};

/// What a flag accepts besides the grammar.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub zero_ok: bool,
    /// The largest value, in seconds.
    pub max_s: f64,
}

/// The value in seconds; the error names the flag and the value as given.
pub(crate) fn parse(flag: &str, raw: &str, bounds: Bounds) -> Result<f64> {
    let t = raw.trim();
    let units = [('s', 1.0), ('m', 60.0), ('h', 3600.0), ('d', 86_400.0)];
    let (num, unit) = units
        .iter()
        .find_map(|&(u, secs)| Some((t.strip_suffix(u)?, secs)))
        .unwrap_or((t, 1.0));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let decimal = num
        .split_once('.')
        .map_or(digits(num), |(i, f)| digits(i) && digits(f));
    match num.parse::<f64>().map(|v| v * unit) {
        Ok(s) if decimal && s <= bounds.max_s && (s > 0.0 || (bounds.zero_ok && s == 0.0)) => Ok(s),
        _ => Err(Error::usage(format!(
            "{flag} {raw:?} is invalid: expected a decimal number with an optional unit \
             s, m, h or d, such as 90, 90s, 20m, 1.5h or 2d"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANY: Bounds = Bounds {
        zero_ok: true,
        max_s: 1e9,
    };

    #[test]
    fn every_unit_and_plain_seconds() {
        for (raw, secs) in [
            ("90", 90.0),
            ("90s", 90.0),
            ("20m", 1200.0),
            ("1.5h", 5400.0),
            ("2d", 172_800.0),
            (" 0.5 ", 0.5),
            ("0", 0.0),
        ] {
            assert_eq!(parse("--after", raw, ANY).unwrap(), secs, "{raw}");
        }
    }

    #[test]
    fn exponents_signs_and_strays_are_refused_naming_the_flag() {
        for bad in [
            "", "m", "-5m", "+5", "1e3", "1e3s", "20x", ".5", "5.", "1.2.3", "inf", "NaN",
        ] {
            let e = parse("--after", bad, ANY).unwrap_err();
            assert!(e.to_string().contains("--after"), "{bad}: {e}");
            assert_eq!(e.exit_code(), 2);
        }
    }

    #[test]
    fn bounds_hold() {
        let positive = Bounds {
            zero_ok: false,
            max_s: 3600.0,
        };
        assert!(parse("--since", "0", positive).is_err());
        assert!(parse("--since", "61m", positive).is_err());
        assert_eq!(parse("--since", "1h", positive).unwrap(), 3600.0);
    }
}
