//! `cleanroom cp SRC DST`: files and directories between this host and a sandbox, with
//! `docker cp` habits. One side is `sbx_…:PATH` (a relative PATH is under /workspace);
//! `-` is stdin or stdout as a tar stream (or, with `--raw`, one file's bytes). The
//! transfer logic is the client crate's ([`cleanroom_client::files`]); this module only
//! decides names, walks local trees and renders.

use crate::render::{self, Code, EXIT_CLEANROOM_ERROR};
use clap::Args;
use cleanroom_client::api::*;
use cleanroom_client::endpoint::Target;
use cleanroom_client::files::{self, Hooks, Resume, UploadOptions};
use cleanroom_client::{ApiError, Client, ErrorCode};
use sha2::Digest;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Progress is drawn for transfers at least this large (on a terminal).
const PROGRESS_MIN: u64 = 8 << 20;

/// Copy files and directories between the host and a sandbox.
///
/// Upload: `cleanroom cp ./dir sbx_…:/workspace/` (the directory lands as
/// /workspace/dir; a destination that does not exist yet receives the directory's
/// contents), `cleanroom cp file sbx_…:/tmp/name`. Download: `cleanroom cp
/// sbx_…:/workspace/out.json .`. `-` is stdin (a tar stream extracted into the
/// destination directory) or stdout (a tar stream of the source), like docker; with
/// `--raw` it is one file's bytes. Every operation inside the sandbox runs with the
/// sandbox's own identity. A large upload prints its id; after an interruption
/// `--resume UPLOAD_ID` continues it where the server stands.
#[derive(Debug, Args)]
pub struct CpArgs {
    /// Source: a local path, `-` (stdin) or sbx_…:PATH
    pub src: String,
    /// Destination: a local path, `-` (stdout) or sbx_…:PATH
    pub dst: String,
    /// With `-`: stdin/stdout carry the raw bytes of one file instead of a tar stream
    #[arg(long)]
    pub raw: bool,
    /// Permission bits of an uploaded file, octal (default: the local file's, or 0644)
    #[arg(long, value_name = "OCTAL", value_parser = parse_mode)]
    pub mode: Option<u32>,
    /// Owner of an uploaded file as the sandbox sees it (only what the sandbox itself
    /// could chown to; else permission_denied)
    #[arg(long)]
    pub uid: Option<u32>,
    /// Group of an uploaded file as the sandbox sees it
    #[arg(long)]
    pub gid: Option<u32>,
    /// Create missing parent directories in the sandbox
    #[arg(short = 'p', long)]
    pub parents: bool,
    /// Refuse (file_exists) instead of replacing an existing file in the sandbox
    #[arg(long)]
    pub no_overwrite: bool,
    /// Continue an interrupted upload of a local file (its id, printed when it started)
    #[arg(long, value_name = "UPLOAD_ID")]
    pub resume: Option<String>,
    /// Never draw a progress bar
    #[arg(long)]
    pub no_progress: bool,
    /// Print a JSON summary on stdout (also the global `-o json`)
    #[arg(long)]
    pub json: bool,
}

fn parse_mode(s: &str) -> Result<u32, String> {
    let s = s.trim_start_matches("0o");
    match u32::from_str_radix(s, 8) {
        Ok(m) if m <= 0o7777 => Ok(m),
        _ => Err(format!("{s:?} is not an octal mode <= 7777")),
    }
}

/// One side of a copy.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Side {
    Stdio,
    Local(PathBuf),
    Sandbox { id: String, path: String },
}

fn parse_side(s: &str) -> Side {
    if s == "-" {
        return Side::Stdio;
    }
    if let Some((id, path)) = s.split_once(':') {
        if id.starts_with("sbx_") && !id.contains('/') {
            let path = if path.starts_with('/') {
                path.to_string()
            } else {
                format!("{}/{path}", cleanroom_backend::WORKSPACE_PATH)
            };
            return Side::Sandbox {
                id: id.to_string(),
                path,
            };
        }
    }
    Side::Local(PathBuf::from(s))
}

/// Last component of a sandbox path (`.` for `/`).
fn sandbox_base(path: &str) -> &str {
    match path.trim_end_matches('/').rsplit_once('/') {
        Some((_, "")) | None => ".",
        Some((_, b)) => b,
    }
}

fn sandbox_join(dir: &str, name: &str) -> String {
    format!("{}/{name}", dir.trim_end_matches('/'))
}

fn bad(message: impl Into<String>) -> ApiError {
    render::local(Code::InvalidArgument, message)
}

fn io_err(what: &str, e: std::io::Error) -> ApiError {
    bad(format!("{what}: {e}"))
}

/// What a copy did, for the summary.
#[derive(Debug, serde::Serialize)]
struct Summary {
    direction: &'static str,
    source: String,
    destination: String,
    /// `file` or `tar`.
    format: &'static str,
    bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    upload_id: Option<String>,
    resumed_from: u64,
    seconds: f64,
}

pub async fn run(ep: &Target, args: CpArgs) -> i32 {
    let json = args.json;
    let started = Instant::now();
    let result = async {
        let client = Client::connect_target(ep).await?;
        match (parse_side(&args.src), parse_side(&args.dst)) {
            (Side::Sandbox { .. }, Side::Sandbox { .. }) => Err(bad(
                "copying between sandboxes is not supported: copy to the host first",
            )),
            (Side::Sandbox { id, path }, dst) => {
                download(&client, &args, &id, &path, dst, json).await
            }
            (src, Side::Sandbox { id, path }) => {
                upload(&client, &args, src, &id, &path, json).await
            }
            _ => Err(bad(
                "one side must be a sandbox path, e.g. sbx_…:/workspace/file",
            )),
        }
    }
    .await;
    match result {
        Ok(mut s) => {
            s.seconds = started.elapsed().as_secs_f64();
            if json {
                println!("{}", serde_json::to_string(&s).unwrap_or_default());
            } else if std::io::stderr().is_terminal() {
                eprintln!("copied {} bytes to {}", s.bytes, s.destination);
            }
            0
        }
        Err(e) => {
            render::error(&e, None);
            EXIT_CLEANROOM_ERROR
        }
    }
}

fn bar(args: &CpArgs, json: bool, total: Option<u64>) -> indicatif::ProgressBar {
    let big = total.is_none_or(|t| t >= PROGRESS_MIN);
    if args.no_progress || json || !big || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = match total {
        Some(t) => indicatif::ProgressBar::new(t),
        None => indicatif::ProgressBar::no_length(),
    };
    let style = match total {
        Some(_) => "{bar:40} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
        None => "{spinner} {binary_bytes} {binary_bytes_per_sec}",
    };
    if let Ok(s) = indicatif::ProgressStyle::with_template(style) {
        pb.set_style(s);
    }
    pb
}

/// Tell the user how to resume a large upload.
fn announce(src: &str, dst: &str) -> impl FnMut(&str) + Send {
    let (src, dst) = (src.to_string(), dst.to_string());
    let mut told = false;
    move |id: &str| {
        if !told {
            told = true;
            eprintln!(
                "cleanroom: upload {id} started (after an interruption: cleanroom cp --resume {id} {src} {dst})"
            );
        }
    }
}

async fn upload(
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

async fn download(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_parse_like_docker_cp() {
        let id = "sbx_0123456789abcdef0123456789abcdef";
        assert_eq!(parse_side("-"), Side::Stdio);
        assert_eq!(
            parse_side(&format!("{id}:/tmp/x")),
            Side::Sandbox {
                id: id.into(),
                path: "/tmp/x".into()
            }
        );
        assert_eq!(
            parse_side(&format!("{id}:out.json")),
            Side::Sandbox {
                id: id.into(),
                path: "/workspace/out.json".into()
            }
        );
        assert_eq!(parse_side("./a:b"), Side::Local("./a:b".into()));
        assert_eq!(parse_side("dir/"), Side::Local("dir/".into()));
    }

    #[test]
    fn sandbox_names() {
        assert_eq!(sandbox_base("/workspace/out/"), "out");
        assert_eq!(sandbox_base("/"), ".");
        assert_eq!(sandbox_join("/workspace/", "a"), "/workspace/a");
        assert_eq!(parse_mode("0755"), Ok(0o755));
        assert!(parse_mode("9").is_err());
    }
}
