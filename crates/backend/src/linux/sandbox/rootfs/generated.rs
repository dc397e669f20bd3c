//! The files the setup writes for the sandbox on its own tmpfs (`/run/cleanroom`) and
//! binds over the root's: the resolver configuration that names the egress gateway, and
//! the sandbox CA with a bundle that includes it. The root's own `/etc/resolv.conf` and CA
//! bundle are never written through.

use super::SetupError;
use crate::linux::sandbox::tree::{bind_onto, fd_path, is_regular, Entry, Tree};
use nix::mount::MsFlags;
use std::path::Path;

/// Largest system CA bundle taken over from a root (a real one is well under 1 MiB).
const MAX_BUNDLE: u64 = 8 << 20;

/// The sandbox's only resolver is the gateway: a generated `resolv.conf` (on the setup's own
/// tmpfs) is bound read-only over the root's. The root's `/etc` is found with its links
/// confined to the root; `resolv.conf` itself is never followed: in an image's
/// copy-on-write layer a link there is replaced by a file to bind over, in the host view a
/// host link into `/run` (systemd-resolved) gets its target written on the skeleton.
pub(super) fn point_dns_at_gateway(
    tree: &Tree,
    own: &Tree,
    gateway: std::net::Ipv4Addr,
) -> Result<(), SetupError> {
    const NAME: &str = "resolv.conf";
    let content = format!("# written by cleanroom: the egress gateway answers DNS\nnameserver {gateway}\noptions edns0\n");
    own.create_file(NAME, content.as_bytes(), 0o644)?;
    let ours = own.leaf(NAME)?;
    let etc = match tree.resolve("etc", true)? {
        Some(etc) => etc,
        // An image without /etc (`FROM scratch`) gets one in its copy-on-write layer.
        None if tree.cow() && tree.entry("etc")? == Entry::Missing => tree.dir("etc", 0o755)?,
        None => {
            return Err(SetupError::image(
                "/etc is not a directory inside the image: cannot point /etc/resolv.conf at the egress gateway",
            ))
        }
    };
    let entry = etc.entry(NAME)?;
    match entry {
        Entry::File => {}
        Entry::Missing | Entry::Symlink if tree.cow() => etc.create_file(NAME, b"", 0o644)?,
        Entry::Symlink => return host_resolv_link(tree, &etc, &content),
        Entry::Missing => {
            return Err("the host view has no /etc/resolv.conf to point at the egress gateway".into())
        }
        Entry::Dir | Entry::Other => {
            return Err(SetupError::image(
                "/etc/resolv.conf is a directory or special file: cannot point it at the egress gateway",
            ))
        }
    }
    bind_onto(
        tree.mounts(),
        &fd_path(&ours),
        || etc.leaf(NAME),
        MsFlags::MS_RDONLY | MsFlags::MS_NOEXEC,
    )?;
    Ok(())
}

/// Host view, `/etc/resolv.conf` a link of the host's: write the gateway config where it
/// points, which must be under `/run` (the view's own skeleton, never a host directory).
fn host_resolv_link(tree: &Tree, etc: &Tree, content: &str) -> Result<(), SetupError> {
    let target = nix::fcntl::readlinkat(etc.fd(), "resolv.conf")
        .map_err(|e| format!("readlink /etc/resolv.conf: {e}"))?;
    let target = Path::new("/etc").join(target);
    // Lexical: `..` pops a component (the link is the host's; nothing here is followed).
    let mut parts: Vec<String> = Vec::new();
    for c in target.components() {
        match c {
            std::path::Component::Normal(n) => parts.push(n.to_string_lossy().into_owned()),
            std::path::Component::ParentDir => {
                parts.pop();
            }
            _ => {}
        }
    }
    if parts.len() < 2 || parts[0] != "run" || parts[1] == "cleanroom" {
        return Err(format!(
            "/etc/resolv.conf points at {}, outside /run: cannot redirect DNS",
            target.display()
        )
        .into());
    }
    let name = parts.pop().unwrap_or_default();
    tree.dir(&parts.join("/"), 0o755)?
        .create_file(&name, content.as_bytes(), 0o644)?;
    Ok(())
}

/// The system CA bundle a root may carry (Debian, Ubuntu, Alpine and friends).
const SYSTEM_BUNDLE: &str = "etc/ssl/certs/ca-certificates.crt";

fn own_name(path: &'static str) -> &'static str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Make the sandbox trust one extra CA: written alone and as part of a full bundle on the
/// setup's own tmpfs (`/run/cleanroom`), and the bundle bound read-only over the root's
/// system bundle, so tools that read the default path trust it too. The root's bundle is
/// read and covered with its links confined to the root (an image's `…/ca-certificates.crt
/// -> ../../../pki/x` is the image's own file; a link to a host path finds nothing); the
/// host's and the cached image's files are never modified.
pub(super) fn install_ca(tree: &Tree, own: &Tree, pem: &str) -> Result<(), SetupError> {
    own.create_file(own_name(crate::SANDBOX_CA_PATH), pem.as_bytes(), 0o644)?;
    let system = tree
        .read_regular(SYSTEM_BUNDLE, MAX_BUNDLE + 1)?
        .filter(|b| b.len() as u64 <= MAX_BUNDLE);
    let mut bundle = system.clone().unwrap_or_default();
    if !bundle.is_empty() && !bundle.ends_with(b"\n") {
        bundle.push(b'\n');
    }
    bundle.extend_from_slice(pem.as_bytes());
    let combined = own_name(crate::SANDBOX_CA_BUNDLE);
    own.create_file(combined, &bundle, 0o644)?;
    if system.is_some() {
        let src = own.leaf(combined)?;
        bind_onto(
            tree.mounts(),
            &fd_path(&src),
            || match tree.resolve(SYSTEM_BUNDLE, false)? {
                Some(t) if is_regular(t.fd())? => t.fd().try_clone().map_err(|e| e.to_string()),
                _ => Err(format!("/{SYSTEM_BUNDLE} changed during setup")),
            },
            MsFlags::MS_RDONLY | MsFlags::MS_NOEXEC,
        )?;
    }
    Ok(())
}
