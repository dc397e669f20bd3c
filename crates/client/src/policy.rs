//! Offline policy validation for clients (`cleanroom policy check|show`, SDKs, editors'
//! pre-commit hooks): the very compiler the server runs, so a local "ok" and its
//! `policy_hash` are what the server will say, without a server.
//!
//! Clients never act on a locally compiled policy: what a sandbox bootstraps comes from
//! the server (`CreateSandboxResponse.bootstrap`), and the server compiles the text it is
//! sent. This module exists so clients depend on the compiler through one door.

/// The lockfiles a policy's `sandbox.registries` name, which the client reads from its
/// committed HEAD and sends with `CreateSandbox` (empty when the policy does not compile:
/// the server then says why).
pub use cleanroom_policy::registries::lockfile_paths;
/// `--volume NAME:/path[:ro]`, checked by the compiler's own rules (docs/volumes.md).
pub use cleanroom_policy::volumes::parse_flag as parse_volume_flag;
pub use cleanroom_policy::{compile, resource_bounds, CompiledPolicy, PolicyError};
