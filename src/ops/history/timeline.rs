//! The timeline of `history`, pure (bytes in, entries out): record lines
//! parsed into typed entries, the three files merged oldest first, and the
//! window (`--since`) and session filters.

use std::collections::HashMap;

use serde::Serialize;

use crate::records::audit::{
    EscalationRecord, LivenessRecord, RestartAction, RestartRecord, ESCALATIONS_LOG, LIVENESS_LOG,
    RESTART_LOG,
};

/// How far back to look.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Since {
    All,
    /// The last `secs` seconds; `label` is how the operator wrote it.
    Last {
        secs: f64,
        label: String,
    },
}

/// The window when `--since` is not given.
impl Default for Since {
    fn default() -> Since {
        Since::Last {
            secs: 86_400.0,
            label: "24h".into(),
        }
    }
}

impl Since {
    /// The oldest timestamp shown, if any bound.
    pub(crate) fn cutoff(&self, now: f64) -> Option<f64> {
        match self {
            Since::All => None,
            Since::Last { secs, .. } => Some(now - secs),
        }
    }

    /// `the last 24h` or `all records`.
    pub(crate) fn describe(&self) -> String {
        match self {
            Since::All => "all records".into(),
            Since::Last { label, .. } => format!("the last {label}"),
        }
    }
}

/// The three record files, in the order that breaks timestamp ties: a
/// liveness decision comes before the restart it allowed, which comes before
/// the alert about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Log {
    Liveness,
    Restart,
    Escalations,
}

impl Log {
    pub(crate) const ALL: [Log; 3] = [Log::Liveness, Log::Restart, Log::Escalations];

    pub(crate) fn file(self) -> &'static str {
        match self {
            Log::Liveness => LIVENESS_LOG,
            Log::Restart => RESTART_LOG,
            Log::Escalations => ESCALATIONS_LOG,
        }
    }
}

/// One record, typed. As JSON it is the record with a `"log"` key first
/// naming its file without `.log` (`liveness`, `restart`, `escalations`):
/// the `--json` line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "log")]
pub(crate) enum Record {
    #[serde(rename = "liveness")]
    Liveness(LivenessRecord),
    #[serde(rename = "restart")]
    Restart(RestartRecord),
    #[serde(rename = "escalations")]
    Escalation(EscalationRecord),
}

impl Record {
    pub(crate) fn ts(&self) -> f64 {
        match self {
            Record::Liveness(r) => r.ts,
            Record::Restart(r) => r.ts,
            Record::Escalation(r) => r.ts,
        }
    }

    /// The session it is about: `id`, or an escalation's `sid`.
    pub(crate) fn session(&self) -> Option<&str> {
        match self {
            Record::Liveness(r) => Some(&r.id),
            Record::Restart(r) => Some(&r.id),
            Record::Escalation(r) => r.sid.as_deref(),
        }
    }

    pub(crate) fn log(&self) -> Log {
        match self {
            Record::Liveness(_) => Log::Liveness,
            Record::Restart(_) => Log::Restart,
            Record::Escalation(_) => Log::Escalations,
        }
    }

    /// The session's title and profile, which an escalation does not carry.
    pub(crate) fn names(&self) -> Option<(&str, &str)> {
        match self {
            Record::Liveness(r) => Some((&r.title, &r.profile)),
            Record::Restart(r) => Some((&r.title, &r.profile)),
            Record::Escalation(_) => None,
        }
    }
}

/// The records in one file's bytes, and how many non-blank lines did not
/// parse (garbled, truncated, not UTF-8, or not a record of this file).
/// Keys the typed record does not know are dropped.
pub(crate) fn parse(log: Log, bytes: &[u8]) -> (Vec<Record>, usize) {
    let (mut entries, mut skipped) = (Vec::new(), 0);
    for line in bytes.split(|b| *b == b'\n') {
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        let record = match log {
            Log::Liveness => serde_json::from_slice(line).map(Record::Liveness),
            Log::Restart => serde_json::from_slice(line).map(Record::Restart),
            Log::Escalations => serde_json::from_slice(line).map(Record::Escalation),
        };
        match record {
            Ok(e) => entries.push(e),
            Err(_) => skipped += 1,
        }
    }
    (entries, skipped)
}

/// One timeline, oldest first. `files` come in tie order ([`Log::ALL`], each
/// `.1` before its current file); the sort is stable, so records with equal
/// timestamps keep that order.
pub(crate) fn merge(files: Vec<Vec<Record>>) -> Vec<Record> {
    let mut all: Vec<Record> = files.into_iter().flatten().collect();
    all.sort_by(|a, b| a.ts().total_cmp(&b.ts()));
    all
}

/// The entries about `id` (all when `None`) from `cutoff` on.
pub(crate) fn select<'a>(
    entries: &'a [Record],
    id: Option<&str>,
    cutoff: Option<f64>,
) -> Vec<&'a Record> {
    entries
        .iter()
        .filter(|e| id.is_none_or(|id| e.session() == Some(id)))
        .filter(|e| cutoff.is_none_or(|c| e.ts() >= c))
        .collect()
}

/// The readable timeline shows one line per decision. A `skipped-alive`
/// restart record repeats the liveness record written with it (same
/// session, same reason, within a second), so it is left out there; `--json`
/// keeps every record.
pub(crate) fn one_per_decision<'a>(timeline: &[&'a Record]) -> Vec<&'a Record> {
    (0..timeline.len())
        .filter(|&i| !repeats_liveness(timeline, i))
        .map(|i| timeline[i])
        .collect()
}

fn repeats_liveness(timeline: &[&Record], i: usize) -> bool {
    let r = match timeline[i] {
        Record::Restart(r) if r.action == RestartAction::SkippedAlive => r,
        _ => return false,
    };
    let near = |j: &usize| (timeline[*j].ts() - r.ts).abs() <= 1.0;
    let before = (0..i).rev().take_while(near);
    let after = (i + 1..timeline.len()).take_while(near);
    before.chain(after).any(|j| {
        matches!(timeline[j], Record::Liveness(l)
            if l.id == r.id && r.reason.as_deref() == Some(l.reason.as_str()))
    })
}

/// The newest title seen for each session id, so an escalation (which has
/// only a `sid`) can be shown with its session's title.
pub(crate) fn titles(entries: &[Record]) -> HashMap<&str, &str> {
    // A later title replaces an earlier one.
    entries
        .iter()
        .filter_map(|e| Some((e.session()?, e.names()?.0)))
        .collect()
}
#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use serde_json::Value;

    #[test]
    fn merge_is_oldest_first_across_three_files_and_their_rotations() {
        let rotated = entries(
            Log::Restart,
            &[restart(T0 - 100.0, OPS, "a", "restart", Value::Null)],
        );
        let current = entries(
            Log::Restart,
            &[restart(T0 + 5.0, OPS, "a", "restarted", Value::Null)],
        );
        let live_old = entries(Log::Liveness, &[liveness(T0 - 200.0, OPS, "a", false)]);
        let live_new = entries(Log::Liveness, &[liveness(T0 + 5.0, OPS, "a", false)]);
        let esc = entries(
            Log::Escalations,
            &[escalation(T0 - 150.0, "cascade", None, "m")],
        );
        let all = merge(vec![live_old, live_new, rotated, current, esc]);
        let got: Vec<(f64, &str)> = all.iter().map(|e| (e.ts() - T0, e.log().file())).collect();
        assert_eq!(
            got,
            [
                (-200.0, LIVENESS_LOG),
                (-150.0, ESCALATIONS_LOG),
                (-100.0, RESTART_LOG),
                (5.0, LIVENESS_LOG),
                (5.0, RESTART_LOG)
            ]
        );
    }

    #[test]
    fn id_filter_matches_restart_and_liveness_ids_and_escalation_sids() {
        let all = night();
        let auth: Vec<&str> = select(&all, Some(AUTH), None)
            .iter()
            .map(|e| e.log().file())
            .collect();
        assert_eq!(auth, [RESTART_LOG, ESCALATIONS_LOG]);
        assert_eq!(select(&all, Some(OPS), None).len(), 5);
        assert_eq!(select(&all, None, None).len(), 8);
        assert!(
            select(&all, Some("3f9c2a1b"), None).is_empty(),
            "no prefix matching"
        );
    }

    #[test]
    fn since_keeps_only_the_window() {
        let all = night();
        let cutoff = Since::Last {
            secs: 45.0,
            label: "45s".into(),
        }
        .cutoff(T0 + 90.0);
        let kept: Vec<f64> = select(&all, None, cutoff)
            .iter()
            .map(|e| e.ts() - T0)
            .collect();
        assert_eq!(kept, [60.0, 60.0, 66.25, 70.0, 90.0]);
        assert_eq!(Since::All.cutoff(T0), None);
    }

    #[test]
    fn unreadable_lines_are_counted_and_skipped() {
        let good = restart(T0, OPS, "a", "restart", Value::Null);
        let mut text = format!("{good}\nnot json\n\n{{\"ts\":1}}\n[1,2]\n").into_bytes();
        text.extend_from_slice(b"\xff\xfe{}\n");
        let wrong_file = escalation(T0, "x", None, "an escalation in restart.log");
        text.extend(format!("{wrong_file}\n{good}\r\n{}", &good[..good.len() / 2]).bytes());
        let (e, skipped) = parse(Log::Restart, &text);
        assert_eq!((e.len(), skipped), (2, 6));
        let (e, skipped) = parse(
            Log::Liveness,
            b"{\"ts\":1,\"reason\":\"from_the_future\"}\n",
        );
        assert_eq!((e.len(), skipped), (0, 1));
    }

    #[test]
    fn a_skipped_alive_next_to_its_liveness_record_is_one_readable_decision() {
        let skip = |ts: f64, id: &str, reason: &str| {
            restart(
                ts,
                id,
                "a",
                "skipped-alive",
                serde_json::json!({"reason": reason}),
            )
        };
        let all = merge(vec![
            entries(Log::Liveness, &[liveness(T0, OPS, "a", true)]),
            entries(
                Log::Restart,
                &[
                    skip(T0 - 0.01, OPS, "pane_active"),
                    skip(T0 - 0.02, AUTH, "pane_active"),
                    skip(T0 + 5.0, OPS, "pane_active"),
                    skip(T0 + 0.5, OPS, "auth_hold"),
                ],
            ),
        ]);
        let timeline = select(&all, None, None);
        let kept: Vec<f64> = one_per_decision(&timeline)
            .iter()
            .map(|e| e.ts() - T0)
            .collect();
        // Another session, a second apart, or another reason: not a repeat.
        assert_eq!(kept.len(), 4, "{kept:?}");
        assert!(!kept.contains(&-0.01), "{kept:?}");
    }
}
