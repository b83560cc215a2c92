//! Scan schedules (beyond the spec).

use axum::extract::State;
use axum::response::Response;
use http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::routes;
use xf_core::api::{DeletedSchedule, ScheduleRequest, ScheduleView};
use xf_core::params::PropertyId;
use xf_core::Xf;

use super::{Envelope, Routes};
use crate::envelope;
use crate::error::ApiError;
use crate::extract::{Authed, PathParam, Sent};

/// `data` of the schedule's `PUT` and `GET`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleData {
    /// The schedule.
    pub schedule: ScheduleView,
}

/// The routes of this module.
pub fn router(routes: Routes) -> Routes {
    routes.routes(routes!(put_schedule, get_schedule, delete_schedule))
}

/// Sets the property's scan schedule, replacing any it had: a scan at a local time in an IANA
/// time zone, daily, weekly on `dayOfWeek` or monthly on `dayOfMonth`. Each slot queues one
/// `seo-scan` counted against `scansPerMonth`, across any number of instances; a slot is
/// skipped (and recorded) while a scan of the property is pending or running, and one that
/// finds the quota spent is recorded and sent as `scan.schedule.failed`.
#[utoipa::path(put, path = "/properties/{propertyId}/schedule", tag = "scans",
    request_body = ScheduleRequest,
    params(("propertyId" = inline(PropertyId), Path, description = "Property id")),
    responses(
        (status = 200, description = "The schedule as it is now", body = Envelope<ScheduleData>),
        (status = 400, description = "`validation_error`, naming the field"),
        (status = 404, description = "`not_found`"),
    ))]
async fn put_schedule(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(property_id): PathParam<PropertyId>,
    sent: Sent,
) -> Result<Response, ApiError> {
    let schedule = xf.put_schedule(&caller, &property_id, sent.json()?).await?;
    Ok(envelope::data(StatusCode::OK, &ScheduleData { schedule }))
}

/// The property's scan schedule, its next slot and its latest runs.
#[utoipa::path(get, path = "/properties/{propertyId}/schedule", tag = "scans",
    params(("propertyId" = inline(PropertyId), Path, description = "Property id")),
    responses(
        (status = 200, description = "The schedule", body = Envelope<ScheduleData>),
        (status = 404, description = "`not_found`: no such property, or it has no schedule"),
    ))]
async fn get_schedule(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(property_id): PathParam<PropertyId>,
) -> Result<Response, ApiError> {
    let schedule = xf.get_schedule(&caller, &property_id).await?;
    Ok(envelope::data(StatusCode::OK, &ScheduleData { schedule }))
}

/// Stops the property's scheduled scans (the record of past slots stays).
#[utoipa::path(delete, path = "/properties/{propertyId}/schedule", tag = "scans",
    params(("propertyId" = inline(PropertyId), Path, description = "Property id")),
    responses(
        (status = 200, description = "Deleted", body = Envelope<DeletedSchedule>),
        (status = 404, description = "`not_found`: no such property, or it has no schedule"),
    ))]
async fn delete_schedule(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(property_id): PathParam<PropertyId>,
) -> Result<Response, ApiError> {
    let deleted = xf.delete_schedule(&caller, &property_id).await?;
    Ok(envelope::data(StatusCode::OK, &deleted))
}
