//! `cleanroom`: one binary. `cleanroom serve` is the authoritative server; every other
//! command is a client of it.

mod approve;
mod ask;
mod attest;
mod bootstrap;
mod cli;
mod commands;
mod console;
mod cp;
mod exec;
mod follow;
mod lazy;
mod lifetime;
mod lockfiles;
mod logs;
mod nss;
mod pools;
mod render;
mod request;
mod retained;
mod serve;
mod snapshots;
mod stop_deadline;
mod toplevel;

use crate::lazy::Lazy;
use clap::Parser;

fn main() {
    // First, while this is the only thread and nothing was looked up (see nss.rs).
    if let Err(e) = nss::pin_builtin_services() {
        std::process::exit(render::fail(render::Code::Internal, e));
    }
    // The sandbox pid 1 must start single-threaded, before any runtime exists.
    // Its configuration arrives on the control socket (fd 3), never on the command line.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == "__sandbox-init")
    {
        cleanroom_backend::linux::init::main();
    }
    let cli = cli::Cli::parse();
    default_sigpipe_for_filters(&cli.command);
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
            render::Code::Internal,
            format!("cannot start async runtime: {e}"),
        )),
    };
    let code = rt.block_on(commands::run(cli));
    // Don't wait for the blocking stdin reader thread.
    std::process::exit(code);
}

/// Commands that print behave as Unix filters: when their reader goes away (`cleanroom
/// status | head`) SIGPIPE ends them quietly (status 141 in a shell), where Rust's ignored
/// SIGPIPE made the next `println!` panic with a backtrace. Not for `serve` (a client that
/// goes away must never kill the server), `exec` (it handles a closed stdout itself and
/// exits 141) or `console` (it restores the terminal first).
fn default_sigpipe_for_filters(command: &cli::Command) {
    use cli::Command as C;
    if matches!(command, C::Serve(_) | C::Exec(_) | C::Console(_)) {
        return;
    }
    // SAFETY: signal(2) with SIG_DFL installs no handler (nothing of ours runs in signal
    // context); still single-threaded, before the runtime starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
