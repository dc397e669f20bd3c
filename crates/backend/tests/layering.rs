//! The Linux backend's folders say which process their code runs in, and imports run one
//! way only: `zygote → sandbox → helper → shared` and `host → shared`, where shared is
//! `config`, `protocol`, `served`, `snapshot` and `sys`. Code after a fork (zygote, shim,
//! pid 1, file helper) must never reach for the server's code, and the server never runs
//! the sandbox's. This test reads every file's code (comments skipped) and fails on a path
//! that crosses a line the wrong way.

use std::path::{Path, PathBuf};

const SHARED: &[&str] = &["config", "protocol", "served", "snapshot", "sys"];
const FOLDERS: &[&str] = &["host", "zygote", "sandbox", "helper"];

/// Which parts of `linux/` code in `part` may name.
fn allowed(part: &str) -> Vec<&'static str> {
    let mut ok: Vec<&str> = SHARED.to_vec();
    match part {
        "zygote" => ok.extend(["sandbox", "helper"]),
        "sandbox" => ok.push("helper"),
        _ => {}
    }
    ok
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `part` of `linux/` a path names from code in `part_of_file`: `crate::linux::X` always,
/// `super::X` from a file directly in `linux/` (the shared files).
fn named_parts(code: &str, at_top: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut push = |rest: &str| {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        out.push(name);
    };
    for (i, _) in code.match_indices("crate::linux::") {
        push(&code[i + "crate::linux::".len()..]);
    }
    if at_top {
        for (i, _) in code.match_indices("super::") {
            push(&code[i + "super::".len()..]);
        }
    }
    out
}

#[test]
fn backend_folders_import_one_way() {
    let linux = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/linux");
    let mut all = Vec::new();
    files(&linux, &mut all);
    assert!(all.len() > 40, "found {} files", all.len());
    let mut wrong = Vec::new();
    for file in all {
        let rel = file.strip_prefix(&linux).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let part = first.trim_end_matches(".rs").to_string();
        if part == "mod" {
            continue; // linux/mod.rs: the map and the re-exports of the public API
        }
        let at_top = rel.components().count() == 1;
        let ok = allowed(&part);
        let text = std::fs::read_to_string(&file).unwrap();
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or("");
            for named in named_parts(code, at_top) {
                let known = FOLDERS.contains(&named.as_str()) || SHARED.contains(&named.as_str());
                if known && named != part && !ok.contains(&named.as_str()) {
                    wrong.push(format!("{}: {}", rel.display(), line.trim()));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the process layering:\n{}",
        wrong.join("\n")
    );
}

/// The code that builds a sandbox's root and identity (`sandbox/`) changes mounts only
/// through the seam `sys::mounts::Mounts`, so its steps are checked without root: a direct
/// `nix::mount` call there is a step no unit test sees.
#[test]
fn the_sandbox_mounts_only_through_the_seam() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/linux/sandbox");
    let mut all = Vec::new();
    files(&dir, &mut all);
    let mut offenders = Vec::new();
    for f in all {
        let text = std::fs::read_to_string(&f).unwrap();
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for call in [
            "mount::mount(",
            "mount::umount",
            "{mount,",
            " mount, ",
            "unistd::pivot_root(",
        ] {
            if code.contains(call) {
                offenders.push(format!("{}: {call}", f.display()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "mount calls outside the seam: {offenders:?}"
    );
}
