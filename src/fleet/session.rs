//! What the watchdog knows about one agent-deck session, and which sessions it
//! is allowed to restart.
//!
//! Pure data and pure predicates: no CLI calls here. The marker-file opt-in is
//! decided by the caller, which passes whether the marker exists.

use serde::{Deserialize, Serialize};

use crate::spelled::spelled;
use crate::sys::say_once::{SayOnce, ONCE};

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
    /// Its tool, as `list --all` prints it; empty when not known.
    pub tool: String,
}

impl Session {
    /// Whether it runs an agent: a known tool that is not agent-deck's
    /// plain `shell`, whose pane a bare shell is.
    pub fn runs_an_agent(&self) -> bool {
        !self.tool.is_empty() && self.tool != "shell"
    }

    /// The conductor's name when agent-deck's clear-on-compact rule looks
    /// at this session (`context.md` §1.1, §1.3): tool `claude` (the only
    /// tool it reads a context for), group `conductor`, and a title
    /// `conductor-<name>` with a name.
    pub(crate) fn conductor_name(&self) -> Option<&str> {
        let name = self.title.strip_prefix("conductor-")?;
        let conductor = self.tool == "claude" && self.group == "conductor" && !name.is_empty();
        conductor.then_some(name)
    }
}

/// The live view of a session from `-p P list --json` or `session show`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Live {
    pub status: Option<Status>,
    pub substate: Option<String>,
    /// Free text beside the substate (1.16.11+): for Codex's usage limit, the
    /// retry time its banner prints ("try again at Oct 10th, 2026 8:03 AM",
    /// `SubstateDetail` in agent-deck's `internal/tmux/substate.go`).
    pub substate_detail: Option<String>,
    /// The tool the session runs (`claude`, `codex`, a custom name).
    pub tool: Option<String>,
    pub channels: Vec<String>,
    /// `auth_hold.reason` when an auth hold is present (`session show` only).
    pub auth_hold: Option<String>,
    pub claude_session_id: Option<String>,
    /// The tmux session the pane lives in (`agentdeck_<title>_<8hex>`):
    /// what the pane watch finds it by. A custom tool's restart changes it.
    pub tmux_session: Option<String>,
}

impl Live {
    pub fn status(&self) -> Status {
        self.status.unwrap_or(Status::Unknown)
    }

    /// The substate, read; `None` when there is none.
    pub fn substate(&self) -> Option<Substate> {
        self.substate.as_deref().map(Substate::parse)
    }

    /// An open menu or dialog is waiting for a human's choice (1.16.11+):
    /// typing into the pane could answer it.
    pub fn in_menu(&self) -> bool {
        self.substate() == Some(Substate::InteractiveMenu)
    }

    /// In `error` because the plan's usage window is spent (Codex's
    /// `error`/`usage-limit`, 1.16.11+): a restart cannot help before the
    /// window resets.
    pub fn usage_limited(&self) -> bool {
        self.status() == Status::Error && self.substate() == Some(Substate::UsageLimit)
    }

    /// A Codex session in `error` at its login-required banner
    /// (`error`/`auth-401`, 1.16.11+): a restart cannot fix a credential.
    /// Claude's `auth-401` is left to agent-deck's own auth hold, whose
    /// `auth_hold` object says when to stop; without one, a Claude banner
    /// may be a dropped connection that a restart does fix.
    pub fn codex_auth_failed(&self) -> bool {
        self.status() == Status::Error
            && self.substate() == Some(Substate::Auth401)
            && self.tool.as_deref() == Some("codex")
    }
}

spelled! {
    /// A substate as agent-deck prints it: a refinement of the status
    /// (`internal/tmux/substate.go`). A value this watchdog does not know is
    /// accepted as `Other`, and changes nothing.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
    pub enum Substate {
        Running = "running",
        IdleAtEmptyPrompt = "idle-at-empty-prompt",
        ModelUnavailable = "model-unavailable",
        Auth401 = "auth-401",
        UsageLimit = "usage-limit",
        /// An AskUserQuestion picker, a permission, trust-folder or feedback
        /// dialog, the Codex model picker (CHANGELOG 1.16.11, #2185).
        InteractiveMenu = "interactive-menu",
        /// The hook still says running, the pane shows a finished turn
        /// (CHANGELOG 1.16.11).
        HookLag = "hook-lag",
        /// Work the session started is still in flight (CHANGELOG 1.16.17,
        /// 1.16.25, #2473).
        BackgroundWork = "background-work",
    }
    unknown => Other
}

impl Substate {
    /// The substate `text` names; an unknown one is kept as `Other`.
    pub fn parse(text: &str) -> Substate {
        let read = Substate::deserialize(serde_json::Value::from(text));
        read.unwrap_or_else(|_| Substate::Other(text.into()))
    }
}

/// The unknown substates already reported in this run of the watchdog.
static UNKNOWN_SUBSTATES: SayOnce<String> = SayOnce::new();

/// Reports a substate this watchdog does not know, once per value in a
/// run: it is accepted and acted on as no substate.
pub(crate) fn report_unknown_substate(id: &str, substate: &str) {
    if UNKNOWN_SUBSTATES.allows(substate, ONCE) {
        log::info!(
            "{id} reports substate '{}', which this watchdog does not know; accepted, its status alone decides (said once per substate)",
            crate::text::printable(substate, 64)
        );
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
    fn a_conductor_by_agent_deck_s_rule_needs_claude_the_group_and_a_name() {
        let cases = [
            ("conductor-ops", "conductor", "claude", Some("ops")),
            ("conductor-a-b", "conductor", "claude", Some("a-b")),
            ("conductor-", "conductor", "claude", None),
            ("conductor-ops", "", "claude", None),
            ("conductor-ops", "watchers", "claude", None),
            ("conductor-ops", "conductor", "codex", None),
            ("conductor-ops", "conductor", "", None),
            ("ops", "conductor", "claude", None),
            ("Conductor-ops", "conductor", "claude", None),
        ];
        for (title, group, tool, want) in cases {
            let session = Session {
                tool: tool.into(),
                ..s(title, group)
            };
            assert_eq!(session.conductor_name(), want, "{title} {group} {tool}");
        }
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
    fn substates_known_new_and_unknown() {
        assert_eq!(
            Substate::parse("interactive-menu"),
            Substate::InteractiveMenu
        );
        assert_eq!(Substate::parse("auth-401"), Substate::Auth401);
        assert_eq!(Substate::parse("unknown-exit").as_str(), "unknown-exit");
        let known = [
            Substate::Running,
            Substate::IdleAtEmptyPrompt,
            Substate::ModelUnavailable,
            Substate::Auth401,
            Substate::UsageLimit,
            Substate::InteractiveMenu,
            Substate::HookLag,
            Substate::BackgroundWork,
        ];
        for known in known {
            assert_eq!(Substate::parse(known.as_str()), known);
            let json = serde_json::to_string(&known).unwrap();
            assert_eq!(json, format!("\"{}\"", known.as_str()));
        }
        let live = |status, substate: &str, tool: &str| Live {
            status: Some(status),
            substate: Some(substate.into()),
            tool: Some(tool.into()),
            ..Live::default()
        };
        assert!(live(Status::Waiting, "interactive-menu", "claude").in_menu());
        assert!(!live(Status::Waiting, "idle-at-empty-prompt", "claude").in_menu());
        assert!(live(Status::Error, "usage-limit", "claude").usage_limited());
        assert!(!live(Status::Waiting, "usage-limit", "claude").usage_limited());
        assert!(live(Status::Error, "auth-401", "codex").codex_auth_failed());
        assert!(!live(Status::Error, "auth-401", "claude").codex_auth_failed());
        assert!(!live(Status::Idle, "auth-401", "codex").codex_auth_failed());
    }

    #[test]
    fn an_unknown_substate_is_reported_once_per_value() {
        let seen = SayOnce::<String>::new();
        assert!(seen.allows("hook-lag-2", ONCE));
        assert!(!seen.allows("hook-lag-2", ONCE));
        assert!(seen.allows("unknown-exit", ONCE));
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
