//! The JSON-lines audit records: `restart.log`, `liveness.log`,
//! `escalations.log`, as typed structs, and the appender that writes them.
//!
//! Each record is one whole line written with one `write` on a file opened for
//! append, never through a symlink or into a FIFO (created `0600`). A file
//! that the next line would take past `RECORD_MAX_BYTES` is first rotated to
//! `<name>.1` (see [`crate::records::rotation`]); readers of history use
//! [`read_history`], which reads `<name>.1` and then `<name>`. A full
//! disk or an unwritable file is logged (at a bounded rate) and survived; it
//! never stops the daemon. Pane text, auth-hold evidence and secrets have no
//! field here, so they cannot be written. Text from outside (titles, CLI
//! answers, reasons) is clipped to [`MAX_FIELD_BYTES`] per field before a
//! record is written; JSON escapes its control characters.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::records::rotation::{self, Appended, DEFAULT_MAX_BYTES};

pub use crate::decide::liveness::{LivenessReason, Pane, Read};

pub const RESTART_LOG: &str = "restart.log";
pub const LIVENESS_LOG: &str = "liveness.log";
pub const ESCALATIONS_LOG: &str = "escalations.log";

/// The longest a text field of a record may be, in bytes (SPEC §11).
pub const MAX_FIELD_BYTES: usize = 4096;

/// `s`, cut on a character boundary to at most [`MAX_FIELD_BYTES`] with `…`
/// marking the cut.
pub fn clip(s: &str) -> String {
    crate::text::clip_bytes(s, MAX_FIELD_BYTES)
}

fn clip_opt(s: &Option<String>) -> Option<String> {
    s.as_deref().map(clip)
}

/// One line of `restart.log`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RestartRecord {
    pub ts: f64,
    pub id: String,
    pub title: String,
    pub profile: String,
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub dry_run: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck_for_s: Option<f64>,
}

impl RestartRecord {
    /// A record about `session`; the optional fields are set by the caller.
    pub fn new(
        ts: f64,
        session: &crate::fleet::session::Session,
        action: &str,
        reason: Option<String>,
        dry_run: bool,
    ) -> RestartRecord {
        RestartRecord {
            ts,
            id: session.id.clone(),
            title: session.title.clone(),
            profile: session.profile.clone(),
            action: action.to_owned(),
            reason,
            dry_run,
            backoff_s: None,
            final_status: None,
            stuck_for_s: None,
        }
    }

    /// The record with every text field clipped.
    pub fn clipped(&self) -> RestartRecord {
        RestartRecord {
            id: clip(&self.id),
            title: clip(&self.title),
            profile: clip(&self.profile),
            action: clip(&self.action),
            reason: clip_opt(&self.reason),
            final_status: clip_opt(&self.final_status),
            ..*self
        }
    }
}

/// One line of `liveness.log`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LivenessRecord {
    pub ts: f64,
    pub id: String,
    pub title: String,
    pub profile: String,
    pub gap_s: f64,
    pub reads: Vec<Read>,
    pub pane: Pane,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_hold_reason: Option<String>,
    pub decision: String,
    pub reason: LivenessReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consecutive_skips: Option<u32>,
    pub dry_run: bool,
}

impl LivenessRecord {
    /// The record with every text field clipped.
    pub fn clipped(&self) -> LivenessRecord {
        LivenessRecord {
            id: clip(&self.id),
            title: clip(&self.title),
            profile: clip(&self.profile),
            reads: self
                .reads
                .iter()
                .map(|r| Read {
                    ts: r.ts,
                    status: clip(&r.status),
                    substate: clip_opt(&r.substate),
                })
                .collect(),
            pane: Pane {
                first: clip(&self.pane.first),
                second: clip(&self.pane.second),
                ..self.pane
            },
            auth_hold_reason: clip_opt(&self.auth_hold_reason),
            decision: clip(&self.decision),
            ..*self
        }
    }
}

/// One line of `escalations.log`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EscalationRecord {
    pub ts: f64,
    pub severity: String,
    pub message: String,
    pub sid: Option<String>,
    pub telegram: bool,
    #[serde(default)]
    pub dry_run: bool,
}

impl EscalationRecord {
    /// The record with every text field clipped.
    pub fn clipped(&self) -> EscalationRecord {
        EscalationRecord {
            severity: clip(&self.severity),
            message: clip(&self.message),
            sid: clip_opt(&self.sid),
            ..*self
        }
    }
}

/// How many records of each kind were written since start, for metrics.
/// Counted in memory as records are written, never from the files, so a
/// rotation does not reset a counter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Tally {
    /// `restart.log` records by `action`.
    pub restart_actions: BTreeMap<String, u64>,
    /// `liveness.log` records by `reason`.
    pub liveness_reasons: BTreeMap<String, u64>,
    /// `escalations.log` records by `severity`.
    pub escalations: BTreeMap<String, u64>,
}

/// Appends records under the watchdog directory.
pub struct Records {
    dir: PathBuf,
    /// `RECORD_MAX_BYTES`: the bound each file is rotated at.
    max_bytes: u64,
    last_warning: Mutex<Option<Instant>>,
    last_rotation_warning: Mutex<Option<Instant>>,
    tally: Mutex<Tally>,
}

const WARN_EVERY: Duration = Duration::from_secs(60);

impl Records {
    /// Records in `dir`, rotated at the default 16 MiB.
    pub fn new(dir: &Path) -> Records {
        Records {
            dir: dir.to_owned(),
            max_bytes: DEFAULT_MAX_BYTES,
            last_warning: Mutex::new(None),
            last_rotation_warning: Mutex::new(None),
            tally: Mutex::new(Tally::default()),
        }
    }

    /// Records in the watchdog directory, rotated at `RECORD_MAX_BYTES`.
    pub fn from_config(cfg: &crate::config::Config) -> Records {
        Records::new(&cfg.watchdog_dir).with_max_bytes(cfg.record_max_bytes)
    }

    /// The same records, rotated at `max_bytes` instead.
    pub fn with_max_bytes(self, max_bytes: u64) -> Records {
        Records { max_bytes, ..self }
    }

    pub fn restart(&self, r: &RestartRecord) {
        *self
            .tally
            .lock()
            .restart_actions
            .entry(r.action.clone())
            .or_default() += 1;
        self.append(RESTART_LOG, &r.clipped());
    }

    pub fn liveness(&self, r: &LivenessRecord) {
        *self
            .tally
            .lock()
            .liveness_reasons
            .entry(r.reason.as_str().to_owned())
            .or_default() += 1;
        self.append(LIVENESS_LOG, &r.clipped());
    }

    pub fn escalation(&self, r: &EscalationRecord) {
        *self
            .tally
            .lock()
            .escalations
            .entry(r.severity.clone())
            .or_default() += 1;
        self.append(ESCALATIONS_LOG, &r.clipped());
    }

    pub fn tally(&self) -> Tally {
        self.tally.lock().clone()
    }

    fn append<T: Serialize>(&self, file: &str, record: &T) {
        let path = self.dir.join(file);
        let result = serde_json::to_vec(record)
            .map_err(std::io::Error::other)
            .and_then(|mut line| {
                line.push(b'\n');
                rotation::append(&path, &line, self.max_bytes)
            });
        match result {
            Ok(Appended::Plain) => {}
            Ok(Appended::Rotated(bytes)) => log::info!(
                "{} reached {bytes} bytes (RECORD_MAX_BYTES={}); moved it to {} and started a fresh one",
                path.display(),
                self.max_bytes,
                rotation::rotated_path(&path).display()
            ),
            Ok(Appended::Unrotated(why)) => {
                if due(&self.last_rotation_warning) {
                    log::warn!(
                        "{} is past RECORD_MAX_BYTES={} but could not be rotated ({why}); the record was appended, trying again with the next one",
                        path.display(),
                        self.max_bytes
                    );
                }
            }
            Err(e) => {
                if due(&self.last_warning) {
                    log::warn!(
                        "could not append to {} ({e}); the record is lost, the daemon carries on",
                        path.display()
                    );
                }
            }
        }
    }
}

/// Whether a warning rate-limited by `last` may go out now (and notes it).
fn due(last: &Mutex<Option<Instant>>) -> bool {
    let mut last = last.lock();
    if last.is_none_or(|t| t.elapsed() >= WARN_EVERY) {
        *last = Some(Instant::now());
        true
    } else {
        false
    }
}

fn parse_into<T: for<'de> Deserialize<'de>>(out: &mut Vec<T>) -> impl FnMut(&[u8]) + '_ {
    |line| out.extend(serde_json::from_slice(line).ok())
}

/// Reads a JSON-lines file back into records, skipping lines that do not
/// parse. Streamed: memory follows the records kept, not the file.
pub fn read_lines<T: for<'de> Deserialize<'de>>(path: &Path) -> Vec<T> {
    let mut out = Vec::new();
    rotation::each_line(path, parse_into(&mut out));
    out
}

/// The history a record file still holds: `<path>.1` (the rotated file),
/// then `path`, oldest first, skipping lines that do not parse.
pub fn read_history<T: for<'de> Deserialize<'de>>(path: &Path) -> Vec<T> {
    let mut out = Vec::new();
    rotation::each_line_with_rotated(path, parse_into(&mut out));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_one_per_line() {
        let tmp = tempfile::tempdir().unwrap();
        let r = Records::new(tmp.path());
        let rec = RestartRecord {
            ts: 1.5,
            id: "a-1".into(),
            title: "conductor-a".into(),
            profile: "default".into(),
            action: "restart".into(),
            reason: None,
            dry_run: false,
            backoff_s: None,
            final_status: None,
            stuck_for_s: None,
        };
        r.restart(&rec);
        r.restart(&rec);
        let back: Vec<RestartRecord> = read_lines(&tmp.path().join(RESTART_LOG));
        assert_eq!(back, vec![rec.clone(), rec]);
        let text = std::fs::read_to_string(tmp.path().join(RESTART_LOG)).unwrap();
        assert!(text.contains("\"action\":\"restart\"") && !text.contains("reason"));
    }

    fn restart_record(n: usize) -> RestartRecord {
        RestartRecord {
            ts: n as f64,
            id: format!("3f9c2a1b-{n}"),
            title: "conductor-ops".into(),
            profile: "default".into(),
            action: if n.is_multiple_of(2) {
                "skipped"
            } else {
                "restarted"
            }
            .into(),
            reason: n.is_multiple_of(2).then(|| "cascade_pause".into()),
            dry_run: false,
            backoff_s: None,
            final_status: None,
            stuck_for_s: None,
        }
    }

    #[test]
    fn records_rotate_at_the_limit_and_the_counters_keep_counting() {
        let tmp = tempfile::tempdir().unwrap();
        let max = 64 << 10;
        let r = Records::new(tmp.path()).with_max_bytes(max);
        let log = tmp.path().join(RESTART_LOG);
        std::fs::write(rotation::rotated_path(&log), b"{\"dropped\":true}\n").unwrap();
        let mut last_total = 0;
        let mut rotated_at = None;
        for n in 0..1500 {
            let before = std::fs::metadata(&log).map_or(0, |m| m.len());
            r.restart(&restart_record(n));
            let after = std::fs::metadata(&log).map_or(0, |m| m.len());
            if after < before && rotated_at.is_none() {
                rotated_at = Some(n);
            }
            // The counters never go back, rotation or not.
            let total: u64 = r.tally().restart_actions.values().sum();
            assert_eq!(total, last_total + 1);
            last_total = total;
            let text =
                crate::records::metrics::render(&crate::records::daemon_status::DaemonStatus {
                    tally: r.tally(),
                    ..Default::default()
                });
            let m = crate::records::metrics::parse(&text);
            let shown: f64 = ["skipped", "restarted"]
                .iter()
                .filter_map(|a| {
                    m.get(&format!(
                        "agent_deck_watchdog_restarts_total{{result=\"{a}\"}}"
                    ))
                })
                .sum::<f64>();
            assert_eq!(shown, total as f64);
        }
        assert!(
            rotated_at.is_some(),
            "1500 records of ~150 bytes pass 64 KiB"
        );
        // Both files hold whole records only, each within the bound, and
        // together the newest records in order; the `.1` from before is gone.
        for file in [rotation::rotated_path(&log), log.clone()] {
            let bytes = std::fs::read(&file).unwrap();
            assert!(bytes.len() as u64 <= max && bytes.ends_with(b"\n"));
            let text = String::from_utf8(bytes).unwrap();
            for l in text.lines() {
                serde_json::from_str::<RestartRecord>(l).unwrap();
            }
        }
        let kept: Vec<RestartRecord> = read_history(&log);
        let newest = 1500 - kept.len();
        assert_eq!(kept, (newest..1500).map(restart_record).collect::<Vec<_>>());
        assert!(newest > 0, "a second rotation dropped the oldest records");
    }

    #[test]
    fn a_symlinked_record_file_is_not_written_through() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        std::os::unix::fs::symlink(&victim, tmp.path().join(ESCALATIONS_LOG)).unwrap();
        Records::new(tmp.path()).escalation(&EscalationRecord {
            ts: 0.0,
            severity: "rate-limit".into(),
            message: "m".into(),
            sid: None,
            telegram: false,
            dry_run: false,
        });
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    }

    #[test]
    fn unwritable_directory_is_survived() {
        let r = Records::new(Path::new("/nonexistent/dir"));
        let alert = EscalationRecord {
            ts: 0.0,
            severity: "rate-limit".into(),
            message: "m".into(),
            sid: None,
            telegram: false,
            dry_run: false,
        };
        r.escalation(&alert);
        r.escalation(&alert);
        // Nothing was written, yet the alerts still count in the metrics.
        assert!(!Path::new("/nonexistent/dir").exists());
        assert_eq!(r.tally().escalations.get("rate-limit"), Some(&2));
    }

    #[test]
    fn a_huge_reason_is_clipped_in_its_record() {
        let tmp = tempfile::tempdir().unwrap();
        let r = Records::new(tmp.path());
        let huge = format!("é{}\nforged", "r".repeat(5_000_000));
        let rec = RestartRecord {
            ts: 1.5,
            id: "a-1".into(),
            title: huge.clone(),
            profile: "default".into(),
            action: "cli-refused".into(),
            reason: Some(huge.clone()),
            dry_run: false,
            backoff_s: None,
            final_status: None,
            stuck_for_s: Some(2.0),
        };
        r.restart(&rec);
        r.escalation(&EscalationRecord {
            ts: 0.0,
            severity: "restart-failed".into(),
            message: huge.clone(),
            sid: Some("a-1".into()),
            telegram: false,
            dry_run: false,
        });
        let text = std::fs::read_to_string(tmp.path().join(RESTART_LOG)).unwrap();
        assert_eq!(text.lines().count(), 1);
        assert!(text.len() < 3 * MAX_FIELD_BYTES, "{} bytes", text.len());
        let back: Vec<RestartRecord> = read_lines(&tmp.path().join(RESTART_LOG));
        let reason = back[0].reason.as_deref().unwrap();
        assert!(
            reason.len() <= MAX_FIELD_BYTES && reason.starts_with("ér") && reason.ends_with('…')
        );
        assert_eq!(back[0].stuck_for_s, Some(2.0));
        assert_eq!(back[0].action, "cli-refused");
        let esc = std::fs::read_to_string(tmp.path().join(ESCALATIONS_LOG)).unwrap();
        assert!(esc.len() < 2 * MAX_FIELD_BYTES, "{} bytes", esc.len());
    }

    #[test]
    fn every_text_field_of_a_liveness_record_is_clipped() {
        let huge = "x".repeat(MAX_FIELD_BYTES * 2);
        let read = Read {
            ts: 1.0,
            status: huge.clone(),
            substate: Some(huge.clone()),
        };
        let rec = LivenessRecord {
            ts: 1.0,
            id: huge.clone(),
            title: huge.clone(),
            profile: huge.clone(),
            gap_s: 2.0,
            reads: vec![read.clone(), read],
            pane: Pane {
                first: huge.clone(),
                second: huge.clone(),
                ..Pane::default()
            },
            auth_hold_reason: Some(huge.clone()),
            decision: huge.clone(),
            reason: LivenessReason::PaneActive,
            consecutive_skips: Some(1),
            dry_run: false,
        };
        let tmp = tempfile::tempdir().unwrap();
        Records::new(tmp.path()).liveness(&rec);
        let line = std::fs::read_to_string(tmp.path().join(LIVENESS_LOG)).unwrap();
        let back: LivenessRecord = serde_json::from_str(line.trim()).unwrap();
        let mut texts = vec![
            &back.id,
            &back.title,
            &back.profile,
            &back.pane.first,
            &back.pane.second,
            &back.decision,
        ];
        texts.extend(back.auth_hold_reason.iter());
        for r in &back.reads {
            texts.push(&r.status);
            texts.extend(r.substate.iter());
        }
        assert_eq!(texts.len(), 11);
        for t in texts {
            assert!(
                t.len() <= MAX_FIELD_BYTES && t.ends_with('…'),
                "{}",
                t.len()
            );
        }
    }

    #[test]
    fn clipping_cuts_on_a_character_boundary() {
        for pad in 0..4 {
            let s = format!("{}{}", "a".repeat(pad), "한".repeat(3000));
            let c = clip(&s);
            assert!(c.len() <= MAX_FIELD_BYTES && c.ends_with('…'), "{pad}");
            assert!(s.starts_with(c.trim_end_matches('…')));
        }
        assert_eq!(clip("short"), "short");
        let exact = "b".repeat(MAX_FIELD_BYTES);
        assert_eq!(clip(&exact), exact);
    }
}
