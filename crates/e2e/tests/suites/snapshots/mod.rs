//! Pause/resume, snapshots and fork (`lifecycle`), and snapshots of hostile trees
//! (`hostile`).

mod hostile;
mod lifecycle;
