//! The `cleanroom.v1` API: messages, Connect service traits and typed clients, generated
//! at build time from `proto/cleanroom/v1/cleanroom.proto`.
#![allow(clippy::all, missing_docs)]

connectrpc::include_generated!();
