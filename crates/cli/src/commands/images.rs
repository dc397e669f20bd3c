//! `cleanroom image pull|ls|rm`. A tag given to `pull` is resolved by the server (which
//! holds the registry settings and credentials) to the digest its registry serves now;
//! what is pulled, printed and — with `--pin` — written into the policy is that digest, so
//! sandboxes stay digest-only.

use crate::cli::ImageCommand;
use crate::render::{self, EXIT_CLEANROOM_ERROR};
use cleanroom_client::api::*;
use cleanroom_client::endpoint::Target;
use cleanroom_client::ErrorCode;
use cleanroom_client::{ApiError, Client};
use std::path::PathBuf;

pub async fn run(ep: &Target, cmd: ImageCommand) -> Result<i32, ApiError> {
    let client = Client::connect_target(ep).await?;
    match cmd {
        ImageCommand::Pull {
            reference,
            pin,
            policy,
            json,
        } => {
            let pin_to = pin.then(|| policy.unwrap_or_else(|| PathBuf::from("cleanroom.yaml")));
            return pull(&client, reference, pin_to, json).await;
        }
        ImageCommand::Ls { json } => {
            let resp = client
                .images
                .list_images(ListImagesRequest::default())
                .await?
                .into_owned();
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&resp.images).unwrap_or_default()
                );
            } else {
                print!("{}", render::image_table(&resp.images));
            }
        }
        ImageCommand::Rm { digests } => {
            let mut failed = false;
            for digest in digests {
                let req = RemoveImageRequest {
                    digest: digest.clone(),
                    ..Default::default()
                };
                match client.images.remove_image(req).await {
                    Ok(_) => println!("{digest}"),
                    Err(e) => {
                        render::error(&e.into(), None);
                        failed = true;
                    }
                }
            }
            return Ok(if failed { EXIT_CLEANROOM_ERROR } else { 0 });
        }
    }
    Ok(0)
}

/// Resolve (a tag; a digest comes back as it is), pull by the digest, then pin: a
/// reference is written into the policy only once its image pulled and verified.
async fn pull(
    client: &Client,
    reference: String,
    pin_to: Option<PathBuf>,
    json: bool,
) -> Result<i32, ApiError> {
    let tagged = !reference.contains('@');
    let resolved = client
        .images
        .resolve_image(ResolveImageRequest {
            image_ref: reference,
            ..Default::default()
        })
        .await?
        .into_owned();
    let pulled = client
        .images
        .pull_image(PullImageRequest {
            image_ref: resolved.reference.clone(),
            ..Default::default()
        })
        .await?
        .into_owned();
    let digest = pulled
        .image
        .as_option()
        .map_or(resolved.digest.clone(), |i| i.digest.clone());
    if let Some(path) = &pin_to {
        if let Err(e) = crate::pin::write_pin(path, &resolved.reference) {
            return Ok(render::fail(
                ErrorCode::PolicyInvalid,
                format!("--pin {}: {e}", path.display()),
            ));
        }
    }
    if json {
        let out = serde_json::json!({
            "reference": resolved.reference,
            "digest": digest,
            "pinned": pin_to.as_ref().map(|p| p.display().to_string()),
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return Ok(0);
    }
    match (&pin_to, tagged) {
        (Some(path), _) => {
            println!("{}", resolved.reference);
            eprintln!(
                "cleanroom: pinned sandbox.image.ref in {} (sandboxes use the digest, never the tag)",
                path.display()
            );
        }
        (None, true) => {
            println!("{}", resolved.reference);
            eprintln!(
                "cleanroom: the tag resolved to {digest}; sandboxes take only digests: \
                 `--pin` writes this reference into cleanroom.yaml"
            );
        }
        // A digest pull prints the digest, as it always has.
        (None, false) => println!("{digest}"),
    }
    Ok(0)
}
