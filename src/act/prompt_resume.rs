//! Prompt-resume (SPEC §6.4, opt-in): when a failed restart's transcript shows
//! the deferred tool marker, nudge the conversation once with
//! `claude --resume <id> -p <text>` under the profile's `CLAUDE_CONFIG_DIR`
//! (and without `TELEGRAM_STATE_DIR`), then retry `session start`. Runs on the
//! restart worker, as part of one restart.

use std::time::Duration;

use crate::act::apply;
use crate::act::context::Context;
use crate::act::job::{self, Job};
use crate::decide::outcomes::RestartAction;
use crate::decide::restart::Verified;
use crate::fleet::session::Status;
use crate::sys::process::{self, Cmd};

/// The prompt sent by prompt-resume.
pub(crate) const RESUME_TEXT: &str =
    "continue — your tmux session was stopped unexpectedly; check your state and report a one-line status";

/// SPEC §6.4: for an opted-in profile whose transcript shows the deferred
/// tool marker, nudge the conversation once with `claude --resume`, then
/// retry `session start`. What the status poll then read, if it found the
/// session back.
pub(crate) fn attempt(ctx: &Context, job: &Job, transcript: &str) -> Option<Verified> {
    let s = &job.session;
    let profiles = &ctx.cfg.prompt_resume_profiles;
    let (_, config_dir) = profiles.iter().find(|(p, _)| *p == s.profile)?;
    if !transcript.to_lowercase().contains("deferred tool marker") {
        return None;
    }
    let Some(claude_id) = ctx.read_status(s).and_then(|l| l.claude_session_id) else {
        log::warn!("prompt-resume of {} skipped: no claude_session_id", s.id);
        return None;
    };
    apply::record(ctx, s, RestartAction::PromptResumeAttempt, None);
    let cmd = Cmd::new("claude")
        .args(["--resume", claude_id.as_str(), "-p", RESUME_TEXT])
        .env("CLAUDE_CONFIG_DIR", config_dir)
        .env_remove("TELEGRAM_STATE_DIR");
    // A resumed conversation may take a while to answer.
    let timeout = ctx.cfg.subprocess_timeout.max(Duration::from_secs(120));
    match process::run(&cmd, timeout, &ctx.shutdown) {
        Ok(out) if out.success() => {
            log::info!("prompt-resume of {} ran; retrying session start", s.id)
        }
        Ok(out) => log::warn!(
            "prompt-resume of {} exited {:?}; retrying session start anyway",
            s.id,
            out.code
        ),
        Err(e) => log::warn!(
            "prompt-resume of {}: claude {e}; retrying session start anyway",
            s.id
        ),
    }
    if let Err(e) = ctx.deck.start(&s.profile, &s.id) {
        log::warn!("session start after prompt-resume of {} failed: {e}", s.id);
        return None;
    }
    let verified = job::verify(ctx, s, ctx.cfg.start_verify);
    verified.status.filter(|st| *st != Status::Error)?;
    Some(verified)
}
