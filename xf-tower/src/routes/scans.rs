//! Queuing scans: single (`scans`, and its alias `crawls`) and batched.

use axum::extract::State;
use axum::response::Response;
use http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::routes;
use xf_core::api::{
    BatchScanRequest, BatchScanResults, ChangesQuery, PageParams, ScanComparison, ScanEndpoint,
    ScanHistoryItem, ScanOptions, ScanQueued,
};
use xf_core::params::{JobId, PropertyId};
use xf_core::Xf;

use super::{Envelope, IdempotencyHeader, PageEnvelope, Routes};
use crate::error::ApiError;
use crate::extract::{Authed, PathParam, PathParams, Query, Write};
use crate::{envelope, idempotency};

/// `data` of `GET /properties/{propertyId}/scans`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScanHistory {
    /// Newest first.
    pub scans: Vec<ScanHistoryItem>,
}

/// The routes of this module.
pub fn router(routes: Routes) -> Routes {
    routes
        .routes(routes!(queue_scan, list_scans))
        .routes(routes!(scan_changes))
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

/// The property's scans, newest first: each job's state and times and, once completed, its
/// figures, its findings by severity and what it changed in the property's issues (kept from
/// the scan's completion). Beyond the spec.
#[utoipa::path(get, path = "/properties/{propertyId}/scans", tag = "scans",
    params(("propertyId" = inline(PropertyId), Path, description = "Property id"), PageParams),
    responses(
        (status = 200, description = "A page of scans", body = PageEnvelope<ScanHistory>),
        (status = 404, description = "`not_found`"),
    ))]
async fn list_scans(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(property_id): PathParam<PropertyId>,
    Query(page): Query<PageParams>,
) -> Result<Response, ApiError> {
    let page = xf.list_scans(&caller, &property_id, &page).await?;
    Ok(envelope::page("scans", &page))
}

/// What changed between an earlier completed scan of the property (`against`; by default the
/// one completed just before) and this one: the changes counted, per check, and a page of the
/// issues opened, resolved and reopened between the two (each issue's net change over the
/// scans between), sorted by issue id. Beyond the spec.
#[utoipa::path(get, path = "/properties/{propertyId}/scans/{jobId}/changes", tag = "scans",
    params(
        ("propertyId" = inline(PropertyId), Path, description = "Property id"),
        ("jobId" = inline(JobId), Path, description = "The scan's job id"),
        ChangesQuery, PageParams),
    responses(
        (status = 200, description = "The comparison with a page of changed issues", body = PageEnvelope<ScanComparison>),
        (status = 400, description = "`validation_error`: `against` is not an earlier completed scan of the property"),
        (status = 404, description = "`not_found`: no such property, or no such scan of it"),
        (status = 409, description = "`conflict`: the scan has not completed (or completed before history was kept)"),
    ))]
async fn scan_changes(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParams(property_id, job_id): PathParams<PropertyId, JobId>,
    Query(query): Query<ChangesQuery>,
    Query(page): Query<PageParams>,
) -> Result<Response, ApiError> {
    let (comparison, next_cursor) = xf
        .scan_changes(&caller, &property_id, &job_id, &query, &page)
        .await?;
    Ok(envelope::page_of(&comparison, next_cursor.as_deref()))
}
