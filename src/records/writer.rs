//! The appender of the audit records ([`crate::records::audit`]): each is
//! clipped, written as one whole line, rotated at `RECORD_MAX_BYTES` and
//! counted in the [`Tally`]. A write failure loses the record whole (see
//! `rotation.rs`), is counted and logged per file (at a bounded rate), and
//! is survived; it never stops the daemon.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::records::audit::{
    EscalationRecord, LivenessRecord, RestartRecord, ESCALATIONS_LOG, LIVENESS_LOG, RESTART_LOG,
};
use crate::records::rotation::{self, Appended, DEFAULT_MAX_BYTES};
use crate::sys::say_once::SayOnce;

/// How often one file's warning of one kind may be logged.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// How many records of each kind were written since start, counted as they
/// are appended, so a rotation does not reset a counter; and how many of
/// each file were lost.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Tally {
    /// `restart.log` records by `action`.
    pub restart_actions: BTreeMap<String, u64>,
    /// `liveness.log` records by `reason`.
    pub liveness_reasons: BTreeMap<String, u64>,
    /// `escalations.log` records by `severity`.
    pub escalations: BTreeMap<String, u64>,
    /// Records that could not be written (a full disk, an unwritable
    /// file), by file name; counted in the counts above all the same.
    pub records_lost: BTreeMap<String, u64>,
}

/// One more record under `key` in one of the tally's counts; the new count.
fn count(counts: &mut BTreeMap<String, u64>, key: &str) -> u64 {
    let n = counts.entry(key.to_owned()).or_default();
    *n += 1;
    *n
}

/// Appends records under the watchdog directory.
pub struct Records {
    dir: PathBuf,
    /// `RECORD_MAX_BYTES`.
    max_bytes: u64,
    /// Warnings by file and kind (`append`, `rotate`), at most one a minute each.
    warnings: SayOnce<(&'static str, &'static str)>,
    tally: Mutex<Tally>,
}

impl Records {
    /// Records in `dir`, rotated at the default 16 MiB.
    pub fn new(dir: &Path) -> Records {
        Records {
            dir: dir.to_owned(),
            max_bytes: DEFAULT_MAX_BYTES,
            warnings: SayOnce::new(),
            tally: Mutex::new(Tally::default()),
        }
    }

    /// Records in the watchdog directory, rotated at `RECORD_MAX_BYTES`.
    pub(crate) fn from_config(cfg: &crate::config::Config) -> Records {
        Records {
            max_bytes: cfg.record_max_bytes,
            ..Records::new(&cfg.watchdog_dir)
        }
    }

    pub fn restart(&self, r: &RestartRecord) {
        count(&mut self.tally.lock().restart_actions, r.action.as_str());
        self.append(RESTART_LOG, &r.clipped());
    }

    pub fn liveness(&self, r: &LivenessRecord) {
        count(&mut self.tally.lock().liveness_reasons, r.reason.as_str());
        self.append(LIVENESS_LOG, &r.clipped());
    }

    pub fn escalation(&self, r: &EscalationRecord) {
        count(&mut self.tally.lock().escalations, r.severity.as_str());
        self.append(ESCALATIONS_LOG, &r.clipped());
    }

    pub fn tally(&self) -> Tally {
        self.tally.lock().clone()
    }

    fn append<T: Serialize>(&self, file: &'static str, record: &T) {
        let path = self.dir.join(file);
        let result = serde_json::to_vec(record)
            .map_err(std::io::Error::other)
            .and_then(|mut line| {
                line.push(b'\n');
                rotation::append(&path, &line, self.max_bytes)
            });
        match result {
            Ok(Appended::Rotated(bytes)) => log::info!(
                "{} reached {bytes} bytes (RECORD_MAX_BYTES={}); moved it to {} and started a fresh one",
                path.display(),
                self.max_bytes,
                rotation::rotated_path(&path).display()
            ),
            Ok(Appended::Unrotated(why)) if self.warnings.allows(&(file, "rotate"), WARN_EVERY) => log::warn!(
                "{} is past RECORD_MAX_BYTES={} but could not be rotated ({why}); the record was appended, trying again with the next one",
                path.display(),
                self.max_bytes
            ),
            // Nothing to say, or said within the last minute.
            Ok(Appended::Plain | Appended::Unrotated(_)) => {}
            Err(e) => {
                let lost = count(&mut self.tally.lock().records_lost, file);
                if self.warnings.allows(&(file, "append"), WARN_EVERY) {
                    log::warn!(
                        "could not append to {} ({e}); the record is lost ({lost} from this file since start), the daemon carries on",
                        path.display()
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::audit::{
        Detail, LivenessReason, PaneSamples, RestartAction, Severity, StatusRead, MAX_FIELD_BYTES,
    };
    use crate::records::read_back::{read_lines, read_with_rotated};

    #[test]
    fn records_round_trip_one_per_line() {
        let tmp = tempfile::tempdir().unwrap();
        let r = Records::new(tmp.path());
        let rec = RestartRecord {
            action: RestartAction::Restart,
            ..restart_record(1)
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
                RestartAction::Skipped
            } else {
                RestartAction::Restarted
            },
            reason: n.is_multiple_of(2).then(|| "cascade_pause".into()),
            dry_run: false,
            detail: Detail::Plain {},
        }
    }

    fn alert(message: &str) -> EscalationRecord {
        EscalationRecord {
            ts: 0.0,
            severity: Severity::RateLimit,
            message: message.into(),
            sid: None,
            telegram: false,
            dry_run: false,
        }
    }

    #[test]
    fn records_rotate_at_the_limit_and_the_counters_keep_counting() {
        let tmp = tempfile::tempdir().unwrap();
        let max = 64 << 10;
        let r = Records {
            max_bytes: max,
            ..Records::new(tmp.path())
        };
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
            let text = crate::records::metrics::render(&crate::records::metrics::DaemonStatus {
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
        let kept: Vec<RestartRecord> = read_with_rotated(&log);
        let newest = 1500 - kept.len();
        assert_eq!(kept, (newest..1500).map(restart_record).collect::<Vec<_>>());
        assert!(newest > 0, "a second rotation dropped the oldest records");
    }

    #[test]
    fn a_record_after_a_torn_line_is_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join(RESTART_LOG);
        // What a full disk left of an older run's record.
        std::fs::write(&log, b"{\"ts\":1.0,\"id\":\"3f9c").unwrap();
        let r = Records::new(tmp.path());
        r.restart(&restart_record(1));
        r.restart(&restart_record(2));
        let back: Vec<RestartRecord> = read_lines(&log);
        assert_eq!(back, vec![restart_record(1), restart_record(2)]);
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.starts_with("{\"ts\":1.0,\"id\":\"3f9c\n{"), "{text}");
    }

    #[test]
    fn lost_records_are_counted_and_warned_about_per_file() {
        let tmp = tempfile::tempdir().unwrap();
        for unwritable in [RESTART_LOG, ESCALATIONS_LOG] {
            std::fs::create_dir(tmp.path().join(unwritable)).unwrap();
        }
        let r = Records::new(tmp.path());
        r.restart(&restart_record(1));
        r.restart(&restart_record(2));
        r.escalation(&alert("lost"));
        let lost = &r.tally().records_lost;
        assert_eq!(lost.get(RESTART_LOG), Some(&2));
        assert_eq!(lost.get(ESCALATIONS_LOG), Some(&1));
        assert_eq!(lost.get(LIVENESS_LOG), None);
        // Each file's first loss was warned about, the second file's too.
        assert!(!r.warnings.allows(&(RESTART_LOG, "append"), WARN_EVERY));
        assert!(!r.warnings.allows(&(ESCALATIONS_LOG, "append"), WARN_EVERY));
    }

    #[test]
    fn a_symlinked_record_file_is_not_written_through() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        std::os::unix::fs::symlink(&victim, tmp.path().join(ESCALATIONS_LOG)).unwrap();
        Records::new(tmp.path()).escalation(&alert("m"));
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    }

    #[test]
    fn unwritable_directory_is_survived() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("not-yet");
        let r = Records::new(&dir);
        // The appends fail and return; the alerts still count in the metrics.
        r.escalation(&alert("lost"));
        r.escalation(&alert("lost"));
        assert!(!dir.exists());
        assert_eq!(r.tally().escalations.get("rate-limit"), Some(&2));
        // Once the directory can be written, the next record lands, alone.
        std::fs::create_dir(&dir).unwrap();
        r.escalation(&alert("kept"));
        let back: Vec<EscalationRecord> = read_lines(&dir.join(ESCALATIONS_LOG));
        assert_eq!(back, vec![alert("kept")]);
        assert_eq!(r.tally().escalations.get("rate-limit"), Some(&3));
    }

    #[test]
    fn a_huge_reason_is_clipped_in_its_record() {
        let tmp = tempfile::tempdir().unwrap();
        let r = Records::new(tmp.path());
        let huge = format!("é{}\nforged", "r".repeat(5_000_000));
        let rec = RestartRecord {
            title: huge.clone(),
            action: RestartAction::CliRefused,
            reason: Some(huge.clone()),
            detail: Detail::Stale { stuck_for_s: 2.0 },
            ..restart_record(1)
        };
        r.restart(&rec);
        r.escalation(&EscalationRecord {
            severity: Severity::RestartFailed,
            sid: Some("a-1".into()),
            ..alert(&huge)
        });
        let text = std::fs::read_to_string(tmp.path().join(RESTART_LOG)).unwrap();
        assert_eq!(text.lines().count(), 1);
        assert!(text.len() < 3 * MAX_FIELD_BYTES, "{} bytes", text.len());
        let back: Vec<RestartRecord> = read_lines(&tmp.path().join(RESTART_LOG));
        let reason = back[0].reason.as_deref().unwrap();
        assert!(
            reason.len() <= MAX_FIELD_BYTES && reason.starts_with("ér") && reason.ends_with('…')
        );
        assert_eq!(back[0].detail, Detail::Stale { stuck_for_s: 2.0 });
        assert_eq!(back[0].action, "cli-refused");
        let esc = std::fs::read_to_string(tmp.path().join(ESCALATIONS_LOG)).unwrap();
        assert!(esc.len() < 2 * MAX_FIELD_BYTES, "{} bytes", esc.len());
    }

    #[test]
    fn every_text_field_of_a_liveness_record_is_clipped() {
        let huge = "x".repeat(MAX_FIELD_BYTES * 2);
        let read = StatusRead {
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
            pane: PaneSamples {
                first: huge.clone(),
                second: huge.clone(),
                ..PaneSamples::default()
            },
            auth_hold_reason: Some(huge.clone()),
            decision: huge.clone(),
            reason: LivenessReason::PaneActive,
            consecutive_skips: Some(1),
            dry_run: false,
            proof: None,
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
}
