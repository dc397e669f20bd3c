//! The end-to-end suite, one test binary: a real `cleanroom serve`, real sandboxes, real
//! upstreams, registries and clients, through the harness in this crate's library
//! (`cleanroom_e2e`). One module per feature under `suites/`; a test's name says where it
//! lives (`egress::host::...`), so `cargo nextest run -p cleanroom-e2e -E
//! 'test(/^egress::/)'` runs one feature. Tests of the CLI's own behaviour (parsing, help,
//! output, terminal UX) are in `crates/cli/tests`. Where a new test goes: docs/testing.md.

#[path = "suites/api/mod.rs"]
mod api;
#[path = "suites/attestation.rs"]
mod attestation;
#[path = "suites/auth.rs"]
mod auth;
#[path = "suites/checkpoint_refusals.rs"]
mod checkpoint_refusals;
#[path = "suites/checkpoints.rs"]
mod checkpoints;
#[path = "suites/cluster/mod.rs"]
mod cluster;
#[path = "suites/console/mod.rs"]
mod console;
#[path = "suites/egress/mod.rs"]
mod egress;
#[path = "suites/files/mod.rs"]
mod files;
#[path = "suites/gvisor.rs"]
mod gvisor;
#[path = "suites/gvisor_oneshot.rs"]
mod gvisor_oneshot;
#[path = "suites/host/mod.rs"]
mod host;
#[path = "suites/hostagent.rs"]
mod hostagent;
#[path = "suites/images/mod.rs"]
mod images;
#[path = "suites/inbound/mod.rs"]
mod inbound;
#[path = "suites/isolation/mod.rs"]
mod isolation;
#[path = "suites/lifecycle/mod.rs"]
mod lifecycle;
#[path = "suites/live_egress.rs"]
mod live_egress;
#[path = "suites/metrics.rs"]
mod metrics;
#[path = "suites/pools/mod.rs"]
mod pools;
#[path = "suites/quotas/mod.rs"]
mod quotas;
#[path = "suites/registries/mod.rs"]
mod registries;
#[path = "suites/rest.rs"]
mod rest;
#[path = "suites/sdk.rs"]
mod sdk;
#[path = "suites/snapshots/mod.rs"]
mod snapshots;
#[path = "suites/traces.rs"]
mod traces;
#[path = "suites/volumes.rs"]
mod volumes;
#[path = "suites/web/mod.rs"]
mod web;
