//! The source tree's shape: no two files of `src/` import each other, even
//! through others, nor two files of the simulator's crate (`sim/src/`). Read from the `use crate::` and `use super::` lines of
//! each file's code before its tests, so a cycle is named when it comes back.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file: `src/decide/gates.rs` is `decide::gates`,
/// `src/decide/mod.rs` is `decide`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .filter(|p| p != "mod" && p != "lib")
        .collect();
    parts.join("::")
}

/// The paths a `use` statement names, braces expanded: `use crate::a::{b,
/// c::d};` names `a::b` and `a::c::d`, relative to the crate.
fn used_paths(statement: &str, here: &str) -> Vec<String> {
    let body = statement
        .trim_start_matches("pub(crate) ")
        .trim_start_matches("use ");
    let body = body.trim_end_matches(';').replace(char::is_whitespace, "");
    let mut out = Vec::new();
    expand(&body, &mut out);
    out.into_iter()
        .filter_map(|p| {
            if let Some(rest) = p.strip_prefix("crate::") {
                return Some(rest.to_owned());
            }
            let mut base: Vec<&str> = here.split("::").filter(|s| !s.is_empty()).collect();
            let mut rest = p.as_str();
            if !rest.starts_with("super::") {
                return None;
            }
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            base.push(rest);
            Some(base.join("::"))
        })
        .collect()
}

/// `a::{b,c::{d,e}}` into `a::b`, `a::c::d`, `a::c::e`.
fn expand(path: &str, out: &mut Vec<String>) {
    let Some(open) = path.find('{') else {
        out.push(path.to_owned());
        return;
    };
    let (head, inner) = (&path[..open], &path[open + 1..path.len() - 1]);
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                expand(&format!("{head}{}", &inner[start..i]), out);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < inner.len() {
        expand(&format!("{head}{}", &inner[start..]), out);
    }
}

/// The `use` statements of `code`, each on one line, `pub(...)` dropped.
fn use_statements(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Option<String> = None;
    for line in code.lines().map(str::trim) {
        let line = line
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub ");
        let mut statement = match open.take() {
            Some(s) => s + line,
            None if line.starts_with("use ") => line.to_owned(),
            None => continue,
        };
        if statement.ends_with(';') {
            statement.pop();
            out.push(statement);
        } else {
            statement.push(' ');
            open = Some(statement);
        }
    }
    out
}

/// Which files each file of the crate whose sources are in `src` (a path
/// in the workspace) imports, by module path.
fn imports(src: &str) -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(src);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(&src, f)).collect();
    let mut graph = BTreeMap::new();
    for file in &files {
        let here = module_of(&src, file);
        let text = std::fs::read_to_string(file).unwrap();
        let code = text.split("#[cfg(test)]\nmod ").next().unwrap_or_default();
        let mut deps = BTreeSet::new();
        for statement in use_statements(code) {
            if !(statement.starts_with("use crate::") || statement.starts_with("use super::")) {
                continue;
            }
            for path in used_paths(&statement, &here) {
                // The longest prefix that is a file of the tree.
                let mut parts: Vec<&str> = path.split("::").collect();
                while !parts.is_empty() && !modules.contains(&parts.join("::")) {
                    parts.pop();
                }
                let target = parts.join("::");
                if !parts.is_empty() && target != here {
                    deps.insert(target);
                }
            }
        }
        graph.insert(here, deps);
    }
    graph
}

/// A cycle through `from`, if any: the files in order, back to `from`.
fn cycle_through(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    let mut stack = vec![(from.to_owned(), vec![from.to_owned()])];
    let mut seen = BTreeSet::new();
    while let Some((node, path)) = stack.pop() {
        for next in graph.get(&node).into_iter().flatten() {
            if next == from {
                let mut cycle = path.clone();
                cycle.push(from.to_owned());
                return Some(cycle);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

/// The cycles of a crate's import graph, each as its files in order.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    graph
        .keys()
        .filter_map(|m| cycle_through(graph, m))
        .map(|c| c.join(" → "))
        .collect()
}

#[test]
fn no_two_files_of_the_source_import_each_other() {
    let graph = imports("src");
    assert!(
        graph.len() > 100,
        "the tree was read: {} files",
        graph.len()
    );
    let cycles = cycles(&graph);
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn no_two_files_of_the_simulator_import_each_other() {
    let graph = imports("sim/src");
    assert!(graph.len() > 10, "the tree was read: {} files", graph.len());
    let cycles = cycles(&graph);
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_reader_finds_the_imports_it_is_shown() {
    let got = used_paths(
        "use crate::decide::{cascade, gates::{Gate, Hold}};",
        "daemon",
    );
    assert_eq!(
        got,
        [
            "decide::cascade",
            "decide::gates::Gate",
            "decide::gates::Hold"
        ]
    );
    assert_eq!(
        used_paths("use super::deck::CliError;", "fleet::version_watch"),
        ["fleet::deck::CliError"]
    );
    assert!(used_paths("use std::io;", "x").is_empty());
}
