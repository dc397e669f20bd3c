//! The server's vocabulary, depended on by everything and depending on nothing of the
//! server: errors with stable codes ([`error`]), object ids ([`ids`]), owners
//! ([`owner`]), sandbox and execution statuses and their one state machine ([`status`]),
//! and the poison-tolerant lock ([`sync`]).

pub mod error;
pub mod ids;
pub mod owner;
pub mod status;
pub(crate) mod sync;
