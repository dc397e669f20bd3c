//! Engine errors: a stable machine code ([`ErrorCode`], defined once in `cleanroom-vocab`)
//! plus the Connect status class it maps to.

pub use cleanroom_vocab::ErrorCode;

/// Connect status classes the API layer maps errors onto.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    InvalidArgument,
    NotFound,
    FailedPrecondition,
    ResourceExhausted,
    Unauthenticated,
    PermissionDenied,
    Unavailable,
    Internal,
    Unimplemented,
}

/// An error with a stable code (`sandbox_not_found`, `policy_invalid`, ...).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code}: {message}")]
pub struct EngineError {
    pub class: Class,
    pub code: ErrorCode,
    pub message: String,
    /// Extra structured context (ids, paths) for `ErrorDetail.details`.
    pub details: Vec<(String, String)>,
}

impl EngineError {
    pub fn new(class: Class, code: ErrorCode, message: impl Into<String>) -> Self {
        EngineError {
            class,
            code,
            message: message.into(),
            details: Vec::new(),
        }
    }
    pub fn with(mut self, key: &str, value: impl Into<String>) -> Self {
        self.details.push((key.to_string(), value.into()));
        self
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(Class::InvalidArgument, ErrorCode::InvalidArgument, message)
    }
    pub fn sandbox_not_found(id: &str) -> Self {
        Self::new(
            Class::NotFound,
            ErrorCode::SandboxNotFound,
            format!("no sandbox with id {id:?}"),
        )
        .with("sandbox_id", id)
    }
    pub fn execution_not_found(id: &str) -> Self {
        Self::new(
            Class::NotFound,
            ErrorCode::ExecutionNotFound,
            format!("no execution with id {id:?}"),
        )
        .with("execution_id", id)
    }
    /// No valid credentials on a listener that requires them.
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::new(Class::Unauthenticated, ErrorCode::Unauthenticated, message)
    }
    /// Authenticated, but the principal's role may not do this.
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Self::new(
            Class::PermissionDenied,
            ErrorCode::PermissionDenied,
            message,
        )
    }
    /// A server-side cap (sandboxes per principal or in total) is reached.
    pub fn resource_exhausted(message: impl Into<String>) -> Self {
        Self::new(
            Class::ResourceExhausted,
            ErrorCode::ResourceExhausted,
            message,
        )
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(Class::Internal, ErrorCode::Internal, message)
    }
    pub fn unimplemented(message: impl Into<String>) -> Self {
        Self::new(Class::Unimplemented, ErrorCode::Unimplemented, message)
    }
}

impl From<crate::store::StoreError> for EngineError {
    fn from(e: crate::store::StoreError) -> Self {
        EngineError::internal(e.to_string())
    }
}

impl From<cleanroom_backend::BackendError> for EngineError {
    fn from(e: cleanroom_backend::BackendError) -> Self {
        use cleanroom_backend::BackendError as B;
        let class = match &e {
            B::SandboxNotFound(_) | B::ProcessNotFound(_) | B::FileNotFound(_) => Class::NotFound,
            B::NotARegularFile(_) => Class::InvalidArgument,
            B::PermissionDenied(_) | B::FileNotReadable(_) | B::ImageUnsupported(_) => {
                Class::FailedPrecondition
            }
            B::Unavailable(_) => Class::Unavailable,
            B::FileExists(_) | B::FileTypeMismatch(_) | B::DirectoryNotEmpty(_) => {
                Class::FailedPrecondition
            }
            B::NoSpace(_) => Class::ResourceExhausted,
            B::InvalidFileRequest(_) | B::UnsafeArchiveEntry(_) => Class::InvalidArgument,
            B::LaunchFailed(_) | B::Io { .. } => Class::Internal,
        };
        EngineError::new(class, e.code(), e.to_string())
    }
}

impl From<cleanroom_image::ImageError> for EngineError {
    fn from(e: cleanroom_image::ImageError) -> Self {
        use cleanroom_image::ImageError as I;
        let class = match &e {
            I::InvalidReference(_) => Class::InvalidArgument,
            I::NotFound(_) | I::NotInRegistry(_) => Class::NotFound,
            I::RegistryUnavailable(_) => Class::Unavailable,
            I::DigestMismatch(_) | I::Unauthorized(_) | I::Unsupported(_) | I::UnsafeLayer(_) => {
                Class::FailedPrecondition
            }
            I::TooLarge(_) => Class::ResourceExhausted,
            I::Io(_) => Class::Internal,
        };
        EngineError::new(class, e.code(), e.to_string())
    }
}

impl From<cleanroom_policy::PolicyError> for EngineError {
    fn from(e: cleanroom_policy::PolicyError) -> Self {
        EngineError::new(Class::InvalidArgument, e.code(), e.to_string())
    }
}
