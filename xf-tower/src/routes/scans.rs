//! Queuing scans: single (`scans`, and its alias `crawls`) and batched.

use axum::extract::State;
use axum::response::Response;
use http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use xf_core::api::{BatchScanRequest, BatchScanResults, ScanEndpoint, ScanOptions, ScanQueued};
use xf_core::params::PropertyId;
use xf_core::Xf;

use super::{Envelope, IdempotencyHeader};
use crate::extract::{Authed, PathParam, Write};
use crate::idempotency;

/// The routes of this module.
pub fn router() -> OpenApiRouter<Xf> {
    OpenApiRouter::new()
        .routes(routes!(queue_scan))
        .routes(routes!(queue_crawl))
        .routes(routes!(queue_batch))
}

/// Queues a multi-page `seo-scan` job. Limits default to, and are clamped to, the plan's.
/// The crawl keeps to the property's scope (its site, or the part under a URL-prefix
/// property's path) and follows redirects of every kind: 3xx, `Refresh` headers and
/// `<meta http-equiv="refresh">`.
#[utoipa::path(post, path = "/properties/{propertyId}/scans", tag = "scans",
    params(("propertyId" = inline(PropertyId), Path, description = "Property id"), IdempotencyHeader),
    request_body(content = Option<ScanOptions>, description = "Optional budgets"),
    responses(
        (status = 202, description = "Queued", body = Envelope<ScanQueued>),
        (status = 404, description = "`not_found`"),
    ))]
async fn queue_scan(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(property_id): PathParam<PropertyId>,
    write: Write,
) -> Response {
    scan(xf, caller, property_id, write, ScanEndpoint::Scan).await
}

/// Alias of `scans`; crawls run as `seo-scan` jobs. The queued job also shows `progress`.
#[utoipa::path(post, path = "/properties/{propertyId}/crawls", tag = "scans",
    params(("propertyId" = inline(PropertyId), Path, description = "Property id"), IdempotencyHeader),
    request_body(content = Option<ScanOptions>, description = "Optional budgets"),
    responses(
        (status = 202, description = "Queued", body = Envelope<ScanQueued>),
        (status = 404, description = "`not_found`"),
    ))]
async fn queue_crawl(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(property_id): PathParam<PropertyId>,
    write: Write,
) -> Response {
    scan(xf, caller, property_id, write, ScanEndpoint::Crawl).await
}

async fn scan(
    xf: Xf,
    caller: xf_core::Caller,
    property_id: PropertyId,
    write: Write,
    endpoint: ScanEndpoint,
) -> Response {
    idempotency::respond(&xf, &caller, &write, StatusCode::ACCEPTED, || async {
        let options: ScanOptions = write.json_or_default()?;
        xf.queue_scan(&caller, &write.fingerprint, &property_id, options, endpoint)
            .await
    })
    .await
}

/// Queues up to 25 scans; each item succeeds or fails on its own, so this is 202 even when
/// some items fail.
#[utoipa::path(post, path = "/scans/batch", tag = "scans", params(IdempotencyHeader),
    request_body = BatchScanRequest,
    responses(
        (status = 202, description = "Per-item results", body = Envelope<BatchScanResults>),
    ))]
async fn queue_batch(State(xf): State<Xf>, Authed(caller): Authed, write: Write) -> Response {
    idempotency::respond(&xf, &caller, &write, StatusCode::ACCEPTED, || async {
        let batch: BatchScanRequest = write.json()?;
        xf.queue_batch(&caller, &write.fingerprint, batch).await
    })
    .await
}
