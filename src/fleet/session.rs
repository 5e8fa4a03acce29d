//! What the watchdog knows about one agent-deck session, and which sessions it
//! is allowed to restart.
//!
//! Pure data and pure predicates: no CLI calls here. The marker-file opt-in is
//! decided by the caller, which passes whether the marker exists.

/// A session status as the CLI prints it. Anything outside the known words
/// (including the internal `starting`) is `Unknown`, exactly like agent-deck's
/// `StatusString`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    Running,
    Waiting,
    Idle,
    Error,
    Stopped,
    Queued,
    Unknown,
}

impl Status {
    pub fn parse(s: &str) -> Status {
        match s {
            "running" => Status::Running,
            "waiting" => Status::Waiting,
            "idle" => Status::Idle,
            "error" => Status::Error,
            "stopped" => Status::Stopped,
            "queued" => Status::Queued,
            _ => Status::Unknown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Waiting => "waiting",
            Status::Idle => "idle",
            Status::Error => "error",
            Status::Stopped => "stopped",
            Status::Queued => "queued",
            Status::Unknown => "unknown",
        }
    }

    /// A status that proves the session is alive and well.
    pub fn is_healthy(self) -> bool {
        matches!(
            self,
            Status::Running | Status::Waiting | Status::Idle | Status::Queued
        )
    }
}

/// One session as `list --all --json` describes it (no status there).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Session {
    pub id: String,
    pub title: String,
    pub group: String,
    pub profile: String,
    /// The session's working directory (a conductor's is its own directory).
    pub path: String,
    pub parent_session_id: Option<String>,
    /// Only if the CLI ever prints it; today it never does.
    pub is_conductor: bool,
}

/// The live view of a session from `-p P list --json` or `session show`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Live {
    pub status: Option<Status>,
    pub substate: Option<String>,
    pub channels: Vec<String>,
    /// `auth_hold.reason` when an auth hold is present (`session show` only).
    pub auth_hold: Option<String>,
    pub claude_session_id: Option<String>,
}

impl Live {
    pub fn status(&self) -> Status {
        self.status.unwrap_or(Status::Unknown)
    }
}

const CRITICAL_TITLES: [&str; 3] = ["meeting-watcher", "gmail-watcher", "agent-deck"];

/// Restart-critical by name alone (the marker file is the caller's part).
pub(crate) fn is_critical_by_name(s: &Session) -> bool {
    critical_rule(&s.title, &s.group, s.is_conductor).is_some()
}

/// Which naming rule makes a session restart-critical.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameRule {
    /// The title starts with `conductor-`.
    ConductorTitle,
    /// The title is one of the known watchers (`CRITICAL_TITLES`).
    KnownTitle,
    /// The group is `conductor` or `watchers`.
    Group,
    /// The CLI said `is_conductor` (it never does today).
    IsConductor,
}

/// The first naming rule that makes these fields restart-critical.
pub(crate) fn critical_rule(title: &str, group: &str, is_conductor: bool) -> Option<NameRule> {
    if title.starts_with("conductor-") {
        Some(NameRule::ConductorTitle)
    } else if group == "conductor" || group == "watchers" {
        Some(NameRule::Group)
    } else if is_conductor {
        Some(NameRule::IsConductor)
    } else if CRITICAL_TITLES.contains(&title) {
        Some(NameRule::KnownTitle)
    } else {
        None
    }
}

/// May alert a human on Telegram.
pub(crate) fn is_escalation_critical(s: &Session) -> bool {
    s.title.starts_with("conductor-") || s.group == "watchers" || s.is_conductor
}

/// agent-deck's id rule at the hook boundary: `^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`
/// and no `..`. An id that fails it never reaches the filesystem.
pub(crate) fn is_valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        && !id.contains("..")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(title: &str, group: &str) -> Session {
        Session {
            id: "3f9c2a1b-1755891234".into(),
            title: title.into(),
            group: group.into(),
            profile: "default".into(),
            ..Session::default()
        }
    }

    #[test]
    fn critical_by_title_and_group() {
        assert!(is_critical_by_name(&s("conductor-ops", "")));
        assert!(is_critical_by_name(&s("meeting-watcher", "x")));
        assert!(is_critical_by_name(&s("agent-deck", "x")));
        assert!(is_critical_by_name(&s("w", "conductor")));
        assert!(is_critical_by_name(&s("w", "watchers")));
        assert!(!is_critical_by_name(&s("worker-1", "srv")));
        assert!(!is_critical_by_name(&s("conductor", "srv")));
    }

    #[test]
    fn escalation_critical_is_narrower() {
        assert!(is_escalation_critical(&s("conductor-ops", "")));
        assert!(is_escalation_critical(&s("x", "watchers")));
        assert!(!is_escalation_critical(&s("meeting-watcher", "x")));
        assert!(!is_escalation_critical(&s("x", "conductor")));
    }

    #[test]
    fn starting_prints_as_unknown() {
        assert_eq!(Status::parse("starting"), Status::Unknown);
        assert!(!Status::Unknown.is_healthy());
        assert_ne!(Status::parse("starting"), Status::Error);
    }

    #[test]
    fn id_rule_rejects_traversal() {
        assert!(is_valid_id("3f9c2a1b-1755891234"));
        assert!(is_valid_id("a.b_c-d"));
        for bad in [
            "", "../etc", "a/../b", "a..b", ".hidden", "-x", "a/b", "a b",
        ] {
            assert!(!is_valid_id(bad), "{bad}");
        }
    }
}
