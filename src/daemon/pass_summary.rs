//! What a `--once` pass saw and did, as the block it prints on stdout (or
//! one JSON object with `--json`): how many sessions agent-deck listed, and
//! for each restart-critical one its title, id, profile, status, why it is
//! critical and what the pass did with it; then, with `RESUME_SCOPE=all`,
//! the other sessions that are stalled; `--verbose` adds the other
//! sessions. The [`Pass`] is gathered from the tick's verdicts, the
//! restarts' outcomes and the book; rendering it is pure.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::decide::book::State;
use crate::decide::restart::gates::Hold;
use crate::decide::restart::liveness::LivenessReason;
use crate::decide::restart::Outcome;
use crate::decide::verdict::Verdict;
use crate::error::{self, Error};
use crate::fleet::cache::Fleet;
use crate::fleet::deck::AgentDeck;
use crate::fleet::session::{Session, Status};
use crate::text::printable;

/// Columns of the readable block are clipped to this many characters.
const COLUMN_MAX: usize = 40;

/// What the pass says it did with a session: the `action` word of the JSON
/// form, and its reason if it has one.
type Said = (&'static str, Option<String>);

fn said(word: &'static str, reason: impl Into<String>) -> Said {
    (word, Some(reason.into()))
}

/// What the pass did with a session it gave `verdict`; a restart, or a
/// session it could not read, is what its restart's `outcome` says, if one
/// ended (`first_refusal`: a freshness refusal was the first of its run,
/// which alone is recorded).
fn of_verdict(verdict: &Verdict, outcome: Option<&Outcome>, first_refusal: bool) -> Said {
    let ended = outcome.and_then(|o| of_outcome(o, first_refusal));
    match verdict {
        Verdict::Healthy => ("healthy", None),
        Verdict::Stopped => ("stopped", None),
        Verdict::Other(status) => said("unknown", format!("status {}", status.as_str())),
        Verdict::Undecided => said(
            "unknown",
            "in error, and whether it ever ran could not be read",
        ),
        Verdict::Held { why, .. } => said("held", why.to_string()),
        Verdict::BudgetSpent { .. } => said("held", Hold::BudgetSpent.to_string()),
        Verdict::Restart { .. } => ended.unwrap_or(("queued", None)),
        Verdict::Unread => {
            ended.unwrap_or_else(|| said("unknown", "its profile's list could not be read"))
        }
    }
}

/// What came of a restart that ended as `outcome`; `None` for an ending
/// that says nothing of it (a job that did nothing).
fn of_outcome(outcome: &Outcome, first_refusal: bool) -> Option<Said> {
    Some(match outcome {
        Outcome::Restarted { .. } => ("restarted", None),
        Outcome::WouldRestart => ("would-restart", None),
        Outcome::Failed { why, .. } => said("restart-failed", why.clone()),
        Outcome::Refused { reason, fresh, .. } if fresh.is_none() || first_refusal => said(
            "held",
            format!("agent-deck refused: agent-deck refused the restart: {reason}"),
        ),
        Outcome::Alive { evidence, .. } if evidence.reason == LivenessReason::AuthHold => {
            said("held", "auth_hold")
        }
        Outcome::Alive { evidence, .. } => said(
            "healthy",
            format!(
                "in error, but the liveness check found it alive ({})",
                evidence.reason
            ),
        ),
        Outcome::RateLimited => said("held", "backoff_429"),
        Outcome::Interrupted { .. } => said("unknown", "the restart was cut short"),
        Outcome::Unverified { why } => said("unknown", why.clone()),
        // Recorded `restart` before a refusal of a run already recorded, or
        // `restart-unsaved`: the pass says it queued them.
        Outcome::Refused { .. } | Outcome::Unsaved { .. } | Outcome::StoreLocked { .. } => {
            ("queued", None)
        }
        Outcome::Dropped(_)
        | Outcome::Resumed { .. }
        | Outcome::ResumeFailed { .. }
        | Outcome::Poller { .. } => return None,
    })
}

/// The readable form of what the pass did: the word, then the reason.
fn shown((word, reason): &Said) -> String {
    let word = match *word {
        "would-restart" => "would restart",
        "restart-failed" => "restart failed",
        "stopped" => "left alone: stopped",
        other => other,
    };
    match reason {
        Some(r) => format!("{word}: {}", printable(r, 2 * COLUMN_MAX)),
        None => word.to_owned(),
    }
}

/// Whether a session with a stall in the book is shown as stalled: alive,
/// or held for the unavailable model that is its stall.
fn stalled(v: &Verdict) -> bool {
    matches!(
        v,
        Verdict::Healthy
            | Verdict::Held {
                why: Hold::ModelUnavailable,
                ..
            }
    )
}

/// What the daemon notes during a `--once` pass, for its summary.
#[derive(Debug, Default)]
pub(crate) struct PassNotes {
    /// The critical sessions of the tick, the status it read of each and
    /// its verdict.
    pub critical: Vec<(Session, Option<Status>, Verdict)>,
    /// The other sessions in `RESUME_SCOPE`, each with the status read.
    pub beyond: Vec<(Option<Status>, Session)>,
    /// Sessions `list --all` listed.
    pub listed: usize,
    /// How each session's last restart job ended.
    pub ended: BTreeMap<String, Outcome>,
}

/// One restart-critical session of the pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Critical {
    pub title: String,
    pub id: String,
    pub profile: String,
    /// `None`: its profile's list could not be read.
    pub status: Option<Status>,
    pub because: String,
    pub did: Said,
}

/// Another listed session (`--verbose`), serialized as its JSON form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Other {
    pub title: String,
    pub id: String,
    pub profile: String,
    #[serde(serialize_with = "status_json")]
    pub status: Option<Status>,
}

/// Everything the summary says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Pass {
    pub dry_run: bool,
    /// Sessions `list --all` listed.
    pub listed: usize,
    pub critical: Vec<Critical>,
    /// The sessions beyond the critical ones (`RESUME_SCOPE=all`) that
    /// are stalled.
    pub stalled: Vec<Critical>,
    /// `Some` with `--verbose`.
    pub others: Option<Vec<Other>>,
}

#[derive(Serialize)]
struct CriticalJson<'a> {
    title: &'a str,
    id: &'a str,
    profile: &'a str,
    status: &'a str,
    critical_because: &'a str,
    action: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
}

#[derive(Serialize)]
struct PassJson<'a> {
    dry_run: bool,
    sessions_listed: usize,
    sessions_critical: usize,
    critical: Vec<CriticalJson<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stalled: Vec<CriticalJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    others: Option<&'a [Other]>,
}

fn status_word(s: Option<Status>) -> &'static str {
    s.map_or("unread", Status::as_str)
}

fn status_json<S: serde::Serializer>(s: &Option<Status>, to: S) -> Result<S::Ok, S::Error> {
    to.serialize_str(status_word(*s))
}

/// The summary as one JSON object and a newline.
pub(crate) fn json(p: &Pass) -> String {
    fn row(c: &Critical) -> CriticalJson<'_> {
        CriticalJson {
            title: &c.title,
            id: &c.id,
            profile: &c.profile,
            status: status_word(c.status),
            critical_because: &c.because,
            action: c.did.0,
            reason: c.did.1.as_deref(),
        }
    }
    let out = PassJson {
        dry_run: p.dry_run,
        sessions_listed: p.listed,
        sessions_critical: p.critical.len(),
        critical: p.critical.iter().map(row).collect(),
        stalled: p.stalled.iter().map(row).collect(),
        others: p.others.as_deref(),
    };
    serde_json::to_string(&out).unwrap_or_else(|_| "{}".into()) + "\n"
}

/// The readable block: a head line, one aligned line per critical (or
/// other stalled) session, then the other sessions, one line each with
/// `--verbose`, else a count.
pub(crate) fn text(p: &Pass) -> String {
    let others = p.listed.saturating_sub(p.critical.len() + p.stalled.len());
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut out = format!(
        "pass summary{}: {} listed, {} restart-critical\n",
        if p.dry_run { " (dry-run)" } else { "" },
        plural(p.listed, "session", "sessions"),
        p.critical.len()
    );
    let rows: Vec<[String; 6]> = (p.critical.iter().chain(&p.stalled))
        .map(|c| {
            [
                printable(&c.title, COLUMN_MAX),
                printable(&c.id, COLUMN_MAX),
                printable(&c.profile, COLUMN_MAX),
                status_word(c.status).to_owned(),
                printable(&c.because, COLUMN_MAX),
                shown(&c.did),
            ]
        })
        .collect();
    let width = |k: usize| rows.iter().map(|r| r[k].chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..5).map(width).collect();
    for r in &rows {
        let cells = r.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}"));
        let line = cells.chain([r[5].clone()]).collect::<Vec<_>>().join("  ");
        out += &format!("  {line}\n");
    }
    match &p.others {
        Some(list) => {
            for o in list {
                out += &format!(
                    "  other: {}  {}  {}  {}\n",
                    printable(&o.title, COLUMN_MAX),
                    printable(&o.id, COLUMN_MAX),
                    printable(&o.profile, COLUMN_MAX),
                    status_word(o.status)
                );
            }
        }
        None if others > 0 => {
            out += &format!(
                "  {} not restart-critical (--verbose lists them)\n",
                plural(others, "other session", "other sessions")
            );
        }
        None => {}
    }
    out
}

/// What a `--once` pass saw and did, from its `notes` (with every restart
/// ending in), the book and the fleet, at `now`.
pub(super) fn pass(
    notes: PassNotes,
    st: &State,
    fleet: &Fleet,
    dry_run: bool,
    now: f64,
    others: Option<Vec<Other>>,
) -> Pass {
    let first_refusal = |id: &str| {
        let book = st.sessions.get(id);
        book.and_then(|b| b.refusal.as_ref())
            .is_some_and(|r| r.refused == 1)
    };
    let tz = jiff::tz::TimeZone::system();
    let stall = |id: &str| Some(st.sessions.get(id)?.stall.as_ref()?.said(now, &tz));
    let beyond = (notes.beyond.into_iter())
        .filter_map(|(status, s)| {
            let did = said("stalled", stall(&s.id)?);
            let because = "RESUME_SCOPE=all".to_owned();
            Some(Critical {
                title: s.title,
                id: s.id,
                profile: s.profile,
                status,
                because,
                did,
            })
        })
        .collect();
    let critical = notes
        .critical
        .into_iter()
        .map(|(s, status, verdict)| {
            let did = match stall(&s.id) {
                Some(stall) if stalled(&verdict) => said("stalled", stall),
                _ => of_verdict(&verdict, notes.ended.get(&s.id), first_refusal(&s.id)),
            };
            Critical {
                because: fleet.critical_reason(&s).unwrap_or_default(),
                title: s.title,
                id: s.id,
                profile: s.profile,
                status,
                did,
            }
        })
        .collect();
    Pass {
        dry_run,
        listed: notes.listed,
        critical,
        stalled: beyond,
        others,
    }
}

/// Prints `pass` on stdout, as JSON with `--json`.
pub(super) fn print(pass: &Pass, json: bool) -> error::Result<()> {
    let out = if json { self::json(pass) } else { text(pass) };
    crate::sys::fs::print_stdout(&out)
        .map_err(|e| Error::runtime(format!("cannot write the pass summary to stdout: {e}")))
}

/// `--once --verbose`: every listed session that is not restart-critical,
/// with its status: one more `list --all` and one `-p P list` per profile
/// holding one (`list --all` prints no status).
pub(super) fn others(deck: &dyn AgentDeck, fleet: &Fleet) -> Vec<Other> {
    let mut others: Vec<Other> = Vec::new();
    let listed = deck.list_all(&mut |row| {
        let s = row.session();
        if fleet.critical_reason(&s).is_none() {
            others.push(Other {
                title: s.title,
                id: s.id,
                profile: s.profile,
                status: None,
            });
        }
    });
    if let Err(e) = listed {
        log::warn!(
            "cannot list the other sessions ({e}); the summary names only the critical ones"
        );
    }
    let profiles: BTreeSet<String> = others.iter().map(|o| o.profile.clone()).collect();
    for profile in profiles {
        let mut status = BTreeMap::new();
        let read = deck.list_profile(&profile, &mut |row| {
            status.insert(row.id.to_string(), row.status);
        });
        if let Err(e) = read {
            log::warn!("statuses of profile '{profile}' are unreadable ({e}); its other sessions show as unread");
        }
        for o in others.iter_mut().filter(|o| o.profile == profile) {
            o.status = status.get(&o.id).copied().flatten();
        }
    }
    others
}

#[cfg(test)]
mod tests {
    use super::*;

    fn critical(title: &str, status: Status, did: Said) -> Critical {
        Critical {
            title: title.into(),
            id: format!("{:0>8}-1755890000", title.len()),
            profile: "default".into(),
            status: Some(status),
            because: "group conductor".into(),
            did,
        }
    }

    fn pass() -> Pass {
        Pass {
            dry_run: true,
            listed: 5,
            critical: vec![
                critical("conductor-ops", Status::Error, ("would-restart", None)),
                critical("conductor-two", Status::Running, ("healthy", None)),
                critical(
                    "conductor-new",
                    Status::Error,
                    said("held", "never_started"),
                ),
                critical("conductor-off", Status::Stopped, ("stopped", None)),
            ],
            stalled: Vec::new(),
            others: None,
        }
    }

    #[test]
    fn the_block_is_one_aligned_line_per_critical_session_and_a_count() {
        let text = text(&pass());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "pass summary (dry-run): 5 sessions listed, 4 restart-critical"
        );
        assert_eq!(
            lines[1],
            "  conductor-ops  00000013-1755890000  default  error    group conductor  would restart"
        );
        assert!(
            lines[2].ends_with("running  group conductor  healthy"),
            "{}",
            lines[2]
        );
        assert!(lines[3].ends_with("held: never_started"), "{}", lines[3]);
        assert!(lines[4].ends_with("left alone: stopped"), "{}", lines[4]);
        assert_eq!(
            lines[5],
            "  1 other session not restart-critical (--verbose lists them)"
        );
        assert_eq!(lines.len(), 6);
    }

    #[test]
    fn another_stalled_session_is_a_line_of_the_block_and_not_counted_twice() {
        let mut p = pass();
        let mut worker = critical("worker", Status::Idle, said("stalled", "usage-limit"));
        worker.because = "RESUME_SCOPE=all".into();
        p.stalled = vec![worker];
        let text = text(&p);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[5].starts_with("  worker         ")
                && lines[5].ends_with("idle     RESUME_SCOPE=all  stalled: usage-limit"),
            "{text}"
        );
        assert_eq!(lines.len(), 6, "no other session left to count: {text}");
        let v: serde_json::Value = serde_json::from_str(&json(&p)).unwrap();
        assert_eq!(v["stalled"][0]["critical_because"], "RESUME_SCOPE=all");
        assert_eq!(v["sessions_critical"], 4);
        assert!(!json(&pass()).contains("stalled"));
    }

    #[test]
    fn verbose_lists_the_others_and_json_is_one_object_with_every_key() {
        let mut p = pass();
        p.others = Some(vec![Other {
            title: "worker\x1b[2J".into(),
            id: "77777777-1755890000".into(),
            profile: "default".into(),
            status: None,
        }]);
        let text = text(&p);
        assert!(
            text.ends_with("  other: worker\\u{1b}[2J  77777777-1755890000  default  unread\n"),
            "{text}"
        );
        let v: serde_json::Value = serde_json::from_str(&json(&p)).unwrap();
        assert_eq!(v["sessions_listed"], 5);
        assert_eq!(v["sessions_critical"], 4);
        assert_eq!(v["dry_run"], true);
        assert_eq!(v["critical"][0]["action"], "would-restart");
        assert_eq!(v["critical"][0]["critical_because"], "group conductor");
        assert_eq!(v["critical"][2]["reason"], "never_started");
        assert!(v["critical"][1].get("reason").is_none());
        assert_eq!(v["others"][0]["status"], "unread");
        assert!(json(&pass()).contains("\"critical\":[") && !json(&pass()).contains("others"));
    }

    #[test]
    fn a_queued_restart_reads_what_its_outcome_says() {
        use crate::decide::restart::liveness::Evidence;
        use crate::decide::restart::refusal::Freshness;
        use crate::decide::restart::Dropped;
        let alive = |reason| Outcome::Alive {
            evidence: Evidence {
                reads: Vec::new(),
                pane: Default::default(),
                auth_hold_reason: None,
                reason,
                proof: None,
            },
            gap_s: 1.0,
        };
        let refused = |fresh: Option<Freshness>| Outcome::Refused {
            reason: "busy".into(),
            fresh,
            call: Default::default(),
        };
        let fresh = Some(Freshness {
            age: None,
            window: None,
        });
        let held = |r: &str| Some(said("held", r));
        let unknown = |r: &str| Some(said("unknown", r));
        let refusal = "agent-deck refused: agent-deck refused the restart: busy";
        let why = || "w".to_owned();
        #[rustfmt::skip]
        let table = [
            (Outcome::Restarted { status: Status::Idle, tmux: None }, false, Some(("restarted", None))),
            (Outcome::WouldRestart, false, Some(("would-restart", None))),
            (Outcome::Failed { why: why(), spawn: None }, false, Some(said("restart-failed", why()))),
            (refused(None), false, held(refusal)),
            (refused(fresh), true, held(refusal)),
            (refused(fresh), false, Some(("queued", None))),
            (alive(LivenessReason::AuthHold), false, held("auth_hold")),
            (alive(LivenessReason::PaneActive), false, Some(said("healthy",
                "in error, but the liveness check found it alive (pane_active)"))),
            (Outcome::RateLimited, false, held("backoff_429")),
            (Outcome::Interrupted { why: why() }, false, unknown("the restart was cut short")),
            (Outcome::Unverified { why: why() }, false, unknown("w")),
            (Outcome::Unsaved { why: why(), tmux: None, store: true }, false, Some(("queued", None))),
            (Outcome::StoreLocked { why: why() }, false, Some(("queued", None))),
            (Outcome::Dropped(Dropped::Stopped), false, None),
        ];
        for (outcome, first, want) in table {
            assert_eq!(of_outcome(&outcome, first), want, "{outcome:?}");
        }
        let restart = Verdict::Restart {
            slot: 1.0,
            ending: None,
        };
        let dropped = Outcome::Dropped(Dropped::Shutdown);
        assert_eq!(of_verdict(&restart, None, false), ("queued", None));
        assert_eq!(
            of_verdict(&restart, Some(&dropped), false),
            ("queued", None)
        );
        assert_eq!(
            of_verdict(&Verdict::Unread, None, false),
            said("unknown", "its profile's list could not be read")
        );
    }
}
