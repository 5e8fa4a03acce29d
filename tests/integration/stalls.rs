//! Black-box tests of the stall handling (SPEC §14) against the simulated
//! agent-deck: a critical Claude session that agent-deck reads idle at its
//! usage limit gets one resume message through `session send`, never a
//! restart, at the time its rejection names or its probe gives.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fixtures::{conductor, CONDUCTOR};
use crate::support::watchdog::{stall, Wd};

/// A conductor idle at its usage limit, its last response `rejection`.
fn at_limit(rejection: &str) -> Value {
    let mut c = conductor(CONDUCTOR, "conductor-ops", "idle");
    c["substate"] = json!("usage-limit");
    c["transcript"] = json!(rejection);
    c
}

/// Resumes without a stagger, each verified within 0.6 s.
fn quick() -> Wd {
    Wd::new()
        .env("RESUME_STAGGER_S", "0")
        .env("RESUME_VERIFY_S", "0.6")
}

/// A conductor at its usage limit (see [`at_limit`]), probes of `probe` s.
fn stalled(rejection: &str, probe: &str) -> Wd {
    let wd = quick().env("RESUME_PROBE_S", probe);
    wd.sessions(vec![at_limit(rejection)]);
    wd
}

fn sends(wd: &Wd) -> Vec<Vec<String>> {
    wd.sim.calls_with(&["session", "send"])
}

#[test]
fn a_usage_limit_is_resumed_once_after_its_probe_and_verified() {
    let wd = stalled("", "0.5");
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(15), "no resume-verified", || {
        !wd.restarts_with("resume-verified").is_empty()
    });
    let detected = &wd.restarts_with("stall-detected")[0];
    let said = stall(detected);
    assert_eq!(said.kind, "usage-limit");
    assert_eq!(said.evidence, "substate");
    assert_eq!(said.resume_from, "probe");
    let sent = &wd.restarts_with("resume-sent")[0];
    assert!(sent.ts >= detected.ts + 0.5, "resumed before its probe");
    assert_eq!(stall(sent).attempt, Some(1));
    wd.wait_for_more_ticks(5);
    let calls = sends(&wd);
    assert_eq!(calls.len(), 1, "one resume: {calls:?}");
    assert!(
        calls[0].iter().any(|a| a.contains("(usage-limit)")),
        "{calls:?}"
    );
    assert_eq!(wd.restart_calls(), 0, "a stall is never restarted");
    let session = wd.sim.session_state(CONDUCTOR).unwrap();
    assert_eq!(
        session["substate"],
        json!(""),
        "the resumed turn cleared it"
    );
    let metrics = std::fs::read_to_string(wd.watchdog_dir().join("metrics.prom")).unwrap();
    for outcome in ["sent", "verified"] {
        let line = format!("agent_deck_watchdog_resumes_total{{outcome=\"{outcome}\"}} 1\n");
        assert!(metrics.contains(&line), "{line} in {metrics}");
    }
}

#[test]
fn the_resume_time_is_the_reset_the_rejection_names_plus_the_grace() {
    let wd = stalled(
        "You've hit your session limit · resets 5:59am (UTC)",
        "1200",
    );
    let out = wd.run(&["--once"]);
    crate::support::watchdog::assert_ok(&out);
    let detected = &wd.restarts_with("stall-detected")[0];
    assert_eq!(stall(detected).resume_from, "banner");
    let at = stall(detected).resume_at;
    let reset = at - 120.0;
    assert_eq!(reset % 86_400.0, 5.0 * 3600.0 + 59.0 * 60.0, "5:59am UTC");
    assert!(reset > detected.ts && reset - detected.ts <= 86_400.0);
    assert!(sends(&wd).is_empty(), "nothing sent before the reset");
    let summary = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        summary.contains("stalled: usage-limit, resume at ") && summary.contains("from banner)"),
        "{summary}"
    );
    let json = wd.run(&["--once", "--json"]);
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["critical"][0]["action"], json!("stalled"), "{v}");
    let status = wd.status_json();
    assert_eq!(
        status["stalls"][0]["kind"],
        json!("usage-limit"),
        "{status}"
    );
    assert_eq!(status["stalls"][0]["resume_at"], json!(at));
    let text = String::from_utf8_lossy(&wd.run(&["status"]).stdout).to_string();
    assert!(text.contains("stalls: conductor-ops ("), "{text}");
    let metrics = std::fs::read_to_string(wd.watchdog_dir().join("metrics.prom")).unwrap();
    assert!(
        metrics.contains("agent_deck_watchdog_stalled_sessions{kind=\"usage-limit\"} 1\n"),
        "{metrics}"
    );
    assert_eq!(
        wd.restarts_with("stall-detected").len(),
        1,
        "one episode across runs"
    );
    let history = String::from_utf8_lossy(&wd.run(&["history"]).stdout).to_string();
    assert!(
        history.contains("action: stall-detected (usage-limit, resume at ")
            && history.contains(" from banner)"),
        "{history}"
    );
}

#[test]
fn bounced_resumes_back_off_then_escalate_stall_unresolved_once() {
    let mut c = at_limit("");
    c["on_send"] = json!("bounce");
    let wd = quick()
        .env("RESUME_PROBE_S", "0.2")
        .env("RESUME_VERIFY_S", "0.3")
        .env("RESUME_MAX_ATTEMPTS", "2")
        .env("CIRCUIT_BREAKER_429_THRESHOLD", "1");
    wd.sessions(vec![c]);
    let d = wd.spawn(&[]);
    wd.wait_for_escalations(&d, "stall-unresolved", 1);
    wd.wait_for_more_ticks(10);
    assert_eq!(sends(&wd).len(), 2, "RESUME_MAX_ATTEMPTS resumes");
    let failed = wd.restarts_with("resume-failed");
    assert_eq!(failed.len(), 2);
    assert!(
        stall(&failed[1]).resume_at - failed[1].ts >= 0.4 - 0.05,
        "the probe doubles: {failed:?}"
    );
    assert_eq!(wd.escalations_of("stall-unresolved"), 1, "once per stall");
    assert_eq!(wd.escalations_of("circuit-breaker"), 0, "a stall is no 429");
    assert_eq!(wd.restart_calls(), 0);
    assert!(wd.restarts_with("rate-limited").is_empty());
}

#[test]
fn a_stall_that_goes_on_by_itself_gets_nothing() {
    let wd = stalled("", "3600");
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(10), "no stall-detected", || {
        !wd.restarts_with("stall-detected").is_empty()
    });
    wd.sim
        .update_state(|s| s["sessions"][0]["substate"] = json!(""));
    d.wait_for(Duration::from_secs(10), "no resumed-by-itself", || {
        !wd.restarts_with("resumed-by-itself").is_empty()
    });
    assert!(sends(&wd).is_empty());
}

#[test]
fn dry_run_sends_nothing_and_says_what_it_would_do() {
    let wd = stalled("", "0.2");
    let d = wd.spawn(&["--dry-run"]);
    d.wait_for(Duration::from_secs(10), "no resume-sent record", || {
        !wd.restarts_with("resume-sent").is_empty()
    });
    wd.wait_for_more_ticks(10);
    let sent = wd.restarts_with("resume-sent");
    assert_eq!(sent.len(), 1, "said once");
    assert!(sent[0].dry_run);
    assert!(sends(&wd).is_empty());
}

#[test]
fn a_watchdog_restarted_mid_stall_keeps_its_resume_time() {
    let wd = stalled("", "3600");
    let mut d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(10), "no stall-detected", || {
        !wd.restarts_with("stall-detected").is_empty()
    });
    d.signal_and_wait(libc::SIGTERM, Duration::from_secs(10));
    let d = wd.spawn(&[]);
    wd.wait_for_more_ticks(5);
    drop(d);
    let detected = wd.restarts_with("stall-detected");
    assert_eq!(detected.len(), 1, "the episode was kept, not seen anew");
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(wd.watchdog_dir().join("state.json")).unwrap(),
    )
    .unwrap();
    let stall = &state["sessions"][CONDUCTOR]["stall"];
    assert_eq!(
        stall["resume_at"],
        json!(crate::support::watchdog::stall(&detected[0]).resume_at)
    );
    assert_eq!(stall["kind"], json!("usage-limit"));
    assert!(sends(&wd).is_empty());
}

#[test]
fn resume_scope_all_resumes_every_claude_session_the_critical_one_first() {
    const WORKER: &str = "a0b1c2d3-1755899999";
    const CODEX: &str = "b0b1c2d3-1755899999";
    let limited = |id: &str, title: &str| {
        let mut w = at_limit("");
        w["id"] = json!(id);
        w["title"] = json!(title);
        w["group"] = json!("srv");
        w
    };
    let mut codex = limited(CODEX, "codex-1");
    codex["tool"] = json!("codex");
    let fleet = vec![limited(WORKER, "worker-1"), at_limit(""), codex];
    let critical_only = stalled("", "3600");
    critical_only.sessions(fleet.clone());
    crate::support::watchdog::assert_ok(&critical_only.run(&["--once"]));
    let ids = |wd: &Wd, action: &str| -> Vec<String> {
        wd.restarts_with(action).into_iter().map(|r| r.id).collect()
    };
    assert_eq!(ids(&critical_only, "stall-detected"), [CONDUCTOR]);
    let once = stalled("", "3600").env("RESUME_SCOPE", "all");
    once.sessions(fleet.clone());
    let out = once.run(&["--once", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["stalled"][0]["id"], json!(WORKER), "{v}");
    assert_eq!(v["stalled"][0]["action"], json!("stalled"), "{v}");
    assert_eq!(v["stalled"].as_array().map(Vec::len), Some(1), "{v}");
    let wd = stalled("", "0.3").env("RESUME_SCOPE", "all");
    wd.sessions(fleet);
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(15), "two resume-verified", || {
        wd.restarts_with("resume-verified").len() == 2
    });
    let mut detected = ids(&wd, "stall-detected");
    detected.sort();
    assert_eq!(detected, [CONDUCTOR, WORKER], "never the Codex session");
    assert_eq!(
        ids(&wd, "resume-sent"),
        [CONDUCTOR, WORKER],
        "critical first"
    );
    assert_eq!(sends(&wd).len(), 2);
    assert_eq!(wd.restart_calls(), 0);
}

#[test]
fn resume_scope_off_looks_for_no_stall() {
    let wd = stalled("", "0.1").env("RESUME_SCOPE", "off");
    let _d = wd.spawn(&[]);
    wd.wait_for_more_ticks(8);
    assert!(wd.restarts_with("stall-detected").is_empty());
    assert!(sends(&wd).is_empty());
}

#[test]
fn an_unavailable_model_is_held_never_restarted_and_resumed_after_its_backoff() {
    let mut c = conductor(CONDUCTOR, "conductor-ops", "error");
    c["substate"] = json!("model-unavailable");
    let wd = quick().env("MODEL_UNAVAILABLE_BACKOFF_S", "0.5");
    wd.sessions(vec![c]);
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(15), "no resume-verified", || {
        !wd.restarts_with("resume-verified").is_empty()
    });
    let detected = &wd.restarts_with("stall-detected")[0];
    assert_eq!(stall(detected).kind, "model-unavailable");
    assert_eq!(stall(detected).resume_from, "backoff");
    let sent = &wd.restarts_with("resume-sent")[0];
    assert!(sent.ts >= detected.ts + 0.5, "resumed before its backoff");
    let held = wd.restarts_with("skipped");
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0].reason.as_deref(), Some("model_unavailable"));
    wd.wait_for_more_ticks(5);
    assert_eq!(wd.restart_calls(), 0, "a restart boots into the same model");
    assert_eq!(sends(&wd).len(), 1);
    assert_eq!(
        wd.sim.session_state(CONDUCTOR).unwrap()["status"],
        json!("idle")
    );
}

#[test]
fn from_1_16_11_the_reset_comes_from_usage_json_and_never_before() {
    let banner = "You've hit your session limit · resets 5:59am (UTC)";
    let at = crate::support::now() + 3000.0;
    let usage = json!({"providers": [{"id": "claude", "stale": false, "windows": [
        {"kind": "five_hour", "used_percentage": 100, "resets_at": at.round()},
        {"kind": "seven_day", "used_percentage": 60}]}]});
    for (version, from) in [(Some("1.16.26"), "usage --json"), (None, "banner")] {
        let wd = stalled(banner, "1200");
        wd.release(version);
        wd.sim.update_state(|s| s["usage"] = usage.clone());
        crate::support::watchdog::assert_ok(&wd.run(&["--once"]));
        let detected = &wd.restarts_with("stall-detected")[0];
        assert_eq!(stall(detected).resume_from, from, "{version:?}");
        let usage_calls = wd.sim.calls_with(&["usage"]).len();
        let output_calls = wd.sim.calls_with(&["session", "output"]).len();
        if version.is_some() {
            assert_eq!(stall(detected).resume_at, at.round() + 120.0);
            assert_eq!(usage_calls, 1);
            assert_eq!(
                output_calls, 0,
                "the rejection is not read when usage --json gave the reset"
            );
        } else {
            assert_eq!(usage_calls, 0, "1.14.0 has no usage: it would open the TUI");
            assert_eq!(output_calls, 1);
        }
    }
}

#[test]
fn a_stale_usage_answer_is_not_believed() {
    let wd = stalled(
        "You've hit your session limit · resets 5:59am (UTC)",
        "1200",
    );
    wd.release(Some("1.16.26"));
    let at = crate::support::now() + 3000.0;
    wd.sim.update_state(|s| {
        s["usage"] = json!({"providers": [{"id": "claude", "stale": true, "windows": [
            {"kind": "five_hour", "used_percentage": 100, "resets_at": at.round()}]}]})
    });
    crate::support::watchdog::assert_ok(&wd.run(&["--once"]));
    let detected = &wd.restarts_with("stall-detected")[0];
    assert_eq!(stall(detected).resume_from, "banner");
}

/// Claude's pane after a turn that ended on `banner`, at its prompt.
fn ended_on(banner: &str) -> String {
    format!("> fix the test\n⏺ Reading the test.\n{banner}\n────────\n❯ \n────────\n  ? for shortcuts\n")
}

/// A daemon over a running conductor whose turn then ends on `last`, the
/// turn's last line, with a dwell of `dwell` seconds and no stagger.
fn turn_ends_on(last: &str, dwell: &str) -> (Wd, crate::support::watchdog::Daemon) {
    let wd = quick().env("RESUME_DWELL_S", dwell);
    wd.sessions(vec![conductor(CONDUCTOR, "conductor-ops", "running")]);
    let d = wd.spawn(&[]);
    wd.wait_for_more_ticks(3);
    wd.sim.update_state(|s| {
        s["sessions"][0]["status"] = json!("idle");
        s["sessions"][0]["pane"] = json!(ended_on(last));
    });
    (wd, d)
}

#[test]
fn a_turn_that_ended_on_an_overload_is_resumed_after_the_dwell() {
    let banner = "⏺ API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment.";
    let (wd, d) = turn_ends_on(banner, "0.4");
    d.wait_for(Duration::from_secs(15), "no resume-verified", || {
        !wd.restarts_with("resume-verified").is_empty()
    });
    let detected = &wd.restarts_with("stall-detected")[0];
    let said = stall(detected);
    assert_eq!(said.kind, "api-overload");
    assert_eq!(said.evidence, "pane");
    assert_eq!(said.resume_from, "dwell");
    let sent = &wd.restarts_with("resume-sent")[0];
    assert!(sent.ts >= detected.ts + 0.4, "resumed before the dwell");
    wd.wait_for_more_ticks(5);
    assert_eq!(sends(&wd).len(), 1);
    assert_eq!(wd.restart_calls(), 0);
}

#[test]
fn prose_about_an_error_is_no_stall_and_a_healthy_turn_costs_one_pane_read() {
    let prose = "⏺ The API Error: 529 Overloaded in the logs came from staging.";
    let (wd, d) = turn_ends_on(prose, "0.1");
    wd.wait_for_more_ticks(10);
    drop(d);
    assert!(wd.restarts_with("stall-detected").is_empty());
    let reads = wd.sim.calls_with(&["output", "--pane"]).len();
    assert_eq!(reads, 1, "one read at the turn's end, none while it rests");
}

#[test]
fn a_connection_lost_that_went_on_by_itself_is_not_resumed() {
    let banner = "⏺ API Error: Unable to connect to API (ECONNREFUSED)";
    let (wd, d) = turn_ends_on(banner, "0.5");
    d.wait_for(Duration::from_secs(10), "no stall-detected", || {
        !wd.restarts_with("stall-detected").is_empty()
    });
    // A turn came and went between two looks: the pane moved on.
    wd.sim.update_state(|s| {
        s["sessions"][0]["pane"] = json!(ended_on("⏺ Done: the tests pass."));
    });
    d.wait_for(Duration::from_secs(10), "no resumed-by-itself", || {
        !wd.restarts_with("resumed-by-itself").is_empty()
    });
    assert_eq!(
        stall(&wd.restarts_with("stall-detected")[0]).kind,
        "connection-lost"
    );
    assert!(sends(&wd).is_empty());
}

#[test]
fn a_stall_at_an_open_menu_or_busy_is_never_typed_into_until_it_closes() {
    let wd = stalled("", "1.5");
    wd.release(Some("1.16.26"));
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(10), "no stall-detected", || {
        !wd.restarts_with("stall-detected").is_empty()
    });
    for substate in ["interactive-menu", "background-work"] {
        wd.sim
            .update_state(|s| s["sessions"][0]["substate"] = json!(substate));
        wd.wait_for_more_ticks(12);
        assert!(sends(&wd).is_empty(), "typed into {substate}");
    }
    assert!(wd.restarts_with("resumed-by-itself").is_empty());
    wd.sim
        .update_state(|s| s["sessions"][0]["substate"] = json!("usage-limit"));
    d.wait_for(Duration::from_secs(10), "no resume once it closed", || {
        sends(&wd).len() == 1
    });
}

#[test]
fn a_resume_takes_the_restarts_serialization_and_spends_no_restart_budget() {
    let wd = quick()
        .env("RESUME_PROBE_S", "0.1")
        .env("MIN_GLOBAL_RESTART_INTERVAL_S", "1.5")
        .env("RATE_LIMIT_MAX", "1");
    let mut stalled = at_limit("");
    stalled["id"] = json!("5e5e5e5e-1755891234");
    stalled["title"] = json!("conductor-limit");
    wd.sessions(vec![
        conductor(CONDUCTOR, "conductor-ops", "error"),
        stalled,
    ]);
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(15), "no resume-sent", || {
        !wd.restarts_with("resume-sent").is_empty()
    });
    let restart = &wd.restarts_with("restart")[0];
    let sent = &wd.restarts_with("resume-sent")[0];
    assert!(
        sent.ts >= restart.ts + 1.5 - 0.05,
        "the resume went {:.2}s after the restart",
        sent.ts - restart.ts
    );
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(wd.watchdog_dir().join("state.json")).unwrap(),
    )
    .unwrap();
    let book = &state["sessions"]["5e5e5e5e-1755891234"];
    assert_eq!(
        book["restarts"],
        json!([]),
        "a resume is no restart: {book}"
    );
}

#[test]
fn a_resume_the_agent_took_is_verified_whatever_the_send_answered() {
    // agent-deck saw no sign of delivery (`no_evidence`), but the turn went
    // through: the turn tells (#38 item 6).
    let wd = stalled("", "0.5");
    wd.sim
        .update_state(|s| s["sessions"][0]["on_send"] = json!("no_evidence"));
    let d = wd.spawn(&[]);
    d.wait_for(Duration::from_secs(15), "no resume-verified", || {
        !wd.restarts_with("resume-verified").is_empty()
    });
    wd.wait_for_more_ticks(3);
    assert!(wd.restarts_with("resume-failed").is_empty());
    assert!(wd.restarts_with("resumed-by-itself").is_empty());
    assert_eq!(sends(&wd).len(), 1);
}
