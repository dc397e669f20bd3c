//! Moving body bytes between two kernel sockets with `splice(2)` through a pipe: the bytes
//! never enter the server's memory (socket → pipe moves page references, pipe → socket
//! hands them to the TCP stack), so a fixed-length body costs two system calls per pipe
//! load instead of two copies of every byte and hyper's framing of each piece.
//!
//! The pipe is filled only when it is empty. A `splice` into a pipe that has room by byte
//! count can still fail with `EAGAIN` when its slots are taken by partial pages; that would
//! be read as "the socket has nothing" and clear the socket's readiness, and the relay
//! would wait for data that already arrived. With an empty pipe, `EAGAIN` means only that.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use tokio::io::Interest;
use tokio::net::TcpStream;

/// What the relay asks the kernel to hold per pipe load. Larger means fewer system calls per
/// byte; it is also what one connection may pin in page references while its receiver is
/// slow (the sockets' own buffers bound the rest).
const PIPE_SIZE: usize = 256 << 10;

/// One connection's pipe (made on its first spliced body, kept for the next ones).
pub(crate) struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    /// What the kernel granted (at least one page).
    capacity: usize,
    /// Bytes in the pipe now.
    held: usize,
}

impl Pipe {
    pub(crate) fn new() -> io::Result<Pipe> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: `fds` is a valid array of two ints for the kernel to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded: both are new descriptors this function alone owns.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // A refused size (a lower pipe-max-size) leaves the default: slower, not wrong.
        // SAFETY: fcntl on a descriptor we own, with an integer argument.
        unsafe {
            libc::fcntl(
                write.as_raw_fd(),
                libc::F_SETPIPE_SZ,
                PIPE_SIZE as libc::c_int,
            )
        };
        // SAFETY: as above.
        let got = unsafe { libc::fcntl(write.as_raw_fd(), libc::F_GETPIPE_SZ) };
        let capacity = usize::try_from(got).unwrap_or(0).max(4096);
        Ok(Pipe {
            read,
            write,
            capacity,
            held: 0,
        })
    }
}

/// Why a relay stopped before its end.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Cut {
    #[error("the source closed before the body's end")]
    Short,
    #[error("{0}")]
    Io(io::Error),
}

/// Move `len` bytes from `from` to `to` (`None`: until `from` closes). The bytes moved
/// go to `moved`, also when the relay is cut.
pub(crate) async fn relay(
    from: &TcpStream,
    to: &TcpStream,
    pipe: &mut Pipe,
    len: Option<u64>,
    moved: &mut (dyn FnMut(u64) + Send),
) -> Result<(), Cut> {
    let mut left = len;
    let mut eof = false;
    loop {
        while pipe.held > 0 {
            let n = pipe.held;
            match to.try_io(Interest::WRITABLE, || {
                splice(pipe.read.as_raw_fd(), to.as_raw_fd(), n)
            }) {
                Ok(0) => return Err(Cut::Io(io::ErrorKind::WriteZero.into())),
                Ok(k) => {
                    pipe.held -= k;
                    moved(k as u64);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(Cut::Io(e)),
            }
        }
        if pipe.held > 0 {
            to.writable().await.map_err(Cut::Io)?;
            continue;
        }
        if eof || left == Some(0) {
            return Ok(());
        }
        let want = left.map_or(pipe.capacity, |l| {
            usize::try_from(l).unwrap_or(usize::MAX).min(pipe.capacity)
        });
        match from.try_io(Interest::READABLE, || {
            splice(from.as_raw_fd(), pipe.write.as_raw_fd(), want)
        }) {
            Ok(0) if len.is_some() => return Err(Cut::Short),
            Ok(0) => eof = true,
            Ok(k) => {
                pipe.held = k;
                left = left.map(|l| l - k as u64);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                from.readable().await.map_err(Cut::Io)?;
            }
            Err(e) => return Err(Cut::Io(e)),
        }
    }
}

fn splice(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
    // SAFETY: both are open descriptors borrowed for the call; null offsets (one side is
    // always a pipe, the other a socket: neither has a file position).
    let n = unsafe {
        libc::splice(
            from,
            std::ptr::null_mut(),
            to,
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
        )
    };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn pair() -> (TcpStream, TcpStream) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (b, _) = l.accept().await.unwrap();
        (a, b)
    }

    /// A body larger than the pipe arrives intact and exactly: the bytes after it stay
    /// in the source for the next message, and a source that closes early is `Short`.
    #[tokio::test]
    async fn relays_exactly_len_bytes_and_reports_a_short_source() {
        let ((mut src_w, src_r), (dst_w, mut dst_r)) = (pair().await, pair().await);
        let body: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let writer = {
            let body = body.clone();
            tokio::spawn(async move {
                src_w.write_all(&body).await.unwrap();
                src_w.write_all(b"NEXT").await.unwrap();
                src_w
            })
        };
        let reader = tokio::spawn(async move {
            let mut got = vec![0u8; 3_000_000];
            dst_r.read_exact(&mut got).await.unwrap();
            got
        });
        let mut pipe = Pipe::new().unwrap();
        let mut total = 0;
        relay(
            &src_r,
            &dst_w,
            &mut pipe,
            Some(body.len() as u64),
            &mut |n| total += n,
        )
        .await
        .unwrap();
        assert_eq!(total, body.len() as u64);
        assert!(reader.await.unwrap() == body);
        let mut src_w = writer.await.unwrap();
        let mut next = [0u8; 4];
        let mut src_r = src_r;
        src_r.read_exact(&mut next).await.unwrap();
        assert_eq!(&next, b"NEXT");
        src_w.write_all(b"abc").await.unwrap();
        drop(src_w);
        let r = relay(&src_r, &dst_w, &mut pipe, Some(10), &mut |_| {}).await;
        assert!(matches!(r, Err(Cut::Short)), "{r:?}");
    }
}
