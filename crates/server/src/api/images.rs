//! `ImageService`: pull, list and remove cached images, for the images the caller holds.

use crate::api::{to_connect, ts, who, Api};
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::{RequestContext, Response, ServiceRequest, ServiceResult};

fn image_msg(r: cleanroom_image::ImageRecord) -> Image {
    Image {
        digest: r.digest,
        reference: r.reference,
        manifest_digest: r.manifest_digest,
        config_digest: r.config_digest,
        layers: r.layers,
        size: r.size,
        pulled_at: ts(r.pulled_at.saturating_mul(1_000_000)),
        ..Default::default()
    }
}

#[allow(refining_impl_trait)]
impl ImageService for Api {
    async fn pull_image(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, PullImageRequest>,
    ) -> ServiceResult<PullImageResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let rec = self
            .engine
            .pull_image(&req.image_ref)
            .await
            .map_err(to_connect)?;
        self.engine
            .claim_image(&who, &rec.digest)
            .map_err(to_connect)?;
        Response::ok(PullImageResponse {
            image: image_msg(rec).into(),
            ..Default::default()
        })
    }

    async fn resolve_image(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, ResolveImageRequest>,
    ) -> ServiceResult<ResolveImageResponse> {
        who(&ctx)?;
        let req = request.to_owned_message();
        let r = self
            .engine
            .resolve_image(&req.image_ref)
            .await
            .map_err(to_connect)?;
        Response::ok(ResolveImageResponse {
            reference: r.reference,
            digest: r.digest,
            ..Default::default()
        })
    }

    async fn list_images(
        &self,
        ctx: RequestContext,
        _request: ServiceRequest<'_, ListImagesRequest>,
    ) -> ServiceResult<ListImagesResponse> {
        let who = who(&ctx)?;
        let list = self.engine.owned_images(&who).map_err(to_connect)?;
        Response::ok(ListImagesResponse {
            images: list.into_iter().map(image_msg).collect(),
            ..Default::default()
        })
    }

    async fn remove_image(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, RemoveImageRequest>,
    ) -> ServiceResult<RemoveImageResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let rec = self
            .engine
            .remove_owned_image(&who, &req.digest)
            .map_err(to_connect)?;
        Response::ok(RemoveImageResponse {
            image: image_msg(rec).into(),
            ..Default::default()
        })
    }
}
