//! Generate the cleanroom.v1 API offline: protox (pure Rust) compiles the protos into a
//! descriptor set, connectrpc-build turns it into buffa messages + Connect services.

use protox::prost::Message;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read at run time, not with env!(): a build script binary compiled in another
    // checkout (a shared or copied target dir) must still read this checkout's protos.
    let proto_root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let file = "cleanroom/v1/cleanroom.proto";
    println!("cargo:rerun-if-changed={}", proto_root.join(file).display());
    let fds = protox::Compiler::new([&proto_root])?
        .include_imports(true)
        .include_source_info(true)
        .open_file(file)?
        .file_descriptor_set();
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let fds_path = out.join("cleanroom.fds");
    std::fs::write(&fds_path, fds.encode_to_vec())?;
    connectrpc_build::Config::new()
        .files(&[file])
        .descriptor_set(&fds_path)
        .include_file("_connectrpc.rs")
        .compile()?;
    Ok(())
}
