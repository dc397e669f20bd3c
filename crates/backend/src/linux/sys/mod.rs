//! The one home of the backend's raw Linux calls: mount API syscalls, fd-table syscalls,
//! interface/TUN/route ioctls and the prctl bits nix does not cover.
//!
//! Everything else in `linux/` calls these safe wrappers (or `nix`) and calls no `libc`
//! function of its own: the raw code that must run between fork (or a `CLONE_VM` clone)
//! and exec lives here too ([`spawn`], [`zygote_child_setup`]). Outside `sys`, `unsafe`
//! is left only for `fork` itself, fds received or borrowed by number, and tokio's fd
//! registration. Every wrapper returns the kernel's error instead of ignoring
//! it: a sandbox whose setup step failed must not start (fail closed).

pub mod mounts;
pub mod netlink;
pub mod nft;
pub mod pidfd;
mod process;
pub mod rtnl;
pub mod spawn;
mod xattr;

pub use mounts::{Mounts, REAL};
pub use process::*;
pub use xattr::*;

use std::ffi::CString;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::atomic::Ordering;

use nix::fcntl::{fcntl, FcntlArg, FdFlag};

/// `io::Error` of the last failed call, prefixed with what was being done.
/// The result of a raw call: negative means failed, with the reason in errno. Callers
/// add their own context; the ioctls below name theirs (`what`).
fn check(res: libc::c_long) -> io::Result<libc::c_long> {
    if res < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(res)
    }
}

fn c_path(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_encoded_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("path: {e}")))
}

// ---- fd table ---------------------------------------------------------------------------

/// Close every fd in `first..=last` (close_range(2), Linux >= 5.9). Used before the
/// sandbox is built so nothing the server leaked can reach it; an error (old kernel,
/// seccomp) must fail the launch, as the firecracker jailer does on the same call.
pub fn close_range(first: u32, last: u32) -> io::Result<()> {
    // SAFETY: close_range only touches this process's fd table; the caller owns the range
    // (no live OwnedFd/File in it is used afterwards).
    let rc = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) };
    check(rc).map(drop)
}

/// Mark every fd from `first` up close-on-exec (close_range(2) with
/// CLOSE_RANGE_CLOEXEC, Linux >= 5.11) without closing any: between fork and exec, where
/// the runtime's own exec-error pipe must stay open until the exec.
pub fn cloexec_from(first: u32) -> io::Result<()> {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: close_range only changes flags in this process's fd table; async-signal-safe.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, first, u32::MAX, CLOSE_RANGE_CLOEXEC) };
    check(rc).map(drop)
}

/// Mark `fd` close-on-exec, so it never reaches a process pid 1 spawns.
pub fn set_cloexec(fd: BorrowedFd<'_>) -> nix::Result<()> {
    fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map(drop)
}

/// Resize a pipe's buffer (F_SETPIPE_SZ); returns the size the kernel granted.
pub fn set_pipe_size(fd: BorrowedFd<'_>, size: i32) -> nix::Result<i32> {
    fcntl(fd, FcntlArg::F_SETPIPE_SZ(size))
}

/// The access mode (`O_RDONLY`/`O_WRONLY`/`O_RDWR`) `fd` was opened with.
pub fn access_mode(fd: BorrowedFd<'_>) -> nix::Result<i32> {
    fcntl(fd, FcntlArg::F_GETFL).map(|flags| flags & libc::O_ACCMODE)
}

/// Take an exclusive flock(2) without waiting; `Ok(false)` if someone else holds it.
/// The lock lives as long as the open file description (released when it closes).
pub fn try_lock_exclusive(fd: BorrowedFd<'_>) -> io::Result<bool> {
    // SAFETY: flock(2) on a valid borrowed fd; non-blocking, touches no memory.
    if unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// Open (creating, mode 0600, never through a link) a lock file and try to take its
/// exclusive `flock` without waiting. `Ok(None)` when another open file holds it. The host-wide
/// id slots and the server-instance liveness locks both work this way.
pub fn open_locked(path: &Path) -> io::Result<Option<std::fs::File>> {
    let file = open_lock_file(path, 0)?;
    Ok(try_lock_exclusive(file.as_fd())?.then_some(file))
}

/// Open a lock file read-write, creating it with mode 0600, never through a link, with
/// `extra` open flags besides.
fn open_lock_file(path: &Path, extra: libc::c_int) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | extra)
        .open(path)
}

/// What [`open_ofd_locked`] found at a lock file's path.
#[derive(Debug)]
pub enum OfdLock {
    /// Ours: an exclusive lock on the whole file, held while its open file description is.
    Locked(std::fs::File),
    /// Another open file description holds a conflicting lock.
    Held,
    /// The path names something that is not a regular file (a link, a directory, a
    /// FIFO, a device): not a lock file, whoever put it there.
    NotAFile,
}

/// Open (creating, mode 0600) a lock file and take an exclusive *open file description*
/// lock on all of it without waiting (`F_OFD_SETLK`, `F_WRLCK`).
///
/// Why this kind: it is the one systemd's `make_lock_file` takes (systemd-nspawn's id
/// ranges among them), and on Linux OFD locks and `flock` locks never conflict with each
/// other — a `flock` would keep nothing of systemd's out. Like `flock`, the lock belongs to
/// the open file description, so it survives being passed to another process with
/// `SCM_RIGHTS` and ends when the last copy closes. Never opened through a link, never as
/// a controlling terminal, never blocking (a FIFO planted at the path cannot stall the
/// caller), and anything but a regular file is refused.
pub fn open_ofd_locked(path: &Path) -> io::Result<OfdLock> {
    let file = match open_lock_file(path, libc::O_NOCTTY | libc::O_NONBLOCK) {
        Ok(file) => file,
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ELOOP | libc::EISDIR | libc::ENXIO)
            ) =>
        {
            return Ok(OfdLock::NotAFile)
        }
        Err(e) => return Err(e),
    };
    if !file.metadata()?.file_type().is_file() {
        return Ok(OfdLock::NotAFile);
    }
    // SAFETY: `flock` is a plain C struct for which all-zero bytes are a valid value.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    // l_start = l_len = 0: the whole file, however long it grows; l_pid must be 0.
    match fcntl(file.as_fd(), FcntlArg::F_OFD_SETLK(&lock)) {
        Ok(_) => Ok(OfdLock::Locked(file)),
        Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EACCES) => Ok(OfdLock::Held),
        Err(e) => Err(e.into()),
    }
}

// ---- new mount API ------------------------------------------------------------------------

const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
/// `MOUNT_ATTR_*` bits for [`mount_setattr`].
pub const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub const MOUNT_ATTR_NODEV: u64 = 0x4;
pub const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;

/// Linux `struct mount_attr` (linux/mount.h), the argument of mount_setattr(2).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `fsconfig(2)` commands and the flag setter this crate uses.
pub const FSCONFIG_SET_FLAG: libc::c_uint = 0;
pub const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
pub const FSCONFIG_CMD_RECONFIGURE: libc::c_uint = 7;

/// Wrap an fd a raw syscall just returned (`check`ed) as owned.
fn owned(fd: libc::c_long, what: &str) -> io::Result<OwnedFd> {
    let fd =
        RawFd::try_from(fd).map_err(|_| io::Error::other(format!("{what}: fd out of range")))?;
    // SAFETY: fd was just returned by the kernel to this process and is owned by nobody
    // else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A new filesystem context for `fs_name` (fsopen(2), close-on-exec).
pub fn fsopen(fs_name: &std::ffi::CStr) -> io::Result<OwnedFd> {
    const FSOPEN_CLOEXEC: libc::c_uint = 1;
    // SAFETY: fsopen takes a NUL-terminated fs name and flags; it returns a new fd or -1.
    let fd = check(unsafe { libc::syscall(libc::SYS_fsopen, fs_name.as_ptr(), FSOPEN_CLOEXEC) })?;
    owned(fd, "fsopen")
}

/// The filesystem context of the superblock mounted at `path` (fspick(2), close-on-exec),
/// for a reconfigure.
pub fn fspick(path: &Path) -> io::Result<OwnedFd> {
    const FSPICK_CLOEXEC: libc::c_uint = 1;
    let p = c_path(path)?;
    // SAFETY: fspick takes a dirfd, a NUL-terminated path that outlives the call and
    // flags; it returns a new fd or -1.
    let fd = check(unsafe {
        libc::syscall(libc::SYS_fspick, libc::AT_FDCWD, p.as_ptr(), FSPICK_CLOEXEC)
    })?;
    owned(fd, "fspick")
}

/// `fsconfig(2)` with a key and no value: [`FSCONFIG_SET_FLAG`] (`key` set), or a command
/// ([`FSCONFIG_CMD_CREATE`], [`FSCONFIG_CMD_RECONFIGURE`]: `key` `None`).
pub fn fsconfig(
    fs: BorrowedFd<'_>,
    cmd: libc::c_uint,
    key: Option<&std::ffi::CStr>,
) -> io::Result<()> {
    // SAFETY: fsconfig(2) on a valid borrowed context fd; the key is null or a
    // NUL-terminated string that outlives the call; value null and aux 0, as a flag or a
    // command takes them.
    check(unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fs.as_raw_fd(),
            cmd,
            key.map_or(std::ptr::null(), |k| k.as_ptr()),
            std::ptr::null::<libc::c_void>(),
            0,
        )
    })
    .map(drop)
}

/// `fsconfig(2)` with `FSCONFIG_SET_STRING`: the parameter `key` set to `value`.
pub fn fsconfig_string(
    fs: BorrowedFd<'_>,
    key: &std::ffi::CStr,
    value: &std::ffi::CStr,
) -> io::Result<()> {
    const FSCONFIG_SET_STRING: libc::c_uint = 1;
    // SAFETY: fsconfig(2) on a valid borrowed context fd with two NUL-terminated strings
    // that outlive the call and aux 0, as FSCONFIG_SET_STRING takes them.
    check(unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fs.as_raw_fd(),
            FSCONFIG_SET_STRING,
            key.as_ptr(),
            value.as_ptr(),
            0,
        )
    })
    .map(drop)
}

/// A detached mount of a created filesystem context (fsmount(2), close-on-exec) with the
/// `MOUNT_ATTR_*` bits `attrs`.
pub fn fsmount(fs: BorrowedFd<'_>, attrs: libc::c_uint) -> io::Result<OwnedFd> {
    const FSMOUNT_CLOEXEC: libc::c_uint = 1;
    // SAFETY: fsmount on a valid borrowed, configured context fd; returns a new fd or -1.
    let fd =
        check(unsafe { libc::syscall(libc::SYS_fsmount, fs.as_raw_fd(), FSMOUNT_CLOEXEC, attrs) })?;
    owned(fd, "fsmount")
}

/// A detached clone of the mount tree at `src` (open_tree(2) with OPEN_TREE_CLONE), not
/// attached anywhere until [`move_mount`] puts it somewhere.
pub fn open_tree_clone(src: &Path) -> io::Result<OwnedFd> {
    let path = c_path(src)?;
    // SAFETY: open_tree(2) reads the NUL-terminated `path`, which outlives the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            path.as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint,
        )
    };
    owned(check(fd)?, "open_tree")
}

/// Set `attr_set` on a detached tree (mount_setattr(2) on the tree's root, not
/// recursive). With [`MOUNT_ATTR_IDMAP`], ids are shifted through the user namespace
/// `userns`.
pub fn mount_setattr(
    tree: BorrowedFd<'_>,
    attr_set: u64,
    userns: Option<BorrowedFd<'_>>,
) -> io::Result<()> {
    let attr = MountAttr {
        attr_set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: userns.map_or(0, |fd| fd.as_raw_fd() as u64),
    };
    // SAFETY: mount_setattr(2) reads `attr` (correctly sized, alive for the call) and the
    // empty NUL-terminated path; `tree` is a valid borrowed fd.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    check(rc).map(drop)
}

/// Attach a detached tree (from [`open_tree_clone`]) at `target` (move_mount(2)).
pub fn move_mount(tree: BorrowedFd<'_>, target: &Path) -> io::Result<()> {
    let t = c_path(target)?;
    // SAFETY: move_mount(2) with a valid borrowed fd and two NUL-terminated paths that
    // outlive the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    check(rc).map(drop)
}

// ---- network interfaces -------------------------------------------------------------------

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

fn sockaddr_v4(ip: Ipv4Addr) -> libc::sockaddr {
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

/// ioctl(2) with a pointer to a request structure of the type the request expects.
///
/// # Safety
/// `T` must be the structure the kernel reads (and may write) for `request`.
unsafe fn ioctl_ptr<T>(
    fd: BorrowedFd<'_>,
    request: libc::Ioctl,
    arg: &mut T,
    what: &str,
) -> io::Result<()> {
    // SAFETY: the caller guarantees `T` matches `request`; `arg` is a live exclusive borrow.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), request, arg as *mut T) };
    check(rc.into())
        .map(drop)
        .map_err(|e| io::Error::new(e.kind(), format!("{what}: {e}")))
}

/// An AF_INET datagram socket: the handle interface ioctls are issued on.
pub fn inet_socket() -> io::Result<OwnedFd> {
    use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};
    socket(
        AddressFamily::Inet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(|e| io::Error::new(io::Error::from(e).kind(), format!("socket: {e}")))
}

/// Set IFF_UP|IFF_RUNNING on interface `name` (read-modify-write of its flags).
pub fn interface_up(sock: BorrowedFd<'_>, name: &[u8]) -> io::Result<()> {
    let mut req = ifreq_named(name);
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS take a struct ifreq.
    unsafe { ioctl_ptr(sock, libc::SIOCGIFFLAGS, &mut req, "get interface flags")? };
    // SAFETY: ifru_flags is the union member SIOCGIFFLAGS just filled in.
    unsafe { req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short };
    // SAFETY: as above.
    unsafe { ioctl_ptr(sock, libc::SIOCSIFFLAGS, &mut req, "set interface flags") }
}

/// Give interface `name` the IPv4 address `ip` with netmask `mask`, and MTU `mtu`.
pub fn interface_address(
    sock: BorrowedFd<'_>,
    name: &[u8],
    ip: Ipv4Addr,
    mask: Ipv4Addr,
    mtu: u16,
) -> io::Result<()> {
    let mut req = ifreq_named(name);
    req.ifr_ifru.ifru_addr = sockaddr_v4(ip);
    // SAFETY: SIOCSIFADDR takes a struct ifreq carrying a sockaddr.
    unsafe { ioctl_ptr(sock, libc::SIOCSIFADDR, &mut req, "set tun address")? };
    let mut req = ifreq_named(name);
    req.ifr_ifru.ifru_netmask = sockaddr_v4(mask);
    // SAFETY: SIOCSIFNETMASK takes a struct ifreq carrying a sockaddr.
    unsafe { ioctl_ptr(sock, libc::SIOCSIFNETMASK, &mut req, "set tun netmask")? };
    let mut req = ifreq_named(name);
    req.ifr_ifru.ifru_mtu = i32::from(mtu);
    // SAFETY: SIOCSIFMTU takes a struct ifreq carrying an int.
    unsafe { ioctl_ptr(sock, libc::SIOCSIFMTU, &mut req, "set tun mtu") }
}

/// Route everything (0.0.0.0/0) through `gateway` on interface `dev`.
pub fn add_default_route(sock: BorrowedFd<'_>, dev: &[u8], gateway: Ipv4Addr) -> io::Result<()> {
    let mut name: Vec<u8> = dev.to_vec();
    name.push(0);
    // SAFETY: RtEntry is plain old data (integers, sockaddrs, nullable pointers).
    let mut rt: RtEntry = unsafe { std::mem::zeroed() };
    rt.rt_dst = sockaddr_v4(Ipv4Addr::UNSPECIFIED);
    rt.rt_genmask = sockaddr_v4(Ipv4Addr::UNSPECIFIED);
    rt.rt_gateway = sockaddr_v4(gateway);
    rt.rt_flags = (libc::RTF_UP | libc::RTF_GATEWAY) as libc::c_ushort;
    rt.rt_dev = name.as_mut_ptr().cast();
    // SAFETY: SIOCADDRT takes a struct rtentry; `rt_dev` points into `name`, which lives
    // until after the call.
    unsafe { ioctl_ptr(sock, libc::SIOCADDRT, &mut rt, "add default route") }
}

/// Open `/dev/net/tun` and create the tun interface `name` (IFF_TUN|IFF_NO_PI); the fd is
/// the device's packet end.
pub fn create_tun_device(name: &[u8]) -> io::Result<OwnedFd> {
    use nix::fcntl::{open, OFlag};
    use nix::sys::stat::Mode;
    let tun = open(
        c"/dev/net/tun",
        OFlag::O_RDWR | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io::Error::new(io::Error::from(e).kind(), format!("open /dev/net/tun: {e}")))?;
    let mut req = ifreq_named(name);
    req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF takes a struct ifreq naming the interface and its flags.
    unsafe {
        ioctl_ptr(
            tun.as_fd(),
            libc::TUNSETIFF as libc::Ioctl,
            &mut req,
            "TUNSETIFF",
        )?
    };
    Ok(tun)
}

/// `openat2(2)`, retried on `EAGAIN`. With `RESOLVE_IN_ROOT`/`RESOLVE_BENEATH` the kernel
/// refuses a `..` step that raced with any rename or mount anywhere on the system (it could
/// not prove the walk stayed inside) and asks the caller to try again. Mounts happen all
/// the time on a busy host — every sandbox start makes several — so a bounded retry is part
/// of using the call; after the bound the error stands (fail closed).
pub fn openat2<P, Fd>(dirfd: Fd, path: &P, how: nix::fcntl::OpenHow) -> nix::Result<OwnedFd>
where
    P: ?Sized + nix::NixPath,
    Fd: AsFd,
{
    let mut tries = 0;
    loop {
        match nix::fcntl::openat2(dirfd.as_fd(), path, how) {
            Err(nix::errno::Errno::EAGAIN) if tries < 64 => tries += 1,
            Err(nix::errno::Errno::ENOSYS) if OPENAT2_FALLBACK.load(Ordering::Relaxed) => {
                return openat_without_openat2(dirfd.as_fd(), path, how)
            }
            other => return other,
        }
    }
}

/// Set by [`allow_openat2_fallback`].
static OPENAT2_FALLBACK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// In a process whose kernel has no `openat2` — the gVisor runtime's file helper, under
/// gVisor's sentry (20240729) — let [`openat2`] with `RESOLVE_NO_MAGICLINKS` alone fall
/// back to `openat`. There every `/proc` magic link leads to an object of the sandbox's
/// own (the sentry's), which the helper — a process of the sandbox with its identity —
/// could reach anyway, and the pseudo-filesystem checks on the fd it ends at still hold.
/// Any other resolve flag (`RESOLVE_IN_ROOT`, `RESOLVE_BENEATH`, …) never falls back: the
/// call fails as the kernel said. Never called in the server.
pub fn allow_openat2_fallback() {
    OPENAT2_FALLBACK.store(true, Ordering::Relaxed);
}

fn openat_without_openat2<P>(
    dirfd: BorrowedFd<'_>,
    path: &P,
    how: nix::fcntl::OpenHow,
) -> nix::Result<OwnedFd>
where
    P: ?Sized + nix::NixPath,
{
    // SAFETY: `OpenHow` is `#[repr(transparent)]` over `libc::open_how` (nix 0.31), so the
    // two have the same layout; this only reads its fields back.
    let raw: libc::open_how = unsafe { std::mem::transmute(how) };
    let only_no_magiclinks = nix::fcntl::ResolveFlag::RESOLVE_NO_MAGICLINKS.bits();
    if raw.resolve & !only_no_magiclinks != 0 {
        return Err(nix::errno::Errno::ENOSYS);
    }
    let flags = nix::fcntl::OFlag::from_bits_truncate(raw.flags as libc::c_int);
    let mode = nix::sys::stat::Mode::from_bits_truncate(raw.mode as libc::mode_t);
    nix::fcntl::openat(dirfd, path, flags, mode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn is_open(fd: RawFd) -> bool {
        // SAFETY: borrow_raw only for the duration of one fcntl(F_GETFD) probe.
        fcntl(unsafe { BorrowedFd::borrow_raw(fd) }, FcntlArg::F_GETFD).is_ok()
    }

    #[test]
    fn close_range_reports_kernel_errors() {
        // first > last is EINVAL: the wrapper must surface it, not swallow it.
        let err = close_range(10, 5).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{err}");
    }

    #[test]
    fn close_range_closes_the_range() {
        let f = tempfile::tempfile().unwrap();
        let raw = std::os::fd::IntoRawFd::into_raw_fd(f);
        assert!(is_open(raw));
        close_range(raw as u32, raw as u32).unwrap();
        assert!(!is_open(raw));
    }

    #[test]
    fn set_cloexec_sets_the_flag() {
        let (a, _b) = nix::unistd::pipe().unwrap();
        fcntl(a.as_fd(), FcntlArg::F_SETFD(FdFlag::empty())).unwrap();
        set_cloexec(a.as_fd()).unwrap();
        let flags = FdFlag::from_bits_truncate(fcntl(a.as_fd(), FcntlArg::F_GETFD).unwrap());
        assert!(flags.contains(FdFlag::FD_CLOEXEC));
    }

    #[test]
    fn try_lock_exclusive_sees_another_holder() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lock");
        let a = std::fs::File::create(&p).unwrap();
        let b = std::fs::File::open(&p).unwrap();
        assert!(try_lock_exclusive(a.as_fd()).unwrap());
        assert!(!try_lock_exclusive(b.as_fd()).unwrap());
        drop(a);
        assert!(try_lock_exclusive(b.as_fd()).unwrap());
    }

    #[test]
    fn mount_calls_report_errors() {
        let missing = Path::new("/nonexistent/cleanroom-sys-test");
        assert!(open_tree_clone(missing).is_err());
        let f = tempfile::tempfile().unwrap();
        // A missing target: the kernel refuses, and so must the wrapper. (mount_setattr is
        // not probed here: on a plain fd it would change the real mount the file is on.)
        assert!(move_mount(f.as_fd(), missing).is_err());
    }
}
