//! Properties and their issues.

use axum::extract::State;
use axum::response::Response;
use http::StatusCode;
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use xf_core::api::{Includes, IssueListQuery, NewProperty, PropertyView};
use xf_core::model::{Issue, IssueSummary, Property};
use xf_core::Xf;

use super::{Envelope, IdempotencyHeader, IncludeQuery, PageEnvelope, PageQuery};
use crate::error::ApiError;
use crate::extract::{Authed, PathParam, Query, Write};
use crate::{envelope, idempotency};

/// `data` of `POST /properties`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PropertyCreated {
    /// The new property.
    pub property: Property,
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

/// Filters of the issue list.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Read by the OpenAPI derive only; `extract::Query` parses the request.
pub struct IssueFilters {
    /// `site` or `page`.
    #[param(rename = "scanKind")]
    scan_kind: Option<String>,
    /// `open`, `resolved` or `fixed`.
    status: Option<String>,
}

/// The routes of this module.
pub fn router() -> OpenApiRouter<Xf> {
    OpenApiRouter::new()
        .routes(routes!(list_properties, create_property))
        .routes(routes!(get_property))
        .routes(routes!(list_issues))
}

/// The organization's properties, newest first.
#[utoipa::path(get, path = "/properties", tag = "properties", params(PageQuery, IncludeQuery),
    responses((status = 200, description = "A page of properties", body = PageEnvelope<PropertyList>)))]
async fn list_properties(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    query: Query,
) -> Result<Response, ApiError> {
    let includes = Includes::parse(query.get("include"))?;
    let page = xf
        .list_properties(&caller, &query.page()?, includes)
        .await?;
    Ok(envelope::page("properties", &page))
}

/// Registers a website. The URL is normalised and unique within the organization.
#[utoipa::path(post, path = "/properties", tag = "properties", params(IdempotencyHeader),
    request_body = NewProperty,
    responses(
        (status = 201, description = "Created", body = Envelope<PropertyCreated>),
        (status = 409, description = "`conflict`: the URL is registered already, or `idempotency_key_in_use`"),
        (status = 422, description = "`idempotency_key_reused`"),
    ))]
async fn create_property(State(xf): State<Xf>, Authed(caller): Authed, write: Write) -> Response {
    idempotency::respond(&xf, &caller, &write, StatusCode::CREATED, || async {
        let property = xf
            .create_property(&caller, &write.fingerprint, write.json()?)
            .await?;
        Ok(PropertyCreated { property })
    })
    .await
}

/// One property, with optional enrichments.
#[utoipa::path(get, path = "/properties/{propertyId}", tag = "properties",
    params(("propertyId" = String, Path, description = "Property id"), IncludeQuery),
    responses(
        (status = 200, description = "The property", body = Envelope<PropertyView>),
        (status = 404, description = "`not_found`"),
    ))]
async fn get_property(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(property_id): PathParam,
    query: Query,
) -> Result<Response, ApiError> {
    let includes = Includes::parse(query.get("include"))?;
    let view = xf.get_property(&caller, &property_id, includes).await?;
    Ok(envelope::data(StatusCode::OK, &view))
}

/// The property's issues with their lifecycle summary.
#[utoipa::path(get, path = "/properties/{propertyId}/issues", tag = "properties",
    params(("propertyId" = String, Path, description = "Property id"), PageQuery, IssueFilters),
    responses(
        (status = 200, description = "Summary and a page of issues", body = PageEnvelope<IssueList>),
        (status = 404, description = "`not_found`"),
    ))]
async fn list_issues(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(property_id): PathParam,
    query: Query,
) -> Result<Response, ApiError> {
    let filters = IssueListQuery {
        scan_kind: query.string("scanKind"),
        status: query.string("status"),
    };
    let result = xf
        .list_issues(&caller, &property_id, &filters, &query.page()?)
        .await?;
    let data = IssueList {
        summary: result.summary,
        issues: result.issues.items,
    };
    let data = serde_json::to_string(&data).map_err(|e| xf_core::Error::Internal(e.to_string()))?;
    Ok(envelope::page_with(
        &data,
        result.issues.next_cursor.as_deref(),
    ))
}
