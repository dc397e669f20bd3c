//! The authoritative Cleanroom server.
//!
//! [`engine`] holds every rule of the control plane; [`store`] and [`execlog`] make its
//! state durable; `api` exposes it as the `cleanroom.v1` Connect services; `auth`,
//! `owner` and `listener` decide who is calling and what they may see.

pub mod activity;
pub mod admission;
pub mod api;
pub mod assemble;
pub mod attest;
pub mod auth;
pub mod bootstrap;
pub mod console;
pub mod engine;
/// Kept at its old path for the crates that configure it.
pub use engine::approvals;
pub mod error;
pub mod execlog;
pub mod fair_slots;
pub mod ids;
pub mod limits;
pub mod listener;
pub mod owner;
pub mod private_file;
pub mod pty;
pub mod quota;
pub mod registries;
pub mod retention;
pub mod secrets;
pub mod serve;
pub mod status;
pub mod store;
mod sync;
