//! Control protocol between the server and a sandbox's pid 1 (`cleanroom __sandbox-init`).
//!
//! One `SOCK_SEQPACKET` socketpair per sandbox: each datagram is one JSON message, and
//! stdio pipe ends travel alongside as `SCM_RIGHTS`. Seqpacket keeps message boundaries
//! and ties the passed fds to their message, so no framing code is needed.

use nix::sys::socket::{recvmsg, sendmsg, ControlMessage, ControlMessageOwned, MsgFlags};
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// Largest control message; commands and environments must fit.
pub const MAX_MESSAGE: usize = 256 * 1024;

/// Server → init.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// First message to a new shim: what to build.
    Configure(Box<super::config::InitConfig>),
    /// Start a process; three fds (stdin, stdout, stderr) accompany it, or two (stdout,
    /// stderr) with `stdin_null`.
    Spawn {
        id: u64,
        argv: Vec<String>,
        env: Vec<(String, String)>,
        cwd: String,
        /// The three fds are one terminal: make it the controlling terminal of the
        /// process's new session.
        #[serde(default)]
        tty: bool,
        /// No input: stdin is the sandbox's own `/dev/null`, which pid 1 opened at setup.
        /// Never a host file the server opened: an fd the sandbox holds reaches its inode
        /// through `/proc/self/fd`, and the host's `/dev/null` is every process's (an
        /// inotify watch on it sees each open of it on the host, other sandboxes' starts
        /// among them; see `devnodes.rs`).
        #[serde(default)]
        stdin_null: bool,
    },
    /// Signal a process group.
    Signal { id: u64, signal: i32 },
    /// The server wrote the shim's uid_map/gid_map; setup may continue.
    IdsMapped,
    /// Open `path` (as the sandbox sees it) with the sandbox's own identity for a file RPC;
    /// answered by [`Reply::Opened`] carrying the fd (see [`super::served`]).
    OpenFile {
        id: u64,
        path: String,
        mode: crate::OpenMode,
    },
    /// A files-API operation carried out by a helper with the sandbox's identity; fds as
    /// the operation needs them (see [`crate::files::FileOp`]). Answered by
    /// [`Reply::FileDone`] for `id` and, for a stream, once more for `done_id` at its end.
    FileOp {
        id: u64,
        done_id: Option<u64>,
        file_op: crate::files::FileOp,
    },
}

/// Why setup failed, as far as the server's users need to know.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SetupFailure {
    /// Anything not caused by the image: reported as a launch failure.
    #[default]
    Internal,
    /// The image's layout cannot be used safely (e.g. its `/etc` is not a directory inside
    /// it): reported as `image_unsupported`.
    ImageUnsupported,
}

/// Init → server.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Reply {
    /// Sent by the outer shim: host pid of the sandbox's pid 1.
    Started {
        init_pid: i32,
    },
    /// Sent by the shim after unshare(CLONE_NEWUSER): please write my id maps.
    NeedIdMap {
        shim_pid: i32,
    },
    /// Rootfs, namespaces, network and hardening are set up; `info` says what was applied.
    Ready {
        info: std::collections::HashMap<String, String>,
    },
    /// Setup failed; the sandbox is unusable.
    SetupFailed {
        error: String,
        #[serde(default)]
        kind: SetupFailure,
    },
    Spawned {
        id: u64,
        pid: i32,
    },
    Exited {
        id: u64,
        code: Option<i32>,
        signal: Option<i32>,
    },
    /// Answer to [`Request::OpenFile`]: the file's size with its fd attached, or why not.
    Opened {
        id: u64,
        result: Result<u64, super::served::FileRefusal>,
    },
    /// Answer to [`Request::FileOp`] (fds attached as the operation says).
    FileDone {
        id: u64,
        result: Result<crate::files::FileAnswer, super::served::FileRefusal>,
    },
}

/// Send one JSON message with optional fds.
pub fn send<T: serde::Serialize>(fd: RawFd, msg: &T, fds: &[RawFd]) -> std::io::Result<()> {
    let buf = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    if buf.len() > MAX_MESSAGE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "control message too large",
        ));
    }
    let iov = [IoSlice::new(&buf)];
    let cmsgs: Vec<ControlMessage> = if fds.is_empty() {
        Vec::new()
    } else {
        vec![ControlMessage::ScmRights(fds)]
    };
    loop {
        match sendmsg::<()>(fd, &iov, &cmsgs, MsgFlags::MSG_NOSIGNAL, None) {
            Ok(_) => return Ok(()),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Receive one message and its fds (marked close-on-exec). `Ok(None)` means the peer closed.
pub fn recv<T: serde::de::DeserializeOwned>(
    fd: RawFd,
) -> std::io::Result<Option<(T, Vec<OwnedFd>)>> {
    recv_with(fd, MsgFlags::empty())
}

/// [`recv`] that never blocks (`MSG_DONTWAIT` on this call only, so the shared file
/// description stays blocking for senders): `WouldBlock` when no message is queued.
pub fn try_recv<T: serde::de::DeserializeOwned>(
    fd: RawFd,
) -> std::io::Result<Option<(T, Vec<OwnedFd>)>> {
    recv_with(fd, MsgFlags::MSG_DONTWAIT)
}

fn recv_with<T: serde::de::DeserializeOwned>(
    fd: RawFd,
    flags: MsgFlags,
) -> std::io::Result<Option<(T, Vec<OwnedFd>)>> {
    // The datagram's length first (MSG_PEEK|MSG_TRUNC reports it in full), so the buffer is
    // exactly its size: a zeroed MAX_MESSAGE buffer per message cost every shim and pid 1
    // ~256 KiB of dirty heap pages (glibc serves it from the heap once its mmap threshold
    // has grown) and every receive a 256 KiB memset.
    let len = loop {
        match nix::sys::socket::recv(
            fd,
            &mut [],
            MsgFlags::MSG_PEEK | MsgFlags::MSG_TRUNC | flags,
        ) {
            Ok(n) => break n,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    };
    // At least one byte, so a closed peer still reads as 0 bytes below; an oversized message
    // is consumed (its fds closed) and refused.
    let mut buf = vec![0u8; len.clamp(1, MAX_MESSAGE)];
    let mut cmsg = nix::cmsg_space!([RawFd; 16]);
    let (n, fds) = loop {
        let mut iov = [IoSliceMut::new(&mut buf)];
        match recvmsg::<()>(
            fd,
            &mut iov,
            Some(&mut cmsg),
            MsgFlags::MSG_CMSG_CLOEXEC | flags,
        ) {
            Ok(msg) => {
                let mut fds = Vec::new();
                for c in msg.cmsgs().map_err(std::io::Error::from)? {
                    if let ControlMessageOwned::ScmRights(raw) = c {
                        // SAFETY: the kernel just installed these fds for us; we own them.
                        fds.extend(raw.into_iter().map(|r| unsafe { OwnedFd::from_raw_fd(r) }));
                    }
                }
                break (msg.bytes, fds);
            }
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    };
    if n == 0 {
        return Ok(None);
    }
    if len > MAX_MESSAGE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "control message too large",
        ));
    }
    let msg = serde_json::from_slice(&buf[..n]).map_err(std::io::Error::other)?;
    Ok(Some((msg, fds)))
}

/// Server → zygote (see [`super::zygote`]).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ZygoteRequest {
    /// Fork a shim; exactly one fd accompanies it: the shim's end of its sandbox's
    /// control socket. `seq` pairs the answer with the request.
    Fork { seq: u64 },
}

/// Zygote → server.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ZygoteReply {
    /// The shim runs; its pidfd accompanies this answer.
    Forked { seq: u64, pid: i32 },
    /// No shim was started.
    ForkFailed { seq: u64, error: String },
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
    use std::os::fd::AsRawFd;

    fn pair() -> (OwnedFd, OwnedFd) {
        socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .unwrap()
    }

    #[test]
    fn messages_of_any_size_arrive_whole_with_their_fds_and_eof_is_none() {
        let (a, b) = pair();
        let (r, _w) = nix::unistd::pipe().unwrap();
        // A large message (an environment) and a tiny one, each sized exactly on receipt.
        let env = vec![("K".to_string(), "v".repeat(100_000))];
        let big = Request::Spawn {
            id: 7,
            argv: vec!["true".into()],
            env,
            cwd: "/".into(),
            tty: false,
            stdin_null: false,
        };
        send(a.as_raw_fd(), &big, &[r.as_raw_fd(); 3]).unwrap();
        send(a.as_raw_fd(), &ZygoteRequest::Fork { seq: 1 }, &[]).unwrap();
        let (got, fds) = recv::<Request>(b.as_raw_fd()).unwrap().unwrap();
        match got {
            Request::Spawn { id, env, .. } => {
                assert_eq!(id, 7);
                assert_eq!(env[0].1.len(), 100_000);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(fds.len(), 3);
        let (got, fds) = recv::<ZygoteRequest>(b.as_raw_fd()).unwrap().unwrap();
        assert!(matches!(got, ZygoteRequest::Fork { seq: 1 }));
        assert!(fds.is_empty());
        // Nothing queued: a non-blocking receive says so instead of waiting.
        let e = try_recv::<ZygoteRequest>(b.as_raw_fd()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
        drop(a);
        assert!(recv::<ZygoteRequest>(b.as_raw_fd()).unwrap().is_none());
    }

    #[test]
    fn garbage_is_an_error_not_a_message() {
        let (a, b) = pair();
        nix::sys::socket::send(a.as_raw_fd(), b"{not json", MsgFlags::empty()).unwrap();
        assert!(recv::<ZygoteRequest>(b.as_raw_fd()).is_err());
    }
}
