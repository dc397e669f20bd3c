//! Network interface setup inside the sandbox's network namespace.

use std::io;

/// Bring `lo` up. A fresh network namespace has only a down loopback and no route out,
/// which is exactly the isolation the first-cut backend promises.
pub fn loopback_up() -> io::Result<()> {
    // SAFETY: plain socket/ioctl calls on a zeroed, correctly sized ifreq.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo\0".iter().enumerate() {
            req.ifr_name[i] = *b as libc::c_char;
        }
        let res = if libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req) < 0 {
            Err(io::Error::last_os_error())
        } else {
            req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            if libc::ioctl(fd, libc::SIOCSIFFLAGS, &req) < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        libc::close(fd);
        res
    }
}
