//! `cleanroom`: one binary. `cleanroom serve` is the authoritative server; every other
//! command is a client of it.

mod approve;
mod ask;
mod attest;
mod bootstrap;
mod checkpoints;
mod cli;
mod cluster;
mod commands;
mod console;
mod cp;
#[cfg(test)]
mod deps_tests;
mod exec;
mod follow;
mod inbound;
mod lazy;
mod lifetime;
mod lockfiles;
mod logs;
mod network;
mod node;
mod nss;
mod pin;
mod pools;
mod portforward;
mod render;
mod request;
mod retained;
mod serve;
mod snapshots;
mod stop_deadline;
mod toplevel;
mod trace;
mod ui;
mod volumes;

use crate::lazy::Lazy;
use clap::Parser;
use cleanroom_client::ErrorCode;

fn main() {
    // First, while this is the only thread and nothing was looked up (see nss.rs).
    if let Err(e) = nss::pin_builtin_services() {
        std::process::exit(render::fail(ErrorCode::Internal, e));
    }
    // The sandbox pid 1 must start single-threaded, before any runtime exists.
    // Its configuration arrives on the control socket (fd 3), never on the command line.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == "__sandbox-init")
    {
        cleanroom_backend::linux::init::main();
    }
    // A gVisor sandbox's idle first process (runs under gVisor's kernel, see gvisor/init.rs).
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == cleanroom_backend::gvisor::bundle::INIT_ARG)
    {
        cleanroom_backend::gvisor::init::main();
    }
    // Inside a gVisor sandbox: ask its init to start a background process (gvisor/spawn.rs).
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == cleanroom_backend::gvisor::spawn::SPAWN_ARG)
    {
        cleanroom_backend::gvisor::spawn::client_main();
    }
    let cli = cli::Cli::parse();
    quiet_exit_on_closed_stdout();
    // `exec` is a client of one connection doing one thing at a time: a single-threaded
    // runtime starts no worker threads (thread creation is a measurable part of its
    // start-up). The server, and the commands that move bulk data or drive a terminal,
    // keep the multi-threaded one.
    let mut builder = match &cli.command {
        cli::Command::Exec(Lazy(_)) => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    let rt = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => std::process::exit(render::fail(
            ErrorCode::Internal,
            format!("cannot start async runtime: {e}"),
        )),
    };
    let code = rt.block_on(commands::run(cli));
    // Don't wait for the blocking stdin reader thread.
    std::process::exit(code);
}

/// Exit code of a filter whose reader went away (128 + SIGPIPE, what a shell shows).
const EXIT_BROKEN_PIPE: i32 = 141;

/// Commands that print behave as Unix filters: when their reader goes away (`cleanroom
/// status | head`) they end quietly with 141, where the next `println!` used to panic with
/// a backtrace. SIGPIPE itself stays ignored: restoring its default would also kill the
/// CLI when a *server connection* breaks (a plain-HTTP client on a TLS port), which must
/// be a `server_unreachable` error, not a silent death. So the one panic `print!` raises
/// on a closed stdout is turned into that exit; every other panic is reported as before.
/// `exec` and `console` handle a closed stdout themselves (exit 141 as well).
fn quiet_exit_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload_as_str().unwrap_or("");
        if payload.starts_with("failed printing to stdout") && payload.contains("Broken pipe") {
            std::process::exit(EXIT_BROKEN_PIPE);
        }
        default(info);
    }));
}
