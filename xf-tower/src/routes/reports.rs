//! Shared reports (created by the host).

use axum::extract::State;
use axum::response::Response;
use http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::routes;
use xf_core::api::{PageParams, ReportDetail, ReportItem};
use xf_core::params::ReportToken;
use xf_core::Xf;

use super::{Envelope, PageEnvelope, Routes};
use crate::envelope;
use crate::error::ApiError;
use crate::extract::{Authed, PathParam, Query};

/// `data` of `GET /reports`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReportList {
    /// Unexpired reports, newest first.
    pub reports: Vec<ReportItem>,
}

/// `data` of `GET /reports/{token}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReportData {
    /// The report; an expired one has `expired: true`.
    pub report: ReportDetail,
}

/// The routes of this module.
pub fn router(routes: Routes) -> Routes {
    routes
        .routes(routes!(list_reports))
        .routes(routes!(get_report))
}

/// Unexpired share links, newest first.
#[utoipa::path(get, path = "/reports", tag = "reports", params(PageParams),
    responses((status = 200, description = "A page of reports", body = PageEnvelope<ReportList>)))]
async fn list_reports(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    Query(page): Query<PageParams>,
) -> Result<Response, ApiError> {
    let page = xf.list_reports(&caller, &page).await?;
    Ok(envelope::page("reports", &page))
}

/// One report with its scan's score.
#[utoipa::path(get, path = "/reports/{token}", tag = "reports",
    params(("token" = inline(ReportToken), Path, description = "Report token")),
    responses(
        (status = 200, description = "The report", body = Envelope<ReportData>),
        (status = 404, description = "`not_found`"),
    ))]
async fn get_report(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(token): PathParam,
) -> Result<Response, ApiError> {
    let report = xf.get_report(&caller, &token).await?;
    Ok(envelope::data(StatusCode::OK, &ReportData { report }))
}
