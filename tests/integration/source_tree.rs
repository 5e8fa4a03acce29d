//! The source tree's shape: no two files of `src/` import each other, even
//! through others, and no two rooms (the top folders) do; nor two files
//! of the simulator's crate (`sim/src/`). Read from each
//! file's code outside its `#[cfg(test)]` items: the `use crate::` and
//! `use super::` lines, and the paths written inline (`crate::a::b`, or a
//! name a `use` line brought in), so a cycle is named when it comes back.

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

/// The module path of a file: `src/decide/restart/gates.rs` is
/// `decide::restart::gates`,
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
    // `a::B as C` is kept as `a::B@C`: the file is `a`, the name `C`.
    let body = body.trim_end_matches(';').replace(" as ", "@");
    let body = body.replace(char::is_whitespace, "");
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

/// `code` without its `#[cfg(test)]` items (a `mod x;` among them is
/// named in `test_mods`: its file is test code too) and its `//` comments.
fn production_code(code: &str, test_mods: &mut Vec<String>) -> String {
    let mut out = String::new();
    let mut lines = code.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            out.push_str(line.split("//").next().unwrap_or_default());
            out.push('\n');
            continue;
        }
        // The item: more attributes, then up to its `;` or closing brace.
        let (mut depth, mut opened) = (0i32, false);
        for item in lines.by_ref() {
            let item = item.trim();
            if item.starts_with("#[") {
                continue;
            }
            let name = item.split("mod ").nth(1).and_then(|m| m.strip_suffix(';'));
            if let (Some(name), false) = (name, opened) {
                test_mods.push(name.to_owned());
            }
            depth += item.matches('{').count() as i32 - item.matches('}').count() as i32;
            opened |= item.contains('{');
            if (opened && depth <= 0) || (!opened && item.ends_with(';')) {
                break;
            }
        }
    }
    out
}

/// The `use` statements of `code`, each on one line, `pub(...)` dropped,
/// and the paths written inline elsewhere (`crate::a::b`, `super::c`).
fn references(code: &str) -> (Vec<String>, Vec<String>) {
    let (mut statements, mut inline) = (Vec::new(), Vec::new());
    let mut open: Option<String> = None;
    for line in code.lines().map(str::trim) {
        let line = match line.strip_prefix("pub") {
            Some(rest) if rest.starts_with('(') => rest.split_once(") ").map_or(line, |p| p.1),
            Some(rest) => rest.trim_start(),
            None => line,
        };
        let mut statement = match open.take() {
            Some(s) => s + line,
            None if line.starts_with("use ") => line.to_owned(),
            None => {
                inline.extend(inline_paths(line));
                continue;
            }
        };
        if statement.ends_with(';') {
            statement.pop();
            statements.push(statement);
        } else {
            statement.push(' ');
            open = Some(statement);
        }
    }
    (statements, inline)
}

/// The paths written in `line` (`crate::a::b`, `super::c`, `gates::Gate`).
fn inline_paths(line: &str) -> Vec<String> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    for (i, _) in line.match_indices("::") {
        let head = line[..i].trim_end_matches(ident);
        if head.len() == i || head.ends_with(':') {
            continue;
        }
        let path: String = line[head.len()..]
            .chars()
            .take_while(|&c| ident(c) || c == ':')
            .collect();
        out.push(path.trim_end_matches(':').to_owned());
    }
    out
}

/// Which files each file of the crate whose sources are in `src` (a path
/// in the workspace) imports, by module path: its `use` lines and the
/// paths written inline, in its code outside `#[cfg(test)]` items. Files
/// that are test code only are left out.
fn imports(src: &str) -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(src);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(&src, f)).collect();
    let mut codes = BTreeMap::new();
    let mut test_only = Vec::new();
    for file in &files {
        let here = module_of(&src, file);
        let mut test_mods = Vec::new();
        let code = production_code(&std::fs::read_to_string(file).unwrap(), &mut test_mods);
        let child = |m: &String| {
            [here.as_str(), m]
                .join("::")
                .trim_start_matches(':')
                .to_owned()
        };
        test_only.extend(test_mods.iter().map(child));
        codes.insert(here, code);
    }
    let test_code = |m: &str| {
        test_only
            .iter()
            .any(|t| m == t || m.starts_with(&format!("{t}::")))
    };
    let mut graph = BTreeMap::new();
    for (here, code) in codes.iter().filter(|(m, _)| !test_code(m)) {
        let (statements, inline) = references(code);
        let mut paths: Vec<String> = statements
            .iter()
            .filter(|s| s.starts_with("use crate::") || s.starts_with("use super::"))
            .flat_map(|s| used_paths(s, here))
            .collect();
        // A name a `use` line brought in (`use crate::decide::restart::gates;`)
        // opens an inline path too (`gates::gate(…)`).
        let named: BTreeMap<&str, String> = paths
            .iter()
            .map(|p| p.trim_end_matches("::self"))
            .filter_map(|p| Some((p.rsplit(['@', ':']).next()?, p.to_owned())))
            .collect();
        let mut inline_paths = Vec::new();
        for path in &inline {
            let (first, rest) = path.split_once("::").unwrap_or((path, ""));
            if first == "crate" || first == "super" {
                inline_paths.extend(used_paths(&format!("use {path}"), here));
            } else if let Some(full) = named.get(first) {
                inline_paths.push(format!("{full}::{rest}"));
            }
        }
        paths.extend(inline_paths);
        let mut deps = BTreeSet::new();
        for path in paths {
            // The longest prefix that is a file of the tree.
            let mut parts: Vec<&str> = path.split("::").collect();
            while !parts.is_empty() && !modules.contains(&parts.join("::")) {
                parts.pop();
            }
            let target = parts.join("::");
            if !parts.is_empty() && target != *here {
                deps.insert(target);
            }
        }
        graph.insert(here.clone(), deps);
    }
    graph
}

/// The room a module lives in: its top folder (`decide::restart::gates` is in
/// `decide`), or the file itself at the root (`error`, `lib`).
fn room_of(module: &str) -> &str {
    match module.split("::").next() {
        Some("") | None => "lib",
        Some(room) => room,
    }
}

/// Which rooms each room imports.
fn room_imports(files: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, deps) in files {
        let room = room_of(from);
        let edges = graph.entry(room.to_owned()).or_default();
        edges.extend(
            deps.iter()
                .map(|d| room_of(d))
                .filter(|to| *to != room)
                .map(str::to_owned),
        );
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

/// The cycles of an import graph, each as its nodes in order.
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

/// The same at the level of rooms (`decide` imports `fleet`, see "Where
/// things live" in `src/lib.rs`): no room imports one that imports it
/// back, even through others.
#[test]
fn no_two_rooms_of_the_source_import_each_other() {
    let rooms = room_imports(&imports("src"));
    assert!(rooms.len() > 15, "the rooms were read: {rooms:?}");
    assert!(rooms["decide"].contains("fleet"), "{rooms:?}");
    let cycles = cycles(&rooms);
    assert!(cycles.is_empty(), "room cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_reader_finds_the_imports_it_is_shown() {
    let got = used_paths(
        "use crate::decide::{book::cascade, restart::gates::{Gate, Hold}};",
        "daemon",
    );
    assert_eq!(
        got,
        [
            "decide::book::cascade",
            "decide::restart::gates::Gate",
            "decide::restart::gates::Hold"
        ]
    );
    assert_eq!(
        used_paths("use super::deck::CliError;", "fleet::version_watch"),
        ["fleet::deck::CliError"]
    );
    assert!(used_paths("use std::io;", "x").is_empty());
    assert_eq!(
        used_paths("use crate::triggers::kqueue::Watcher as Kernel;", "x"),
        ["triggers::kqueue::Watcher@Kernel"]
    );
    let (uses, inline) =
        references("use crate::a::{\n    b,\n    c,\n};\nlet x = crate::d::e(f::g, super::h);\n");
    assert_eq!(uses, ["use crate::a::{ b, c, }"]);
    assert_eq!(inline, ["crate::d::e", "f::g", "super::h"]);
    assert_eq!(inline_paths("let y = my_crate::x::Y;"), ["my_crate::x::Y"]);
}

#[test]
fn test_items_and_comments_are_not_read_as_code() {
    let mut test_mods = Vec::new();
    let code = production_code(
        "use crate::a;\n// crate::b\nfn f() {} // crate::c\n#[cfg(test)]\nmod fixtures;\n\
         #[cfg(test)]\n#[derive(Debug)]\nstruct Fake {\n    x: crate::d::X,\n}\n\
         fn g() -> crate::e::E {}\n#[cfg(test)]\nmod tests {\n    use crate::f;\n}\n",
        &mut test_mods,
    );
    assert_eq!(
        code,
        "use crate::a;\n\nfn f() {} \nfn g() -> crate::e::E {}\n"
    );
    assert_eq!(test_mods, ["fixtures"]);
}

/// Whether `a` and `b` differ by exactly one letter: one changed, added or
/// dropped.
fn one_letter_apart(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let (short, long) = if a.len() <= b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    match long.len() - short.len() {
        0 => a.iter().zip(&b).filter(|(x, y)| x != y).count() == 1,
        1 => (0..long.len()).any(|i| long[..i] == short[..i] && long[i + 1..] == short[i..]),
        _ => false,
    }
}

#[test]
fn no_two_files_of_the_source_differ_by_one_letter() {
    let mut files = Vec::new();
    for src in ["src", "sim/src"] {
        rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join(src), &mut files);
    }
    let stems: BTreeSet<String> = files
        .iter()
        .filter_map(|f| Some(f.file_stem()?.to_string_lossy().into_owned()))
        .collect();
    let close: Vec<(&String, &String)> = stems
        .iter()
        .flat_map(|a| stems.iter().map(move |b| (a, b)))
        .filter(|(a, b)| a < b && one_letter_apart(a, b))
        .collect();
    assert!(close.is_empty(), "file names one letter apart: {close:?}");
    assert!(one_letter_apart("stall", "stalls") && one_letter_apart("clock", "flock"));
    assert!(!one_letter_apart("stall", "stall") && !one_letter_apart("outage", "outcomes"));
}

/// `restart.log` is written from one file, `act/apply.rs`, the executor
/// of endings: no other production code calls `Records::restart` (a
/// `.restart(` not on agent-deck's client).
#[test]
fn restart_log_records_are_written_from_one_file() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut writers = BTreeSet::new();
    for file in &files {
        let code = production_code(&std::fs::read_to_string(file).unwrap(), &mut Vec::new());
        let writes = code.match_indices(".restart(").any(|(i, _)| {
            let before = code[..i].trim_end();
            !(before.ends_with("deck") || before.ends_with("cli"))
        });
        if writes {
            writers.insert(module_of(&src, file));
        }
    }
    assert_eq!(writers, BTreeSet::from(["act::apply".to_owned()]));
}

/// The same one level down, in the decision core: each folder answers one
/// question (a session's verdict, the restart machine, a stall, what the
/// restart book remembers of the fleet) and none imports a folder (or a
/// file beside them) that imports it back.
#[test]
fn no_two_folders_of_the_decision_core_import_each_other() {
    let folder = |m: &str| m.split("::").take(2).collect::<Vec<_>>().join("::");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, deps) in imports("src")
        .iter()
        .filter(|(m, _)| m.starts_with("decide::"))
    {
        let here = folder(from);
        let inside = deps.iter().filter(|d| d.starts_with("decide::"));
        let edges = graph.entry(here.clone()).or_default();
        edges.extend(inside.map(|d| folder(d)).filter(|to| *to != here));
    }
    assert!(
        graph["decide::restart"].contains("decide::book"),
        "{graph:?}"
    );
    let cycles = cycles(&graph);
    assert!(cycles.is_empty(), "folder cycles:\n{}", cycles.join("\n"));
}
