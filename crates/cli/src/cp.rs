//! `cleanroom cp SRC DST`: files and directories between this host and a sandbox, with
//! `docker cp` habits. One side is `sbx_…:PATH` (a relative PATH is under /workspace);
//! `-` is stdin or stdout as a tar stream (or, with `--raw`, one file's bytes). The
//! transfer logic is the client crate's ([`cleanroom_client::files`]); this module only
//! decides names, walks local trees and renders.

use crate::render::{self, EXIT_CLEANROOM_ERROR};
use clap::Args;
use cleanroom_client::endpoint::Target;
use cleanroom_client::ErrorCode;
use cleanroom_client::{ApiError, Client};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

mod download;
mod extract;
mod upload;
use download::download;
use upload::upload;

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
/// sandbox's own identity. A download never follows a link beneath DEST (a link at the
/// destination is refused: destination_is_link), recreates no setuid bit, device or FIFO,
/// and refuses entries named with `..` or a root (unsafe_archive_entry). A large upload prints its id; after an interruption
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
    render::local(ErrorCode::InvalidArgument, message)
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
    /// Download: device and FIFO entries that were not recreated on this host.
    #[serde(skip_serializing_if = "is_zero")]
    skipped: u64,
    seconds: f64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
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
