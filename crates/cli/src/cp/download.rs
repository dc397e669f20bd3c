//! `cleanroom cp` from a sandbox to this host: one file, a directory as a tar stream merged
//! into the destination, or stdout.

use super::{bad, bar, io_err, sandbox_base, CpArgs, Side, Summary};
use cleanroom_client::api::*;
use cleanroom_client::files;
use cleanroom_client::{ApiError, Client};
use std::path::Path;

pub(super) async fn download(
    client: &Client,
    args: &CpArgs,
    sbx: &str,
    src: &str,
    dst: Side,
    json: bool,
) -> Result<Summary, ApiError> {
    let info = files::stat(client, sbx, src, true).await?;
    let is_dir = info.r#type.as_known() == Some(SandboxFileType::SANDBOX_FILE_TYPE_DIRECTORY);
    let mut summary = Summary {
        direction: "download",
        source: args.src.clone(),
        destination: args.dst.clone(),
        format: if is_dir || (dst == Side::Stdio && !args.raw) {
            "tar"
        } else {
            "file"
        },
        bytes: 0,
        sha256: None,
        upload_id: None,
        resumed_from: 0,
        seconds: 0.0,
    };
    let local = match dst {
        Side::Stdio => {
            let mut out = tokio::io::stdout();
            let pb = bar(args, json, None);
            let progress = |n| pb.set_position(n);
            if args.raw {
                if is_dir {
                    return Err(bad(format!(
                        "{src:?} is a directory: --raw copies one file"
                    )));
                }
                let d = files::download(client, sbx, src, 0, &mut out, &progress).await?;
                summary.bytes = d.bytes;
                summary.sha256 = Some(d.sha256);
            } else {
                summary.bytes =
                    files::download_archive(client, sbx, src, &mut out, &progress).await?;
            }
            pb.finish_and_clear();
            return Ok(summary);
        }
        Side::Local(p) => p,
        Side::Sandbox { .. } => unreachable!("handled by the caller"),
    };
    let base = sandbox_base(src).to_string();
    if is_dir {
        summary.bytes = download_tree(client, args, json, sbx, src, &base, &local).await?;
        return Ok(summary);
    }
    if info.r#type.as_known() != Some(SandboxFileType::SANDBOX_FILE_TYPE_REGULAR) {
        return Err(bad(format!(
            "{src:?} is neither a regular file nor a directory"
        )));
    }
    let target = if local.is_dir() {
        local.join(&base)
    } else {
        local.clone()
    };
    // Written next to the target, renamed over it when complete.
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| base.clone());
    let partial = dir.join(format!(".{name}.cleanroom-partial-{}", std::process::id()));
    let mut out = tokio::fs::File::create(&partial)
        .await
        .map_err(|e| io_err(&partial.display().to_string(), e))?;
    let pb = bar(args, json, Some(info.size));
    let progress = |n| pb.set_position(n);
    let got = files::download(client, sbx, src, 0, &mut out, &progress).await;
    pb.finish_and_clear();
    let got = match got {
        Ok(g) => g,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    drop(out);
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(
        &partial,
        std::fs::Permissions::from_mode(got.file.mode & 0o777),
    );
    std::fs::rename(&partial, &target).map_err(|e| {
        let _ = std::fs::remove_file(&partial);
        io_err(&target.display().to_string(), e)
    })?;
    summary.destination = target.display().to_string();
    summary.bytes = got.bytes;
    summary.sha256 = Some(got.sha256);
    Ok(summary)
}

/// A sandbox directory into `local`: into an existing directory as `local/<base>`, else as
/// `local` itself. Extraction goes to a fresh directory next to the destination first
/// (`tar`'s `unpack_in`: no `..`, no absolute names, no writes through links the archive
/// made; devices and FIFOs skipped), then one rename.
async fn download_tree(
    client: &Client,
    args: &CpArgs,
    json: bool,
    sbx: &str,
    src: &str,
    base: &str,
    local: &Path,
) -> Result<u64, ApiError> {
    let (parent, final_path) = if local.is_dir() {
        (local.to_path_buf(), local.join(base))
    } else {
        let parent = local
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        (parent, local.to_path_buf())
    };
    let staging = parent.join(format!(".cleanroom-cp-{}", std::process::id()));
    std::fs::create_dir(&staging).map_err(|e| io_err(&staging.display().to_string(), e))?;
    let (tx, rx) = tokio::net::unix::pipe::pipe().map_err(|e| io_err("pipe", e))?;
    let fd = rx.into_blocking_fd().map_err(|e| io_err("pipe", e))?;
    let into = staging.clone();
    let reader = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        let mut a = tar::Archive::new(std::io::BufReader::new(std::fs::File::from(fd)));
        a.set_preserve_permissions(false);
        a.set_overwrite(true);
        for entry in a.entries()? {
            let mut entry = entry?;
            use tar::EntryType as T;
            match entry.header().entry_type() {
                T::Regular | T::Continuous | T::Directory | T::Symlink | T::Link => {
                    entry.unpack_in(&into)?;
                }
                _ => {}
            }
        }
        Ok(())
    });
    let pb = bar(args, json, None);
    let progress = |n| pb.set_position(n);
    let mut tx = tx;
    let got = files::download_archive(client, sbx, src, &mut tx, &progress).await;
    pb.finish_and_clear();
    drop(tx);
    let unpacked = reader.await.map_err(|e| bad(format!("extract task: {e}")));
    let cleanup = |e: ApiError| {
        let _ = std::fs::remove_dir_all(&staging);
        e
    };
    let bytes = got.map_err(cleanup)?;
    unpacked
        .map_err(cleanup)?
        .map_err(|e| cleanup(io_err("extract", e)))?;
    let extracted = if base == "." {
        staging.clone()
    } else {
        staging.join(base)
    };
    let moved = if final_path.is_dir() {
        merge(&extracted, &final_path)
    } else {
        std::fs::rename(&extracted, &final_path)
    };
    let _ = std::fs::remove_dir_all(&staging);
    moved.map_err(|e| io_err(&final_path.display().to_string(), e))?;
    Ok(bytes)
}

/// Move every entry of `from` into the existing directory `to` (replacing files).
fn merge(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let dest = to.join(entry.file_name());
        let meta = std::fs::symlink_metadata(&dest);
        match meta {
            Ok(m) if m.is_dir() && entry.file_type()?.is_dir() => merge(&entry.path(), &dest)?,
            Ok(m) if m.is_dir() => {
                std::fs::remove_dir_all(&dest)?;
                std::fs::rename(entry.path(), &dest)?;
            }
            _ => std::fs::rename(entry.path(), &dest)?,
        }
    }
    Ok(())
}
