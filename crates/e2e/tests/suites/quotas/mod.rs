//! Resources one sandbox or tenant must not exhaust: limits, retained output, image cache
//! caps (`resources`), and per-principal shares of server-wide tables (`shared_tables`).

mod resources;
mod shared_tables;
