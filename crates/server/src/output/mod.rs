//! Execution output: the durable per-execution log every reader streams from
//! ([`execlog`]), how much of it the server keeps ([`quota`]) and its garbage collection
//! ([`retention`]), and the server's end of an interactive execution's terminal
//! ([`pty`]), whose output goes into the same log.

pub mod execlog;
pub mod pty;
pub mod quota;
pub mod retention;
