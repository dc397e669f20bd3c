//! Backend errors with stable machine codes.

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
    #[error("backend I/O error: {context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl BackendError {
    /// Stable code (seed 000 vocabulary) for this error.
    pub fn code(&self) -> &'static str {
        match self {
            BackendError::SandboxNotFound(_) => "sandbox_not_found",
            BackendError::ProcessNotFound(_) => "execution_not_found",
            BackendError::LaunchFailed(_) => "runtime_launch_failed",
            BackendError::Unavailable(_) => "backend_unavailable",
            BackendError::Io { .. } => "runtime_launch_failed",
            BackendError::FileNotFound(_) => "file_not_found",
            BackendError::NotARegularFile(_) => "invalid_argument",
            BackendError::PermissionDenied(_) => "permission_denied",
            BackendError::FileNotReadable(_) => "file_not_readable",
            BackendError::ImageUnsupported(_) => "image_unsupported",
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        BackendError::Io {
            context: context.into(),
            source,
        }
    }
}
