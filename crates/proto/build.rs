//! Generate the cleanroom.v1 API offline: protox (pure Rust) compiles the protos into a
//! descriptor set, connectrpc-build turns it into buffa messages + Connect services.
//!
//! Every `.proto` under `proto/cleanroom/v1/` is compiled, so a new service lives in a file of
//! its own (one area per file) without touching this script.

use protox::prost::Message;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read at run time, not with env!(): a build script binary compiled in another
    // checkout (a shared or copied target dir) must still read this checkout's protos.
    let proto_root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    // cleanroom.v1, and seed 001's hostagent.v1 (a compatibility surface, docs/hostagent.md).
    let mut files: Vec<String> = Vec::new();
    for package in ["cleanroom/v1", "hostagent/v1"] {
        let dir = proto_root.join(package);
        println!("cargo:rerun-if-changed={}", dir.display());
        files.extend(
            std::fs::read_dir(&dir)?
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".proto"))
                .map(|n| format!("{package}/{n}")),
        );
    }
    files.sort();
    for f in &files {
        println!("cargo:rerun-if-changed={}", proto_root.join(f).display());
    }
    let fds = protox::Compiler::new([&proto_root])?
        .include_imports(true)
        .include_source_info(true)
        .open_files(&files)?
        .file_descriptor_set();
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let fds_path = out.join("cleanroom.fds");
    std::fs::write(&fds_path, fds.encode_to_vec())?;
    // proto3 JSON: parsers reject unknown fields by default. Without this a misspelled
    // field (`sandboxid`) is silently dropped and the request runs with the field unset.
    // buffa writes its own deserializer for a message with a oneof, and that one skips
    // unknown keys: [`refuse_unknown_keys`] patches it below.
    let mut buffa = connectrpc_build::CodeGenConfig::default();
    buffa.generate_json = true;
    for package in [".cleanroom.v1", ".hostagent.v1"] {
        buffa
            .message_attributes
            .push((package.into(), "#[serde(deny_unknown_fields)]".into()));
    }
    connectrpc_build::Config::new()
        .buffa_config(buffa)
        .files(&files)
        .descriptor_set(&fds_path)
        .include_file("_connectrpc.rs")
        .compile()?;
    refuse_unknown_keys(&out)?;
    Ok(())
}

/// What buffa's hand-written `visit_map` (messages with a oneof) does with a key it does
/// not know: skip its value.
const SKIP_UNKNOWN: &str = "map.next_value::<::serde::de::IgnoredAny>()?;";
/// What it does instead: refuse, naming the key, like `deny_unknown_fields` everywhere
/// else (the server maps a decode error to `invalid_argument`).
const REFUSE_UNKNOWN: &str = "return ::core::result::Result::Err(\
    <A::Error as ::serde::de::Error>::custom(::buffa::alloc::format!(\"unknown field `{}`\", key)));";

/// proto3 JSON: unknown fields are refused by default. buffa 0.9 derives serde for most
/// messages (so `deny_unknown_fields` works) but generates a custom deserializer for
/// messages with a oneof whose fallback arm skips unknown keys. Patch that arm in the
/// generated code, and fail the build if any skip is left (a new buffa that spells it
/// differently must be looked at, not silently accepted).
fn refuse_unknown_keys(out: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    for entry in std::fs::read_dir(out)? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path)?;
        if !text.contains("IgnoredAny") {
            continue;
        }
        let patched = text.replace(SKIP_UNKNOWN, REFUSE_UNKNOWN);
        if patched.contains("IgnoredAny") {
            return Err(format!(
                "{}: generated JSON code skips unknown keys in a form build.rs does not patch",
                path.display()
            )
            .into());
        }
        std::fs::write(&path, patched)?;
    }
    Ok(())
}
