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

/// Name of the tun interface inside every sandbox.
pub const TUN_NAME: &[u8] = b"cr0";

/// Linux `struct rtentry` (linux/route.h); the libc crate does not export it for glibc.
/// Stable kernel ABI for SIOCADDRT.
#[repr(C)]
struct RtEntry {
    rt_pad1: libc::c_ulong,
    rt_dst: libc::sockaddr,
    rt_gateway: libc::sockaddr,
    rt_genmask: libc::sockaddr,
    rt_flags: libc::c_ushort,
    rt_pad2: libc::c_short,
    rt_pad3: libc::c_ulong,
    rt_pad4: *mut libc::c_void,
    rt_metric: libc::c_short,
    rt_dev: *mut libc::c_char,
    rt_mtu: libc::c_ulong,
    rt_window: libc::c_ulong,
    rt_irtt: libc::c_ushort,
}

fn ifreq_named(name: &[u8]) -> libc::ifreq {
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (i, b) in name.iter().take(libc::IFNAMSIZ - 1).enumerate() {
        req.ifr_name[i] = *b as libc::c_char;
    }
    req
}

fn sockaddr_v4(ip: std::net::Ipv4Addr) -> libc::sockaddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: sockaddr_in and sockaddr have the same size; this is how the ioctl API works.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(sin) }
}

fn check(res: libc::c_int, what: &str) -> io::Result<()> {
    if res < 0 {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("{what}: {e}")))
    } else {
        Ok(())
    }
}

/// Create the sandbox's tun device (must run inside its network namespace, before the root
/// is switched: `/dev/net/tun` is not in the sandbox's /dev), address it, make it the
/// default route, and turn IPv6 off. Returns the device fd for the gateway.
pub fn create_tun(cfg: &crate::TunConfig) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // IPv4 only: no link-local IPv6 address, nothing to leak over v6 (best effort — the
    // gateway denies IPv6 anyway).
    for f in ["all", "default"] {
        let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{f}/disable_ipv6"), "1");
    }
    // SAFETY: plain open/ioctl calls on zeroed, correctly sized structures; every fd is
    // owned by an OwnedFd right after creation.
    unsafe {
        let tun = libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        check(tun, "open /dev/net/tun")?;
        let tun = OwnedFd::from_raw_fd(tun);
        let mut req = ifreq_named(TUN_NAME);
        req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
        check(
            libc::ioctl(tun.as_raw_fd(), libc::TUNSETIFF as _, &req),
            "TUNSETIFF",
        )?;

        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        check(sock, "socket")?;
        let sock = OwnedFd::from_raw_fd(sock);
        let s = sock.as_raw_fd();
        let mut req = ifreq_named(TUN_NAME);
        req.ifr_ifru.ifru_addr = sockaddr_v4(cfg.guest);
        check(libc::ioctl(s, libc::SIOCSIFADDR, &req), "set tun address")?;
        let mut req = ifreq_named(TUN_NAME);
        req.ifr_ifru.ifru_netmask = sockaddr_v4(std::net::Ipv4Addr::new(255, 255, 255, 0));
        check(
            libc::ioctl(s, libc::SIOCSIFNETMASK, &req),
            "set tun netmask",
        )?;
        let mut req = ifreq_named(TUN_NAME);
        req.ifr_ifru.ifru_mtu = i32::from(cfg.mtu);
        check(libc::ioctl(s, libc::SIOCSIFMTU, &req), "set tun mtu")?;
        let mut req = ifreq_named(TUN_NAME);
        check(
            libc::ioctl(s, libc::SIOCGIFFLAGS, &mut req),
            "get tun flags",
        )?;
        req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        check(libc::ioctl(s, libc::SIOCSIFFLAGS, &req), "bring tun up")?;

        let mut dev: Vec<u8> = TUN_NAME.to_vec();
        dev.push(0);
        let mut rt: RtEntry = std::mem::zeroed();
        rt.rt_dst = sockaddr_v4(std::net::Ipv4Addr::UNSPECIFIED);
        rt.rt_genmask = sockaddr_v4(std::net::Ipv4Addr::UNSPECIFIED);
        rt.rt_gateway = sockaddr_v4(cfg.gateway);
        rt.rt_flags = (libc::RTF_UP | libc::RTF_GATEWAY) as libc::c_ushort;
        rt.rt_dev = dev.as_mut_ptr().cast();
        check(libc::ioctl(s, libc::SIOCADDRT, &rt), "add default route")?;
        Ok(tun)
    }
}
