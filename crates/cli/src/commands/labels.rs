//! `--label KEY=VALUE` of `sandbox create`, `sandbox ls` and `sandbox rm`.

use crate::render;
use cleanroom_client::api::*;
use cleanroom_client::{ApiError, Client};

/// clap value parser of `--label KEY=VALUE` (the server checks lengths and characters).
pub fn parse(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("expected KEY=VALUE (like team=search), got {s:?}")),
    }
}

/// `sandbox rm --label …` / `sandbox rm --all`: terminate the caller's own live sandboxes
/// carrying every label (all of them for `--all`). Never another principal's, also for an
/// admin: the list asks for `only_own`.
pub async fn rm_matching(client: &Client, labels: Vec<(String, String)>) -> Result<i32, ApiError> {
    let list = client
        .sandboxes
        .list_sandboxes(ListSandboxesRequest {
            labels: labels.into_iter().collect(),
            only_own: true,
            ..Default::default()
        })
        .await?
        .into_owned();
    let ids = list.sandboxes.into_iter().map(|s| s.sandbox_id);
    Ok(render::each_id(ids, |id| async move {
        client
            .sandboxes
            .terminate_sandbox(TerminateSandboxRequest {
                sandbox_id: id,
                ..Default::default()
            })
            .await
            .map(drop)
            .map_err(Into::into)
    })
    .await)
}
