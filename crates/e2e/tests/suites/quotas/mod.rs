//! Resources one sandbox or tenant must not exhaust: limits, retained output, image cache
//! caps (`resources`), per-principal shares of server-wide tables (`shared_tables`), and
//! the limits that must hold under both runtimes (`runtimes`).

mod resources;
mod runtimes;
mod shared_tables;
