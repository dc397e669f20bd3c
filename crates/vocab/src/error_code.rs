//! Error codes: the stable `code` of `cleanroom.v1.ErrorDetail` and of the CLI's
//! `cleanroom: error [<code>]: …` lines.

stable_codes! {
    /// Every stable error code. The server puts one in each `ErrorDetail`; the client
    /// decodes it; the CLI prints it. The variants after `Internal` are produced on the
    /// client side only (never in an `ErrorDetail`). The table in `docs/reference/codes.md`
    /// ("Error codes") lists exactly these.
    pub enum ErrorCode {
        /// No valid credentials on a listener that requires them.
        Unauthenticated => "unauthenticated",
        /// The principal may not do this, or the sandbox's own identity may not open a file.
        PermissionDenied => "permission_denied",
        /// A server-side cap (sandboxes per principal or in total) is reached.
        ResourceExhausted => "resource_exhausted",
        SandboxNotFound => "sandbox_not_found",
        ExecutionNotFound => "execution_not_found",
        InvalidArgument => "invalid_argument",
        /// The policy (or an image reference) does not validate.
        PolicyInvalid => "policy_invalid",
        /// The policy contradicts itself (an allow a deny covers, a secret for a host that is
        /// not allowed, ...).
        PolicyConflict => "policy_conflict",
        SandboxNotReady => "sandbox_not_ready",
        StdinNotAttached => "stdin_not_attached",
        StdinClosed => "stdin_closed",
        /// The backend lacks a capability the sandbox needs (fail closed).
        BackendCapabilityMismatch => "backend_capability_mismatch",
        RuntimeLaunchFailed => "runtime_launch_failed",
        BackendUnavailable => "backend_unavailable",
        /// The requested isolation runtime does not exist on this server (e.g. `gvisor`
        /// without `runsc`): refused, never run on another runtime instead.
        RuntimeUnavailable => "runtime_unavailable",
        /// The policy names a secret the server has no value for.
        SecretUnavailable => "secret_unavailable",
        FileNotFound => "file_not_found",
        FileNotReadable => "file_not_readable",
        ImageNotFound => "image_not_found",
        ImageDigestMismatch => "image_digest_mismatch",
        RegistryUnavailable => "registry_unavailable",
        RegistryUnauthorized => "registry_unauthorized",
        ImageUnsupported => "image_unsupported",
        ImageLayerUnsafe => "image_layer_unsafe",
        ImageInUse => "image_in_use",
        ImageTooLarge => "image_too_large",
        /// The retention GC deleted the output a stream asked for.
        OutputExpired => "output_expired",
        /// The sandbox is paused (frozen): resume it before running or reading anything.
        SandboxPaused => "sandbox_paused",
        /// No such snapshot, or not the caller's.
        SnapshotNotFound => "snapshot_not_found",
        /// A live sandbox uses the snapshot as its lower layer.
        SnapshotInUse => "snapshot_in_use",
        // ---- warm pools and attestation (issue 11) ----------------------------------
        /// No such warm pool (or not the caller's).
        PoolNotFound => "pool_not_found",
        /// The pool has no READY sandbox to hand out right now.
        NoReadySandboxes => "no_ready_sandboxes",
        /// The sandbox has no attestation (created before attestation existed).
        AttestationNotFound => "attestation_not_found",
        Unimplemented => "unimplemented",
        Internal => "internal",
        /// No such pending egress approval request in the sandbox (never asked, already
        /// decided, or timed out).
        ApprovalNotFound => "approval_not_found",
        // ---- client side only ------------------------------------------------------
        /// The client could not reach the server.
        ServerUnreachable => "server_unreachable",
        /// An output stream ended without an exit status.
        StreamEnded => "stream_ended",
        /// `cleanroom serve` could not start.
        ServerStartFailed => "server_start_failed",
        /// `cleanroom serve`'s authentication configuration is unusable.
        AuthConfigInvalid => "auth_config_invalid",
        /// The repository checkout could not be read.
        RepositoryUnavailable => "repository_unavailable",
        /// The repository checkout could not be placed in the sandbox.
        RepositoryCheckoutFailed => "repository_checkout_failed",
        /// The policy's `sandbox.dependencies.command` failed.
        DependenciesFailed => "dependencies_failed",
        // ---- server side again (appended: the order above is not a classification) ----
        /// The request's deadline (`connect-timeout-ms`, `grpc-timeout`) passed.
        DeadlineExceeded => "deadline_exceeded",
        /// The request was canceled before it completed.
        Canceled => "canceled",
        /// The server cannot serve the request right now (shutting down, overloaded).
        Unavailable => "unavailable",
        /// `AttachExecution` on an execution created without a terminal.
        ExecutionNotInteractive => "execution_not_interactive",
        // ---- files API (server side; see `is_client_side`) -------------------------
        /// Something is already at the path (mkdir of a file, an upload with
        /// `no_overwrite`).
        FileExists => "file_exists",
        /// A directory where a file was expected, or the reverse.
        FileTypeMismatch => "file_type_mismatch",
        /// A non-recursive remove of a directory that has entries.
        DirectoryNotEmpty => "directory_not_empty",
        /// No such upload (finished, cancelled, expired, or not the caller's).
        UploadNotFound => "upload_not_found",
        /// A chunk's offset is not where the upload stands (`details["offset"]` says where).
        UploadOffsetMismatch => "upload_offset_mismatch",
        /// An attestation file is malformed (not a signed statement of this format).
        AttestationInvalid => "attestation_invalid",
        /// An attestation's signature does not verify with the given public key.
        AttestationSignatureInvalid => "attestation_signature_invalid",
        /// An attestation verified but its validity ended (`valid_until` is past).
        AttestationExpired => "attestation_expired",
        /// An attestation verified but its `created_at` is ahead of the verifier's clock by
        /// more than the allowed skew (it claims to be signed in the future).
        AttestationNotYetValid => "attestation_not_yet_valid",
        // ---- files: archives are hostile data (docs/files.md) ------------------------
        /// An archive entry named with `..` or an absolute name (or a hard link to one, or,
        /// on download, outside the archived directory): refused with its name, never
        /// rewritten or skipped. The server answers it for tar uploads; `cp` and the SDKs
        /// for downloads.
        UnsafeArchiveEntry => "unsafe_archive_entry",
        /// A download found a symbolic link where the destination (or a directory beneath
        /// it) would be: refused, never followed.
        DestinationIsLink => "destination_is_link",
        // ---- client side: the CLI's own (one home for every code the CLI prints) ------
        /// A warning, not a failure: the repository checkout has uncommitted changes, which
        /// are not copied into the sandbox (only what is committed at HEAD is).
        RepositoryDirty => "repository_dirty",
        /// `exec --workdir-from DIR`: the directory could not be read or its copy could not
        /// be placed in the sandbox; the workload did not run.
        WorkdirCopyFailed => "workdir_copy_failed",
        // ---- client side: the SDKs' --------------------------------------------------
        /// An SDK call was given an option name it does not know (a misspelling, a unit
        /// suffix that does not exist): refused, never ignored.
        UnknownOption => "unknown_option",
        // ---- named volumes (issue 31) -------------------------------------------------
        /// No such volume, or not the caller's (no existence oracle).
        VolumeNotFound => "volume_not_found",
        /// The caller already has a volume of that name.
        VolumeExists => "volume_exists",
        /// `volume rm` of a volume a live sandbox mounts.
        VolumeInUse => "volume_in_use",
        /// The mount conflicts with a live sandbox's: a volume is mounted read-write into at
        /// most one live sandbox, and never read-write beside read-only mounts.
        VolumeBusy => "volume_busy",
        /// A `--volume`/`sandbox.volumes` mount is malformed: bad name, a path that is not
        /// absolute and normalized, a system path, or two mounts on one path.
        VolumeMountInvalid => "volume_mount_invalid",
        // ---- cluster (issue 34) -------------------------------------------------------
        /// The cluster's etcd cannot be reached (or lost its quorum): fail closed.
        ClusterUnavailable => "cluster_unavailable",
        /// Another live member holds this `--node-name`.
        NodeNameTaken => "node_name_taken",
        /// A cluster call on a server that was not started with `--cluster`.
        ClusterDisabled => "cluster_disabled",
        /// The cluster identity (`--cluster-tls DIR`, `cluster issue --ca DIR`) is missing,
        /// unreadable, readable by others, for another node, or not from the cluster CA.
        ClusterIdentityInvalid => "cluster_identity_invalid",
        /// The sandbox's host left the cluster without a goodbye (its lease expired): the
        /// sandbox is `LOST`; nothing can reach it until the host comes back.
        HostLost => "host_lost",
        // ---- memory checkpoints (issue 33) --------------------------------------------
        /// No such checkpoint, or not the caller's (no existence oracle).
        CheckpointNotFound => "checkpoint_not_found",
        /// A checkpoint's stored files do not match its manifest (a changed, swapped,
        /// missing or extra file): refused before the runtime reads any of it.
        CheckpointCorrupt => "checkpoint_corrupt",
        /// A checkpoint made by another runtime version (or runtime) than this server's.
        CheckpointIncompatible => "checkpoint_incompatible",
        /// The runtime refused to save the sandbox in its current state (gVisor: a TCP
        /// connection, even one closed within the last minute); the sandbox is unchanged.
        CheckpointRefused => "checkpoint_refused",
        // ---- inbound: preview URLs and port-forward (issue 35) -------------------------
        /// No such exposure (port of a sandbox served by `sandbox expose`), or not the
        /// caller's (no existence oracle).
        ExposureNotFound => "exposure_not_found",
        /// A correctly signed exposure token whose expiry has passed.
        ExposureExpired => "exposure_expired",
        /// A correctly signed exposure token whose exposure was removed (`sandbox unexpose`).
        ExposureRevoked => "exposure_revoked",
        /// Nothing accepts connections on the sandbox's exposed or forwarded port.
        SandboxPortClosed => "sandbox_port_closed",
    }
}

impl ErrorCode {
    /// Codes only the client produces; the server never sends them.
    pub fn is_client_side(self) -> bool {
        matches!(
            self,
            ErrorCode::ServerUnreachable
                | ErrorCode::StreamEnded
                | ErrorCode::ServerStartFailed
                | ErrorCode::AuthConfigInvalid
                | ErrorCode::RepositoryUnavailable
                | ErrorCode::RepositoryCheckoutFailed
                | ErrorCode::DependenciesFailed
                | ErrorCode::AttestationInvalid
                | ErrorCode::AttestationSignatureInvalid
                | ErrorCode::AttestationExpired
                | ErrorCode::AttestationNotYetValid
                | ErrorCode::DestinationIsLink
                | ErrorCode::RepositoryDirty
                | ErrorCode::WorkdirCopyFailed
                | ErrorCode::UnknownOption
        )
    }
}

/// The Connect error class a code travels in (the `code` of a Connect error; the stable
/// code itself is in its `ErrorDetail`). Defined here, beside the codes, so that the class
/// of a code is chosen once rather than at each place an error is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectClass {
    InvalidArgument,
    NotFound,
    FailedPrecondition,
    ResourceExhausted,
    Unauthenticated,
    PermissionDenied,
    Unavailable,
    Internal,
    Unimplemented,
    DeadlineExceeded,
    Canceled,
}

impl ErrorCode {
    /// The Connect class of this code: one exhaustive table (a new code must pick one).
    /// Client-side codes never travel; theirs say what a server would have used.
    pub const fn connect_class(self) -> ConnectClass {
        use ConnectClass as K;
        use ErrorCode as E;
        match self {
            E::Unauthenticated => K::Unauthenticated,
            E::PermissionDenied => K::PermissionDenied,
            E::ResourceExhausted => K::ResourceExhausted,
            E::SandboxNotFound => K::NotFound,
            E::ExecutionNotFound => K::NotFound,
            E::InvalidArgument => K::InvalidArgument,
            E::PolicyInvalid => K::InvalidArgument,
            E::PolicyConflict => K::InvalidArgument,
            E::SandboxNotReady => K::FailedPrecondition,
            E::StdinNotAttached => K::FailedPrecondition,
            E::StdinClosed => K::FailedPrecondition,
            E::BackendCapabilityMismatch => K::FailedPrecondition,
            E::RuntimeLaunchFailed => K::Internal,
            E::BackendUnavailable => K::Unavailable,
            E::RuntimeUnavailable => K::Unavailable,
            E::SecretUnavailable => K::FailedPrecondition,
            E::FileNotFound => K::NotFound,
            E::FileNotReadable => K::FailedPrecondition,
            E::ImageNotFound => K::NotFound,
            E::ImageDigestMismatch => K::FailedPrecondition,
            E::RegistryUnavailable => K::Unavailable,
            E::RegistryUnauthorized => K::FailedPrecondition,
            E::ImageUnsupported => K::FailedPrecondition,
            E::ImageLayerUnsafe => K::FailedPrecondition,
            E::ImageInUse => K::FailedPrecondition,
            E::ImageTooLarge => K::ResourceExhausted,
            E::OutputExpired => K::FailedPrecondition,
            E::SandboxPaused => K::FailedPrecondition,
            E::SnapshotNotFound => K::NotFound,
            E::SnapshotInUse => K::FailedPrecondition,
            E::PoolNotFound => K::NotFound,
            E::NoReadySandboxes => K::Unavailable,
            E::AttestationNotFound => K::NotFound,
            E::Unimplemented => K::Unimplemented,
            E::Internal => K::Internal,
            E::ApprovalNotFound => K::NotFound,
            E::ServerUnreachable => K::Unavailable,
            E::StreamEnded => K::Internal,
            E::ServerStartFailed => K::Internal,
            E::AuthConfigInvalid => K::InvalidArgument,
            E::RepositoryUnavailable => K::FailedPrecondition,
            E::RepositoryCheckoutFailed => K::FailedPrecondition,
            E::DependenciesFailed => K::FailedPrecondition,
            E::DeadlineExceeded => K::DeadlineExceeded,
            E::Canceled => K::Canceled,
            E::Unavailable => K::Unavailable,
            E::ExecutionNotInteractive => K::FailedPrecondition,
            E::FileExists => K::FailedPrecondition,
            E::FileTypeMismatch => K::FailedPrecondition,
            E::DirectoryNotEmpty => K::FailedPrecondition,
            E::UploadNotFound => K::NotFound,
            E::UploadOffsetMismatch => K::FailedPrecondition,
            E::AttestationInvalid => K::InvalidArgument,
            E::AttestationSignatureInvalid => K::FailedPrecondition,
            E::AttestationExpired => K::FailedPrecondition,
            E::AttestationNotYetValid => K::FailedPrecondition,
            E::UnsafeArchiveEntry => K::InvalidArgument,
            E::DestinationIsLink => K::FailedPrecondition,
            E::RepositoryDirty => K::FailedPrecondition,
            E::WorkdirCopyFailed => K::FailedPrecondition,
            E::UnknownOption => K::InvalidArgument,
            E::VolumeNotFound => K::NotFound,
            E::VolumeExists => K::FailedPrecondition,
            E::VolumeInUse => K::FailedPrecondition,
            E::VolumeBusy => K::FailedPrecondition,
            E::VolumeMountInvalid => K::InvalidArgument,
            E::ClusterUnavailable => K::Unavailable,
            E::NodeNameTaken => K::FailedPrecondition,
            E::ClusterDisabled => K::FailedPrecondition,
            E::ClusterIdentityInvalid => K::FailedPrecondition,
            E::HostLost => K::Unavailable,
            E::CheckpointNotFound => K::NotFound,
            E::CheckpointCorrupt => K::FailedPrecondition,
            E::CheckpointIncompatible => K::FailedPrecondition,
            E::CheckpointRefused => K::FailedPrecondition,
            E::ExposureNotFound => K::NotFound,
            E::ExposureExpired => K::Unauthenticated,
            E::ExposureRevoked => K::Unauthenticated,
            E::SandboxPortClosed => K::Unavailable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for c in ErrorCode::ALL {
            assert!(seen.insert(c.as_str()), "duplicate {c}");
            assert_eq!(c.as_str().parse::<ErrorCode>(), Ok(*c));
            assert_eq!(c.to_string(), c.as_str());
            assert!(c
                .as_str()
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_'));
        }
        assert!("nope".parse::<ErrorCode>().is_err());
        assert!(ErrorCode::StreamEnded.is_client_side());
        assert!(ErrorCode::RepositoryDirty.is_client_side());
        assert!(!ErrorCode::Internal.is_client_side());
        assert!(!ErrorCode::DeadlineExceeded.is_client_side());
        assert!(!ErrorCode::UploadOffsetMismatch.is_client_side());
    }

    #[test]
    fn connect_classes_follow_the_code_names() {
        for c in ErrorCode::ALL {
            let class = c.connect_class();
            if c.as_str().ends_with("_not_found") {
                assert_eq!(class, ConnectClass::NotFound, "{c}");
            }
            if c.as_str().ends_with("_unavailable")
                && *c != ErrorCode::SecretUnavailable
                && !c.is_client_side()
            {
                assert_eq!(class, ConnectClass::Unavailable, "{c}");
            }
        }
        assert_eq!(
            ErrorCode::PolicyInvalid.connect_class(),
            ConnectClass::InvalidArgument
        );
        assert_eq!(
            ErrorCode::NoReadySandboxes.connect_class(),
            ConnectClass::Unavailable
        );
    }
}
