//! Pause/resume, snapshots and fork (`lifecycle`), snapshots of hostile trees
//! (`hostile`), and snapshots under both runtimes (`runtimes`).

mod hostile;
mod lifecycle;
mod runtimes;
