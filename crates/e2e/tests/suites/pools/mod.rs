//! Warm pools: claim, release, reuse without leaks, autoscaling (`lifecycle`), and their
//! bounds (`bounds`).

mod bounds;
mod lifecycle;
