//! Reading the server's private configuration files (`--secrets-file`, `--tokens-file`).
//!
//! Like ssh with private keys: a file other users can read is already leaked, and one owned
//! by another user could be swapped by them. Both are refused before a byte is read. The
//! checks run on the opened file (fstat), so the bytes read are the bytes checked.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use zeroize::Zeroizing;

/// Read `path` if it is a regular file, owned by the server's uid, with no group/other
/// permissions. The error is a message for the operator (never file contents).
pub fn read_private(path: &Path) -> Result<Zeroizing<String>, String> {
    let mut file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.mode() & 0o077 != 0 {
        return Err(format!(
            "mode {:o} lets other users read it; chmod 600 it",
            meta.mode() & 0o777
        ));
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(format!(
            "owned by uid {}, not by the server's uid {me}",
            meta.uid()
        ));
    }
    let mut text = Zeroizing::new(String::new());
    file.read_to_string(&mut text).map_err(|e| e.to_string())?;
    Ok(text)
}
