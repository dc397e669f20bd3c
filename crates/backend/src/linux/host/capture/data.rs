//! File content of a capture: copied extent by extent (`SEEK_DATA`/`SEEK_HOLE`), so a
//! sparse file stays sparse, and charged to the capture's byte budget *before* each
//! write, so a capture never writes more than its budget to the host.
//!
//! The content hash covers the data extents' bytes and the holes' offsets and lengths
//! (a hole is not hashed as zeros: a 1 TiB sparse file costs nothing to hash). The same
//! state therefore hashes the same; the same bytes with a different hole layout do not.
//! A data chunk that is all zeros is hashed as data but not written (it stays a hole in
//! the copy).

use sha2::{Digest, Sha256};
use std::os::fd::{AsFd, BorrowedFd};

/// Size of one read/write.
const CHUNK: usize = 1 << 20;
/// Allocation granularity charged for each written chunk.
pub const BLOCK: u64 = 4096;

/// A byte budget for one capture: what may still be allocated on the host.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub limit: u64,
    pub used: u64,
}

/// Why a copy stopped.
#[derive(Debug)]
pub enum CopyError {
    /// Writing the next chunk would pass the budget (nothing of it was written).
    OverBudget {
        limit: u64,
    },
    Io(std::io::Error),
}

impl From<nix::errno::Errno> for CopyError {
    fn from(e: nix::errno::Errno) -> Self {
        CopyError::Io(e.into())
    }
}

impl Budget {
    /// Charge `bytes` rounded up to whole blocks, or refuse without charging.
    pub fn charge(&mut self, bytes: u64) -> Result<(), CopyError> {
        let cost = bytes.div_ceil(BLOCK).saturating_mul(BLOCK);
        let next = self.used.saturating_add(cost);
        if next > self.limit {
            return Err(CopyError::OverBudget { limit: self.limit });
        }
        self.used = next;
        Ok(())
    }
}

/// `lseek(fd, off, whence)`; `None` for ENXIO (no data at or after `off`).
fn seek(
    fd: BorrowedFd<'_>,
    off: u64,
    whence: nix::unistd::Whence,
) -> Result<Option<u64>, CopyError> {
    match nix::unistd::lseek(fd, off as libc::off_t, whence) {
        Ok(r) => Ok(Some(r as u64)),
        Err(nix::errno::Errno::ENXIO) => Ok(None),
        Err(e) => Err(CopyError::Io(e.into())),
    }
}

/// The data extents of the first `size` bytes of `fd` as (start, end); the whole file
/// when the filesystem cannot tell (`EINVAL`).
fn extents(fd: BorrowedFd<'_>, size: u64) -> Result<Vec<(u64, u64)>, CopyError> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < size {
        let start = match seek(fd, off, nix::unistd::Whence::SeekData) {
            Ok(Some(s)) => s,
            Ok(None) => break,
            Err(CopyError::Io(e)) if e.raw_os_error() == Some(libc::EINVAL) => {
                return Ok(vec![(0, size)]);
            }
            Err(e) => return Err(e),
        };
        if start >= size {
            break;
        }
        let end = seek(fd, start, nix::unistd::Whence::SeekHole)?
            .unwrap_or(size)
            .min(size);
        if end <= start {
            break;
        }
        out.push((start, end));
        off = end;
    }
    Ok(out)
}

fn pread_full(fd: BorrowedFd<'_>, buf: &mut [u8], off: u64) -> Result<(), CopyError> {
    let mut done = 0;
    while done < buf.len() {
        match nix::sys::uio::pread(fd, &mut buf[done..], (off + done as u64) as libc::off_t) {
            Ok(0) => {
                return Err(CopyError::Io(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "file shrank during capture",
                )))
            }
            Ok(n) => done += n,
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn pwrite_full(fd: BorrowedFd<'_>, buf: &[u8], off: u64) -> Result<(), CopyError> {
    let mut done = 0;
    while done < buf.len() {
        match nix::sys::uio::pwrite(fd, &buf[done..], (off + done as u64) as libc::off_t) {
            Ok(n) => done += n,
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Copy the first `size` bytes of `src` into the empty file `dst`, keeping holes, charging
/// `budget` before every chunk written. Returns the content hash.
pub fn copy_sparse(
    src: impl AsFd,
    dst: impl AsFd,
    size: u64,
    budget: &mut Budget,
) -> Result<Vec<u8>, CopyError> {
    let (src, dst) = (src.as_fd(), dst.as_fd());
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut at = 0u64;
    let hole = |h: &mut Sha256, from: u64, to: u64| {
        if to > from {
            h.update(b"\0hole\0");
            h.update(from.to_le_bytes());
            h.update((to - from).to_le_bytes());
        }
    };
    for (start, end) in extents(src, size)? {
        hole(&mut h, at, start);
        let mut off = start;
        while off < end {
            let n = ((end - off) as usize).min(CHUNK);
            let chunk = &mut buf[..n];
            pread_full(src, chunk, off)?;
            h.update(&chunk[..]);
            if chunk.iter().any(|b| *b != 0) {
                budget.charge(n as u64)?;
                pwrite_full(dst, chunk, off)?;
            }
            off += n as u64;
        }
        at = end;
    }
    hole(&mut h, at, size);
    nix::unistd::ftruncate(dst, size as libc::off_t)?;
    let d: [u8; 32] = h.finalize().into();
    Ok(d.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom, Write};
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_sparse_file_stays_sparse_and_its_content_survives() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = std::fs::File::create(dir.path().join("src")).unwrap();
        f.seek(SeekFrom::Start(1 << 30)).unwrap();
        f.write_all(b"end").unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        f.write_all(b"start").unwrap();
        drop(f);
        let src = std::fs::File::open(dir.path().join("src")).unwrap();
        let dst = std::fs::File::create(dir.path().join("dst")).unwrap();
        let mut b = Budget {
            limit: 1 << 20,
            used: 0,
        };
        let size = (1 << 30) + 3;
        let h1 = copy_sparse(&src, &dst, size, &mut b).unwrap();
        let m = std::fs::metadata(dir.path().join("dst")).unwrap();
        assert_eq!(m.len(), size);
        assert!(m.blocks() * 512 < 1 << 20, "{} blocks", m.blocks());
        assert!(b.used <= 2 * BLOCK, "{}", b.used);
        let out = std::fs::File::open(dir.path().join("dst")).unwrap();
        let (mut a, mut z) = ([0u8; 5], [0u8; 3]);
        pread_full(out.as_fd(), &mut a, 0).unwrap();
        pread_full(out.as_fd(), &mut z, 1 << 30).unwrap();
        assert_eq!((&a, &z), (b"start", b"end"));
        // The same state hashes the same.
        let dst2 = std::fs::File::create(dir.path().join("dst2")).unwrap();
        let h2 = copy_sparse(&src, &dst2, size, &mut b).unwrap();
        assert_eq!(h1, h2);
    }

    #[test]
    fn a_copy_past_the_budget_stops_before_writing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("src"), vec![7u8; 3 << 20]).unwrap();
        let src = std::fs::File::open(dir.path().join("src")).unwrap();
        let dst = std::fs::File::create(dir.path().join("dst")).unwrap();
        let mut b = Budget {
            limit: 2 << 20,
            used: 0,
        };
        let r = copy_sparse(&src, &dst, 3 << 20, &mut b);
        assert!(matches!(r, Err(CopyError::OverBudget { limit }) if limit == 2 << 20));
        let m = std::fs::metadata(dir.path().join("dst")).unwrap();
        assert!(m.blocks() * 512 <= 2 << 20, "{}", m.blocks());
        assert_eq!(b.used, 2 << 20);
    }
}
