//! Capability keys (seed 004 vocabulary) of the backend handshake: a backend declares what
//! it enforces (`Backend::capabilities`), a compiled policy says what it needs
//! (`CompiledPolicy::required_capabilities`), and CreateSandbox fails closed with
//! `backend_capability_mismatch` when one is missing.

stable_codes! {
    /// One thing a backend can guarantee.
    pub enum Capability {
        /// A sandbox's policy never changes after creation.
        PolicyImmutability => "policy_immutability",
        /// With no allow rule, nothing leaves the sandbox.
        NetworkDefaultDeny => "network_default_deny",
        /// Traffic can leave the sandbox at all (through the gateway).
        NetworkEgress => "network_egress",
        /// Egress is filtered by host and port.
        NetworkHostPortFiltering => "network_host_port_filtering",
        /// Name resolution goes through the gateway (or an equivalent control).
        DnsControlOrEquivalent => "dns_control_or_equivalent",
        /// Decisions are reported as events.
        AuditEventEmission => "audit_event_emission",
        /// Secret values never enter the sandbox (placeholders only).
        SecretIsolation => "secret_isolation",
        PidIsolation => "pid_isolation",
        MountIsolation => "mount_isolation",
        /// Digest-pinned OCI image roots.
        OciImages => "oci_images",
        /// Freeze and thaw every process of a sandbox (cgroup freezer).
        PauseResume => "pause_resume",
        /// Capture a sandbox's writable filesystems into a snapshot and restore from one.
        FilesystemSnapshots => "filesystem_snapshots",
        /// Checkpoint running processes (memory, open files, pipes) and restore them.
        CheckpointRestore => "checkpoint_restore",
        /// Bind the server's named volumes into a sandbox (read-write or read-only, the
        /// sandbox's own ids on the volume).
        NamedVolumes => "named_volumes",
        /// The server can open a TCP connection to a port of the sandbox from inside its
        /// network namespace (`sandbox expose`, `port-forward`).
        InboundConnections => "inbound_connections",
    }
}

impl Capability {
    /// The stable keys of `caps`, in order (the form the backend trait and the API use).
    pub fn keys(caps: &[Capability]) -> Vec<&'static str> {
        caps.iter().map(|c| c.as_str()).collect()
    }
}
