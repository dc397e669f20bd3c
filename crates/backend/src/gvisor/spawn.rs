//! Background processes that survive a memory checkpoint: `/run/cleanroom-init
//! __gvisor-spawn CMD [ARGS...]` asks the sandbox's init to start `CMD` as its own child
//! (new session, stdio on `/dev/null`, the caller's working directory and environment),
//! and returns at once.
//!
//! Why: the runsc this project uses (20240729) kills, on `runsc restore`, every process
//! that descends from a `runsc exec` — each execution and whatever it left running in the
//! background — and keeps only the container's init and its descendants (upstream gVisor
//! issue 11544, fixed in later releases). A process the init starts is one of those.
//!
//! The request travels through a FIFO only uid 0 in the sandbox may write (`0600`, on the
//! sandbox's own `/dev` tmpfs): the processes that may write it are already what the init
//! is (uid 0 of the sandbox, no capabilities), so the init starts nothing they could not
//! start themselves. Everything here runs under gVisor's kernel, never on the host.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;

/// The FIFO the init serves.
pub const SPAWN_FIFO: &str = "/dev/cleanroom-spawn";
/// The argument that makes the `cleanroom` binary the spawn client.
pub const SPAWN_ARG: &str = "__gvisor-spawn";
/// Largest request: one `write` of at most `PIPE_BUF` bytes is atomic, so concurrent
/// clients never interleave.
const MAX_REQUEST: usize = 4096;

/// A request: NUL-terminated fields `cwd`, the number of environment entries, the
/// entries, the arguments, and an empty field to end it.
fn encode(cwd: &[u8], env: &[Vec<u8>], args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    let count = env.len().to_string();
    for f in [cwd, count.as_bytes()]
        .into_iter()
        .chain(env.iter().map(Vec::as_slice))
        .chain(args.iter().map(Vec::as_slice))
    {
        out.extend_from_slice(f);
        out.push(0);
    }
    out.push(0);
    out
}

/// One request's (cwd, env, args), or `None` when malformed.
type Request = (OsString, Vec<(OsString, OsString)>, Vec<OsString>);

fn decode(fields: &[Vec<u8>]) -> Option<Request> {
    let (cwd, rest) = fields.split_first()?;
    let (count, rest) = rest.split_first()?;
    let n: usize = std::str::from_utf8(count).ok()?.parse().ok()?;
    if rest.len() <= n {
        return None;
    }
    let env = rest[..n]
        .iter()
        .map(|e| {
            let eq = e.iter().position(|&b| b == b'=')?;
            Some((
                OsString::from_vec(e[..eq].to_vec()),
                OsString::from_vec(e[eq + 1..].to_vec()),
            ))
        })
        .collect::<Option<Vec<_>>>()?;
    let args = rest[n..]
        .iter()
        .map(|a| OsString::from_vec(a.clone()))
        .collect();
    Some((OsString::from_vec(cwd.clone()), env, args))
}

/// In the init: make the FIFO and serve it on a thread of its own. The children are the
/// init's, so its reaper collects them.
pub fn serve() {
    let _ = std::fs::remove_file(SPAWN_FIFO);
    if nix::unistd::mkfifo(SPAWN_FIFO, nix::sys::stat::Mode::from_bits_truncate(0o600)).is_err() {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("spawn".into())
        .spawn(|| loop {
            // Blocks until a client opens it; reads until every client closed it.
            let Ok(mut fifo) = std::fs::File::open(SPAWN_FIFO) else {
                std::thread::sleep(std::time::Duration::from_secs(1));
                continue;
            };
            let mut data = Vec::new();
            if fifo.read_to_end(&mut data).is_err() {
                continue;
            }
            let mut fields: Vec<Vec<u8>> = Vec::new();
            for field in data.split(|&b| b == 0) {
                if field.is_empty() {
                    if let Some(req) = decode(&fields) {
                        start(req);
                    }
                    fields.clear();
                } else {
                    fields.push(field.to_vec());
                }
            }
        });
}

fn start((cwd, env, args): Request) {
    let Some((prog, rest)) = args.split_first() else {
        return;
    };
    let mut cmd = std::process::Command::new(prog);
    cmd.args(rest)
        .env_clear()
        .envs(env)
        .current_dir(&cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| nix::unistd::setsid().map(drop).map_err(Into::into));
    }
    // The init's reaper waits for it; the handle is not needed.
    let _ = cmd.spawn();
}

/// The client (`cleanroom __gvisor-spawn CMD [ARGS...]` inside a sandbox): send the
/// request with this process's working directory and environment; exit 0 once sent.
pub fn client_main() -> ! {
    let args: Vec<Vec<u8>> = std::env::args_os().skip(2).map(|a| a.into_vec()).collect();
    if args.is_empty() || args.iter().any(Vec::is_empty) {
        eprintln!(
            "usage: {} {SPAWN_ARG} CMD [ARGS...] (no empty arguments)",
            super::bundle::INIT_PATH
        );
        std::process::exit(2);
    }
    let cwd = std::env::current_dir()
        .map(|p| p.into_os_string().into_vec())
        .unwrap_or_else(|_| b"/".to_vec());
    let env: Vec<Vec<u8>> = std::env::vars_os()
        .map(|(k, v)| {
            let mut e = k.as_bytes().to_vec();
            e.push(b'=');
            e.extend_from_slice(v.as_bytes());
            e
        })
        .filter(|e| !e.contains(&0) && e.len() > 1)
        .collect();
    let req = encode(&cwd, &env, &args);
    if req.len() > MAX_REQUEST {
        eprintln!("{SPAWN_ARG}: the command and its environment exceed {MAX_REQUEST} bytes");
        std::process::exit(2);
    }
    match std::fs::OpenOptions::new().write(true).open(SPAWN_FIFO) {
        Ok(mut f) => match f.write_all(&req) {
            Ok(()) => std::process::exit(0),
            Err(e) => {
                eprintln!("{SPAWN_ARG}: {e}");
                std::process::exit(1)
            }
        },
        Err(e) => {
            eprintln!("{SPAWN_ARG}: {SPAWN_FIFO}: {e}");
            std::process::exit(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips_and_a_malformed_one_is_dropped() {
        let req = encode(
            b"/tmp",
            &[b"A=1".to_vec(), b"B=x=y".to_vec()],
            &[b"python3".to_vec(), b"w.py".to_vec()],
        );
        let fields: Vec<Vec<u8>> = req
            .split(|&b| b == 0)
            .filter(|f| !f.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        let (cwd, env, args) = decode(&fields).unwrap();
        assert_eq!(cwd, "/tmp");
        assert_eq!(env[1], ("B".into(), "x=y".into()));
        assert_eq!(args, vec![OsString::from("python3"), "w.py".into()]);
        assert!(decode(&[b"/".to_vec(), b"5".to_vec(), b"A=1".to_vec()]).is_none());
        assert!(decode(&[b"/".to_vec(), b"0".to_vec()]).is_none());
    }
}
