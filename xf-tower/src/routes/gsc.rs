//! Search Console: the portfolio summary, a property's stored snapshot, overview and rows,
//! and the sync, the only route that contacts Google.

use axum::extract::State;
use axum::response::Response;
use http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::routes;
use xf_core::api::{
    GscOverview, GscPageRow, GscPortfolio, GscQueryRow, GscSyncResult, PageParams,
    PropertyGscDetail,
};
use xf_core::params::PropertyId;
use xf_core::Xf;

use super::{Envelope, PageEnvelope, Routes};
use crate::envelope;
use crate::error::ApiError;
use crate::extract::{Authed, PathParam, Query};

/// `data` of `GET /properties/{propertyId}/gsc/queries`.
#[derive(Debug, Serialize, ToSchema)]
pub struct GscQueryList {
    /// Query rows by clicks, descending.
    pub queries: Vec<GscQueryRow>,
}

/// `data` of `GET /properties/{propertyId}/gsc/pages`.
#[derive(Debug, Serialize, ToSchema)]
pub struct GscPageList {
    /// Page rows by clicks, descending, with their crawl correlation.
    pub pages: Vec<GscPageRow>,
}

/// The routes of this module.
pub fn router(routes: Routes) -> Routes {
    routes
        .routes(routes!(get_gsc_portfolio))
        .routes(routes!(get_property_gsc))
        .routes(routes!(get_gsc_overview))
        .routes(routes!(list_gsc_queries))
        .routes(routes!(list_gsc_pages))
        .routes(routes!(sync_gsc))
}

/// The organization's Search Console portfolio, from stored snapshots (no call to Google).
#[utoipa::path(get, path = "/organization/gsc", tag = "search-console",
    responses((status = 200, description = "The portfolio summary", body = Envelope<GscPortfolio>)))]
async fn get_gsc_portfolio(
    State(xf): State<Xf>,
    Authed(caller): Authed,
) -> Result<Response, ApiError> {
    Ok(envelope::data(
        StatusCode::OK,
        &xf.gsc_portfolio(&caller).await?,
    ))
}

/// The property's Search Console state and its stored 28-day snapshot (null when not linked
/// or not synced yet).
#[utoipa::path(get, path = "/properties/{propertyId}/gsc", tag = "search-console",
    params(("propertyId" = inline(PropertyId), Path, description = "Property id")),
    responses(
        (status = 200, description = "State and snapshot", body = Envelope<PropertyGscDetail>),
        (status = 404, description = "`not_found`"),
    ))]
async fn get_property_gsc(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(id): PathParam<PropertyId>,
) -> Result<Response, ApiError> {
    Ok(envelope::data(
        StatusCode::OK,
        &xf.property_gsc(&caller, &id).await?,
    ))
}

/// The property's connection state and snapshot totals.
#[utoipa::path(get, path = "/properties/{propertyId}/gsc/overview", tag = "search-console",
    params(("propertyId" = inline(PropertyId), Path, description = "Property id")),
    responses(
        (status = 200, description = "Connection state and totals", body = Envelope<GscOverview>),
        (status = 404, description = "`not_found`"),
    ))]
async fn get_gsc_overview(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(id): PathParam<PropertyId>,
) -> Result<Response, ApiError> {
    Ok(envelope::data(
        StatusCode::OK,
        &xf.property_gsc_overview(&caller, &id).await?,
    ))
}

/// The snapshot's search queries by clicks; empty without a snapshot.
#[utoipa::path(get, path = "/properties/{propertyId}/gsc/queries", tag = "search-console",
    params(("propertyId" = inline(PropertyId), Path, description = "Property id"), PageParams),
    responses(
        (status = 200, description = "A page of query rows", body = PageEnvelope<GscQueryList>),
        (status = 400, description = "`validation_error`: a bad limit or cursor, or a cursor of an earlier snapshot"),
        (status = 404, description = "`not_found`"),
    ))]
async fn list_gsc_queries(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(id): PathParam<PropertyId>,
    Query(page): Query<PageParams>,
) -> Result<Response, ApiError> {
    let page = xf.gsc_queries(&caller, &id, &page).await?;
    Ok(envelope::page("queries", &page))
}

/// The snapshot's landing pages by clicks, each with the latest scan's status and open
/// issues for its URL; empty without a snapshot.
#[utoipa::path(get, path = "/properties/{propertyId}/gsc/pages", tag = "search-console",
    params(("propertyId" = inline(PropertyId), Path, description = "Property id"), PageParams),
    responses(
        (status = 200, description = "A page of page rows", body = PageEnvelope<GscPageList>),
        (status = 400, description = "`validation_error`: a bad limit or cursor, or a cursor of an earlier snapshot"),
        (status = 404, description = "`not_found`"),
    ))]
async fn list_gsc_pages(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(id): PathParam<PropertyId>,
    Query(page): Query<PageParams>,
) -> Result<Response, ApiError> {
    let page = xf.gsc_pages(&caller, &id, &page).await?;
    Ok(envelope::page("pages", &page))
}

/// Fetches the property's last 28 days from Google with the organization's linked account
/// and replaces its snapshot. A sync of the property already running is not repeated
/// (`synced: false`).
#[utoipa::path(post, path = "/properties/{propertyId}/gsc/sync", tag = "search-console",
    params(("propertyId" = inline(PropertyId), Path, description = "Property id")),
    responses(
        (status = 202, description = "Synced (or already syncing)", body = Envelope<GscSyncResult>),
        (status = 400, description = "`gsc_not_configured`, `gsc_not_linked`, `gsc_token_revoked` or `gsc_site_inaccessible`"),
        (status = 404, description = "`not_found`"),
        (status = 429, description = "`rate_limit`: ours, or Google's (with `Retry-After`)"),
        (status = 503, description = "`unavailable`: Google failed or did not answer (with `Retry-After`)"),
    ))]
async fn sync_gsc(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(id): PathParam<PropertyId>,
) -> Result<Response, ApiError> {
    Ok(envelope::data(
        StatusCode::ACCEPTED,
        &xf.sync_property_gsc(&caller, &id).await?,
    ))
}
