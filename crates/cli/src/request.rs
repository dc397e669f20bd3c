//! Request parts built from flags and local files, shared by `exec` and `sandbox create`
//! (kept apart from the commands so neither command module imports the other).

use crate::render;
use cleanroom_client::api::{CreateSandboxRequest, ResourceLimits};
use cleanroom_client::ApiError;
use cleanroom_client::ErrorCode;
use std::path::{Path, PathBuf};

pub(crate) fn invalid(msg: impl Into<String>) -> ApiError {
    render::local(ErrorCode::InvalidArgument, msg)
}

/// The request's limits. Bounds are the server's to check (one table, shared with the
/// policy compiler); only an explicit zero is refused here, because zero on the wire means
/// "not requested" and would silently become the default.
pub(crate) fn limits_msg(l: &crate::cli::LimitArgs) -> Result<ResourceLimits, ApiError> {
    for (flag, name, v) in [
        ("--memory-mb", "memory_mb", l.memory_mb),
        ("--pids", "pids", l.pids),
        ("--cpu-millis", "cpu_millis", l.cpu_millis),
        ("--disk-mb", "disk_mb", l.disk_mb),
        ("--output-mb", "output_mb", l.output_mb),
    ] {
        if v == Some(0) {
            let (lo, hi) = cleanroom_client::policy::resource_bounds(name).unwrap_or((1, u64::MAX));
            return Err(invalid(format!(
                "{flag} 0 is outside the accepted range {lo}..={hi}"
            )));
        }
    }
    let mib = |v: Option<u64>| v.map(|m| m.saturating_mul(1 << 20)).unwrap_or(0);
    Ok(ResourceLimits {
        memory_bytes: mib(l.memory_mb),
        pids: l.pids.unwrap_or(0),
        cpu_millis: l.cpu_millis.unwrap_or(0),
        disk_bytes: mib(l.disk_mb),
        output_bytes: mib(l.output_mb),
        ..Default::default()
    })
}

/// `--volume NAME:/PATH[:ro]` (repeatable) of every command that creates a sandbox.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct VolumeArgs {
    /// Mount your named volume NAME (`cleanroom volume create`) at PATH inside the sandbox;
    /// `:ro` mounts it read-only (repeatable). A volume is mounted read-write into at most
    /// one live sandbox, read-only into many (docs/volumes.md)
    #[arg(long = "volume", value_name = "NAME:/PATH[:ro]")]
    pub volumes: Vec<String>,
}

/// The request's volume mounts; a malformed one is `volume_mount_invalid`, locally.
pub(crate) fn volume_msgs(
    v: &VolumeArgs,
) -> Result<Vec<cleanroom_client::api::VolumeMount>, ApiError> {
    v.volumes
        .iter()
        .map(|spec| {
            let m = cleanroom_client::policy::parse_volume_flag(spec).map_err(|e| {
                render::local(ErrorCode::VolumeMountInvalid, format!("--volume {e}"))
            })?;
            Ok(cleanroom_client::api::VolumeMount {
                name: m.name,
                path: m.path,
                read_only: m.read_only,
                ..Default::default()
            })
        })
        .collect()
}

pub(crate) fn read_policy(path: Option<&PathBuf>, repo_default: bool) -> Result<String, ApiError> {
    let path = match path {
        Some(p) => p.clone(),
        None if repo_default => {
            let p = PathBuf::from("cleanroom.yaml");
            if !p.exists() {
                return Ok(String::new());
            }
            p
        }
        None => return Ok(String::new()),
    };
    std::fs::read_to_string(&path).map_err(|e| {
        render::local(
            ErrorCode::PolicyInvalid,
            format!("cannot read policy {}: {e}", path.display()),
        )
    })
}

/// A CreateSandboxRequest carrying `policy_yaml` and the lockfiles it names, read from the
/// repository's committed HEAD (the rest left to the caller: `..sandbox_request(…)?`). Every
/// command that creates a sandbox from a policy (`exec`, `create`, `sandbox create`,
/// `console`) starts from this, so none can send a registries policy without its lockfiles
/// (`cleanroom create` once did, and the server refused it as not supplied).
pub(crate) fn sandbox_request(
    policy_yaml: String,
    policy_file: Option<&Path>,
) -> Result<CreateSandboxRequest, ApiError> {
    let lockfiles = crate::lockfiles::read(&policy_yaml, policy_file)?;
    Ok(CreateSandboxRequest {
        lockfiles: lockfiles.into_iter().collect(),
        policy_yaml,
        ..Default::default()
    })
}
