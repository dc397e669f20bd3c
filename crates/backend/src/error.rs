//! Backend errors with stable machine codes.

use cleanroom_vocab::ErrorCode;

/// Errors a backend reports. `code()` is the stable string surfaced to API clients.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("sandbox {0} is not running on this backend")]
    SandboxNotFound(String),
    #[error("process {0} is not known in this sandbox")]
    ProcessNotFound(u64),
    #[error("sandbox launch failed: {0}")]
    LaunchFailed(String),
    #[error("backend unavailable: {0}")]
    Unavailable(String),
    /// The sandbox's runtime does not declare a capability the call needs.
    #[error("runtime {runtime:?} does not declare {capability}")]
    MissingCapability {
        runtime: &'static str,
        capability: cleanroom_vocab::Capability,
    },
    /// The requested runtime does not exist on this server (`runtime_unavailable`).
    #[error("{0}")]
    RuntimeUnavailable(String),
    #[error("{0}")]
    FileNotFound(String),
    #[error("{0}")]
    NotARegularFile(String),
    /// The sandbox's own identity may not open the file.
    #[error("{0}")]
    PermissionDenied(String),
    /// A file the API does not serve (kernel pseudo filesystem, link loop) or a file
    /// request that could not complete in time.
    #[error("{0}")]
    FileNotReadable(String),
    /// The image's layout cannot be used safely as a sandbox root.
    #[error("{0}")]
    ImageUnsupported(String),
    /// Something is already at the path.
    #[error("{0}")]
    FileExists(String),
    /// A directory where a file was expected, or the reverse.
    #[error("{0}")]
    FileTypeMismatch(String),
    #[error("{0}")]
    DirectoryNotEmpty(String),
    /// The sandbox's disk limit refused a write.
    #[error("{0}")]
    NoSpace(String),
    /// A malformed file request (relative path, `..`, a bad archive).
    #[error("{0}")]
    InvalidFileRequest(String),
    /// An uploaded archive's entry named with `..` or absolutely.
    #[error("{0}")]
    UnsafeArchiveEntry(String),
    /// The runtime refused to save the sandbox in its current state (it runs on as it was).
    #[error("{0}")]
    CheckpointRefused(String),
    /// Nothing accepts connections on a sandbox's port (an inbound connection).
    #[error("{0}")]
    PortClosed(String),
    #[error("backend I/O error: {context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl BackendError {
    /// Stable code (seed 000 vocabulary) for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            BackendError::SandboxNotFound(_) => ErrorCode::SandboxNotFound,
            BackendError::ProcessNotFound(_) => ErrorCode::ExecutionNotFound,
            BackendError::LaunchFailed(_) => ErrorCode::RuntimeLaunchFailed,
            BackendError::Unavailable(_) => ErrorCode::BackendUnavailable,
            BackendError::RuntimeUnavailable(_) => ErrorCode::RuntimeUnavailable,
            BackendError::MissingCapability { .. } => ErrorCode::BackendCapabilityMismatch,
            BackendError::Io { .. } => ErrorCode::RuntimeLaunchFailed,
            BackendError::FileNotFound(_) => ErrorCode::FileNotFound,
            BackendError::NotARegularFile(_) => ErrorCode::InvalidArgument,
            BackendError::PermissionDenied(_) => ErrorCode::PermissionDenied,
            BackendError::FileNotReadable(_) => ErrorCode::FileNotReadable,
            BackendError::ImageUnsupported(_) => ErrorCode::ImageUnsupported,
            BackendError::FileExists(_) => ErrorCode::FileExists,
            BackendError::FileTypeMismatch(_) => ErrorCode::FileTypeMismatch,
            BackendError::DirectoryNotEmpty(_) => ErrorCode::DirectoryNotEmpty,
            BackendError::NoSpace(_) => ErrorCode::ResourceExhausted,
            BackendError::InvalidFileRequest(_) => ErrorCode::InvalidArgument,
            BackendError::UnsafeArchiveEntry(_) => ErrorCode::UnsafeArchiveEntry,
            BackendError::CheckpointRefused(_) => ErrorCode::CheckpointRefused,
            BackendError::PortClosed(_) => ErrorCode::SandboxPortClosed,
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        BackendError::Io {
            context: context.into(),
            source,
        }
    }
}
