//! Search Console: the client seam ([`SearchConsole`]), Google's implementation
//! ([`GoogleSearchConsole`], feature `net`), and the snapshot a sync stores per property.
//!
//! A sync (`POST /properties/{id}/gsc/sync`) is the only thing that talks to Google. It
//! exchanges the organization's refresh token for an access token (cached until shortly
//! before it expires), asks `searchAnalytics.query` for the last 35 days by date to learn the
//! latest date Google has final data for, and then for the 28 days ending there by query and
//! by page, 25,000 rows a request, paging with `startRow`. The rows, the daily series, the
//! totals and the crawl correlation (each page row joined with the property's latest
//! completed scan) become one [`GscSnapshot`], which the store swaps in atomically. Every GET
//! reads only stored snapshots.

mod client;
#[cfg(feature = "gsc")]
mod google;
pub(crate) mod sync;

pub use crate::model::gsc::{
    CrawlCorrelation, GscAccount, GscDay, GscRow, GscSnapshot, Metrics, NewSnapshot, PageCrawl,
    PortfolioCounts, RowKind, ScanPages, ScannedPage,
};

pub use client::{
    AccessToken, AnalyticsQuery, AnalyticsRow, DataState, Dimension, GoogleError, GscSites,
    SearchConsole, SiteEntry,
};
#[cfg(feature = "gsc")]
pub use google::{
    GoogleConfig, GoogleSearchConsole, GOOGLE_API_BASE_URL, GOOGLE_AUTHORIZE_URL, GOOGLE_TOKEN_URL,
    SEARCH_CONSOLE_SCOPE,
};

/// Days in a snapshot.
pub const WINDOW_DAYS: i64 = 28;
/// How far back a sync looks for the latest date with data.
pub const LOOKBACK_DAYS: i64 = 35;
/// Rows per `searchAnalytics.query` request (Google's maximum).
pub const ROWS_PER_REQUEST: u32 = 25_000;
/// Rows kept per dimension (query, page): four full requests.
pub const MAX_ROWS: usize = 100_000;
/// A linked property whose snapshot is older than this (or missing) is stale.
pub const STALE_AFTER_HOURS: i64 = 48;
/// Rows of each kind shown in `GET /properties/{id}/gsc`; the rest are paginated.
pub const TOP_ROWS: usize = 10;

/// Whether `site_url` is a Search Console site: `sc-domain:` and a host name, or an absolute
/// `http`/`https` URL prefix ending in `/`.
pub fn check_site_url(site_url: &str) -> Result<(), &'static str> {
    const RULE: &str = "must be a Search Console site: sc-domain:example.com, or a URL prefix \
                        such as https://www.example.com/ (ending in /)";
    if site_url.is_empty() || site_url.len() > 2048 || site_url.trim() != site_url {
        return Err(RULE);
    }
    if let Some(domain) = site_url.strip_prefix("sc-domain:") {
        let valid = !domain.is_empty()
            && domain.len() <= 253
            && domain.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        return if valid { Ok(()) } else { Err(RULE) };
    }
    match url::Url::parse(site_url) {
        Ok(url)
            if matches!(url.scheme(), "http" | "https")
                && url.host_str().is_some()
                && site_url.ends_with('/')
                && url.query().is_none()
                && url.fragment().is_none()
                && url.username().is_empty() =>
        {
            Ok(())
        }
        _ => Err(RULE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn site_urls_of_both_forms_are_accepted() {
        for good in [
            "sc-domain:example.com",
            "sc-domain:shop.example.co.uk",
            "https://www.example.com/",
            "http://example.com/blog/",
        ] {
            assert_eq!(check_site_url(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "example.com",
            "sc-domain:",
            "sc-domain:exa mple.com",
            "sc-domain:example..com",
            "https://www.example.com",
            "https://www.example.com/?q=1",
            "ftp://example.com/",
            " https://example.com/",
        ] {
            assert!(check_site_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sums_weight_the_position_by_impressions() {
        let a = Metrics::new(10, 100, Some(2.0));
        let b = Metrics::new(0, 300, Some(6.0));
        let total = Metrics::sum([&a, &b, &Metrics::ZERO]);
        assert_eq!(total.clicks, 10);
        assert_eq!(total.impressions, 400);
        assert!((total.ctr - 0.025).abs() < 1e-12);
        assert!((total.position.unwrap() - 5.0).abs() < 1e-12);
        assert_eq!(Metrics::sum([&Metrics::ZERO]), Metrics::ZERO);
    }
}
