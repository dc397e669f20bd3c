//! The `cleanroom.v1` API: messages, Connect service traits and typed clients, generated
//! at build time from every `.proto` under `proto/cleanroom/v1/`.
#![allow(clippy::all, missing_docs)]

connectrpc::include_generated!();

/// The compiled `FileDescriptorSet` of every `.proto` under `proto/cleanroom/v1/` with its
/// imports (wire format): what server reflection serves, so generic clients (`buf curl`,
/// `grpcurl`) need no local copy of the schema.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cleanroom.fds"));
