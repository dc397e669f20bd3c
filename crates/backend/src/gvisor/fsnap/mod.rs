//! Filesystem snapshots on the gVisor runtime. Every write of a gvisor sandbox lives in the
//! sentry's overlay (its filestore is sentry memory only the sentry can interpret), so the
//! linux runtime's capture — reading the overlay's upper layer from the host by descriptor
//! — has nothing to read. Instead the capture and the restore are carried out **inside**
//! the sandbox by the server's own binary, `runsc exec`'d with the sandbox's identity
//! (`cleanroom __gvisor-init snapshot capture|restore`, as the file helper is), and the
//! state moves as one archive over the helper's stdio:
//!
//! - capture ([`walk`]): the helper walks the sandbox's root and its `/tmp`, `/root`,
//!   `/workspace` without following a link or crossing into another mount (`/proc`,
//!   `/dev`, `/run/cleanroom`, the host view's directories, `/etc/resolv.conf`), and
//!   writes every entry the sandbox changed — its inode change time (which no process
//!   can set) at or after the sandbox started — plus, for every changed directory, its
//!   full list of names, so a deletion of an image file round-trips (the restore removes
//!   what the list does not name). Under `/tmp`, `/root`, `/workspace` everything is
//!   taken, as the linux runtime takes those tmpfs mounts whole.
//! - the server ([`host`]) stores the bytes as they come, never parsing them: sha256 while
//!   written, at most the capture's byte budget (the sandbox's disk limit plus its
//!   parent's size), then the usual content-addressed snapshot row.
//! - restore ([`apply`]): a new sandbox is made from the snapshot's image and policy, and
//!   before it is READY a helper inside it reads the archive from its stdin and applies it
//!   as the sandbox's uid 0 without capabilities — it can write only what that sandbox's
//!   own processes could, into the sandbox's own overlay (capped by its disk limit).
//!
//! The archive is what a sandbox produced (a process of the sandbox can ptrace the capture
//! helper and write anything on its stdout), so [`apply`] takes it as hostile: bounded
//! headers, names validated one component at a time (no `..`, `/`, NUL, empty), every
//! parent opened `O_NOFOLLOW` from the root, no device nodes, a missing end record fails
//! the restore. A capture is one archive of the whole changed state: a snapshot of a
//! restored sandbox holds everything again (no parent chain), like the linux runtime's
//! merged `/tmp`, `/root`, `/workspace`.

pub mod apply;
pub mod host;
pub mod walk;

use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

/// The word after `__gvisor-init` that selects this helper.
pub const SNAPSHOT_ARG: &str = "snapshot";
/// The archive's file name inside a snapshot's `layers` directory: its presence says the
/// snapshot was taken under gvisor (a linux capture writes `rootfs`, `tmp`, … instead).
pub const ARCHIVE_NAME: &str = "gvisor.snap";
/// First bytes of every archive (the format's version).
pub const MAGIC: &[u8; 16] = b"cleanroom-gvfs1\n";
/// Longest record header (a directory's list of names is the largest).
pub const MAX_HEADER: u32 = 16 << 20;
/// Most entries in one archive (the linux capture's bound).
pub const MAX_ENTRIES: u64 = 2_000_000;
/// Deepest path (components).
pub const MAX_DEPTH: usize = 256;
/// Most data extents of one file.
pub const MAX_EXTENTS: usize = 1 << 16;

/// A name or path as bytes, carried as hex so any name round-trips through JSON.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bytes(pub Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = String::with_capacity(self.0.len() * 2);
        for b in &self.0 {
            out.push_str(&format!("{b:02x}"));
        }
        s.serialize_str(&out)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        let s = String::deserialize(d)?;
        if s.len() % 2 != 0 {
            return Err(serde::de::Error::custom("odd hex length"));
        }
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(s.get(i..i + 2).unwrap_or("zz"), 16))
            .collect::<Result<Vec<u8>, _>>()
            .map(Bytes)
            .map_err(|_| serde::de::Error::custom("bad hex"))
    }
}

/// What every entry carries: the mode (permission and set-id bits), owner and mtime as the
/// sandbox saw them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub mtime_s: i64,
    pub mtime_ns: i64,
}

/// One record of the archive: a JSON header (`u32` little-endian length first), followed
/// for a file by the bytes of its extents in order. `path` is relative to `/`, components
/// joined by `/` (empty: the root directory itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Record {
    /// A changed directory and every name it holds (the restore removes any other).
    Dir {
        path: Bytes,
        meta: Meta,
        names: Vec<Bytes>,
    },
    /// A regular file: `size` bytes, data at `extents` (`(offset, length)`, ascending),
    /// holes elsewhere.
    File {
        path: Bytes,
        meta: Meta,
        size: u64,
        extents: Vec<(u64, u64)>,
    },
    /// Another name of a file recorded earlier in the archive (`target`).
    Link {
        path: Bytes,
        target: Bytes,
    },
    Symlink {
        path: Bytes,
        meta: Meta,
        target: Bytes,
    },
    Fifo {
        path: Bytes,
        meta: Meta,
    },
    /// The last record: how many came before. An archive without it is cut short.
    End {
        entries: u64,
    },
}

/// Write one record header.
pub fn write_header(out: &mut impl Write, record: &Record) -> std::io::Result<()> {
    let json = serde_json::to_vec(record).map_err(std::io::Error::other)?;
    let len = u32::try_from(json.len())
        .ok()
        .filter(|n| *n <= MAX_HEADER)
        .ok_or_else(|| std::io::Error::other("record header too large"))?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(&json)
}

/// Read one record header (bounded by [`MAX_HEADER`]).
pub fn read_header(input: &mut impl Read) -> Result<Record, String> {
    let mut len = [0u8; 4];
    input
        .read_exact(&mut len)
        .map_err(|e| format!("the archive is cut short: {e}"))?;
    let len = u32::from_le_bytes(len);
    if len > MAX_HEADER {
        return Err(format!(
            "a record header of {len} bytes (at most {MAX_HEADER})"
        ));
    }
    let mut json = vec![0u8; len as usize];
    input
        .read_exact(&mut json)
        .map_err(|e| format!("the archive is cut short: {e}"))?;
    serde_json::from_slice(&json).map_err(|e| format!("a malformed record: {e}"))
}

/// Why a helper refused, as one stable kind the server maps to its error vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refused {
    /// A name with `..`, `/`, NUL, an absolute or over-deep path, a device node.
    UnsafeEntry,
    /// The archive is malformed or cut short.
    Malformed,
    /// The sandbox's disk limit refused a write.
    NoSpace,
    /// The sandbox's own identity may not do this (e.g. give a file another owner).
    PermissionDenied,
    /// Any other failure.
    Failed,
}

/// The helper's one answer line on its stderr.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Answer {
    Done { entries: u64, bytes: u64 },
    Refused { kind: Refused, message: String },
}

impl Answer {
    fn refused(kind: Refused, message: impl Into<String>) -> Answer {
        Answer::Refused {
            kind,
            message: message.into(),
        }
    }
}

/// The mount points of the helper's view (relative to `/`, without `/` itself), from
/// `/proc/self/mountinfo` (read once, at most 4 MiB; octal escapes undone). gVisor's
/// overlay gives a file another `st_dev` than its directory, so a device change cannot
/// tell a mount from a file; the mount table can.
pub fn mount_points() -> Result<&'static std::collections::HashSet<Vec<u8>>, String> {
    static MOUNTS: std::sync::OnceLock<Result<std::collections::HashSet<Vec<u8>>, String>> =
        std::sync::OnceLock::new();
    MOUNTS
        .get_or_init(|| {
            let mut text = Vec::new();
            std::fs::File::open("/proc/self/mountinfo")
                .and_then(|f| f.take(4 << 20).read_to_end(&mut text))
                .map_err(|e| format!("read the mount table: {e}"))?;
            Ok(parse_mountinfo(&text))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The mount points (field 5) of a mountinfo text, relative, unescaped.
pub fn parse_mountinfo(text: &[u8]) -> std::collections::HashSet<Vec<u8>> {
    let mut out = std::collections::HashSet::new();
    for line in text.split(|b| *b == b'\n') {
        let Some(field) = line.split(|b| *b == b' ').nth(4) else {
            continue;
        };
        let mut p = Vec::with_capacity(field.len());
        let mut i = 0;
        while i < field.len() {
            let oct = field.get(i + 1..i + 4).and_then(|o| {
                std::str::from_utf8(o)
                    .ok()
                    .and_then(|o| u8::from_str_radix(o, 8).ok())
            });
            match (field[i], oct) {
                (b'\\', Some(b)) => {
                    p.push(b);
                    i += 4;
                }
                (b, _) => {
                    p.push(b);
                    i += 1;
                }
            }
        }
        let rel: Vec<u8> = p.iter().copied().skip_while(|b| *b == b'/').collect();
        if !rel.is_empty() {
            out.insert(rel);
        }
    }
    out
}

/// The writable directories (`/tmp`, `/root`, `/workspace`): mounts the archive holds.
pub fn is_scratch(path: &[u8]) -> bool {
    matches!(path, b"tmp" | b"root" | b"workspace")
}

/// Which runtime's capture a snapshot's `layers` directory holds.
pub fn runtime_of_layers(layers: &std::path::Path) -> crate::Runtime {
    if layers.join(ARCHIVE_NAME).is_file() {
        crate::Runtime::Gvisor
    } else {
        crate::Runtime::Linux
    }
}

/// Entry point inside the sandbox (`__gvisor-init snapshot capture SINCE_S SINCE_NS` or
/// `… snapshot restore`); the process's exit code.
pub fn main(args: &[String]) -> i32 {
    crate::linux::sys::ignore_sigpipe();
    nix::sys::stat::umask(nix::sys::stat::Mode::empty());
    let answer = match args {
        [what, s, ns] if what == "capture" => match (s.parse::<i64>(), ns.parse::<i64>()) {
            (Ok(s), Ok(ns)) => walk::capture((s, ns)),
            _ => Answer::refused(Refused::Malformed, "bad capture arguments"),
        },
        [what] if what == "restore" => apply::restore(),
        _ => Answer::refused(Refused::Malformed, "unknown snapshot request"),
    };
    if let Ok(mut line) = serde_json::to_vec(&answer) {
        line.push(b'\n');
        let _ = std::io::stderr().write_all(&line);
    }
    i32::from(!matches!(answer, Answer::Done { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_any_name() {
        let r = Record::Dir {
            path: Bytes(b"a/\x01\xff\n..x".to_vec()),
            meta: Meta {
                mode: 0o4755,
                uid: 1,
                gid: 2,
                mtime_s: -3,
                mtime_ns: 4,
            },
            names: vec![Bytes(b"\x00".to_vec())],
        };
        let mut buf = Vec::new();
        write_header(&mut buf, &r).unwrap();
        assert_eq!(read_header(&mut &buf[..]).unwrap(), r);
    }

    #[test]
    fn mount_points_are_read_unescaped() {
        let text = b"1 0 0:1 / / rw - overlay root rw\n\
            2 1 0:2 / /proc rw - proc proc rw\n\
            3 1 0:3 / /work\\040space/a\\134b rw - tmpfs t rw\n";
        let m = parse_mountinfo(text);
        assert!(m.contains(&b"proc"[..]));
        assert!(m.contains(&b"work space/a\\b"[..]));
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn oversized_cut_and_unknown_headers_are_refused() {
        let mut big = (MAX_HEADER + 1).to_le_bytes().to_vec();
        big.extend_from_slice(b"{}");
        assert!(read_header(&mut &big[..]).unwrap_err().contains("at most"));
        assert!(read_header(&mut &[5u8, 0, 0, 0, b'{'][..])
            .unwrap_err()
            .contains("cut short"));
        let mut odd = Vec::new();
        let j = br#"{"kind":"device","path":""}"#;
        odd.extend_from_slice(&(j.len() as u32).to_le_bytes());
        odd.extend_from_slice(j);
        assert!(read_header(&mut &odd[..])
            .unwrap_err()
            .contains("malformed"));
    }
}
