//! The console's server side: session tickets and the QUIC endpoint (`tokens`), and a
//! flood of ticket-less connections (`flood`), and terminal executions under both runtimes
//! (`terminal`). The terminal UX is a CLI test
//! (crates/cli/tests/console_tty.rs).

mod flood;
mod terminal;
mod tokens;
