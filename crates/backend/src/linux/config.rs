//! Configuration handed from the server to `cleanroom __sandbox-init` on its command line.

use std::path::PathBuf;

/// Fd number on which init finds its control socket.
pub const CONTROL_FD: i32 = 3;

/// Everything pid 1 needs to build the sandbox. Paths are host paths.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct InitConfig {
    pub sandbox_id: String,
    pub hostname: String,
    /// Empty directory used as the mountpoint of the new root.
    pub root_dir: PathBuf,
    /// Writable directories bind-mounted into the sandbox.
    pub workspace_dir: PathBuf,
    pub tmp_dir: PathBuf,
    pub home_dir: PathBuf,
    /// Create a user namespace (needed when the server is not root).
    pub user_namespace: bool,
}

/// Where the writable host directories appear inside the sandbox.
pub const WORKSPACE_PATH: &str = "/workspace";
