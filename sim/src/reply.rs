//! What a simulated call prints and returns, in the real CLI's formats.
//! Success in human mode is `✓ <message>` on stdout; under `--json` it is
//! indented JSON with sorted keys (a Go map); quiet prints nothing. An error
//! is `Error: <message>` on stderr, or under `--json` the JSON error object
//! on stdout with stderr empty (contract §0).

use serde::Serialize;
use serde_json::{json, Value};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Reply {
    pub code: i32,
    pub out: String,
    pub err: String,
}

impl Reply {
    pub(super) fn out(code: i32, out: String) -> Reply {
        Reply {
            code,
            out,
            err: String::new(),
        }
    }

    pub(super) fn err(code: i32, err: String) -> Reply {
        Reply {
            code,
            out: String::new(),
            err,
        }
    }
}

/// The output mode a command was called in.
#[derive(Debug, Clone, Copy)]
pub(super) struct Out {
    pub json: bool,
    pub quiet: bool,
}

impl Out {
    pub(super) fn success(self, message: &str, data: Value) -> Reply {
        if self.quiet {
            Reply::out(0, String::new())
        } else if self.json {
            Reply::out(0, go_json(&data))
        } else {
            Reply::out(0, format!("\u{2713} {message}\n"))
        }
    }

    /// The CLI's usual failure: `INVALID_OPERATION`, exit 1.
    pub(super) fn invalid(self, message: &str) -> Reply {
        self.error(message, "INVALID_OPERATION", 1, None)
    }

    /// `extra` keys join `code`, `error` and `success` in the JSON form.
    pub(super) fn error(self, message: &str, code: &str, exit: i32, extra: Option<Value>) -> Reply {
        if !self.json {
            return Reply::err(exit, format!("Error: {message}\n"));
        }
        let mut data = extra.unwrap_or_else(|| json!({}));
        data["success"] = json!(false);
        data["error"] = json!(message);
        data["code"] = json!(code);
        Reply::out(exit, go_json(&data))
    }
}

/// `json.MarshalIndent(v, "", "  ")` plus a newline, with Go's escaping of
/// `<`, `>`, `&`, U+2028 and U+2029 (they only occur inside strings here). A
/// `Value`'s keys come out sorted (no `preserve_order`), as Go prints a map.
pub(super) fn go_json(v: &impl Serialize) -> String {
    let text = serde_json::to_string_pretty(v).unwrap_or_else(|_| "null".into());
    let escapes = [
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u{2028}", "\\u2028"),
        ("\u{2029}", "\\u2029"),
    ];
    escapes.iter().fold(text, |t, (c, esc)| t.replace(c, esc)) + "\n"
}

/// Unix seconds as RFC 3339 UTC to the second, `2025-08-22T19:33:54Z`.
pub(super) fn rfc3339(secs: i64) -> String {
    let stamp = jiff::Timestamp::from_second(secs.max(0)).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    stamp.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}
