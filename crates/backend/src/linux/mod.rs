//! The default backend: Linux namespaces, no daemons, no VM ([`LinuxBackend`]).
//!
//! Its code runs in five processes, and each folder says which (code after a fork lives
//! under stricter rules: no allocation races, no threads, no async runtime):
//!
//! ```text
//! server ─exec once─> zygote ─fork─> shim ─fork─> pid 1 ─fork─> file helper
//!  host/               zygote/       sandbox/      sandbox/      helper/
//! ```
//!
//! - [`host`]: the server process — the [`Backend`](crate::Backend) object, provisioning,
//!   cgroups, id ranges, the control-socket reader, snapshots' capture, the sweep.
//! - [`zygote`]: the fork server the server execs once; it forks every shim.
//! - [`sandbox`]: the shim and pid 1 — the sandbox's root, its hardening, process spawn.
//! - [`helper`]: the short-lived children pid 1 forks for file RPCs, acting with the
//!   sandbox's identity.
//! - Shared by several of them: [`config`] and [`protocol`] (what crosses the sockets),
//!   [`served`] (the refusal vocabulary of file RPCs and the checks on a served fd),
//!   [`snapshot`] (the layer directory format) and [`sys`] (the one home of raw calls).
//!
//! Dependencies run one way: `zygote → sandbox → helper → shared`, `host → shared`; no
//! folder imports `host`, and `host` imports none of the process folders.

pub mod config;
pub mod helper;
pub mod host;
pub mod protocol;
pub mod sandbox;
pub mod served;
pub mod snapshot;
pub mod sys;
pub mod zygote;

pub use host::backend::{LinuxBackend, RUNTIME_BASE};
// The paths the server and the CLI have always imported.
pub use helper::paths as fileops;
pub use host::{capture, cgroup, fdtable, freeze, hosttune, procinfo, runtime_fs};
pub use sandbox::harden;
pub use sys::pidfd;

/// `cleanroom __sandbox-init`'s entry point, at the path the CLI has always called.
pub mod init {
    pub use super::zygote::main;
}
