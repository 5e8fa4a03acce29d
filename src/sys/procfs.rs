//! The process table, read from `/proc`: one scan that yields each other
//! process's pid and command line (and its environment on request), and
//! whether a pid is alive. The root is a parameter so tests lay out a fake
//! `/proc` in a temp dir. Callers decide what a match means.

use std::path::{Path, PathBuf};

/// One process seen by [`processes`].
#[derive(Debug, Clone)]
pub struct Process {
    pub pid: u32,
    /// NUL-separated argv, as the kernel keeps it.
    pub cmdline: Vec<u8>,
    dir: PathBuf,
}

impl Process {
    /// The command line with NULs as spaces, for text matching.
    pub fn command_text(&self) -> String {
        String::from_utf8_lossy(&self.cmdline).replace('\0', " ")
    }

    /// Whether `KEY=value` is in the process's environment, exactly.
    pub fn has_env(&self, pair: &str) -> bool {
        std::fs::read(self.dir.join("environ"))
            .map(|env| env.split(|b| *b == 0).any(|kv| kv == pair.as_bytes()))
            .unwrap_or(false)
    }
}

/// Every process but this one whose command line is readable.
pub fn processes(proc_dir: &Path) -> impl Iterator<Item = Process> {
    let me = std::process::id();
    std::fs::read_dir(proc_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(move |e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            if pid == me {
                return None;
            }
            let dir = e.path();
            let cmdline = std::fs::read(dir.join("cmdline")).ok()?;
            Some(Process { pid, cmdline, dir })
        })
}

/// Whether `pid` is a live (non-zombie) process.
pub fn pid_alive(proc_dir: &Path, pid: u32) -> bool {
    std::fs::read_to_string(proc_dir.join(pid.to_string()).join("stat"))
        .map(|s| {
            s.rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_process(root: &Path, pid: u32, cmdline: &[u8], environ: &[u8], state: char) {
        let dir = root.join(pid.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cmdline"), cmdline).unwrap();
        std::fs::write(dir.join("environ"), environ).unwrap();
        std::fs::write(dir.join("stat"), format!("{pid} (x y) {state} 1 2")).unwrap();
    }

    #[test]
    fn scan_reads_command_lines_and_environments() {
        let tmp = tempfile::tempdir().unwrap();
        fake_process(tmp.path(), 10, b"bun\0run\0telegram\0", b"A=1\0B=2\0", 'S');
        fake_process(tmp.path(), 11, b"sleep\0", b"", 'Z');
        std::fs::create_dir_all(tmp.path().join("self")).unwrap();
        let mut seen: Vec<Process> = processes(tmp.path()).collect();
        seen.sort_by_key(|p| p.pid);
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].command_text(), "bun run telegram ");
        assert!(seen[0].has_env("B=2"));
        assert!(!seen[0].has_env("B=22"));
        assert!(pid_alive(tmp.path(), 10));
        assert!(!pid_alive(tmp.path(), 11), "a zombie is not alive");
        assert!(!pid_alive(tmp.path(), 12));
    }
}
