//! What `history` prints from records already read: the readable line
//! (record text made printable and clipped), the `--json` line (the typed
//! record) and the `--report` block, with the time zone and `now` passed in.
//! Reads no file or clock; the records have no field for pane text or a
//! secret, and the settings arrive rendered by `Config::describe`.

use std::collections::{BTreeMap, HashMap};

use jiff::tz::TimeZone;
use jiff::Timestamp;

use super::timeline::{one_per_decision, select, titles, Record, Since};
use super::{Args, View};
use crate::error::{Error, Result};
use crate::records::audit::{
    Detail, EscalationRecord, LivenessRecord, PaneSamples, RestartAction, RestartRecord,
    StatusRead, ESCALATIONS_LOG, LIVENESS_LOG, RESTART_LOG,
};
use crate::text::printable;

/// Clipping bounds for text from the records in readable form.
const TITLE_MAX: usize = 60;
const ID_MAX: usize = 64;
const WORD_MAX: usize = 40;
const TEXT_MAX: usize = 300;

/// `ts` (float Unix seconds) in `tz` with a strftime format; a time jiff
/// cannot represent is shown as the raw number.
fn local(ts: f64, tz: &TimeZone, format: &str) -> String {
    // `as` saturates: a time past jiff's range fails to convert.
    let ms = (ts * 1000.0).round();
    match Timestamp::from_millisecond(ms as i64) {
        Ok(t) if ms.is_finite() => t.to_zoned_datetime(tz.clone()).strftime(format).to_string(),
        _ => format!("ts {ts}"),
    }
}

/// `2026-11-30 03:12:04 CET`
pub(crate) fn local_time(ts: f64, tz: &TimeZone) -> String {
    local(ts, tz, "%Y-%m-%d %H:%M:%S %Z")
}

/// A pane digest clipped to `max` characters, `-` when there is none.
fn digest(d: &str, max: usize) -> String {
    if d.is_empty() {
        return "-".into();
    }
    printable(d, max)
}

fn pane_summary(p: &PaneSamples) -> String {
    if p.first.is_empty() && p.second.is_empty() {
        return "pane not sampled".into();
    }
    if p.sampled && !p.changed {
        let blank = if p.empty { ", blank" } else { "" };
        return format!("pane {} unchanged{blank}", digest(&p.first, 8));
    }
    format!("pane {}→{}", digest(&p.first, 8), digest(&p.second, 8))
}

/// `error` or `error/auth-401`.
fn status_read(r: &StatusRead) -> String {
    let status = printable(&r.status, WORD_MAX);
    match r.substate.as_deref().filter(|s| !s.is_empty()) {
        Some(sub) => format!("{status}/{}", printable(sub, WORD_MAX)),
        None => status,
    }
}

fn liveness_text(r: &LivenessRecord) -> String {
    let reads: Vec<String> = r.reads.iter().map(status_read).collect();
    let mut parts = vec![
        if reads.is_empty() {
            "status not read".to_owned()
        } else {
            format!("status {}", reads.join("→"))
        },
        pane_summary(&r.pane),
        format!("gap {:.1}s", r.gap_s),
    ];
    if let Some(n) = r.consecutive_skips {
        parts.push(format!("{n} in a row"));
    }
    if let Some(why) = &r.auth_hold_reason {
        parts.push(format!("auth hold {}", printable(why, TEXT_MAX)));
    }
    format!(
        "liveness: {} {} ({})",
        printable(&r.decision, WORD_MAX),
        r.reason,
        parts.join(", ")
    )
}

fn restart_text(r: &RestartRecord, tz: &TimeZone) -> String {
    let mut parts = Vec::new();
    if let Detail::Stall(d) = &r.detail {
        parts.push(printable(&d.kind, WORD_MAX));
        parts.extend(d.attempt.map(|n| format!("resume {n}")));
        // A full context's remedy, and what it saw when it began.
        if let Some(remedy) = &d.remedy {
            parts.push(printable(remedy, TEXT_MAX));
            let began = ["stall-detected", "context-cleared"].contains(&r.action.as_str());
            parts.extend(began.then(|| printable(&d.evidence, TEXT_MAX)));
        } else {
            let from = printable(&d.resume_from, WORD_MAX);
            parts.push(format!(
                "resume at {} from {from}",
                local_time(d.resume_at, tz)
            ));
        }
    }
    if let Some(reason) = r.reason.as_deref().filter(|s| !s.is_empty()) {
        parts.push(printable(reason, TEXT_MAX));
    }
    match &r.detail {
        Detail::RateLimited { backoff_s } => parts.push(format!("backoff {backoff_s:.0}s")),
        Detail::Restarted { final_status: s } => {
            parts.push(format!("final status {}", printable(s, WORD_MAX)));
        }
        Detail::Stale { stuck_for_s } => parts.push(format!("stuck for {stuck_for_s:.0}s")),
        _ => {}
    }
    let action = printable(r.action.as_str(), WORD_MAX);
    if parts.is_empty() {
        format!("action: {action}")
    } else {
        format!("action: {action} ({})", parts.join(", "))
    }
}

fn escalation_text(r: &EscalationRecord) -> String {
    let severity = printable(r.severity.as_str(), WORD_MAX);
    let telegram = if r.telegram { " (telegram)" } else { "" };
    format!(
        "escalation: {severity}: {}{telegram}",
        printable(&r.message, TEXT_MAX)
    )
}

/// Who a line is about: `title (id)`, `(id)` when no title is known, or
/// `fleet` for an alert about no one session (a cascade, the breaker).
fn who(e: &Record, titles: &HashMap<&str, &str>) -> String {
    let Some(id) = e.session() else {
        return "fleet".into();
    };
    let title = e
        .names()
        .map(|(t, _)| t)
        .or_else(|| titles.get(id).copied());
    match title {
        Some(t) => format!("{} ({})", printable(t, TITLE_MAX), printable(id, ID_MAX)),
        None => format!("({})", printable(id, ID_MAX)),
    }
}

/// The readable line of one entry:
/// `2026-11-30 03:12:04 CET  conductor-ops (3f9c2a1b-1755891234)  liveness: skip pane_active (…)`.
pub(crate) fn line(e: &Record, titles: &HashMap<&str, &str>, tz: &TimeZone) -> String {
    let (what, dry_run) = match e {
        Record::Liveness(r) => (liveness_text(r), r.dry_run),
        Record::Restart(r) => (restart_text(r, tz), r.dry_run),
        Record::Escalation(r) => (escalation_text(r), r.dry_run),
    };
    let (when, who) = (local_time(e.ts(), tz), who(e, titles));
    let dry = if dry_run { " [dry-run]" } else { "" };
    format!("{when}  {who}  {what}{dry}")
}

/// What the report says about the program and where it runs.
#[derive(Debug, Clone)]
pub(crate) struct About {
    pub version: String,
    pub platform: String,
    /// `--print-config`'s table, secrets already shown as set or unset.
    pub settings: String,
}

/// What every part of a report reads.
struct Reporter<'a> {
    since: &'a Since,
    about: &'a About,
    /// Every record read: the last-seen fields come from the newest,
    /// whatever the window.
    all: &'a [Record],
    titles: HashMap<&'a str, &'a str>,
    tz: &'a TimeZone,
}

impl Reporter<'_> {
    /// The fields the watchdog last used for the session `id`, from its records.
    fn last_seen(&self, id: &str) -> Vec<String> {
        let (mine, tz) = (select(self.all, Some(id), None), self.tz);
        let mut out = vec!["last seen by the watchdog".to_owned()];
        match mine.iter().rev().find_map(|e| Some((*e, e.names()?))) {
            Some((e, (title, profile))) => {
                out.push(format!("  title      {}", printable(title, TEXT_MAX)));
                out.push(format!("  profile    {}", printable(profile, TEXT_MAX)));
                out.push(format!(
                    "  as of      {}, {}",
                    local_time(e.ts(), tz),
                    e.log().file()
                ));
            }
            None => out.push("  title      unknown (only escalations mention it)".into()),
        }
        let liveness = mine.iter().rev().find_map(|e| match e {
            Record::Liveness(r) => Some(r),
            _ => None,
        });
        let Some(r) = liveness else {
            out.push("  liveness   no liveness check on record".into());
            return out;
        };
        out.push(format!(
            "  liveness   {}: {} {}",
            local_time(r.ts, tz),
            printable(&r.decision, WORD_MAX),
            r.reason
        ));
        for (i, read) in r.reads.iter().enumerate() {
            out.push(format!(
                "    read {}   {}  {}",
                i + 1,
                local(read.ts, tz, "%Y-%m-%d %H:%M:%S%.3f %Z"),
                status_read(read)
            ));
        }
        let yes_no = |b: bool, yes: &str, no: &str| if b { yes } else { no }.to_owned();
        out.push(format!(
            "    pane     first {}, second {}; {}, {}, {}",
            digest(&r.pane.first, WORD_MAX),
            digest(&r.pane.second, WORD_MAX),
            yes_no(r.pane.sampled, "sampled", "not sampled"),
            yes_no(r.pane.changed, "changed", "unchanged"),
            yes_no(r.pane.empty, "blank", "not blank"),
        ));
        out.push(format!("    gap      {:.1}s", r.gap_s));
        if let Some(n) = r.consecutive_skips {
            out.push(format!("    consecutive skips  {n}"));
        }
        if let Some(why) = &r.auth_hold_reason {
            out.push(format!("    auth hold  {}", printable(why, TEXT_MAX)));
        }
        out.push(format!("    dry run  {}", yes_no(r.dry_run, "yes", "no")));
        out
    }

    /// The paste-ready block of `history ID --report`; `timeline` is the
    /// session's readable entries within the window.
    fn report(&self, id: &str, timeline: &[&Record]) -> String {
        let session = format!("session    {}", printable(id, ID_MAX));
        let mut body = self.header("agent-deck-watchdog history report", session);
        body.extend(self.last_seen(id));
        body.push(String::new());
        body.extend(self.timeline_block(timeline, ""));
        fenced(&body)
    }

    /// The head of a report: its title, the version, platform, `what` it is
    /// about, the time zone (its IANA name, or its abbreviation at the newest
    /// record) and the settings.
    fn header(&self, title: &str, what: String) -> Vec<String> {
        let (about, tz) = (self.about, self.tz);
        let zone = match (tz.iana_name(), self.all.last()) {
            (Some(name), _) => printable(name, WORD_MAX),
            (None, Some(e)) => local(e.ts(), tz, "%Z"),
            (None, None) => "system time zone".into(),
        };
        let mut body = vec![
        title.to_owned(),
        format!("version    {}", printable(&about.version, TEXT_MAX)),
        format!("platform   {}", printable(&about.platform, TEXT_MAX)),
        what,
        format!("times      local ({zone})"),
        String::new(),
        "settings (as --print-config shows them in this environment; secrets only as set/unset)"
            .to_owned(),
    ];
        body.extend(
            about
                .settings
                .lines()
                .map(|l| format!("  {}", printable(l, TEXT_MAX + 200))),
        );
        body.push(String::new());
        body
    }

    /// A session's readable timeline in the window, each line indented after `indent`.
    fn timeline_block(&self, timeline: &[&Record], indent: &str) -> Vec<String> {
        let mut out = vec![format!(
            "{indent}timeline, {} ({} entries, oldest first)",
            self.since.describe(),
            timeline.len()
        )];
        if timeline.is_empty() {
            out.push(format!("{indent}  (none in this window; try --since all)"));
        }
        out.extend(
            timeline
                .iter()
                .map(|e| format!("{indent}  {}", line(e, &self.titles, self.tz))),
        );
        out
    }

    /// The paste-ready block of `history --report` without an id: every
    /// session with records in the window, worst first (most restarts, then
    /// holds, then escalations), each with what `history ID --report` shows of
    /// it, the alerts about no one session, then one line of totals.
    fn fleet_report(&self, window: &[&Record]) -> String {
        let (mut by_id, mut fleet) = (BTreeMap::<&str, Vec<&Record>>::new(), Vec::new());
        for &e in window {
            match e.session() {
                Some(id) => by_id.entry(id).or_default().push(e),
                None => fleet.push(e),
            }
        }
        let mut sessions: Vec<(Tally, &str, Vec<&Record>)> = by_id
            .into_iter()
            .map(|(id, mine)| {
                let mine = one_per_decision(&mine);
                (Tally::of(&mine), id, mine)
            })
            .collect();
        sessions.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        let what = format!(
            "sessions   {} with records, {}",
            sessions.len(),
            self.since.describe()
        );
        let mut body = self.header("agent-deck-watchdog fleet report", what);
        for (tally, id, mine) in &sessions {
            let name = (self.titles)
                .get(id)
                .map_or_else(String::new, |t| format!("{} ", printable(t, TITLE_MAX)));
            body.push(format!(
                "session {name}({}): {}",
                printable(id, ID_MAX),
                tally.shown()
            ));
            body.extend(self.last_seen(id).into_iter().map(|l| format!("  {l}")));
            body.extend(self.timeline_block(mine, "  "));
            body.push(String::new());
        }
        if !fleet.is_empty() {
            body.push(format!(
                "about no one session (cascades, the breaker): {}",
                Tally::of(&fleet).shown()
            ));
            body.extend(
                fleet
                    .iter()
                    .map(|e| format!("  {}", line(e, &self.titles, self.tz))),
            );
            body.push(String::new());
        }
        if sessions.is_empty() && fleet.is_empty() {
            body.push("(no records in this window; try --since all)".into());
        }
        body.push(format!(
            "totals: {} sessions, {}, {}",
            sessions.len(),
            // A skipped-alive record counts nowhere, so the window's tally is
            // the sum of the sessions' and the fleet's.
            Tally::of(window).shown(),
            self.since.describe()
        ));
        fenced(&body)
    }
}

/// The lines in a fence longer than any run of backticks inside, so a title
/// or a setting cannot close the block early.
fn fenced(body: &[String]) -> String {
    let body = body.join("\n");
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}text\n{body}\n{fence}\n")
}

/// What one session's records in the window add up to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Tally {
    restarts: usize,
    holds: usize,
    escalations: usize,
}

impl Tally {
    fn of(timeline: &[&Record]) -> Tally {
        let mut t = Tally::default();
        for e in timeline {
            match e {
                Record::Restart(r) => match r.action {
                    RestartAction::Restart => t.restarts += 1,
                    RestartAction::Skipped
                    | RestartAction::CliRefused
                    | RestartAction::RateLimited => t.holds += 1,
                    _ => {}
                },
                Record::Escalation(_) => t.escalations += 1,
                Record::Liveness(_) => {}
            }
        }
        t
    }

    fn shown(self) -> String {
        let n =
            |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
        format!(
            "{}, {}, {}",
            n(self.restarts, "restart", "restarts"),
            n(self.holds, "hold", "holds"),
            n(self.escalations, "escalation", "escalations")
        )
    }
}

/// What a `history` run prints: stdout, and notes for stderr.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Rendered {
    pub stdout: String,
    pub notes: Vec<String>,
}

/// Everything `history` prints, from the records already read. An `id` that
/// no record mentions is an error (exit 1), so a script can tell it from an
/// empty window (exit 0 with a note on stderr).
pub(crate) fn render(
    args: &Args,
    all: &[Record],
    now: f64,
    about: &About,
    tz: &TimeZone,
) -> Result<Rendered> {
    let id = args.id.as_deref();
    if let Some(id) = id.filter(|id| !all.iter().any(|e| e.session() == Some(*id))) {
        return Err(Error::runtime(format!(
            "no record mentions session {:?}: it is in none of {LIVENESS_LOG}, {RESTART_LOG}, \
             {ESCALATIONS_LOG} or their .1 files",
            printable(id, ID_MAX)
        )));
    }
    let timeline = select(all, id, args.since.cutoff(now));
    let mut out = Rendered::default();
    if timeline.is_empty() {
        let whose = id.map_or(String::new(), |id| {
            format!(" for session {}", printable(id, ID_MAX))
        });
        let newest = select(all, id, None).last().map_or(String::new(), |e| {
            format!(
                "; the newest is from {} (see --since)",
                local_time(e.ts(), tz)
            )
        });
        out.notes.push(format!(
            "no records{whose} in {}{newest}",
            args.since.describe()
        ));
    }
    let titles = titles(all);
    out.stdout = match args.view {
        View::Report => {
            let r = Reporter {
                since: &args.since,
                about,
                all,
                titles,
                tz,
            };
            match id {
                Some(id) => r.report(id, &one_per_decision(&timeline)),
                None => r.fleet_report(&timeline),
            }
        }
        View::Json => timeline
            .iter()
            .map(|e| serde_json::to_string(e).map(|line| line + "\n"))
            .collect::<serde_json::Result<String>>()
            .map_err(|e| Error::runtime(format!("history: cannot write a record as JSON: {e}")))?,
        View::Lines => {
            let lines = one_per_decision(&timeline).into_iter();
            lines.map(|e| line(e, &titles, tz) + "\n").collect()
        }
    };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::timeline::{merge, Log};
    use super::*;
    use serde_json::Value;

    #[test]
    fn readable_form_is_pinned() {
        let want = "\
2026-11-30 03:11:32 CET  conductor-auth (9a8b7c6d-1755891400)  action: skipped-alive (auth_hold)
2026-11-30 03:11:33 CET  conductor-auth (9a8b7c6d-1755891400)  escalation: auth-hold: conductor-auth is auth-held: log in again (telegram)
2026-11-30 03:12:02 CET  conductor-ops (3f9c2a1b-1755891234)  liveness: skip pane_active (status error/crashed→error, pane a1b2c3d4…→c3d4e5f6…, gap 2.0s)
2026-11-30 03:13:02 CET  conductor-ops (3f9c2a1b-1755891234)  liveness: restart confirmed_dead (status error/crashed→error, pane a1b2c3d4… unchanged, gap 2.0s)
2026-11-30 03:13:02 CET  conductor-ops (3f9c2a1b-1755891234)  action: restart
2026-11-30 03:13:08 CET  conductor-ops (3f9c2a1b-1755891234)  action: restarted (final status running)
2026-11-30 03:13:12 CET  conductor-ops (3f9c2a1b-1755891234)  action: skipped (budget_spent) [dry-run]
2026-11-30 03:13:32 CET  fleet  escalation: cascade-detected: 5 critical sessions in error at once";
        assert_eq!(lines_of(&night(), None), want);
    }

    #[test]
    fn a_full_context_s_remedy_is_named_at_each_step() {
        let stall = |action: &str, attempt: Option<u32>| {
            let extra = serde_json::json!({"kind": "context-exhausted", "evidence":
                "pane and last message: Prompt is too long", "resume_at": T0,
                "resume_from": "seen", "attempt": attempt,
                "remedy": "/clear then re-brief (clear_on_compact)"});
            restart(T0, OPS, "conductor-ops", action, extra)
        };
        let lines = [
            stall("stall-detected", None),
            stall("clear-sent", None),
            stall("resume-sent", Some(1)),
        ];
        let all = entries(Log::Restart, &lines);
        let out = lines_of(&all, None);
        assert_eq!(out.lines().count(), 3, "{out}");
        let want = [
            "action: stall-detected (context-exhausted, /clear then re-brief (clear_on_compact), pane and last message: Prompt is too long)",
            "action: clear-sent (context-exhausted, /clear then re-brief (clear_on_compact))",
            "action: resume-sent (context-exhausted, resume 1, /clear then re-brief (clear_on_compact))",
        ];
        for (line, want) in out.lines().zip(want) {
            assert!(line.ends_with(want), "{line}");
        }
    }

    #[test]
    fn summer_time_shows_its_own_abbreviation() {
        // 2026-07-01 12:00:00 UTC
        assert_eq!(
            local_time(1_782_907_200.0, &cet()),
            "2026-07-01 14:00:00 CEST"
        );
        assert_eq!(local_time(T0, &TimeZone::UTC), "2026-11-30 02:12:02 UTC");
        for t in [f64::NAN, f64::INFINITY, 1e300] {
            assert!(local_time(t, &cet()).starts_with("ts "));
        }
    }

    #[test]
    fn control_characters_in_titles_are_escaped_and_text_clipped() {
        let title = "evil\x1b[31m\u{202e}\n2026-11-30 03:00:00 CET  forged (x)  restart: restarted";
        let all = entries(
            Log::Restart,
            &[restart(
                T0,
                OPS,
                title,
                &"a".repeat(500),
                serde_json::json!({"reason": "r\r\n".repeat(200)}),
            )],
        );
        let out = lines_of(&all, None);
        assert_eq!(out.lines().count(), 1, "{out}");
        assert!(!out.chars().any(|c| c.is_control()), "{out:?}");
        assert!(out.contains("evil\\u{1b}[31m\\u{202e}\\n2026"), "{out}");
        assert!(
            !out.contains('\u{202e}') && out.contains("\\u{202e}"),
            "{out}"
        );
        assert!(out.contains("aaa…") && out.contains("r\\r\\n…"), "{out}");
        assert!(out.chars().count() < 600, "{}", out.chars().count());
        assert_eq!(printable("héllo wörld", 5), "héllo…");
        assert_eq!(printable("tab\there", 80), "tab\\there");
    }

    #[test]
    fn json_lines_are_the_typed_records_plus_log_and_nothing_else() {
        let mut line_with_stray_keys: Value =
            serde_json::from_str(&restart(T0, OPS, "a", "restart", Value::Null)).unwrap();
        line_with_stray_keys["pane_text"] = serde_json::json!("$ cat ~/.ssh/id_rsa");
        line_with_stray_keys["log"] = serde_json::json!("forged");
        let all = merge(vec![
            entries(Log::Restart, &[line_with_stray_keys.to_string()]),
            entries(Log::Liveness, &[liveness(T0 + 1.0, OPS, "a", true)]),
            entries(
                Log::Escalations,
                &[escalation(T0 + 2.0, "cascade", None, "m")],
            ),
        ]);
        let json = Args {
            id: None,
            since: Since::All,
            view: View::Json,
        };
        let out = render(&json, &all, T0, &about(), &cet()).unwrap().stdout;
        let out: Vec<&str> = out.lines().collect();
        assert!(out[0].starts_with("{\"log\":\"restart\","), "{}", out[0]);
        assert!(
            !out[0].contains("pane_text") && !out[0].contains("forged"),
            "{}",
            out[0]
        );
        for (line, record) in out.iter().zip(&all) {
            let v: Value = serde_json::from_str(line).unwrap();
            assert_eq!(
                v["log"].as_str(),
                record.log().file().strip_suffix(".log"),
                "{line}"
            );
        }
        let back: RestartRecord = serde_json::from_str(out[0]).unwrap();
        assert_eq!(Record::Restart(back), all[0]);
        let back: LivenessRecord = serde_json::from_str(out[1]).unwrap();
        assert_eq!(Record::Liveness(back), all[1]);
        let back: EscalationRecord = serde_json::from_str(out[2]).unwrap();
        assert_eq!(Record::Escalation(back), all[2]);
    }

    #[test]
    fn json_timestamps_keep_every_digit_of_the_file() {
        // Best-effort float parsing read this as …857.913443.
        let line = restart(1_796_062_857.913_443_3, OPS, "a", "restart", Value::Null);
        assert!(line.contains("1796062857.9134433"), "{line}");
        let all = entries(Log::Restart, &[line]);
        let json = Args {
            id: None,
            since: Since::All,
            view: View::Json,
        };
        let out = render(&json, &all, T0, &about(), &cet()).unwrap().stdout;
        assert!(out.contains("\"ts\":1796062857.9134433"), "{out}");
    }

    #[test]
    fn report_holds_version_settings_last_seen_fields_and_timeline() {
        let all = night();
        let args = Args {
            id: Some(OPS.into()),
            since: Since::default(),
            view: View::Report,
        };
        let out = render(&args, &all, T0 + 100.0, &about(), &cet()).unwrap();
        let r = &out.stdout;
        assert!(r.starts_with("```text\n") && r.ends_with("\n```\n"), "{r}");
        for want in [
            "version    0.1.0",
            "platform   linux/x86_64",
            "session    3f9c2a1b-1755891234",
            "times      local (CET)",
            "  TELEGRAM_BOT_TOKEN  (set, not shown)  (environment)",
            "  title      conductor-ops",
            "  profile    default",
            "  as of      2026-11-30 03:13:12 CET, restart.log",
            "  liveness   2026-11-30 03:13:02 CET: restart confirmed_dead",
            "    read 1   2026-11-30 03:12:59.600 CET  error/crashed",
            "    read 2   2026-11-30 03:13:01.900 CET  error",
            "    pane     first a1b2c3d4e5f6a7b8, second a1b2c3d4e5f6a7b8; sampled, unchanged, not blank",
            "    gap      2.0s",
            "timeline, the last 24h (5 entries, oldest first)",
            "  2026-11-30 03:13:08 CET  conductor-ops (3f9c2a1b-1755891234)  action: restarted (final status running)",
        ] {
            assert!(r.lines().any(|l| l == want), "{want:?} missing from\n{r}");
        }
        assert!(!r.contains(AUTH) && !r.contains("cascade"), "{r}");
        assert!(out.notes.is_empty(), "{:?}", out.notes);
    }

    #[test]
    fn report_fence_outlasts_backticks_in_the_records() {
        let all = entries(
            Log::Restart,
            &[restart(T0, OPS, "a ````` b", "restart", Value::Null)],
        );
        let args = Args {
            id: Some(OPS.into()),
            since: Since::All,
            view: View::Report,
        };
        let r = render(&args, &all, T0, &about(), &cet()).unwrap().stdout;
        assert!(
            r.starts_with("``````text\n") && r.ends_with("\n``````\n"),
            "{r}"
        );
    }

    #[test]
    fn unknown_id_is_an_error_and_an_empty_window_a_note() {
        let all = night();
        let args = |id: &str, since: Since| Args {
            id: Some(id.into()),
            since,
            view: View::Lines,
        };
        let err = render(
            &args("nope-1", Since::default()),
            &all,
            T0,
            &about(),
            &cet(),
        )
        .unwrap_err();
        assert_eq!(err.exit_code(), 1);
        assert!(
            err.to_string()
                .contains("no record mentions session \"nope-1\""),
            "{err}"
        );
        let late = T0 + 3.0 * 86_400.0;
        let out = render(&args(AUTH, Since::default()), &all, late, &about(), &cet()).unwrap();
        assert_eq!(out.stdout, "");
        assert_eq!(
            out.notes,
            [
                "no records for session 9a8b7c6d-1755891400 in the last 24h; \
              the newest is from 2026-11-30 03:11:33 CET (see --since)"
            ]
        );
        let out = render(&args(AUTH, Since::All), &all, late, &about(), &cet()).unwrap();
        assert_eq!((out.stdout.lines().count(), out.notes.len()), (2, 0));
        let none = Args::default();
        let out = render(&none, &[], T0, &about(), &cet()).unwrap();
        assert_eq!(out.notes, ["no records in the last 24h"]);
    }
}
