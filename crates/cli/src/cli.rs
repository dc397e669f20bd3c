//! Command-line surface (clap). Kept free of logic so `--help` reads as the contract.

use crate::lazy::Lazy;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Cleanroom: run untrusted code in sandboxes with deny-by-default network egress.
#[derive(Debug, Parser)]
#[command(name = "cleanroom", version, propagate_version = true)]
pub struct Cli {
    /// Server endpoint: unix:///path.sock, http://host:port or https://host:port
    /// [default: $CLEANROOM_HOST, config control_host, /var/run/cleanroom/cleanroom.sock
    /// when present, else $XDG_RUNTIME_DIR/cleanroom/cleanroom.sock]
    #[arg(long, global = true, value_name = "URL")]
    pub host: Option<String>,
    /// Bearer token for http:// and https:// servers [default: $CLEANROOM_TOKEN, config
    /// `token`]. Prefer the environment or the config file: arguments are visible to
    /// other local users.
    #[arg(long, global = true, value_name = "TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// CA certificate (PEM) that verifies an https:// server instead of the system's
    /// roots [default: $CLEANROOM_CA_CERT, config `ca_cert`]
    #[arg(long, global = true, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
    /// Accept exactly the https:// server certificate whose DER has this sha256 (hex)
    /// instead of verifying a chain [default: $CLEANROOM_SERVER_CERT_SHA256, config
    /// `server_cert_sha256`]
    #[arg(long, global = true, value_name = "HEX", conflicts_with = "ca_cert")]
    pub server_cert_sha256: Option<String>,
    /// Output format of read commands (`-o json` = their `--json`)
    #[arg(short = 'o', long = "output", global = true, value_name = "FORMAT")]
    pub output: Option<crate::toplevel::OutputFormat>,
    /// Export OpenTelemetry traces over OTLP/HTTP (protobuf) to the collector at this base
    /// URL (spans go to URL/v1/traces): the command's own span, and for `serve` the API
    /// calls, engine and backend steps and egress decisions (docs/traces.md). Without it
    /// nothing is exported [env: OTEL_EXPORTER_OTLP_ENDPOINT]
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "OTEL_EXPORTER_OTLP_ENDPOINT",
        hide_env = true
    )]
    pub otlp_endpoint: Option<String>,

    #[command(subcommand)]
    pub command: Command,
}

/// `serve --egress-plane`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EgressPlane {
    Kernel,
    Tun,
}

impl From<EgressPlane> for cleanroom_backend::Plane {
    fn from(p: EgressPlane) -> Self {
        match p {
            EgressPlane::Kernel => cleanroom_backend::Plane::Kernel,
            EgressPlane::Tun => cleanroom_backend::Plane::Tun,
        }
    }
}

// One value per process, parsed once: the size of `serve`'s many flags costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the authoritative server (sandboxes, executions, durable output).
    Serve(Lazy<ServeArgs>),
    /// Create a sandbox from the repository policy, run a command in it, stream its
    /// output, return its exit code, and tear the sandbox down. With the policy's
    /// `repository` section the committed HEAD is checked out at repository.path and
    /// sandbox.dependencies.command runs there first.
    Exec(Lazy<ExecArgs>),
    /// Interactive terminal in a sandbox (PTY over QUIC): raw mode, window size follows,
    /// Ctrl-C/Ctrl-Z/Ctrl-D go to the guest, Ctrl-] detaches (the command keeps running;
    /// re-attach with --attach EXECUTION_ID). Returns the guest's exit code.
    Console(Lazy<crate::console::ConsoleArgs>),
    /// Create a sandbox from the repository policy (checkout and dependencies like
    /// `exec`), keep it, and print its id.
    Create(Lazy<crate::toplevel::CreateArgs>),
    /// Inspect any object by its id: sbx_… (sandbox), exe_… (execution).
    Inspect(Lazy<crate::toplevel::InspectArgs>),
    /// Browse the runs `exec`/`console` retained locally under
    /// $XDG_STATE_HOME/cleanroom/executions (command, status, exit code, output tails,
    /// trace id, server). No server needed, but a run recorded as running is checked with
    /// its server (else shown as unknown).
    Status(Lazy<crate::retained::StatusArgs>),
    /// Generic sandbox lifecycle (does not read cleanroom.yaml unless --policy is given).
    #[command(subcommand)]
    Sandbox(Lazy<SandboxCommand>),
    /// Inspect executions.
    #[command(subcommand)]
    Execution(Lazy<ExecutionCommand>),
    /// OCI images in the server's cache (pulled by digest, verified, unpacked once).
    #[command(subcommand)]
    Image(Lazy<ImageCommand>),
    /// Validate and show repository policy (cleanroom.yaml) as the server compiles it.
    #[command(subcommand)]
    Policy(Lazy<PolicyCommand>),
    /// Filesystem snapshots of sandboxes (restore with `--from snap_…`).
    #[command(subcommand)]
    Snapshot(Lazy<crate::snapshots::SnapshotCommand>),
    /// Memory checkpoints of sandboxes: processes, memory and files (take one with
    /// `sandbox checkpoint`, restore or fork with `sandbox create --from ckpt_…`).
    #[command(subcommand)]
    Checkpoint(Lazy<crate::checkpoints::CheckpointCommand>),
    /// Copy files and directories between the host and a sandbox (docker cp habits).
    Cp(Lazy<crate::cp::CpArgs>),
    /// Forward a local TCP port to a port of a sandbox (kubectl habits: [LOCAL:]REMOTE),
    /// each connection tunnelled through the server's API connection
    PortForward(Lazy<crate::portforward::PortForwardArgs>),
    /// Warm pools: READY sandboxes kept for a template and handed out at claim instead of created.
    #[command(subcommand)]
    Pool(Lazy<crate::pools::PoolCommand>),
    /// The server's attestation key, and offline verification of sandbox attestations.
    #[command(subcommand)]
    Attestation(Lazy<crate::attest::AttestationCommand>),
    /// Named volumes: size-capped filesystems you own, mounted into sandboxes with
    /// `--volume NAME:/PATH[:ro]` or the policy's `sandbox.volumes` (docs/volumes.md).
    #[command(subcommand)]
    Volume(Lazy<crate::volumes::VolumeCommand>),
    /// The cluster this server belongs to (`serve --cluster`; docs/cluster.md). Admins only.
    #[command(subcommand)]
    Cluster(Lazy<crate::cluster::ClusterCommand>),
    /// Drain a cluster member (no new sandboxes placed on it) or undrain it
    /// (docs/cluster.md). Admins only.
    #[command(subcommand)]
    Node(Lazy<crate::node::NodeCommand>),
    /// Print a one-time login link to the web console (docs/web.md).
    ///
    /// The server binds a single-use code, valid two minutes, to the principal it sees for
    /// this command (your unix user over the socket, your token's principal over http://)
    /// and this prints http(s)://<its console listener>/ui/login?code=…. The console has a
    /// listener of its own, `serve --ui-listen http://127.0.0.1:PORT`; a server without one
    /// says so (`unimplemented`, no_tcp_listener).
    Ui(Lazy<crate::ui::UiArgs>),
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Compile the policy; print its policy_hash or the error with its YAML path
    Check {
        /// Policy file [default: ./cleanroom.yaml]
        #[arg(default_value = "cleanroom.yaml")]
        file: PathBuf,
    },
    /// Print the compiled, canonical policy, its hash and required backend capabilities
    Show {
        /// Policy file [default: ./cleanroom.yaml]
        #[arg(default_value = "cleanroom.yaml")]
        file: PathBuf,
    },
    /// Print a minimal cleanroom.yaml allowing exactly the destinations a sandbox used
    /// (from its recorded egress events; asks the server)
    Suggest(crate::approve::SuggestArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Listen address: unix:///path.sock, http://host:port or https://host:port
    /// [default: /var/run/cleanroom/cleanroom.sock as root, else $XDG_RUNTIME_DIR/cleanroom/cleanroom.sock].
    /// A unix socket is mode 0600 (0660 with group `cleanroom` when it exists) and each
    /// caller is its uid; TCP needs --tokens-file or --client-ca. Every listener also
    /// serves the REST API (/v1/…, its OpenAPI document at /v1/openapi.json) and
    /// Prometheus metrics at /metrics (admins only), authenticated the same way.
    #[arg(long, value_name = "URL")]
    pub listen: Option<String>,
    /// The web console's own listener, http://host:port or https://host:port (with
    /// --tls-cert/--tls-key): the console under /ui/ and the API it calls, each request
    /// authenticated; a separate origin from --listen, which serves exposed sandbox ports
    /// and no console page. `cleanroom ui` prints a login link to it
    #[arg(long, value_name = "URL")]
    pub ui_listen: Option<String>,
    /// A listener serving only Prometheus metrics (/metrics), http://host:port or
    /// https://host:port (with --tls-cert/--tls-key); authenticated as on every listener
    /// (an admin's token or client certificate), so it can face a monitoring network
    /// without the API
    #[arg(long, value_name = "URL")]
    pub metrics_listen: Option<String>,
    /// Bearer tokens for TCP listeners: lines of `sha256:<hex sha256 of the token>
    /// <principal> <user|admin>`; mode 600, owned by the server's user
    #[arg(long, value_name = "FILE", env = "CLEANROOM_TOKENS_FILE")]
    pub tokens_file: Option<PathBuf>,
    /// TLS certificate chain (PEM) for an https:// listener
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM) for an https:// listener
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Accept client certificates signed by this CA (PEM) on https://; the principal is
    /// the certificate's first DNS/email SAN, else its CN (role user)
    #[arg(long, value_name = "FILE")]
    pub client_ca: Option<PathBuf>,
    /// Serve a TCP listener without authentication (every caller is admin). Refused
    /// unless the address is loopback. For local development only.
    #[arg(long)]
    pub insecure_no_auth: bool,
    /// Most live sandboxes one principal may have (0: unlimited)
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_sandboxes_per_principal: u32,
    /// Most live sandboxes on this server (0: unlimited)
    #[arg(long, value_name = "N", default_value_t = 512)]
    pub max_sandboxes: u32,
    /// Leave the host's cgroup2 mount options alone. By default a root server turns on
    /// cgroup2 `favordynmods` once (only that flag; Linux >= 6.0), so a sandbox joining its
    /// cgroups does not wait for an RCU grace period (~7-10 ms per create measured)
    #[arg(long)]
    pub keep_cgroup_options: bool,
    /// Runtime of sandboxes whose request and policy name none: linux (namespaces on the
    /// host kernel) or gvisor (gVisor's user-space kernel; needs runsc). The server refuses
    /// to start when the default is unavailable
    #[arg(long, value_name = "RUNTIME", value_parser = parse_runtime)]
    pub default_runtime: Option<cleanroom_client::Runtime>,
    /// Data plane of new sandboxes' egress (docs/network.md "Data planes"): kernel (a veth
    /// pair into a per-sandbox gateway namespace; the host kernel's TCP, transparent
    /// redirection into the gateway, plain-HTTP bodies spliced socket to socket) or tun (a
    /// userspace TCP/IP stack on a tun device). Every check is the same on both
    #[arg(long, value_enum, value_name = "PLANE", env = "CLEANROOM_EGRESS_PLANE", default_value_t = EgressPlane::Tun)]
    pub egress_plane: EgressPlane,
    /// The runsc binary of the gvisor runtime (default: runsc on PATH)
    #[arg(long, value_name = "PATH")]
    pub runsc: Option<PathBuf>,
    /// gVisor platform: systrap or ptrace (default: systrap where runsc has it, else
    /// ptrace; kvm is never used)
    #[arg(long, value_name = "PLATFORM", value_parser = parse_gvisor_platform)]
    pub gvisor_platform: Option<cleanroom_backend::gvisor::Platform>,
    /// Join a cluster coordinated through etcd: etcd=URL[,URL...] (docs/cluster.md). The
    /// server registers under a lease and does not start when etcd cannot be reached
    #[arg(long, value_name = "etcd=URL[,URL...]", requires_all = ["node_name", "advertise"])]
    pub cluster: Option<String>,
    /// This node's cluster identity: a directory from `cleanroom cluster issue` (node.crt,
    /// node.key, ca.crt). Members talk to each other only over mutual TLS with it; a
    /// missing or bad identity stops the start (cluster_identity_invalid)
    #[arg(long, value_name = "DIR", requires = "cluster")]
    pub cluster_tls: Option<PathBuf>,
    /// The member link: IP:PORT other members reach this host at (mutual TLS; calls for
    /// this host's sandboxes arrive here from the other members)
    #[arg(long, value_name = "IP:PORT", requires = "cluster")]
    pub cluster_listen: Option<String>,
    /// This host's name in the cluster: 1-63 of a-z 0-9 -, unique among live members
    #[arg(long, value_name = "NAME", requires = "cluster")]
    pub node_name: Option<String>,
    /// The URL other members and clients reach this host's API at (http(s)://HOST:PORT)
    #[arg(long, value_name = "URL", requires = "cluster")]
    pub advertise: Option<String>,
    /// Close API connections with no request in flight for this long
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    pub api_idle_timeout: u64,
    /// Close HTTP/1.1 API connections that do not send a request's headers within this
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub api_header_timeout: u64,
    /// Most authenticated API connections per listener; one principal may hold an eighth
    /// of them (admins: all). More are refused with resource_exhausted
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub api_max_connections: usize,
    /// Most TCP connections that have not authenticated yet (a budget separate from
    /// --api-max-connections); one peer address (IPv6: a /64) may hold an eighth. At the
    /// cap the oldest pending one (of that peer, else of the peer holding the most) is
    /// closed to admit the new one if it is at least 1 s old; else the new one is
    /// closed at once (docs/limits.md)
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub api_preauth_connections: usize,
    /// Close a TCP connection that has not sent an authenticated request within this
    /// long of connecting (TLS handshake included)
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub api_preauth_timeout: u64,
    /// Most open connections through one exposure (`sandbox expose`) or to one forwarded
    /// sandbox port (`port-forward`); more are refused with resource_exhausted
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub inbound_max_connections: usize,
    /// Serve each exposure (`sandbox expose`) at a host name of its own,
    /// `exp-<id>.DOMAIN`, on the API's TCP listener: every exposure its own browser
    /// origin (path routing under /_sandbox/ is then off). `localhost` needs no DNS
    /// (browsers resolve *.localhost to loopback); else point a wildcard record at this
    /// server. `:PORT` is the port URLs name (e.g. a reverse proxy's) [default: the
    /// listener's] (docs/network.md "Inbound")
    #[arg(long, value_name = "DOMAIN[:PORT]")]
    pub preview_domain: Option<String>,
    /// State directory (database, execution logs, sandbox dirs)
    /// [default: /var/lib/cleanroom as root, else $XDG_STATE_HOME/cleanroom]
    #[arg(long, value_name = "DIR", env = "CLEANROOM_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    /// Resolve HOST to these addresses for sandbox egress instead of the host's DNS
    /// (repeatable). Addresses given here are used as given — special-purpose ones and
    /// even this host's own — which names resolved through DNS never are.
    #[arg(long, value_name = "HOST=IP[,IP]")]
    pub egress_resolve: Vec<String>,
    /// Let sandbox egress use special-purpose DNS answers (private, CGNAT, link-local,
    /// documentation and other not globally reachable ranges) for names matching PATTERN:
    /// an exact name or `*.suffix` (repeatable), e.g. a package mirror on an internal
    /// network. This host's own addresses stay refused; pin those with --egress-resolve.
    #[arg(long, value_name = "PATTERN")]
    pub egress_trust_internal: Vec<String>,
    /// Registry (host:port) to reach over plain HTTP instead of HTTPS, e.g. a loopback
    /// test registry (repeatable)
    #[arg(long, value_name = "HOST:PORT")]
    pub insecure_registry: Vec<String>,
    /// JSON file of registry credentials: {"host[:port]": {"username": .., "password": ..}}
    /// (basic auth, also used for the Bearer token exchange); anonymous otherwise
    #[arg(long, value_name = "FILE", env = "CLEANROOM_REGISTRY_CREDENTIALS")]
    pub registry_credentials: Option<PathBuf>,
    /// Secret values for policies' `sandbox.secrets`: lines of ID=value, mode 600, owned
    /// by the server's user. CLEANROOM_SECRET_<ID> variables of the server's environment
    /// are read too. Sandboxes see only placeholders; the gateway injects the values.
    #[arg(long, value_name = "FILE", env = "CLEANROOM_SECRETS_FILE")]
    pub secrets_file: Option<PathBuf>,
    /// Also trust this CA (PEM) when the gateway verifies upstream TLS for secret-bound
    /// hosts, besides the system's roots (repeatable)
    #[arg(long, value_name = "FILE")]
    pub upstream_ca: Vec<PathBuf>,
    /// Registry host for `sandbox.registries` entries of KIND that name no `upstream:`
    /// (repeatable; KIND: npm or pypi), e.g. the public registry or a mirror. No built-in default.
    /// pypi: append `,files=HOST[:PORT]` for each host the index links its files on.
    #[arg(long, value_name = "KIND=HOST[:PORT][,files=HOST[:PORT]]")]
    pub registry_upstream: Vec<String>,
    /// Size cap of the package artifact cache shared by all sandboxes (LRU)
    #[arg(long, value_name = "MB", default_value_t = cleanroom_server::engine::registries::DEFAULT_CACHE_MB)]
    pub registry_cache_mb: u64,
    #[command(flatten)]
    pub quotas: QuotaArgs,
    #[command(flatten)]
    pub approvals: crate::approve::ServeApprovalArgs,
    /// Default sandbox TTL: terminate sandboxes this long after creation unless the request
    /// or the policy's `sandbox.lifetime.ttl_seconds` says otherwise (0: no TTL)
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub sandbox_ttl: u64,
    /// Default idle timeout: terminate sandboxes with no running execution and no API use
    /// for this long, unless the request or policy says otherwise (0: none)
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub sandbox_idle_timeout: u64,
    #[command(flatten)]
    pub console: crate::console::ConsoleServeArgs,
}

/// Server-wide caps on disk use by execution output and the image cache.
#[derive(Debug, Args)]
pub struct QuotaArgs {
    /// Stop retaining execution output when all output logs together reach this size
    /// (output is still streamed live); the retention GC also deletes the oldest logs of
    /// stopped sandboxes beyond it
    #[arg(long, value_name = "MIB", default_value_t = 10240)]
    pub output_log_max_mb: u64,
    /// Stop retaining execution output when the state directory's filesystem has less
    /// free space than this
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    pub output_log_min_free_mb: u64,
    /// Delete output logs of finished executions of stopped sandboxes older than this
    #[arg(long, value_name = "SECONDS", default_value_t = 7 * 24 * 3600)]
    pub output_log_max_age_secs: u64,
    /// How often the output retention GC runs
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub output_log_gc_interval_secs: u64,
    /// Largest size one image may unpack to (also caps its compressed download)
    #[arg(long, value_name = "MIB", default_value_t = 8192)]
    pub image_max_mb: u64,
    /// Most tar entries one image may have
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub image_max_entries: u64,
    /// Largest size of the whole image cache
    #[arg(long, value_name = "MIB", default_value_t = 32768)]
    pub image_cache_max_mb: u64,
}

#[derive(Debug, Subcommand)]
pub enum ImageCommand {
    /// Pull, verify and unpack an image: pinned by digest (host/repo@sha256:...), or a tag
    /// (host/repo:TAG), which the server resolves once to the digest its registry serves
    /// now; prints that pinned reference. Sandboxes only ever use digests: `--pin` writes
    /// the reference into the policy as `sandbox.image.ref`.
    Pull {
        #[arg(value_name = "REF")]
        reference: String,
        /// Write the pinned reference into the policy file as sandbox.image.ref (an edit of
        /// that line only; the rest of the file, comments included, is kept)
        #[arg(long)]
        pin: bool,
        /// Policy file --pin edits [default: ./cleanroom.yaml, created if absent]
        #[arg(long, value_name = "FILE", requires = "pin")]
        policy: Option<PathBuf>,
        /// Print JSON: {"reference", "digest", "pinned"} (pinned: the file written, or null)
        #[arg(long)]
        json: bool,
    },
    /// List cached images
    Ls {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Remove cached images (refused while a sandbox uses one)
    Rm {
        #[arg(required = true, value_name = "DIGEST")]
        digests: Vec<String>,
    },
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Reuse an existing sandbox (it stays READY afterwards)
    #[arg(long = "in", value_name = "SANDBOX_ID", conflicts_with = "volumes")]
    pub in_sandbox: Option<String>,
    /// Keep the sandbox this command creates (print its id on stderr)
    #[arg(long)]
    pub keep: bool,
    /// Close stdin immediately: the command sees EOF
    #[arg(short = 'n', long = "no-stdin")]
    pub no_stdin: bool,
    /// KEY inherits the local value; KEY=VALUE sets it explicitly (repeatable)
    #[arg(short = 'e', long = "env", value_name = "KEY[=VALUE]")]
    pub env: Vec<String>,
    /// Print the sandbox id on stderr before streaming begins
    #[arg(long)]
    pub print_sandbox_id: bool,
    /// Print the execution's trace_id on stderr after it succeeds
    #[arg(long)]
    pub print_trace_id: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Root the sandbox on this OCI image, pinned by digest (registry/repo@sha256:...);
    /// overrides the policy's sandbox.image.ref [default: the host's system dirs]
    #[arg(long, value_name = "REF")]
    pub image: Option<String>,
    /// Working directory inside the sandbox [default: the policy's repository.path, else /workspace]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// Copy this local directory's files (as they are, uncommitted and untracked ones
    /// included; links are copied as links) into the working directory before the command
    /// runs — for directories that are not a git repository or whose working tree you want
    #[arg(long, value_name = "DIR")]
    pub workdir_from: Option<PathBuf>,
    /// Kill the command (SIGTERM, then SIGKILL) after this many seconds
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u32>,
    /// Policy file [default: ./cleanroom.yaml when present, else the built-in deny-all policy]
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    #[command(flatten)]
    pub ask: crate::ask::ExecAskArgs,
    #[command(flatten)]
    pub volumes: crate::request::VolumeArgs,
    /// Create the sandbox from this snapshot (its policy, image, limits and files) or
    /// memory checkpoint (`ckpt_…`); cannot be combined with --in, --policy or --image
    #[arg(long, value_name = "SNAPSHOT_OR_CHECKPOINT_ID", conflicts_with_all = ["in_sandbox", "policy", "image"])]
    pub from: Option<String>,
    /// The command and its arguments
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Create a READY sandbox and print its id
    Create {
        /// Policy file (cleanroom.yaml v1); default is the built-in deny-all policy
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        /// Root the sandbox on this OCI image, pinned by digest (registry/repo@sha256:...)
        #[arg(long, value_name = "REF")]
        image: Option<String>,
        #[command(flatten)]
        limits: Box<LimitArgs>,
        #[command(flatten)]
        lifetime: crate::lifetime::LifetimeArgs,
        /// Restore this snapshot (its policy, image, limits and files) or memory checkpoint
        /// (`ckpt_…`: its processes and memory too); cannot be combined with --policy,
        /// --image or --dangerously-allow-all
        #[arg(long, value_name = "SNAPSHOT_OR_CHECKPOINT_ID", conflicts_with_all = ["policy", "image", "dangerously_allow_all"])]
        from: Option<String>,
        /// No egress filtering: the sandbox may reach any host and port (its policy is
        /// `sandbox.network.dangerously_allow_all: true`; secrets are still placeholders)
        #[arg(long, conflicts_with = "policy")]
        dangerously_allow_all: bool,
        /// Enable a Docker service in the guest. Refused with backend_capability_mismatch:
        /// the linux backend runs no daemons in sandboxes (a nested container runtime needs
        /// mounts and namespaces the sandbox's seccomp filter denies)
        #[arg(long)]
        docker: bool,
        /// Agent identity: ed25519 PUBLIC key (`ed25519:<base64>`, base64, or @FILE with a
        /// public-key PEM); a private key is refused locally and never sent
        #[arg(long, value_name = "KEY")]
        agent_key: Option<String>,
        /// Delegation chain, agent first towards the human (repeatable; same forms)
        #[arg(long, value_name = "KEY")]
        delegation: Vec<String>,
        /// Never take a READY sandbox from a matching warm pool
        #[arg(long)]
        no_pool: bool,
        /// Label the sandbox (repeatable); `sandbox ls --label` and `sandbox rm --label`
        /// select by it
        #[arg(long = "label", value_name = "KEY=VALUE", value_parser = crate::commands::labels::parse)]
        labels: Vec<(String, String)>,
        #[command(flatten)]
        volumes: crate::request::VolumeArgs,
    },
    /// List sandboxes
    Ls {
        /// Include STOPPED and FAILED sandboxes
        #[arg(short, long)]
        all: bool,
        /// Only sandboxes with this label (repeatable: all of them must match)
        #[arg(long = "label", value_name = "KEY=VALUE", value_parser = crate::commands::labels::parse)]
        labels: Vec<(String, String)>,
        /// Only sandboxes of this owner (uid:N or a principal name): admins name anyone,
        /// others only themselves (else permission_denied)
        #[arg(long, value_name = "PRINCIPAL")]
        owner: Option<String>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Show one sandbox (status, policy hash, last/active execution)
    Inspect {
        sandbox_id: String,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Print a sandbox's events, one JSON object per line: lifecycle, execution status and
    /// every egress decision (`egress.allow`/`egress.deny` with host, port, protocol and
    /// reason code; `egress.pending` with a request_id, `egress.decision`, `egress.learn`)
    Events {
        sandbox_id: String,
        /// Keep following new events until the sandbox stops
        #[arg(short, long)]
        follow: bool,
        /// Only events after this sequence number
        #[arg(long, value_name = "SEQ", default_value_t = 0)]
        after: u64,
    },
    /// Answer an egress approval request (`egress.pending` event): allow, or --deny
    Approve(crate::approve::ApproveArgs),
    /// List a sandbox's open egress approval requests and remembered answers
    Requests(crate::approve::RequestsArgs),
    /// Terminate sandboxes: kill every process, remove every mount and directory
    Rm {
        #[arg(required_unless_present_any = ["labels", "all"], conflicts_with_all = ["labels", "all"])]
        sandbox_ids: Vec<String>,
        /// Terminate your own live sandboxes that carry this label (repeatable: all of
        /// them must match); never another principal's, also for an admin
        #[arg(long = "label", value_name = "KEY=VALUE", value_parser = crate::commands::labels::parse)]
        labels: Vec<(String, String)>,
        /// Terminate all your own live sandboxes (never another principal's, also for an
        /// admin)
        #[arg(long, conflicts_with = "labels")]
        all: bool,
    },
    /// Change a running sandbox's egress rules: --allow HOST[:PORT], --deny HOST, --reset
    /// (--cut also ends established connections no longer allowed)
    Network(crate::network::NetworkArgs),
    /// Serve a port of the sandbox at a URL of this server (/_sandbox/<exposure>/…) with a
    /// signed, expiring token: HTTP/1.1, HTTP/2, WebSocket, server-sent events
    Expose(crate::inbound::ExposeArgs),
    /// Remove a sandbox's exposure (by port or exposure id): its URL stops working at once
    Unexpose(crate::inbound::UnexposeArgs),
    /// Extend (or shorten) a sandbox's TTL from now, or change its idle timeout
    Timeout(crate::lifetime::TimeoutArgs),
    /// Freeze every process of sandboxes (no CPU; executions refused with sandbox_paused)
    Pause(crate::snapshots::PauseArgs),
    /// Checkpoint a sandbox's memory, processes and files (gvisor runtime) and print the
    /// checkpoint id; restore (or fork) with `sandbox create --from ckpt_…`
    Checkpoint(crate::checkpoints::CheckpointArgs),
    /// Thaw paused sandboxes: their processes continue where they stopped
    Resume(crate::snapshots::PauseArgs),
    /// Write the sandbox's signed attestation (DSSE envelope JSON), made at create/claim;
    /// check it offline with `cleanroom attestation verify FILE --key PUB`
    Attest {
        sandbox_id: String,
        /// Write to this file instead of stdout
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

/// Resource limits; each overrides the policy's `sandbox.resources` and the server default.
#[derive(Debug, Args)]
pub struct LimitArgs {
    /// Memory limit in MiB
    #[arg(long, value_name = "MIB")]
    pub memory_mb: Option<u64>,
    /// Maximum number of processes
    #[arg(long, value_name = "N")]
    pub pids: Option<u64>,
    /// CPU time per second in milli-CPUs (1000 = one core)
    #[arg(long, value_name = "MILLIS")]
    pub cpu_millis: Option<u64>,
    /// Size cap of the writable directories (/tmp, /root, /workspace together) in MiB
    #[arg(long, value_name = "MIB")]
    pub disk_mb: Option<u64>,
    /// Output (stdout + stderr) the server retains for the sandbox's executions, in MiB;
    /// beyond it output is streamed live but not kept (default 1024)
    #[arg(long, value_name = "MIB")]
    pub output_mb: Option<u64>,
    /// Isolation runtime: linux (namespaces on the host kernel) or gvisor (gVisor's
    /// user-space kernel in between); wins over the policy's `sandbox.runtime`
    /// [default: the policy's, else the server's --default-runtime]. A runtime the server
    /// lacks is refused (runtime_unavailable), never replaced
    #[arg(long, value_name = "RUNTIME", value_parser = parse_runtime)]
    pub runtime: Option<cleanroom_client::Runtime>,
}

impl LimitArgs {
    /// `--runtime` as the API's `runtime` field (empty: not asked for).
    pub fn runtime_wire(&self) -> String {
        self.runtime
            .map(|r| r.as_str().to_string())
            .unwrap_or_default()
    }
}

#[derive(Debug, Subcommand)]
pub enum ExecutionCommand {
    /// Canonical execution view: status, exit code, message, retained output tail
    Inspect {
        /// Execution id (exe_...)
        #[arg(required_unless_present = "last")]
        execution_id: Option<String>,
        /// Sandbox the execution belongs to
        #[arg(long, value_name = "SANDBOX_ID")]
        sandbox_id: Option<String>,
        /// Inspect the sandbox's last execution (needs --sandbox-id)
        #[arg(long, requires = "sandbox_id")]
        last: bool,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Replay an execution's output (from the start or --since-seq); -f follows it to the
    /// end and exits with its exit code (re-attach after `exec` detached)
    Logs(crate::logs::LogsArgs),
}

/// `--runtime` / `--default-runtime`: `linux` or `gvisor`.
pub fn parse_runtime(s: &str) -> Result<cleanroom_client::Runtime, String> {
    s.parse()
        .map_err(|_| format!("{s:?} is not a runtime (linux, gvisor)"))
}

fn parse_gvisor_platform(s: &str) -> Result<cleanroom_backend::gvisor::Platform, String> {
    s.parse()
}
