//! One sync: access tokens (cached), the requests to Google, and the snapshot made of the
//! answers.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::NaiveDate;

use super::client::{
    AnalyticsQuery, AnalyticsRow, DataState, Dimension, GoogleError, SearchConsole,
};
use super::{
    CrawlCorrelation, GscDay, GscRow, GscSnapshot, Metrics, NewSnapshot, PageCrawl, ScanPages,
    LOOKBACK_DAYS, MAX_ROWS, ROWS_PER_REQUEST, WINDOW_DAYS,
};
use crate::ids::OrganizationId;
use crate::model::Property;
use crate::time::Timestamp;

/// An access token is refreshed this long before Google says it expires.
pub(crate) const REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// Access tokens by organization, each for one linking of its account.
#[derive(Debug, Default)]
pub(crate) struct TokenCache {
    entries: Mutex<HashMap<OrganizationId, CachedToken>>,
}

#[derive(Debug)]
struct CachedToken {
    linked_at: Timestamp,
    token: String,
    good_until: Instant,
}

impl TokenCache {
    fn get(&self, organization_id: &OrganizationId, linked_at: Timestamp) -> Option<String> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(organization_id)
            .filter(|t| t.linked_at == linked_at && t.good_until > Instant::now())
            .map(|t| t.token.clone())
    }

    fn put(
        &self,
        organization_id: &OrganizationId,
        linked_at: Timestamp,
        token: &str,
        ttl: Duration,
    ) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        match ttl.checked_sub(REFRESH_MARGIN) {
            Some(left) if !left.is_zero() => {
                entries.insert(
                    organization_id.clone(),
                    CachedToken {
                        linked_at,
                        token: token.to_owned(),
                        good_until: Instant::now() + left,
                    },
                );
            }
            _ => {
                entries.remove(organization_id);
            }
        }
    }

    /// Drops the organization's token (its account was linked again, or the token failed).
    pub(crate) fn forget(&self, organization_id: &OrganizationId) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.remove(organization_id);
    }
}

/// What a sync talks to Google with, for one organization's account and one site.
pub(crate) struct Session<'a> {
    pub client: &'a dyn SearchConsole,
    pub tokens: &'a TokenCache,
    pub organization_id: &'a OrganizationId,
    pub linked_at: Timestamp,
    pub refresh_token: &'a str,
    pub site_url: &'a str,
    /// The token this sync uses, once it has one: a token too short-lived to cache still
    /// serves every request of the sync.
    pub current: Mutex<Option<String>>,
}

/// What Google answered for a property's window.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fetched {
    pub start_date: NaiveDate,
    pub end_date: NaiveDate,
    pub daily: Vec<GscDay>,
    pub queries: Vec<AnalyticsRow>,
    pub pages: Vec<AnalyticsRow>,
}

impl Session<'_> {
    fn current(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn token(&self) -> Result<String, GoogleError> {
        if let Some(token) = self.current().clone() {
            return Ok(token);
        }
        let token = match self.tokens.get(self.organization_id, self.linked_at) {
            Some(token) => token,
            None => {
                let fresh = self.client.refresh(self.refresh_token).await?;
                self.tokens.put(
                    self.organization_id,
                    self.linked_at,
                    &fresh.token,
                    fresh.expires_in,
                );
                fresh.token
            }
        };
        *self.current() = Some(token.clone());
        Ok(token)
    }

    /// `sites.list` of the account; a 401 drops the token and tries once more.
    pub(crate) async fn sites(&self) -> Result<Vec<super::SiteEntry>, GoogleError> {
        let token = self.token().await?;
        match self.client.sites(&token).await {
            Err(GoogleError::Unauthenticated(_)) => {
                self.tokens.forget(self.organization_id);
                *self.current() = None;
                let token = self.token().await?;
                self.client.sites(&token).await
            }
            other => other,
        }
    }

    /// One request; a 401 drops the token and tries once more with a fresh one.
    async fn query(&self, query: &AnalyticsQuery) -> Result<Vec<AnalyticsRow>, GoogleError> {
        let token = self.token().await?;
        match self.client.query(&token, self.site_url, query).await {
            Err(GoogleError::Unauthenticated(_)) => {
                self.tokens.forget(self.organization_id);
                *self.current() = None;
                let token = self.token().await?;
                self.client.query(&token, self.site_url, query).await
            }
            other => other,
        }
    }

    /// Every row of one dimension over the window, page by page, up to [`MAX_ROWS`].
    async fn all_rows(
        &self,
        start_date: NaiveDate,
        end_date: NaiveDate,
        dimension: Dimension,
    ) -> Result<Vec<AnalyticsRow>, GoogleError> {
        let mut rows = Vec::new();
        loop {
            let page = self
                .query(&AnalyticsQuery {
                    start_date,
                    end_date,
                    dimension,
                    row_limit: ROWS_PER_REQUEST,
                    start_row: rows.len() as u64,
                    data_state: DataState::Final,
                })
                .await?;
            let full = page.len() >= ROWS_PER_REQUEST as usize;
            rows.extend(page);
            if !full || rows.len() >= MAX_ROWS {
                rows.truncate(MAX_ROWS);
                return Ok(rows);
            }
        }
    }

    /// The 28 days ending at the latest date with final data (looking back from `today`),
    /// by date, query and page.
    pub(crate) async fn fetch(&self, today: NaiveDate) -> Result<Fetched, GoogleError> {
        let recent = self
            .query(&AnalyticsQuery {
                start_date: today - chrono::Duration::days(LOOKBACK_DAYS - 1),
                end_date: today,
                dimension: Dimension::Date,
                row_limit: ROWS_PER_REQUEST,
                start_row: 0,
                data_state: DataState::Final,
            })
            .await?;
        let mut days: HashMap<NaiveDate, Metrics> = HashMap::new();
        for row in &recent {
            let date = NaiveDate::parse_from_str(&row.key, "%Y-%m-%d").map_err(|_| {
                GoogleError::Unavailable(format!("a date row's key is not a date: {:?}", row.key))
            })?;
            days.insert(date, metrics_of(row));
        }
        let Some(end_date) = days.keys().max().copied() else {
            // No data at all in the last weeks: an empty window ending yesterday.
            let end_date = today - chrono::Duration::days(1);
            return Ok(Fetched {
                start_date: end_date - chrono::Duration::days(WINDOW_DAYS - 1),
                end_date,
                daily: series(end_date, &days),
                queries: Vec::new(),
                pages: Vec::new(),
            });
        };
        let start_date = end_date - chrono::Duration::days(WINDOW_DAYS - 1);
        let queries = self
            .all_rows(start_date, end_date, Dimension::Query)
            .await?;
        let pages = self.all_rows(start_date, end_date, Dimension::Page).await?;
        Ok(Fetched {
            start_date,
            end_date,
            daily: series(end_date, &days),
            queries,
            pages,
        })
    }
}

fn metrics_of(row: &AnalyticsRow) -> Metrics {
    Metrics::new(row.clicks, row.impressions, Some(row.position))
}

/// One entry per day of the window ending at `end_date`, zero where Google has none.
fn series(end_date: NaiveDate, days: &HashMap<NaiveDate, Metrics>) -> Vec<GscDay> {
    (0..WINDOW_DAYS)
        .rev()
        .map(|back| {
            let date = end_date - chrono::Duration::days(back);
            GscDay {
                date,
                metrics: days.get(&date).copied().unwrap_or(Metrics::ZERO),
            }
        })
        .collect()
}

/// The address a page row stands for, normalised as the crawler normalises addresses.
fn crawl_address(page: &str) -> Option<String> {
    let url = url::Url::parse(page).ok()?;
    crate::crawl::urls::resolve(&url, page).map(String::from)
}

/// The snapshot of `fetched` for `property`, its page rows joined with `scan`.
pub(crate) fn snapshot(
    property: &Property,
    site_url: &str,
    synced_at: Timestamp,
    fetched: Fetched,
    scan: Option<ScanPages>,
) -> NewSnapshot {
    let crawled: HashMap<String, PageCrawl> = scan
        .as_ref()
        .map(|scan| {
            scan.pages
                .iter()
                .map(|page| {
                    let crawl = PageCrawl {
                        status_code: page.status_code,
                        open_issues: page.open_issues,
                    };
                    (page.url.clone(), crawl)
                })
                .collect()
        })
        .unwrap_or_default();
    let mut correlation = CrawlCorrelation {
        scan_id: scan.as_ref().map(|s| s.job_id.clone()),
        scanned_at: scan.as_ref().map(|s| s.completed_at),
        pages_crawled: 0,
        pages_not_crawled: 0,
        pages_with_errors: 0,
        pages_with_open_issues: 0,
    };
    let rows = |rows: Vec<AnalyticsRow>, join: bool| -> Vec<GscRow> {
        rows.into_iter()
            .enumerate()
            .map(|(rank, row)| GscRow {
                rank: rank as u32,
                metrics: metrics_of(&row),
                crawl: if join {
                    crawl_address(&row.key).and_then(|address| crawled.get(&address).copied())
                } else {
                    None
                },
                key: row.key,
            })
            .collect()
    };
    let queries = rows(fetched.queries, false);
    let pages = rows(fetched.pages, true);
    for page in &pages {
        match page.crawl {
            Some(crawl) => {
                correlation.pages_crawled += 1;
                if crawl.status_code.is_none_or(|status| status >= 400) {
                    correlation.pages_with_errors += 1;
                }
                if crawl.open_issues > 0 {
                    correlation.pages_with_open_issues += 1;
                }
            }
            None => correlation.pages_not_crawled += 1,
        }
    }
    NewSnapshot {
        snapshot: GscSnapshot {
            property_id: property.id.clone(),
            organization_id: property.organization_id.clone(),
            site_url: site_url.to_owned(),
            synced_at,
            start_date: fetched.start_date,
            end_date: fetched.end_date,
            totals: Metrics::sum(fetched.daily.iter().map(|d| &d.metrics)),
            daily: fetched.daily,
            query_count: queries.len() as u32,
            page_count: pages.len() as u32,
            correlation,
        },
        queries,
        pages,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_series_has_every_day_of_the_window() {
        let end = NaiveDate::from_ymd_opt(2026, 11, 13).unwrap();
        let mut days = HashMap::new();
        days.insert(end, Metrics::new(3, 30, Some(4.0)));
        days.insert(
            end - chrono::Duration::days(40),
            Metrics::new(9, 9, Some(1.0)),
        );
        let daily = series(end, &days);
        assert_eq!(daily.len(), 28);
        assert_eq!(
            daily[0].date,
            NaiveDate::from_ymd_opt(2026, 10, 17).unwrap()
        );
        assert_eq!(daily[27].metrics.clicks, 3);
        assert_eq!(daily[26].metrics, Metrics::ZERO);
    }

    #[test]
    fn page_rows_match_crawled_addresses_after_normalising() {
        assert_eq!(
            crawl_address("https://WWW.Example.com:443/a?#top").as_deref(),
            Some("https://www.example.com/a")
        );
        assert_eq!(crawl_address("not a url"), None);
    }

    #[test]
    fn cached_tokens_are_dropped_shortly_before_they_expire() {
        let cache = TokenCache::default();
        let org = OrganizationId::new();
        let linked = Timestamp::from_unix_millis(0).unwrap();
        cache.put(&org, linked, "long", Duration::from_secs(3599));
        assert_eq!(cache.get(&org, linked).as_deref(), Some("long"));
        let relinked = Timestamp::from_unix_millis(1).unwrap();
        assert_eq!(cache.get(&org, relinked), None, "another linking");
        cache.put(&org, linked, "short", REFRESH_MARGIN);
        assert_eq!(cache.get(&org, linked), None, "not worth keeping");
        cache.put(&org, linked, "long", Duration::from_secs(3599));
        cache.forget(&org);
        assert_eq!(cache.get(&org, linked), None);
    }
}
