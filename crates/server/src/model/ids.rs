//! Prefixed, time-sortable identifiers (`sbx_…`, `exe_…`): UUIDv7 in lowercase hex, so
//! lexical order is creation order and the prefix says what the id names.

/// New sandbox id.
pub fn sandbox_id() -> String {
    format!("sbx_{}", uuid::Uuid::now_v7().simple())
}

/// New execution id.
pub fn execution_id() -> String {
    format!("exe_{}", uuid::Uuid::now_v7().simple())
}

/// New trace id (W3C trace-context size: 16 bytes hex).
pub fn trace_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Syntactic check so garbage never reaches the store or the file system.
pub fn looks_valid(id: &str, prefix: &str) -> bool {
    id.len() == prefix.len() + 32
        && id.starts_with(prefix)
        && id[prefix.len()..]
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
}
