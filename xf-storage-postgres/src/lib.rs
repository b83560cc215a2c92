//! # xf-storage-postgres
//!
//! The PostgreSQL [`Store`] of xf, on sqlx. It behaves exactly like the in-memory store of
//! `xf-storage-memory` (both pass the conformance suite of `xf_core::testing`), and it is the
//! backend to use when the service must survive restarts or run as several instances.
//!
//! ## Use
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use xf_storage_postgres::PgStore;
//!
//! // Lazy: no connection is opened yet, so a database that is down at start-up does not stop
//! // the service; requests answer `503 unavailable` until it is back, then recover by
//! // themselves. (Must be called inside a Tokio runtime.)
//! let store = PgStore::connect("postgres://xf@db.internal/xf")?;
//! // Applies the embedded migrations of `migrations/`. Safe to run from every instance at
//! // start-up: sqlx serialises concurrent runs with an advisory lock and skips applied ones.
//! store.migrate().await?;
//! let xf = xf_core::Xf::builder(Arc::new(store))
//!     .secret_key(std::env::var("XF_SECRET_KEY")?)
//!     .public_base_url("https://app.example.com")
//!     .build()?;
//! # let _ = xf;
//! # Ok(())
//! # }
//! ```
//!
//! [`PgStore::new`] wraps a pool configured by the host instead; [`PgStore::pool`] hands it
//! back (e.g. to close it on shutdown).
//!
//! ## Scaling out
//!
//! Instances of the service keep no state of their own: any number of them can run over one
//! database behind a load balancer. Every rule that must hold across instances is enforced by
//! PostgreSQL, never by a read followed by a write in the application:
//!
//! * **Property URLs are unique per organization**, and API key hashes are unique: unique
//!   constraints; a violation is [`StoreError::Duplicate`] naming the rule.
//! * **The monthly scan quota** (`insert_job_counted`): one transaction inserts the job and
//!   raises the `scans` meter with a conditional upsert (`ON CONFLICT DO UPDATE … WHERE scans
//!   < limit RETURNING`); when no row comes back the quota is spent, the transaction rolls
//!   back and nothing was written. The meter row lock serialises concurrent scans of one
//!   organization, so N instances can never queue more than the limit.
//! * **The active-key cap** (`insert_api_key`): a transaction takes a per-organization
//!   advisory transaction lock, inserts the key, counts the other unrevoked keys and rolls
//!   back if there were already `max_active`.
//! * **An organization and its first keys** (`insert_organization_with_keys`): one
//!   transaction inserts them all; a duplicate key rolls it back, so no organization is left
//!   without its keys.
//! * **Job state changes** (cancel, start, progress, finish): single conditional `UPDATE …
//!   WHERE status IN (…) RETURNING`, so a job cannot be both cancelled and finished, and a
//!   cancelled job stays cancelled whichever instance's worker finishes it.
//! * **Rate limits**: one transaction increments every consumed counter with an upsert that
//!   takes the counter rows' locks in a fixed order (no deadlocks between instances), checks
//!   the counts it got back against the limits, and commits only when none was exceeded, so a
//!   request is counted in all of its windows or in none, and the limits are exact across
//!   instances.
//! * **Idempotency keys**: one transaction claims the key with a conditional upsert (new key,
//!   expired record, or a stale claim of a request that died); if the upsert declined, the row
//!   it locked says why (replay, in use, or another request's fingerprint).
//!
//! ## Counters: unlogged and asynchronously committed
//!
//! Every API request increments a rate-limit counter. If each increment cost a WAL flush (a
//! durable commit), the database's disk would cap the API's throughput. So
//! `rate_limit_counters` is an `UNLOGGED` table (no WAL at all), and counting is one call of
//! the function `xf_hit_rate_limits` (migration 0002), whose transaction runs with
//! `synchronous_commit = off`: one round trip per request, no flush. The price: PostgreSQL empties an
//! unlogged table after a crash (not after a clean shutdown), which at worst hands callers a
//! fresh window once; likewise a standby promoted after a failover starts with empty counters,
//! since unlogged tables are not replicated. Domain writes (organizations, keys, properties,
//! jobs, usage meters, idempotency records) stay logged and synchronously committed.
//!
//! ## Tests
//!
//! With the feature `testing`, `testing::fresh_database()` creates a new database on a
//! PostgreSQL server (`DATABASE_URL`, or `postgres://postgres@127.0.0.1:5432/test`), migrates
//! it and returns a store on it; it panics when no server answers. This crate's own tests
//! use it (the crate's dev-dependency on itself turns the feature on):
//! `cargo test -p xf-storage-postgres`.

mod error;
mod rows;
#[cfg(feature = "testing")]
pub mod testing;

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgArguments, PgPool, PgPoolOptions, PgRow};
use sqlx::query::Query;
use sqlx::types::Json;
use sqlx::{Postgres, QueryBuilder};
use xf_core::model::{
    ApiKey, Issue, IssueSummary, Job, JobCounts, JobOutcome, Organization, Property, Report,
    UsageCounters,
};
use xf_core::plans::LimitOverrides;
use xf_core::store::{
    CancelOutcome, IdempotencyClaim, IdempotencyRequest, IssueFilter, JobFilter, PageRequest,
    RateBucket, RateOutcome, Store, StoreDump, StoreResult, StoredResponse,
};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::error::{migrate_error, store_error};
use crate::rows::{
    at, at_opt, big, RowExt, API_KEY_COLUMNS, ISSUE_COLUMNS, JOB_COLUMNS, ORGANIZATION_COLUMNS,
    PROPERTY_COLUMNS, REPORT_COLUMNS, USAGE_COLUMNS,
};

/// The schema migrations, embedded at compile time from `migrations/`.
static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// How long a request waits for a pooled connection (or for a new one to open) before the
/// store reports [`StoreError::Unavailable`].
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

/// First key of the advisory locks that serialise key creation per organization (the second
/// is a hash of the organization id). The two-key form keeps these locks apart from the
/// single-`bigint` advisory lock sqlx takes while migrating.
const KEY_CAP_LOCK_CLASS: i32 = 0x7866_0001;

/// The PostgreSQL store. Cheap to clone: clones share the connection pool.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
}

/// The pool settings [`PgStore::connect`] uses.
pub(crate) fn pool_options() -> PgPoolOptions {
    PgPoolOptions::new().acquire_timeout(ACQUIRE_TIMEOUT)
}

impl PgStore {
    /// A store over a pool configured by the caller. The schema must have been migrated
    /// (see [`PgStore::migrate`]).
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// A store over a lazily connecting pool for `url` (`postgres://user:pass@host/db`).
    /// Opens no connection: fails only when the URL is malformed. Requests wait at most three
    /// seconds for a connection, then fail with [`StoreError::Unavailable`]; once the database
    /// answers again the pool reconnects by itself. Must be called inside a Tokio runtime.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        let pool = pool_options()
            .connect_lazy(url)
            .map_err(|error| StoreError::Internal(format!("invalid database URL: {error}")))?;
        Ok(Self::new(pool))
    }

    /// Applies the migrations of `migrations/` that the database lacks. Concurrent calls from
    /// several instances are serialised by sqlx (advisory lock); applied ones are skipped.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        MIGRATOR.run(&self.pool).await.map_err(migrate_error)?;
        tracing::debug!("database schema is up to date");
        Ok(())
    }

    /// The connection pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

/// Appends the keyset condition, order and limit of a newest-first page. `id_column` is the
/// tie-breaker (`id`, or `token` for reports). The condition is a row comparison on exactly the
/// trailing columns of the list's index, so the page is one index range scan.
fn push_page(builder: &mut QueryBuilder<'_, Postgres>, id_column: &str, page: &PageRequest) {
    if let Some(after) = &page.after {
        builder
            .push(" AND (created_at, ")
            .push(id_column)
            .push(") < (")
            .push_bind(at(after.created_at))
            .push(", ")
            .push_bind(after.id.clone())
            .push(")");
    }
    builder
        .push(" ORDER BY created_at DESC, ")
        .push(id_column)
        .push(" DESC LIMIT ")
        .push_bind(i64::try_from(page.limit).unwrap_or(i64::MAX));
}

/// `GET /properties`.
fn list_properties_query<'a>(
    builder: &mut QueryBuilder<'a, Postgres>,
    organization_id: &str,
    page: &PageRequest,
) {
    builder
        .push(format!(
            "SELECT {PROPERTY_COLUMNS} FROM properties WHERE organization_id = "
        ))
        .push_bind(organization_id.to_owned());
    push_page(builder, "id", page);
}

/// `GET /jobs`. Each filter adds a condition only when set, so every combination is its own
/// prepared statement with a plan that uses the matching index.
fn list_jobs_query<'a>(
    builder: &mut QueryBuilder<'a, Postgres>,
    organization_id: &str,
    filter: &JobFilter,
    page: &PageRequest,
) {
    builder
        .push(format!(
            "SELECT {JOB_COLUMNS} FROM jobs WHERE organization_id = "
        ))
        .push_bind(organization_id.to_owned());
    if let Some(status) = filter.status {
        builder.push(" AND status = ").push_bind(status.as_str());
    }
    if let Some(property_id) = &filter.property_id {
        builder
            .push(" AND property_id = ")
            .push_bind(property_id.clone());
    }
    if let Some(job_type) = &filter.job_type {
        builder.push(" AND job_type = ").push_bind(job_type.clone());
    }
    push_page(builder, "id", page);
}

/// `GET /properties/{id}/issues`.
fn list_issues_query<'a>(
    builder: &mut QueryBuilder<'a, Postgres>,
    property_id: &str,
    filter: &IssueFilter,
    page: &PageRequest,
) {
    builder
        .push(format!(
            "SELECT {ISSUE_COLUMNS} FROM issues WHERE property_id = "
        ))
        .push_bind(property_id.to_owned());
    if let Some(kind) = filter.scan_kind {
        builder.push(" AND scan_kind = ").push_bind(kind.as_str());
    }
    if let Some(status) = filter.status {
        builder.push(" AND status = ").push_bind(status.as_str());
    }
    push_page(builder, "id", page);
}

/// The list of live reports.
fn list_live_reports_query<'a>(
    builder: &mut QueryBuilder<'a, Postgres>,
    organization_id: &str,
    now: Timestamp,
    page: &PageRequest,
) {
    builder
        .push(format!(
            "SELECT {REPORT_COLUMNS} FROM reports WHERE organization_id = "
        ))
        .push_bind(organization_id.to_owned())
        .push(" AND expires_at > ")
        .push_bind(at(now));
    push_page(builder, "token", page);
}

fn all<T>(rows: Vec<PgRow>, decode: impl Fn(&PgRow) -> StoreResult<T>) -> StoreResult<Vec<T>> {
    rows.iter().map(decode).collect()
}

fn one<T>(row: Option<PgRow>, decode: impl Fn(&PgRow) -> StoreResult<T>) -> StoreResult<Option<T>> {
    row.as_ref().map(decode).transpose()
}

/// The `INSERT` of an organization.
fn insert_organization_query(organization: &Organization) -> Query<'_, Postgres, PgArguments> {
    sqlx::query(
        "INSERT INTO organizations (id, name, plan, shop_domain, limits, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&organization.id)
    .bind(&organization.name)
    .bind(&organization.plan)
    .bind(&organization.shop_domain)
    .bind(Json(organization.limits))
    .bind(at(organization.created_at))
}

/// The `INSERT` of an API key.
fn insert_api_key_query(key: &ApiKey) -> Query<'_, Postgres, PgArguments> {
    sqlx::query(
        "INSERT INTO api_keys (id, organization_id, mode, key_hash, created_at, revoked_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&key.id)
    .bind(&key.organization_id)
    .bind(key.mode.as_str())
    .bind(&key.key_hash)
    .bind(at(key.created_at))
    .bind(at_opt(key.revoked_at))
}

/// The organization columns of `find_api_key`'s join, prefixed with `org_`.
fn prefixed_organization(row: &PgRow) -> StoreResult<Organization> {
    Ok(Organization {
        id: row.col("org_id")?,
        name: row.col("org_name")?,
        plan: row.col("org_plan")?,
        shop_domain: row.col("org_shop_domain")?,
        limits: row.col::<Json<LimitOverrides>>("org_limits")?.0,
        created_at: row.timestamp("org_created_at")?,
    })
}

#[async_trait]
impl Store for PgStore {
    async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map_err(store_error)?;
        Ok(())
    }

    // ---- organizations and keys ----

    async fn insert_organization(&self, organization: &Organization) -> StoreResult<()> {
        insert_organization_query(organization)
            .execute(&self.pool)
            .await
            .map_err(store_error)?;
        Ok(())
    }

    async fn insert_organization_with_keys(
        &self,
        organization: &Organization,
        keys: &[ApiKey],
    ) -> StoreResult<()> {
        // A failing insert returns early and drops the transaction, which rolls it back.
        let mut tx = self.pool.begin().await.map_err(store_error)?;
        insert_organization_query(organization)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        for key in keys {
            insert_api_key_query(key)
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
        }
        tx.commit().await.map_err(store_error)
    }

    async fn get_organization(&self, id: &str) -> StoreResult<Option<Organization>> {
        let row = sqlx::query(&format!(
            "SELECT {ORGANIZATION_COLUMNS} FROM organizations WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::organization)
    }

    async fn find_organization_by_name(&self, name: &str) -> StoreResult<Option<Organization>> {
        let row = sqlx::query(&format!(
            "SELECT {ORGANIZATION_COLUMNS} FROM organizations WHERE name = $1 \
             ORDER BY created_at, id LIMIT 1"
        ))
        .bind(name)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::organization)
    }

    async fn update_organization(
        &self,
        id: &str,
        plan: Option<&str>,
        limits: Option<&LimitOverrides>,
    ) -> StoreResult<Option<Organization>> {
        let row = sqlx::query(&format!(
            "UPDATE organizations SET plan = COALESCE($2, plan), limits = COALESCE($3, limits) \
             WHERE id = $1 RETURNING {ORGANIZATION_COLUMNS}"
        ))
        .bind(id)
        .bind(plan)
        .bind(limits.map(|limits| Json(*limits)))
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::organization)
    }

    async fn insert_api_key(&self, key: &ApiKey, max_active: u64) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(store_error)?;
        // Serialises key creation per organization across instances. An advisory lock rather
        // than a lock on the organization row: it works whether or not that row exists and
        // does not block updates of the organization.
        sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
            .bind(KEY_CAP_LOCK_CLASS)
            .bind(&key.organization_id)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        // Insert first, so a duplicate is reported as such even when the cap is also reached.
        insert_api_key_query(key)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        let others_active: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM api_keys \
             WHERE organization_id = $1 AND revoked_at IS NULL AND id <> $2",
        )
        .bind(&key.organization_id)
        .bind(&key.id)
        .fetch_one(&mut *tx)
        .await
        .map_err(store_error)?;
        if rows::unsigned(others_active, "key count")? >= max_active {
            tx.rollback().await.map_err(store_error)?;
            return Err(StoreError::LimitReached("maxActiveKeys"));
        }
        tx.commit().await.map_err(store_error)
    }

    async fn find_api_key(&self, key_hash: &str) -> StoreResult<Option<(ApiKey, Organization)>> {
        let row = sqlx::query(
            "SELECT k.id, k.organization_id, k.mode, k.key_hash, k.created_at, k.revoked_at, \
                    o.id AS org_id, o.name AS org_name, o.plan AS org_plan, \
                    o.shop_domain AS org_shop_domain, o.limits AS org_limits, \
                    o.created_at AS org_created_at \
             FROM api_keys k JOIN organizations o ON o.id = k.organization_id \
             WHERE k.key_hash = $1",
        )
        .bind(key_hash)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, |row| {
            Ok((rows::api_key(row)?, prefixed_organization(row)?))
        })
    }

    async fn list_api_keys(&self, organization_id: &str) -> StoreResult<Vec<ApiKey>> {
        let rows = sqlx::query(&format!(
            "SELECT {API_KEY_COLUMNS} FROM api_keys WHERE organization_id = $1 \
             ORDER BY created_at, id"
        ))
        .bind(organization_id)
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(rows, rows::api_key)
    }

    async fn revoke_api_key(&self, id: &str, now: Timestamp) -> StoreResult<Option<ApiKey>> {
        let row = sqlx::query(&format!(
            "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1 \
             RETURNING {API_KEY_COLUMNS}"
        ))
        .bind(id)
        .bind(at(now))
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::api_key)
    }

    // ---- properties ----

    async fn insert_property(&self, property: &Property) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO properties \
             (id, organization_id, name, url, verified, created_at, gsc_site_url) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&property.id)
        .bind(&property.organization_id)
        .bind(&property.name)
        .bind(&property.url)
        .bind(property.verified)
        .bind(at(property.created_at))
        .bind(&property.gsc_site_url)
        .execute(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(())
    }

    async fn get_property(&self, id: &str) -> StoreResult<Option<Property>> {
        let row = sqlx::query(&format!(
            "SELECT {PROPERTY_COLUMNS} FROM properties WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::property)
    }

    async fn get_properties(&self, ids: &[String]) -> StoreResult<Vec<Property>> {
        let rows = sqlx::query(&format!(
            "SELECT {PROPERTY_COLUMNS} FROM properties WHERE id = ANY($1::text[])"
        ))
        .bind(ids)
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(rows, rows::property)
    }

    async fn find_property_by_url(
        &self,
        organization_id: &str,
        url: &str,
    ) -> StoreResult<Option<Property>> {
        let row = sqlx::query(&format!(
            "SELECT {PROPERTY_COLUMNS} FROM properties WHERE organization_id = $1 AND url = $2"
        ))
        .bind(organization_id)
        .bind(url)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::property)
    }

    async fn list_properties(
        &self,
        organization_id: &str,
        page: &PageRequest,
    ) -> StoreResult<Vec<Property>> {
        let mut builder = QueryBuilder::new("");
        list_properties_query(&mut builder, organization_id, page);
        let rows = builder
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(store_error)?;
        all(rows, rows::property)
    }

    async fn count_properties(&self, organization_id: &str) -> StoreResult<u64> {
        let count: i64 =
            sqlx::query_scalar("SELECT count(*) FROM properties WHERE organization_id = $1")
                .bind(organization_id)
                .fetch_one(&self.pool)
                .await
                .map_err(store_error)?;
        rows::unsigned(count, "property count")
    }

    async fn set_property_verified(&self, id: &str) -> StoreResult<Option<Property>> {
        let row = sqlx::query(&format!(
            "UPDATE properties SET verified = true WHERE id = $1 RETURNING {PROPERTY_COLUMNS}"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::property)
    }

    async fn set_property_gsc_site(
        &self,
        id: &str,
        site_url: Option<&str>,
    ) -> StoreResult<Option<Property>> {
        let row = sqlx::query(&format!(
            "UPDATE properties SET gsc_site_url = $2 WHERE id = $1 RETURNING {PROPERTY_COLUMNS}"
        ))
        .bind(id)
        .bind(site_url)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::property)
    }

    // ---- jobs ----

    async fn insert_job_counted(
        &self,
        job: &Job,
        month: &str,
        scans_limit: u64,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(store_error)?;
        // The job first, so a duplicate id is reported as such even when the quota is spent.
        let result = job.result;
        sqlx::query(
            "INSERT INTO jobs (id, organization_id, job_type, status, progress, property_id, \
             property_name, tenant_type, tenant_label, shop_domain, max_pages, max_depth, \
             created_at, started_at, completed_at, error, result_score, result_pages_scanned, \
             result_issues_count) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
             $17, $18, $19)",
        )
        .bind(&job.id)
        .bind(&job.organization_id)
        .bind(&job.job_type)
        .bind(job.status.as_str())
        .bind(i16::from(job.progress.min(100)))
        .bind(&job.property_id)
        .bind(&job.property_name)
        .bind(&job.tenant_type)
        .bind(&job.tenant_label)
        .bind(&job.shop_domain)
        .bind(i64::from(job.max_pages))
        .bind(i64::from(job.max_depth))
        .bind(at(job.created_at))
        .bind(at_opt(job.started_at))
        .bind(at_opt(job.completed_at))
        .bind(&job.error)
        .bind(result.map(|r| i64::from(r.score)))
        .bind(result.map(|r| i64::from(r.pages_scanned)))
        .bind(result.map(|r| i64::from(r.issues_count)))
        .execute(&mut *tx)
        .await
        .map_err(store_error)?;
        // Raises the meter only while it is below the limit. The upsert locks the meter row, so
        // concurrent scans of the organization (from any instance) queue here and each sees
        // the count the previous one committed. No row back: the quota is spent.
        let counted = sqlx::query(
            "INSERT INTO usage_counters AS u (organization_id, month, scans) \
             SELECT $1, $2, 1 WHERE $3 > 0 \
             ON CONFLICT (organization_id, month) \
             DO UPDATE SET scans = u.scans + 1 WHERE u.scans < $3 \
             RETURNING u.scans",
        )
        .bind(&job.organization_id)
        .bind(month)
        .bind(big(scans_limit))
        .fetch_optional(&mut *tx)
        .await
        .map_err(store_error)?;
        if counted.is_none() {
            tx.rollback().await.map_err(store_error)?;
            return Err(StoreError::LimitReached("scansPerMonth"));
        }
        tx.commit().await.map_err(store_error)
    }

    async fn get_job(&self, id: &str) -> StoreResult<Option<Job>> {
        let row = sqlx::query(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(store_error)?;
        one(row, rows::job)
    }

    async fn list_jobs(
        &self,
        organization_id: &str,
        filter: &JobFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<Job>> {
        let mut builder = QueryBuilder::new("");
        list_jobs_query(&mut builder, organization_id, filter, page);
        let rows = builder
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(store_error)?;
        all(rows, rows::job)
    }

    async fn count_active_jobs(&self, organization_id: &str) -> StoreResult<u64> {
        // The predicate repeats the partial index's, so only live jobs are read.
        let count: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM jobs \
             WHERE organization_id = $1 AND status IN ('pending', 'processing')",
        )
        .bind(organization_id)
        .fetch_one(&self.pool)
        .await
        .map_err(store_error)?;
        rows::unsigned(count, "job count")
    }

    async fn latest_jobs_for_properties(&self, property_ids: &[String]) -> StoreResult<Vec<Job>> {
        // One index probe (jobs_property_page_idx) per property, instead of one query each.
        let rows = sqlx::query(&format!(
            "SELECT j.* FROM UNNEST($1::text[]) AS p(id) \
             CROSS JOIN LATERAL ( \
                 SELECT {JOB_COLUMNS} FROM jobs WHERE property_id = p.id \
                 ORDER BY created_at DESC, id DESC LIMIT 1 \
             ) AS j"
        ))
        .bind(property_ids)
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(rows, rows::job)
    }

    async fn cancel_job(&self, id: &str, now: Timestamp) -> StoreResult<CancelOutcome> {
        // The conditional update is the decision: of a cancel and a finish racing on the same
        // job, exactly one matches its WHERE. When it does not match, a job that exists is
        // final, and final states never change, so the follow-up read cannot contradict it
        // (unless the job was inserted in between, when the update is simply tried again).
        for _ in 0..3 {
            let cancelled = sqlx::query(&format!(
                "UPDATE jobs SET status = 'cancelled', completed_at = $2 \
                 WHERE id = $1 AND status IN ('pending', 'processing') \
                 RETURNING {JOB_COLUMNS}"
            ))
            .bind(id)
            .bind(at(now))
            .fetch_optional(&self.pool)
            .await
            .map_err(store_error)?;
            if let Some(row) = cancelled {
                return Ok(CancelOutcome::Cancelled(rows::job(&row)?));
            }
            match self.get_job(id).await? {
                None => return Ok(CancelOutcome::NotFound),
                Some(job) if !job.status.is_active() => {
                    return Ok(CancelOutcome::NotCancellable(job))
                }
                Some(_) => continue,
            }
        }
        Err(StoreError::Internal(format!(
            "job {id} neither cancellable nor final"
        )))
    }

    async fn start_job(&self, id: &str, now: Timestamp) -> StoreResult<Option<Job>> {
        let row = sqlx::query(&format!(
            "UPDATE jobs SET status = 'processing', started_at = $2 \
             WHERE id = $1 AND status = 'pending' RETURNING {JOB_COLUMNS}"
        ))
        .bind(id)
        .bind(at(now))
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::job)
    }

    async fn set_job_progress(&self, id: &str, progress: u8) -> StoreResult<Option<Job>> {
        let row = sqlx::query(&format!(
            "UPDATE jobs SET progress = $2 \
             WHERE id = $1 AND status = 'processing' RETURNING {JOB_COLUMNS}"
        ))
        .bind(id)
        .bind(i16::from(progress.min(100)))
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::job)
    }

    async fn finish_job(
        &self,
        id: &str,
        outcome: &JobOutcome,
        now: Timestamp,
    ) -> StoreResult<Option<Job>> {
        let query = match outcome {
            JobOutcome::Completed(result) => {
                sqlx::query(&format!(
                    "UPDATE jobs SET status = 'completed', progress = 100, completed_at = $2, \
                 result_score = $3, result_pages_scanned = $4, result_issues_count = $5 \
                 WHERE id = $1 AND status = 'processing' RETURNING {JOB_COLUMNS}"
                ))
                .bind(id)
                .bind(at(now))
                .bind(i64::from(result.score))
                .bind(i64::from(result.pages_scanned))
                .bind(i64::from(result.issues_count))
                .fetch_optional(&self.pool)
                .await
            }
            JobOutcome::Failed(error) => {
                sqlx::query(&format!(
                    "UPDATE jobs SET status = 'failed', completed_at = $2, error = $3 \
                 WHERE id = $1 AND status = 'processing' RETURNING {JOB_COLUMNS}"
                ))
                .bind(id)
                .bind(at(now))
                .bind(error)
                .fetch_optional(&self.pool)
                .await
            }
        };
        one(query.map_err(store_error)?, rows::job)
    }

    async fn job_counts_by_type(
        &self,
        organization_id: &str,
        from: Timestamp,
        to: Timestamp,
    ) -> StoreResult<Vec<(String, JobCounts)>> {
        let rows = sqlx::query(
            "SELECT job_type, count(*) AS total, \
                    count(*) FILTER (WHERE status = 'completed') AS completed, \
                    count(*) FILTER (WHERE status = 'failed') AS failed \
             FROM jobs WHERE organization_id = $1 AND created_at >= $2 AND created_at < $3 \
             GROUP BY job_type ORDER BY job_type",
        )
        .bind(organization_id)
        .bind(at(from))
        .bind(at(to))
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(rows, |row| {
            Ok((
                row.col("job_type")?,
                JobCounts {
                    total: row.count("total")?,
                    completed: row.count("completed")?,
                    failed: row.count("failed")?,
                },
            ))
        })
    }

    // ---- issues ----

    async fn insert_issue(&self, issue: &Issue) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO issues (id, organization_id, property_id, job_id, scan_kind, issue_type, \
             severity, url, message, status, created_at, last_seen_at, resolved_at, fixed_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        )
        .bind(&issue.id)
        .bind(&issue.organization_id)
        .bind(&issue.property_id)
        .bind(&issue.job_id)
        .bind(issue.scan_kind.as_str())
        .bind(&issue.issue_type)
        .bind(issue.severity.as_str())
        .bind(&issue.url)
        .bind(&issue.message)
        .bind(issue.status.as_str())
        .bind(at(issue.created_at))
        .bind(at(issue.last_seen_at))
        .bind(at_opt(issue.resolved_at))
        .bind(at_opt(issue.fixed_at))
        .execute(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(())
    }

    async fn get_issue(&self, id: &str) -> StoreResult<Option<Issue>> {
        let row = sqlx::query(&format!("SELECT {ISSUE_COLUMNS} FROM issues WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(store_error)?;
        one(row, rows::issue)
    }

    async fn set_issue_fixed(&self, id: &str, now: Timestamp) -> StoreResult<Option<Issue>> {
        let row = sqlx::query(&format!(
            "UPDATE issues SET status = 'fixed', fixed_at = COALESCE(fixed_at, $2) \
             WHERE id = $1 RETURNING {ISSUE_COLUMNS}"
        ))
        .bind(id)
        .bind(at(now))
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::issue)
    }

    async fn list_issues(
        &self,
        property_id: &str,
        filter: &IssueFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<Issue>> {
        let mut builder = QueryBuilder::new("");
        list_issues_query(&mut builder, property_id, filter, page);
        let rows = builder
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(store_error)?;
        all(rows, rows::issue)
    }

    async fn issue_summary(&self, property_id: &str) -> StoreResult<IssueSummary> {
        let row = sqlx::query(
            "SELECT count(*) FILTER (WHERE status = 'open') AS open, \
                    count(*) FILTER (WHERE status = 'resolved') AS resolved, \
                    count(*) FILTER (WHERE status = 'fixed') AS fixed, \
                    count(*) AS total \
             FROM issues WHERE property_id = $1",
        )
        .bind(property_id)
        .fetch_one(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(IssueSummary {
            open: row.count("open")?,
            resolved: row.count("resolved")?,
            fixed: row.count("fixed")?,
            total: row.count("total")?,
        })
    }

    // ---- reports ----

    async fn insert_report(&self, report: &Report) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO reports \
             (token, organization_id, property_id, scan_id, expires_at, view_count, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&report.token)
        .bind(&report.organization_id)
        .bind(&report.property_id)
        .bind(&report.scan_id)
        .bind(at(report.expires_at))
        .bind(rows::signed(report.view_count, "view count")?)
        .bind(at(report.created_at))
        .execute(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(())
    }

    async fn get_report(&self, token: &str) -> StoreResult<Option<Report>> {
        let row = sqlx::query(&format!(
            "SELECT {REPORT_COLUMNS} FROM reports WHERE token = $1"
        ))
        .bind(token)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::report)
    }

    async fn list_live_reports(
        &self,
        organization_id: &str,
        now: Timestamp,
        page: &PageRequest,
    ) -> StoreResult<Vec<Report>> {
        let mut builder = QueryBuilder::new("");
        list_live_reports_query(&mut builder, organization_id, now, page);
        let rows = builder
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(store_error)?;
        all(rows, rows::report)
    }

    async fn increment_report_views(&self, token: &str) -> StoreResult<Option<Report>> {
        let row = sqlx::query(&format!(
            "UPDATE reports SET view_count = view_count + 1 WHERE token = $1 \
             RETURNING {REPORT_COLUMNS}"
        ))
        .bind(token)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::report)
    }

    // ---- usage ----

    async fn get_usage(&self, organization_id: &str, month: &str) -> StoreResult<UsageCounters> {
        let row = sqlx::query(&format!(
            "SELECT {USAGE_COLUMNS} FROM usage_counters WHERE organization_id = $1 AND month = $2"
        ))
        .bind(organization_id)
        .bind(month)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(one(row, rows::usage)?.unwrap_or_default())
    }

    async fn add_usage(
        &self,
        organization_id: &str,
        month: &str,
        delta: &UsageCounters,
    ) -> StoreResult<UsageCounters> {
        // One upsert: concurrent additions from any instance all count. Sums saturate at the
        // largest bigint instead of failing.
        let row = sqlx::query(&format!(
            "INSERT INTO usage_counters AS u (organization_id, month, scans, ai_input_tokens, \
             ai_output_tokens, redirects_created, images_optimized) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (organization_id, month) DO UPDATE SET \
             scans = LEAST(u.scans::numeric + EXCLUDED.scans, {max})::bigint, \
             ai_input_tokens = LEAST(u.ai_input_tokens::numeric + EXCLUDED.ai_input_tokens, {max})::bigint, \
             ai_output_tokens = LEAST(u.ai_output_tokens::numeric + EXCLUDED.ai_output_tokens, {max})::bigint, \
             redirects_created = LEAST(u.redirects_created::numeric + EXCLUDED.redirects_created, {max})::bigint, \
             images_optimized = LEAST(u.images_optimized::numeric + EXCLUDED.images_optimized, {max})::bigint \
             RETURNING {USAGE_COLUMNS}",
            max = i64::MAX
        ))
        .bind(organization_id)
        .bind(month)
        .bind(big(delta.scans))
        .bind(big(delta.ai_input_tokens))
        .bind(big(delta.ai_output_tokens))
        .bind(big(delta.redirects_created))
        .bind(big(delta.images_optimized))
        .fetch_one(&self.pool)
        .await
        .map_err(store_error)?;
        rows::usage(&row)
    }

    // ---- rate limits and idempotency ----

    async fn hit_rate_limits(&self, buckets: &[RateBucket]) -> StoreResult<RateOutcome> {
        // One call of the function of migration 0002: see its comment for how it stays exact
        // and all-or-nothing across instances.
        let names: Vec<&str> = buckets.iter().map(|b| b.name.as_str()).collect();
        let windows: Vec<DateTime<Utc>> = buckets.iter().map(|b| at(b.window_start)).collect();
        let limits: Vec<i64> = buckets.iter().map(|b| big(b.limit)).collect();
        let consume: Vec<bool> = buckets.iter().map(|b| b.consume).collect();
        let row = sqlx::query(
            "SELECT counts, exceeded FROM xf_hit_rate_limits($1::text[], $2::timestamptz[], \
             $3::bigint[], $4::boolean[])",
        )
        .bind(&names)
        .bind(&windows)
        .bind(&limits)
        .bind(&consume)
        .fetch_one(&self.pool)
        .await
        .map_err(store_error)?;
        let counts: Vec<i64> = row.col("counts")?;
        let exceeded: Vec<i32> = row.col("exceeded")?;
        Ok(RateOutcome {
            counts: counts
                .into_iter()
                .map(|count| rows::unsigned(count, "rate limit count"))
                .collect::<StoreResult<_>>()?,
            exceeded: exceeded
                .into_iter()
                .map(|index| {
                    usize::try_from(index).map_err(|_| {
                        StoreError::Internal(format!("negative rate bucket index: {index}"))
                    })
                })
                .collect::<StoreResult<_>>()?,
        })
    }

    async fn claim_idempotency_key(
        &self,
        request: &IdempotencyRequest,
    ) -> StoreResult<IdempotencyClaim> {
        let mut tx = self.pool.begin().await.map_err(store_error)?;
        // Claims the key when it is new, when the record expired (then it is replaced), or when
        // the same request's unfinished claim went stale (then only the claim time moves). In
        // every other case the upsert updates nothing but still locks the existing row, so the
        // read below sees the state that made it decline.
        let acquired = sqlx::query(
            "INSERT INTO idempotency_keys AS i (scope, fingerprint, created_at, claimed_at) \
             VALUES ($1, $2, $3, $3) \
             ON CONFLICT (scope) DO UPDATE SET \
                 fingerprint = EXCLUDED.fingerprint, \
                 created_at = CASE WHEN i.created_at < $4 THEN EXCLUDED.created_at \
                                   ELSE i.created_at END, \
                 claimed_at = EXCLUDED.claimed_at, \
                 response_status = NULL, \
                 response_body = NULL \
             WHERE i.created_at < $4 \
                OR (i.fingerprint = EXCLUDED.fingerprint \
                    AND i.response_status IS NULL \
                    AND i.claimed_at < $5) \
             RETURNING i.scope",
        )
        .bind(&request.scope)
        .bind(&request.fingerprint)
        .bind(at(request.now))
        .bind(at(request.expired_before))
        .bind(at(request.stale_before))
        .fetch_optional(&mut *tx)
        .await
        .map_err(store_error)?;
        if acquired.is_some() {
            tx.commit().await.map_err(store_error)?;
            return Ok(IdempotencyClaim::Acquired);
        }
        let row = sqlx::query(
            "SELECT fingerprint, response_status, response_body FROM idempotency_keys \
             WHERE scope = $1",
        )
        .bind(&request.scope)
        .fetch_optional(&mut *tx)
        .await
        .map_err(store_error)?
        .ok_or_else(|| {
            StoreError::Internal("idempotency record vanished while locked".to_owned())
        })?;
        tx.rollback().await.map_err(store_error)?;
        if row.col::<String>("fingerprint")? != request.fingerprint {
            return Ok(IdempotencyClaim::Mismatch);
        }
        match (
            row.col::<Option<i32>>("response_status")?,
            row.col::<Option<String>>("response_body")?,
        ) {
            (Some(status), Some(body)) => Ok(IdempotencyClaim::Replay(StoredResponse {
                status: u16::try_from(status).map_err(|_| {
                    StoreError::Internal(format!("stored status out of range: {status}"))
                })?,
                body,
            })),
            _ => Ok(IdempotencyClaim::InUse),
        }
    }

    async fn complete_idempotency_key(
        &self,
        scope: &str,
        fingerprint: &str,
        response: &StoredResponse,
    ) -> StoreResult<()> {
        sqlx::query(
            "UPDATE idempotency_keys SET response_status = $3, response_body = $4 \
             WHERE scope = $1 AND fingerprint = $2",
        )
        .bind(scope)
        .bind(fingerprint)
        .bind(i32::from(response.status))
        .bind(&response.body)
        .execute(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(())
    }

    async fn release_idempotency_key(&self, scope: &str, fingerprint: &str) -> StoreResult<()> {
        sqlx::query(
            "DELETE FROM idempotency_keys \
             WHERE scope = $1 AND fingerprint = $2 AND response_status IS NULL",
        )
        .bind(scope)
        .bind(fingerprint)
        .execute(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(())
    }

    // ---- maintenance ----

    async fn purge_expired(
        &self,
        windows_before: Timestamp,
        idempotency_before: Timestamp,
    ) -> StoreResult<u64> {
        let purged: i64 = sqlx::query_scalar(
            "WITH windows AS ( \
                 DELETE FROM rate_limit_counters WHERE window_start < $1 RETURNING 1 \
             ), records AS ( \
                 DELETE FROM idempotency_keys WHERE created_at < $2 RETURNING 1 \
             ) \
             SELECT (SELECT count(*) FROM windows) + (SELECT count(*) FROM records)",
        )
        .bind(at(windows_before))
        .bind(at(idempotency_before))
        .fetch_one(&self.pool)
        .await
        .map_err(store_error)?;
        rows::unsigned(purged, "purged rows")
    }

    async fn dump(&self) -> StoreResult<StoreDump> {
        // One snapshot for all tables.
        let mut tx = self
            .pool
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await
            .map_err(store_error)?;
        macro_rules! fetch {
            ($sql:expr) => {
                sqlx::query(&$sql)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(store_error)?
            };
        }
        let organizations = fetch!(format!(
            "SELECT {ORGANIZATION_COLUMNS} FROM organizations ORDER BY id"
        ));
        let api_keys = fetch!(format!(
            "SELECT {API_KEY_COLUMNS} FROM api_keys ORDER BY id"
        ));
        let properties = fetch!(format!(
            "SELECT {PROPERTY_COLUMNS} FROM properties ORDER BY id"
        ));
        let jobs = fetch!(format!("SELECT {JOB_COLUMNS} FROM jobs ORDER BY id"));
        let issues = fetch!(format!("SELECT {ISSUE_COLUMNS} FROM issues ORDER BY id"));
        let reports = fetch!(format!(
            "SELECT {REPORT_COLUMNS} FROM reports ORDER BY token"
        ));
        let usage = fetch!(format!(
            "SELECT organization_id, month, {USAGE_COLUMNS} FROM usage_counters \
             ORDER BY organization_id, month"
        ));
        tx.commit().await.map_err(store_error)?;
        Ok(StoreDump {
            organizations: all(organizations, rows::organization)?,
            api_keys: all(api_keys, rows::api_key)?,
            properties: all(properties, rows::property)?,
            jobs: all(jobs, rows::job)?,
            issues: all(issues, rows::issue)?,
            reports: all(reports, rows::report)?,
            usage: all(usage, |row| {
                Ok((
                    row.col("organization_id")?,
                    row.col("month")?,
                    rows::usage(row)?,
                ))
            })?,
        })
    }
}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use sqlx::Connection;
    use xf_core::model::{IssueStatus, JobStatus, ScanKind};
    use xf_core::store::After;

    use super::*;

    fn pages() -> [PageRequest; 2] {
        let after = After {
            created_at: Timestamp::from_unix_millis(1_795_342_530_123).expect("in range"),
            id: "x_1".to_owned(),
        };
        [
            PageRequest {
                limit: 41,
                after: None,
            },
            PageRequest {
                limit: 41,
                after: Some(after),
            },
        ]
    }

    /// The plan of `builder`'s query with sequential scans, bitmap scans and sorts priced out:
    /// if it still has none of them, an index serves the query in page order.
    async fn plan(
        connection: &mut sqlx::PgConnection,
        build: impl FnOnce(&mut QueryBuilder<'_, Postgres>),
    ) -> String {
        let mut builder = QueryBuilder::new("EXPLAIN ");
        build(&mut builder);
        let lines: Vec<String> = builder
            .build_query_scalar()
            .fetch_all(&mut *connection)
            .await
            .expect("explain");
        lines.join("\n")
    }

    fn assert_served_by_index(plan: &str, keyset: bool) {
        assert!(!plan.contains("Seq Scan"), "table scan:\n{plan}");
        assert!(!plan.contains("Bitmap"), "bitmap scan:\n{plan}");
        assert!(!plan.contains("Sort"), "sorted after reading:\n{plan}");
        assert!(plan.contains("Index Cond"), "no index condition:\n{plan}");
        if keyset {
            assert!(
                plan.lines()
                    .any(|line| line.contains("Index Cond") && line.contains("ROW(created_at")),
                "keyset condition not in the index condition:\n{plan}"
            );
        }
    }

    #[tokio::test]
    async fn every_list_query_is_an_ordered_index_range_scan() {
        let store = crate::testing::fresh_database().await;
        let mut connection = store.pool().acquire().await.expect("connection");
        sqlx::raw_sql(
            "SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off",
        )
        .execute(&mut *connection)
        .await
        .expect("planner settings");

        let job_filters = [
            JobFilter::default(),
            JobFilter {
                status: Some(JobStatus::Processing),
                ..JobFilter::default()
            },
            JobFilter {
                property_id: Some("prop_1".to_owned()),
                ..JobFilter::default()
            },
            JobFilter {
                job_type: Some("seo-scan".to_owned()),
                ..JobFilter::default()
            },
            JobFilter {
                status: Some(JobStatus::Completed),
                property_id: Some("prop_1".to_owned()),
                job_type: Some("seo-scan".to_owned()),
            },
        ];
        let issue_filters = [
            IssueFilter::default(),
            IssueFilter {
                status: Some(IssueStatus::Open),
                scan_kind: None,
            },
            IssueFilter {
                status: None,
                scan_kind: Some(ScanKind::Site),
            },
            IssueFilter {
                status: Some(IssueStatus::Fixed),
                scan_kind: Some(ScanKind::Page),
            },
        ];
        let now = Timestamp::from_unix_millis(1_795_342_530_123).expect("in range");
        for page in pages() {
            let keyset = page.after.is_some();
            let text = plan(&mut connection, |b| {
                list_properties_query(b, "org_1", &page)
            })
            .await;
            assert_served_by_index(&text, keyset);
            for filter in &job_filters {
                let text = plan(&mut connection, |b| {
                    list_jobs_query(b, "org_1", filter, &page)
                })
                .await;
                assert_served_by_index(&text, keyset);
            }
            for filter in &issue_filters {
                let text = plan(&mut connection, |b| {
                    list_issues_query(b, "prop_1", filter, &page)
                })
                .await;
                assert_served_by_index(&text, keyset);
            }
            let text = plan(&mut connection, |b| {
                list_live_reports_query(b, "org_1", now, &page)
            })
            .await;
            assert_served_by_index(&text, keyset);
        }
    }

    #[tokio::test]
    async fn a_connection_killed_by_the_server_is_reported_unavailable() {
        let store = crate::testing::fresh_database().await;
        let mut victim = sqlx::PgConnection::connect_with(&store.pool().connect_options())
            .await
            .expect("connection");
        let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&mut victim)
            .await
            .expect("pid");
        let terminated: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
            .bind(pid)
            .fetch_one(store.pool())
            .await
            .expect("terminate");
        assert!(terminated);
        let error = sqlx::query("SELECT 1")
            .execute(&mut victim)
            .await
            .expect_err("the session is gone");
        assert!(
            matches!(store_error(error), StoreError::Unavailable(_)),
            "killed session not classified as unavailable"
        );
    }
}
