//! Whether a restart that did not come up may fall back to `session start`,
//! pure (#32): never into a second agent. With agent-deck's store locked,
//! 1.14.0's `session restart` spawns its new tmux session and then fails to
//! save it (`database is locked`), or our timeout kills it first; the store
//! still names the old tmux session, so the session reads `error`, and a
//! `session start` would spawn a second agent beside the unsaved one. So
//! the fallback looks at tmux's own listing first: it starts only when no
//! tmux session of this one was created since the restart began.

use crate::decide::store;
use crate::fleet::deck::CliError;
use crate::sys::process::RunError;

/// What comes after a restart that did not come up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fallback {
    /// No new tmux session of it exists: `session start` it.
    Start,
    /// Its restart spawned a tmux session that agent-deck did not save, or
    /// tmux could not be read after an answer that may have spawned one:
    /// never start another. `store`: agent-deck said its store is locked.
    Unsaved { store: bool },
    /// agent-deck could not open or save its store and tmux shows no spawn:
    /// the restart did not run, and a start would fail the same way. Not a
    /// failed restart: its slot is given back.
    StoreLocked,
}

/// The fallback after a restart that answered `answer` (`None`: it said
/// it succeeded) and then did not come up; `spawned`: whether tmux holds a
/// session of it created since the restart began (`None`: tmux unreadable).
pub(crate) fn after_restart(answer: Option<&CliError>, spawned: Option<bool>) -> Fallback {
    let store = answer.is_some_and(|e| store::says_unreadable(&e.to_string()));
    let may_have_spawned = store || matches!(answer, Some(CliError::Run(RunError::TimedOut(_))));
    match spawned {
        Some(true) => Fallback::Unsaved { store },
        None if may_have_spawned => Fallback::Unsaved { store },
        Some(false) if store => Fallback::StoreLocked,
        _ => Fallback::Start,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn exit1(message: &str) -> CliError {
        CliError::Exit {
            code: Some(1),
            message: message.into(),
        }
    }

    #[test]
    fn a_start_follows_only_when_no_tmux_session_of_the_restart_exists() {
        let timeout = CliError::Run(RunError::TimedOut(Duration::from_secs(30)));
        let locked = exit1("failed to save session state: database is locked (5) (SQLITE_BUSY)");
        let storage = exit1("Error: failed to initialize storage: unable to open database file");
        let missing = exit1("tmux session agentdeck_ops_1a2b3c4d not found (tmux_session_missing)");
        let unsaved = |store| Fallback::Unsaved { store };
        let table: [(Option<&CliError>, Option<bool>, Fallback); 15] = [
            (Some(&timeout), Some(true), unsaved(false)),
            (Some(&timeout), None, unsaved(false)),
            (Some(&timeout), Some(false), Fallback::Start),
            (Some(&locked), Some(true), unsaved(true)),
            (Some(&locked), None, unsaved(true)),
            (Some(&locked), Some(false), Fallback::StoreLocked),
            (Some(&storage), Some(true), unsaved(true)),
            (Some(&storage), None, unsaved(true)),
            (Some(&storage), Some(false), Fallback::StoreLocked),
            (Some(&missing), Some(true), unsaved(false)),
            (Some(&missing), None, Fallback::Start),
            (Some(&missing), Some(false), Fallback::Start),
            (None, Some(true), unsaved(false)),
            (None, None, Fallback::Start),
            (None, Some(false), Fallback::Start),
        ];
        for (answer, spawned, want) in table {
            let got = after_restart(answer, spawned);
            assert_eq!(
                got,
                want,
                "{:?} {spawned:?}",
                answer.map(ToString::to_string)
            );
        }
    }
}
