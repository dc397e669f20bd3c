//! The record a member keeps in etcd while it lives, and what a reader gets back.

use serde::{Deserialize, Serialize};

/// What a member says about itself (the value of its key; JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct MemberInfo {
    /// Its node name.
    pub name: String,
    /// Its API URL.
    pub advertise: String,
    /// Its member link (`https://HOST:PORT`, mutual TLS with the cluster identity): where
    /// other members forward calls for its sandboxes. Empty in records of older versions.
    #[serde(default)]
    pub peer: String,
    /// `cleanroom` version.
    pub version: String,
    /// Isolation runtimes it offers (`linux`, `gvisor`).
    pub runtimes: Vec<String>,
    /// How many sandboxes it will hold (0: no fixed cap).
    pub capacity: u64,
    /// Live sandboxes now.
    pub sandboxes: u64,
    /// When it joined (micros since the epoch).
    pub joined_at: i64,
    /// Its 1-minute load average in tenths, to the nearest 0.5 (5 tenths): coarse, so that
    /// the record is rewritten when the load moves, not at every renewal.
    #[serde(default)]
    pub load_tenths: u32,
    /// An operator drained it (`cleanroom node drain`): placement skips it. Not part of the
    /// record the member writes (never serialized): a reader sets it from the drain mark
    /// ([`crate::DrainMark`]), which the operator owns and the member cannot overwrite.
    #[serde(default, skip_serializing)]
    pub draining: bool,
}

/// A member as read back: its record and its lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub info: MemberInfo,
    /// The etcd lease its key lives under.
    pub lease_id: i64,
    /// Its drain mark, if an operator drained it.
    pub drain: Option<crate::DrainMark>,
}
