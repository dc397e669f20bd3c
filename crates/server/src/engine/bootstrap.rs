//! What a client should do to bootstrap a repository sandbox, derived from the sandbox's
//! compiled policy.
//!
//! The policy is compiled once, by the server; clients (the CLI, the SDKs) no longer
//! compile it themselves to find `repository.path` and `sandbox.dependencies.command`.
//! They get them in `CreateSandboxResponse.bootstrap` and carry them out through the
//! public API (they hold the repository, the server does not).

use crate::model::error::EngineError;
use cleanroom_policy::CompiledPolicy;
use cleanroom_proto::cleanroom::v1::Bootstrap;

/// The bootstrap steps `policy` asks for; `None` when it asks for none.
pub fn plan(policy: &CompiledPolicy) -> Option<Bootstrap> {
    if policy.repository_path.is_none() && policy.dependencies_command.is_none() {
        return None;
    }
    Some(Bootstrap {
        repository_path: policy.repository_path.clone().unwrap_or_default(),
        dependencies_command: policy.dependencies_command.clone().unwrap_or_default(),
        ..Default::default()
    })
}

/// [`plan`] for a stored sandbox, from its stored policy. A policy that does not decode
/// is refused (`internal`, [`crate::store::policy`]): fail closed rather than tell the client to skip a
/// step the policy asked for.
pub fn plan_stored(
    sandbox_id: &str,
    policy: &crate::store::StoredPolicy,
) -> Result<Option<Bootstrap>, EngineError> {
    Ok(plan(policy.get(sandbox_id)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(yaml: &str) -> Option<Bootstrap> {
        let p = cleanroom_policy::compile(yaml).expect("policy compiles");
        let stored = crate::store::StoredPolicy::decode(&p.canonical_json());
        plan_stored("sbx_test", &stored).expect("canonical policy parses back")
    }

    #[test]
    fn no_repository_no_dependencies_no_bootstrap() {
        assert_eq!(stored(""), None);
        assert_eq!(stored("version: 1\n"), None);
    }

    #[test]
    fn repository_path_defaults_and_normalizes() {
        let b = stored("version: 1\nrepository: {}\n").expect("bootstrap");
        assert_eq!(b.repository_path, cleanroom_policy::DEFAULT_REPOSITORY_PATH);
        assert!(b.dependencies_command.is_empty());
        let b = stored("version: 1\nrepository: {path: /workspace/app/}\n").expect("bootstrap");
        assert_eq!(b.repository_path, "/workspace/app");
    }

    #[test]
    fn dependencies_with_and_without_repository() {
        let yaml = "version: 1\nrepository: {path: /src}\nsandbox:\n  dependencies:\n    command: [npm, ci]\n";
        let b = stored(yaml).expect("bootstrap");
        assert_eq!(b.repository_path, "/src");
        assert_eq!(b.dependencies_command, vec!["npm", "ci"]);
        let b = stored("version: 1\nsandbox:\n  dependencies:\n    command: [make, deps]\n")
            .expect("bootstrap");
        assert_eq!(b.repository_path, "");
        assert_eq!(b.dependencies_command, vec!["make", "deps"]);
    }

    #[test]
    fn unparsable_stored_policy_fails_closed() {
        let refuse = |json: &str| plan_stored("sbx_x", &crate::store::StoredPolicy::decode(json));
        let e = refuse("{not json").expect_err("must refuse");
        assert_eq!(e.code, "internal");
        let e = refuse("null").expect_err("must refuse");
        assert_eq!(e.code, "internal");
    }
}
