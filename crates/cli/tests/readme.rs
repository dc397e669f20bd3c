//! README's usage block stays true (issue 31 item 20): every `cleanroom …` line of the
//! ```sh block under "## Using it" names a verb path that has a `--help` (exit 0), and every
//! flag on the line appears in that verb's `--help`. No server needed.

use cleanroom_e2e::*;
use std::collections::HashMap;
use std::process::Command;

/// Flags that take a value, accepted before the verb (global).
const GLOBAL_WITH_VALUE: [&str; 5] = [
    "--host",
    "--token",
    "--ca-cert",
    "--server-cert-sha256",
    "-o",
];

struct Helps(HashMap<Vec<String>, Option<String>>);

impl Helps {
    /// `cleanroom PATH… --help`, when it exits 0.
    fn get(&mut self, path: &[String]) -> Option<String> {
        self.0
            .entry(path.to_vec())
            .or_insert_with(|| {
                let o = Command::new(BIN)
                    .args(path)
                    .arg("--help")
                    .env("COLUMNS", "500")
                    .output()
                    .expect("run cleanroom --help");
                o.status
                    .success()
                    .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
            })
            .clone()
    }

    /// The subcommands `path --help` lists.
    fn subcommands(&mut self, path: &[String]) -> Vec<String> {
        let Some(help) = self.get(path) else {
            return Vec::new();
        };
        help.split("Commands:")
            .nth(1)
            .map(|rest| {
                rest.lines()
                    .skip(1)
                    .take_while(|l| l.starts_with("  "))
                    .filter_map(|l| l.split_whitespace().next())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The usage block's commands: continuation lines joined, comments dropped, `&&` split.
fn usage_commands(readme: &str) -> Vec<String> {
    let section = readme
        .split("## Using it")
        .nth(1)
        .expect("README has a \"## Using it\" section");
    let block = section
        .split("```sh")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a ```sh block under \"## Using it\"");
    let mut cmds: Vec<String> = Vec::new();
    for line in block.lines() {
        let code = match line.find(" #") {
            Some(i) => &line[..i],
            None => line,
        };
        let code = code.trim_end().trim_end_matches('\\');
        if line.starts_with(char::is_whitespace) {
            if let Some(last) = cmds.last_mut() {
                last.push(' ');
                last.push_str(code.trim());
            }
        } else if !code.trim().is_empty() {
            cmds.push(code.trim().to_string());
        }
    }
    cmds.iter()
        .flat_map(|c| {
            c.split("&&")
                .map(|c| c.trim().to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A flag as written (`[--json]`, `--learn[=FILE]`, `--env`, `-a]`) reduced to its name.
fn flag_name(tok: &str) -> Option<String> {
    let t = tok
        .trim_start_matches('[')
        .trim_end_matches(['…', ']', ',', ')']);
    let t = t.split(['[', '=']).next().unwrap_or_default();
    let named = t.starts_with("--") && t.len() > 2;
    let short = t.len() == 2 && t.starts_with('-') && t.as_bytes()[1].is_ascii_alphabetic();
    (named || short).then(|| t.to_string())
}

fn help_has(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(i, _)| {
        let after = help[i + flag.len()..].chars().next();
        let before = help[..i].chars().last();
        !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            && !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
    })
}

/// Problems of one usage line (empty: it parses).
fn check(helps: &mut Helps, cmd: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let mut toks = cmd.split_whitespace().peekable();
    if toks.next() != Some("cleanroom") {
        return vec![format!("{cmd:?}: does not start with `cleanroom`")];
    }
    let mut globals = Vec::new();
    while let Some(t) = toks.peek() {
        match GLOBAL_WITH_VALUE.contains(t) {
            true => {
                globals.push(t.to_string());
                toks.next();
                toks.next();
            }
            false => break,
        }
    }
    let rest: Vec<&str> = toks.collect();
    // Alternatives: `sandbox create … | ls [-a] | inspect ID`; a word with `|` (pause|resume)
    // is expanded where a verb stands.
    let segments: Vec<Vec<&str>> = rest.split(|t| *t == "|").map(|s| s.to_vec()).collect();
    let root: Vec<String> = Vec::new();
    let mut first_leaf: Option<Vec<String>> = None;
    for seg in segments {
        // Where this alternative's verbs are looked up: the first's parent, then the root;
        // an alternative that names no verb there is more arguments of the first's verb.
        let bases: Vec<Vec<String>> = match &first_leaf {
            None => vec![root.clone()],
            Some(leaf) => vec![leaf[..leaf.len().saturating_sub(1)].to_vec(), root.clone()],
        };
        let mut resolved: Option<(Vec<String>, usize)> = None;
        for base in &bases {
            let mut path = base.clone();
            let mut used = 0;
            for t in &seg {
                let subs = helps.subcommands(&path);
                let words: Vec<&str> = t.split('|').collect();
                if words.iter().all(|w| subs.iter().any(|s| s == w)) {
                    path.push(words[0].to_string());
                    used += 1;
                } else {
                    break;
                }
            }
            if used > 0 {
                resolved = Some((path, used));
                break;
            }
        }
        let (path, used) = match (resolved, &first_leaf) {
            (Some(r), _) => r,
            (None, Some(leaf)) => (leaf.clone(), 0),
            (None, None) => {
                problems.push(format!("{cmd:?}: names no verb"));
                continue;
            }
        };
        let Some(help) = helps.get(&path) else {
            problems.push(format!(
                "{cmd:?}: `cleanroom {} --help` fails",
                path.join(" ")
            ));
            continue;
        };
        for t in seg[used..]
            .iter()
            .take_while(|t| **t != "--" && **t != "[--")
        {
            if let Some(flag) = flag_name(t) {
                if !help_has(&help, &flag) {
                    problems.push(format!(
                        "{cmd:?}: `{flag}` is not in `cleanroom {} --help`",
                        path.join(" ")
                    ));
                }
            }
        }
        for g in &globals {
            if !help_has(&help, g) {
                problems.push(format!("{cmd:?}: global `{g}` unknown"));
            }
        }
        first_leaf.get_or_insert(path);
    }
    problems
}

#[test]
fn every_usage_line_of_the_readme_parses() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let cmds = usage_commands(&readme);
    assert!(cmds.len() > 30, "usage block not found: {cmds:?}");
    let mut helps = Helps(HashMap::new());
    let problems: Vec<String> = cmds.iter().flat_map(|c| check(&mut helps, c)).collect();
    assert!(
        problems.is_empty(),
        "README usage drift:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_checker_catches_drift() {
    let mut helps = Helps(HashMap::new());
    assert!(check(&mut helps, "cleanroom sandbox ls --json").is_empty());
    assert!(check(&mut helps, "cleanroom -o json sandbox ls | image ls").is_empty());
    assert!(!check(&mut helps, "cleanroom frobnicate ID").is_empty());
    assert!(!check(&mut helps, "cleanroom sandbox ls --no-such-flag").is_empty());
    assert!(!check(
        &mut helps,
        "cleanroom sandbox create [--policy FILE] | ls [--bogus]"
    )
    .is_empty());
}

/// README says each thing once: no sentence twice (merges once left one three times), no
/// Layout row twice.
#[test]
fn the_readme_says_each_thing_once() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let prose: String = readme.split("```").step_by(2).collect::<Vec<_>>().join(" ");
    let flat = prose.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut seen = std::collections::HashSet::new();
    let mut repeated = Vec::new();
    for sentence in flat
        .split(['.', ';'])
        .map(str::trim)
        .filter(|s| s.len() > 40)
    {
        if !seen.insert(sentence) {
            repeated.push(sentence.to_string());
        }
    }
    assert!(repeated.is_empty(), "repeated in README.md: {repeated:#?}");
    let mut rows = std::collections::HashSet::new();
    for row in readme.lines().filter(|l| l.starts_with("| `")) {
        let path = row.split('|').nth(1).unwrap_or_default().trim();
        assert!(rows.insert(path.to_string()), "Layout lists {path} twice");
    }
}

/// docs/snapshots.md: the CLI refuses a policy of its own (`--dangerously-allow-all`) with
/// `--from` locally, as it does `--policy` and `--image` (a snapshot's policy is its own).
#[test]
fn from_refuses_allow_all_as_the_docs_say() {
    let o = Command::new(BIN)
        .args([
            "sandbox",
            "create",
            "--from",
            "snap_x",
            "--dangerously-allow-all",
        ])
        .env("CLEANROOM_HOST", "unix:///nonexistent.sock")
        .output()
        .expect("run cleanroom");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
    let docs = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/snapshots.md"
    ))
    .expect("docs/snapshots.md");
    assert!(
        !docs.contains("do not exist on this"),
        "stale claim in docs/snapshots.md"
    );
    assert!(
        !docs.contains("`cleanroom create` does not exist"),
        "stale claim in docs/snapshots.md"
    );
}
