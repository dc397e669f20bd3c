//! Secret values, held by the server only.
//!
//! A repository's policy names secrets and binds them to hosts; it never holds a value.
//! Values come from the operator: a secrets file (`serve --secrets-file`, lines of
//! `ID=value` (surrounding whitespace trimmed), readable by the server's user only) and/or the server's environment
//! (`CLEANROOM_SECRET_<ID>=value`). They are loaded once at startup, kept in memory that is
//! zeroed on drop, and handed only to egress gateways — never to a sandbox, a response,
//! an event or a log. Error messages name ids and line numbers, never values.

use std::collections::BTreeMap;
use std::path::Path;
use zeroize::Zeroizing;

/// Environment variable prefix for secrets given through the server's environment.
pub const ENV_PREFIX: &str = "CLEANROOM_SECRET_";
/// Shortest accepted value: the gateway masks values in responses, and masking a very
/// short string would mangle unrelated bytes (and such a value is no secret anyway).
pub const MIN_VALUE_LEN: usize = 8;

/// Why the secrets could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error("secrets file {path}: {msg}")]
    File { path: String, msg: String },
    #[error("secret {id} ({source_name}): {msg}")]
    Value {
        id: String,
        source_name: String,
        msg: String,
    },
}

/// Secret id -> value.
#[derive(Default)]
pub struct SecretStore {
    values: BTreeMap<String, Zeroizing<String>>,
}

impl std::fmt::Debug for SecretStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretStore")
            .field("ids", &self.values.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Values go into HTTP header values: printable ASCII only, no line breaks.
fn check_value(value: &str) -> Result<(), String> {
    if value.len() < MIN_VALUE_LEN {
        return Err(format!("shorter than {MIN_VALUE_LEN} bytes"));
    }
    if !value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err("only printable ASCII is allowed (it is sent in an HTTP header)".into());
    }
    Ok(())
}

impl SecretStore {
    /// Load from an optional file and an environment (pass `std::env::vars()`).
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<SecretStore, SecretsError> {
        let mut store = SecretStore::default();
        if let Some(path) = file {
            store.load_file(path)?;
        }
        for (k, v) in env {
            let Some(id) = k.strip_prefix(ENV_PREFIX) else {
                continue;
            };
            let source = format!("environment variable {k}");
            store.insert(id, Zeroizing::new(v), &source)?;
        }
        Ok(store)
    }

    fn insert(
        &mut self,
        id: &str,
        value: Zeroizing<String>,
        source: &str,
    ) -> Result<(), SecretsError> {
        let fail = |msg: String| SecretsError::Value {
            id: id.to_string(),
            source_name: source.to_string(),
            msg,
        };
        if !valid_id(id) {
            return Err(fail("ids are [A-Za-z_][A-Za-z0-9_]*".into()));
        }
        check_value(&value).map_err(fail)?;
        if self.values.contains_key(id) {
            return Err(fail("defined more than once".into()));
        }
        self.values.insert(id.to_string(), value);
        Ok(())
    }

    fn load_file(&mut self, path: &Path) -> Result<(), SecretsError> {
        let display = path.display().to_string();
        let fail = |msg: String| SecretsError::File {
            path: display.clone(),
            msg,
        };
        let text = crate::identity::private_file::read_private(path).map_err(fail)?;
        for (n, line) in text.lines().enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let Some((id, value)) = line.split_once('=') else {
                return Err(fail(format!("line {}: expected ID=value", n + 1)));
            };
            let source = format!("{display} line {}", n + 1);
            self.insert(id.trim(), Zeroizing::new(value.trim().to_string()), &source)?;
        }
        Ok(())
    }

    /// The value of secret `id`, if the operator configured it.
    pub fn get(&self, id: &str) -> Option<&str> {
        self.values.get(id).map(|v| v.as_str())
    }

    /// Configured ids (for startup logging; values are never listed).
    pub fn ids(&self) -> Vec<&str> {
        self.values.keys().map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn file(content: &str, mode: u32) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), content).unwrap();
        std::fs::set_permissions(f.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        f
    }

    #[test]
    fn loads_file_and_environment() {
        let f = file(
            "# comment\n\nTOKEN=abcdefgh12345\nOTHER = with spaces ok\r\n",
            0o600,
        );
        let env = vec![
            (
                "CLEANROOM_SECRET_ENVY".to_string(),
                "from-the-env-123".to_string(),
            ),
            ("PATH".to_string(), "/bin".to_string()),
        ];
        let s = SecretStore::load(Some(f.path()), env).unwrap();
        assert_eq!(s.get("TOKEN"), Some("abcdefgh12345"));
        assert_eq!(s.get("OTHER"), Some("with spaces ok"));
        assert_eq!(s.get("ENVY"), Some("from-the-env-123"));
        assert_eq!(s.ids(), vec!["ENVY", "OTHER", "TOKEN"]);
        assert!(!format!("{s:?}").contains("abcdefgh"));
    }

    #[test]
    fn refuses_bad_files_without_echoing_values() {
        let cases = [
            ("TOKEN=abcdefgh12345\n", 0o644, "chmod 600"),
            ("TOKEN=short\n", 0o600, "shorter than"),
            (
                "TOKEN=abcdefgh12345\nTOKEN=abcdefgh12345\n",
                0o600,
                "more than once",
            ),
            ("no equals sign here\n", 0o600, "line 1: expected ID=value"),
            ("1BAD=abcdefgh12345\n", 0o600, "ids are"),
            ("TOKEN=abc\u{1}defgh12345\n", 0o600, "printable ASCII"),
        ];
        for (content, mode, want) in cases {
            let f = file(content, mode);
            let e = SecretStore::load(Some(f.path()), Vec::new())
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{content:?}: {e}");
            assert!(!e.contains("abcdefgh"), "value leaked into {e}");
        }
        let e = SecretStore::load(Some(Path::new("/nonexistent/secrets")), Vec::new());
        assert!(e.is_err());
    }
}
