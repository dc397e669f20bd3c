//! `SandboxService`: create, get, list, download a file, terminate, stream events —
//! translated to the engine's calls (a sandbox is reached only through its owned handle).

use crate::api::{event_msg, to_connect, who, Api};
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::{RequestContext, Response, ServiceRequest, ServiceResult, ServiceStream};
use futures::StreamExt;

#[allow(refining_impl_trait)]
impl SandboxService for Api {
    async fn create_sandbox(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, CreateSandboxRequest>,
    ) -> ServiceResult<CreateSandboxResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let (row, bootstrap) = crate::api::run::create(self, &who, &req).await?;
        Response::ok(CreateSandboxResponse {
            sandbox: self.sandbox_out(&row).into(),
            bootstrap: bootstrap.into(),
            ..Default::default()
        })
    }

    async fn get_sandbox(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, GetSandboxRequest>,
    ) -> ServiceResult<GetSandboxResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let sbx = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        let mut sandbox = self.sandbox_live(&sbx).await;
        (sandbox.egress_approved, sandbox.egress_refused) =
            sbx.effective_egress().map_err(to_connect)?;
        crate::api::network::fill(&self.engine, &sbx, &mut sandbox).map_err(to_connect)?;
        if let Some(l) = &self.exposures {
            sandbox.exposures = l.exposures(&sbx.row().id);
        }
        Response::ok(GetSandboxResponse {
            sandbox: crate::api::pools::with_identity(&sbx, sandbox).into(),
            ..Default::default()
        })
    }

    async fn list_sandboxes(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, ListSandboxesRequest>,
    ) -> ServiceResult<ListSandboxesResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let owner = owner_filter(&who, &req.owner).map_err(to_connect)?;
        let since = req.changed_since.as_option().map(micros);
        let changes = self
            .engine
            .visible_sandboxes_since(&who, since)
            .map_err(to_connect)?;
        let (listed, unlisted): (Vec<_>, Vec<_>) = changes
            .rows
            .iter()
            .partition(|r| listed(&who, &req, owner.as_ref(), r));
        Response::ok(ListSandboxesResponse {
            sandboxes: listed.into_iter().map(|r| self.sandbox_out(r)).collect(),
            cursor: crate::api::ts(changes.cursor),
            complete: changes.complete,
            // A complete answer lists what matches; nothing to drop.
            unlisted_sandbox_ids: match changes.complete {
                true => Vec::new(),
                false => unlisted.into_iter().map(|r| r.id.clone()).collect(),
            },
            ..Default::default()
        })
    }

    async fn download_sandbox_file(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, DownloadSandboxFileRequest>,
    ) -> ServiceResult<DownloadSandboxFileResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let sbx = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        let f = sbx
            .download_file(&req.path, req.max_bytes)
            .await
            .map_err(to_connect)?;
        Response::ok(DownloadSandboxFileResponse {
            path: req.path,
            content: f.content,
            size: f.size,
            truncated: f.truncated,
            ..Default::default()
        })
    }

    async fn terminate_sandbox(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, TerminateSandboxRequest>,
    ) -> ServiceResult<TerminateSandboxResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let sbx = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        let row = match req.background {
            true => sbx.terminate_in_background(),
            false => sbx.terminate().await,
        }
        .map_err(to_connect)?;
        Response::ok(TerminateSandboxResponse {
            sandbox: self.sandbox_out(&row).into(),
            ..Default::default()
        })
    }

    async fn stream_sandbox_events(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, StreamSandboxEventsRequest>,
    ) -> ServiceResult<ServiceStream<SandboxEvent>> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let sbx = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        let rows = sbx
            .stream_events(req.after_sequence, req.follow)
            .map_err(to_connect)?;
        Response::ok(Box::pin(rows.map(|r| Ok(event_msg(r)))))
    }
}

/// Does a sandbox the caller may see match the list request's filters?
fn listed(
    who: &crate::identity::auth::Principal,
    req: &ListSandboxesRequest,
    owner: Option<&crate::model::owner::Owner>,
    r: &crate::store::SandboxRow,
) -> bool {
    (req.include_stopped || !crate::model::status::sandbox::is_terminal(r.status))
        && (!req.only_own || who.owns(&r.owner))
        && crate::store::labels::matches(&r.labels, req.labels.iter())
        && owner.is_none_or(|o| *o == r.owner)
}

/// ListSandboxesRequest.owner: none (empty), any owner for an admin, only the caller's
/// own for anyone else — another name is refused, whether or not it owns anything.
fn owner_filter(
    who: &crate::identity::auth::Principal,
    text: &str,
) -> Result<Option<crate::model::owner::Owner>, crate::model::error::EngineError> {
    use crate::model::error::{EngineError, ErrorCode};
    if text.is_empty() {
        return Ok(None);
    }
    let owner = crate::model::owner::Owner::parse(text).map_err(|_| {
        EngineError::invalid(format!(
            "owner {text:?} is no owner (uid:<n>, or a token's or certificate's principal name)"
        ))
        .with("field", "owner")
    })?;
    if !who.is_admin() && !who.owns(&owner) {
        return Err(EngineError::new(
            ErrorCode::PermissionDenied,
            "only an admin may list another principal's sandboxes",
        )
        .with("reason", "owner_filter"));
    }
    Ok(Some(owner))
}

/// A request's timestamp in microseconds since the epoch.
fn micros(t: &buffa_types::google::protobuf::Timestamp) -> i64 {
    t.seconds
        .saturating_mul(1_000_000)
        .saturating_add(i64::from(t.nanos) / 1000)
}
