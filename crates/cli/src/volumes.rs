//! `cleanroom volume create|ls|inspect|rm`: thin client of the server's `VolumeService`.
//! Mounting is `--volume NAME:/PATH[:ro]` on `exec`, `create`, `console` and
//! `sandbox create` (and the policy's `sandbox.volumes`); there is no command that reads
//! or writes a volume's files directly: that is what a sandbox mounting it is for.

use crate::render;
use clap::Subcommand;
use cleanroom_client::api::*;
use cleanroom_client::endpoint::Target;
use cleanroom_client::{ApiError, Client, ErrorCode};

/// Named volumes.
#[derive(Debug, Subcommand)]
pub enum VolumeCommand {
    /// Create a volume (an empty filesystem of --size, owned by you); prints its name
    Create {
        /// 1-63 of a-z 0-9 . _ - (unique among your volumes)
        name: String,
        /// Size cap: writes past it fail with ENOSPC in the sandbox (B, KiB, MiB, GiB,
        /// TiB; 16MiB to 1TiB; only written blocks take disk on the server)
        #[arg(long, value_name = "SIZE", default_value = "1GiB")]
        size: String,
        /// Print the volume as JSON
        #[arg(long)]
        json: bool,
    },
    /// List your volumes (an admin: everyone's)
    Ls {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Show one volume (id, size, owner, the live sandboxes that mount it)
    Inspect {
        /// Name (or vol_… id)
        volume: String,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Remove volumes and their contents (refused with volume_in_use while a live sandbox
    /// mounts one)
    Rm {
        /// Names (or vol_… ids)
        #[arg(required = true)]
        volumes: Vec<String>,
    },
}

/// `1GiB`, `512MiB`, `64M`, `1073741824`.
fn parse_size(s: &str) -> Result<u64, ApiError> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        _ => u32::MAX,
    };
    num.parse::<u64>()
        .ok()
        .filter(|_| shift != u32::MAX)
        .and_then(|n| n.checked_mul(1u64 << shift.min(63)))
        .ok_or_else(|| {
            render::local(
                ErrorCode::InvalidArgument,
                format!("--size {s:?}: expected a number of bytes with an optional unit (KiB, MiB, GiB, TiB), e.g. 1GiB"),
            )
        })
}

fn detail(v: &Volume) -> String {
    format!(
        "name:        {}\nvolume_id:   {}\nowner:       {}\nsize:        {} MiB\ncreated_at:  {}\nmounted_by:  {}\n",
        v.name,
        v.volume_id,
        v.owner,
        v.size_bytes >> 20,
        render::time(&v.created_at),
        if v.mounted_by.is_empty() {
            "-".to_string()
        } else {
            format!(
                "{} ({})",
                v.mounted_by.join(", "),
                if v.mounted_rw { "read-write" } else { "read-only" }
            )
        }
    )
}

/// `cleanroom volume …`.
pub async fn run(ep: &Target, cmd: VolumeCommand) -> Result<i32, ApiError> {
    let client = Client::connect_target(ep).await?;
    match cmd {
        VolumeCommand::Create { name, size, json } => {
            let size_bytes = parse_size(&size)?;
            let r = client
                .volumes
                .create_volume(CreateVolumeRequest {
                    name,
                    size_bytes,
                    ..Default::default()
                })
                .await?
                .into_owned();
            let v = r.volume.as_option().cloned().unwrap_or_default();
            if json {
                println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            } else {
                println!("{}", v.name);
            }
        }
        VolumeCommand::Ls { json } => {
            let r = client
                .volumes
                .list_volumes(ListVolumesRequest::default())
                .await?
                .into_owned();
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&r.volumes).unwrap_or_default()
                );
            } else {
                println!(
                    "{:<24} {:>10} {:<16} MOUNTED_BY",
                    "NAME", "SIZE_MIB", "OWNER"
                );
                for v in &r.volumes {
                    println!(
                        "{:<24} {:>10} {:<16} {}",
                        v.name,
                        v.size_bytes >> 20,
                        v.owner,
                        if v.mounted_by.is_empty() {
                            "-".to_string()
                        } else {
                            v.mounted_by.join(",")
                        }
                    );
                }
            }
        }
        VolumeCommand::Inspect { volume, json } => {
            let r = client
                .volumes
                .get_volume(GetVolumeRequest {
                    volume,
                    ..Default::default()
                })
                .await?
                .into_owned();
            let v = r.volume.as_option().cloned().unwrap_or_default();
            if json {
                println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            } else {
                print!("{}", detail(&v));
            }
        }
        VolumeCommand::Rm { volumes } => {
            let client = &client;
            return Ok(render::each_id(volumes, |volume| async move {
                client
                    .volumes
                    .delete_volume(DeleteVolumeRequest {
                        volume,
                        ..Default::default()
                    })
                    .await
                    .map(drop)
                    .map_err(Into::into)
            })
            .await);
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(super::parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(super::parse_size("16MiB").unwrap(), 16 << 20);
        assert_eq!(super::parse_size("64m").unwrap(), 64 << 20);
        assert_eq!(super::parse_size("4096").unwrap(), 4096);
        assert!(super::parse_size("1.5GiB").is_err());
        assert!(super::parse_size("GiB").is_err());
        assert!(super::parse_size("1PiB").is_err());
        assert!(super::parse_size("99999999999TiB").is_err());
    }
}
