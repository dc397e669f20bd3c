//! No import cycle among the gateway's files. The graph is read from the sources: every
//! `crate::a::b` and `super::x` path (in `use` lines and inline) and, in a module's own
//! file, every path through one of its child modules. `mod x;` declarations are not edges
//! (declaring is not importing); re-exports are. A `super::x` naming an item of the file
//! itself (from an inline `mod tests`) is not an edge either. Checked at file level and
//! with each folder taken as one module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Module path (`crate`, `http`, `registry::budget`) -> file text, comments removed.
fn modules(src: &Path) -> BTreeMap<String, String> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).expect("read src") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                walk(&p, src, out);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(src).expect("under src").with_extension("");
            let mut parts: Vec<String> = rel
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|l| l == "mod") {
                parts.pop();
            }
            if parts == ["lib"] {
                parts.clear();
            }
            let name = if parts.is_empty() {
                "crate".to_string()
            } else {
                parts.join("::")
            };
            let text = std::fs::read_to_string(&p).expect("read file");
            let text: String = text
                .lines()
                .map(|l| l.split("//").next().unwrap_or_default())
                .filter(|l| !is_mod_declaration(l))
                .collect::<Vec<_>>()
                .join("\n");
            out.insert(name, text);
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

/// `mod x;`, `pub mod x;`, `pub(crate) mod x;` (not an inline `mod x { … }`).
fn is_mod_declaration(line: &str) -> bool {
    let l = line.trim();
    let l = l
        .strip_prefix("pub(crate) ")
        .or_else(|| l.strip_prefix("pub "))
        .unwrap_or(l);
    l.strip_prefix("mod ")
        .is_some_and(|rest| rest.trim_end().ends_with(';'))
}

fn ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths that follow each occurrence of `prefix` (`crate::`, `super::`), braces expanded
/// one level: `crate::{a, b::c}` gives `a` and `b::c`.
fn paths_after(text: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices(prefix) {
        if text[..i]
            .chars()
            .next_back()
            .is_some_and(|c| ident(c) || c == ':')
        {
            continue;
        }
        let rest = &text[i + prefix.len()..];
        let group = if let Some(inner) = rest.strip_prefix('{') {
            inner.split('}').next().unwrap_or_default().to_string()
        } else {
            rest.chars().take_while(|&c| ident(c) || c == ':').collect()
        };
        for p in group.split(',') {
            let segs: Vec<String> = p
                .trim()
                .split("::")
                .map(|s| s.chars().take_while(|&c| ident(c)).collect::<String>())
                .take_while(|s| !s.is_empty())
                .collect();
            if !segs.is_empty() {
                out.push(segs);
            }
        }
    }
    out
}

/// The longest module prefix of `segs` (an item of the crate root resolves to `crate`).
fn resolve(mods: &BTreeMap<String, String>, segs: &[String]) -> String {
    (1..=segs.len())
        .rev()
        .map(|k| segs[..k].join("::"))
        .find(|c| mods.contains_key(c))
        .unwrap_or_else(|| "crate".into())
}

fn graph(mods: &BTreeMap<String, String>) -> Graph {
    let mut g = Graph::new();
    for (m, text) in mods {
        let me: Vec<String> = if m == "crate" {
            Vec::new()
        } else {
            m.split("::").map(String::from).collect()
        };
        let own: BTreeSet<&str> = [
            "fn ", "struct ", "enum ", "const ", "type ", "static ", "trait ",
        ]
        .iter()
        .flat_map(|kw| {
            text.match_indices(kw)
                .map(move |(i, _)| &text[i + kw.len()..])
        })
        .map(|rest| rest.split(|c: char| !ident(c)).next().unwrap_or_default())
        .collect();
        let edges = g.entry(m.clone()).or_default();
        for segs in paths_after(text, "crate::") {
            edges.insert(resolve(mods, &segs));
        }
        for mut segs in paths_after(text, "super::") {
            let mut full = me[..me.len().saturating_sub(1)].to_vec();
            let mut up = 0;
            while segs.first().is_some_and(|s| s == "super") {
                segs.remove(0);
                full.pop();
                up += 1;
            }
            if segs.is_empty() {
                continue;
            }
            let parent = if full.is_empty() {
                "crate".to_string()
            } else {
                full.join("::")
            };
            let first = segs[0].clone();
            full.extend(segs);
            let target = resolve(mods, &full);
            // An item of the parent with the name of one of this file's own items: an
            // inline `mod tests` naming the file itself.
            if target == parent && up == 0 && own.contains(first.as_str()) {
                continue;
            }
            edges.insert(target);
        }
        let children: Vec<&String> = mods
            .keys()
            .filter(|k| {
                let parts: Vec<&str> = k.split("::").collect();
                *k != "crate"
                    && parts[..parts.len() - 1]
                        == me.iter().map(String::as_str).collect::<Vec<_>>()[..]
            })
            .collect();
        for child in children {
            let short = child.rsplit("::").next().unwrap_or_default();
            let uses = text.match_indices(&format!("{short}::")).any(|(i, _)| {
                !text[..i]
                    .chars()
                    .next_back()
                    .is_some_and(|c| ident(c) || c == ':')
            });
            if uses {
                edges.insert(child.clone());
            }
        }
        edges.remove(m);
    }
    g
}

/// Strongly connected components with more than one member (Tarjan).
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

/// Each folder as one module: `registry::budget` counts as `registry`.
fn by_folder(g: &Graph) -> Graph {
    let top = |m: &str| m.split("::").next().unwrap_or(m).to_string();
    let mut out = Graph::new();
    for (a, bs) in g {
        let e = out.entry(top(a)).or_default();
        e.extend(bs.iter().map(|b| top(b)).filter(|b| *b != top(a)));
    }
    out
}

#[test]
fn the_gateway_files_import_each_other_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mods = modules(&src);
    assert!(mods.len() > 30, "read {} files", mods.len());
    let g = graph(&mods);
    assert!(g["tcp"].contains("http"), "{g:?}");
    assert_eq!(
        cycles(&g),
        Vec::<Vec<String>>::new(),
        "file-level import cycles"
    );
    assert_eq!(
        cycles(&by_folder(&g)),
        Vec::<Vec<String>>::new(),
        "folder-level cycles"
    );
}

#[test]
fn the_checker_sees_a_cycle() {
    let mods: BTreeMap<String, String> = [
        ("crate", "mod a;\nmod b;\npub use a::X;"),
        ("a", "use crate::b::f;\npub struct X;"),
        ("b", "pub fn f() { let _ = crate::{a::X}; }"),
        ("c", "mod tests { use super::g; }\nfn g() {}"),
        ("d", "mod e;\nfn h() { e::k() }"),
        ("d::e", "pub fn k() { super::super::c::g() }"),
    ]
    .into_iter()
    .map(|(k, v)| {
        (
            k.to_string(),
            v.lines()
                .filter(|l| !is_mod_declaration(l))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    })
    .collect();
    let g = graph(&mods);
    assert!(g["c"].is_empty(), "{g:?}");
    assert!(g["d"].contains("d::e"), "{g:?}");
    assert!(g["d::e"].contains("c"), "{g:?}");
    assert_eq!(cycles(&g), vec![vec!["a".to_string(), "b".to_string()]]);
}
