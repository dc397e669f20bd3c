//! A minimal netlink request builder and sender: the few rtnetlink and nfnetlink messages
//! the kernel-socket data plane needs (a veth pair across two namespaces, a local route, an
//! nftables table) without an `ip` or `nft` binary on the host. Every request asks for an
//! acknowledgment, and an error the kernel answers with fails the caller: nothing is
//! assumed to have worked.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub const NLM_F_REQUEST: u16 = 0x1;
pub const NLM_F_ACK: u16 = 0x4;
pub const NLM_F_EXCL: u16 = 0x200;
pub const NLM_F_CREATE: u16 = 0x400;
pub const NLM_F_APPEND: u16 = 0x800;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLA_F_NESTED: u16 = 0x8000;

/// One netlink message under construction: header, fixed part, attributes.
pub struct Msg {
    buf: Vec<u8>,
    /// Offsets of the nested attributes still open.
    open: Vec<usize>,
}

impl Msg {
    /// A message of `kind` with `flags`, and `fixed` (the family header) after the header.
    pub fn new(kind: u16, flags: u16, fixed: &[u8]) -> Msg {
        let mut buf = vec![0u8; 16];
        buf[4..6].copy_from_slice(&kind.to_ne_bytes());
        buf[6..8].copy_from_slice(&flags.to_ne_bytes());
        buf.extend_from_slice(fixed);
        pad(&mut buf);
        Msg {
            buf,
            open: Vec::new(),
        }
    }

    /// An attribute with raw bytes.
    pub fn attr(&mut self, kind: u16, data: &[u8]) -> &mut Self {
        let len = (4 + data.len()) as u16;
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        self.buf.extend_from_slice(data);
        pad(&mut self.buf);
        self
    }

    /// A NUL-terminated string attribute.
    pub fn str(&mut self, kind: u16, s: &str) -> &mut Self {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        self.attr(kind, &v)
    }

    pub fn u32_ne(&mut self, kind: u16, v: u32) -> &mut Self {
        self.attr(kind, &v.to_ne_bytes())
    }

    /// A big-endian u32 (nfnetlink's byte order).
    pub fn u32_be(&mut self, kind: u16, v: u32) -> &mut Self {
        self.attr(kind, &v.to_be_bytes())
    }

    /// Open a nested attribute; [`Msg::end`] closes it.
    pub fn nest(&mut self, kind: u16) -> &mut Self {
        self.open.push(self.buf.len());
        self.buf.extend_from_slice(&0u16.to_ne_bytes());
        self.buf
            .extend_from_slice(&(kind | NLA_F_NESTED).to_ne_bytes());
        self
    }

    /// Raw bytes inside the open nest (a nested family header, as veth's peer has).
    pub fn raw(&mut self, data: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(data);
        pad(&mut self.buf);
        self
    }

    pub fn end(&mut self) -> &mut Self {
        if let Some(at) = self.open.pop() {
            let len = (self.buf.len() - at) as u16;
            self.buf[at..at + 2].copy_from_slice(&len.to_ne_bytes());
        }
        self
    }

    /// The finished message with sequence number `seq`.
    fn finish(mut self, seq: u32) -> Vec<u8> {
        while !self.open.is_empty() {
            self.end();
        }
        let len = self.buf.len() as u32;
        self.buf[0..4].copy_from_slice(&len.to_ne_bytes());
        self.buf[8..12].copy_from_slice(&seq.to_ne_bytes());
        self.buf
    }
}

fn pad(buf: &mut Vec<u8>) {
    while !buf.len().is_multiple_of(4) {
        buf.push(0);
    }
}

/// A netlink socket of `protocol` (`NETLINK_ROUTE`, `NETLINK_NETFILTER`) in the calling
/// thread's network namespace.
pub fn socket(protocol: i32) -> io::Result<OwnedFd> {
    // SAFETY: socket(2) takes three integers and returns a new fd or -1.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            protocol,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this fd; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Send `msgs` in one datagram (an nfnetlink batch is one) and wait for an acknowledgment
/// of each that asked for one; the first error the kernel reports is returned.
pub fn request(sock: &OwnedFd, msgs: Vec<Msg>, what: &str) -> io::Result<()> {
    let mut out = Vec::new();
    let mut acks = 0usize;
    for (i, m) in msgs.into_iter().enumerate() {
        let seq = i as u32 + 1;
        let flags = u16::from_ne_bytes([m.buf[6], m.buf[7]]);
        if flags & NLM_F_ACK != 0 {
            acks += 1;
        }
        out.extend_from_slice(&m.finish(seq));
    }
    // SAFETY: `out` is a valid buffer of `out.len()` bytes for the call's duration.
    let n = unsafe { libc::send(sock.as_raw_fd(), out.as_ptr().cast(), out.len(), 0) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("{what}: netlink send: {e}"),
        ));
    }
    let mut buf = vec![0u8; 16 << 10];
    while acks > 0 {
        // SAFETY: `buf` is a valid, writable buffer of `buf.len()` bytes.
        let n = unsafe { libc::recv(sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("{what}: netlink recv: {e}"),
            ));
        }
        let mut rest = &buf[..n as usize];
        while rest.len() >= 16 {
            let len = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            let kind = u16::from_ne_bytes([rest[4], rest[5]]);
            if len < 16 || len > rest.len() {
                break;
            }
            if kind == NLMSG_ERROR && len >= 20 {
                let code = i32::from_ne_bytes([rest[16], rest[17], rest[18], rest[19]]);
                if code != 0 {
                    let e = io::Error::from_raw_os_error(-code);
                    return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
                }
                acks = acks.saturating_sub(1);
            } else if kind == NLMSG_DONE {
                acks = acks.saturating_sub(1);
            }
            rest = &rest[((len + 3) & !3).min(rest.len())..];
        }
    }
    Ok(())
}
