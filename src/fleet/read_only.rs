//! The dry-run guard over the CLI.

use crate::fleet::deck::{AgentDeck, CallStats, CliError, CliResult, RestartAnswer};
use crate::fleet::listing::Row;
use crate::fleet::session::Live;
use crate::fleet::version::Version;

/// Dry-run guard: reads pass through, every mutating call is refused without
/// running anything. The daemon already stops before mutating in dry-run;
/// this makes a slip impossible rather than unlikely.
pub(crate) struct ReadOnly(pub std::sync::Arc<dyn AgentDeck>);

fn refuse<T>(what: &str, id: &str) -> CliResult<T> {
    log::error!("dry-run: refused to run `{what} {id}` (this is a bug: dry-run decisions should stop earlier)");
    Err(CliError::Exit {
        code: None,
        message: format!("dry-run: {what} not executed"),
    })
}

impl AgentDeck for ReadOnly {
    fn list_all(&self, each: &mut dyn FnMut(&Row<'_>)) -> CliResult<()> {
        self.0.list_all(each)
    }
    fn list_profile(&self, profile: &str, each: &mut dyn FnMut(&Row<'_>)) -> CliResult<()> {
        self.0.list_profile(profile, each)
    }
    fn show(&self, profile: &str, id: &str) -> CliResult<Live> {
        self.0.show(profile, id)
    }
    fn restart(&self, _: &str, id: &str) -> CliResult<RestartAnswer> {
        refuse("session restart", id)
    }
    fn start(&self, _: &str, id: &str) -> CliResult<()> {
        refuse("session start", id)
    }
    fn send(&self, _: &str, id: &str, _: &str) -> CliResult<()> {
        refuse("session send", id)
    }
    fn pane(&self, profile: &str, id: &str) -> CliResult<String> {
        self.0.pane(profile, id)
    }
    fn transcript(&self, profile: &str, id: &str) -> CliResult<String> {
        self.0.transcript(profile, id)
    }
    fn usage(&self, profile: &str) -> CliResult<String> {
        self.0.usage(profile)
    }
    fn remove(&self, _: &str, id: &str) -> CliResult<()> {
        refuse("remove", id)
    }
    fn version(&self) -> Option<Version> {
        self.0.version()
    }
    fn version_unconfirmed(&self) -> bool {
        self.0.version_unconfirmed()
    }
    fn stats(&self) -> CallStats {
        self.0.stats()
    }
}
