//! Google's Search Console over HTTPS: the OAuth 2.0 token endpoint and the Search Console
//! API's `searchAnalytics.query`, with base URLs a host (or a test) can point elsewhere.

use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;

use super::client::{
    AccessToken, AnalyticsQuery, AnalyticsRow, GoogleError, SearchConsole, SiteEntry,
};
use crate::connect::{oauth, Account, ConnectFailure, Grant, Provider};
use crate::net::token::TokenReply;

/// Google's OAuth 2.0 token endpoint.
pub const GOOGLE_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
/// Google's authorization endpoint, where connect links send users.
pub const GOOGLE_AUTHORIZE_URL: &str = oauth::GOOGLE_AUTHORIZE_URL;
/// What a connect link asks for: reading Search Console (its sites and their data).
pub const SEARCH_CONSOLE_SCOPE: &str = "https://www.googleapis.com/auth/webmasters.readonly";
/// The Search Console API's base (`/webmasters/v3/...` follows).
pub const GOOGLE_API_BASE_URL: &str = "https://searchconsole.googleapis.com";
/// Longest wait for one answer from Google, by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Answers are read up to this size (25,000 rows of long page URLs fit well within it).
const MAX_ANSWER_BYTES: usize = 64 << 20;

/// The host's OAuth client and where Google is.
#[derive(Clone)]
pub struct GoogleConfig {
    /// The OAuth client id (`XF_GOOGLE_CLIENT_ID`).
    pub client_id: String,
    /// The OAuth client secret (`XF_GOOGLE_CLIENT_SECRET`).
    pub client_secret: String,
    /// The token endpoint (`XF_GOOGLE_TOKEN_URL`; default [`GOOGLE_TOKEN_URL`]).
    pub token_url: String,
    /// The authorization endpoint of connect links (`XF_GOOGLE_AUTHORIZE_URL`; default
    /// [`GOOGLE_AUTHORIZE_URL`]).
    pub authorize_url: String,
    /// The API's base URL (`XF_GOOGLE_API_BASE_URL`; default [`GOOGLE_API_BASE_URL`]).
    pub api_base_url: String,
    /// Longest wait for one answer.
    pub timeout: Duration,
}

impl GoogleConfig {
    /// Google's endpoints with this OAuth client.
    pub fn new(client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        GoogleConfig {
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            token_url: GOOGLE_TOKEN_URL.to_owned(),
            authorize_url: GOOGLE_AUTHORIZE_URL.to_owned(),
            api_base_url: GOOGLE_API_BASE_URL.to_owned(),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl std::fmt::Debug for GoogleConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("token_url", &self.token_url)
            .field("api_base_url", &self.api_base_url)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// [`SearchConsole`] over HTTPS.
#[derive(Debug, Clone)]
pub struct GoogleSearchConsole {
    config: GoogleConfig,
    client: reqwest::Client,
}

impl GoogleSearchConsole {
    /// The client of `config`.
    pub fn new(config: GoogleConfig) -> Self {
        let client = crate::net::client(config.timeout);
        GoogleSearchConsole { config, client }
    }

    fn query_url(&self, site_url: &str) -> String {
        format!(
            "{}/webmasters/v3/sites/{}/searchAnalytics/query",
            self.config.api_base_url.trim_end_matches('/'),
            encode_segment(site_url)
        )
    }
}

/// A path segment with everything but RFC 3986's unreserved characters percent-encoded, as
/// Google expects a site URL (`sc-domain%3Aexample.com`, `https%3A%2F%2Fexample.com%2F`).
fn encode_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[derive(Deserialize)]
struct QueryAnswer {
    #[serde(default)]
    rows: Vec<RowAnswer>,
}

#[derive(Deserialize)]
struct RowAnswer {
    #[serde(default)]
    keys: Vec<String>,
    clicks: f64,
    impressions: f64,
    position: f64,
}

#[derive(Deserialize)]
struct ErrorAnswer {
    error: ErrorBody,
}

#[derive(Deserialize)]
struct ErrorBody {
    message: Option<String>,
    status: Option<String>,
}

/// What Google answered: the status, its `Retry-After` (in seconds), and the body.
struct Answer {
    status: u16,
    wait: Option<Duration>,
    body: Vec<u8>,
}

/// Sends a request that asks for JSON and reads the answer, at most [`MAX_ANSWER_BYTES`].
async fn exchange(request: reqwest::RequestBuilder) -> Result<Answer, GoogleError> {
    let request = request.header("accept", "application/json");
    match crate::net::exchange(request, MAX_ANSWER_BYTES).await {
        Ok(answer) => Ok(Answer {
            status: answer.status,
            wait: answer.retry_after,
            body: answer.body,
        }),
        Err(crate::net::ExchangeError::Unreachable(why)) => Err(GoogleError::Unreachable(why)),
        Err(too_large) => Err(GoogleError::Unavailable(too_large.to_string())),
    }
}

/// A non-2xx answer of the API as an error.
fn api_error(status: u16, retry_after: Option<Duration>, body: &[u8]) -> GoogleError {
    let message = serde_json::from_slice::<ErrorAnswer>(body)
        .ok()
        .map(|answer| {
            let text = answer.error.message.unwrap_or_default();
            match answer.error.status {
                Some(status) if !text.is_empty() => format!("{status}: {text}"),
                Some(status) => status,
                None => text,
            }
        })
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| format!("HTTP {status}"));
    match status {
        401 => GoogleError::Unauthenticated(message),
        403 | 404 => GoogleError::SiteInaccessible(message),
        429 => GoogleError::RateLimited {
            message,
            retry_after,
        },
        400..=499 => GoogleError::Rejected(message),
        _ => GoogleError::Unavailable(message),
    }
}

#[async_trait]
impl SearchConsole for GoogleSearchConsole {
    async fn refresh(&self, refresh_token: &str) -> Result<AccessToken, GoogleError> {
        let form = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("client_id", &self.config.client_id)
            .append_pair("client_secret", &self.config.client_secret)
            .append_pair("refresh_token", refresh_token)
            .append_pair("grant_type", "refresh_token")
            .finish();
        let request = self
            .client
            .post(&self.config.token_url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form);
        let Answer { status, wait, body } = exchange(request).await?;
        let (code, description) = match TokenReply::read(status, &body) {
            TokenReply::Granted {
                access_token,
                expires_in: Some(expires_in),
                ..
            } => {
                return Ok(AccessToken {
                    token: access_token,
                    expires_in,
                })
            }
            TokenReply::Granted { .. } | TokenReply::Unreadable => {
                return Err(GoogleError::Unavailable(
                    "the token endpoint's answer has no access_token and expires_in".into(),
                ))
            }
            TokenReply::Refused { code, description } => (code, description),
        };
        let message = description.unwrap_or_else(|| code.clone());
        Err(match (status, code.as_str()) {
            (_, "invalid_grant") => GoogleError::InvalidGrant(message),
            (_, "invalid_client" | "unauthorized_client") => GoogleError::ClientRejected(message),
            (429, _) => GoogleError::RateLimited {
                message,
                retry_after: wait,
            },
            (400..=499, _) => GoogleError::Rejected(message),
            _ => GoogleError::Unavailable(message),
        })
    }

    async fn query(
        &self,
        access_token: &str,
        site_url: &str,
        query: &AnalyticsQuery,
    ) -> Result<Vec<AnalyticsRow>, GoogleError> {
        let body = json!({
            "startDate": query.start_date.format("%Y-%m-%d").to_string(),
            "endDate": query.end_date.format("%Y-%m-%d").to_string(),
            "dimensions": [query.dimension.as_str()],
            "type": "web",
            "rowLimit": query.row_limit,
            "startRow": query.start_row,
            "dataState": query.data_state.as_str(),
        });
        let request = self
            .client
            .post(self.query_url(site_url))
            .bearer_auth(access_token)
            .header("content-type", "application/json")
            .body(body.to_string());
        let Answer { status, wait, body } = exchange(request).await?;
        if !(200..300).contains(&status) {
            return Err(api_error(status, wait, &body));
        }
        let answer: QueryAnswer = serde_json::from_slice(&body)
            .map_err(|e| GoogleError::Unavailable(format!("searchAnalytics.query answered {e}")))?;
        Ok(answer
            .rows
            .into_iter()
            .map(|row| AnalyticsRow {
                key: row.keys.into_iter().next().unwrap_or_default(),
                clicks: row.clicks.max(0.0).round() as u64,
                impressions: row.impressions.max(0.0).round() as u64,
                position: row.position,
            })
            .collect())
    }

    async fn sites(&self, access_token: &str) -> Result<Vec<SiteEntry>, GoogleError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Sites {
            #[serde(default)]
            site_entry: Vec<SiteEntry>,
        }
        let url = format!(
            "{}/webmasters/v3/sites",
            self.config.api_base_url.trim_end_matches('/')
        );
        let request = self.client.get(url).bearer_auth(access_token);
        let Answer { status, wait, body } = exchange(request).await?;
        if !(200..300).contains(&status) {
            return Err(api_error(status, wait, &body));
        }
        let sites: Sites = serde_json::from_slice(&body)
            .map_err(|e| GoogleError::Unavailable(format!("sites.list answered {e}")))?;
        Ok(sites.site_entry)
    }
}

/// Connect links for Google: consent to read Search Console, offline (the refresh token is
/// the organization's link); the sites the account can read (`sites.list`, unverified ones
/// left out) are what it reaches.
impl GoogleSearchConsole {
    /// The authorization-code flow of connect links.
    fn flow(&self) -> oauth::CodeFlow<'_> {
        oauth::google_flow(
            &self.config.authorize_url,
            &self.config.token_url,
            &self.config.client_id,
            &self.config.client_secret,
            SEARCH_CONSOLE_SCOPE,
        )
    }

    /// The accounts a connect link's grant reaches: the sites it can read.
    async fn connect_accounts(&self, grant: &Grant) -> Result<Vec<Account>, ConnectFailure> {
        let sites = self
            .sites(&grant.access_token)
            .await
            .map_err(|error| ConnectFailure::Unavailable(error.to_string()))?;
        Ok(sites
            .into_iter()
            .filter(|site| site.permission_level != "siteUnverifiedUser")
            .map(|site| Account {
                name: site.site_url.clone(),
                account_id: site.site_url,
                thumbnail: None,
                access_token: None,
                default_board: None,
            })
            .collect())
    }
}

oauth::code_flow_connector!(GoogleSearchConsole, Provider::Google);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn site_urls_are_one_encoded_segment() {
        assert_eq!(
            encode_segment("sc-domain:example.com"),
            "sc-domain%3Aexample.com"
        );
        assert_eq!(
            encode_segment("https://www.example.com/blog/"),
            "https%3A%2F%2Fwww.example.com%2Fblog%2F"
        );
    }

    #[test]
    fn api_errors_map_by_status() {
        let denied = br#"{"error":{"code":403,"message":"User does not have sufficient permission for site 'sc-domain:x.com'.","status":"PERMISSION_DENIED"}}"#;
        assert_eq!(
            api_error(403, None, denied),
            GoogleError::SiteInaccessible(
                "PERMISSION_DENIED: User does not have sufficient permission for site \
                 'sc-domain:x.com'."
                    .into()
            )
        );
        assert!(matches!(
            api_error(429, Some(Duration::from_secs(30)), b"{}"),
            GoogleError::RateLimited { retry_after: Some(d), .. } if d.as_secs() == 30
        ));
        assert!(matches!(
            api_error(401, None, b""),
            GoogleError::Unauthenticated(_)
        ));
        assert!(matches!(
            api_error(400, None, b"x"),
            GoogleError::Rejected(_)
        ));
        assert!(
            matches!(api_error(503, None, b"<html>"), GoogleError::Unavailable(m) if m == "HTTP 503")
        );
    }
}
