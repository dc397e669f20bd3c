//! The `cleanroom.v1` API: messages, Connect service traits and typed clients, generated
//! at build time from every `.proto` under `proto/cleanroom/v1/`.
#![allow(clippy::all, missing_docs)]

connectrpc::include_generated!();
