//! The host's admin API (`/admin` on the standalone server): what the spec says "happens in
//! the web app". Bearer-authenticated with the host's admin token; `{data, meta}` envelopes.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, patch, post, put};
use axum::Router;
use http::StatusCode;
use serde::{Deserialize, Serialize};
use xf_core::ids::{ApiKeyId, IssueId, OrganizationId, PropertyId};
use xf_core::model::{Issue, KeyMode, Organization};
use xf_core::{Error, NewOrganization, NewReport, OrganizationPatch, UsageDelta, Xf};

use crate::envelope;
use crate::error::ApiError;
use crate::extract::{bearer, Json, PathParam};
use crate::middleware;

#[derive(Debug, Deserialize)]
struct NewApiKey {
    mode: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GscLink {
    site_url: String,
}

#[derive(Debug, Serialize)]
struct OrganizationData {
    organization: Organization,
}

#[derive(Debug, Serialize)]
struct PropertyData {
    property: xf_core::api::PropertyView,
}

#[derive(Debug, Serialize)]
struct IssueData {
    issue: Issue,
}

#[derive(Debug, Serialize)]
struct ReportData {
    report: xf_core::api::ReportItem,
}

#[derive(Debug, Serialize)]
struct UsageData {
    usage: xf_core::model::UsageCounters,
}

#[derive(Clone)]
struct AdminState {
    xf: Xf,
    token: Arc<str>,
}

/// The admin API as a tower service. Routes are relative to its mount point (`/admin`).
#[derive(Clone, Debug)]
pub struct AdminService {
    router: Router,
}

impl AdminService {
    /// The admin service over `xf`, accepting `Authorization: Bearer <token>`.
    pub fn new(xf: Xf, token: impl Into<String>) -> Self {
        let state = AdminState {
            xf,
            token: Arc::from(token.into()),
        };
        let router = Router::new()
            .route("/organizations", post(create_organization))
            .route("/organizations/{org_id}", patch(update_organization))
            .route("/organizations/{org_id}/api-keys", post(create_api_key))
            .route("/organizations/{org_id}/usage", post(record_usage))
            .route("/organizations/{org_id}/gsc", put(link_organization_gsc))
            .route("/organizations/{org_id}/gsc/sites", get(list_gsc_sites))
            .route("/organizations/{org_id}/channels", post(connect_channel))
            .route(
                "/organizations/{org_id}/connect-links",
                post(create_connect_link),
            )
            .route("/api-keys/{key_id}", delete(revoke_api_key))
            .route("/channels/{channel_id}", patch(update_channel))
            .route("/properties/{property_id}/verify", post(verify_property))
            .route("/properties/{property_id}/gsc", put(link_property_gsc))
            .route("/issues/{issue_id}/fixed", post(mark_issue_fixed))
            .route("/reports", post(create_report))
            .route("/reports/{token}/views", post(record_report_view))
            .route_layer(axum::middleware::from_fn_with_state(
                state.clone(),
                authenticate,
            ))
            .method_not_allowed_fallback(middleware::method_not_allowed)
            .fallback(middleware::not_found)
            .with_state(state);
        Self {
            router: crate::with_common_layers(router, crate::request_id::Service::Admin),
        }
    }

    /// The axum `Router` inside.
    pub fn into_router(self) -> Router {
        self.router
    }
}

impl std::fmt::Debug for AdminState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminState").finish_non_exhaustive()
    }
}

crate::router_service!(AdminService);

async fn authenticate(State(state): State<AdminState>, request: Request, next: Next) -> Response {
    let given = bearer(request.headers()).unwrap_or("");
    // Compare hashes so the comparison takes the same time whatever the guess.
    let matches = xf_core::auth::hashes_match(
        &xf_core::auth::hash_key(given),
        &xf_core::auth::hash_key(&state.token),
    );
    if given.is_empty() || !matches {
        return ApiError(Error::AdminTokenInvalid).into_response();
    }
    next.run(request).await
}

type Handled = std::result::Result<Response, ApiError>;

async fn create_organization(
    State(s): State<AdminState>,
    Json(input): Json<NewOrganization>,
) -> Handled {
    let created = s.xf.admin_create_organization(input).await?;
    Ok(envelope::data(StatusCode::CREATED, &created))
}

async fn update_organization(
    State(s): State<AdminState>,
    PathParam(org_id): PathParam<OrganizationId>,
    Json(patch): Json<OrganizationPatch>,
) -> Handled {
    let organization = s.xf.admin_update_organization(&org_id, patch).await?;
    Ok(envelope::data(
        StatusCode::OK,
        &OrganizationData { organization },
    ))
}

async fn create_api_key(
    State(s): State<AdminState>,
    PathParam(org_id): PathParam<OrganizationId>,
    Json(input): Json<NewApiKey>,
) -> Handled {
    let mode = KeyMode::parse(&input.mode)
        .ok_or_else(|| Error::invalid("mode", "must be live or test"))?;
    let created = s.xf.admin_create_api_key(&org_id, mode).await?;
    Ok(envelope::data(StatusCode::CREATED, &created))
}

async fn revoke_api_key(
    State(s): State<AdminState>,
    PathParam(key_id): PathParam<ApiKeyId>,
) -> Handled {
    Ok(envelope::data(
        StatusCode::OK,
        &s.xf.admin_revoke_api_key(&key_id).await?,
    ))
}

async fn verify_property(
    State(s): State<AdminState>,
    PathParam(property_id): PathParam<PropertyId>,
) -> Handled {
    let property = s.xf.admin_verify_property(&property_id).await?;
    Ok(envelope::data(StatusCode::OK, &PropertyData { property }))
}

async fn link_property_gsc(
    State(s): State<AdminState>,
    PathParam(property_id): PathParam<PropertyId>,
    Json(input): Json<GscLink>,
) -> Handled {
    let property =
        s.xf.admin_link_property_gsc(&property_id, &input.site_url)
            .await?;
    Ok(envelope::data(StatusCode::OK, &PropertyData { property }))
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct GscAccountData {
    gsc_account: xf_core::api::GscAccountView,
}

async fn link_organization_gsc(
    State(s): State<AdminState>,
    PathParam(org_id): PathParam<OrganizationId>,
    Json(input): Json<xf_core::api::GscAccountLink>,
) -> Handled {
    let gsc_account = s.xf.admin_link_organization_gsc(&org_id, input).await?;
    Ok(envelope::data(
        StatusCode::OK,
        &GscAccountData { gsc_account },
    ))
}

async fn list_gsc_sites(
    State(s): State<AdminState>,
    PathParam(org_id): PathParam<OrganizationId>,
) -> Handled {
    let sites = s.xf.admin_gsc_sites(&org_id).await?;
    Ok(envelope::data(StatusCode::OK, &sites))
}

#[derive(Debug, Serialize)]
struct ChannelData {
    channel: xf_core::media::api::AdminChannelView,
}

async fn connect_channel(
    State(s): State<AdminState>,
    PathParam(org_id): PathParam<OrganizationId>,
    Json(input): Json<xf_core::media::api::NewChannel>,
) -> Handled {
    let channel = s.xf.admin_connect_channel(&org_id, input).await?;
    Ok(envelope::data(
        StatusCode::CREATED,
        &ChannelData { channel },
    ))
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ConnectLinkData {
    connect_link: xf_core::connect::ConnectLink,
}

async fn create_connect_link(
    State(s): State<AdminState>,
    PathParam(org_id): PathParam<OrganizationId>,
    Json(input): Json<xf_core::connect::NewConnectLink>,
) -> Handled {
    let connect_link = s.xf.admin_create_connect_link(&org_id, input).await?;
    Ok(envelope::data(
        StatusCode::CREATED,
        &ConnectLinkData { connect_link },
    ))
}

async fn update_channel(
    State(s): State<AdminState>,
    PathParam(channel_id): PathParam<xf_core::ids::ChannelId>,
    Json(changes): Json<xf_core::media::api::ChannelChanges>,
) -> Handled {
    let channel = s.xf.admin_update_channel(&channel_id, changes).await?;
    Ok(envelope::data(StatusCode::OK, &ChannelData { channel }))
}

async fn mark_issue_fixed(
    State(s): State<AdminState>,
    PathParam(issue_id): PathParam<IssueId>,
) -> Handled {
    let issue = s.xf.admin_mark_issue_fixed(&issue_id).await?;
    Ok(envelope::data(StatusCode::OK, &IssueData { issue }))
}

async fn create_report(State(s): State<AdminState>, Json(input): Json<NewReport>) -> Handled {
    let report = s.xf.admin_create_report(input).await?;
    Ok(envelope::data(StatusCode::CREATED, &ReportData { report }))
}

async fn record_report_view(State(s): State<AdminState>, PathParam(token): PathParam) -> Handled {
    let report = s.xf.admin_record_report_view(&token).await?;
    Ok(envelope::data(StatusCode::OK, &ReportData { report }))
}

async fn record_usage(
    State(s): State<AdminState>,
    PathParam(org_id): PathParam<OrganizationId>,
    Json(delta): Json<UsageDelta>,
) -> Handled {
    let usage = s.xf.admin_record_usage(&org_id, delta).await?;
    Ok(envelope::data(StatusCode::OK, &UsageData { usage }))
}
