//! The authoritative Cleanroom server.
//!
//! Folders by responsibility, layered (no import cycle between them:
//! `tests/layering.rs`):
//!
//! * [`api`]: the `cleanroom.v1` Connect services, translation only;
//! * [`engine`]: every rule of the control plane, reached through owned handles;
//! * [`store`]: the durable state, rows decoded once into typed values;
//! * [`output`]: execution output — the durable log, its quotas and GC, the terminal;
//! * [`console`]: interactive executions' tickets and QUIC endpoint;
//! * [`identity`]: who is calling, what the server signs, the secrets it holds;
//! * [`budgets`]: connection admission, fair slots, a sandbox's limits;
//! * [`serve`]: `cleanroom serve` — configuration, listeners, startup and stop;
//! * [`inbound`]: preview URLs and port-forward — traffic into sandboxes on the API listeners;
//! * [`volumes`]: named volumes on the host — their images, loop mounts and records;
//! * [`model`]: the vocabulary everything shares — errors, ids, owners, statuses.

pub mod api;
pub mod budgets;
pub mod cluster;
pub mod console;
pub mod engine;
pub mod hostagent;
pub mod identity;
pub mod inbound;
pub mod metrics;
pub mod model;
pub mod output;
pub mod rest;
pub mod serve;
pub mod store;
pub mod telemetry;
pub mod volumes;
pub mod web;
