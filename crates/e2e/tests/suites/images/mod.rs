//! OCI images: pull and run (`pull`), tags pinned to digests (`tags`), image paths that
//! cannot steer the setup onto the host (`paths`). What runs a sandbox on an image runs
//! under both runtimes (`both_runtimes!`); resolving and pinning tags (`tags`) happens
//! before any runtime is involved.

mod paths;
mod pull;
mod tags;
