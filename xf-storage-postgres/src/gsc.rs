//! Search Console: linked accounts, sync claims, snapshots with their query and page rows, and
//! the pages of each property's latest completed scan.
//!
//! See migration 0007 for the tables. `scan_pages` is written by `complete_scan` (`issues.rs`),
//! in the transaction that completes the scan.

use async_trait::async_trait;
use chrono::NaiveDate;
use serde_json::{json, Value};
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use sqlx::PgConnection;
use xf_core::gsc::{
    CrawlCorrelation, GscAccount, GscDay, GscRow, GscSnapshot, Metrics, NewSnapshot, PageCrawl,
    PortfolioCounts, RowKind, ScanPages, ScannedPage,
};
use xf_core::ids::{JobId, OrganizationId, PropertyId};
use xf_core::store::text_rule::*;
use xf_core::store::{GscStore, StoreResult};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::error::store_error;
use crate::rows::{at, at_opt, signed, unsigned, RowExt};
use crate::{all, one, PgStore};

/// Rows written per statement by [`insert_rows`]: a snapshot holds up to 100,000 of each kind.
const BATCH_ROWS: usize = 10_000;

/// The columns [`account`] reads.
const ACCOUNT_COLUMNS: &str =
    "organization_id, sealed_refresh_token, account_email, linked_at, revoked_at";

/// The columns [`gsc_row`] reads.
const ROW_COLUMNS: &str =
    "rank, key, clicks, impressions, position, crawl_status, crawl_open_issues";

/// The `SELECT` of snapshots that [`snapshot`] reads, to be followed by a `WHERE` on `s`. The
/// daily series is taken apart here, with SQL casts: PostgreSQL turns the JSON numbers (the
/// shortest decimals that round-trip, as serde_json wrote them) back into the exact doubles
/// written, which serde_json's own parser does not promise without `float_roundtrip`.
const SNAPSHOT_SELECT: &str = "SELECT s.property_id, s.organization_id, s.site_url, \
         s.synced_at, s.start_date, s.end_date, s.clicks, s.impressions, s.ctr, s.position, \
         s.query_count, s.page_count, s.correlation, d.day_dates, d.day_clicks, \
         d.day_impressions, d.day_positions \
     FROM gsc_snapshots s CROSS JOIN LATERAL ( \
         SELECT COALESCE(array_agg((e ->> 'date')::date ORDER BY n), '{}') AS day_dates, \
                COALESCE(array_agg((e ->> 'clicks')::bigint ORDER BY n), '{}') AS day_clicks, \
                COALESCE(array_agg((e ->> 'impressions')::bigint ORDER BY n), '{}') \
                    AS day_impressions, \
                COALESCE(array_agg((e ->> 'position')::float8 ORDER BY n), '{}') \
                    AS day_positions \
         FROM jsonb_array_elements(s.daily) WITH ORDINALITY AS t(e, n) \
     ) d";

#[async_trait]
impl GscStore for PgStore {
    async fn put_gsc_account(&self, account: &GscAccount) -> StoreResult<bool> {
        let account = &*stored(account);
        // Nothing is inserted for an organization that does not exist (and the foreign key
        // would refuse it anyway).
        let written = sqlx::query(
            "INSERT INTO gsc_accounts \
                 (organization_id, sealed_refresh_token, account_email, linked_at, revoked_at) \
             SELECT $1, $2, $3, $4, $5 \
             WHERE EXISTS (SELECT 1 FROM organizations WHERE id = $1) \
             ON CONFLICT (organization_id) DO UPDATE SET \
                 sealed_refresh_token = EXCLUDED.sealed_refresh_token, \
                 account_email = EXCLUDED.account_email, \
                 linked_at = EXCLUDED.linked_at, \
                 revoked_at = EXCLUDED.revoked_at",
        )
        .bind(account.organization_id.as_str())
        .bind(&account.sealed_refresh_token)
        .bind(&account.account_email)
        .bind(at(account.linked_at))
        .bind(at_opt(account.revoked_at))
        .execute(&self.pool)
        .await
        .map_err(store_error)?
        .rows_affected();
        Ok(written == 1)
    }

    async fn get_gsc_account(
        &self,
        organization_id: &OrganizationId,
    ) -> StoreResult<Option<GscAccount>> {
        let row = sqlx::query(&format!(
            "SELECT {ACCOUNT_COLUMNS} FROM gsc_accounts WHERE organization_id = $1"
        ))
        .bind(organization_id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, account)
    }

    async fn revoke_gsc_account(
        &self,
        organization_id: &OrganizationId,
        linked_at: Timestamp,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let marked = sqlx::query(
            "UPDATE gsc_accounts SET revoked_at = $3 \
             WHERE organization_id = $1 AND linked_at = $2",
        )
        .bind(organization_id.as_str())
        .bind(at(linked_at))
        .bind(at(now))
        .execute(&self.pool)
        .await
        .map_err(store_error)?
        .rows_affected();
        Ok(marked == 1)
    }

    async fn claim_gsc_sync(
        &self,
        property_id: &PropertyId,
        claim: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool> {
        // One conditional upsert: a new row, or the row of a claim whose time ran out. Two
        // concurrent claims of one property meet on the primary key; the second waits for the
        // first to commit and then finds its claim holding.
        let written = sqlx::query(
            "INSERT INTO gsc_sync_claims AS c (property_id, claim, until) VALUES ($1, $2, $4) \
             ON CONFLICT (property_id) DO UPDATE SET \
                 claim = EXCLUDED.claim, until = EXCLUDED.until \
             WHERE c.until <= $3",
        )
        .bind(property_id.as_str())
        .bind(claim)
        .bind(at(now))
        .bind(at(until))
        .execute(&self.pool)
        .await
        .map_err(store_error)?
        .rows_affected();
        Ok(written == 1)
    }

    async fn release_gsc_sync(&self, property_id: &PropertyId, claim: &str) -> StoreResult<()> {
        sqlx::query("DELETE FROM gsc_sync_claims WHERE property_id = $1 AND claim = $2")
            .bind(property_id.as_str())
            .bind(claim)
            .execute(&self.pool)
            .await
            .map_err(store_error)?;
        Ok(())
    }

    async fn replace_gsc_snapshot(&self, new: &NewSnapshot) -> StoreResult<()> {
        let new = &*stored(new);
        let snapshot = &new.snapshot;
        let totals = &snapshot.totals;
        let daily = daily_json(&snapshot.daily)?;
        let mut tx = self.begin().await?;
        // The snapshot row first: from then on it is locked, so a concurrent replacement of
        // the same property waits for this one to commit, and its delete below then sees (and
        // removes) every row this one inserted.
        sqlx::query(
            "INSERT INTO gsc_snapshots (property_id, organization_id, site_url, synced_at, \
                 start_date, end_date, clicks, impressions, ctr, position, daily, query_count, \
                 page_count, correlation) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
             ON CONFLICT (property_id) DO UPDATE SET \
                 organization_id = EXCLUDED.organization_id, site_url = EXCLUDED.site_url, \
                 synced_at = EXCLUDED.synced_at, start_date = EXCLUDED.start_date, \
                 end_date = EXCLUDED.end_date, clicks = EXCLUDED.clicks, \
                 impressions = EXCLUDED.impressions, ctr = EXCLUDED.ctr, \
                 position = EXCLUDED.position, daily = EXCLUDED.daily, \
                 query_count = EXCLUDED.query_count, page_count = EXCLUDED.page_count, \
                 correlation = EXCLUDED.correlation",
        )
        .bind(snapshot.property_id.as_str())
        .bind(snapshot.organization_id.as_str())
        .bind(&snapshot.site_url)
        .bind(at(snapshot.synced_at))
        .bind(snapshot.start_date)
        .bind(snapshot.end_date)
        .bind(signed(totals.clicks, "clicks")?)
        .bind(signed(totals.impressions, "impressions")?)
        .bind(totals.ctr)
        .bind(totals.position)
        .bind(Json(daily))
        .bind(int(snapshot.query_count, "query count")?)
        .bind(int(snapshot.page_count, "page count")?)
        .bind(Json(correlation_json(&snapshot.correlation)))
        .execute(&mut *tx)
        .await
        .map_err(store_error)?;
        sqlx::query("DELETE FROM gsc_rows WHERE property_id = $1")
            .bind(snapshot.property_id.as_str())
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        insert_rows(&mut tx, &snapshot.property_id, RowKind::Query, &new.queries).await?;
        insert_rows(&mut tx, &snapshot.property_id, RowKind::Page, &new.pages).await?;
        tx.commit().await.map_err(store_error)?;
        Ok(())
    }

    async fn get_gsc_snapshot(&self, property_id: &PropertyId) -> StoreResult<Option<GscSnapshot>> {
        let row = sqlx::query(&format!("{SNAPSHOT_SELECT} WHERE s.property_id = $1"))
            .bind(property_id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(store_error)?;
        one(row, snapshot)
    }

    async fn get_gsc_snapshots(
        &self,
        property_ids: &[PropertyId],
    ) -> StoreResult<Vec<GscSnapshot>> {
        if property_ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = property_ids.iter().map(PropertyId::as_str).collect();
        let rows = sqlx::query(&format!(
            "{SNAPSHOT_SELECT} WHERE s.property_id = ANY($1::text[])"
        ))
        .bind(&ids)
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(rows, snapshot)
    }

    async fn list_gsc_rows(
        &self,
        property_id: &PropertyId,
        kind: RowKind,
        after: Option<u32>,
        limit: usize,
    ) -> StoreResult<Vec<GscRow>> {
        // From the top, the first rank is 0: "after -1".
        let rows = sqlx::query(&format!(
            "SELECT {ROW_COLUMNS} FROM gsc_rows \
             WHERE property_id = $1 AND kind = $2 AND rank > $3 \
             ORDER BY rank LIMIT $4"
        ))
        .bind(property_id.as_str())
        .bind(kind.as_str())
        .bind(after.map_or(-1, i64::from))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(rows, gsc_row)
    }

    async fn gsc_portfolio(
        &self,
        organization_id: &OrganizationId,
        fresh_since: Timestamp,
    ) -> StoreResult<PortfolioCounts> {
        // A snapshot joins its property only while its site is the one the property is mapped
        // to: a linked property without one is stale, as is one whose snapshot is old.
        let row = sqlx::query(
            "SELECT count(*) AS total_properties, \
                    count(*) FILTER (WHERE p.gsc_site_url IS NOT NULL) AS linked_properties, \
                    COALESCE(sum(s.clicks), 0)::bigint AS total_clicks, \
                    COALESCE(sum(s.impressions), 0)::bigint AS total_impressions, \
                    count(*) FILTER (WHERE p.gsc_site_url IS NOT NULL \
                        AND (s.synced_at IS NULL OR s.synced_at < $2)) AS stale \
             FROM properties p \
             LEFT JOIN gsc_snapshots s \
                 ON s.property_id = p.id AND s.site_url = p.gsc_site_url \
             WHERE p.organization_id = $1",
        )
        .bind(organization_id.as_str())
        .bind(at(fresh_since))
        .fetch_one(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(PortfolioCounts {
            total_properties: row.count("total_properties")?,
            linked_properties: row.count("linked_properties")?,
            total_clicks: row.count("total_clicks")?,
            total_impressions: row.count("total_impressions")?,
            stale: row.count("stale")?,
        })
    }

    async fn latest_scan_pages(&self, property_id: &PropertyId) -> StoreResult<Option<ScanPages>> {
        // The open issues are counted once per URL, over the property's open issues (read
        // through the issue list's status index), then matched with the pages.
        let rows = sqlx::query(
            "SELECT sp.job_id, j.completed_at, sp.url, sp.status_code, \
                    COALESCE(o.open_issues, 0) AS open_issues \
             FROM scan_pages sp \
             JOIN jobs j ON j.id = sp.job_id \
             LEFT JOIN ( \
                 SELECT url, count(*) AS open_issues FROM issues \
                 WHERE property_id = $1 AND status = 'open' AND url IS NOT NULL \
                 GROUP BY url \
             ) o ON o.url = sp.url \
             WHERE sp.property_id = $1 AND j.completed_at IS NOT NULL \
             ORDER BY sp.ord",
        )
        .bind(property_id.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        let Some(first) = rows.first() else {
            return Ok(None);
        };
        let job_id: JobId = first.id("job_id")?;
        let completed_at = first.timestamp("completed_at")?;
        let pages = all(rows, |row| {
            let open = row.count("open_issues")?;
            Ok(ScannedPage {
                url: row.col("url")?,
                status_code: status(row.col("status_code")?, "status_code")?,
                open_issues: u32::try_from(open).map_err(|_| {
                    StoreError::internal(format!("open issues out of range: {open}"))
                })?,
            })
        })?;
        Ok(Some(ScanPages {
            job_id,
            completed_at,
            pages,
        }))
    }
}

/// Inserts one kind of a snapshot's rows inside the caller's transaction, [`BATCH_ROWS`] a
/// statement (each batch is one `INSERT … SELECT FROM UNNEST` of parallel arrays).
async fn insert_rows(
    tx: &mut PgConnection,
    property_id: &PropertyId,
    kind: RowKind,
    rows: &[GscRow],
) -> StoreResult<()> {
    for batch in rows.chunks(BATCH_ROWS) {
        let n = batch.len();
        let mut ranks = Vec::with_capacity(n);
        let mut keys = Vec::with_capacity(n);
        let mut clicks = Vec::with_capacity(n);
        let mut impressions = Vec::with_capacity(n);
        let mut positions = Vec::with_capacity(n);
        let mut statuses = Vec::with_capacity(n);
        let mut open_issues = Vec::with_capacity(n);
        for row in batch {
            ranks.push(int(row.rank, "rank")?);
            keys.push(row.key.as_str());
            clicks.push(signed(row.metrics.clicks, "clicks")?);
            impressions.push(signed(row.metrics.impressions, "impressions")?);
            positions.push(row.metrics.position);
            statuses.push(row.crawl.and_then(|c| c.status_code).map(i32::from));
            open_issues.push(
                row.crawl
                    .map(|c| int(c.open_issues, "open issues"))
                    .transpose()?,
            );
        }
        sqlx::query(
            "INSERT INTO gsc_rows (property_id, kind, rank, key, clicks, impressions, position, \
                 crawl_status, crawl_open_issues) \
             SELECT $1, $2, r.rank, r.key, r.clicks, r.impressions, r.position, r.status, \
                    r.open_issues \
             FROM UNNEST($3::integer[], $4::text[], $5::bigint[], $6::bigint[], \
                         $7::float8[], $8::integer[], $9::integer[]) \
                 AS r(rank, key, clicks, impressions, position, status, open_issues)",
        )
        .bind(property_id.as_str())
        .bind(kind.as_str())
        .bind(&ranks)
        .bind(&keys)
        .bind(&clicks)
        .bind(&impressions)
        .bind(&positions)
        .bind(&statuses)
        .bind(&open_issues)
        .execute(&mut *tx)
        .await
        .map_err(store_error)?;
    }
    Ok(())
}

/// A `u32` to store as an `integer`; one beyond `i32::MAX` cannot be stored unchanged.
fn int(value: u32, what: &str) -> StoreResult<i32> {
    i32::try_from(value).map_err(|_| StoreError::internal(format!("{what} out of range: {value}")))
}

/// A nullable `integer` holding an HTTP status.
fn status(value: Option<i32>, what: &str) -> StoreResult<Option<u16>> {
    value
        .map(|value| {
            u16::try_from(value)
                .map_err(|_| StoreError::internal(format!("{what} out of range: {value}")))
        })
        .transpose()
}

/// A `gsc_accounts` row.
fn account(row: &PgRow) -> StoreResult<GscAccount> {
    Ok(GscAccount {
        organization_id: row.id("organization_id")?,
        sealed_refresh_token: row.col("sealed_refresh_token")?,
        account_email: row.col("account_email")?,
        linked_at: row.timestamp("linked_at")?,
        revoked_at: row.timestamp_opt("revoked_at")?,
    })
}

/// A `gsc_rows` row. A page the scan fetched has its open issues (never null then).
fn gsc_row(row: &PgRow) -> StoreResult<GscRow> {
    let crawl = match row.col::<Option<i32>>("crawl_open_issues")? {
        None => None,
        Some(open) => Some(PageCrawl {
            status_code: status(row.col("crawl_status")?, "crawl_status")?,
            open_issues: u32::try_from(open).map_err(|_| {
                StoreError::internal(format!("crawl_open_issues out of range: {open}"))
            })?,
        }),
    };
    Ok(GscRow {
        rank: row.int("rank")?,
        key: row.col("key")?,
        metrics: Metrics::new(
            row.count("clicks")?,
            row.count("impressions")?,
            row.col("position")?,
        ),
        crawl,
    })
}

/// A `gsc_snapshots` row as [`SNAPSHOT_SELECT`] reads it.
fn snapshot(row: &PgRow) -> StoreResult<GscSnapshot> {
    let dates: Vec<NaiveDate> = row.col("day_dates")?;
    let clicks: Vec<i64> = row.col("day_clicks")?;
    let impressions: Vec<i64> = row.col("day_impressions")?;
    let positions: Vec<Option<f64>> = row.col("day_positions")?;
    let n = dates.len();
    if clicks.len() != n || impressions.len() != n || positions.len() != n {
        return Err(StoreError::internal("corrupt daily series"));
    }
    let daily = dates
        .into_iter()
        .zip(clicks)
        .zip(impressions)
        .zip(positions)
        .map(|(((date, clicks), impressions), position)| {
            Ok(GscDay {
                date,
                metrics: Metrics::new(
                    unsigned(clicks, "clicks")?,
                    unsigned(impressions, "impressions")?,
                    position,
                ),
            })
        })
        .collect::<StoreResult<_>>()?;
    Ok(GscSnapshot {
        property_id: row.id("property_id")?,
        organization_id: row.id("organization_id")?,
        site_url: row.col("site_url")?,
        synced_at: row.timestamp("synced_at")?,
        start_date: row.col("start_date")?,
        end_date: row.col("end_date")?,
        totals: Metrics {
            clicks: row.count("clicks")?,
            impressions: row.count("impressions")?,
            ctr: row.col("ctr")?,
            position: row.col("position")?,
        },
        daily,
        query_count: row.int("query_count")?,
        page_count: row.int("page_count")?,
        correlation: correlation(&row.col::<Json<Value>>("correlation")?.0)?,
    })
}

/// The `daily` column of a snapshot (see migration 0007).
fn daily_json(daily: &[GscDay]) -> StoreResult<Value> {
    daily
        .iter()
        .map(|day| {
            Ok(json!({
                "date": day.date.to_string(),
                "clicks": signed(day.metrics.clicks, "clicks")?,
                "impressions": signed(day.metrics.impressions, "impressions")?,
                "position": day.metrics.position,
            }))
        })
        .collect::<StoreResult<Vec<_>>>()
        .map(Value::Array)
}

/// The `correlation` column of a snapshot (see migration 0007).
fn correlation_json(correlation: &CrawlCorrelation) -> Value {
    json!({
        "scanId": correlation.scan_id.as_ref().map(JobId::as_str),
        "scannedAt": correlation.scanned_at.map(|when| when.to_string()),
        "pagesCrawled": correlation.pages_crawled,
        "pagesNotCrawled": correlation.pages_not_crawled,
        "pagesWithErrors": correlation.pages_with_errors,
        "pagesWithOpenIssues": correlation.pages_with_open_issues,
    })
}

/// The `correlation` column read back.
fn correlation(value: &Value) -> StoreResult<CrawlCorrelation> {
    let scanned_at = text(value, "scannedAt")?
        .map(|text| Timestamp::parse_rfc3339(text).ok_or_else(|| corrupt_correlation(value)))
        .transpose()?;
    Ok(CrawlCorrelation {
        scan_id: text(value, "scanId")?.map(|id| JobId::from_trusted(id.to_owned())),
        scanned_at,
        pages_crawled: count(value, "pagesCrawled")?,
        pages_not_crawled: count(value, "pagesNotCrawled")?,
        pages_with_errors: count(value, "pagesWithErrors")?,
        pages_with_open_issues: count(value, "pagesWithOpenIssues")?,
    })
}

/// A nullable string field of the correlation.
fn text<'a>(value: &'a Value, key: &str) -> StoreResult<Option<&'a str>> {
    match value.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(corrupt_correlation(value)),
    }
}

/// A count field of the correlation.
fn count(value: &Value, key: &str) -> StoreResult<u32> {
    value
        .get(key)
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| corrupt_correlation(value))
}

/// The error of a correlation that does not read back.
fn corrupt_correlation(value: &Value) -> StoreError {
    StoreError::internal(format!("corrupt crawl correlation: {value}"))
}
