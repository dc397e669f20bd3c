//! A request's runtime (`--runtime`, `CreateSandboxRequest.runtime`) applied to a policy:
//! it wins over the policy's `sandbox.runtime`, as the request's image wins over
//! `sandbox.image.ref`. Applied to the YAML before compiling (like learn mode), so the
//! runtime is part of the compiled policy, its hash and the warm-pool key.

use crate::{compile::invalid, PolicyError};
use cleanroom_vocab::Runtime;

/// `yaml` with `sandbox.runtime` set to `runtime` (an empty policy becomes the built-in one
/// with that runtime).
pub fn with_runtime(yaml: &str, runtime: Runtime) -> Result<String, PolicyError> {
    if yaml.len() > crate::MAX_POLICY_BYTES {
        return crate::compile(yaml).map(|_| String::new());
    }
    let mut doc: serde_json::Value = if yaml.trim().is_empty() {
        serde_json::json!({"version": 1})
    } else {
        serde_saphyr::from_str(yaml).map_err(|e| PolicyError::Invalid(e.to_string()))?
    };
    let Some(root) = doc.as_object_mut() else {
        return Err(invalid("(document)", "a policy is a mapping"));
    };
    let sandbox = root
        .entry("sandbox")
        .or_insert_with(|| serde_json::json!({}));
    let Some(sandbox) = sandbox.as_object_mut() else {
        return Err(invalid("sandbox", "must be a mapping"));
    };
    sandbox.insert("runtime".into(), runtime.as_str().into());
    Ok(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_runtime_wins_and_changes_the_hash() {
        let base = "version: 1\nsandbox:\n  runtime: linux\n";
        let linux = crate::compile(base).unwrap();
        assert_eq!(linux.runtime, Some(Runtime::Linux));
        let g = crate::compile(&with_runtime(base, Runtime::Gvisor).unwrap()).unwrap();
        assert_eq!(g.runtime, Some(Runtime::Gvisor));
        assert_ne!(linux.policy_hash(), g.policy_hash());
        let empty = crate::compile(&with_runtime("", Runtime::Gvisor).unwrap()).unwrap();
        assert_eq!(empty.runtime, Some(Runtime::Gvisor));
    }

    #[test]
    fn an_unknown_runtime_is_refused_and_none_keeps_the_old_hash() {
        let e = crate::compile("version: 1\nsandbox:\n  runtime: firecracker\n").unwrap_err();
        assert!(e.to_string().contains("sandbox.runtime"), "{e}");
        let plain = crate::compile("version: 1\n").unwrap();
        assert_eq!(plain.runtime, None);
        assert!(!plain.canonical_json().contains("runtime"));
    }
}
