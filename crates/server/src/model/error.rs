//! Engine errors: a stable machine code ([`ErrorCode`], defined once in `cleanroom-vocab`)
//! plus the Connect status class it travels in, taken from the code's one table
//! ([`ErrorCode::connect_class`]).

pub use cleanroom_vocab::ConnectClass as Class;
pub use cleanroom_vocab::ErrorCode;

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
    /// An error with `code`, in the Connect class the code's table gives.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        EngineError {
            class: code.connect_class(),
            code,
            message: message.into(),
            details: Vec::new(),
        }
    }
    /// The same error in another Connect class than its code's (the few codes whose class
    /// depends on where they arise: a file the sandbox's identity may not open is a
    /// precondition, not the caller's permission).
    pub fn in_class(mut self, class: Class) -> Self {
        self.class = class;
        self
    }
    pub fn with(mut self, key: &str, value: impl Into<String>) -> Self {
        self.details.push((key.to_string(), value.into()));
        self
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArgument, message)
    }
    pub fn sandbox_not_found(id: &str) -> Self {
        Self::new(
            ErrorCode::SandboxNotFound,
            format!("no sandbox with id {id:?}"),
        )
        .with("sandbox_id", id)
    }
    pub fn execution_not_found(id: &str) -> Self {
        Self::new(
            ErrorCode::ExecutionNotFound,
            format!("no execution with id {id:?}"),
        )
        .with("execution_id", id)
    }
    /// No valid credentials on a listener that requires them.
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unauthenticated, message)
    }
    /// Authenticated, but the principal's role may not do this.
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::PermissionDenied, message)
    }
    /// A server-side cap (sandboxes per principal or in total) is reached.
    pub fn resource_exhausted(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ResourceExhausted, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }
    pub fn unimplemented(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unimplemented, message)
    }
}

impl From<cleanroom_backend::BackendError> for EngineError {
    fn from(e: cleanroom_backend::BackendError) -> Self {
        let err = EngineError::new(e.code(), e.to_string());
        match e {
            // The sandbox's own identity may not open the file: a precondition of the
            // sandbox, not the caller's permission.
            cleanroom_backend::BackendError::PermissionDenied(_) => {
                err.in_class(Class::FailedPrecondition)
            }
            cleanroom_backend::BackendError::MissingCapability {
                runtime,
                capability,
            } => err
                .with("missing", capability.as_str())
                .with("backend", runtime),
            _ => err,
        }
    }
}

impl From<cleanroom_image::ImageError> for EngineError {
    fn from(e: cleanroom_image::ImageError) -> Self {
        EngineError::new(e.code(), e.to_string())
    }
}

impl From<cleanroom_policy::PolicyError> for EngineError {
    fn from(e: cleanroom_policy::PolicyError) -> Self {
        EngineError::new(e.code(), e.to_string())
    }
}
