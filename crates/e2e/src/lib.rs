//! The end-to-end harness: a real `cleanroom serve` on a temporary socket with its own
//! state directory, the real CLI and typed client against it, and what the suites need
//! around it. One module per responsibility:
//!
//! - [`server`]: start/stop servers (unix socket, TCP, private `/etc/hosts`), run the CLI
//!   (as root or another uid), typed clients, `assert_code`;
//! - [`probes`]: what is left on the host (processes, mounts, cgroups), `inspect`,
//!   `eventually`, `assert_no_leftovers`;
//! - [`registry`] (also `oci`): a real OCI registry on loopback and images pushed to it;
//! - [`pki`]: tokens files, certificates for the server's TLS and for TLS upstreams;
//! - [`upstream`]: loopback HTTP upstreams for egress;
//! - [`pools`]: warm-pool helpers;
//! - [`etcd`]: a real 3-member etcd cluster (the cluster suites);
//! - [`cluster_hosts`]: cluster hosts each in its own network namespace, on etcd;
//! - [`bin`]: the binary under test, refused when stale;
//! - [`otlp`]: a real OTLP/HTTP trace receiver on loopback (the traces suite);
//! - [`web`]: REST and `/metrics` with curl, and the Python checkers of `.tools/test-venv`;
//! - [`runtimes`]: one test body run under both isolation runtimes ([`both_runtimes!`]).
//!
//! `use cleanroom_e2e::*;` brings what `mod common; use common::*;` did. The suites are in
//! `tests/suites/` (one test binary, `tests/e2e.rs`); the CLI's own tests
//! (`crates/cli/tests`) use this harness too. See docs/testing.md.

pub mod bin;
pub mod cluster_hosts;
pub mod etcd;
pub mod otlp;
pub mod pki;
pub mod pools;
pub mod probes;
pub mod registry;
pub mod runtimes;
pub mod server;
pub mod upstream;
pub mod web;

pub use bin::BIN;
pub use pki::*;
pub use probes::*;
pub use registry as oci;
pub use runtimes::Runtime;
pub use server::*;
pub use upstream::*;
pub use web::{curl, python, test_python, HttpReply};
