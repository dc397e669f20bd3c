//! No import cycle between the server's top-level modules (each folder of `src/` taken as
//! one module): the graph is read from every `crate::x` path in the sources, comments and
//! unit-test files (`*tests.rs`) left out; a path through one of `lib.rs`'s re-exports
//! (`pub use identity::{auth, …}`: the modules' old flat paths) counts for the folder it
//! names. A cycle is how the old tree let auth, the engine and the API reach back into
//! each other; the next floors (a second runtime, a cluster) add modules, and this keeps
//! them layered. And `src/` holds folders only (beside `lib.rs`): a flat file there is
//! a module nobody placed in the map.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// `lib.rs`'s re-exports: `pub use folder::{a, b};` maps `a` and `b` to `folder`.
fn aliases(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in lib.lines() {
        let line = line.trim();
        let Some(rest) = line
            .strip_prefix("pub use ")
            .or_else(|| line.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        let Some((folder, names)) = rest.trim_end_matches(';').split_once("::") else {
            continue;
        };
        for name in names.trim_matches(|c| c == '{' || c == '}').split(',') {
            let name = name.trim();
            if !name.is_empty() {
                out.insert(name.to_string(), folder.to_string());
            }
        }
    }
    out
}

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
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("read lib.rs");
    let alias = aliases(&lib);
    for (node, edges) in g.iter_mut() {
        *edges = std::mem::take(edges)
            .into_iter()
            .map(|d| alias.get(&d).cloned().unwrap_or(d))
            .filter(|d| d != node)
            .collect();
    }
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
    // Every edge names a folder (a re-export the reader missed would be a node of its own,
    // and a cycle through it would go unseen).
    for (node, edges) in &g {
        for e in edges {
            assert!(src.join(e).is_dir(), "{node} -> {e}: not a folder of src/");
        }
    }
    assert!(
        g["api"].contains("engine"),
        "the reader must see api -> engine: {:?}",
        g["api"]
    );
    let cycles: Vec<Vec<String>> = g.keys().filter_map(|m| cycle_from(&g, m)).collect();
    assert!(cycles.is_empty(), "import cycles: {cycles:?}");
}

#[test]
fn src_holds_folders_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let flat: Vec<String> = std::fs::read_dir(&src)
        .expect("read src")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "lib.rs"))
        .map(|p| p.display().to_string())
        .collect();
    assert!(flat.is_empty(), "flat files beside lib.rs: {flat:?}");
}

#[test]
fn a_path_through_a_re_export_counts_for_its_folder() {
    let a = aliases("pub use identity::{auth, attest};\npub(crate) use model::sync;\n");
    assert_eq!(a["auth"], "identity");
    assert_eq!(a["attest"], "identity");
    assert_eq!(a["sync"], "model");
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
