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
//! * **Claiming jobs**: one statement picks up to a worker's free slots of due pending jobs
//!   (`SELECT … ORDER BY run_at LIMIT n FOR UPDATE SKIP LOCKED`) and marks them processing
//!   with a new attempt token and lease, so concurrent workers on any instances never get the
//!   same job and never wait for one another.
//! * **Attempt writes** (heartbeat, finish, release): conditional `UPDATE … WHERE
//!   attempt_token = $token AND status = 'processing'`, so an attempt whose lease ran out, or
//!   whose job was cancelled, writes nothing; a job cannot be both cancelled and finished.
//! * **The outbox**: the statement that moves a job to a final state inserts its event in a
//!   data-modifying CTE: one statement, one transaction, so neither exists without the other.
//! * **Wake-ups**: inserting jobs fires `NOTIFY xf_jobs_ready` (a statement trigger), and
//!   cancelling a running job `NOTIFY xf_job_cancel`; workers `LISTEN` on a dedicated
//!   connection and also poll, so a lost notification only delays them.
//! * **Webhooks**: the cap of an organization's webhooks (`insert_webhook`) is kept as the
//!   key cap is, under an advisory lock of its own. A fan-out takes the oldest events not yet
//!   taken (`FOR UPDATE SKIP LOCKED`), queues their messages and marks them taken in one
//!   statement, so each event is fanned out exactly once however many instances run it.
//!   Messages are claimed as jobs are (SKIP LOCKED, a token and a lease), and an attempt is
//!   recorded (log row, `lastDelivery*`, next step) by one call of `xf_record_deliveries`
//!   (migration 0005) that writes nothing unless its token is still the message's. Writes
//!   lock a webhook before its messages, so they cannot deadlock; new events `NOTIFY
//!   xf_events` (a statement trigger), which wakes the delivery engines.
//! * **Rate limits**: the requests waiting together are counted by one statement, which
//!   increments every consumed counter with an upsert that takes the counter rows' locks in a
//!   fixed order (no deadlocks between instances) and checks, with them locked, that every
//!   counter stays within its limits; when one would not, the statement fails whole (nothing
//!   counted, nothing seen) and `xf_hit_rate_limits_many` decides the requests one after the
//!   other, taking the same locks in the same order. So a request is counted in all of its
//!   windows or in none, and the limits are exact across instances (migrations 0009 and 0027).
//! * **Idempotency keys**: one transaction claims the key with a conditional upsert (new key,
//!   expired record, or a stale claim of a request that died); if the upsert declined, the row
//!   it locked says why (replay, in use, or another request's fingerprint).
//!
//! ## Counters: unlogged and asynchronously committed
//!
//! Every API request increments a rate-limit counter. If each increment cost a WAL flush (a
//! durable commit), the database's disk would cap the API's throughput. So
//! `rate_limit_counters` is an `UNLOGGED` table (no WAL at all), so a transaction that counts
//! writes no log record but its commit, whose flush PostgreSQL does not wait for: one round
//! trip per batch of requests, no flush. The price: PostgreSQL empties an unlogged table
//! after a crash (not after a clean shutdown), which at worst hands callers a fresh window
//! once; likewise a standby promoted after a failover starts with empty counters,
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

#![cfg_attr(docsrs, feature(doc_cfg))]

mod batch;
mod error;
mod events;
mod gsc;
mod guards;
mod issues;
mod jobs;
mod media;
mod organizations;
mod properties;
mod queue;
mod reports;
mod rows;
mod schedules;
#[cfg(feature = "testing")]
pub mod testing;
mod usage;
mod webhooks;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};
use sqlx::{Postgres, QueryBuilder};
use xf_core::error::While;
use xf_core::store::{IssueFilter, JobFilter, PageRequest, Store, StoreResult};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::error::{migrate_error, store_error};
#[cfg(feature = "testing")]
use crate::rows::RowExt;
use crate::rows::{
    at, DELIVERY_COLUMNS, ISSUE_COLUMNS, JOB_COLUMNS, PROPERTY_COLUMNS, REPORT_COLUMNS,
};

/// The schema migrations, embedded at compile time from `migrations/`.
static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// How long a request waits for a pooled connection (or for a new one to open) before the
/// store reports [`StoreError::Unavailable`]: under the three seconds docs/limits.md promises for
/// an answer during an outage, with room for the statements that ran before it.
const ACQUIRE_TIMEOUT: Duration = Duration::from_millis(2500);

/// First key of the advisory locks that serialise key creation per organization (the second
/// is a hash of the organization id). The two-key form keeps these locks apart from the
/// single-`bigint` advisory lock sqlx takes while migrating.
pub(crate) const KEY_CAP_LOCK_CLASS: i32 = 0x7866_0001;

/// First key of the advisory locks that serialise webhook creation per organization (see
/// [`KEY_CAP_LOCK_CLASS`]).
pub(crate) const WEBHOOK_CAP_LOCK_CLASS: i32 = 0x7866_0002;

/// The PostgreSQL store. Cheap to clone: clones share the connection pool (and the tasks
/// that run the request path's rate counts, idempotency records and property reads in
/// batches).
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
    /// Where the request path's guards hand their statements to the batching tasks (started
    /// on first use, on the runtime of that call).
    guards: Arc<guards::GuardBatches>,
    /// Where reads of a property by id go to be batched likewise.
    reads: Arc<properties::PropertyReads>,
}

/// A connection idle for less than this is handed out without a ping first.
const TRUSTED_IDLE: Duration = Duration::from_millis(500);

/// The pool settings [`PgStore::connect`] uses.
///
/// sqlx pings every idle connection before handing it out, by default: a round trip per
/// statement, on the request's path. Here only a connection idle for [`TRUSTED_IDLE`] or more
/// is pinged (as HikariCP does); one in use a moment ago is trusted. So a dead connection
/// (the database restarted) is found by the ping once the pool sat idle for half a second;
/// under load, the statement that first uses it fails instead (`unavailable`, and the pool
/// replaces the connection).
pub(crate) fn pool_options() -> PgPoolOptions {
    PgPoolOptions::new()
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .test_before_acquire(false)
        .before_acquire(|connection, meta| {
            Box::pin(async move {
                if meta.idle_for >= TRUSTED_IDLE {
                    sqlx::Connection::ping(connection).await?;
                }
                Ok(true)
            })
        })
}

impl PgStore {
    /// A store over a pool configured by the caller. The schema must have been migrated
    /// (see [`PgStore::migrate`]).
    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            guards: Arc::new(guards::GuardBatches::new()),
            reads: Arc::new(properties::PropertyReads::new()),
        }
    }

    /// A store over a lazily connecting pool for `url` (`postgres://user:pass@host/db`).
    /// Opens no connection: fails only when the URL is malformed. Requests wait at most 2.5
    /// seconds for a connection, then fail with [`StoreError::Unavailable`]; once the database
    /// answers again the pool reconnects by itself. Must be called inside a Tokio runtime.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        let pool = pool_options()
            .connect_lazy(url)
            .map_err(|error| StoreError::internal(While::new("invalid database URL", error)))?;
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

    /// Starts a transaction on a connection of the pool, whatever happens to the caller.
    ///
    /// sqlx counts a transaction as open only once `BEGIN` has answered: a `begin()` future
    /// dropped in between (a request whose client went away) hands its connection back to
    /// the pool with the transaction open on the server and nothing to roll it back. Every
    /// later statement on that connection then runs inside it, uncommitted, holding its
    /// locks; a rate-limit counter locked that way stopped every request of the instance.
    /// Here `BEGIN` runs in a task of its own: it completes, and if the caller is gone the
    /// task drops the transaction, which sqlx does roll back.
    pub(crate) async fn begin(&self) -> StoreResult<sqlx::Transaction<'static, Postgres>> {
        let pool = self.pool.clone();
        #[allow(clippy::disallowed_methods)] // the one place it is safe: nothing drops it
        tokio::spawn(async move { pool.begin().await })
            .await
            .map_err(|error| StoreError::internal(While::new("starting a transaction", error)))?
            .map_err(store_error)
    }
}

/// Appends the keyset condition, order and limit of a newest-first page. `id_column` is the
/// tie-breaker (`id`, or `token` for reports). The condition is a row comparison on exactly the
/// trailing columns of the list's index, so the page is one index range scan.
pub(crate) fn push_page(
    builder: &mut QueryBuilder<'_, Postgres>,
    id_column: &str,
    page: &PageRequest,
) {
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
pub(crate) fn list_properties_query<'a>(
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
pub(crate) fn list_jobs_query<'a>(
    builder: &mut QueryBuilder<'a, Postgres>,
    organization_id: &str,
    filter: &JobFilter,
    page: &PageRequest,
) {
    builder
        .push(format!(
            "SELECT {JOB_COLUMNS} FROM jobs WHERE property_id IS NOT NULL AND organization_id = "
        ))
        .push_bind(organization_id.to_owned());
    if let Some(status) = filter.status {
        // A literal, not a parameter: the plan of each status may then use the partial
        // index that holds it (migration 0026), which a generic plan could not.
        builder.push(format_args!(" AND status = '{}'", status.as_str()));
    }
    if let Some(property_id) = &filter.property_id {
        builder
            .push(" AND property_id = ")
            .push_bind(property_id.to_string());
    }
    if let Some(job_type) = &filter.job_type {
        builder.push(" AND job_type = ").push_bind(job_type.clone());
    }
    push_page(builder, "id", page);
}

/// `GET /properties/{id}/issues`.
pub(crate) fn list_issues_query<'a>(
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
    if !filter.types.is_empty() {
        builder
            .push(" AND issue_type = ANY(")
            .push_bind(filter.types.clone())
            .push(")");
    }
    if let Some(severity) = filter.severity {
        builder
            .push(" AND severity = ")
            .push_bind(severity.as_str());
    }
    if let Some(prefix) = &filter.url_prefix {
        builder
            .push(" AND starts_with(url, ")
            .push_bind(prefix.clone())
            .push(")");
    }
    push_page(builder, "id", page);
}

/// The list of live reports.
pub(crate) fn list_live_reports_query<'a>(
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

/// `GET /webhooks/{id}/deliveries`.
pub(crate) fn list_deliveries_query<'a>(
    builder: &mut QueryBuilder<'a, Postgres>,
    webhook_id: &str,
    page: &PageRequest,
) {
    builder
        .push(format!(
            "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = "
        ))
        .push_bind(webhook_id.to_owned());
    push_page(builder, "id", page);
}

pub(crate) fn all<T>(
    rows: Vec<PgRow>,
    decode: impl Fn(&PgRow) -> StoreResult<T>,
) -> StoreResult<Vec<T>> {
    rows.iter().map(decode).collect()
}

pub(crate) fn one<T>(
    row: Option<PgRow>,
    decode: impl Fn(&PgRow) -> StoreResult<T>,
) -> StoreResult<Option<T>> {
    row.as_ref().map(decode).transpose()
}

#[cfg(feature = "testing")]
#[async_trait]
impl xf_core::testing::Dump for PgStore {
    async fn dump(&self) -> StoreResult<xf_core::testing::StoreDump> {
        // One snapshot for all tables. Tests await the dump to its end: nothing drops it
        // half-way, so `begin_with` is safe here.
        #[allow(clippy::disallowed_methods)]
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
            "SELECT {} FROM organizations ORDER BY id",
            rows::ORGANIZATION_COLUMNS
        ));
        let api_keys = fetch!(format!(
            "SELECT {} FROM api_keys ORDER BY id",
            rows::API_KEY_COLUMNS
        ));
        let properties = fetch!(format!(
            "SELECT {PROPERTY_COLUMNS} FROM properties ORDER BY id"
        ));
        let jobs = fetch!(format!("SELECT {JOB_COLUMNS} FROM jobs ORDER BY id"));
        let issues = fetch!(format!("SELECT {ISSUE_COLUMNS} FROM issues ORDER BY id"));
        let scan_records = fetch!(format!(
            "SELECT {} FROM scan_history ORDER BY job_id",
            rows::SCAN_HISTORY_COLUMNS
        ));
        let reports = fetch!(format!(
            "SELECT {REPORT_COLUMNS} FROM reports ORDER BY token"
        ));
        let usage = fetch!(format!(
            "SELECT organization_id, month, {} FROM usage_counters \
             ORDER BY organization_id, month",
            rows::USAGE_COLUMNS
        ));
        let events = fetch!(format!(
            "SELECT {} FROM events ORDER BY id",
            rows::EVENT_COLUMNS
        ));
        tx.commit().await.map_err(store_error)?;
        Ok(xf_core::testing::StoreDump {
            organizations: all(organizations, rows::organization)?,
            api_keys: all(api_keys, rows::api_key)?,
            properties: all(properties, rows::property)?,
            jobs: all(jobs, rows::job)?,
            issues: all(issues, rows::issue)?,
            scan_records: all(scan_records, rows::scan_record)?,
            reports: all(reports, rows::report)?,
            usage: all(usage, |row| {
                Ok((
                    row.col("organization_id")?,
                    row.col("month")?,
                    rows::usage(row)?,
                ))
            })?,
            events: all(events, rows::event)?,
        })
    }
}

#[async_trait]
impl Store for PgStore {
    /// One statement: the unfinished jobs through the partial indexes of pending and
    /// processing jobs, the waiting webhook messages and the open uploads.
    async fn gauges(&self) -> StoreResult<xf_core::store::StoreGauges> {
        use sqlx::Row;
        let rows = sqlx::query(
            "SELECT 'job' AS kind, job_type,
                    count(*) FILTER (WHERE status = 'pending' AND attempts = 0) AS queued,
                    count(*) FILTER (WHERE status = 'processing') AS running,
                    count(*) FILTER (WHERE status = 'pending' AND attempts > 0) AS retrying
               FROM jobs WHERE status IN ('pending', 'processing') GROUP BY job_type
             UNION ALL
             SELECT 'messages', '', count(*), 0, 0 FROM webhook_messages
             UNION ALL
             SELECT 'uploads', '', count(*), 0, 0 FROM media_uploads",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        let mut gauges = xf_core::store::StoreGauges::default();
        for row in &rows {
            let count = |column: &str| -> StoreResult<u64> {
                let n: i64 = row.try_get(column).map_err(store_error)?;
                Ok(u64::try_from(n).unwrap_or_default())
            };
            let kind: &str = row.try_get("kind").map_err(store_error)?;
            match kind {
                "messages" => gauges.webhook_messages_waiting = count("queued")?,
                "uploads" => gauges.uploads_open = count("queued")?,
                _ => gauges.jobs.push(xf_core::store::JobGauge {
                    job_type: row.try_get("job_type").map_err(store_error)?,
                    queued: count("queued")?,
                    running: count("running")?,
                    retrying: count("retrying")?,
                }),
            }
        }
        gauges.jobs.sort_by(|a, b| a.job_type.cmp(&b.job_type));
        Ok(gauges)
    }

    fn pool_status(&self) -> Option<xf_core::store::PoolStatus> {
        Some(xf_core::store::PoolStatus {
            size: self.pool.size(),
            idle: u32::try_from(self.pool.num_idle()).unwrap_or(u32::MAX),
            max: self.pool.options().get_max_connections(),
            statement_errors: error::STATEMENT_ERRORS.load(std::sync::atomic::Ordering::Relaxed),
        })
    }

    async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map_err(store_error)?;
        Ok(())
    }

    /// Whether every migration of this build is recorded as applied in sqlx's
    /// `_sqlx_migrations` (none are before the table exists).
    async fn schema_is_current(&self) -> StoreResult<bool> {
        let versions: Vec<i64> = MIGRATOR
            .iter()
            .filter(|migration| !migration.migration_type.is_down_migration())
            .map(|migration| migration.version)
            .collect();
        let has_table: bool =
            sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
                .fetch_one(&self.pool)
                .await
                .map_err(store_error)?;
        if !has_table {
            return Ok(versions.is_empty());
        }
        let applied: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM _sqlx_migrations WHERE success AND version = ANY($1)",
        )
        .bind(&versions)
        .fetch_one(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(usize::try_from(applied).is_ok_and(|applied| applied == versions.len()))
    }
}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use sqlx::Connection;
    use xf_core::model::{IssueStatus, JobStatus, ScanKind, Severity};
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
                property_id: Some(xf_core::ids::PropertyId::new()),
                ..JobFilter::default()
            },
            JobFilter {
                job_type: Some("seo-scan".to_owned()),
                ..JobFilter::default()
            },
            JobFilter {
                status: Some(JobStatus::Completed),
                property_id: Some(xf_core::ids::PropertyId::new()),
                job_type: Some("seo-scan".to_owned()),
            },
        ];
        let issue_filters = [
            IssueFilter::default(),
            IssueFilter {
                status: Some(IssueStatus::Open),
                ..IssueFilter::default()
            },
            IssueFilter {
                scan_kind: Some(ScanKind::Site),
                ..IssueFilter::default()
            },
            IssueFilter {
                status: Some(IssueStatus::Fixed),
                scan_kind: Some(ScanKind::Page),
                ..IssueFilter::default()
            },
            IssueFilter {
                severity: Some(Severity::High),
                ..IssueFilter::default()
            },
            IssueFilter {
                types: vec!["h1_missing".to_owned(), "title_missing".to_owned()],
                severity: Some(Severity::Critical),
                url_prefix: Some("https://example.com/blog/".to_owned()),
                ..IssueFilter::default()
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
            let text = plan(&mut connection, |b| list_deliveries_query(b, "wh_1", &page)).await;
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

    /// The schema is current once every migration of this build is applied, and not when one
    /// is missing or sqlx's table is gone.
    #[tokio::test]
    async fn the_schema_is_current_only_with_every_migration_applied() {
        let store = crate::testing::fresh_database().await;
        assert_eq!(store.schema_is_current().await, Ok(true));
        sqlx::query(
            "DELETE FROM _sqlx_migrations WHERE version = (SELECT max(version) FROM _sqlx_migrations)",
        )
        .execute(store.pool())
        .await
        .expect("forget the last migration");
        assert_eq!(store.schema_is_current().await, Ok(false));
        sqlx::query("DROP TABLE _sqlx_migrations")
            .execute(store.pool())
            .await
            .expect("drop sqlx's table");
        assert_eq!(store.schema_is_current().await, Ok(false));
    }
}
