//! The follow-up pass of SPEC §8: for each task that is due, done → `done`;
//! alive → look again later; died without `.done` → exhausted, tampered,
//! capped or re-dispatched, in that order.
//!
//! [`decide`] is the pure rule; [`FollowUp::pass`] gathers the facts (done
//! file, process table, task-file checksum), applies the rule under the
//! registry lock, checks the done file once more right before spawning, and
//! re-dispatches through [`crate::sys::process::spawn_detached`]. In dry-run it
//! decides and reports but spawns nothing and writes nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::alert::escalate::Escalator;
use crate::error::Result;
use crate::sys::clock::Clock;
use crate::sys::process::{self, Cmd};
use crate::tasks::registry::{Registry, RegistryFile, Task, TaskStatus};

/// What the pass observed about one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    pub done: bool,
    pub alive: bool,
    /// SHA-256 of the task file now; `None` when it is gone.
    pub sha_now: Option<String>,
}

/// What to do with a due task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Done,
    Wait,
    Exhausted,
    Tampered,
    Capped,
    Redispatch,
}

/// The rule, in the order the meeting agreed on.
pub fn decide(t: &Task, f: &Facts, redispatched_today: u32, cap: u32) -> Step {
    if f.done {
        Step::Done
    } else if f.alive {
        Step::Wait
    } else if t.retry_count >= t.max_retry {
        Step::Exhausted
    } else if f.sha_now.as_deref() != Some(t.task_sha256.as_str()) {
        Step::Tampered
    } else if redispatched_today >= cap {
        Step::Capped
    } else {
        Step::Redispatch
    }
}

/// The id of the next re-dispatch: always numbered from the root,
/// `task-1707` → `task-1707.2` → `task-1707.3`.
pub fn next_id(t: &Task) -> String {
    format!("{}.{}", t.root(), t.retry_count + 2)
}

/// Fills `{task_id}`, `{task_file}`, `{parent_task}`, `{retry}` and
/// `{partial_file}` into each argv word.
pub fn render(template: &[String], vars: &[(&str, String)]) -> Vec<String> {
    template
        .iter()
        .map(|word| {
            vars.iter()
                .fold(word.clone(), |w, (k, v)| w.replace(&format!("{{{k}}}"), v))
        })
        .collect()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub fn file_sha256(path: &Path) -> Option<String> {
    std::fs::read(path).ok().map(|b| sha256_hex(&b))
}

/// Hex HMAC-SHA256 of `bytes` under `key`.
pub fn sign(key: &[u8], bytes: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts keys of any length");
    mac.update(bytes);
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether `sig_hex` is the HMAC of `bytes` (constant-time compare).
pub fn verify(key: &[u8], bytes: &[u8], sig_hex: &str) -> bool {
    let sig_hex = sig_hex.trim();
    if sig_hex.len() % 2 != 0 {
        return false;
    }
    let Some(sig) = (0..sig_hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(sig_hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()
    else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts keys of any length");
    mac.update(bytes);
    mac.verify_slice(&sig).is_ok()
}

/// Reads an HMAC key file (trailing whitespace is not part of the key).
pub fn read_key(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut key = std::fs::read(path)?;
    while key.last().is_some_and(u8::is_ascii_whitespace) {
        key.pop();
    }
    Ok(key)
}

/// The local calendar day, for the daily cap.
pub fn day_of(ts: f64) -> i64 {
    crate::sys::clock::local_day(ts)
}

/// Whether `pid` is a live (non-zombie) process.
fn pid_alive(proc_dir: &Path, pid: u32) -> bool {
    std::fs::read_to_string(proc_dir.join(pid.to_string()).join("stat"))
        .map(|s| {
            s.rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
        })
        .unwrap_or(false)
}

/// Whether any process other than the watchdog itself has `needle` in its
/// command line.
fn command_line_running(proc_dir: &Path, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir(proc_dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()) && *n != me)
        else {
            return false;
        };
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else {
            return false;
        };
        let mut argv = raw.split(|b| *b == 0).filter(|a| !a.is_empty());
        let ours = argv
            .next()
            .is_some_and(|a0| a0.ends_with(b"agent-deck-watchdog"));
        let text = String::from_utf8_lossy(&raw).replace('\0', " ");
        !ours && contains_word(&text, needle) && pid_alive(proc_dir, pid.parse().unwrap_or(0))
    })
}

/// Whether `needle` occurs in `text` not as part of a longer id: `task-1` is
/// not in `task-10` nor in `task-1.2`.
fn contains_word(text: &str, needle: &str) -> bool {
    let id_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_');
    text.match_indices(needle).any(|(i, _)| {
        let clear_before = !text[..i].chars().next_back().is_some_and(id_char);
        let mut after = text[i + needle.len()..].chars();
        let clear_after = match after.next() {
            None => true,
            // `task-1.` ends a sentence; `task-1.2` is another id.
            Some('.') => !after.next().is_some_and(|c| c.is_ascii_alphanumeric()),
            Some(c) => !id_char(c),
        };
        clear_before && clear_after
    })
}

/// Runs follow-up passes.
pub struct FollowUp {
    pub registry: RegistryFile,
    pub escalator: Arc<Escalator>,
    pub clock: Arc<dyn Clock>,
    pub dry_run: bool,
    pub cap: u32,
    pub logs_dir: PathBuf,
    pub hmac_key_file: Option<PathBuf>,
    pub proc_dir: PathBuf,
}

/// How a pass went, for logs and `task check`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    pub checked: usize,
    pub redispatched: Vec<String>,
}

impl FollowUp {
    fn facts(&self, t: &Task) -> Facts {
        Facts {
            done: t.done_file.exists(),
            alive: t.pid.is_some_and(|p| pid_alive(&self.proc_dir, p))
                || command_line_running(&self.proc_dir, &t.match_),
            sha_now: file_sha256(&t.task_file),
        }
    }

    /// One pass over every due task.
    pub fn pass(&self) -> Result<Summary> {
        let now = self.clock.now();
        if self.dry_run {
            let mut reg = self.registry.load()?;
            return Ok(self.walk(&mut reg, now));
        }
        self.registry.update(|reg| Ok(self.walk(reg, now)))
    }

    fn walk(&self, reg: &mut Registry, now: f64) -> Summary {
        let mut summary = Summary::default();
        let due: Vec<String> = reg
            .tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Pending && t.next_check_at <= now)
            .map(|t| t.id.clone())
            .collect();
        for id in due {
            summary.checked += 1;
            if let Some(new_id) = self.follow(reg, &id, now) {
                summary.redispatched.push(new_id);
            }
        }
        summary
    }

    /// Follows up one task; the new task's id if it was re-dispatched.
    fn follow(&self, reg: &mut Registry, id: &str, now: f64) -> Option<String> {
        let t = reg.get(id)?.clone();
        let facts = self.facts(&t);
        let today = day_of(now);
        let step = decide(&t, &facts, reg.redispatched_on(today), self.cap);
        let dry = if self.dry_run { " (dry-run)" } else { "" };
        let task = reg.get_mut(id)?;
        match step {
            Step::Done => {
                log::info!("task {id} is done{dry}");
                task.status = TaskStatus::Done;
                task.note(now, "done", None);
            }
            Step::Wait => {
                log::debug!(
                    "task {id} is still running; checking again in {:.0}s",
                    t.followup_s
                );
                task.next_check_at = now + t.followup_s;
            }
            Step::Exhausted => {
                task.status = TaskStatus::Exhausted;
                task.note(now, "exhausted", None);
                let msg = format!(
                    "task {id} died without .done and its {} retries are spent — needs a human (task file {})",
                    t.max_retry,
                    t.task_file.display()
                );
                self.escalator
                    .escalate("task-exhausted", &msg, Some(id), false);
            }
            Step::Tampered => {
                task.status = TaskStatus::Tampered;
                task.note(now, "tampered", None);
                let what = if facts.sha_now.is_none() {
                    "is gone"
                } else {
                    "changed since it was registered"
                };
                let msg = format!(
                    "task {id} died without .done, but its task file {} {what}; not re-dispatching",
                    t.task_file.display()
                );
                self.escalator
                    .escalate("task-tampered", &msg, Some(id), false);
            }
            Step::Capped => {
                task.next_check_at = crate::sys::clock::next_local_midnight(now);
                task.note(now, "capped", None);
                let msg = format!(
                    "task {id} died without .done, but {} re-dispatches already ran today (TASK_DAILY_REDISPATCH_CAP); trying again tomorrow",
                    self.cap
                );
                self.escalator.escalate("redispatch-cap", &msg, None, false);
            }
            Step::Redispatch => return self.redispatch(reg, &t, now),
        }
        None
    }

    fn redispatch(&self, reg: &mut Registry, t: &Task, now: f64) -> Option<String> {
        // The race the meeting named: `.done` may have landed since the first look.
        if t.done_file.exists() {
            let task = reg.get_mut(&t.id)?;
            task.status = TaskStatus::Done;
            task.note(now, "done", Some("found just before re-dispatch".into()));
            return None;
        }
        let new_id = next_id(t);
        let partial = self.usable_partial(t);
        // The checkpoint stays one file per lineage; the done file follows the new id.
        let (done_file, partial_file) = (
            successor_path(&t.done_file, &t.id, &new_id),
            t.partial_file.clone(),
        );
        let vars = [
            ("task_id", new_id.clone()),
            ("task_file", t.task_file.display().to_string()),
            ("parent_task", t.root().to_owned()),
            ("retry", (t.retry_count + 1).to_string()),
            (
                "partial_file",
                partial.map(|p| p.display().to_string()).unwrap_or_default(),
            ),
        ];
        let argv = render(&t.command, &vars);
        let log_path = self.logs_dir.join(format!("{new_id}.log"));
        let pid = if self.dry_run {
            log::info!(
                "dry-run: would re-dispatch task {} as {new_id}: {argv:?}",
                t.id
            );
            None
        } else {
            let (program, args) = argv.split_first()?;
            match process::spawn_detached(&Cmd::new(program).args(args), &log_path) {
                Ok(pid) => Some(pid),
                Err(e) => {
                    log::warn!("re-dispatch of task {} as {new_id} failed to start ({e}); trying again next pass", t.id);
                    let task = reg.get_mut(&t.id)?;
                    task.note(now, "redispatch-failed", Some(e.to_string()));
                    task.next_check_at = now + t.followup_s;
                    return None;
                }
            }
        };
        reg.count_redispatch(day_of(now));
        let old = reg.get_mut(&t.id)?;
        old.status = TaskStatus::Retried;
        old.note(now, "retried", Some(format!("re-dispatched as {new_id}")));
        let mut child = Task {
            id: new_id.clone(),
            done_file,
            partial_file,
            dispatched_at: now,
            next_check_at: now + t.followup_s,
            retry_count: t.retry_count + 1,
            parent_task: Some(t.root().to_owned()),
            status: TaskStatus::Pending,
            pid,
            match_: new_id.clone(),
            history: Vec::new(),
            ..t.clone()
        };
        child.note(
            now,
            "dispatched",
            Some(format!(
                "re-dispatch of {}, output in {}",
                t.id,
                log_path.display()
            )),
        );
        reg.tasks.push(child);
        let msg = format!(
            "task {} died without .done; re-dispatched as {new_id} (retry {}/{})",
            t.id,
            t.retry_count + 1,
            t.max_retry
        );
        self.escalator
            .escalate("task-retry", &msg, Some(&t.id), false);
        Some(new_id)
    }

    /// The `.partial` checkpoint, if present and (with a key configured)
    /// correctly signed; a bad signature escalates and is not used.
    fn usable_partial(&self, t: &Task) -> Option<PathBuf> {
        let bytes = std::fs::read(&t.partial_file).ok()?;
        let Some(key_file) = &self.hmac_key_file else {
            return Some(t.partial_file.clone());
        };
        let mut sig_path = t.partial_file.as_os_str().to_owned();
        sig_path.push(".sig");
        let sig = std::fs::read_to_string(PathBuf::from(sig_path)).unwrap_or_default();
        match read_key(key_file) {
            Ok(key) if verify(&key, &bytes, &sig) => Some(t.partial_file.clone()),
            Ok(_) => {
                let msg = format!(
                    "task {}: {} has no valid signature; re-dispatching without it",
                    t.id,
                    t.partial_file.display()
                );
                self.escalator
                    .escalate("partial-tampered", &msg, Some(&t.id), false);
                None
            }
            Err(e) => {
                log::warn!(
                    "cannot read HMAC key {} ({e}); not using the partial of task {}",
                    key_file.display(),
                    t.id
                );
                None
            }
        }
    }
}

/// A re-dispatch's done file: the default `<dir>/<id>.done` follows the new
/// id; a path the dispatcher chose is kept.
fn successor_path(path: &Path, old_id: &str, new_id: &str) -> PathBuf {
    match path.file_name().and_then(|n| n.to_str()) {
        Some(name) if name == format!("{old_id}.done") => {
            path.with_file_name(format!("{new_id}.done"))
        }
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(retry: u32, max: u32) -> Task {
        Task {
            id: if retry == 0 {
                "task-1707".into()
            } else {
                format!("task-1707.{}", retry + 1)
            },
            task_file: "/t/task.md".into(),
            task_sha256: "abc".into(),
            done_file: "/t/task-1707.done".into(),
            partial_file: "/t/task-1707.partial".into(),
            followup_s: 1200.0,
            dispatched_at: 0.0,
            next_check_at: 0.0,
            retry_count: retry,
            max_retry: max,
            parent_task: (retry > 0).then(|| "task-1707".into()),
            status: TaskStatus::Pending,
            pid: None,
            match_: "task-1707".into(),
            command: vec![],
            history: vec![],
        }
    }

    fn facts(done: bool, alive: bool, sha: Option<&str>) -> Facts {
        Facts {
            done,
            alive,
            sha_now: sha.map(str::to_owned),
        }
    }

    #[test]
    fn rule_order() {
        let t = task(0, 2);
        assert_eq!(decide(&t, &facts(true, true, None), 99, 20), Step::Done);
        assert_eq!(decide(&t, &facts(false, true, None), 99, 20), Step::Wait);
        assert_eq!(
            decide(&task(2, 2), &facts(false, false, None), 99, 20),
            Step::Exhausted
        );
        assert_eq!(
            decide(&t, &facts(false, false, None), 0, 20),
            Step::Tampered
        );
        assert_eq!(
            decide(&t, &facts(false, false, Some("other")), 0, 20),
            Step::Tampered
        );
        assert_eq!(
            decide(&t, &facts(false, false, Some("abc")), 20, 20),
            Step::Capped
        );
        assert_eq!(
            decide(&t, &facts(false, false, Some("abc")), 19, 20),
            Step::Redispatch
        );
    }

    #[test]
    fn sub_numbers_always_come_from_the_root() {
        assert_eq!(next_id(&task(0, 2)), "task-1707.2");
        assert_eq!(next_id(&task(1, 2)), "task-1707.3");
        assert_eq!(
            successor_path(Path::new("/t/task-1707.done"), "task-1707", "task-1707.2"),
            PathBuf::from("/t/task-1707.2.done")
        );
        assert_eq!(
            successor_path(Path::new("/t/custom.done"), "task-1707", "task-1707.2"),
            PathBuf::from("/t/custom.done")
        );
    }

    #[test]
    fn template_rendering() {
        let argv = render(
            &[
                "run".into(),
                "--id={task_id}".into(),
                "{task_file}".into(),
                "{parent_task}/{retry}".into(),
            ],
            &[
                ("task_id", "t.2".into()),
                ("task_file", "/f".into()),
                ("parent_task", "t".into()),
                ("retry", "1".into()),
            ],
        );
        assert_eq!(argv, ["run", "--id=t.2", "/f", "t/1"]);
    }

    #[test]
    fn hmac_sign_and_verify() {
        let sig = sign(b"key", b"partial work");
        assert_eq!(sig.len(), 64);
        assert!(verify(b"key", b"partial work", &format!("{sig}\n")));
        assert!(!verify(b"key", b"partial work!", &sig));
        assert!(!verify(b"other", b"partial work", &sig));
        assert!(!verify(b"key", b"partial work", "zz"));
        assert!(!verify(b"key", b"partial work", ""));
    }

    #[test]
    fn task_match_is_a_whole_id() {
        assert!(contains_word("dispatch.sh --task task-1 --go", "task-1"));
        assert!(contains_word("claude -p 'work on task-1.'", "task-1"));
        assert!(!contains_word("dispatch.sh task-10", "task-1"));
        assert!(!contains_word("dispatch.sh task-1.2", "task-1"));
        assert!(!contains_word("dispatch.sh xtask-1", "task-1"));
    }

    #[test]
    fn the_daily_cap_counts_whole_days() {
        let t = 1_796_068_800.0;
        assert_eq!(day_of(t + 86_400.0), day_of(t) + 1);
        assert!(day_of(t + 1.0) - day_of(t) <= 1);
    }
}
