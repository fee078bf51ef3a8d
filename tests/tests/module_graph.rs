//! No module circle anywhere: in every crate of the workspace, the modules that share a parent
//! use one another in one direction only (a module's uses of its own submodules and ancestors
//! do not count). A circle means two modules that cannot be read, changed or moved apart; the
//! fix is a module below both (as `canary_core::analysis::outcome` is below the sections and
//! the verdict).
//!
//! The graph is read from the source: `crate::a::b` and `super::a` paths in code (comments and
//! `#[cfg(test)]` modules left out), resolved to the longest module path that exists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use cluster_canary_tests::repo_root;

/// Module path (`analysis::verdict`, "" for the crate root) → file.
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    let mut found = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source directory") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let relative = path
                .strip_prefix(src)
                .expect("under src")
                .with_extension("");
            let mut parts: Vec<String> = relative
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            if matches!(
                parts.last().map(String::as_str),
                Some("lib" | "main" | "mod")
            ) {
                parts.pop();
            }
            found.insert(parts.join("::"), path);
        }
    }
    found
}

/// The code of a file without comments and without its `#[cfg(test)] mod …` (the last item).
fn code(text: &str) -> String {
    let cut = text
        .match_indices("#[cfg(test)]")
        .find(|(at, marker)| text[at + marker.len()..].trim_start().starts_with("mod "))
        .map_or(text.len(), |(at, _)| at);
    let text = &text[..cut];
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Each `prefix` path in `code` (`crate::a::b`, `super::a`), as its segments; a group
/// (`super::{a, b::c}`) gives each of its members.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group.split('}').next().unwrap_or_default();
            for member in inner.split(',') {
                paths.push(segments(member.trim()));
            }
        } else {
            paths.push(segments(rest));
        }
    }
    paths
}

fn segments(text: &str) -> Vec<String> {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(text.len());
    text[..end]
        .split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Which modules each module uses.
fn uses(modules: &BTreeMap<String, PathBuf>) -> BTreeMap<String, BTreeSet<String>> {
    let longest = |parts: &[String]| {
        (1..=parts.len())
            .rev()
            .map(|n| parts[..n].join("::"))
            .find(|candidate| modules.contains_key(candidate))
    };
    modules
        .iter()
        .map(|(module, file)| {
            let code = code(&std::fs::read_to_string(file).expect("a source file"));
            let parent: Vec<String> = module
                .rsplit_once("::")
                .map(|(p, _)| p.split("::").map(str::to_owned).collect())
                .unwrap_or_default();
            let mut used = BTreeSet::new();
            for path in paths_after(&code, "crate::") {
                used.extend(longest(&path));
            }
            for path in paths_after(&code, "super::") {
                let full: Vec<String> = parent.iter().cloned().chain(path).collect();
                used.extend(longest(&full));
            }
            used.retain(|other| {
                other != module
                    && !other.starts_with(&format!("{module}::"))
                    && !module.starts_with(&format!("{other}::"))
                    && !other.is_empty()
            });
            (module.clone(), used)
        })
        .collect()
}

/// The circles among modules of one parent, each as its modules' names.
fn circles(uses: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let parent_of = |m: &str| m.rsplit_once("::").map_or("", |(p, _)| p).to_owned();
    let parents: BTreeSet<String> = uses
        .keys()
        .filter(|m| !m.is_empty())
        .map(|m| parent_of(m))
        .collect();
    let mut found = Vec::new();
    for parent in parents {
        let siblings: Vec<&String> = uses
            .keys()
            .filter(|m| !m.is_empty() && parent_of(m) == parent)
            .collect();
        let owner = |m: &str| {
            siblings
                .iter()
                .find(|s| m == s.as_str() || m.starts_with(&format!("{s}::")))
                .map(|s| (*s).clone())
        };
        let mut graph: BTreeMap<String, BTreeSet<String>> = siblings
            .iter()
            .map(|s| ((*s).clone(), BTreeSet::new()))
            .collect();
        for (module, used) in uses {
            let Some(from) = owner(module) else { continue };
            for other in used {
                if let Some(to) = owner(other).filter(|to| *to != from) {
                    graph.entry(from.clone()).or_default().insert(to);
                }
            }
        }
        // A sibling is in a circle when it reaches itself.
        let mut in_circle = BTreeSet::new();
        for start in graph.keys() {
            let mut seen = BTreeSet::new();
            let mut stack: Vec<&String> = graph[start].iter().collect();
            while let Some(next) = stack.pop() {
                if next == start {
                    in_circle.insert(start.clone());
                    break;
                }
                if seen.insert(next.clone()) {
                    stack.extend(graph[next].iter());
                }
            }
        }
        if !in_circle.is_empty() {
            found.push(in_circle.into_iter().collect());
        }
    }
    found
}

fn crate_sources() -> Vec<PathBuf> {
    let root = repo_root();
    let mut sources: Vec<PathBuf> = std::fs::read_dir(root.join("functions"))
        .expect("functions/")
        .map(|e| e.expect("an entry").path().join("src"))
        .filter(|src| src.is_dir())
        .collect();
    sources.push(root.join("cli/src"));
    sources.push(root.join("tests/src"));
    sources.sort();
    sources
}

#[test]
fn no_crate_has_a_module_circle() {
    let mut problems = Vec::new();
    for src in crate_sources() {
        for circle in circles(&uses(&modules(&src))) {
            problems.push(format!("{}: {}", src.display(), circle.join(" <-> ")));
        }
    }
    assert!(
        problems.is_empty(),
        "module circles:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_circle_is_found() {
    let uses = BTreeMap::from([
        ("a".to_owned(), BTreeSet::from(["b".to_owned()])),
        ("b".to_owned(), BTreeSet::from(["c::d".to_owned()])),
        ("c".to_owned(), BTreeSet::new()),
        ("c::d".to_owned(), BTreeSet::from(["a".to_owned()])),
        ("e".to_owned(), BTreeSet::from(["a".to_owned()])),
    ]);
    assert_eq!(
        circles(&uses),
        vec![vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]]
    );
}
