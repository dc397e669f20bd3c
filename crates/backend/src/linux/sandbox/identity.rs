//! Host identifiers a sandbox has no need for, replaced by per-sandbox values.
//!
//! A host's `/etc/machine-id` and the kernel's `boot_id` are stable identifiers of the
//! machine and of its current boot: code in a sandbox could use them to recognise the host
//! across sandboxes or to correlate tenants. Each sandbox gets fresh random values instead
//! (the format programs expect: 32 hex digits; a UUID), bound read-only over the originals.
//!
//! Runs in pid 1 *after* `pivot_root`, so every path here resolves inside the sandbox's
//! own tree; nothing of the host is reachable. The replacement files are made on the
//! sandbox's private `/dev` tmpfs and unlinked once bound (the mount keeps the inode).

use nix::mount::{mount, MsFlags};
use std::io::Read;
use std::path::Path;

/// Scratch names on the sandbox's `/dev` tmpfs (unlinked right after use).
const SCRATCH: &str = "/dev/.cleanroom-identity";

fn random_bytes<const N: usize>() -> Result<[u8; N], String> {
    let mut b = [0u8; N];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| format!("read /dev/urandom: {e}"))?;
    Ok(b)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A random version-4 UUID, as `/proc/sys/kernel/random/boot_id` prints it.
fn uuid_v4() -> Result<String, String> {
    let mut b = random_bytes::<16>()?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex(&b);
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    ))
}

/// Bind a read-only file holding `content` over `target` (which must exist).
fn replace(target: &str, content: &str) -> Result<(), String> {
    let scratch = format!("{SCRATCH}-{}", hex(&random_bytes::<8>()?));
    std::fs::write(&scratch, content).map_err(|e| format!("write {scratch}: {e}"))?;
    let bound = mount(
        Some(scratch.as_str()),
        target,
        None::<&str>,
        MsFlags::MS_BIND,
        None::<&str>,
    )
    .and_then(|()| {
        mount(
            None::<&str>,
            target,
            None::<&str>,
            MsFlags::MS_BIND
                | MsFlags::MS_REMOUNT
                | MsFlags::MS_RDONLY
                | MsFlags::MS_NOSUID
                | MsFlags::MS_NODEV
                | MsFlags::MS_NOEXEC,
            None::<&str>,
        )
    });
    let _ = std::fs::remove_file(&scratch);
    bound.map_err(|e| format!("mask {target}: {e}"))
}

/// Replace the host's boot id and (for a host-view root) machine id. Each step must
/// succeed: a sandbox that would show the host's identifiers is not started.
pub fn mask_host_identity(host_view: bool) -> Result<(), String> {
    replace(
        "/proc/sys/kernel/random/boot_id",
        &format!("{}\n", uuid_v4()?),
    )?;
    // An image brings its own /etc (its machine-id, if any, is the image author's, not
    // the host's); the host view shows the host's /etc read-only.
    if host_view && Path::new("/etc/machine-id").exists() {
        replace(
            "/etc/machine-id",
            &format!("{}\n", hex(&random_bytes::<16>()?)),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn uuid_has_the_boot_id_shape() {
        let u = super::uuid_v4().unwrap();
        let parts: Vec<&str> = u.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'), "{u}");
    }
}
