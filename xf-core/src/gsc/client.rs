//! The seam between a sync and Google: the OAuth refresh-token exchange and one
//! `searchAnalytics.query` request.

use std::time::Duration;

use async_trait::async_trait;
use chrono::NaiveDate;

/// An access token from the refresh-token exchange.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken {
    /// The bearer token.
    pub token: String,
    /// How long Google says it lives (`expires_in`).
    pub expires_in: Duration,
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessToken")
            .field("token", &"<redacted>")
            .field("expires_in", &self.expires_in)
            .finish()
    }
}

/// The one dimension of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Dimension {
    /// By day.
    Date,
    /// By search query.
    Query,
    /// By landing page.
    Page,
}

impl Dimension {
    /// Google's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Dimension::Date => "date",
            Dimension::Query => "query",
            Dimension::Page => "page",
        }
    }
}

/// Google's `dataState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DataState {
    /// Only finalised data (Google's default).
    Final,
    /// Also fresh data that may still change.
    All,
}

impl DataState {
    /// Google's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            DataState::Final => "final",
            DataState::All => "all",
        }
    }
}

/// One `searchAnalytics.query` request (web search type).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalyticsQuery {
    /// First day, inclusive.
    pub start_date: NaiveDate,
    /// Last day, inclusive.
    pub end_date: NaiveDate,
    /// What the rows are grouped by.
    pub dimension: Dimension,
    /// Rows to return (at most 25,000).
    pub row_limit: u32,
    /// Rows to skip.
    pub start_row: u64,
    /// Final data only, or fresh data too.
    pub data_state: DataState,
}

/// One row of an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyticsRow {
    /// The dimension's value (a `YYYY-MM-DD` date, a query or a page URL).
    pub key: String,
    /// Clicks.
    pub clicks: u64,
    /// Impressions.
    pub impressions: u64,
    /// Average position.
    pub position: f64,
}

/// How Google (or the way to it) failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GoogleError {
    /// The refresh token was revoked or expired (`invalid_grant`).
    #[error("Google refused the refresh token (invalid_grant): {0}")]
    InvalidGrant(String),
    /// Google refused the host's OAuth client (`invalid_client`, `unauthorized_client`).
    #[error("Google refused the host's OAuth client: {0}")]
    ClientRejected(String),
    /// The access token was not accepted (401); a fresh one may be.
    #[error("Google did not accept the access token: {0}")]
    Unauthenticated(String),
    /// The account cannot see the site (403, 404).
    #[error("{0}")]
    SiteInaccessible(String),
    /// Google's quota: try again after this long (if it said).
    #[error("Google's rate limit: {message}")]
    RateLimited {
        /// Google's message.
        message: String,
        /// Its `Retry-After`.
        retry_after: Option<Duration>,
    },
    /// A 5xx, or an answer that is not what the API documents.
    #[error("Google failed: {0}")]
    Unavailable(String),
    /// No answer in time, or no connection.
    #[error("Google did not answer: {0}")]
    Unreachable(String),
    /// Google rejected the request as malformed (400).
    #[error("Google rejected the request: {0}")]
    Rejected(String),
}

/// Google's Search Console, as a sync needs it.
#[async_trait]
pub trait SearchConsole: Send + Sync + std::fmt::Debug {
    /// Exchanges a refresh token for an access token.
    async fn refresh(&self, refresh_token: &str) -> Result<AccessToken, GoogleError>;

    /// One page of `searchAnalytics.query` for `site_url`; an empty list when Google has no
    /// rows.
    async fn query(
        &self,
        access_token: &str,
        site_url: &str,
        query: &AnalyticsQuery,
    ) -> Result<Vec<AnalyticsRow>, GoogleError>;

    /// `sites.list`: every site the account can see, with its permission level.
    async fn sites(&self, access_token: &str) -> Result<Vec<SiteEntry>, GoogleError>;
}

/// A Search Console site an account can see (`GET /admin/organizations/{orgId}/gsc/sites`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SiteEntry {
    /// `sc-domain:example.com`, or a URL prefix ending in `/`: what a property maps to.
    pub site_url: String,
    /// `siteOwner`, `siteFullUser`, `siteRestrictedUser` or `siteUnverifiedUser` (which
    /// cannot read the site's data).
    pub permission_level: String,
}

/// `GET /admin/organizations/{orgId}/gsc/sites`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GscSites {
    /// Every site the linked Google account can see.
    pub sites: Vec<SiteEntry>,
}
