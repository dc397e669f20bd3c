//! The `cleanroom` binary under test and the check that it is the one the sources build.
//! This crate cannot make cargo build another package's binary, so a run of only this
//! package (`cargo nextest run -p cleanroom-e2e`) would silently test whatever binary the
//! last build left: the harness refuses to start a server from a binary older than any
//! source file it is built from. `cargo nextest run --workspace` and `scripts/e2e.sh` build
//! it first.

use std::path::Path;
use std::sync::OnceLock;
use std::time::SystemTime;

/// The `cleanroom` binary under test (see build.rs).
pub const BIN: &str = env!("CLEANROOM_BIN");

/// The workspace root (for files the suites read: README, sdk/, bench/, .tools/).
pub const WORKSPACE: &str = env!("CLEANROOM_WORKSPACE");

/// Crates whose sources are not part of the binary.
const NOT_IN_BINARY: &[&str] = &["e2e", "layer-fixture"];

/// Panic (once per process) if [`BIN`] is missing or older than a source it is built from.
pub fn assert_fresh_bin() {
    static CHECKED: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(e) = CHECKED.get_or_init(check) {
        panic!("{e}");
    }
}

fn check() -> Result<(), String> {
    same_checkout()?;
    let built = std::fs::metadata(BIN)
        .and_then(|m| m.modified())
        .map_err(|e| {
            format!("{BIN}: {e}: build it first (scripts/e2e.sh or cargo build -p cleanroom-cli)")
        })?;
    let root = Path::new(WORKSPACE);
    let mut newest: Option<(SystemTime, std::path::PathBuf)> = None;
    let mut consider = |p: &Path| {
        if let Ok(t) = std::fs::metadata(p).and_then(|m| m.modified()) {
            if newest.as_ref().is_none_or(|(n, _)| t > *n) {
                newest = Some((t, p.to_path_buf()));
            }
        }
    };
    consider(&root.join("Cargo.lock"));
    walk(&root.join("proto"), 6, &mut consider);
    for c in std::fs::read_dir(root.join("crates"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if NOT_IN_BINARY.iter().any(|n| c.file_name() == *n) {
            continue;
        }
        consider(&c.path().join("Cargo.toml"));
        consider(&c.path().join("build.rs"));
        walk(&c.path().join("src"), 8, &mut consider);
    }
    match newest {
        Some((t, p)) if t > built => Err(format!(
            "{BIN} is older than {}: the binary under test is stale; build it first \
             (cargo nextest run --workspace, or scripts/e2e.sh)",
            p.display()
        )),
        _ => Ok(()),
    }
}

/// Refuse paths baked in by another checkout's build script. [`BIN`] and [`WORKSPACE`]
/// come from `build.rs`, and cargo reuses a build script's output from a `target/` copied
/// from another checkout (it does not rerun it for the new path): the tests would then run,
/// and check the freshness of, the other checkout's binary and sources, and pass or fail
/// for the wrong code. What cannot be copied is checked instead: this crate's own manifest
/// directory (compiled into this crate, not the build script) and where the running test
/// binary is (`<profile>/deps/…`, next to `<profile>/cleanroom`).
fn same_checkout() -> Result<(), String> {
    let fix = "the build-script output was copied from another checkout: \
               remove target/*/*/build/cleanroom-e2e-* and build again";
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let here = here
        .canonicalize()
        .map_err(|e| format!("{}: {e}", here.display()))?;
    if here != Path::new(WORKSPACE) {
        return Err(format!(
            "WORKSPACE is {WORKSPACE}, this checkout is {}: {fix}",
            here.display()
        ));
    }
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let profile = exe.parent().and_then(Path::parent);
    let bin_dir = Path::new(BIN).parent();
    match (
        profile.map(Path::canonicalize),
        bin_dir.map(Path::canonicalize),
    ) {
        (Some(Ok(a)), Some(Ok(b))) if a != b => Err(format!(
            "BIN is {BIN}, the tests run from {}: {fix}",
            a.display()
        )),
        _ => Ok(()),
    }
}

/// Every file under `dir`, at most `depth` levels down: not only `.rs` and `.proto`, since
/// the binary also carries files by `include_str!` (the console's HTML, JS and CSS), and a
/// binary older than one of those is as stale as one older than the code.
fn walk(dir: &Path, depth: u32, f: &mut impl FnMut(&Path)) {
    if depth == 0 {
        return;
    }
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => walk(&p, depth - 1, f),
            Ok(t) if t.is_file() => f(&p),
            _ => {}
        }
    }
}
