//! Search Console's records: linked Google accounts and the snapshot a sync stores per
//! property (see [`crate::gsc`] for how a sync makes them).

use chrono::NaiveDate;
use serde::Serialize;

use crate::ids::{JobId, OrganizationId, PropertyId};
use crate::time::Timestamp;

/// An organization's linked Google account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GscAccount {
    /// The organization.
    pub organization_id: OrganizationId,
    /// The refresh token, sealed with the host's secret (never stored in the clear).
    pub sealed_refresh_token: String,
    /// The Google account's address, as the host gave it.
    pub account_email: Option<String>,
    /// When it was linked; also tells one linking from the next.
    pub linked_at: Timestamp,
    /// When Google answered `invalid_grant` for it; it stays revoked until linked again.
    pub revoked_at: Option<Timestamp>,
}

/// Clicks, impressions, click-through rate and average position.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Metrics {
    /// Clicks.
    pub clicks: u64,
    /// Impressions.
    pub impressions: u64,
    /// `clicks / impressions`, 0 without impressions.
    pub ctr: f64,
    /// Average position (1 is the top), weighted by impressions; null without impressions.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub position: Option<f64>,
}

impl Metrics {
    /// No clicks, no impressions.
    pub const ZERO: Metrics = Metrics {
        clicks: 0,
        impressions: 0,
        ctr: 0.0,
        position: None,
    };

    /// The sum of several rows, with the position weighted by impressions.
    pub fn sum<'a>(rows: impl IntoIterator<Item = &'a Metrics>) -> Metrics {
        let (mut clicks, mut impressions, mut weighted) = (0u64, 0u64, 0f64);
        for row in rows {
            clicks += row.clicks;
            impressions += row.impressions;
            weighted += row.position.unwrap_or(0.0) * row.impressions as f64;
        }
        Metrics::new(
            clicks,
            impressions,
            (impressions > 0).then(|| weighted / impressions as f64),
        )
    }

    /// Metrics with the rate computed.
    pub fn new(clicks: u64, impressions: u64, position: Option<f64>) -> Metrics {
        Metrics {
            clicks,
            impressions,
            ctr: if impressions == 0 {
                0.0
            } else {
                clicks as f64 / impressions as f64
            },
            position: position.filter(|_| impressions > 0),
        }
    }
}

/// One day of the daily series.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GscDay {
    /// The day (`YYYY-MM-DD`, Google's dates are Pacific time).
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = Date))]
    pub date: NaiveDate,
    /// That day's figures; zero on a day without data.
    #[serde(flatten)]
    pub metrics: Metrics,
}

/// Which list a row belongs to.
///
/// Not `#[non_exhaustive]`: every store (or edge) that is given one matches on it, and a
/// variant added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RowKind {
    /// Search queries.
    Query,
    /// Landing pages.
    Page,
}

impl RowKind {
    /// `query` or `page`.
    pub fn as_str(self) -> &'static str {
        match self {
            RowKind::Query => "query",
            RowKind::Page => "page",
        }
    }
}

/// What the latest completed scan saw of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PageCrawl {
    /// The final HTTP status; null when the fetch got no answer.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub status_code: Option<u16>,
    /// Open issues of the property about this URL.
    pub open_issues: u32,
}

/// One query or page row of a snapshot, in the order Google ranks them (clicks, descending).
#[derive(Debug, Clone, PartialEq)]
pub struct GscRow {
    /// 0 for the top row.
    pub rank: u32,
    /// The query, or the page's URL.
    pub key: String,
    /// Its figures over the window.
    pub metrics: Metrics,
    /// Page rows: what the latest completed scan saw of the URL, if it fetched it.
    pub crawl: Option<PageCrawl>,
}

/// How the page rows of a snapshot meet the property's latest completed scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CrawlCorrelation {
    /// The scan the page rows were joined with; null when the property had no completed scan.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub scan_id: Option<JobId>,
    /// When that scan completed.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub scanned_at: Option<Timestamp>,
    /// Page rows whose URL the scan fetched.
    pub pages_crawled: u32,
    /// Page rows whose URL the scan did not fetch.
    pub pages_not_crawled: u32,
    /// Crawled page rows that answered 4xx or 5xx, or not at all.
    pub pages_with_errors: u32,
    /// Crawled page rows with at least one open issue.
    pub pages_with_open_issues: u32,
}

/// A property's stored Search Console data: what one sync fetched.
#[derive(Debug, Clone, PartialEq)]
pub struct GscSnapshot {
    /// The property.
    pub property_id: PropertyId,
    /// Its organization.
    pub organization_id: OrganizationId,
    /// The Search Console site it was fetched from.
    pub site_url: String,
    /// When the sync finished.
    pub synced_at: Timestamp,
    /// First day of the window.
    pub start_date: NaiveDate,
    /// Last day of the window: the latest date Google had final data for.
    pub end_date: NaiveDate,
    /// Totals over the window.
    pub totals: Metrics,
    /// One entry per day of the window, oldest first.
    pub daily: Vec<GscDay>,
    /// Query rows stored.
    pub query_count: u32,
    /// Page rows stored.
    pub page_count: u32,
    /// The join of the page rows with the latest completed scan.
    pub correlation: CrawlCorrelation,
}

/// Everything a sync stores: the snapshot and its rows.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSnapshot {
    /// The snapshot.
    pub snapshot: GscSnapshot,
    /// Its query rows, by rank.
    pub queries: Vec<GscRow>,
    /// Its page rows, by rank.
    pub pages: Vec<GscRow>,
}

/// The figures of `GET /organization/gsc` that come from the store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortfolioCounts {
    /// The organization's properties.
    pub total_properties: u64,
    /// Those mapped to a Search Console site.
    pub linked_properties: u64,
    /// Clicks of the linked properties' snapshots.
    pub total_clicks: u64,
    /// Impressions of the linked properties' snapshots.
    pub total_impressions: u64,
    /// Linked properties without a snapshot of their site synced at or after the cut-off.
    pub stale: u64,
}

/// A page the latest completed scan fetched, with the open issues about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedPage {
    /// The normalised address requested.
    pub url: String,
    /// The final status; `None` when the fetch got no answer.
    pub status_code: Option<u16>,
    /// Open issues of the property whose `url` is this address.
    pub open_issues: u32,
}

/// The property's latest completed scan, page by page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanPages {
    /// The scan.
    pub job_id: JobId,
    /// When it completed.
    pub completed_at: Timestamp,
    /// Its pages.
    pub pages: Vec<ScannedPage>,
}
