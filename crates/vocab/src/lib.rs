//! The shared vocabulary of Cleanroom, defined once.
//!
//! Stable strings that cross crate, process or API boundaries (error codes in
//! `ErrorDetail.code`, egress deny/failure reasons in events and warnings, capability keys
//! of the backend handshake, egress decisions) are enums here, each with `as_str()` (the
//! stable string), `Display`, `FromStr` and an exhaustive `ALL` list. Code, tests and the
//! docs tables in `docs/reference/codes.md` all refer to these definitions (a unit test
//! checks the docs against `ALL`), so a new code cannot be added in one place and forgotten
//! in another.
//!
//! This crate has no dependencies so that every other crate can use it without a cycle.

#[macro_use]
mod macros;
pub mod capability;
pub mod egress;
pub mod error_code;
pub mod reference;
pub mod runtime;

pub use capability::Capability;
pub use egress::{Decision, DenyReason, FailReason};
pub use error_code::{ConnectClass, ErrorCode};
pub use runtime::Runtime;

/// A string that is not one of a vocabulary's stable codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCode(pub String);

impl std::fmt::Display for UnknownCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown code {:?}", self.0)
    }
}

impl std::error::Error for UnknownCode {}

#[cfg(test)]
mod docs_tests;
