//! Tells the harness where the `cleanroom` binary under test is. Cargo sets
//! `CARGO_BIN_EXE_cleanroom` only for the tests of the package that owns the binary
//! (`cleanroom-cli`); this crate is another package, so the path is derived from this build's
//! own output directory: `<target>/<triple>/<profile>/build/cleanroom-e2e-<hash>/out` is three
//! levels below `<target>/<triple>/<profile>`, where the binary is linked. The binary must
//! be built by the same cargo invocation (`--workspace`, or `scripts/e2e.sh`); the harness
//! refuses a missing or stale one (src/bin.rs).

fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let profile_dir = out
        .ancestors()
        .nth(3)
        .expect("OUT_DIR is <profile>/build/<pkg>/out");
    let workspace =
        std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap()).join("../..");
    println!(
        "cargo:rustc-env=CLEANROOM_BIN={}",
        profile_dir.join("cleanroom").display()
    );
    println!(
        "cargo:rustc-env=CLEANROOM_WORKSPACE={}",
        workspace.canonicalize().expect("workspace root").display()
    );
    println!("cargo:rerun-if-changed=build.rs");
}
