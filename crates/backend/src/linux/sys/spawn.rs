//! How pid 1 starts a user process: `clone(CLONE_VM | CLONE_VFORK)` and `execve`, the way
//! `posix_spawn` does it, instead of `fork`.
//!
//! Why: pid 1 is a copy of the zygote, whose address space maps the whole 42 MB binary. A
//! `fork` copies its page tables (0.35 ms measured per exec here) and the child's `execve`
//! then tears that copy down again; with `CLONE_VM` the child borrows pid 1's memory until
//! its `execve` (pid 1 is suspended meanwhile: `CLONE_VFORK`), so neither happens.
//!
//! The price is discipline in the child: it shares pid 1's memory, so it allocates nothing,
//! takes no lock and touches nothing but what [`Prepared`] built before the clone; it runs
//! on a stack of its own; it blocks every signal first and puts the handlers pid 1 has
//! (the Rust runtime's SIGSEGV/SIGBUS stack-overflow handlers) back to the default before
//! it unblocks anything, so no handler of pid 1 can ever run on shared memory. File
//! descriptors, the working directory, signal dispositions and the session are the
//! child's own (no `CLONE_FILES`, `CLONE_FS`, `CLONE_SIGHAND`).

use nix::sys::signal::SigSet;
use nix::unistd::Pid;
use std::ffi::CString;
use std::os::fd::{AsRawFd, BorrowedFd};

/// The child's stack: it calls `dup2`, `ioctl`, `chdir`, `setsid`, `sigprocmask`,
/// `sigaction`, `execve`, `strerror_r` and `write` only.
const STACK: usize = 64 * 1024;

/// Everything the child uses, built before the clone.
struct Prepared {
    fds: [i32; 3],
    tty: bool,
    /// The signal mask the command starts with (pid 1's, minus what pid 1 blocks for its
    /// own signalfd).
    mask: libc::sigset_t,
    cwd: CString,
    argv: Vec<CString>,
    argvp: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    candidates: Vec<CString>,
    /// "cleanroom: cannot enter working directory …: " and "cannot run …: " (the child
    /// appends the error).
    chdir_msg: Vec<u8>,
    exec_msg: Vec<u8>,
}

/// Start `argv` with the given stdio fds in a new session (with `tty`, fd 0 becomes its
/// controlling terminal), in `cwd`, with exactly `env`; `PATH` from `env` is searched as
/// `execvp` does. A failure after the clone (no such command, a bad directory) is
/// reported on the command's stderr and as its exit code: 127 for "not found", 126
/// otherwise.
pub fn spawn(
    argv: &[String],
    env: &[(String, String)],
    cwd: &str,
    fds: [BorrowedFd<'_>; 3],
    tty: bool,
    signalfd_mask: &SigSet,
) -> Result<Pid, String> {
    let Some(name) = argv.first() else {
        return Err("empty command".into());
    };
    let c_argv: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|_| "argument contains a NUL byte".to_string())?;
    let c_env: Vec<CString> = env
        .iter()
        .map(|(k, v)| CString::new(format!("{k}={v}")))
        .collect::<Result<_, _>>()
        .map_err(|_| "environment contains a NUL byte".to_string())?;
    let cwd_c = CString::new(cwd).map_err(|_| "cwd contains a NUL byte".to_string())?;
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str())
        .unwrap_or_default();
    let mut mask = SigSet::thread_get_mask().map_err(|e| format!("sigprocmask: {e}"))?;
    for s in signalfd_mask.iter() {
        mask.remove(s);
    }
    let mut p = Prepared {
        fds: [fds[0].as_raw_fd(), fds[1].as_raw_fd(), fds[2].as_raw_fd()],
        tty,
        mask: *mask.as_ref(),
        cwd: cwd_c,
        argvp: Vec::new(),
        envp: c_env.iter().map(|c| c.as_ptr()).collect(),
        argv: c_argv,
        candidates: resolve_candidates(name, path),
        chdir_msg: format!("cleanroom: cannot enter working directory {cwd}: ").into_bytes(),
        exec_msg: format!("cleanroom: cannot run {name:?}: ").into_bytes(),
    };
    p.argvp = p.argv.iter().map(|c| c.as_ptr()).collect();
    p.argvp.push(std::ptr::null());
    p.envp.push(std::ptr::null());
    // Not zeroed: a stack is written before it is read, and zeroing it cost a 64 KiB
    // memset and 16 page faults per spawn (pid 1 is a fresh copy of the zygote, so its
    // first spawn touches every page anew); untouched, only the pages the child uses fault.
    let mut stack: Vec<std::mem::MaybeUninit<u8>> = Vec::with_capacity(STACK);
    // The stack grows down from its (16-byte aligned) top, within the allocation.
    let top = (stack.as_mut_ptr() as usize + STACK) & !15;
    let arg = &p as *const Prepared as *mut libc::c_void;
    // SAFETY: `child` only reads `p` (alive until clone returns: with CLONE_VFORK pid 1
    // resumes only once the child has exec'd or exited) and runs on `stack` (likewise
    // alive); see the module doc for what the child may do. pid 1 is single-threaded.
    let pid = unsafe {
        libc::clone(
            child,
            top as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            arg,
        )
    };
    drop(stack);
    if pid < 0 {
        return Err(format!("clone: {}", std::io::Error::last_os_error()));
    }
    Ok(Pid::from_raw(pid))
}

/// The child: until `execve` it shares pid 1's memory (see the module doc).
extern "C" fn child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` points to the `Prepared` of `spawn`, alive and unchanged while pid 1
    // is suspended; every call below is async-signal-safe and allocates nothing.
    unsafe {
        let p = &*(arg as *const Prepared);
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::sigprocmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
        // Handlers of pid 1 must never run here; SIGPIPE back to its default too (pid 1
        // ignores it).
        for sig in [libc::SIGSEGV, libc::SIGBUS, libc::SIGPIPE] {
            libc::signal(sig, libc::SIG_DFL);
        }
        libc::setsid();
        for (target, fd) in p.fds.iter().enumerate() {
            libc::dup2(*fd, target as i32);
        }
        // The new session's controlling terminal: job control and Ctrl-C work.
        if p.tty && libc::ioctl(0, libc::TIOCSCTTY, 0) != 0 {
            fail(
                b"cleanroom: cannot set the controlling terminal: ",
                errno(),
                126,
            );
        }
        if libc::chdir(p.cwd.as_ptr()) != 0 {
            fail(&p.chdir_msg, errno(), 126);
        }
        libc::sigprocmask(libc::SIG_SETMASK, &p.mask, std::ptr::null_mut());
        let mut last = libc::ENOENT;
        for cand in &p.candidates {
            libc::execve(cand.as_ptr(), p.argvp.as_ptr(), p.envp.as_ptr());
            // Keep the most telling error (EACCES beats ENOENT, like execvp).
            let e = errno();
            if e != libc::ENOENT {
                last = e;
            }
        }
        let code = if last == libc::ENOENT { 127 } else { 126 };
        fail(&p.exec_msg, last, code)
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Write `prefix`, the error's text as `std::io::Error` shows it ("… (os error N)") and a
/// newline to stderr, then `_exit(code)`. Allocates nothing.
unsafe fn fail(prefix: &[u8], err: i32, code: i32) -> ! {
    let mut text = [0u8; 256];
    // SAFETY: a valid buffer of that length; strerror_r (XSI) NUL-terminates.
    let n = if libc::strerror_r(err, text.as_mut_ptr().cast(), text.len()) == 0 {
        text.iter().position(|&b| b == 0).unwrap_or(0)
    } else {
        0
    };
    let mut num = [0u8; 12];
    let digits = decimal(err, &mut num);
    for part in [prefix, &text[..n], b" (os error ", digits, b")\n"] {
        libc::write(2, part.as_ptr().cast(), part.len());
    }
    libc::_exit(code)
}

/// `n` in decimal, in `buf`.
fn decimal(n: i32, buf: &mut [u8; 12]) -> &[u8] {
    let neg = n < 0;
    let mut v = n.unsigned_abs();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if neg {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

/// execvp-style lookup done before the clone: a name with a slash is used as is,
/// otherwise every PATH entry is tried in order.
fn resolve_candidates(name: &str, path: &str) -> Vec<CString> {
    if name.contains('/') {
        return CString::new(name).into_iter().collect();
    }
    path.split(':')
        .map(|dir| if dir.is_empty() { "." } else { dir })
        .filter_map(|dir| CString::new(format!("{dir}/{name}")).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::wait::{waitpid, WaitStatus};
    use std::io::Read;
    use std::os::fd::{AsFd, OwnedFd};

    #[test]
    fn candidates_follow_path_order() {
        let c = resolve_candidates("sh", "/a::/b");
        let c: Vec<_> = c.iter().map(|s| s.to_str().unwrap()).collect();
        assert_eq!(c, ["/a/sh", "./sh", "/b/sh"]);
        assert_eq!(resolve_candidates("/bin/sh", "/a").len(), 1);
    }

    #[test]
    fn decimals() {
        let mut b = [0u8; 12];
        assert_eq!(decimal(0, &mut b), b"0");
        assert_eq!(decimal(2, &mut b), b"2");
        assert_eq!(decimal(-125, &mut b), b"-125");
        assert_eq!(decimal(i32::MIN, &mut b), b"-2147483648");
    }

    /// Run `argv` with stdout/stderr on pipes: (exit code, stdout, stderr).
    fn run(argv: &[&str], cwd: &str) -> (i32, String, String) {
        run_masked(argv, cwd, &SigSet::empty())
    }

    fn run_masked(argv: &[&str], cwd: &str, signalfd_mask: &SigSet) -> (i32, String, String) {
        let null: OwnedFd = std::fs::File::open("/dev/null").unwrap().into();
        let (out_r, out_w) = nix::unistd::pipe().unwrap();
        let (err_r, err_w) = nix::unistd::pipe().unwrap();
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let env = vec![
            ("PATH".to_string(), "/nonexistent:/usr/bin:/bin".to_string()),
            ("MARK".to_string(), "m1".to_string()),
        ];
        let pid = spawn(
            &argv,
            &env,
            cwd,
            [null.as_fd(), out_w.as_fd(), err_w.as_fd()],
            false,
            signalfd_mask,
        )
        .expect("spawn");
        drop((null, out_w, err_w));
        let (mut out, mut err) = (String::new(), String::new());
        std::fs::File::from(out_r).read_to_string(&mut out).unwrap();
        std::fs::File::from(err_r).read_to_string(&mut err).unwrap();
        let code = match waitpid(pid, None).unwrap() {
            WaitStatus::Exited(_, c) => c,
            other => panic!("{other:?}"),
        };
        (code, out, err)
    }

    #[test]
    fn runs_with_exactly_its_env_cwd_session_and_signals() {
        let (code, out, err) = run(
            &[
                "sh",
                "-c",
                "echo $MARK; pwd; test $(cut -d' ' -f6 /proc/$$/stat) -eq $$ && echo leader",
            ],
            "/tmp",
        );
        assert_eq!((code, out.as_str()), (0, "m1\n/tmp\nleader\n"), "{err}");
        // What the spawner blocks for its signalfd is unblocked, and SIGPIPE (which the
        // Rust runtime, like pid 1, ignores) is back to its default.
        let mut usr1 = SigSet::empty();
        usr1.add(nix::sys::signal::Signal::SIGUSR1);
        usr1.thread_block().unwrap();
        let (code, status, _) = run_masked(&["cat", "/proc/self/status"], "/", &usr1);
        assert_eq!(code, 0);
        assert!(status.contains("SigBlk:\t0000000000000000"), "{status}");
        let ignored = status
            .lines()
            .find_map(|l| l.strip_prefix("SigIgn:\t"))
            .map(|h| u64::from_str_radix(h, 16).unwrap())
            .unwrap();
        assert_eq!(ignored & (1 << (libc::SIGPIPE - 1)), 0, "{status}");
        // The test process itself is intact and can spawn again.
        assert_eq!(run(&["true"], "/").0, 0);
    }

    #[test]
    fn failures_are_reported_on_stderr_with_exit_codes() {
        let (code, _, err) = run(&["no-such-command-here"], "/");
        assert_eq!(code, 127);
        assert_eq!(
            err,
            "cleanroom: cannot run \"no-such-command-here\": No such file or directory (os error 2)\n"
        );
        let (code, _, err) = run(&["true"], "/no/such/dir");
        assert_eq!(code, 126);
        assert!(
            err.starts_with("cleanroom: cannot enter working directory /no/such/dir: No such file"),
            "{err}"
        );
        let (code, _, err) = run(&["/tmp"], "/");
        assert_eq!(code, 126, "{err}");
        assert!(err.contains("Permission denied (os error 13)"), "{err}");
    }
}
