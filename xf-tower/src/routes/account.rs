//! The organization overview, usage, limits and live rate-limit counters.

use axum::extract::State;
use axum::response::Response;
use http::StatusCode;
use utoipa_axum::routes;
use xf_core::api::{LimitsReport, OrganizationOverview, RateLimitsReport, UsageReport};
use xf_core::Xf;

use super::{Envelope, Routes};
use crate::envelope;
use crate::error::ApiError;
use crate::extract::Authed;

/// The routes of this module.
pub fn router(routes: Routes) -> Routes {
    routes
        .routes(routes!(organization))
        .routes(routes!(usage))
        .routes(routes!(limits))
        .routes(routes!(rate_limits))
}

/// The organization, its plan and totals.
#[utoipa::path(get, path = "/organization", tag = "organization",
    responses((status = 200, description = "Organization overview", body = Envelope<OrganizationOverview>)))]
async fn organization(State(xf): State<Xf>, Authed(caller): Authed) -> Result<Response, ApiError> {
    Ok(envelope::data(
        StatusCode::OK,
        &xf.organization_overview(&caller).await?,
    ))
}

/// This month's plan meters and job activity.
#[utoipa::path(get, path = "/usage", tag = "organization",
    responses((status = 200, description = "Usage", body = Envelope<UsageReport>)))]
async fn usage(State(xf): State<Xf>, Authed(caller): Authed) -> Result<Response, ApiError> {
    Ok(envelope::data(StatusCode::OK, &xf.usage(&caller).await?))
}

/// The plan's rate limits and the current period.
#[utoipa::path(get, path = "/limits", tag = "organization",
    responses((status = 200, description = "Limits", body = Envelope<LimitsReport>)))]
async fn limits(State(xf): State<Xf>, Authed(caller): Authed) -> Response {
    envelope::data(StatusCode::OK, &xf.limits(&caller))
}

/// Live counters of the calling key and its organization.
#[utoipa::path(get, path = "/rate-limits", tag = "organization",
    responses((status = 200, description = "Rate-limit counters", body = Envelope<RateLimitsReport>)))]
async fn rate_limits(State(xf): State<Xf>, Authed(caller): Authed) -> Result<Response, ApiError> {
    Ok(envelope::data(
        StatusCode::OK,
        &xf.rate_limits(&caller).await?,
    ))
}
