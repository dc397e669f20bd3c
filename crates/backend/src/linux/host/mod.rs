//! Code that runs in the server process: the [`backend::LinuxBackend`] object, what it
//! makes on the host before a launch and removes after (cgroups, id ranges, runtime
//! directories), its handle on the zygote, the control-socket reader, file RPCs' server
//! side, snapshots' capture and the sweep of dead instances.
//!
//! Nothing here runs after a fork: the server is multi-threaded and async.

pub mod backend;
pub mod capture;
pub mod cgroup;
pub mod fdtable;
mod file_rpc;
pub mod freeze;
pub mod gateway_ns;
pub mod hosttune;
mod idmap;
mod idslots;
mod inbound;
mod launch;
mod layers;
mod nspawn_ids;
mod process;
pub mod procinfo;
mod provision;
mod reader;
pub mod runtime_fs;
mod sweep;
mod usage;
mod zygote_client;
