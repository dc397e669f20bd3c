//! `cleanroom cp` from a sandbox to this host: one file, a directory as a tar stream merged
//! into the destination, or stdout. What the sandbox sends is written by the rules of
//! [`super::extract`]: nothing beneath the destination is followed.

use super::{bad, bar, extract, io_err, sandbox_base, CpArgs, Side, Summary};
use cleanroom_client::api::*;
use cleanroom_client::files;
use cleanroom_client::{ApiError, Client};
use std::ffi::OsString;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

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
        skipped: 0,
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
        let (bytes, skipped) = download_tree(client, args, json, sbx, src, &base, &local).await?;
        summary.bytes = bytes;
        summary.skipped = skipped;
        if skipped > 0 && !json {
            eprintln!("cleanroom: {skipped} device or FIFO entries were not recreated");
        }
        return Ok(summary);
    }
    if info.r#type.as_known() != Some(SandboxFileType::SANDBOX_FILE_TYPE_REGULAR) {
        return Err(bad(format!(
            "{src:?} is neither a regular file nor a directory"
        )));
    }
    let (dir_path, name) = destination(&local, &base)?;
    let target = dir_path.join(&name);
    // The directory was named by the user (it existed before this command): opened the
    // ordinary way. Beneath it nothing is followed: a link at the target is refused, and
    // the bytes go to an O_EXCL|O_NOFOLLOW file under an unpredictable name first.
    let dir = extract::open_user_dir(&dir_path)?;
    extract::no_link_at(dir.as_fd(), &name, &target)?;
    let (file, partial) = extract::create_temp(dir.as_fd(), &name, &target)?;
    let mut out = tokio::fs::File::from_std(file);
    let pb = bar(args, json, Some(info.size));
    let progress = |n| pb.set_position(n);
    let got = files::download(client, sbx, src, 0, &mut out, &progress).await;
    pb.finish_and_clear();
    let unlink = || {
        let _ = nix::unistd::unlinkat(
            dir.as_fd(),
            partial.as_slice(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        );
    };
    let got = match got {
        Ok(g) => g,
        Err(e) => {
            unlink();
            return Err(e);
        }
    };
    // No setuid, setgid or sticky bit from a sandbox.
    let out = out.into_std().await;
    if let Err(e) = nix::sys::stat::fchmod(
        &out,
        nix::sys::stat::Mode::from_bits_truncate(got.file.mode & 0o777),
    ) {
        unlink();
        return Err(io_err(&target.display().to_string(), e.into()));
    }
    drop(out);
    extract::commit(dir.as_fd(), &partial, &name, &target)?;
    summary.destination = target.display().to_string();
    summary.bytes = got.bytes;
    summary.sha256 = Some(got.sha256);
    Ok(summary)
}

/// Where a download lands: into an existing directory `local` as `local/<base>`, else as
/// `local` itself. Returns the directory (the user's, resolved the ordinary way) and the
/// name in it.
fn destination(local: &Path, base: &str) -> Result<(PathBuf, OsString), ApiError> {
    if local.is_dir() {
        return Ok((local.to_path_buf(), OsString::from(base)));
    }
    let parent = local
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let name = local
        .file_name()
        .ok_or_else(|| bad(format!("{}: not a file name", local.display())))?;
    Ok((parent, name.to_os_string()))
}

/// A sandbox directory into `local`: into an existing directory as `local/<base>`, else as
/// `local` itself. The tar stream is extracted as it arrives, beneath a directory fd of the
/// destination, by [`extract::Extractor`] (the rule for what a sandbox sends is there).
async fn download_tree(
    client: &Client,
    args: &CpArgs,
    json: bool,
    sbx: &str,
    src: &str,
    base: &str,
    local: &Path,
) -> Result<(u64, u64), ApiError> {
    let (dir_path, name) = destination(local, base)?;
    let dir = extract::open_user_dir(&dir_path)?;
    let extractor = if name == "." {
        // The source is the sandbox's `/` and `local` a directory: its entries land in it.
        extract::Extractor::new(dir, dir_path.clone(), None, None)
    } else {
        let target = dir_path.join(&name);
        match extract::no_link_at(dir.as_fd(), &name, &target)? {
            Some(st) if extract::kind(&st) != nix::sys::stat::SFlag::S_IFDIR => {
                return Err(bad(format!(
                    "{}: exists and is not a directory",
                    target.display()
                )))
            }
            _ => {}
        }
        let strip = (base != ".").then_some(base.as_bytes());
        extract::Extractor::new(dir, dir_path.clone(), strip, Some(name.as_bytes()))
    };
    let (tx, rx) = tokio::net::unix::pipe::pipe().map_err(|e| io_err("pipe", e))?;
    let fd = rx.into_blocking_fd().map_err(|e| io_err("pipe", e))?;
    let reader = tokio::task::spawn_blocking(move || {
        extractor.run(std::io::BufReader::new(std::fs::File::from(fd)))
    });
    let pb = bar(args, json, None);
    let progress = |n| pb.set_position(n);
    let mut tx = tx;
    let got = files::download_archive(client, sbx, src, &mut tx, &progress).await;
    pb.finish_and_clear();
    drop(tx);
    // The extractor's refusal first: the transfer then only saw a closed pipe.
    let stats = reader
        .await
        .map_err(|e| bad(format!("extract task: {e}")))??;
    let bytes = got?;
    Ok((bytes, stats.skipped))
}
