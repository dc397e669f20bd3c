//! Plain data exchanged between the server and a backend.

use std::collections::BTreeMap;
use std::path::PathBuf;
use tokio::net::unix::pipe;
use tokio::sync::oneshot;

/// What the server asks a backend to build.
#[derive(Debug, Clone)]
pub struct SandboxSpec {
    pub sandbox_id: String,
    /// The isolation runtime to build it on (see [`crate::runtimes::Runtimes`]).
    pub runtime: crate::Runtime,
    /// Hostname seen inside the sandbox.
    pub hostname: String,
    pub limits: Limits,
    /// What the sandbox's network namespace gets besides `lo`.
    pub network: NetworkSpec,
    /// Root the sandbox on this image instead of the host view.
    pub image: Option<ImageRoot>,
    /// A CA certificate (PEM) the sandbox must trust besides its root's own: the egress
    /// gateway's per-sandbox CA, used to terminate TLS to secret-bound hosts. Installed at
    /// [`SANDBOX_CA_PATH`], and appended to the sandbox's system bundle
    /// ([`SANDBOX_CA_BUNDLE`], also bound over `/etc/ssl/certs/ca-certificates.crt`).
    pub trusted_ca_pem: Option<String>,
    /// Restore a filesystem snapshot: a directory written by [`crate::Backend::capture_filesystem`]
    /// (`rootfs`, `tmp`, `root`, `workspace`), used read-only as the shared lower layer of
    /// the matching writable filesystems (a fresh private upper each).
    pub restore: Option<PathBuf>,
    /// Restore a memory checkpoint instead of starting fresh: a directory written by
    /// [`crate::Backend::checkpoint`] (verified by the caller), whose processes, memory and
    /// writable filesystems the new sandbox continues from. The rest of the spec must be
    /// the checkpointed sandbox's (same image, limits and mounts); identity, network and
    /// CA are the new sandbox's own.
    pub checkpoint: Option<PathBuf>,
    /// Named volumes to bind into the sandbox (the backend must declare
    /// [`crate::Capability::NamedVolumes`]; the server never sends any otherwise).
    pub volumes: Vec<VolumeBind>,
    /// Made for one command whose end ends it (`RunExecution` with `terminate_on_exit`):
    /// a runtime may start the sandbox with that command as its first process instead of
    /// an idle one (gvisor: one runsc invocation instead of two, `gvisor/oneshot.rs`). Any
    /// other use of the sandbox must behave as without it.
    pub one_shot: bool,
}

/// One named volume bound into a sandbox.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VolumeBind {
    /// Host directory where the server mounted the volume's filesystem (server-private;
    /// its ids on disk are the sandbox's own, shifted per sandbox with an idmapped mount).
    pub source: PathBuf,
    /// Absolute, normalized guest path (checked by `cleanroom_policy::volumes`).
    pub guest_path: String,
    pub read_only: bool,
}

/// How [`crate::Backend::suspend`] left an idle sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Suspension {
    /// Frozen with its memory kept (why it could not be released, for the event).
    Frozen { memory_kept: String },
    /// Its memory, processes and files saved to the server's disk and the runtime's
    /// processes gone: it holds no memory until resumed (`image_bytes` written).
    Released { image_bytes: u64 },
}

/// What a filesystem capture wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaptureStats {
    /// Entries captured (files, directories, links, whiteouts).
    pub files: u64,
    /// Bytes of file content (apparent sizes; a file with several links once).
    pub bytes: u64,
    /// Bytes the copy allocated on the host (data blocks and directories, 4 KiB
    /// granularity; holes and repeated links cost nothing), never more than the budget.
    pub allocated_bytes: u64,
    /// sha256 (hex) over the canonical manifest: every path, type, mode, owner, link
    /// target and content hash, in order.
    pub manifest_digest: String,
}

/// Where a sandbox finds its extra CA certificate alone (for `NODE_EXTRA_CA_CERTS`).
pub const SANDBOX_CA_PATH: &str = "/run/cleanroom/sandbox-ca.crt";
/// The sandbox's full CA bundle: its root's system CAs plus the extra CA
/// (for `SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`, `CURL_CA_BUNDLE`, `GIT_SSL_CAINFO`).
pub const SANDBOX_CA_BUNDLE: &str = "/run/cleanroom/ca-bundle.crt";
/// The writable working directory of a sandbox (host-backed, `disk_bytes`-capped), and
/// the default working directory of its executions.
pub const WORKSPACE_PATH: &str = "/workspace";

/// Where things are inside a sandbox, as its backend lays it out. The server asks the
/// backend ([`crate::Backend::guest_layout`]) instead of hard-coding guest paths, so a
/// backend with another layout (a microVM image, say) needs no server change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuestLayout {
    /// Default working directory of executions ([`WORKSPACE_PATH`] for the Linux backend).
    pub workspace: &'static str,
    /// The extra CA certificate alone ([`SANDBOX_CA_PATH`]).
    pub ca_path: &'static str,
    /// The full CA bundle ([`SANDBOX_CA_BUNDLE`]).
    pub ca_bundle: &'static str,
}

impl GuestLayout {
    /// The layout of the Linux backend, and the default of every backend.
    pub const STANDARD: GuestLayout = GuestLayout {
        workspace: WORKSPACE_PATH,
        ca_path: SANDBOX_CA_PATH,
        ca_bundle: SANDBOX_CA_BUNDLE,
    };
}

/// An unpacked OCI image to use as a sandbox's (read-only, shared) lower layer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ImageRoot {
    /// Host directory holding the unpacked image, owned by host ids 0..65535 that stand
    /// for the sandbox's own ids (shifted per sandbox with an idmapped mount).
    pub rootfs: PathBuf,
    /// `sha256:<hex>`, shown in `sandbox inspect`.
    pub digest: String,
}

/// The sandbox's network attachment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum NetworkSpec {
    /// Only `lo`: nothing can leave, and nothing is observed.
    LoopbackOnly,
    /// A tun device as the default route; the backend hands its fd back in
    /// [`ProvisionedSandbox::network_device`] for the egress gateway to serve.
    Tun(TunConfig),
}

/// Addressing of the sandbox's link to its gateway (chosen by the server, which runs the
/// gateway on the other end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TunConfig {
    /// The sandbox's own address.
    pub guest: std::net::Ipv4Addr,
    /// The gateway's address (DNS server, proxy) and the default route's next hop.
    pub gateway: std::net::Ipv4Addr,
    pub mtu: u16,
    /// Which data plane carries the sandbox's packets to the gateway.
    #[serde(default)]
    pub plane: Plane,
}

/// The egress data plane of one sandbox (docs/network.md, "Data planes").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Plane {
    /// A tun device whose packets the gateway's userspace TCP/IP stack serves.
    #[default]
    Tun,
    /// A veth pair into a gateway network namespace whose nftables table hands every TCP
    /// connection to the gateway's transparent listener (the host kernel's TCP).
    Kernel,
}

impl Plane {
    /// The name `serve --egress-plane` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Plane::Tun => "tun",
            Plane::Kernel => "kernel",
        }
    }
}

/// The host end of a sandbox's network link. Shared so the provision record stays
/// cloneable; whoever serves it dups the fds.
#[derive(Debug, Clone)]
pub enum NetworkDevice {
    /// The tun device's fd.
    Tun(std::sync::Arc<std::os::fd::OwnedFd>),
    /// The sockets of the sandbox's gateway namespace.
    Kernel(std::sync::Arc<GatewaySockets>),
}

/// The sockets made inside a sandbox's gateway network namespace ([`Plane::Kernel`]); the
/// namespace, its veth end and its nftables table live as long as one of them is open.
#[derive(Debug)]
pub struct GatewaySockets {
    /// TCP listener with `IP_TRANSPARENT`: every TCP connection the sandbox opens, its
    /// local address the destination the sandbox asked for. Non-blocking.
    pub listener: std::os::fd::OwnedFd,
    /// UDP socket on the gateway's address, port 53. Non-blocking.
    pub dns: std::os::fd::OwnedFd,
    /// NFLOG socket bound to the table's log group: one message per refused packet.
    /// Non-blocking.
    pub log: std::os::fd::OwnedFd,
}

/// Resource limits of one sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Limits {
    pub memory_bytes: u64,
    pub pids: u64,
    /// CPU time per wall second, in milli-CPUs (1000 = one full core).
    pub cpu_millis: u64,
    /// Size cap of the writable directories (/tmp, /workspace, /root) together.
    pub disk_bytes: u64,
    /// Output (stdout + stderr) the server retains for all of the sandbox's executions
    /// together. Enforced by the server's output log, not by the backend.
    #[serde(default = "default_output_bytes")]
    pub output_bytes: u64,
}

fn default_output_bytes() -> u64 {
    1 << 30
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 2 << 30,
            pids: 1024,
            cpu_millis: 2000,
            disk_bytes: 1 << 30,
            output_bytes: default_output_bytes(),
        }
    }
}

/// What a backend reports once a sandbox is ready; persisted so a restarted server can
/// reconcile it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ProvisionedSandbox {
    pub sandbox_id: String,
    /// Host directory holding the sandbox's private state (workspace, tmp, root mountpoint).
    pub state_dir: PathBuf,
    /// Host pid of the sandbox's pid 1 plus its start time (guards against pid reuse).
    pub init_pid: i32,
    pub init_start_time: u64,
    /// Facts worth showing in `sandbox inspect` (namespaces, root mode, ...).
    pub info: BTreeMap<String, String>,
    /// Host end of the sandbox's network device, when [`NetworkSpec::Tun`] was asked for.
    /// Lives only in memory: after a restart the sandbox is gone anyway.
    #[serde(skip)]
    pub network_device: Option<NetworkDevice>,
}

/// One process to run inside a sandbox.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    pub argv: Vec<String>,
    /// Complete environment (the server merges defaults, policy and request env).
    pub env: Vec<(String, String)>,
    /// Working directory inside the sandbox.
    pub cwd: String,
    /// When true the process gets a pipe on stdin; otherwise `/dev/null` (EOF at once).
    pub stdin: bool,
    /// Run on a pseudo-terminal of this size instead of pipes (interactive executions):
    /// the terminal becomes the controlling terminal of the process's own session, and
    /// its master end comes back in [`ProcessHandle::pty`].
    pub tty: Option<TtySize>,
}

/// A terminal window size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TtySize {
    pub cols: u16,
    pub rows: u16,
}

/// Backend-local process identifier (unique within a sandbox).
pub type ProcessId = u64;

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExitStatus {
    /// Exit code when the process exited normally.
    pub code: Option<i32>,
    /// Signal number when it was killed by a signal.
    pub signal: Option<i32>,
    /// The sandbox's memory limit triggered the OOM killer while this process ran.
    #[serde(default)]
    pub oom_killed: bool,
}

impl ExitStatus {
    /// Shell convention: the exit code, or 128 + signal for a signalled process.
    pub fn shell_code(&self) -> i32 {
        match (self.code, self.signal) {
            (Some(c), _) => c,
            (None, Some(s)) => 128 + s,
            (None, None) => 255,
        }
    }
}

/// A running process: its stdio pipes and a future for its exit.
#[derive(Debug)]
pub struct ProcessHandle {
    pub id: ProcessId,
    pub stdin: Option<pipe::Sender>,
    pub stdout: pipe::Receiver,
    pub stderr: pipe::Receiver,
    /// Master end of the process's terminal when [`ProcessSpec::tty`] was asked for (then
    /// `stdout`/`stderr` are at EOF at once: all output comes through the terminal).
    pub pty: Option<std::os::fd::OwnedFd>,
    /// Resolves when the process has exited; `Err` means the sandbox itself died.
    pub exit: oneshot::Receiver<ExitStatus>,
}

/// What a file RPC opens a sandbox file for. The file is always opened with the sandbox's
/// own identity (no confused deputy); only `Read` is served. Uploads do not use `Write`:
/// they go through [`crate::files::FileOp`] so that the sandbox's helper writes the bytes
/// itself (tmpfs pages are charged to the writer's memory cgroup — the sandbox's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpenMode {
    Read,
    Write { create: bool, truncate: bool },
}

/// A file read out of a sandbox.
#[derive(Debug, Clone)]
pub struct FileContent {
    pub content: Vec<u8>,
    /// Full size of the file.
    pub size: u64,
    /// `content` stops at the requested maximum.
    pub truncated: bool,
}

/// What the store remembers of a sandbox that may still have resources on the host.
#[derive(Debug, Clone)]
pub struct ReconcileRecord {
    pub sandbox_id: String,
    pub provisioned: Option<ProvisionedSandbox>,
}

/// What reconciliation did.
#[derive(Debug, Default, Clone)]
pub struct ReconcileReport {
    pub killed_sandboxes: Vec<String>,
    pub removed_dirs: Vec<PathBuf>,
}

/// A live sandbox's resource usage, read from the kernel when asked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    /// CPU time of every process of the sandbox (user + system), microseconds.
    pub cpu_usec: u64,
    /// Memory charged to the sandbox now and its peak (0 when the kernel does not say).
    pub memory_bytes: u64,
    pub memory_peak_bytes: u64,
    /// Tasks in the sandbox now.
    pub pids: u64,
    /// Writable filesystems, by guest path.
    pub filesystems: Vec<FsUsage>,
}

/// One writable filesystem of a sandbox.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FsUsage {
    pub path: String,
    pub used_bytes: u64,
    pub size_bytes: u64,
}
