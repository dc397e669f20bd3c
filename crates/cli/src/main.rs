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
mod lifetime;
mod lockfiles;
mod logs;
mod pools;
mod render;
mod request;
mod retained;
mod serve;
mod snapshots;
mod stop_deadline;
mod toplevel;

use clap::Parser;

fn main() {
    // The sandbox pid 1 must start single-threaded, before any runtime exists.
    // Its configuration arrives on the control socket (fd 3), never on the command line.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == "__sandbox-init")
    {
        cleanroom_backend::linux::init::main();
    }
    let cli = cli::Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
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
