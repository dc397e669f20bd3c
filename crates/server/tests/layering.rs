//! No import cycle between the server's top-level modules (each folder or flat file of
//! `src/` taken as one module): the graph is read from every `crate::x` path in the
//! sources, comments and unit-test files (`*tests.rs`) left out. A cycle is how the old
//! tree let auth, the engine and the API reach back into each other; the next floors
//! (a second runtime, a cluster) add modules, and this keeps them layered.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

fn graph(src: &Path) -> Graph {
    fn walk(dir: &Path, src: &Path, g: &mut Graph) {
        for e in std::fs::read_dir(dir).expect("read src") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                walk(&p, src, g);
                continue;
            }
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            if !name.ends_with(".rs") || name.ends_with("tests.rs") {
                continue;
            }
            let rel = p.strip_prefix(src).expect("under src");
            let top = rel
                .iter()
                .next()
                .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
                .unwrap_or_default();
            if top == "lib" {
                continue;
            }
            let text = std::fs::read_to_string(&p).expect("read file");
            let code: String = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            let edges = g.entry(top.clone()).or_default();
            for (i, _) in code.match_indices("crate::") {
                let rest = &code[i + "crate::".len()..];
                let dst: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !dst.is_empty() && dst != top {
                    edges.insert(dst);
                }
                // `use crate::{a, b::c}`: each group member is an edge too.
                if let Some(group) = rest.strip_prefix('{') {
                    let end = group.find("};").unwrap_or(group.len());
                    for part in group[..end].split(',') {
                        let head: String = part
                            .trim()
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        if !head.is_empty() && head != top && head != "self" {
                            edges.insert(head);
                        }
                    }
                }
            }
        }
    }
    let mut g = Graph::new();
    walk(src, src, &mut g);
    g
}

/// A cycle through `start`, if any (depth-first search over the graph).
fn cycle_from(g: &Graph, start: &str) -> Option<Vec<String>> {
    fn dfs(g: &Graph, node: &str, path: &mut Vec<String>, seen: &mut BTreeSet<String>) -> bool {
        for next in g.get(node).into_iter().flatten() {
            if next == &path[0] {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if dfs(g, next, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    let mut seen = BTreeSet::new();
    dfs(g, start, &mut path, &mut seen).then_some(path)
}

#[test]
fn the_servers_modules_import_each_other_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    assert!(g.contains_key("engine") && g.contains_key("api"), "{g:?}");
    assert!(
        g["api"].contains("engine"),
        "the reader must see api -> engine: {:?}",
        g["api"]
    );
    let cycles: Vec<Vec<String>> = g.keys().filter_map(|m| cycle_from(&g, m)).collect();
    assert!(cycles.is_empty(), "import cycles: {cycles:?}");
}

#[test]
fn the_checker_finds_a_cycle() {
    let mut g = Graph::new();
    g.entry("engine".into())
        .or_default()
        .insert("console".into());
    g.entry("console".into())
        .or_default()
        .insert("engine".into());
    g.entry("api".into()).or_default().insert("engine".into());
    assert!(cycle_from(&g, "engine").is_some());
    assert!(cycle_from(&g, "api").is_none());
}
