//! Whether agent-deck's store could be read, pure (#32). While another
//! process holds its SQLite store locked, agent-deck 1.14.0's `list --all`
//! prints `null` with exit 0 after its 5 s busy timeout, exactly as it does
//! for profiles that hold no session; `-p P list` and `session show` exit 1
//! with `failed to initialize storage: … database is locked`. So an empty
//! `list --all`, after one that held critical sessions, is "no sessions" only
//! when nothing else says the store is unreadable: not the call's own
//! duration, and not one `-p P list` of a profile that held them.

use std::time::Duration;

/// agent-deck's SQLite busy timeout, less a margin: an empty answer that
/// took this long waited for a lock.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_millis(4500);

/// Why an empty `list --all` that took `took` is no empty fleet: `probe`
/// asks one `-p P list` of a profile that held critical sessions (the
/// sessions it listed, or its error; `None` when no such profile is known),
/// only when the duration did not tell. `None`: the fleet is empty indeed.
pub(crate) fn empty_list_unread(
    took: Duration,
    probe: impl FnOnce() -> Option<Result<usize, String>>,
) -> Option<String> {
    if took >= BUSY_TIMEOUT {
        return Some(format!(
            "list --all found no session after {:.1}s, agent-deck's 5s busy timeout",
            took.as_secs_f64()
        ));
    }
    match probe()? {
        Ok(0) => None,
        Ok(n) => Some(format!(
            "list --all found no session, but a profile list holds {n}"
        )),
        Err(e) => Some(e),
    }
}

/// What agent-deck says when another process holds its store.
const LOCKED: &[&str] = &["database is locked", "SQLITE_BUSY", "busy timeout"];

/// What it says when it cannot open or read its store at all.
const UNREADABLE: &[&str] = &["failed to initialize storage", "failed to load sessions"];

/// Whether agent-deck's message says its store could not be opened or read.
pub(crate) fn says_unreadable(message: &str) -> bool {
    LOCKED.iter().chain(UNREADABLE).any(|w| message.contains(w))
}

/// How an unreadable store is named: locked when agent-deck says so.
pub(crate) fn named(why: &str) -> String {
    let locked = LOCKED.iter().any(|w| why.contains(w));
    let what = if locked { "locked" } else { "unreadable" };
    format!("agent-deck's store is {what} ({why})")
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCKED: &str = "exited 1: Error: failed to initialize storage: failed to open state db: database is locked (5) (SQLITE_BUSY)";

    #[test]
    fn an_empty_list_is_an_empty_fleet_only_when_nothing_says_the_store_is_unreadable() {
        let quick = Duration::from_millis(80);
        let slow = Duration::from_millis(5020);
        type Probe = Option<Result<usize, String>>;
        let table: [(Duration, Probe, bool); 7] = [
            (quick, Some(Ok(0)), false),
            (quick, None, false),
            (slow, None, true),
            (slow, Some(Ok(0)), true),
            (quick, Some(Err(LOCKED.into())), true),
            (quick, Some(Err("exited 1: tmux not found".into())), true),
            (quick, Some(Ok(3)), true),
        ];
        for (took, probe, unread) in table {
            let said = empty_list_unread(took, || probe.clone());
            assert_eq!(said.is_some(), unread, "{took:?} {probe:?}: {said:?}");
        }
    }

    #[test]
    fn the_store_is_named_locked_when_agent_deck_says_so() {
        assert!(says_unreadable(LOCKED));
        assert!(says_unreadable(
            "Error: failed to load sessions: disk I/O error"
        ));
        assert!(!says_unreadable("session not found"));
        assert!(named(LOCKED).starts_with("agent-deck's store is locked ("));
        let slow = empty_list_unread(Duration::from_secs(5), || None).unwrap();
        assert!(
            named(&slow).starts_with("agent-deck's store is locked ("),
            "{slow}"
        );
        let other = named("exited 1: tmux not found");
        assert!(other.starts_with("agent-deck's store is unreadable ("));
    }
}
