//! Extended attributes (nix has no xattr calls): overlayfs's opaque-directory marker,
//! read and set on the server's own snapshot layers.

use super::check;
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::Path;

/// Read attribute `name` of the open file `fd` into `buf`; its length.
pub fn fgetxattr(fd: BorrowedFd<'_>, name: &CStr, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: fgetxattr writes at most buf.len() bytes into buf; both outlive the call.
    let n = unsafe {
        libc::fgetxattr(
            fd.as_raw_fd(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    check(n as libc::c_long).map(|n| n as usize)
}

/// Set attribute `name` of the open file `fd` to `value`.
pub fn fsetxattr(fd: BorrowedFd<'_>, name: &CStr, value: &[u8]) -> io::Result<()> {
    // SAFETY: the name and value are valid for the call; the fd is open.
    let r = unsafe {
        libc::fsetxattr(
            fd.as_raw_fd(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    check(r.into()).map(drop)
}

/// Read attribute `name` of `path` itself (a link is not followed) into `buf`; its length.
pub fn lgetxattr(path: &Path, name: &CStr, buf: &mut [u8]) -> io::Result<usize> {
    let c = super::c_path(path)?;
    // SAFETY: valid C strings and a buffer of the given length, all outliving the call.
    let n = unsafe {
        libc::lgetxattr(
            c.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    check(n as libc::c_long).map(|n| n as usize)
}

/// Set attribute `name` of `path` itself (a link is not followed) to `value`.
pub fn lsetxattr(path: &Path, name: &CStr, value: &[u8]) -> io::Result<()> {
    let c = super::c_path(path)?;
    // SAFETY: valid C strings and value buffer, all outliving the call.
    let r = unsafe {
        libc::lsetxattr(
            c.as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    check(r.into()).map(drop)
}
