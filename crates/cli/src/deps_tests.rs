//! The thin-CLI rule, checked: the `cleanroom` binary depends on the client (and through it
//! the vocabulary) for every command, and on the server and backend only to be `serve` and
//! the sandbox's own processes. Policy decisions are the server's; a CLI that linked the
//! policy crate again would drift towards deciding locally (docs/architecture.md).

/// The workspace crates the CLI may depend on (normal and build dependencies; dev
/// dependencies are the e2e tests' business).
const ALLOWED_INTERNAL: &[&str] = &[
    "cleanroom-client",
    "cleanroom-vocab",
    "cleanroom-server",
    "cleanroom-backend",
    "cleanroom-attest",
    "cleanroom-console",
];

/// Names of the dependencies a manifest lists outside `[dev-dependencies]`, in any of
/// Cargo's spellings (`name = …`, `name.workspace = true`, `[dependencies.name]`,
/// `[target.'cfg(…)'.dependencies]`).
fn dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']');
            let (table, named) = match header.rsplit_once("dependencies.") {
                Some((t, name)) => (format!("{t}dependencies"), Some(name.to_string())),
                None => (header.to_string(), None),
            };
            let is_deps = table.ends_with("dependencies") && !table.ends_with("dev-dependencies");
            in_deps = is_deps && named.is_none();
            if is_deps {
                out.extend(named);
            }
            continue;
        }
        if !in_deps || line.starts_with('#') {
            continue;
        }
        let name: String = line
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
            .collect();
        if !name.is_empty() {
            out.push(name);
        }
    }
    out
}

#[test]
fn the_cli_depends_on_the_client_not_on_the_policy_crate() {
    let manifest = include_str!("../Cargo.toml");
    let deps = dependencies(manifest);
    assert!(deps.iter().any(|d| d == "cleanroom-client"), "{deps:?}");
    let internal: Vec<_> = deps
        .iter()
        .filter(|d| d.starts_with("cleanroom-"))
        .collect();
    for d in &internal {
        assert!(
            ALLOWED_INTERNAL.contains(&d.as_str()),
            "crates/cli depends on {d}: the CLI reaches policy, egress and images through \
             the client (cleanroom_client::policy) or the server, never directly"
        );
    }
}

#[test]
fn every_spelling_of_a_dependency_is_seen() {
    let m = "[package]\nname = \"x\"\n[dependencies]\ncleanroom-client = { path = \"c\" }\n\
             tokio.workspace = true\n# cleanroom-commented = 1\n[dev-dependencies]\n\
             cleanroom-egress = { path = \"e\" }\n[dependencies.cleanroom-policy]\npath = \"p\"\n\
             [target.'cfg(unix)'.dependencies]\ncleanroom-image = \"1\"\n";
    assert_eq!(
        dependencies(m),
        [
            "cleanroom-client",
            "tokio",
            "cleanroom-policy",
            "cleanroom-image"
        ]
    );
}
