//! Code that runs in a sandbox's shim and pid 1 (forks of the zygote; single-threaded, no
//! async runtime): building the sandbox's root and pivoting into it, hardening, the
//! network interfaces, spawning user processes, and pid 1's management of file helpers.
//!
//! [`init`] is the entry of both processes; everything else is a step it takes.

mod devnodes;
mod file_helpers;
pub mod harden;
mod identity;
pub mod init;
mod netif;
mod restore;
mod rootfs;
mod scratch;
mod seccomp_bpf;
mod shim_wait;
mod tree;
pub mod trim;
