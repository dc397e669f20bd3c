//! Repo-aware bootstrap of a sandbox `cleanroom exec` created from repository policy:
//! place the repository's committed HEAD at `repository.path`, then run
//! `sandbox.dependencies.command` there, before the workload. What to do comes from the
//! server (`CreateSandboxResponse.bootstrap`, derived from the policy it compiled); the
//! CLI only supplies the repository, which the server does not have.
//!
//! Built only on the public API (executions with streamed stdin), so it behaves the same
//! against a remote server. Uncommitted changes are not copied (a warning says so): what
//! runs is what is committed, as it would be in CI.

use crate::follow::stream_until_exit;
use crate::render::{self, EXIT_CLEANROOM_ERROR};
use cleanroom_client::api::*;
use cleanroom_client::session;
use cleanroom_client::Client;
use cleanroom_client::ErrorCode;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Unpacks a tar stream from stdin into `$1`, creating it first.
const CHECKOUT_SCRIPT: &str = "mkdir -p -- \"$1\" && exec tar -x -f - -C \"$1\"";

use render::fail;

/// Run the bootstrap steps the server named. Returns the working directory the workload
/// should default to (`repository_path`), or the exit code to stop with.
pub async fn run(
    client: &Client,
    sandbox_id: &str,
    plan: &Bootstrap,
    policy_file: Option<&Path>,
    sigint: &mut tokio::signal::unix::Signal,
) -> Result<Option<String>, i32> {
    let repository_path = Some(plan.repository_path.clone()).filter(|p| !p.is_empty());
    if let Some(path) = &repository_path {
        let dir = policy_file
            .and_then(Path::parent)
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        checkout(client, sandbox_id, &dir, path, sigint).await?;
    }
    if !plan.dependencies_command.is_empty() {
        let argv = &plan.dependencies_command;
        eprintln!(
            "cleanroom: running sandbox.dependencies.command: {}",
            argv.join(" ")
        );
        let req = CreateExecutionRequest {
            sandbox_id: sandbox_id.to_string(),
            command: argv.clone(),
            cwd: plan.repository_path.clone(),
            kind: ExecutionKind::EXECUTION_KIND_BATCH.into(),
            attach_stdin: false,
            ..Default::default()
        };
        let code = run_step(client, sandbox_id, req, sigint).await;
        if code != 0 {
            return Err(fail(
                ErrorCode::DependenciesFailed,
                format!(
                    "sandbox.dependencies.command exited with {code}; the workload did not run"
                ),
            ));
        }
    }
    Ok(repository_path)
}

/// Create an execution; its id, or the exit code to stop with (error already printed).
async fn start(client: &Client, req: CreateExecutionRequest) -> Result<String, i32> {
    match session::create_execution(client, req).await {
        Ok(e) => Ok(e.execution_id),
        Err(e) => {
            render::error(&e, None);
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
            ErrorCode::RepositoryUnavailable,
            format!(
                "the policy sets repository.path but {} is not in a git repository ({e})",
                dir.display()
            ),
        )
    })?;
    let top = PathBuf::from(top);
    let head = git(&top, &["rev-parse", "--verify", "HEAD"]).map_err(|e| {
        fail(
            ErrorCode::RepositoryUnavailable,
            format!("{} has no commit to check out ({e})", top.display()),
        )
    })?;
    let short = head.get(..12).unwrap_or(&head);
    match git(&top, &["status", "--porcelain", "--untracked-files=no"]) {
        Ok(s) if !s.is_empty() => render::warning(
            ErrorCode::RepositoryDirty.as_str(),
            &format!("uncommitted changes are not copied into the sandbox; using HEAD {short}"),
        ),
        _ => {}
    }
    eprintln!("cleanroom: checking out {short} into {path}");
    let archive = tokio::process::Command::new("git")
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
                ErrorCode::RepositoryUnavailable,
                format!("cannot run git archive: {e}"),
            )
        })?;
    unpack(
        client,
        sandbox_id,
        archive,
        path,
        sigint,
        ErrorCode::RepositoryCheckoutFailed,
        "git archive",
    )
    .await
}

/// `exec --workdir-from DIR`: stream DIR's files into the sandbox at `path`. `tar` runs as
/// the invoking user (the CLI copies only what its user can read), archives links as links
/// and never follows them; what lands in the sandbox is bounded by the sandbox's own disk
/// limit, like anything its processes write.
pub async fn copy_dir(
    client: &Client,
    sandbox_id: &str,
    dir: &Path,
    path: &str,
    sigint: &mut tokio::signal::unix::Signal,
) -> Result<(), i32> {
    if !dir.is_dir() {
        return Err(fail(
            ErrorCode::WorkdirCopyFailed,
            format!("--workdir-from {}: not a directory", dir.display()),
        ));
    }
    eprintln!("cleanroom: copying {} into {path}", dir.display());
    let tar = tokio::process::Command::new("tar")
        .args(["-c", "-f", "-", "-C"])
        .arg(dir)
        .arg(".")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| fail(ErrorCode::WorkdirCopyFailed, format!("cannot run tar: {e}")))?;
    unpack(
        client,
        sandbox_id,
        tar,
        path,
        sigint,
        ErrorCode::WorkdirCopyFailed,
        "tar",
    )
    .await
}

/// Pipe `producer`'s tar stream into an execution that unpacks it at `path`; both sides
/// must succeed (`code` and `what`, the producer's name, for the error otherwise).
async fn unpack(
    client: &Client,
    sandbox_id: &str,
    mut producer: tokio::process::Child,
    path: &str,
    sigint: &mut tokio::signal::unix::Signal,
    code: ErrorCode,
    what: &str,
) -> Result<(), i32> {
    let Some(tar) = producer.stdout.take() else {
        return Err(fail(ErrorCode::Internal, format!("{what} has no stdout")));
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
    let pump = tokio::spawn(session::pump_stdin(
        client.executions.clone(),
        sandbox_id.to_string(),
        exec_id.clone(),
        tar,
    ));
    let exit = stream_until_exit(client, sandbox_id, &exec_id, sigint, true).await;
    let complete = pump.await.unwrap_or(false);
    let status = producer.wait_with_output().await;
    if !matches!(&status, Ok(o) if o.status.success()) {
        let why = status
            .map(|o| String::from_utf8_lossy(&o.stderr).trim().to_string())
            .unwrap_or_else(|e| e.to_string());
        return Err(fail(code, format!("{what} failed: {why}")));
    }
    if exit != 0 || !complete {
        return Err(fail(
            code,
            format!("unpacking into {path} failed (exit {exit}); does the sandbox have tar and a writable {path}?"),
        ));
    }
    Ok(())
}
