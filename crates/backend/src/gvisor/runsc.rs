//! The `runsc` binary as this backend drives it: where it is, which version, which
//! platform works on this host, and the one way a `runsc` command line is built — always
//! with the server's own `--root`, so two servers never see each other's containers.

use crate::BackendError;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::process::Command;

/// How the sentry intercepts the sandbox's system calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    /// seccomp traps and a shared-memory stub (runsc 2023+).
    Systrap,
    /// ptrace: slower, works wherever ptrace does.
    Ptrace,
}

impl std::str::FromStr for Platform {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "systrap" => Ok(Platform::Systrap),
            "ptrace" => Ok(Platform::Ptrace),
            o => Err(format!(
                "{o:?} is not a usable gVisor platform (systrap, ptrace)"
            )),
        }
    }
}

impl Platform {
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Systrap => "systrap",
            Platform::Ptrace => "ptrace",
        }
    }
}

/// A usable `runsc`: its path, version, root directory and the platform that ran.
#[derive(Debug, Clone)]
pub struct Runsc {
    pub bin: PathBuf,
    /// `runsc --version`'s first line, e.g. `runsc version 0.0~20240729.0`.
    pub version: String,
    /// `--root`: this server's container state (under its state directory).
    pub root: PathBuf,
    pub platform: Platform,
}

/// First runsc build date with the systrap platform (gVisor added it in 2023).
const SYSTRAP_SINCE: u32 = 20230601;
/// How long one runsc command (state, kill, delete, list, exec's bookkeeping) may take.
const COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

impl Runsc {
    /// Find `runsc` (`bin`, else on `PATH`), read its version and pick its platform:
    /// `platform` when given, else systrap where the build has it, else ptrace. kvm is
    /// never picked: it hangs where `/dev/kvm` is not a plain KVM (a PVM module here).
    /// Cheap (one `runsc --version`), so every server start can afford it; the platform
    /// proves itself at the first create (`runtime_launch_failed` otherwise).
    /// `Err` says why gVisor is unavailable.
    pub async fn probe(
        bin: Option<&Path>,
        root: &Path,
        platform: Option<Platform>,
    ) -> Result<Runsc, String> {
        let bin = match bin {
            Some(b) => b.to_path_buf(),
            None => find_on_path("runsc").ok_or("runsc is not installed (not on PATH)")?,
        };
        let out = tokio::time::timeout(
            COMMAND_TIMEOUT,
            Command::new(&bin)
                .arg("--version")
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .map_err(|_| format!("{} --version did not finish", bin.display()))?
        .map_err(|e| format!("{}: {e}", bin.display()))?;
        if !out.status.success() {
            return Err(format!("{} --version failed", bin.display()));
        }
        let version = String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        let platform = platform.unwrap_or(match build_date(&version) {
            Some(d) if d >= SYSTRAP_SINCE => Platform::Systrap,
            _ => Platform::Ptrace,
        });
        std::fs::create_dir_all(root).map_err(|e| format!("create {}: {e}", root.display()))?;
        Ok(Runsc {
            bin,
            version,
            root: root.to_path_buf(),
            platform,
        })
    }

    /// `runsc --root <ours> --platform=<picked> …`: every command this backend runs.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--root")
            .arg(&self.root)
            .arg(format!("--platform={}", self.platform.as_str()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        cmd
    }

    /// Run `runsc <args>` to completion; `Err` carries its stderr. A runsc that does not
    /// finish within [`COMMAND_TIMEOUT`] is killed and the call fails: a hung runsc must not
    /// hold a terminate, a reconcile or an exec's exit path forever.
    pub async fn run(&self, args: &[&str]) -> Result<Vec<u8>, BackendError> {
        let out = tokio::time::timeout(
            COMMAND_TIMEOUT,
            self.command()
                .args(args)
                .stdout(Stdio::piped())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .map_err(|_| {
            BackendError::LaunchFailed(format!(
                "runsc {} did not finish within {} s",
                args.first().copied().unwrap_or_default(),
                COMMAND_TIMEOUT.as_secs()
            ))
        })?
        .map_err(|e| BackendError::io(format!("runsc {}", args.join(" ")), e))?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(BackendError::LaunchFailed(format!(
                "runsc {}: {}",
                args.first().copied().unwrap_or_default(),
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
    }

    /// Run `runsc <args>` with no output read (stdout and stderr go nowhere): for commands
    /// whose output a sandbox controls. Only the exit status, within `deadline`.
    pub async fn run_quiet(
        &self,
        deadline: std::time::Duration,
        args: &[&str],
    ) -> Result<(), BackendError> {
        let what = args.first().copied().unwrap_or_default();
        let mut child = self
            .command()
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| BackendError::io(format!("runsc {what}"), e))?;
        match tokio::time::timeout(deadline, child.wait()).await {
            Ok(Ok(s)) if s.success() => Ok(()),
            Ok(Ok(s)) => Err(BackendError::LaunchFailed(format!("runsc {what}: {s}"))),
            Ok(Err(e)) => Err(BackendError::io(format!("runsc {what}"), e)),
            Err(_) => Err(BackendError::LaunchFailed(format!(
                "runsc {what} did not finish within {deadline:?}"
            ))),
        }
    }

    /// The container exists and its sandbox runs (`runsc state`).
    pub async fn is_running(&self, id: &str) -> bool {
        match self.run(&["state", id]).await {
            Ok(out) => serde_json::from_slice::<serde_json::Value>(&out)
                .map(|v| v["status"] == "running")
                .unwrap_or(false),
            Err(_) => false,
        }
    }

    /// The ids of every container in our root (`runsc list -quiet`).
    pub async fn list(&self) -> Result<Vec<String>, BackendError> {
        let out = self.run(&["list", "-quiet"]).await?;
        Ok(String::from_utf8_lossy(&out)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect())
    }

    /// Whether our root holds any state of container `id` (its state file, lock or
    /// socket). A root that cannot be read counts as holding it (the caller destroys).
    pub fn has_state(&self, id: &str) -> bool {
        let (state, sock) = (format!("{id}_sandbox:"), format!("runsc-{id}.sock"));
        match std::fs::read_dir(&self.root) {
            Ok(entries) => entries.flatten().any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.starts_with(&state) || name == sock
            }),
            Err(_) => true,
        }
    }

    /// Kill every process of a container and delete it (its sandbox, gofer, cgroups and
    /// state under our root). Idempotent: an unknown container is already gone.
    pub async fn destroy(&self, id: &str) -> Result<(), BackendError> {
        // SIGKILL first: `delete --force` alone waits for a graceful stop it never asks for.
        let _ = self.run(&["kill", "-all", id, "KILL"]).await;
        match self.run(&["delete", "-force", id]).await {
            Ok(_) => Ok(()),
            Err(_) if !self.list().await?.iter().any(|c| c == id) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The build date in a runsc version line (`runsc version 0.0~20240729.0`,
/// `runsc version release-20240729.0`) as `YYYYMMDD`.
fn build_date(version: &str) -> Option<u32> {
    version
        .split(|c: char| !c.is_ascii_digit())
        .find(|part| part.len() == 8)
        .and_then(|d| d.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::build_date;

    #[test]
    fn build_dates_are_read_from_both_version_styles() {
        assert_eq!(build_date("runsc version 0.0~20240729.0"), Some(20240729));
        assert_eq!(
            build_date("runsc version release-20221219.0"),
            Some(20221219)
        );
        assert_eq!(build_date("runsc version unknown"), None);
    }
}
