//! Repo-aware bootstrap of a sandbox `cleanroom exec` created from repository policy:
//! place the repository's committed HEAD at `repository.path`, then run
//! `sandbox.dependencies.command` there, before the workload.
//!
//! Built only on the public API (executions with streamed stdin), so it behaves the same
//! against a remote server. Uncommitted changes are not copied (a warning says so): what
//! runs is what is committed, as it would be in CI.

use crate::commands::{pump_stdin, stream_until_exit, EXIT_CLEANROOM_ERROR};
use cleanroom_client::api::*;
use cleanroom_client::Client;
use cleanroom_policy::CompiledPolicy;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Unpacks a tar stream from stdin into `$1`, creating it first.
const CHECKOUT_SCRIPT: &str = "mkdir -p -- \"$1\" && exec tar -x -f - -C \"$1\"";

fn fail(code: &str, msg: impl std::fmt::Display) -> i32 {
    eprintln!("cleanroom: error [{code}]: {msg}");
    EXIT_CLEANROOM_ERROR
}

/// Run the policy's bootstrap steps. Returns the working directory the workload should
/// default to (`repository.path`), or the exit code to stop with.
pub async fn run(
    client: &Client,
    sandbox_id: &str,
    policy: &CompiledPolicy,
    policy_file: Option<&Path>,
    sigint: &mut tokio::signal::unix::Signal,
) -> Result<Option<String>, i32> {
    if let Some(path) = &policy.repository_path {
        let dir = policy_file
            .and_then(Path::parent)
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        checkout(client, sandbox_id, &dir, path, sigint).await?;
    }
    if let Some(argv) = &policy.dependencies_command {
        eprintln!(
            "cleanroom: running sandbox.dependencies.command: {}",
            argv.join(" ")
        );
        let req = CreateExecutionRequest {
            sandbox_id: sandbox_id.to_string(),
            command: argv.clone(),
            cwd: policy.repository_path.clone().unwrap_or_default(),
            kind: ExecutionKind::EXECUTION_KIND_BATCH.into(),
            attach_stdin: false,
            ..Default::default()
        };
        let code = run_step(client, sandbox_id, req, sigint).await;
        if code != 0 {
            return Err(fail(
                "dependencies_failed",
                format!(
                    "sandbox.dependencies.command exited with {code}; the workload did not run"
                ),
            ));
        }
    }
    Ok(policy.repository_path.clone())
}

/// Create an execution; its id, or the exit code to stop with (error already printed).
async fn start(client: &Client, req: CreateExecutionRequest) -> Result<String, i32> {
    match client.executions.create_execution(req).await {
        Ok(r) => Ok(r
            .into_owned()
            .execution
            .as_option()
            .map(|e| e.execution_id.clone())
            .unwrap_or_default()),
        Err(e) => {
            crate::render::error(&e.into(), None);
            Err(EXIT_CLEANROOM_ERROR)
        }
    }
}

/// Create an execution and stream its output (all to stderr) to the end.
async fn run_step(
    client: &Client,
    sandbox_id: &str,
    req: CreateExecutionRequest,
    sigint: &mut tokio::signal::unix::Signal,
) -> i32 {
    match start(client, req).await {
        Ok(exec_id) => stream_until_exit(client, sandbox_id, &exec_id, sigint, true).await,
        Err(code) => code,
    }
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let o = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !o.status.success() {
        return Err(String::from_utf8_lossy(&o.stderr).trim().to_string());
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// Stream `git archive HEAD` of the repository holding `dir` into the sandbox at `path`.
async fn checkout(
    client: &Client,
    sandbox_id: &str,
    dir: &Path,
    path: &str,
    sigint: &mut tokio::signal::unix::Signal,
) -> Result<(), i32> {
    let top = git(dir, &["rev-parse", "--show-toplevel"]).map_err(|e| {
        fail(
            "repository_unavailable",
            format!(
                "the policy sets repository.path but {} is not in a git repository ({e})",
                dir.display()
            ),
        )
    })?;
    let top = PathBuf::from(top);
    let head = git(&top, &["rev-parse", "--verify", "HEAD"]).map_err(|e| {
        fail(
            "repository_unavailable",
            format!("{} has no commit to check out ({e})", top.display()),
        )
    })?;
    let short = head.get(..12).unwrap_or(&head);
    match git(&top, &["status", "--porcelain", "--untracked-files=no"]) {
        Ok(s) if !s.is_empty() => eprintln!(
            "cleanroom: warning [repository_dirty]: uncommitted changes are not copied into the sandbox; using HEAD {short}"
        ),
        _ => {}
    }
    eprintln!("cleanroom: checking out {short} into {path}");
    let mut archive = tokio::process::Command::new("git")
        .arg("-C")
        .arg(&top)
        .args(["archive", "--format=tar", &head])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            fail(
                "repository_unavailable",
                format!("cannot run git archive: {e}"),
            )
        })?;
    let Some(tar) = archive.stdout.take() else {
        return Err(fail("internal", "git archive has no stdout"));
    };
    let req = CreateExecutionRequest {
        sandbox_id: sandbox_id.to_string(),
        command: vec![
            "sh".into(),
            "-c".into(),
            CHECKOUT_SCRIPT.into(),
            "cleanroom-checkout".into(),
            path.to_string(),
        ],
        kind: ExecutionKind::EXECUTION_KIND_BATCH.into(),
        attach_stdin: true,
        ..Default::default()
    };
    let exec_id = start(client, req).await?;
    let pump = tokio::spawn(pump_stdin(
        client.executions.clone(),
        sandbox_id.to_string(),
        exec_id.clone(),
        tar,
    ));
    let code = stream_until_exit(client, sandbox_id, &exec_id, sigint, true).await;
    let complete = pump.await.unwrap_or(false);
    let git_status = archive.wait_with_output().await;
    let git_ok = matches!(&git_status, Ok(o) if o.status.success());
    if !git_ok {
        let why = git_status
            .map(|o| String::from_utf8_lossy(&o.stderr).trim().to_string())
            .unwrap_or_else(|e| e.to_string());
        return Err(fail(
            "repository_checkout_failed",
            format!("git archive failed: {why}"),
        ));
    }
    if code != 0 || !complete {
        return Err(fail(
            "repository_checkout_failed",
            format!("unpacking the checkout into {path} failed (exit {code}); does the sandbox have tar and a writable {path}?"),
        ));
    }
    Ok(())
}
