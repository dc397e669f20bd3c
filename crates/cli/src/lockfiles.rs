//! Lockfiles for `sandbox.registries`: read from the repository's committed HEAD (like the
//! checkout: what is pinned is what is committed) and sent with CreateSandbox, where the
//! server binds them to the policy.

use crate::render;
use cleanroom_client::ApiError;
use cleanroom_client::ErrorCode;
use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;

/// The lockfiles `policy_yaml` names, as committed at HEAD of the repository holding the
/// policy file's directory. Empty when the policy names none (or does not compile: the
/// server says why).
pub fn read(
    policy_yaml: &str,
    policy_file: Option<&Path>,
) -> Result<HashMap<String, Vec<u8>>, ApiError> {
    let paths = cleanroom_client::policy::lockfile_paths(policy_yaml);
    let mut out = HashMap::new();
    if paths.is_empty() {
        return Ok(out);
    }
    let dir = policy_file
        .and_then(Path::parent)
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    for path in paths {
        let o = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["show", &format!("HEAD:./{path}")])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                render::local(
                    ErrorCode::RepositoryUnavailable,
                    format!("cannot run git: {e}"),
                )
            })?;
        if !o.status.success() {
            return Err(render::local(
                ErrorCode::RepositoryUnavailable,
                format!(
                    "sandbox.registries names lockfile {path}, which is not committed at HEAD of the repository in {}: {}",
                    dir.display(),
                    String::from_utf8_lossy(&o.stderr).trim()
                ),
            ));
        }
        out.insert(path, o.stdout);
    }
    Ok(out)
}
