//! The host's admin API (`/admin` on the standalone server): what the spec says "happens in
//! the web app". Bearer-authenticated with the host's admin token; `{data, meta}` envelopes.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use xf_core::api::PageParams;
use xf_core::ids::{ApiKeyId, IssueId, OrganizationId, PropertyId};
use xf_core::model::{ApiKey, Issue, KeyMode, Organization};
use xf_core::{Error, NewOrganization, NewReport, OrganizationPatch, UsageDelta, Xf};

use crate::envelope;
use crate::error::ApiError;
use crate::extract::{bearer, Json, PathParam, Query};
use crate::middleware;

/// Body of `POST /organizations/{orgId}/api-keys`.
#[derive(Debug, Deserialize, ToSchema)]
struct NewApiKey {
    /// `live` or `test`.
    #[schema(pattern = "^(live|test)$")]
    mode: String,
}

/// Body of `PUT /properties/{propertyId}/gsc`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct GscLink {
    /// The Search Console site the property's data comes from (`https://example.com/` or
    /// `sc-domain:example.com`), one the organization's Google account can see.
    site_url: String,
}

/// `data` of the organization endpoints.
#[derive(Debug, Serialize, ToSchema)]
struct OrganizationData {
    /// The organization as it is now.
    organization: Organization,
}

/// `data` of the property endpoints.
#[derive(Debug, Serialize, ToSchema)]
struct PropertyData {
    /// The property as the developer API shows it.
    property: xf_core::api::PropertyView,
}

/// `data` of `POST /issues/{issueId}/fixed`.
#[derive(Debug, Serialize, ToSchema)]
struct IssueData {
    /// The issue as it is now.
    issue: Issue,
}

/// `data` of the report endpoints.
#[derive(Debug, Serialize, ToSchema)]
struct ReportData {
    /// The report as the developer API shows it.
    report: xf_core::api::ReportItem,
}

/// `data` of `POST /organizations/{orgId}/usage`.
#[derive(Debug, Serialize, ToSchema)]
struct UsageData {
    /// This month's counters after the increments.
    usage: xf_core::model::UsageCounters,
}

#[derive(Clone)]
struct AdminState {
    xf: Xf,
    /// The admin token's hash, made once.
    token_hash: Arc<str>,
    failures: Arc<std::sync::Mutex<FailedLogins>>,
}

/// Wrong admin tokens a client address may send in one window before its requests that
/// carry a token are refused (`429`) without the token being looked at, until the window
/// ends: a burst of guesses (15,013 in one attack run) gets this many answers a minute. A
/// request without a token guesses nothing: it is a `401`, never counted.
pub const MAX_FAILED_LOGINS: u32 = 100;

/// The window of [`MAX_FAILED_LOGINS`]: a minute.
const FAILED_LOGIN_WINDOW_MS: i64 = 60_000;

/// The addresses kept at most; past that, those whose window ended are forgotten first, then
/// all (the map stays bounded whatever a client sends).
const MAX_TRACKED_ADDRESSES: usize = 4_096;

/// Failed admin logins by client address, in this process, each in a window of its own. A
/// request whose address the host does not give (no `ConnectInfo<SocketAddr>` extension)
/// counts under one shared entry.
#[derive(Debug, Default)]
struct FailedLogins {
    by_address: std::collections::HashMap<Option<std::net::IpAddr>, (i64, u32)>,
}

impl FailedLogins {
    /// Seconds until `address` may try again, when it is locked out at `now` (Unix ms).
    fn locked_out(&self, address: Option<std::net::IpAddr>, now: i64) -> Option<u64> {
        let (start, count) = *self.by_address.get(&address)?;
        let ends = start + FAILED_LOGIN_WINDOW_MS;
        (count >= MAX_FAILED_LOGINS && now < ends)
            .then(|| u64::try_from((ends - now + 999) / 1000).unwrap_or(1).max(1))
    }

    fn note(&mut self, address: Option<std::net::IpAddr>, now: i64) {
        if self.by_address.len() >= MAX_TRACKED_ADDRESSES {
            self.by_address
                .retain(|_, (start, _)| now < *start + FAILED_LOGIN_WINDOW_MS);
            if self.by_address.len() >= MAX_TRACKED_ADDRESSES {
                self.by_address.clear();
            }
        }
        let entry = self.by_address.entry(address).or_insert((now, 0));
        if now >= entry.0 + FAILED_LOGIN_WINDOW_MS {
            *entry = (now, 0);
        }
        entry.1 += 1;
    }
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
            token_hash: Arc::from(xf_core::auth::hash_key(&token.into())),
            failures: Arc::default(),
        };
        let (router, doc) = OpenApiRouter::with_openapi(crate::openapi::admin_base())
            .routes(routes!(list_organizations, create_organization))
            .routes(routes!(get_organization, update_organization))
            .routes(routes!(list_api_keys, create_api_key))
            .routes(routes!(list_channels, connect_channel))
            .routes(routes!(record_usage))
            .routes(routes!(link_organization_gsc))
            .routes(routes!(list_gsc_sites))
            .routes(routes!(create_connect_link))
            .routes(routes!(revoke_api_key))
            .routes(routes!(update_channel))
            .routes(routes!(verify_property))
            .routes(routes!(link_property_gsc))
            .routes(routes!(mark_issue_fixed))
            .routes(routes!(create_report))
            .routes(routes!(record_report_view))
            .route_layer(axum::middleware::from_fn_with_state(
                state.clone(),
                authenticate,
            ))
            .split_for_parts();
        // Serialized once; served without the token, like the APIs' documents.
        let plans: Vec<&str> = state.xf.plans().names().collect();
        let metrics = state.xf.metrics().requests();
        let served = crate::openapi::finish_admin(doc, &plans)
            .map(|doc| bytes::Bytes::from(doc.to_string()));
        let router = router
            .route(
                "/openapi.json",
                axum::routing::get(move || {
                    let served = served.clone();
                    async move { crate::openapi::respond(served) }
                }),
            )
            .method_not_allowed_fallback(method_not_allowed)
            .fallback(middleware::not_found)
            .with_state(state);
        // The common layers go on each route, where the matched route is known (metrics and
        // the log line name it). axum adds `Allow` to whatever the method fallback answers, a
        // 401 or 429 included, inside the route: it is taken off around the whole router but
        // for the 405.
        let router = crate::with_common_layers(
            router,
            crate::request_id::Service::Admin,
            Some(metrics),
            None,
        );
        let router =
            axum::Router::new()
                .fallback_service(router)
                .layer(axum::middleware::map_response(
                    |mut response: Response| async move {
                        if response.status() != http::StatusCode::METHOD_NOT_ALLOWED {
                            response.headers_mut().remove(http::header::ALLOW);
                        }
                        response
                    },
                ));
        Self { router }
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
    if let Err(refused) = state.check(&request) {
        return ApiError::from(refused).into_response();
    }
    next.run(request).await
}

/// A known path with another method: `405` with `Allow` only for the admin token's holder,
/// so the admin API's routes and methods are not told to anyone else.
async fn method_not_allowed(State(state): State<AdminState>, request: Request) -> Response {
    if let Err(refused) = state.check(&request) {
        return ApiError::from(refused).into_response();
    }
    middleware::method_not_allowed().await
}

impl AdminState {
    /// Admits a request with the token; refuses one without or with another (`401`), and one
    /// with a token from an address that sent [`MAX_FAILED_LOGINS`] wrong tokens this window
    /// (`429`, its token unread, so guessing is slowed to that many a minute an address).
    fn check(&self, request: &Request) -> Result<(), Error> {
        let given = match bearer(request.headers()) {
            Some(given) if !given.is_empty() => given,
            _ => return Err(Error::AdminTokenInvalid),
        };
        let address = request
            .extensions()
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|info| info.0.ip());
        let now = self.xf.now().unix_millis();
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(retry_after_secs) = failures.locked_out(address, now) {
            return Err(Error::RateLimited { retry_after_secs });
        }
        // Compare hashes so the comparison takes the same time whatever the guess.
        if xf_core::auth::hashes_match(&xf_core::auth::hash_key(given), &self.token_hash) {
            return Ok(());
        }
        failures.note(address, now);
        drop(failures);
        tracing::warn!(?address, "admin API: a request with a wrong token");
        Err(Error::AdminTokenInvalid)
    }
}

type Handled = std::result::Result<Response, ApiError>;

/// `data` of `GET /organizations`.
#[derive(Debug, Serialize, ToSchema)]
struct OrganizationList {
    /// Newest first.
    organizations: Vec<Organization>,
}

/// `data` of `GET /organizations/{orgId}/api-keys`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ApiKeyList {
    /// Newest first, revoked ones included; never the secrets.
    api_keys: Vec<ApiKey>,
}

/// `data` of `GET /organizations/{orgId}/channels`.
#[derive(Debug, Serialize, ToSchema)]
struct ChannelList {
    /// Newest first; never their tokens.
    channels: Vec<xf_core::media::api::AdminChannelView>,
}

/// Every organization, newest first.
#[utoipa::path(get, path = "/organizations", tag = "organizations", params(PageParams),
    responses(
        (status = 200, description = "A page of organizations", body = crate::routes::PageEnvelope<OrganizationList>),
        (status = 400, description = "`validation_error`: a limit out of range or a cursor of another list"),
    ))]
async fn list_organizations(
    State(s): State<AdminState>,
    Query(page): Query<PageParams>,
) -> Handled {
    let page = s.xf.admin().list_organizations(&page).await?;
    Ok(envelope::page("organizations", &page))
}

/// One organization: its plan, shop domain and limit overrides.
#[utoipa::path(get, path = "/organizations/{orgId}", tag = "organizations",
    params(("orgId" = inline(OrganizationId), Path, description = "Organization id")),
    responses(
        (status = 200, description = "The organization", body = crate::routes::Envelope<OrganizationData>),
        (status = 404, description = "`not_found`"),
    ))]
async fn get_organization(
    State(s): State<AdminState>,
    PathParam(org_id): PathParam<OrganizationId>,
) -> Handled {
    let organization = s.xf.admin().get_organization(&org_id).await?;
    Ok(envelope::data(
        StatusCode::OK,
        &OrganizationData { organization },
    ))
}

/// The organization's keys, newest first: prefix, mode, when created, last used and revoked.
#[utoipa::path(get, path = "/organizations/{orgId}/api-keys", tag = "organizations",
    params(("orgId" = inline(OrganizationId), Path, description = "Organization id"), PageParams),
    responses(
        (status = 200, description = "A page of keys", body = crate::routes::PageEnvelope<ApiKeyList>),
        (status = 400, description = "`validation_error`: a limit out of range or a cursor of another list"),
        (status = 404, description = "`not_found`"),
    ))]
async fn list_api_keys(
    State(s): State<AdminState>,
    PathParam(org_id): PathParam<OrganizationId>,
    Query(page): Query<PageParams>,
) -> Handled {
    let page = s.xf.admin().list_api_keys(&org_id, &page).await?;
    Ok(envelope::page("apiKeys", &page))
}

/// The organization's connected social accounts, newest first.
#[utoipa::path(get, path = "/organizations/{orgId}/channels", tag = "channels",
    params(("orgId" = inline(OrganizationId), Path, description = "Organization id"), PageParams),
    responses(
        (status = 200, description = "A page of channels", body = crate::routes::PageEnvelope<ChannelList>),
        (status = 400, description = "`validation_error`: a limit out of range or a cursor of another list"),
        (status = 404, description = "`not_found`"),
    ))]
async fn list_channels(
    State(s): State<AdminState>,
    PathParam(org_id): PathParam<OrganizationId>,
    Query(page): Query<PageParams>,
) -> Handled {
    let page = s.xf.admin().list_channels(&org_id, &page).await?;
    Ok(envelope::page("channels", &page))
}

/// Creates an organization on a plan, with a live and a test key (shown once).
#[utoipa::path(post, path = "/organizations", tag = "organizations", request_body = NewOrganization,
    responses(
        (status = 201, description = "Created, with its keys", body = crate::routes::Envelope<xf_core::CreatedOrganization>),
        (status = 400, description = "`validation_error`: a name, or a plan the catalog lacks"),
    ))]
async fn create_organization(
    State(s): State<AdminState>,
    Json(input): Json<NewOrganization>,
) -> Handled {
    let created = s.xf.admin().create_organization(input).await?;
    Ok(envelope::data(StatusCode::CREATED, &created))
}

/// Changes an organization's name, plan, shop domain or limit overrides.
#[utoipa::path(patch, path = "/organizations/{orgId}", tag = "organizations", request_body = OrganizationPatch,
    params(("orgId" = inline(OrganizationId), Path, description = "Organization id")),
    responses(
        (status = 200, description = "The organization as it is now", body = crate::routes::Envelope<OrganizationData>),
        (status = 404, description = "`not_found`"),
    ))]
async fn update_organization(
    State(s): State<AdminState>,
    PathParam(org_id): PathParam<OrganizationId>,
    Json(patch): Json<OrganizationPatch>,
) -> Handled {
    let organization = s.xf.admin().update_organization(&org_id, patch).await?;
    Ok(envelope::data(
        StatusCode::OK,
        &OrganizationData { organization },
    ))
}

/// Issues a key (shown once).
#[utoipa::path(post, path = "/organizations/{orgId}/api-keys", tag = "organizations", request_body = NewApiKey,
    params(("orgId" = inline(OrganizationId), Path, description = "Organization id")),
    responses(
        (status = 201, description = "The key", body = crate::routes::Envelope<xf_core::CreatedApiKey>),
        (status = 404, description = "`not_found`"),
        (status = 409, description = "`conflict`: the organization has its plan's maximum of active keys"),
    ))]
async fn create_api_key(
    State(s): State<AdminState>,
    PathParam(org_id): PathParam<OrganizationId>,
    Json(input): Json<NewApiKey>,
) -> Handled {
    let mode = KeyMode::parse(&input.mode)
        .ok_or_else(|| Error::invalid("mode", "must be live or test"))?;
    let created = s.xf.admin().create_api_key(&org_id, mode).await?;
    Ok(envelope::data(StatusCode::CREATED, &created))
}

/// Revokes a key at once (on every instance within the key cache's lifetime).
#[utoipa::path(delete, path = "/api-keys/{keyId}", tag = "organizations",
    params(("keyId" = inline(ApiKeyId), Path, description = "Key id")),
    responses(
        (status = 200, description = "Revoked", body = crate::routes::Envelope<xf_core::RevokedApiKey>),
        (status = 404, description = "`not_found`"),
    ))]
async fn revoke_api_key(
    State(s): State<AdminState>,
    PathParam(key_id): PathParam<ApiKeyId>,
) -> Handled {
    Ok(envelope::data(
        StatusCode::OK,
        &s.xf.admin().revoke_api_key(&key_id).await?,
    ))
}

/// Marks a property verified.
#[utoipa::path(post, path = "/properties/{propertyId}/verify", tag = "properties",
    params(("propertyId" = inline(PropertyId), Path, description = "Property id")),
    responses(
        (status = 200, description = "The property", body = crate::routes::Envelope<PropertyData>),
        (status = 404, description = "`not_found`"),
    ))]
async fn verify_property(
    State(s): State<AdminState>,
    PathParam(property_id): PathParam<PropertyId>,
) -> Handled {
    let property = s.xf.admin().verify_property(&property_id).await?;
    Ok(envelope::data(StatusCode::OK, &PropertyData { property }))
}

/// Links a property to a Search Console site of its organization's Google account.
#[utoipa::path(put, path = "/properties/{propertyId}/gsc", tag = "search-console", request_body = GscLink,
    params(("propertyId" = inline(PropertyId), Path, description = "Property id")),
    responses(
        (status = 200, description = "The property", body = crate::routes::Envelope<PropertyData>),
        (status = 400, description = "`validation_error` (a site URL of neither form), `gsc_not_linked` or `gsc_site_inaccessible`"),
        (status = 404, description = "`not_found`"),
    ))]
async fn link_property_gsc(
    State(s): State<AdminState>,
    PathParam(property_id): PathParam<PropertyId>,
    Json(input): Json<GscLink>,
) -> Handled {
    let property =
        s.xf.admin()
            .link_property_gsc(&property_id, &input.site_url)
            .await?;
    Ok(envelope::data(StatusCode::OK, &PropertyData { property }))
}

/// `data` of `PUT /organizations/{orgId}/gsc`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct GscAccountData {
    /// The linked Google account.
    gsc_account: xf_core::api::GscAccountView,
}

/// Links (or replaces) the organization's Google account for Search Console.
#[utoipa::path(put, path = "/organizations/{orgId}/gsc", tag = "search-console", request_body = xf_core::api::GscAccountLink,
    params(("orgId" = inline(OrganizationId), Path, description = "Organization id")),
    responses(
        (status = 200, description = "The linked account", body = crate::routes::Envelope<GscAccountData>),
        (status = 400, description = "`validation_error` or `gsc_not_configured`"),
        (status = 404, description = "`not_found`"),
    ))]
async fn link_organization_gsc(
    State(s): State<AdminState>,
    PathParam(org_id): PathParam<OrganizationId>,
    Json(input): Json<xf_core::api::GscAccountLink>,
) -> Handled {
    let gsc_account = s.xf.admin().link_organization_gsc(&org_id, input).await?;
    Ok(envelope::data(
        StatusCode::OK,
        &GscAccountData { gsc_account },
    ))
}

/// The Search Console sites the organization's Google account can see.
#[utoipa::path(get, path = "/organizations/{orgId}/gsc/sites", tag = "search-console",
    params(("orgId" = inline(OrganizationId), Path, description = "Organization id")),
    responses(
        (status = 200, description = "The sites", body = crate::routes::Envelope<xf_core::gsc::GscSites>),
        (status = 400, description = "`gsc_not_configured`, `gsc_not_linked` or `gsc_token_revoked`"),
        (status = 404, description = "`not_found`"),
        (status = 429, description = "`rate_limit`: Google's quota; try again later"),
    ))]
async fn list_gsc_sites(
    State(s): State<AdminState>,
    PathParam(org_id): PathParam<OrganizationId>,
) -> Handled {
    let sites = s.xf.admin().gsc_sites(&org_id).await?;
    Ok(envelope::data(StatusCode::OK, &sites))
}

/// `data` of the channel endpoints.
#[derive(Debug, Serialize, ToSchema)]
struct ChannelData {
    /// The channel (never its tokens).
    channel: xf_core::media::api::AdminChannelView,
}

/// Connects (or connects again) a social account by its tokens.
#[utoipa::path(post, path = "/organizations/{orgId}/channels", tag = "channels", request_body = xf_core::media::api::NewChannel,
    params(("orgId" = inline(OrganizationId), Path, description = "Organization id")),
    responses(
        (status = 201, description = "The channel", body = crate::routes::Envelope<ChannelData>),
        (status = 404, description = "`not_found`"),
    ))]
async fn connect_channel(
    State(s): State<AdminState>,
    PathParam(org_id): PathParam<OrganizationId>,
    Json(input): Json<xf_core::media::api::NewChannel>,
) -> Handled {
    let channel = s.xf.admin().connect_channel(&org_id, input).await?;
    Ok(envelope::data(
        StatusCode::CREATED,
        &ChannelData { channel },
    ))
}

/// `data` of `POST /organizations/{orgId}/connect-links`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ConnectLinkData {
    /// The link to send the organization's user to.
    connect_link: xf_core::connect::ConnectLink,
}

/// A single-use link that connects the organization's account at a provider by OAuth.
#[utoipa::path(post, path = "/organizations/{orgId}/connect-links", tag = "channels", request_body = xf_core::connect::NewConnectLink,
    params(("orgId" = inline(OrganizationId), Path, description = "Organization id")),
    responses(
        (status = 201, description = "The link", body = crate::routes::Envelope<ConnectLinkData>),
        (status = 400, description = "`validation_error`: a provider this server has no connector for, a channel of another provider, or a returnUrl on a host not allowed"),
        (status = 404, description = "`not_found`: no such organization or channel"),
    ))]
async fn create_connect_link(
    State(s): State<AdminState>,
    PathParam(org_id): PathParam<OrganizationId>,
    Json(input): Json<xf_core::connect::NewConnectLink>,
) -> Handled {
    let connect_link = s.xf.admin().create_connect_link(&org_id, input).await?;
    Ok(envelope::data(
        StatusCode::CREATED,
        &ConnectLinkData { connect_link },
    ))
}

/// Changes a channel's settings (a Pinterest channel's default board).
#[utoipa::path(patch, path = "/channels/{channelId}", tag = "channels", request_body = xf_core::media::api::ChannelChanges,
    params(("channelId" = inline(xf_core::ids::ChannelId), Path, description = "Channel id")),
    responses(
        (status = 200, description = "The channel", body = crate::routes::Envelope<ChannelData>),
        (status = 404, description = "`not_found`"),
    ))]
async fn update_channel(
    State(s): State<AdminState>,
    PathParam(channel_id): PathParam<xf_core::ids::ChannelId>,
    Json(changes): Json<xf_core::media::api::ChannelChanges>,
) -> Handled {
    let channel = s.xf.admin().update_channel(&channel_id, changes).await?;
    Ok(envelope::data(StatusCode::OK, &ChannelData { channel }))
}

/// Marks an issue fixed (detected again, it reopens).
#[utoipa::path(post, path = "/issues/{issueId}/fixed", tag = "properties",
    params(("issueId" = inline(IssueId), Path, description = "Issue id")),
    responses(
        (status = 200, description = "The issue", body = crate::routes::Envelope<IssueData>),
        (status = 404, description = "`not_found`"),
    ))]
async fn mark_issue_fixed(
    State(s): State<AdminState>,
    PathParam(issue_id): PathParam<IssueId>,
) -> Handled {
    let issue = s.xf.admin().mark_issue_fixed(&issue_id).await?;
    Ok(envelope::data(StatusCode::OK, &IssueData { issue }))
}

/// Shares a completed scan as a report with an expiry.
#[utoipa::path(post, path = "/reports", tag = "reports", request_body = NewReport,
    responses(
        (status = 201, description = "The report", body = crate::routes::Envelope<ReportData>),
        (status = 404, description = "`not_found`: no such property or completed scan"),
    ))]
async fn create_report(State(s): State<AdminState>, Json(input): Json<NewReport>) -> Handled {
    let report = s.xf.admin().create_report(input).await?;
    Ok(envelope::data(StatusCode::CREATED, &ReportData { report }))
}

/// Counts a view of a report's public page.
#[utoipa::path(post, path = "/reports/{token}/views", tag = "reports",
    params(("token" = String, Path, description = "Report token")),
    responses(
        (status = 200, description = "The report", body = crate::routes::Envelope<ReportData>),
        (status = 404, description = "`not_found`"),
    ))]
async fn record_report_view(State(s): State<AdminState>, PathParam(token): PathParam) -> Handled {
    let report = s.xf.admin().record_report_view(&token).await?;
    Ok(envelope::data(StatusCode::OK, &ReportData { report }))
}

/// Adds to this month's counters that the host measures (AI tokens, redirects, images).
#[utoipa::path(post, path = "/organizations/{orgId}/usage", tag = "organizations", request_body = UsageDelta,
    params(("orgId" = inline(OrganizationId), Path, description = "Organization id")),
    responses(
        (status = 200, description = "The counters", body = crate::routes::Envelope<UsageData>),
        (status = 404, description = "`not_found`"),
    ))]
async fn record_usage(
    State(s): State<AdminState>,
    PathParam(org_id): PathParam<OrganizationId>,
    Json(delta): Json<UsageDelta>,
) -> Handled {
    let usage = s.xf.admin().record_usage(&org_id, delta).await?;
    Ok(envelope::data(StatusCode::OK, &UsageData { usage }))
}
