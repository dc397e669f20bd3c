//! Code that runs in a sandbox's shim and pid 1 (forks of the zygote; single-threaded, no
//! async runtime): building the sandbox's root and pivoting into it, hardening, the
//! network interfaces, spawning user processes, and pid 1's management of file helpers.
//!
//! [`shim`] and [`pid1`] are the two processes' code; everything else is a step they take.

mod devnodes;
mod file_helpers;
pub mod harden;
mod identity;
pub(crate) mod netif;
mod pid1;
mod restore;
pub(crate) mod rootfs;
mod scratch;
mod seccomp_bpf;
pub mod shim;
mod shim_wait;
mod tree;
pub mod trim;
mod volumes;
