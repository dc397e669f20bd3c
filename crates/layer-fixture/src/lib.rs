//! OCI layers for tests, written entry by entry: the one tar/gzip layer builder shared by
//! the image crate's unit tests (hostile entries against a real directory) and the
//! end-to-end harness (`cleanroom-e2e`: images pushed to a real registry). Names and link
//! targets are written as raw header bytes, so a test can hand the code under test exactly
//! the `..`, absolute or overlong paths an attacker would. Test-only: a dev-dependency.

use sha2::{Digest, Sha256};
use std::io::Write;

/// `sha256:<hex>` of `data`, as OCI digests are written.
pub fn sha256(data: &[u8]) -> String {
    let d = Sha256::digest(data);
    format!(
        "sha256:{}",
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// Layer builder: a tar written entry by entry, with raw name and link bytes (`..`,
/// absolute paths and hostile link targets are written as given).
pub struct Layer(tar::Builder<Vec<u8>>);

impl Default for Layer {
    fn default() -> Self {
        Layer(tar::Builder::new(Vec::new()))
    }
}

impl Layer {
    pub fn new() -> Layer {
        Layer::default()
    }
    fn header(path: &str, kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_mode(mode);
        h.set_size(size);
        h.set_uid(0);
        h.set_gid(0);
        h.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
        h
    }
    pub fn dir(mut self, path: &str) -> Layer {
        let mut h = Self::header(path, tar::EntryType::Directory, 0o755, 0);
        h.set_cksum();
        self.0.append(&h, &[][..]).unwrap();
        self
    }
    pub fn file(mut self, path: &str, body: &[u8], mode: u32) -> Layer {
        let mut h = Self::header(path, tar::EntryType::Regular, mode, body.len() as u64);
        h.set_cksum();
        self.0.append(&h, body).unwrap();
        self
    }
    /// A regular file owned by `uid:uid` (ids as the sandbox sees them).
    pub fn owned_file(mut self, path: &str, body: &[u8], mode: u32, uid: u64) -> Layer {
        let mut h = Self::header(path, tar::EntryType::Regular, mode, body.len() as u64);
        h.set_uid(uid);
        h.set_gid(uid);
        h.set_cksum();
        self.0.append(&h, body).unwrap();
        self
    }
    pub fn symlink(self, path: &str, target: &str) -> Layer {
        self.special(path, tar::EntryType::Symlink, target)
    }
    /// An entry of any `kind` (links, devices, FIFOs) with raw name and link bytes.
    pub fn special(mut self, path: &str, kind: tar::EntryType, link: &str) -> Layer {
        let mut h = Self::header(path, kind, 0o777, 0);
        h.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
        h.set_cksum();
        self.0.append(&h, &[][..]).unwrap();
        self
    }
    /// An entry whose header the caller built (e.g. a GNU sparse header).
    pub fn entry(mut self, header: &tar::Header, body: &[u8]) -> Layer {
        self.0.append(header, body).unwrap();
        self
    }
    /// The uncompressed tar.
    pub fn tar(self) -> Vec<u8> {
        self.0.into_inner().unwrap()
    }
    /// The tar, gzip-compressed (what a registry serves as an OCI layer).
    pub fn gz(self) -> Vec<u8> {
        let data = self.tar();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&data).unwrap();
        gz.finish().unwrap()
    }
}
