//! Configuration handed from the server to `cleanroom __sandbox-init` over its control socket.

use std::path::PathBuf;

/// Paths (inside the sandbox) that stay writable (landlock, `sandbox::harden`; reported in
/// the sandbox's info by the server).
pub const WRITABLE: &[&str] = &["/tmp", "/workspace", "/root", "/dev"];

/// Fd number on which init finds its control socket.
pub const CONTROL_FD: i32 = 3;

/// Everything pid 1 needs to build the sandbox. Paths are host paths.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct InitConfig {
    pub sandbox_id: String,
    pub hostname: String,
    /// Empty directory used as the mountpoint of the new root.
    pub root_dir: PathBuf,
    /// Size cap of each writable tmpfs (/tmp, /workspace, /root).
    pub disk_bytes: u64,
    /// cgroup directories the shim joins before creating pid 1.
    pub cgroups: Vec<PathBuf>,
    /// Create a user namespace (needed when the server is not root).
    pub user_namespace: bool,
    /// Host id range the sandbox's ids 0..count map to (root server: a private range per
    /// sandbox, written by the server). `None` with `user_namespace` maps only the
    /// server's own uid/gid to 0 (unprivileged server).
    pub id_range: Option<IdRange>,
    /// Create a tun device as the default route and hand its fd back with `Ready`.
    #[serde(default)]
    pub tun: Option<crate::TunConfig>,
    /// Unpacked image to use as the read-only lower layer of an overlay root (host path).
    /// With `id_range` the server hands pid 1 an idmapped mount of it instead (the sandbox
    /// cannot reach the path itself).
    #[serde(default)]
    pub image_rootfs: Option<PathBuf>,
    /// Extra CA certificate (PEM) to install and trust inside the sandbox.
    #[serde(default)]
    pub trusted_ca_pem: Option<String>,
    /// A filesystem snapshot's layers (host path; see [`crate::SandboxSpec::restore`]).
    /// With `id_range` the server hands pid 1 an idmapped mount of it after the image's.
    #[serde(default)]
    pub restore: Option<PathBuf>,
    /// Named volumes (host mountpoints the server made). The server hands pid 1 an
    /// idmapped mount of each (after the image's and the snapshot's), which it attaches at
    /// the guest path inside the new root.
    #[serde(default)]
    pub volumes: Vec<crate::VolumeBind>,
}

/// A block of host uids/gids owned by one sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IdRange {
    pub host_base: u32,
    pub count: u32,
}

/// Where the writable host directories appear inside the sandbox (defined with the rest
/// of the guest layout in [`crate::types`]).
pub use crate::types::WORKSPACE_PATH;
