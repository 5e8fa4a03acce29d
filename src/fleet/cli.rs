//! The real agent-deck CLI. [`Cli`] builds every agent-deck command line
//! (global `-p` first, as the real CLI requires), runs it through
//! [`crate::sys::process`], counts calls and failures, and parses the
//! answer; it makes no decisions. A list answer is read whole, up to
//! [`listing::MAX_ANSWER_BYTES`], and handed over row by row; the rows left
//! out are warned about at most once a minute per command. It keeps
//! agent-deck's version as read last (a read that got no answer keeps the
//! one before), gates `--primary` on it, and marks a failure a replaced
//! binary explains, or a success after an unanswered read, so the re-read
//! comes sooner (`version_watch.rs` decides). An
//! exit 0 with text on stderr (the 1.16.14 store WARNING) is a success; its
//! first line is logged once a day.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use crate::fleet::deck::{by_design, AgentDeck, CallStats, CliError, CliResult, RestartAnswer};
use crate::fleet::listing::{self, Row, RowTally, Shape};
use crate::fleet::parse;
use crate::fleet::session::Live;
use crate::fleet::version::Version;
use crate::fleet::version_watch::{suggests_new_binary, Answer, News, VersionWatch};
use crate::sys::process::{self, Cmd, Output};
use crate::sys::say_once::SayOnce;
use crate::sys::shutdown::Shutdown;
/// Unreadable list rows are warned about at most this often per command.
const SKIP_WARN_EVERY: Duration = Duration::from_secs(60);
/// The same stderr line of a successful call is logged at most this often.
const STDERR_NOTE_EVERY: Duration = Duration::from_secs(24 * 3600);
/// How much of a stderr line a log line shows.
const STDERR_SHOWN: usize = 200;

/// The real CLI.
pub(crate) struct Cli {
    bin: PathBuf,
    timeout: Duration,
    shutdown: Shutdown,
    stats: Mutex<CallStats>,
    /// Unreadable list rows of each command since its last warning.
    skips: Mutex<BTreeMap<&'static str, u64>>,
    skip_warnings: SayOnce<&'static str>,
    /// Lines a successful call printed on stderr, by their shape.
    stderr_notes: SayOnce<String>,
    version: Mutex<VersionWatch>,
    /// Holds a message while a suspect failure, or a call that worked after
    /// an unanswered read, waits for a re-read.
    nudge: (Sender<()>, Receiver<()>),
}

impl Cli {
    pub(crate) fn new(bin: PathBuf, timeout: Duration, shutdown: Shutdown) -> Cli {
        Cli {
            bin,
            timeout,
            shutdown,
            stats: Mutex::new(CallStats::default()),
            skips: Mutex::new(BTreeMap::new()),
            skip_warnings: SayOnce::new(),
            stderr_notes: SayOnce::new(),
            version: Mutex::default(),
            nudge: crossbeam_channel::bounded(1),
        }
    }

    /// Runs `agent-deck version` (counted as `version`) and keeps what it
    /// names; an answer without a release keeps `None`, which gates as the
    /// oldest release, and no answer keeps the release known before,
    /// unconfirmed. Logs the first read, every change, and a kept release.
    pub(crate) fn read_version(&self, now: f64) -> Option<Version> {
        let (answer, why) = match self.call("version", "", &["version"]) {
            Ok(out) => match Version::parse(&out.stdout) {
                Some(v) => (Answer::Release(v), String::new()),
                None => (
                    Answer::NoRelease,
                    format!("no release in {}", parse::preview(&out.stdout)),
                ),
            },
            Err(e) => (Answer::Failed, e.to_string()),
        };
        let mut keeper = self.version.lock();
        let news = keeper.read(now, answer);
        let known = keeper.known();
        drop(keeper);
        let shown = |v: Option<Version>| v.map_or("not known".to_owned(), |v| v.to_string());
        let when = if answer == Answer::Failed {
            "after the next call that works"
        } else {
            "within the hour"
        };
        match news {
            News::First(v) => log::info!("agent-deck {v} (from `agent-deck version`); version-gated calls follow it"),
            News::Unknown => log::warn!(
                "agent-deck's release is not known ({why}); version-gated calls follow the oldest known release, {}; asking again {when}",
                Version::OLDEST
            ),
            News::Kept(v) => log::warn!(
                "`agent-deck version` failed ({why}); version-gated calls keep following {v} (unconfirmed), asking again {when}"
            ),
            News::Confirmed(v) => log::info!("agent-deck {v} confirmed: `agent-deck version` answers again"),
            News::Changed(old, new) => log::info!(
                "agent-deck version changed from {} to {}; version-gated calls follow the new one",
                shown(old),
                shown(new)
            ),
            News::Quiet => {}
        }
        known
    }

    /// Whether the version should be read again at `now`.
    pub(crate) fn version_due(&self, now: f64) -> bool {
        self.version.lock().due(now)
    }

    /// Receives a message when a failed call, or one that worked after an
    /// unanswered read, asks for the version to be read again soon.
    pub(crate) fn nudged(&self) -> &Receiver<()> {
        &self.nudge.1
    }

    /// Logs the first line a successful call printed on stderr, once a day
    /// per line (its digits aside, so counts that change make no new line).
    fn note_stderr(&self, args: &[&str], stderr: &str) {
        let Some(first) = stderr.lines().map(str::trim).find(|l| !l.is_empty()) else {
            return;
        };
        let shape: String = crate::text::clip_chars(first, STDERR_SHOWN)
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .collect();
        if self.stderr_notes.allows(shape.as_str(), STDERR_NOTE_EVERY) {
            log::warn!(
                "`{}` succeeded but printed on stderr: \"{}\"; its answer is used (logged once a day)",
                crate::text::printable(&args.join(" "), STDERR_SHOWN),
                crate::text::printable(first, STDERR_SHOWN)
            );
        }
    }

    /// Warns about the rows a list had to leave out, rate-limited.
    fn warn_skipped(&self, name: &'static str, profile: &str, args: &[&str], tally: &RowTally) {
        let Some(first) = tally.reasons.first() else {
            return;
        };
        let what = if profile.is_empty() {
            args.join(" ")
        } else {
            format!("-p {profile:?} {}", args.join(" "))
        };
        let mut skips = self.skips.lock();
        let unreported = skips.entry(name).or_default();
        *unreported += tally.skipped as u64;
        if self.skip_warnings.allows(&name, SKIP_WARN_EVERY) {
            let earlier = *unreported - tally.skipped as u64;
            let earlier = if earlier > 0 {
                format!(" ({earlier} more since the last such warning)")
            } else {
                String::new()
            };
            log::warn!(
                "`{what}` printed {} unreadable row(s){earlier}, skipped: {first}; the other {} row(s) are used",
                tally.skipped,
                tally.rows
            );
            *unreported = 0;
        }
    }

    /// The command line of one call: global `-p` first.
    fn job(&self, profile: &str, args: &[&str]) -> Cmd {
        let mut job = Cmd::new(&self.bin);
        if !profile.is_empty() {
            job = job.arg("-p").arg(profile);
        }
        job.args(args.iter().copied())
    }

    /// Counts a call of `name`, and a failure when `call` fails.
    fn counted<T>(&self, name: &'static str, call: impl FnOnce() -> CliResult<T>) -> CliResult<T> {
        *self.stats.lock().calls.entry(name).or_default() += 1;
        let result = call();
        if result.is_ok() && name != "version" && self.version.lock().call_worked() {
            let _ = self.nudge.0.try_send(());
        }
        if let Err(e) = &result {
            let mut stats = self.stats.lock();
            let counter = if by_design(name, e) {
                &mut stats.by_design
            } else {
                &mut stats.failures
            };
            *counter.entry(name).or_default() += 1;
            drop(stats);
            if name != "version" && suggests_new_binary(name, e) {
                self.version.lock().suspect();
                let _ = self.nudge.0.try_send(());
            }
        }
        result
    }

    /// Runs one command, counted as `name`; a non-zero exit becomes
    /// [`CliError::Exit`] (or [`CliError::Undelivered`]).
    fn call(&self, name: &'static str, profile: &str, args: &[&str]) -> CliResult<Output> {
        self.counted(name, || self.run(profile, args, CliError::exited))
    }

    /// Runs one command; `exited` reads a non-zero exit.
    fn run(
        &self,
        profile: &str,
        args: &[&str],
        exited: fn(Option<i32>, &str, &str) -> CliError,
    ) -> CliResult<Output> {
        match process::run(&self.job(profile, args), self.timeout, &self.shutdown) {
            Err(e) => Err(CliError::Run(e)),
            Ok(out) if out.success() => {
                self.note_stderr(args, &out.stderr);
                Ok(out)
            }
            Ok(out) => Err(exited(out.code, &out.stdout, &out.stderr)),
        }
    }

    /// Runs one list command and reads its answer whole.
    fn list(
        &self,
        name: &'static str,
        profile: &str,
        args: &[&str],
        shape: Shape,
        each: &mut dyn FnMut(&Row<'_>),
    ) -> CliResult<()> {
        let job = self.job(profile, args);
        let tally = self.counted(name, || {
            let ceiling = listing::MAX_ANSWER_BYTES;
            let (done, answer) = process::run_whole(&job, self.timeout, &self.shutdown, ceiling)
                .map_err(CliError::Run)?;
            if !done.success() {
                let text = String::from_utf8_lossy(listing::text(&answer));
                return Err(CliError::exited(done.code, &text, &done.stderr));
            }
            let read = listing::read(shape, &answer, each);
            self.note_stderr(args, &done.stderr);
            Ok(read?)
        })?;
        self.warn_skipped(name, profile, args, &tally);
        Ok(())
    }
}

impl AgentDeck for Cli {
    fn list_all(&self, each: &mut dyn FnMut(&Row<'_>)) -> CliResult<()> {
        let args = ["list", "--all", "--json"];
        self.list("list-all", "", &args, Shape::All, each)
    }

    fn list_profile(&self, profile: &str, each: &mut dyn FnMut(&Row<'_>)) -> CliResult<()> {
        self.list("list", profile, &["list", "--json"], Shape::Profile, each)
    }

    fn show(&self, profile: &str, id: &str) -> CliResult<Live> {
        let args = ["session", "show", id, "--json"];
        self.counted("show", || {
            let out = self.run(profile, &args, CliError::exited)?;
            Ok(parse::show(&out.stdout)?)
        })
    }

    fn restart(&self, profile: &str, id: &str) -> CliResult<RestartAnswer> {
        let args = ["session", "restart", id, "--json"];
        self.counted("restart", || {
            let out = self.run(profile, &args, CliError::spawn_exited)?;
            Ok(parse::restart(&out.stdout)?)
        })
    }

    fn start(&self, profile: &str, id: &str) -> CliResult<()> {
        // Exit 0 is the success whatever JSON it prints (started, or queued
        // behind a group cap): only a failure's answer is read.
        let args = ["session", "start", id, "--json"];
        self.counted("start", || self.run(profile, &args, CliError::spawn_exited))
            .map(drop)
    }

    fn send(&self, profile: &str, id: &str, message: &str) -> CliResult<()> {
        // `--json`: only then does a failed send say how far the message got
        // (`delivery`); in human mode it prints a bare `Error:` line.
        // agent-deck takes any word that begins with '-' for a flag.
        let message = if message.starts_with('-') {
            format!(" {message}")
        } else {
            message.to_owned()
        };
        let args = ["session", "send", id, &message, "--no-wait", "--json"];
        self.call("send", profile, &args).map(drop)
    }

    fn pane(&self, profile: &str, id: &str) -> CliResult<String> {
        // `--primary`: the session's first window, not whichever one a
        // human opened last; an older binary exits 2 on the flag.
        let primary = Version::or_oldest(self.version()).at_least(Version::PRIMARY_PANE);
        let args: &[&str] = if primary {
            &["session", "output", id, "--pane", "--primary", "-q"]
        } else {
            &["session", "output", id, "--pane", "-q"]
        };
        self.call("output-pane", profile, args).map(|o| o.stdout)
    }

    fn transcript(&self, profile: &str, id: &str) -> CliResult<String> {
        self.call("output", profile, &["session", "output", id, "-quiet"])
            .map(|o| o.stdout)
    }

    fn usage(&self, profile: &str) -> CliResult<String> {
        self.call("usage", profile, &["usage", "--json"])
            .map(|o| o.stdout)
    }

    fn remove(&self, profile: &str, id: &str) -> CliResult<()> {
        self.call("remove", profile, &["remove", id]).map(drop)
    }

    fn set_claude_session_id(&self, profile: &str, id: &str, value: &str) -> CliResult<()> {
        let args = ["session", "set", id, "claude-session-id", value];
        self.call("set", profile, &args).map(drop)
    }

    fn version(&self) -> Option<Version> {
        self.version.lock().known()
    }

    fn version_unconfirmed(&self) -> bool {
        self.version.lock().unconfirmed()
    }

    fn stats(&self) -> CallStats {
        self.stats.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::deck::{Delivery, SpawnReason};
    use crate::testing::write_script;

    /// A CLI whose binary is `dir/agent-deck`, running `script`.
    fn cli_running(dir: &std::path::Path, script: &str) -> Cli {
        let bin = dir.join("agent-deck");
        write_script(&bin, script);
        Cli::new(bin, Duration::from_secs(10), Shutdown::new().unwrap())
    }

    fn cli_printing(dir: &std::path::Path, stdout: &str) -> Cli {
        cli_running(dir, &format!("#!/bin/sh\ncat <<'EOF'\n{stdout}\nEOF\n"))
    }

    #[test]
    fn a_list_with_a_malformed_row_still_yields_the_other_rows() {
        let tmp = tempfile::tempdir().unwrap();
        let cli = cli_printing(
            tmp.path(),
            r#"[{"title":"no id","group":"conductor","status":"error"},
                {"id":"3f9c2a1b-1755891234","title":"conductor-ops","group":"conductor","profile":"default","status":"error"}]"#,
        );
        let mut all = Vec::new();
        cli.list_all(&mut |r| all.push(r.session())).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].id, "3f9c2a1b-1755891234");
        let mut live = Vec::new();
        cli.list_profile("default", &mut |r| live.push(r.live()))
            .unwrap();
        assert_eq!(live.len(), 1);
        assert_eq!(cli.stats().failures.len(), 0, "a skipped row is no failure");
    }

    #[test]
    fn a_list_that_stops_short_is_a_failure_not_a_short_fleet() {
        let tmp = tempfile::tempdir().unwrap();
        let cli = cli_printing(tmp.path(), r#"[{"id":"a-1","title":"t"},"#);
        let mut seen = 0;
        let err = cli.list_all(&mut |_| seen += 1).unwrap_err();
        assert!(matches!(err, CliError::Garbage(_)), "{err}");
        assert_eq!(seen, 0, "no row of an unreadable answer is handed over");
        assert_eq!(cli.stats().failures.get("list-all"), Some(&1));
    }

    #[test]
    fn a_failed_list_reports_the_json_error_on_stdout() {
        let tmp = tempfile::tempdir().unwrap();
        let cli = cli_running(
            tmp.path(),
            "#!/bin/sh\necho '{\"code\":\"INVALID_OPERATION\",\"error\":\"boom\",\"success\":false}'\nexit 1\n",
        );
        match cli.list_profile("work", &mut |_| {}) {
            Err(CliError::Exit { code, message }) => {
                assert_eq!(code, Some(1));
                assert_eq!(message, "boom");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_gone_pane_and_a_missing_tmux_session_fail_by_design_and_nothing_else_does() {
        let exit = |code, m: &str| CliError::Exit {
            code: Some(code),
            message: m.into(),
        };
        let gone = exit(1, "failed to capture pane: exit status 1");
        assert!(by_design("output-pane", &gone));
        assert!(!by_design("output-pane", &exit(2, "session not found")));
        assert!(
            !by_design("output", &gone),
            "the transcript is another call"
        );
        assert!(!by_design("restart", &exit(1, "boom")));
        let missing = CliError::spawn_exited(
            Some(1),
            r#"{"code":"INVALID_OPERATION","error":"e","reason":"tmux_session_missing","success":false}"#,
            "",
        );
        assert!(by_design("restart", &missing), "{missing:?}");
        let died = CliError::spawn_exited(
            Some(1),
            r#"{"code":"INVALID_OPERATION","error":"e","reason":"spawn_died_fast","success":false}"#,
            "",
        );
        assert!(!by_design("restart", &died));
    }

    #[test]
    fn a_typed_but_unconfirmed_send_is_told_apart_from_a_failed_one() {
        let tmp = tempfile::tempdir().unwrap();
        // Like agent-deck: the JSON error (with `delivery`) only under `--json`.
        let cli = cli_running(
            tmp.path(),
            "#!/bin/sh\ncase \" $* \" in *\" --json \"*) echo '{\"code\":\"DELIVERY_FAILED\",\"delivery\":\"typed\",\"error\":\"not acted on\",\"session_id\":\"a-1\",\"session_title\":\"w\",\"submitted\":false,\"success\":false}' ;;\n*) echo 'Error: not acted on' >&2 ;;\nesac\nexit 1\n",
        );
        let err = cli.send("default", "a-1", "report status?").unwrap_err();
        assert_eq!(err.delivery(), Some(Delivery::Typed), "{err}");
        assert!(err.to_string().contains("not acted on"), "{err}");
        assert_eq!(cli.stats().failures.get("send"), Some(&1));
        let plain = CliError::Exit {
            code: Some(1),
            message: "session 'w' is not running".into(),
        };
        assert_eq!(plain.delivery(), None);
    }

    /// A CLI that logs its arguments to `args.log` and answers `version`
    /// with `version`, `list` with `[]` and a WARNING on stderr, and fails
    /// `-p bad list`.
    fn cli_of_release(dir: &std::path::Path, version: &str) -> Cli {
        let log = dir.join("args.log");
        cli_running(
            dir,
            &format!(
                "#!/bin/sh\necho \"$*\" >> '{}'\ncase \"$*\" in\nversion) echo 'Agent Deck v{version}' ;;\n\
                 '-p bad list --json') echo 'Error: boom' >&2; exit 1 ;;\n\
                 *list*) echo 'WARNING: profile stores exist under both /a (3 sessions) and /b (0 sessions)' >&2; echo '[]' ;;\n\
                 *) echo pane ;;\nesac\n",
                log.display()
            ),
        )
    }

    fn logged(dir: &std::path::Path) -> String {
        std::fs::read_to_string(dir.join("args.log")).unwrap_or_default()
    }

    #[test]
    fn the_pane_sample_passes_primary_only_from_the_release_that_has_it() {
        for (release, primary) in [
            ("1.16.26", true),
            ("1.16.11", true),
            ("1.16.10", false),
            ("1.14.0", false),
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let cli = cli_of_release(tmp.path(), release);
            assert_eq!(cli.version(), None, "nothing read yet");
            cli.pane("default", "a-1").unwrap();
            assert_eq!(
                cli.read_version(0.0).map(|v| v.to_string()).as_deref(),
                Some(release)
            );
            assert_eq!(cli.version(), Version::parse(release));
            cli.pane("default", "a-1").unwrap();
            let log = logged(tmp.path());
            let lines: Vec<&str> = log.lines().collect();
            assert_eq!(
                lines[0], "-p default session output a-1 --pane -q",
                "{release}: unread gates as the oldest"
            );
            assert_eq!(lines[1], "version");
            let want = if primary {
                "-p default session output a-1 --pane --primary -q"
            } else {
                "-p default session output a-1 --pane -q"
            };
            assert_eq!(lines[2], want, "{release}");
            assert_eq!(cli.stats().calls.get("version"), Some(&1));
        }
    }

    #[test]
    fn an_unreadable_version_is_none_and_gates_as_the_oldest() {
        let tmp = tempfile::tempdir().unwrap();
        let cli = cli_printing(tmp.path(), "Agent Deck dev");
        assert_eq!(cli.read_version(0.0), None);
        assert_eq!(cli.version(), None);
        assert!(!cli.version_due(1.0), "read, though not understood");
    }

    #[test]
    fn a_failed_version_read_keeps_the_release_for_the_gates_until_a_call_works() {
        let tmp = tempfile::tempdir().unwrap();
        let (release, log) = (tmp.path().join("release"), tmp.path().join("args.log"));
        let script = format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\ncase \"$*\" in\nversion) cat '{}' || exit 1 ;;\n*) echo pane ;;\nesac\n",
            log.display(),
            release.display()
        );
        let cli = cli_running(tmp.path(), &script);
        std::fs::write(&release, "Agent Deck v1.16.26\n").unwrap();
        let v = Version::parse("1.16.26");
        assert_eq!(cli.read_version(0.0), v);
        // An update in place: the answer is gone for a moment.
        std::fs::remove_file(&release).unwrap();
        assert_eq!(cli.read_version(1.0), v, "kept, never not known");
        assert_eq!((cli.version(), cli.version_unconfirmed()), (v, true));
        assert!(!cli.version_due(2.0) && cli.nudged().try_recv().is_err());
        cli.pane("default", "a-1").unwrap();
        let sampled = logged(tmp.path());
        assert!(sampled.ends_with("--pane --primary -q\n"), "{sampled}");
        assert!(cli.version_due(2.0), "asked again after a call that works");
        assert!(cli.nudged().try_recv().is_ok(), "the reader is woken");
        std::fs::write(&release, "Agent Deck v1.16.26\n").unwrap();
        assert_eq!(cli.read_version(2.0), v);
        assert!(!cli.version_unconfirmed());
    }

    #[test]
    fn a_warning_on_stderr_of_a_success_is_no_failure_and_noted_once() {
        let tmp = tempfile::tempdir().unwrap();
        let cli = cli_of_release(tmp.path(), "1.16.26");
        let mut rows = 0;
        cli.list_all(&mut |_| rows += 1).unwrap();
        cli.list_profile("work", &mut |_| rows += 1).unwrap();
        assert_eq!(rows, 0);
        assert!(cli.stats().failures.is_empty(), "{:?}", cli.stats());
        // Noted under its shape, digits aside: a changed count is the same line.
        let shape = "WARNING: profile stores exist under both /a ( sessions) and /b ( sessions)";
        assert!(
            !cli.stderr_notes.allows(shape, STDERR_NOTE_EVERY),
            "the line was not noted"
        );
    }

    #[test]
    fn a_failed_list_asks_for_the_version_again_and_a_pane_failure_does_not() {
        let tmp = tempfile::tempdir().unwrap();
        let cli = cli_of_release(tmp.path(), "1.16.26");
        cli.read_version(0.0);
        assert!(!cli.version_due(10.0));
        assert!(cli.nudged().try_recv().is_err());
        let bin = tmp.path().join("agent-deck");
        let dead = Cli::new(bin, Duration::from_secs(10), Shutdown::new().unwrap());
        dead.read_version(0.0);
        let _ = dead.call("output-pane", "", &["-p", "bad", "list", "--json"]);
        assert!(
            !dead.version_due(10.0),
            "a pane sample's failure is no sign"
        );
        assert!(cli.list_profile("bad", &mut |_| {}).is_err());
        assert!(cli.version_due(10.0));
        assert!(cli.nudged().try_recv().is_ok(), "the watcher is woken");
        cli.read_version(10.0);
        assert!(!cli.version_due(11.0));
    }

    #[test]
    fn a_failed_spawn_keeps_its_reason_and_no_pane_text_and_start_asks_for_json() {
        let tmp = tempfile::tempdir().unwrap();
        // Like agent-deck 1.16.10+: the failure JSON only under `--json`.
        let cli = cli_running(
            tmp.path(),
            "#!/bin/sh
case \" $* \" in *\" --json \"*) echo '{\"code\":\"INVALID_OPERATION\",\"error\":\"failed to start session: tmux session \\\"agentdeck_t_a\\\" is gone: spawn_died_fast (exited after 980ms): secret pane\",\"id\":\"a-1\",\"reason\":\"spawn_died_fast\",\"spawn_failure\":{\"dying_output\":\"secret pane\",\"elapsed_ms\":980,\"reason\":\"spawn_died_fast\"},\"success\":false,\"title\":\"t\",\"tmux\":\"agentdeck_t_a\"}' ;;\n*) echo 'Error: failed to start session: secret pane' >&2 ;;\nesac\nexit 1\n",
        );
        for err in [
            cli.start("default", "a-1").unwrap_err(),
            cli.restart("default", "a-1").unwrap_err(),
        ] {
            let spawn = err.spawn().expect("a spawn failure");
            assert_eq!(spawn.reason, SpawnReason::DiedFast);
            assert_eq!(spawn.elapsed_ms, Some(980));
            let shown = err.to_string();
            assert!(!shown.contains("secret"), "{shown}");
            assert!(
                shown.starts_with("exited 1: failed to start session: tmux session")
                    && shown.ends_with("(reason: spawn_died_fast)"),
                "{shown}"
            );
        }
        assert_eq!(cli.stats().failures.get("start"), Some(&1));
        // Every other call reads a reason as nothing special.
        let other = cli.send("default", "a-1", "hi").unwrap_err();
        assert!(other.spawn().is_none(), "{other}");
    }

    #[test]
    fn unreadable_rows_are_warned_about_at_most_once_a_minute() {
        let tmp = tempfile::tempdir().unwrap();
        let cli = cli_printing(tmp.path(), "[]");
        let tally = RowTally {
            rows: 2,
            skipped: 1,
            reasons: vec!["row 3: no id".to_owned()],
        };
        cli.warn_skipped("list-all", "", &["list", "--all", "--json"], &tally);
        assert_eq!(cli.skips.lock()["list-all"], 0, "not warned");
        assert!(!cli.skip_warnings.allows(&"list-all", SKIP_WARN_EVERY));
        cli.warn_skipped("list-all", "", &["list", "--all", "--json"], &tally);
        assert_eq!(cli.skips.lock()["list-all"], 1, "warned twice");
    }
}
