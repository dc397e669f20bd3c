//! `cleanroom cp` from this host into a sandbox: one file (resumable by upload id), a
//! directory or stdin as a tar stream.

use super::{announce, bad, bar, io_err, sandbox_join, CpArgs, Side, Summary};
use cleanroom_client::api::*;
use cleanroom_client::files::{self, Hooks, Resume, UploadOptions};
use cleanroom_client::{ApiError, Client, ErrorCode};
use sha2::Digest;
use std::path::Path;

pub(super) async fn upload(
    client: &Client,
    args: &CpArgs,
    src: Side,
    sbx: &str,
    dst: &str,
    json: bool,
) -> Result<Summary, ApiError> {
    let mut opts = UploadOptions {
        mode: args.mode.unwrap_or(0),
        uid: args.uid,
        gid: args.gid,
        create_parents: args.parents,
        no_overwrite: args.no_overwrite,
        ..Default::default()
    };
    let mut summary = Summary {
        direction: "upload",
        source: args.src.clone(),
        destination: args.dst.clone(),
        format: "file",
        bytes: 0,
        sha256: None,
        upload_id: None,
        resumed_from: 0,
        skipped: 0,
        seconds: 0.0,
    };
    let local = match src {
        Side::Stdio => {
            let mut stdin = tokio::io::stdin();
            let pb = bar(args, json, None);
            let progress = |n| pb.set_position(n);
            let path = if args.raw {
                dst.to_string()
            } else {
                opts.tar = true;
                summary.format = "tar";
                dst.to_string()
            };
            let hooks = Hooks {
                started: &mut |_| {},
                progress: &progress,
            };
            let done = files::upload(client, (sbx, &path), &mut stdin, &opts, None, hooks).await?;
            pb.finish_and_clear();
            summary.bytes = done.bytes;
            summary.sha256 = Some(done.sha256);
            summary.upload_id = Some(done.upload_id);
            return Ok(summary);
        }
        Side::Local(p) => p,
        Side::Sandbox { .. } => unreachable!("handled by the caller"),
    };
    let meta = std::fs::metadata(&local).map_err(|e| io_err(&local.display().to_string(), e))?;
    let base = local
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .ok_or_else(|| bad(format!("{}: no file name", local.display())))?;
    if meta.is_dir() {
        if args.resume.is_some() {
            return Err(bad(
                "--resume continues the upload of one file, not a directory",
            ));
        }
        // docker cp: into an existing directory as <dir>/<base>; else the destination
        // becomes a copy of the directory.
        let (into, prefix) = match files::is_dir(client, sbx, dst).await? {
            Some(true) => (dst.to_string(), base),
            Some(false) => {
                return Err(ApiError {
                    code: ErrorCode::FileTypeMismatch.to_string(),
                    message: format!("{dst:?} exists in the sandbox and is not a directory"),
                    connect_code: String::new(),
                    details: vec![],
                })
            }
            None => {
                let req = MakeSandboxDirectoryRequest {
                    sandbox_id: sbx.to_string(),
                    path: dst.to_string(),
                    mode: 0o755,
                    parents: args.parents,
                    ..Default::default()
                };
                client.files.make_sandbox_directory(req).await?;
                (dst.to_string(), ".".to_string())
            }
        };
        opts.tar = true;
        summary.format = "tar";
        let (tx, mut rx) = tokio::net::unix::pipe::pipe().map_err(|e| io_err("pipe", e))?;
        let fd = tx.into_blocking_fd().map_err(|e| io_err("pipe", e))?;
        let root = local.clone();
        let writer = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            let mut b = tar::Builder::new(std::io::BufWriter::new(std::fs::File::from(fd)));
            b.follow_symlinks(false);
            b.append_dir_all(&prefix, &root)?;
            b.into_inner()?.into_inner().map_err(|e| e.into_error())?;
            Ok(())
        });
        let pb = bar(args, json, None);
        let progress = |n| pb.set_position(n);
        // A tar stream cannot be resumed (it is made afresh): no resume hint.
        let hooks = Hooks {
            started: &mut |_| {},
            progress: &progress,
        };
        let sent = files::upload(client, (sbx, &into), &mut rx, &opts, None, hooks).await;
        pb.finish_and_clear();
        drop(rx);
        let built = writer
            .await
            .map_err(|e| bad(format!("archive task: {e}")))?;
        let done = sent?;
        built.map_err(|e| io_err(&format!("archive {}", local.display()), e))?;
        summary.bytes = done.bytes;
        summary.sha256 = Some(done.sha256);
        summary.upload_id = Some(done.upload_id);
        return Ok(summary);
    }
    // One file.
    let target = if dst.ends_with('/') || files::is_dir(client, sbx, dst).await? == Some(true) {
        sandbox_join(dst, &base)
    } else {
        dst.to_string()
    };
    use std::os::unix::fs::PermissionsExt;
    if opts.mode == 0 {
        opts.mode = meta.permissions().mode() & 0o777;
    }
    let size = meta.len();
    opts.expected_size = Some(size);
    let mut file = tokio::fs::File::open(&local)
        .await
        .map_err(|e| io_err(&local.display().to_string(), e))?;
    let resume = match &args.resume {
        None => None,
        Some(id) => {
            let at = files::upload_status(client, sbx, id).await?;
            if at.path != target {
                return Err(bad(format!(
                    "upload {id} writes {:?}, not {target:?}",
                    at.path
                )));
            }
            // The server checks the sha256 of the whole file at the end: hash what it has.
            let prefix = hash_prefix(&local, at.offset).await?;
            use tokio::io::AsyncSeekExt;
            file.seek(std::io::SeekFrom::Start(at.offset))
                .await
                .map_err(|e| io_err("seek", e))?;
            summary.resumed_from = at.offset;
            Some(Resume {
                upload_id: id.clone(),
                offset: at.offset,
                prefix: Some(prefix),
            })
        }
    };
    let pb = bar(args, json, Some(size));
    let progress = |n| pb.set_position(n);
    let mut quiet = |_: &str| {};
    let mut tell = announce(&args.src, &args.dst);
    let started: &mut (dyn FnMut(&str) + Send) = if size > files::DEFAULT_CHUNK as u64 {
        &mut tell
    } else {
        &mut quiet
    };
    let hooks = Hooks {
        started,
        progress: &progress,
    };
    let done = files::upload(client, (sbx, &target), &mut file, &opts, resume, hooks).await;
    pb.finish_and_clear();
    let done = done?;
    summary.destination = format!("{sbx}:{target}");
    summary.bytes = done.bytes;
    summary.sha256 = Some(done.sha256);
    summary.upload_id = Some(done.upload_id);
    Ok(summary)
}

async fn hash_prefix(path: &Path, len: u64) -> Result<sha2::Sha256, ApiError> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let f = std::fs::File::open(&path)?;
        let mut h = sha2::Sha256::new();
        let mut r = f.take(len);
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match r.read(&mut buf)? {
                0 => break,
                n => h.update(&buf[..n]),
            }
        }
        Ok::<_, std::io::Error>(h)
    })
    .await
    .map_err(|e| bad(format!("hash task: {e}")))?
    .map_err(|e| io_err("hash", e))
}
