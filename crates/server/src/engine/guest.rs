//! What a guest process is started with: the checks a request must pass (hostile-input
//! guards on argv, environment and cwd) and the environment it gets (defaults, proxy,
//! the policy's env, secret placeholders, the request's env).
//!
//! The size guards keep every spawn request well inside what a backend accepts in one
//! control message (the Linux backend's is 256 KiB): an oversized request is the caller's
//! `invalid_argument`, never a `runtime_launch_failed` from the backend.

use crate::engine::ExecRequest;
use crate::model::error::EngineError;
use std::collections::BTreeMap;

/// Most arguments a command may have.
pub const MAX_ARGS: usize = 4096;
/// Most bytes of argv (each argument plus its terminator).
pub const MAX_ARGV_BYTES: usize = 128 * 1024;
/// Most environment variables a request may set.
pub const MAX_ENV: usize = 1024;
/// Most bytes of a process's complete environment, measured by [`encoded_len`].
pub const MAX_ENV_BYTES: usize = 64 * 1024;
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Check a request before anything is created for it.
pub fn validate(req: &ExecRequest) -> Result<(), EngineError> {
    if req.command.is_empty() || req.command[0].is_empty() {
        return Err(EngineError::invalid("command is empty"));
    }
    if req.command.len() > MAX_ARGS
        || req.command.iter().map(|a| a.len() + 1).sum::<usize>() > MAX_ARGV_BYTES
    {
        return Err(EngineError::invalid("command is too long"));
    }
    if req.command.iter().any(|a| a.contains('\0')) {
        return Err(EngineError::invalid("command contains a NUL byte"));
    }
    if req.env.len() > MAX_ENV {
        return Err(EngineError::invalid("too many environment variables"));
    }
    for (k, v) in &req.env {
        if !cleanroom_policy::is_valid_env_key(k) || v.contains('\0') {
            return Err(
                EngineError::invalid(format!("invalid environment variable {k:?}")).with("env", k),
            );
        }
    }
    // The request's own share, before anything is created: the complete environment is
    // checked again by [`environment`].
    check_env_size(req.env.iter())?;
    if !req.cwd.is_empty() && (!req.cwd.starts_with('/') || req.cwd.contains('\0')) {
        return Err(EngineError::invalid("cwd must be an absolute path"));
    }
    Ok(())
}

/// Bytes a string may take once quoted in a control message, in the worst case: control
/// characters, quotes and backslashes are escaped (up to six bytes each).
pub fn encoded_len(s: &str) -> usize {
    s.bytes()
        .map(|b| {
            if b < 0x20 || b == b'"' || b == b'\\' {
                6
            } else {
                1
            }
        })
        .sum()
}

/// `invalid_argument` when an environment exceeds [`MAX_ENV_BYTES`].
fn check_env_size<'a>(
    env: impl Iterator<Item = (&'a String, &'a String)>,
) -> Result<(), EngineError> {
    // Each entry also costs its framing (quotes, separators).
    let size: usize = env.map(|(k, v)| encoded_len(k) + encoded_len(v) + 8).sum();
    if size > MAX_ENV_BYTES {
        return Err(EngineError::invalid(format!(
            "the environment is too large ({size} bytes, at most {MAX_ENV_BYTES})"
        ))
        .with("field", "env"));
    }
    Ok(())
}

/// What the server adds to a guest's environment besides the request's own.
pub struct Sources<'a> {
    pub sandbox_id: &'a str,
    pub execution_id: &'a str,
    /// The policy's `sandbox.env`.
    pub policy_env: BTreeMap<String, String>,
    /// Secret placeholders and CA bundle variables (the policy cannot override them).
    pub egress_env: Vec<(String, String)>,
}

/// The complete environment of a guest process: defaults, then the policy's env, then
/// the egress entries, then the request's env (later ones win). `invalid_argument` when
/// it exceeds [`MAX_ENV_BYTES`].
pub fn environment(
    src: Sources<'_>,
    request_env: &BTreeMap<String, String>,
) -> Result<Vec<(String, String)>, EngineError> {
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    env.insert("PATH".into(), DEFAULT_PATH.into());
    env.insert("HOME".into(), "/root".into());
    env.insert("LANG".into(), "C.UTF-8".into());
    env.insert("HOSTNAME".into(), "cleanroom".into());
    env.insert("CLEANROOM_SANDBOX_ID".into(), src.sandbox_id.into());
    env.insert("CLEANROOM_EXECUTION_ID".into(), src.execution_id.into());
    // Proxy-aware tools use the gateway's proxy; everything else is caught by it anyway.
    let proxy = format!(
        "http://{}:{}",
        cleanroom_egress::GATEWAY_ADDR,
        cleanroom_egress::PROXY_PORT
    );
    for k in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
        env.insert(k.into(), proxy.clone());
    }
    for k in ["NO_PROXY", "no_proxy"] {
        env.insert(k.into(), "localhost,127.0.0.1,::1".into());
    }
    env.extend(src.policy_env);
    env.extend(src.egress_env);
    env.extend(request_env.clone());
    check_env_size(env.iter())?;
    Ok(env.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(env: &[(&str, String)]) -> ExecRequest {
        ExecRequest {
            command: vec!["true".into()],
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn oversized_environments_are_invalid_argument() {
        let many: Vec<(String, String)> = (0..100)
            .map(|i| (format!("V{i}"), "y".repeat(1000)))
            .collect();
        let cases = [
            // One huge value.
            req(&[("BIG", "x".repeat(200 * 1024))]),
            // Just over the cap.
            req(&[("BIG", "x".repeat(MAX_ENV_BYTES))]),
            // Many mid-sized values, each harmless alone.
            ExecRequest {
                command: vec!["true".into()],
                env: many.into_iter().collect(),
                ..Default::default()
            },
            // Small raw, large once escaped (control characters).
            req(&[("CTL", "\u{1}".repeat(20 * 1024))]),
        ];
        for (i, r) in cases.iter().enumerate() {
            let e = validate(r).expect_err(&format!("case {i} passed"));
            assert_eq!(e.code, "invalid_argument", "case {i}: {e:?}");
            assert!(e.message.contains("environment is too large"), "case {i}");
        }
        // The complete environment is checked too: the policy's share counts.
        let src = Sources {
            sandbox_id: "sbx_x",
            execution_id: "exe_x",
            policy_env: [("POLICY".to_string(), "p".repeat(MAX_ENV_BYTES))].into(),
            egress_env: vec![],
        };
        let e = environment(src, &BTreeMap::new()).unwrap_err();
        assert_eq!(e.code, "invalid_argument");
        // A sane environment passes.
        assert!(validate(&req(&[("OK", "v".repeat(1000))])).is_ok());
    }
}
