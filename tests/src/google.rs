//! A local stand-in of the two Google endpoints a Search Console client uses, for tests: the
//! OAuth 2.0 token endpoint (refresh-token exchange) and the Search Console API
//! `searchanalytics.query` method.
//!
//! It is a real HTTP server on a loopback port. It checks the requests it gets against the
//! shapes Google documents and answers with the shapes Google documents:
//!
//! - `POST /token`: form fields `client_id`, `client_secret`, `refresh_token` and
//!   `grant_type=refresh_token`; success `{"access_token", "expires_in", "scope",
//!   "token_type": "Bearer"}`, errors `{"error", "error_description"}` (`invalid_grant` for an
//!   unknown or revoked refresh token, `invalid_client` for a wrong client, ...).
//! - `POST /webmasters/v3/sites/{siteUrl}/searchAnalytics/query`, `{siteUrl}` percent-encoded
//!   (`sc-domain%3Aexample.com`, `https%3A%2F%2Fwww.example.com%2F`), a JSON body
//!   (`startDate`, `endDate`, `dimensions`, `type`, `rowLimit`, `startRow`, `dataState`,
//!   `aggregationType`); success `{"rows": [{"keys", "clicks", "impressions", "ctr",
//!   "position"}], "responseAggregationType"}` (`rows` left out when there are none), errors in
//!   Google's JSON error shape `{"error": {"code", "message", "status"}}`.
//!
//! - `GET /o/oauth2/v2/auth`: the consent screen (see [`crate::oauth`]), with `client_id`,
//!   `redirect_uri`, `response_type=code`, `scope` (space-separated, with `webmasters.readonly`),
//!   `access_type=offline`, `state` and a PKCE `S256` challenge; and `POST /token` with
//!   `grant_type=authorization_code` (`code`, `redirect_uri`, `code_verifier`), answering a
//!   `refresh_token` too.
//! - `GET /webmasters/v3/sites`: `{"siteEntry": [{"siteUrl", "permissionLevel"}]}` of the
//!   token's account (left out when it has none).
//!
//! Anything else answers 404.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::to_bytes;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use chrono::NaiveDate;
use http::{header, HeaderMap, Method, StatusCode};
use serde_json::{json, Map, Value};
use tokio::time::Instant;

/// The OAuth client id the stand-in accepts.
pub const CLIENT_ID: &str = "xf-test-client.apps.googleusercontent.com";

/// The OAuth client secret the stand-in accepts.
pub const CLIENT_SECRET: &str = "GOCSPX-xf-test-secret";

/// The scope of the access tokens the stand-in issues.
const SCOPE: &str = "https://www.googleapis.com/auth/webmasters.readonly";

/// The access-token lifetime, in seconds, until [`GoogleStandIn::set_token_lifetime`].
const DEFAULT_TOKEN_LIFETIME: u64 = 3599;

/// The largest request body read.
const BODY_LIMIT: usize = 1 << 20;

/// The path prefix of the Search Console API sites.
const SITES_PREFIX: &str = "/webmasters/v3/sites/";

/// The path suffix of `searchanalytics.query`.
const QUERY_SUFFIX: &str = "/searchAnalytics/query";

/// The dimensions Google documents for `dimensions`.
const DIMENSIONS: [&str; 6] = [
    "date",
    "query",
    "page",
    "country",
    "device",
    "searchAppearance",
];

/// The search types Google documents for `type`.
const SEARCH_TYPES: [&str; 6] = ["web", "image", "video", "news", "discover", "googleNews"];

/// The data states Google documents for `dataState`.
const DATA_STATES: [&str; 3] = ["final", "all", "hourly_all"];

/// The aggregation types the stand-in accepts for `aggregationType`.
const AGGREGATION_TYPES: [&str; 3] = ["auto", "byPage", "byProperty"];

/// The body fields the stand-in accepts.
const BODY_FIELDS: [&str; 8] = [
    "startDate",
    "endDate",
    "dimensions",
    "type",
    "rowLimit",
    "startRow",
    "dataState",
    "aggregationType",
];

/// Google's message for a bearer token it does not accept.
const INVALID_CREDENTIALS: &str = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.";

/// Google's message for a request without credentials.
const MISSING_CREDENTIALS: &str = "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.";

/// One row as Google aggregates it (keys are the dimension values).
///
/// Its `ctr` is computed as `clicks / impressions` (0 when `impressions` is 0).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The dimension value (the query, or the page URL).
    pub key: String,
    /// Clicks.
    pub clicks: u64,
    /// Impressions.
    pub impressions: u64,
    /// Average position.
    pub position: f64,
}

/// One day's totals.
#[derive(Debug, Clone, PartialEq)]
pub struct Day {
    /// The day (Pacific time, as Google counts).
    pub date: NaiveDate,
    /// Clicks.
    pub clicks: u64,
    /// Impressions.
    pub impressions: u64,
    /// Average position.
    pub position: f64,
}

/// What the stand-in holds for one site.
#[derive(Debug, Clone, Default)]
pub struct SiteData {
    /// Daily totals, answered for the `date` dimension and for queries without dimensions.
    pub days: Vec<Day>,
    /// Rows of the `query` dimension, pre-aggregated (answered whatever the dates).
    pub queries: Vec<Row>,
    /// Rows of the `page` dimension, pre-aggregated (answered whatever the dates).
    pub pages: Vec<Row>,
}

/// A failure the next search-analytics request(s) get.
#[derive(Debug, Clone)]
pub enum Failure {
    /// 429 RESOURCE_EXHAUSTED, with `Retry-After: secs` when Some.
    RateLimited(Option<u64>),
    /// This 5xx status with Google's error JSON (e.g. 500 INTERNAL, 503 UNAVAILABLE).
    ServerError(u16),
    /// Sleep this long before answering normally (to make a client time out).
    Hang(Duration),
}

/// One search-analytics request as received.
///
/// Every request to the query path is recorded, in arrival order, before it is checked (so
/// the ones answered 401 or 400 are there too).
#[derive(Debug, Clone)]
pub struct QueryRequest {
    /// The `{siteUrl}` path segment, percent-decoded.
    pub site_url: String,
    /// The token of `Authorization: Bearer <token>` (empty when the header is missing or not
    /// a bearer token).
    pub bearer: String,
    /// The JSON body (`Value::Null` when it is not JSON).
    pub body: Value,
}

/// One token request as received.
#[derive(Debug, Clone)]
pub struct TokenRequest {
    /// The decoded form fields (empty when the body is not a valid form).
    pub form: BTreeMap<String, String>,
}

/// A refresh token the stand-in accepts (or accepted).
#[derive(Debug, Clone)]
struct Grant {
    /// The sites its access tokens can read.
    sites: Vec<String>,
    /// Whether it was revoked.
    revoked: bool,
}

/// An access token the stand-in issued.
#[derive(Debug, Clone)]
struct AccessToken {
    /// The refresh token it was issued for.
    refresh_token: String,
    /// When it stops being accepted.
    expires_at: Instant,
}

/// The mutable state of the stand-in.
#[derive(Debug)]
struct StandInState {
    grants: HashMap<String, Grant>,
    access_tokens: HashMap<String, AccessToken>,
    sites: HashMap<String, SiteData>,
    failures: VecDeque<Failure>,
    query_delay: Duration,
    token_lifetime: u64,
    issued: u64,
    token_requests: Vec<TokenRequest>,
    query_requests: Vec<QueryRequest>,
}

/// The state shared by the handles and the server task.
#[derive(Debug)]
struct Inner {
    state: Mutex<StandInState>,
    /// The consent screen and its codes.
    auth: crate::oauth::AuthorizationServer,
}

impl Inner {
    /// Locks the state (a poisoned lock is still usable: the state stays consistent).
    fn state(&self) -> MutexGuard<'_, StandInState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Stops the server task when the last handle is dropped.
#[derive(Debug)]
pub(crate) struct ServerTask(pub(crate) tokio::task::JoinHandle<()>);

impl Drop for ServerTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A running stand-in of Google's token endpoint and Search Console API.
///
/// Cloning is cheap (the clones share the same server and state); the server stops when the
/// last clone is dropped.
#[derive(Debug, Clone)]
pub struct GoogleStandIn {
    inner: Arc<Inner>,
    addr: SocketAddr,
    _server: Arc<ServerTask>,
}

impl GoogleStandIn {
    /// Starts serving on 127.0.0.1 (random port) in a tokio task.
    pub async fn start() -> Self {
        let inner = Arc::new(Inner {
            state: Mutex::new(StandInState {
                grants: HashMap::new(),
                access_tokens: HashMap::new(),
                sites: HashMap::new(),
                failures: VecDeque::new(),
                query_delay: Duration::ZERO,
                token_lifetime: DEFAULT_TOKEN_LIFETIME,
                issued: 0,
                token_requests: Vec::new(),
                query_requests: Vec::new(),
            }),
            auth: crate::oauth::AuthorizationServer::default(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&inner));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        GoogleStandIn {
            inner,
            addr,
            _server: Arc::new(ServerTask(server)),
        }
    }

    /// `http://127.0.0.1:PORT/token`
    pub fn token_url(&self) -> String {
        format!("http://127.0.0.1:{}/token", self.addr.port())
    }

    /// `http://127.0.0.1:PORT/o/oauth2/v2/auth`: the consent screen.
    pub fn authorize_url(&self) -> String {
        format!("http://127.0.0.1:{}/o/oauth2/v2/auth", self.addr.port())
    }

    /// The next user at the consent screen consents, as the Google account whose refresh
    /// token is `refresh_token` (grant it first: [`grant`](Self::grant) names its sites).
    pub fn sign_in(&self, refresh_token: &str) {
        self.inner.auth.consent_as(refresh_token);
    }

    /// The next user at the consent screen declines.
    pub fn deny_next(&self) {
        self.inner.auth.deny_next();
    }

    /// Every request the consent screen got, its parameters decoded.
    pub fn authorization_requests(&self) -> Vec<BTreeMap<String, String>> {
        self.inner.auth.requests()
    }

    /// `http://127.0.0.1:PORT` (the client appends `/webmasters/v3/sites/...`)
    pub fn api_base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.addr.port())
    }

    /// Accept `refresh_token` from now on; its access tokens can read `sites` (exact siteUrl
    /// strings).
    ///
    /// Granting again replaces the sites (also for access tokens already issued) and undoes a
    /// revocation for new exchanges; access tokens dropped by [`revoke`](Self::revoke) stay
    /// rejected.
    pub fn grant(&self, refresh_token: &str, sites: &[&str]) {
        self.inner.state().grants.insert(
            refresh_token.to_owned(),
            Grant {
                sites: sites.iter().map(|site| (*site).to_owned()).collect(),
                revoked: false,
            },
        );
    }

    /// `refresh_token` answers invalid_grant from now on; access tokens already issued for it
    /// are rejected with 401 too.
    pub fn revoke(&self, refresh_token: &str) {
        let mut state = self.inner.state();
        state
            .grants
            .entry(refresh_token.to_owned())
            .or_insert_with(|| Grant {
                sites: Vec::new(),
                revoked: true,
            })
            .revoked = true;
        state
            .access_tokens
            .retain(|_, access| access.refresh_token != refresh_token);
    }

    /// Every access token issued so far is rejected with 401 from now on (as Google does with
    /// a token it revoked before its time); refresh tokens keep working.
    pub fn expire_access_tokens(&self) {
        self.inner.state().access_tokens.clear();
    }

    /// Replace the data of `site_url`.
    pub fn set_site(&self, site_url: &str, data: SiteData) {
        self.inner.state().sites.insert(site_url.to_owned(), data);
    }

    /// The next search-analytics request gets `failure` (queue; each queued failure is used
    /// once).
    ///
    /// Failures are taken by requests that pass the authentication and body checks; a request
    /// answered 401 or 400 leaves the queue alone.
    pub fn fail_next(&self, failure: Failure) {
        self.inner.state().failures.push_back(failure);
    }

    /// Every search-analytics request answers only after this delay (default zero) — used to
    /// hold a sync in flight.
    pub fn set_query_delay(&self, delay: Duration) {
        self.inner.state().query_delay = delay;
    }

    /// Access tokens issued from now on expire after `secs` (default 3599); the stand-in
    /// rejects an expired one with 401.
    ///
    /// Expiry follows `tokio::time::Instant`, so a test with paused time can advance it.
    pub fn set_token_lifetime(&self, secs: u64) {
        self.inner.state().token_lifetime = secs;
    }

    /// Every token request so far, in arrival order (failed ones included).
    pub fn token_requests(&self) -> Vec<TokenRequest> {
        self.inner.state().token_requests.clone()
    }

    /// Every search-analytics request so far, in arrival order (see [`QueryRequest`]).
    pub fn query_requests(&self) -> Vec<QueryRequest> {
        self.inner.state().query_requests.clone()
    }
}

/// Routes a request: the token endpoint, the query method, or 404.
async fn handle(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    if path == "/token" && parts.method == Method::POST {
        let Ok(bytes) = to_bytes(body, BODY_LIMIT).await else {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "The request body could not be read.",
            );
        };
        return token(&inner, &parts.headers, &bytes);
    }
    if path == "/o/oauth2/v2/auth" && parts.method == Method::GET {
        return inner.auth.authorize(
            parts.uri.query().unwrap_or_default(),
            &crate::oauth::Expect {
                client_param: "client_id",
                client_id: CLIENT_ID,
                scopes: &[SCOPE],
                separator: ' ',
                pkce: crate::oauth::Pkce::S256,
                fixed: &[("access_type", "offline")],
                denial: "access_denied",
            },
        );
    }
    if path == "/webmasters/v3/sites" && parts.method == Method::GET {
        return sites(&inner, &parts.headers);
    }
    let site = path
        .strip_prefix(SITES_PREFIX)
        .and_then(|rest| rest.strip_suffix(QUERY_SUFFIX))
        .filter(|site| !site.is_empty() && !site.contains('/'));
    if let (Some(site), true) = (site, parts.method == Method::POST) {
        let Ok(bytes) = to_bytes(body, BODY_LIMIT).await else {
            return google_error(
                StatusCode::BAD_REQUEST,
                "INVALID_ARGUMENT",
                "The request body could not be read.",
            );
        };
        return query(&inner, &parts.headers, site, &bytes).await;
    }
    (StatusCode::NOT_FOUND, "Not Found").into_response()
}

// ---------------------------------------------------------------------------------------------
// The token endpoint.

/// `POST /token`: the refresh-token exchange.
fn token(inner: &Inner, headers: &HeaderMap, body: &[u8]) -> Response {
    let form = parse_form(body);
    let mut state = inner.state();
    state.token_requests.push(TokenRequest {
        form: form.clone().unwrap_or_default(),
    });
    if !has_media_type(headers, "application/x-www-form-urlencoded") {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "The request must have Content-Type: application/x-www-form-urlencoded.",
        );
    }
    let form = match form {
        Ok(form) => form,
        Err(message) => return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", &message),
    };
    if form.get("client_id").map(String::as_str) != Some(CLIENT_ID) {
        return oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "The OAuth client was not found.",
        );
    }
    if form.get("client_secret").map(String::as_str) != Some(CLIENT_SECRET) {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", "Unauthorized");
    }
    // The refresh token the access token is issued for: the one sent, or, for a code, the
    // one the consenting account is known by (sent back as well).
    let (refresh_token, new_refresh_token) = match form.get("grant_type").map(String::as_str) {
        Some("refresh_token") => {
            match form.get("refresh_token").filter(|token| !token.is_empty()) {
                Some(token) => (token.clone(), None),
                None => {
                    return oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_request",
                        "Missing required parameter: refresh_token",
                    )
                }
            }
        }
        Some("authorization_code") => match inner.auth.redeem(&form, CLIENT_ID) {
            Ok(subject) => (subject.clone(), Some(subject)),
            Err((error, description)) => {
                return oauth_error(StatusCode::BAD_REQUEST, error, &description)
            }
        },
        None => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "Missing required parameter: grant_type",
            )
        }
        Some(other) => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                &format!("Invalid grant_type: {other}"),
            )
        }
    };
    let refresh_token = &refresh_token;
    let usable = state
        .grants
        .get(refresh_token)
        .is_some_and(|grant| !grant.revoked);
    if !usable {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "Token has been expired or revoked.",
        );
    }
    state.issued += 1;
    let access_token = new_access_token(state.issued);
    let lifetime = state.token_lifetime;
    let expires_at = Instant::now()
        .checked_add(Duration::from_secs(lifetime))
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600));
    state.access_tokens.insert(
        access_token.clone(),
        AccessToken {
            refresh_token: refresh_token.clone(),
            expires_at,
        },
    );
    drop(state);
    let mut answer = json!({
        "access_token": access_token,
        "expires_in": lifetime,
        "scope": SCOPE,
        "token_type": "Bearer",
    });
    if let Some(refresh_token) = new_refresh_token {
        answer["refresh_token"] = json!(refresh_token);
    }
    with_no_store(json_response(StatusCode::OK, &answer))
}

/// `GET /webmasters/v3/sites`: the sites the token's account can read, all as their owner.
fn sites(inner: &Inner, headers: &HeaderMap) -> Response {
    let Some(bearer) = bearer_token(headers) else {
        return unauthenticated(MISSING_CREDENTIALS);
    };
    let state = inner.state();
    let Some(access) = state
        .access_tokens
        .get(&bearer)
        .filter(|access| access.expires_at > Instant::now())
    else {
        return unauthenticated(INVALID_CREDENTIALS);
    };
    let sites = state
        .grants
        .get(&access.refresh_token)
        .map(|grant| grant.sites.clone())
        .unwrap_or_default();
    // Google leaves an empty list out.
    let body = if sites.is_empty() {
        json!({})
    } else {
        json!({"siteEntry": sites
            .iter()
            .map(|site| json!({"siteUrl": site, "permissionLevel": "siteOwner"}))
            .collect::<Vec<_>>()})
    };
    json_response(StatusCode::OK, &body)
}

/// A fresh access token: `ya29.` and random characters (plus a counter, so they never
/// repeat).
fn new_access_token(serial: u64) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or(0);
    let mut token = String::from("ya29.a0");
    for part in 0..3u64 {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(serial);
        hasher.write_u64(part);
        hasher.write_u128(nanos);
        token.push_str(&format!("{:016x}", hasher.finish()));
    }
    token.push_str(&format!("{serial:x}"));
    token
}

/// Decodes an `application/x-www-form-urlencoded` body; a repeated field is an error (as
/// RFC 6749 §5.2 has it).
fn parse_form(body: &[u8]) -> Result<BTreeMap<String, String>, String> {
    let text =
        std::str::from_utf8(body).map_err(|_| "The request body is not UTF-8.".to_owned())?;
    let mut form = BTreeMap::new();
    for pair in text.split('&').filter(|pair| !pair.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name =
            percent_decode(name, true).ok_or_else(|| format!("Invalid form encoding: {pair}"))?;
        let value =
            percent_decode(value, true).ok_or_else(|| format!("Invalid form encoding: {pair}"))?;
        if form.contains_key(&name) {
            return Err(format!("Parameter repeated: {name}"));
        }
        form.insert(name, value);
    }
    Ok(form)
}

/// An OAuth error `{"error", "error_description"}`.
fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    with_no_store(json_response(
        status,
        &json!({ "error": error, "error_description": description }),
    ))
}

/// Adds the cache headers of token responses.
fn with_no_store(mut response: Response) -> Response {
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache, no-store, max-age=0, must-revalidate"),
    );
    response
        .headers_mut()
        .insert(header::PRAGMA, header::HeaderValue::from_static("no-cache"));
    response
}

// ---------------------------------------------------------------------------------------------
// The query method.

/// A checked query body.
#[derive(Debug)]
struct QueryParams {
    start: NaiveDate,
    end: NaiveDate,
    dimension: Option<String>,
    row_limit: usize,
    start_row: usize,
    aggregation: Option<String>,
}

/// `POST /webmasters/v3/sites/{site}/searchAnalytics/query`.
async fn query(inner: &Inner, headers: &HeaderMap, encoded_site: &str, body: &[u8]) -> Response {
    let Some(site_url) = percent_decode(encoded_site, false) else {
        return google_error(
            StatusCode::BAD_REQUEST,
            "INVALID_ARGUMENT",
            &format!("Invalid siteUrl: bad percent-encoding in {encoded_site:?}."),
        );
    };
    let bearer = bearer_token(headers);
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    inner.state().query_requests.push(QueryRequest {
        site_url: site_url.clone(),
        bearer: bearer.clone().unwrap_or_default(),
        body: parsed.clone().unwrap_or(Value::Null),
    });

    // Authentication.
    let refresh_token = {
        let state = inner.state();
        let Some(bearer) = bearer else {
            return unauthenticated(if headers.contains_key(header::AUTHORIZATION) {
                INVALID_CREDENTIALS
            } else {
                MISSING_CREDENTIALS
            });
        };
        let valid = state.access_tokens.get(&bearer).filter(|access| {
            Instant::now() < access.expires_at
                && state
                    .grants
                    .get(&access.refresh_token)
                    .is_some_and(|grant| !grant.revoked)
        });
        match valid {
            Some(access) => access.refresh_token.clone(),
            None => return unauthenticated(INVALID_CREDENTIALS),
        }
    };

    // The body.
    if !has_media_type(headers, "application/json") {
        return invalid_argument(
            "Invalid JSON payload received. The request must have Content-Type: application/json.",
        );
    }
    let Some(body) = parsed else {
        return invalid_argument("Invalid JSON payload received. Unexpected token.");
    };
    let params = match check_query_body(&body) {
        Ok(params) => params,
        Err(message) => return invalid_argument(&message),
    };

    // A queued failure.
    let failure = inner.state().failures.pop_front();
    match failure {
        Some(Failure::RateLimited(retry_after)) => {
            let mut response = google_error(
                StatusCode::TOO_MANY_REQUESTS,
                "RESOURCE_EXHAUSTED",
                "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute per user' of service 'searchconsole.googleapis.com'.",
            );
            if let Some(secs) = retry_after {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, header::HeaderValue::from(secs));
            }
            return response;
        }
        Some(Failure::ServerError(code)) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let (name, message) = match status.as_u16() {
                500 => ("INTERNAL", "Internal error encountered."),
                501 => (
                    "UNIMPLEMENTED",
                    "Operation is not implemented, or supported, or enabled.",
                ),
                503 => ("UNAVAILABLE", "The service is currently unavailable."),
                504 => ("DEADLINE_EXCEEDED", "The request timed out."),
                _ => ("UNKNOWN", "Unknown error."),
            };
            return google_error(status, name, message);
        }
        Some(Failure::Hang(wait)) => tokio::time::sleep(wait).await,
        None => {}
    }

    // Permission.
    let visible = inner
        .state()
        .grants
        .get(&refresh_token)
        .is_some_and(|grant| grant.sites.contains(&site_url));
    if !visible {
        return google_error(
            StatusCode::FORBIDDEN,
            "PERMISSION_DENIED",
            &format!(
                "User does not have sufficient permission for site '{site_url}'. See also: https://support.google.com/webmasters/answer/2451999."
            ),
        );
    }

    let delay = inner.state().query_delay;
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }

    // The answer.
    let data = inner
        .state()
        .sites
        .get(&site_url)
        .cloned()
        .unwrap_or_default();
    let rows = answer_rows(&data, &params);
    let aggregation = match params.aggregation.as_deref() {
        Some("byPage") => "byPage",
        Some("byProperty") => "byProperty",
        _ if params.dimension.as_deref() == Some("page") => "byPage",
        _ => "byProperty",
    };
    let mut answer = Map::new();
    if !rows.is_empty() {
        answer.insert("rows".to_owned(), Value::Array(rows));
    }
    answer.insert(
        "responseAggregationType".to_owned(),
        Value::String(aggregation.to_owned()),
    );
    json_response(StatusCode::OK, &Value::Object(answer))
}

/// The rows answering `params`, sliced by `startRow` / `rowLimit`.
fn answer_rows(data: &SiteData, params: &QueryParams) -> Vec<Value> {
    let in_range = |day: &&Day| params.start <= day.date && day.date <= params.end;
    let rows: Vec<Value> = match params.dimension.as_deref() {
        None => {
            let days: Vec<&Day> = data.days.iter().filter(in_range).collect();
            if days.is_empty() {
                Vec::new()
            } else {
                let clicks: u64 = days.iter().map(|day| day.clicks).sum();
                let impressions: u64 = days.iter().map(|day| day.impressions).sum();
                let weighted: f64 = days
                    .iter()
                    .map(|day| day.position * day.impressions as f64)
                    .sum();
                let position = if impressions == 0 {
                    0.0
                } else {
                    weighted / impressions as f64
                };
                vec![row_json(None, clicks, impressions, position)]
            }
        }
        Some("date") => {
            let mut days: Vec<&Day> = data.days.iter().filter(in_range).collect();
            days.sort_by_key(|day| day.date);
            days.into_iter()
                .map(|day| {
                    row_json(
                        Some(day.date.format("%Y-%m-%d").to_string()),
                        day.clicks,
                        day.impressions,
                        day.position,
                    )
                })
                .collect()
        }
        Some(dimension @ ("query" | "page")) => {
            let mut rows: Vec<&Row> = if dimension == "query" {
                data.queries.iter().collect()
            } else {
                data.pages.iter().collect()
            };
            rows.sort_by(|a, b| b.clicks.cmp(&a.clicks).then_with(|| a.key.cmp(&b.key)));
            rows.into_iter()
                .map(|row| {
                    row_json(
                        Some(row.key.clone()),
                        row.clicks,
                        row.impressions,
                        row.position,
                    )
                })
                .collect()
        }
        // country, device, searchAppearance: the stand-in holds no data for them.
        Some(_) => Vec::new(),
    };
    rows.into_iter()
        .skip(params.start_row)
        .take(params.row_limit)
        .collect()
}

/// One response row; `keys` is left out for a query without dimensions.
fn row_json(key: Option<String>, clicks: u64, impressions: u64, position: f64) -> Value {
    let ctr = if impressions == 0 {
        0.0
    } else {
        clicks as f64 / impressions as f64
    };
    let mut row = Map::new();
    if let Some(key) = key {
        row.insert("keys".to_owned(), json!([key]));
    }
    row.insert("clicks".to_owned(), json!(clicks));
    row.insert("impressions".to_owned(), json!(impressions));
    row.insert("ctr".to_owned(), json!(ctr));
    row.insert("position".to_owned(), json!(position));
    Value::Object(row)
}

/// Checks a query body against the documented shape; the error names the field.
fn check_query_body(body: &Value) -> Result<QueryParams, String> {
    let Some(object) = body.as_object() else {
        return Err(format!(
            "Invalid JSON payload received. Expected an object, got {body}."
        ));
    };
    for name in object.keys() {
        match name.as_str() {
            known if BODY_FIELDS.contains(&known) => {}
            "dimensionFilterGroups" => {
                return Err(
                    "dimensionFilterGroups: filters are not supported by this stand-in.".to_owned(),
                )
            }
            "searchType" => {
                return Err("searchType: deprecated; this stand-in accepts only `type`.".to_owned())
            }
            other => {
                return Err(format!(
                    "Invalid JSON payload received. Unknown name {}: Cannot find field.",
                    Value::String(other.to_owned())
                ))
            }
        }
    }
    // Protobuf's JSON mapping reads `null` as an absent field.
    let field = |name: &str| object.get(name).filter(|value| !value.is_null());

    let start = check_date(field("startDate"), "startDate")?;
    let end = check_date(field("endDate"), "endDate")?;
    if start > end {
        return Err(format!(
            "startDate ({start}) must be less than or equal to endDate ({end})."
        ));
    }

    let dimension = match field("dimensions") {
        None => None,
        Some(Value::Array(items)) => {
            let mut names = Vec::with_capacity(items.len());
            for (index, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(name) if DIMENSIONS.contains(&name) => names.push(name),
                    _ => {
                        return Err(format!(
                            "Invalid value at 'dimensions[{index}]' (TYPE_ENUM), {item}"
                        ))
                    }
                }
            }
            if names.len() > 1 {
                return Err(format!(
                    "dimensions: this stand-in supports at most one dimension, got {}.",
                    names.len()
                ));
            }
            names.first().map(|name| (*name).to_owned())
        }
        Some(other) => {
            return Err(format!(
                "Invalid value at 'dimensions' (TYPE_ENUM), {other}: expected a list."
            ))
        }
    };

    let row_limit = check_integer(field("rowLimit"), "rowLimit", 1000)?;
    if !(1..=25_000).contains(&row_limit) {
        return Err(format!(
            "Invalid value at 'rowLimit': {row_limit}; it must be between 1 and 25000."
        ));
    }
    let start_row = check_integer(field("startRow"), "startRow", 0)?;
    if start_row < 0 {
        return Err(format!(
            "Invalid value at 'startRow': {start_row}; it must not be negative."
        ));
    }

    check_enum(field("dataState"), "dataState", &DATA_STATES)?;
    check_enum(field("type"), "type", &SEARCH_TYPES)?;
    let aggregation = check_enum(
        field("aggregationType"),
        "aggregationType",
        &AGGREGATION_TYPES,
    )?;
    if aggregation.as_deref() == Some("byProperty") && dimension.as_deref() == Some("page") {
        return Err(
            "aggregationType: byProperty is not supported when grouping by page.".to_owned(),
        );
    }

    Ok(QueryParams {
        start,
        end,
        dimension,
        row_limit: usize::try_from(row_limit).unwrap_or(usize::MAX),
        start_row: usize::try_from(start_row).unwrap_or(usize::MAX),
        aggregation,
    })
}

/// A required `YYYY-MM-DD` date field.
fn check_date(value: Option<&Value>, name: &str) -> Result<NaiveDate, String> {
    let Some(value) = value else {
        return Err(format!("{name} is required."));
    };
    let text = value.as_str().unwrap_or("");
    let shaped = text.len() == 10
        && text.bytes().enumerate().all(|(index, byte)| match index {
            4 | 7 => byte == b'-',
            _ => byte.is_ascii_digit(),
        });
    let date = shaped
        .then(|| NaiveDate::parse_from_str(text, "%Y-%m-%d").ok())
        .flatten();
    date.ok_or_else(|| format!("Invalid value at '{name}' ({value}): expected a YYYY-MM-DD date."))
}

/// An optional int32 field.
fn check_integer(value: Option<&Value>, name: &str, default: i64) -> Result<i64, String> {
    match value {
        None => Ok(default),
        Some(value) => value
            .as_i64()
            .filter(|number| i32::try_from(*number).is_ok())
            .ok_or_else(|| format!("Invalid value at '{name}' (TYPE_INT32), {value}")),
    }
}

/// An optional enum field (a string among `allowed`).
fn check_enum(
    value: Option<&Value>,
    name: &str,
    allowed: &[&str],
) -> Result<Option<String>, String> {
    match value {
        None => Ok(None),
        Some(value) => match value.as_str() {
            Some(text) if allowed.contains(&text) => Ok(Some(text.to_owned())),
            _ => Err(format!(
                "Invalid value at '{name}' (TYPE_ENUM), {value}; expected one of {}.",
                allowed.join(", ")
            )),
        },
    }
}

/// The token of `Authorization: Bearer <token>`.
fn bearer_token(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then(|| token.to_owned())
}

/// 401 UNAUTHENTICATED, with the `WWW-Authenticate` challenge Google sends.
fn unauthenticated(message: &str) -> Response {
    let mut response = google_error(StatusCode::UNAUTHORIZED, "UNAUTHENTICATED", message);
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer realm=\"https://accounts.google.com/\""),
    );
    response
}

/// 400 INVALID_ARGUMENT.
fn invalid_argument(message: &str) -> Response {
    google_error(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", message)
}

/// Google's JSON error `{"error": {"code", "message", "status"}}`.
fn google_error(status: StatusCode, name: &str, message: &str) -> Response {
    json_response(
        status,
        &json!({
            "error": {
                "code": status.as_u16(),
                "message": message,
                "status": name,
            }
        }),
    )
}

// ---------------------------------------------------------------------------------------------
// Helpers.

/// A JSON response.
fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json; charset=UTF-8")],
        body.to_string(),
    )
        .into_response()
}

/// Whether `Content-Type` is `media_type` (parameters such as `charset` allowed).
fn has_media_type(headers: &HeaderMap, media_type: &str) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|value| value.trim().eq_ignore_ascii_case(media_type))
}

/// Percent-decodes `text` (and `+` as a space when `plus_is_space`, as forms have it); `None`
/// for a bad escape or a result that is not UTF-8.
fn percent_decode(text: &str, plus_is_space: bool) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'%' => {
                let high = hex_digit(*bytes.get(index + 1)?)?;
                let low = hex_digit(*bytes.get(index + 2)?)?;
                decoded.push((high << 4) | low);
                index += 3;
            }
            b'+' if plus_is_space => {
                decoded.push(b' ');
                index += 1;
            }
            byte => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8(decoded).ok()
}

/// The value of a hexadecimal digit.
fn hex_digit(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_percent_encoding() {
        assert_eq!(
            percent_decode("https%3A%2F%2Fwww.example.com%2F", false).as_deref(),
            Some("https://www.example.com/")
        );
        assert_eq!(
            percent_decode("sc-domain%3aexample.com", false).as_deref(),
            Some("sc-domain:example.com")
        );
        assert_eq!(percent_decode("a+b", false).as_deref(), Some("a+b"));
        assert_eq!(percent_decode("a+b", true).as_deref(), Some("a b"));
        assert_eq!(percent_decode("bad%2", false), None);
        assert_eq!(percent_decode("bad%zz", false), None);
    }

    #[test]
    fn parses_forms() {
        let form = parse_form(b"grant_type=refresh_token&refresh_token=1%2F%2Fabc&x=").unwrap();
        assert_eq!(form["grant_type"], "refresh_token");
        assert_eq!(form["refresh_token"], "1//abc");
        assert_eq!(form["x"], "");
        assert!(parse_form(b"a=1&a=2").is_err());
    }

    #[test]
    fn checks_query_bodies() {
        let params = check_query_body(&json!({
            "startDate": "2026-11-01",
            "endDate": "2026-11-10",
            "dimensions": ["date"],
            "type": "web",
            "rowLimit": 25000,
            "startRow": 0,
            "dataState": "all",
            "aggregationType": "auto",
        }))
        .unwrap();
        assert_eq!(params.dimension.as_deref(), Some("date"));
        assert_eq!(params.row_limit, 25_000);

        for (body, field) in [
            (json!({"endDate": "2026-11-10"}), "startDate"),
            (
                json!({"startDate": "2026-11-1", "endDate": "2026-11-10"}),
                "startDate",
            ),
            (
                json!({"startDate": "2026-11-11", "endDate": "2026-11-10"}),
                "startDate",
            ),
            (
                json!({"startDate": "2026-11-01", "endDate": "2026-11-10", "rowLimit": 0}),
                "rowLimit",
            ),
            (
                json!({"startDate": "2026-11-01", "endDate": "2026-11-10", "rowLimit": 25001}),
                "rowLimit",
            ),
            (
                json!({"startDate": "2026-11-01", "endDate": "2026-11-10", "startRow": -1}),
                "startRow",
            ),
            (
                json!({"startDate": "2026-11-01", "endDate": "2026-11-10", "dataState": "fresh"}),
                "dataState",
            ),
            (
                json!({"startDate": "2026-11-01", "endDate": "2026-11-10", "type": "books"}),
                "type",
            ),
            (
                json!({"startDate": "2026-11-01", "endDate": "2026-11-10", "dimensions": ["hours"]}),
                "dimensions",
            ),
            (
                json!({"startDate": "2026-11-01", "endDate": "2026-11-10", "dimensions": ["date", "query"]}),
                "dimensions",
            ),
            (
                json!({"startDate": "2026-11-01", "endDate": "2026-11-10", "extra": 1}),
                "extra",
            ),
        ] {
            let error = check_query_body(&body).unwrap_err();
            assert!(error.contains(field), "{body}: {error}");
        }
    }
}
