//! The special-entry manifest of a snapshot: what a sandbox wrote that the store keeps
//! as *data* only, with the metadata to restore it kept beside the layer.
//!
//! In the layer every file and directory is stored with [`stored_mode`] (no setuid,
//! setgid or sticky bit, nothing group- or other-writable) and no FIFO is created (in an
//! image root's layer an overlay whiteout stands at its path, so the image's entry there
//! stays hidden). Each entry whose stored form differs from what the sandbox had is one
//! line of `layers/special` — a file of the server's next to the parts, never inside a
//! tree the sandbox sees:
//!
//! ```text
//! <kind> <mode, octal> <uid> <gid> <mtime s> <mtime ns> <path, hex>
//! ```
//!
//! `kind` is `mode` (chmod the existing entry to `mode`) or `fifo` (make a FIFO with
//! that owner, mode and mtime); the path is where the sandbox sees the entry (`/etc/x`,
//! `/workspace/y`), hex-encoded so any name round-trips. Ids are the sandbox's own.
//!
//! A restore reads the manifest before `pivot_root` and applies it right after, as the
//! restored sandbox's pid 1 — inside its own user namespace and id mapping, on its own
//! overlays (a chmod copies the entry up into the sandbox's private upper; the shared
//! layer is never written) — resolving every path with `RESOLVE_IN_ROOT |
//! RESOLVE_NO_SYMLINKS` from the sandbox's root, before any sandbox process exists.

use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{Mode, SFlag};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The manifest's name inside a snapshot's `layers` directory.
pub const FILE: &str = "special";
/// Largest manifest a restore reads (a capture holds at most 2 000 000 entries).
const MAX_BYTES: u64 = 1 << 30;

/// The mode an entry is stored with on the host.
pub fn stored_mode(mode: u32) -> u32 {
    mode & 0o755
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An existing file or directory gets `mode`.
    Mode,
    /// A FIFO is made.
    Fifo,
}

/// One manifest line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Special {
    pub kind: Kind,
    /// Absolute path inside the sandbox.
    pub path: Vec<u8>,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub mtime: (i64, i64),
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The manifest's text.
pub fn encode(entries: &[Special]) -> Vec<u8> {
    let mut out = String::new();
    for e in entries {
        let kind = match e.kind {
            Kind::Mode => "mode",
            Kind::Fifo => "fifo",
        };
        out.push_str(&format!(
            "{kind} {:o} {} {} {} {} {}\n",
            e.mode,
            e.uid,
            e.gid,
            e.mtime.0,
            e.mtime.1,
            hex(&e.path)
        ));
    }
    out.into_bytes()
}

/// A path the manifest may name: absolute, plain components only.
fn valid_path(p: &[u8]) -> bool {
    p.first() == Some(&b'/')
        && p.len() > 1
        && !p.contains(&0)
        && p[1..]
            .split(|b| *b == b'/')
            .all(|c| !c.is_empty() && c != b"." && c != b"..")
}

pub fn parse(text: &[u8]) -> Result<Vec<Special>, String> {
    let text = std::str::from_utf8(text).map_err(|e| format!("snapshot manifest: {e}"))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let bad = || format!("snapshot manifest line {}: {line:?}", n + 1);
        let f: Vec<&str> = line.split(' ').collect();
        let [kind, mode, uid, gid, sec, nsec, path] = f[..] else {
            return Err(bad());
        };
        let kind = match kind {
            "mode" => Kind::Mode,
            "fifo" => Kind::Fifo,
            _ => return Err(bad()),
        };
        let path = unhex(path).filter(|p| valid_path(p)).ok_or_else(bad)?;
        let num = |s: &str| s.parse::<u32>().map_err(|_| bad());
        out.push(Special {
            kind,
            path,
            mode: u32::from_str_radix(mode, 8)
                .ok()
                .filter(|m| *m <= 0o7777)
                .ok_or_else(bad)?,
            uid: num(uid)?,
            gid: num(gid)?,
            mtime: (
                sec.parse().map_err(|_| bad())?,
                nsec.parse().map_err(|_| bad())?,
            ),
        });
    }
    Ok(out)
}

/// Write the manifest into `layers` (also when empty: its presence says the layer was
/// stored as data, see [`super::migrate`]).
pub fn write(layers: &Path, entries: &[Special]) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let p = layers.join(FILE);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&p)
        .map_err(|e| format!("create {}: {e}", p.display()))?;
    f.write_all(&encode(entries))
        .map_err(|e| format!("write {}: {e}", p.display()))
}

/// The manifest of the snapshot attached at `layers` (empty without one).
pub fn read(layers: Option<&Path>) -> Result<Vec<Special>, String> {
    let Some(l) = layers else {
        return Ok(Vec::new());
    };
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let p = l.join(FILE);
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&p)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("open {}: {e}", p.display())),
    };
    let mut text = Vec::new();
    f.take(MAX_BYTES + 1)
        .read_to_end(&mut text)
        .map_err(|e| format!("read {}: {e}", p.display()))?;
    if text.len() as u64 > MAX_BYTES {
        return Err(format!("{} is larger than {MAX_BYTES} bytes", p.display()));
    }
    parse(&text)
}

/// Apply `entries` in the restored sandbox (pid 1, after `pivot_root`: `/` is the
/// sandbox's own root, nothing of the host is reachable).
pub fn apply(entries: &[Special]) -> Result<(), String> {
    if entries.is_empty() {
        return Ok(());
    }
    let root = nix::fcntl::open(
        "/",
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("open /: {e}"))?;
    for e in entries {
        apply_one(root.as_fd(), e).map_err(|err| {
            format!(
                "restore {}: {err}",
                std::ffi::OsStr::from_bytes(&e.path).to_string_lossy()
            )
        })?;
    }
    Ok(())
}

fn apply_one(root: std::os::fd::BorrowedFd<'_>, e: &Special) -> nix::Result<()> {
    let rel = &e.path[1..];
    let (parent, name) = match rel.iter().rposition(|b| *b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&b"."[..], rel),
    };
    let parent = std::ffi::OsStr::from_bytes(parent);
    let name = std::ffi::OsStr::from_bytes(name);
    let no_links = ResolveFlag::RESOLVE_NO_SYMLINKS | ResolveFlag::RESOLVE_NO_MAGICLINKS;
    let dir = crate::linux::sys::openat2(
        root,
        parent,
        OpenHow::new()
            .flags(OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_IN_ROOT | no_links),
    )?;
    let mode = Mode::from_bits_truncate(e.mode);
    match e.kind {
        Kind::Mode => {
            let f = crate::linux::sys::openat2(
                &dir,
                name,
                OpenHow::new()
                    .flags(
                        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                    )
                    .resolve(ResolveFlag::RESOLVE_BENEATH | no_links),
            )?;
            // On the sandbox's overlay: copies the entry up into its own upper.
            nix::sys::stat::fchmod(&f, mode)
        }
        Kind::Fifo => {
            nix::sys::stat::mknodat(
                &dir,
                name,
                SFlag::S_IFIFO,
                Mode::from_bits_truncate(0o600),
                0,
            )?;
            nix::unistd::fchownat(
                &dir,
                name,
                Some(nix::unistd::Uid::from_raw(e.uid)),
                Some(nix::unistd::Gid::from_raw(e.gid)),
                nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
            )?;
            // The FIFO just made (no sandbox process exists yet to replace it).
            nix::sys::stat::fchmodat(
                &dir,
                name,
                mode,
                nix::sys::stat::FchmodatFlags::FollowSymlink,
            )?;
            let t = nix::sys::time::TimeSpec::new(e.mtime.0, e.mtime.1);
            nix::sys::stat::utimensat(
                &dir,
                name,
                &t,
                &t,
                nix::sys::stat::UtimensatFlags::NoFollowSymlink,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_round_trips_any_name_and_refuses_bad_lines() {
        let e = vec![
            Special {
                kind: Kind::Mode,
                path: b"/workspace/a b\n\xff".to_vec(),
                mode: 0o4755,
                uid: 0,
                gid: 0,
                mtime: (0, 0),
            },
            Special {
                kind: Kind::Fifo,
                path: b"/tmp/p".to_vec(),
                mode: 0o640,
                uid: 1000,
                gid: 1000,
                mtime: (1_700_000_000, 5),
            },
        ];
        assert_eq!(parse(&encode(&e)).unwrap(), e);
        for bad in [
            "mode 4755 0 0 0 0 2f2e2e2f6574632f736861646f77\n", // /../etc/shadow
            "mode 4755 0 0 0 0 6574632f78\n",                   // relative
            "mode 17777 0 0 0 0 2f78\n",                        // not a mode
            "chown 755 0 0 0 0 2f78\n",
            "mode 755 0 0 0 2f78\n",
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
        }
        assert_eq!(stored_mode(0o6777), 0o755);
        assert_eq!(stored_mode(0o1777), 0o755);
        assert_eq!(stored_mode(0o640), 0o640);
    }
}
