//! Budgets: what one caller or one sandbox may take of what the server shares.
//!
//! * [`admission`]: connections not authenticated yet, and each principal's share of
//!   those that are (issue 30's pre-authentication budgets);
//! * [`fair_slots`]: a few server-wide slots for expensive work, shared fairly between
//!   principals;
//! * [`limits`]: a sandbox's effective resource limits (server defaults, policy, request).
//!
//! See docs/budgets.md and docs/limits.md.

pub mod admission;
pub mod fair_slots;
pub mod limits;
