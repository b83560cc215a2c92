//! Properties and their issues.

use axum::extract::State;
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::routes;
use xf_core::api::{IncludeParams, IssueListQuery, NewProperty, PageParams, PropertyView};
use xf_core::model::{Issue, IssueSummary, Property};
use xf_core::params::PropertyId;
use xf_core::Xf;

use super::{Envelope, IdempotencyHeader, PageEnvelope, Routes};
use crate::envelope::{self, Answer};
use crate::error::ApiError;
use crate::extract::{Authed, PathParam, Query, Write};
use crate::idempotency;

/// `data` of `POST /properties`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PropertyCreated<'a> {
    /// The new property.
    pub property: &'a Property,
}

/// `data` of `GET /properties`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PropertyList {
    /// Newest first.
    pub properties: Vec<PropertyView>,
}

/// `data` of `GET /properties/{propertyId}/issues`.
#[derive(Debug, Serialize, ToSchema)]
pub struct IssueList {
    /// Counts over all the property's issues.
    pub summary: IssueSummary,
    /// Newest first.
    pub issues: Vec<Issue>,
}

/// The routes of this module.
pub fn router(routes: Routes) -> Routes {
    routes
        .routes(routes!(list_properties, create_property))
        .routes(routes!(get_property))
        .routes(routes!(list_issues))
        .routes(routes!(export_issues))
}

/// The organization's properties, newest first.
#[utoipa::path(get, path = "/properties", tag = "properties", params(PageParams, IncludeParams),
    responses((status = 200, description = "A page of properties", body = PageEnvelope<PropertyList>)))]
async fn list_properties(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    Query(page): Query<PageParams>,
    Query(include): Query<IncludeParams>,
) -> Result<Response, ApiError> {
    let page = xf.list_properties(&caller, &page, include.include).await?;
    Ok(envelope::page("properties", &page))
}

/// Registers a website. The URL is normalised and unique within the organization.
#[utoipa::path(post, path = "/properties", tag = "properties", params(IdempotencyHeader),
    request_body = NewProperty,
    responses(
        (status = 201, description = "Created", body = Envelope<PropertyCreated>),
        (status = 409, description = "`conflict`: the URL is registered already, or `idempotency_key_in_use`"),
    ))]
async fn create_property(State(xf): State<Xf>, Authed(caller): Authed, write: Write) -> Response {
    let answer = |property: &Property| Answer::of(&PropertyCreated { property });
    idempotency::respond_keeping(
        &xf,
        &caller,
        &write,
        StatusCode::CREATED,
        answer,
        |keep| async {
            xf.create_property_keeping(&caller, &write.fingerprint, write.json()?, keep)
                .await
        },
    )
    .await
}

/// One property, with optional enrichments.
#[utoipa::path(get, path = "/properties/{propertyId}", tag = "properties",
    params(("propertyId" = inline(PropertyId), Path, description = "Property id"), IncludeParams),
    responses(
        (status = 200, description = "The property", body = Envelope<PropertyView>),
        (status = 404, description = "`not_found`"),
    ))]
async fn get_property(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(property_id): PathParam<PropertyId>,
    Query(include): Query<IncludeParams>,
) -> Result<Response, ApiError> {
    let view = xf
        .get_property(&caller, &property_id, include.include)
        .await?;
    Ok(envelope::data(StatusCode::OK, &view))
}

/// The property's issues with their lifecycle summary. Filters beyond the spec: `type`,
/// `severity`, `url`. The export is `GET /properties/{propertyId}/issues.csv` (a request here
/// that prefers `Accept: text/csv` is answered as that operation answers).
#[utoipa::path(get, path = "/properties/{propertyId}/issues", tag = "properties",
    params(("propertyId" = inline(PropertyId), Path, description = "Property id"), PageParams, IssueListQuery),
    responses(
        (status = 200, description = "Summary and a page of issues", body = PageEnvelope<IssueList>),
        (status = 404, description = "`not_found`"),
    ))]
async fn list_issues(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(property_id): PathParam<PropertyId>,
    Query(page): Query<PageParams>,
    Query(filters): Query<IssueListQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let accept = headers
        .get(http::header::ACCEPT)
        .and_then(|value| value.to_str().ok());
    if accept.is_some_and(crate::csv::prefers_csv) {
        return issues_csv(&xf, &caller, &property_id, &filters).await;
    }
    let result = xf
        .list_issues(&caller, &property_id, &filters, &page)
        .await?;
    let data = IssueList {
        summary: result.summary,
        issues: result.issues.items,
    };
    Ok(envelope::page_of(
        &data,
        result.issues.next_cursor.as_deref(),
    ))
}

/// Every issue of the property matching the list's filters, as CSV (RFC 4180, a header row,
/// newest first), streamed a page of the store at a time. Beyond the spec.
#[utoipa::path(get, path = "/properties/{propertyId}/issues.csv", tag = "properties",
    params(("propertyId" = inline(PropertyId), Path, description = "Property id"), IssueListQuery),
    responses(
        (status = 200, description = "The issues as CSV", content_type = "text/csv", body = String),
        (status = 404, description = "`not_found`"),
    ))]
async fn export_issues(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(property_id): PathParam<PropertyId>,
    Query(filters): Query<IssueListQuery>,
) -> Result<Response, ApiError> {
    issues_csv(&xf, &caller, &property_id, &filters).await
}

async fn issues_csv(
    xf: &Xf,
    caller: &xf_core::Caller,
    property_id: &PropertyId,
    filters: &IssueListQuery,
) -> Result<Response, ApiError> {
    let export = xf.issues_csv(caller, property_id, filters).await?;
    Ok(crate::csv::response(export))
}
