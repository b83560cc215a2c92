//! Jobs, the API's side: queueing, reading, listing, counting and cancelling.

use async_trait::async_trait;
use sqlx::types::Json;
use sqlx::{Postgres, QueryBuilder};
use xf_core::ids::{JobId, OrganizationId, PropertyId};
use xf_core::model::{JobCounts, JobRecord};
use xf_core::store::text_rule::*;
use xf_core::store::{check_new_job, CancelOutcome, JobFilter, JobStore, PageRequest, StoreResult};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::error::store_error;
use crate::rows::{self, at, at_opt, big, RowExt, JOB_COLUMNS};
use crate::{all, list_jobs_query, one, PgStore};

/// The columns a new job is inserted with, in [`insert_jobs_query`]'s order.
const INSERT_COLUMNS: &str = "INSERT INTO jobs (id, organization_id, job_type, payload, status, \
     progress, property_id, property_name, tenant_label, shop_domain, attempts, max_attempts, \
     run_at, created_at, started_at, completed_at, error) ";

/// Rows per `INSERT` of [`JobStore::insert_jobs`]: 17 parameters each, well under
/// PostgreSQL's 65,535 per statement.
const INSERT_CHUNK: usize = 1_000;

/// The `INSERT` of `jobs`, every field of each record stored as it is (one statement for
/// one job or a chunk of many).
pub(crate) fn insert_jobs_query(jobs: &[JobRecord]) -> QueryBuilder<'_, Postgres> {
    let mut builder = QueryBuilder::new(INSERT_COLUMNS);
    builder.push_values(jobs, |mut row, job| {
        row.push_bind(job.id.as_str())
            .push_bind(job.organization_id.as_str())
            .push_bind(&job.job_type)
            .push_bind(Json(&job.payload))
            .push_bind(job.status.as_str())
            .push_bind(i16::from(job.progress.min(100)))
            .push_bind(job.subject.as_ref().map(|s| s.property_id.as_str()))
            .push_bind(job.subject.as_ref().map(|s| &s.property_name))
            .push_bind(job.subject.as_ref().map(|s| &s.tenant_label))
            .push_bind(job.subject.as_ref().and_then(|s| s.shop_domain.as_ref()))
            .push_bind(i32::try_from(job.attempts).unwrap_or(i32::MAX))
            .push_bind(i32::try_from(job.max_attempts).unwrap_or(i32::MAX))
            .push_bind(at(job.run_at))
            .push_bind(at(job.created_at))
            .push_bind(at_opt(job.started_at))
            .push_bind(at_opt(job.completed_at))
            .push_bind(&job.error);
    });
    builder
}

#[async_trait]
impl JobStore for PgStore {
    async fn insert_job_counted(
        &self,
        job: &JobRecord,
        month: &str,
        scans_limit: u64,
    ) -> StoreResult<()> {
        let job = &*stored(job);
        check_new_job(job)?;
        let mut tx = self.begin().await?;
        // The job first, so a duplicate id is reported as such even when the quota is spent.
        insert_jobs_query(std::slice::from_ref(job))
            .build()
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        if !count_scan(&mut tx, &job.organization_id, month, scans_limit).await? {
            tx.rollback().await.map_err(store_error)?;
            return Err(StoreError::LimitReached("scansPerMonth"));
        }
        sqlx::query("UPDATE jobs SET counted_month = $2 WHERE id = $1")
            .bind(job.id.as_str())
            .bind(month)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        tx.commit().await.map_err(store_error)
    }

    async fn insert_jobs(&self, jobs: &[JobRecord]) -> StoreResult<()> {
        let jobs = &*stored_all(jobs);
        if jobs.is_empty() {
            return Ok(());
        }
        jobs.iter().try_for_each(check_new_job)?;
        let mut tx = self.begin().await?;
        for chunk in jobs.chunks(INSERT_CHUNK) {
            insert_jobs_query(chunk)
                .build()
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
        }
        tx.commit().await.map_err(store_error)
    }

    async fn get_job(&self, id: &JobId) -> StoreResult<Option<JobRecord>> {
        let row = sqlx::query(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(store_error)?;
        one(row, rows::job)
    }

    async fn list_jobs(
        &self,
        organization_id: &OrganizationId,
        filter: &JobFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<JobRecord>> {
        let mut builder = QueryBuilder::new("");
        list_jobs_query(&mut builder, organization_id.as_str(), filter, page);
        let rows = builder
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(store_error)?;
        all(rows, rows::job)
    }

    async fn count_active_jobs(&self, organization_id: &OrganizationId) -> StoreResult<u64> {
        // The queue's two partial indexes (0003), one per state: only live jobs are read, of
        // every organization. (Written as `OR`: PostgreSQL combines partial indexes for that
        // form of the condition, not for `IN`.)
        let count: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM jobs \
             WHERE organization_id = $1 AND (status = 'pending' OR status = 'processing') \
               AND property_id IS NOT NULL",
        )
        .bind(organization_id.as_str())
        .fetch_one(&self.pool)
        .await
        .map_err(store_error)?;
        rows::unsigned(count, "job count")
    }

    async fn latest_jobs_for_properties(
        &self,
        property_ids: &[PropertyId],
    ) -> StoreResult<Vec<JobRecord>> {
        let ids: Vec<&str> = property_ids.iter().map(PropertyId::as_str).collect();
        // One index probe (jobs_property_page_idx) per property, instead of one query each.
        let rows = sqlx::query(&format!(
            "SELECT j.* FROM UNNEST($1::text[]) AS p(id) \
             CROSS JOIN LATERAL ( \
                 SELECT {JOB_COLUMNS} FROM jobs WHERE property_id = p.id \
                 ORDER BY created_at DESC, id DESC LIMIT 1 \
             ) AS j"
        ))
        .bind(&ids)
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(rows, rows::job)
    }

    async fn cancel_job(&self, id: &JobId, now: Timestamp) -> StoreResult<CancelOutcome> {
        // The conditional update is the decision: of a cancel and a finish racing on the same
        // job, exactly one matches its WHERE. The same statement writes the event and, when
        // an attempt was running (it has a token), tells its worker. When the update does not
        // match, a job that exists is final, and final states never change, so the follow-up
        // read cannot contradict it (unless the job was inserted in between, when the update
        // is simply tried again).
        for _ in 0..3 {
            let cancelled = sqlx::query(&format!(
                "WITH cancelled AS ( \
                     UPDATE jobs SET status = 'cancelled', completed_at = $2, \
                            lease_expires_at = NULL \
                     WHERE id = $1 AND status IN ('pending', 'processing') \
                     RETURNING {JOB_COLUMNS}, attempt_token IS NOT NULL AS was_running \
                 ), outbox AS ( \
                     INSERT INTO events (id, organization_id, event_type, job_id, created_at) \
                     SELECT xf_new_id('evt'), organization_id, 'job.cancelled', id, $2 \
                     FROM cancelled WHERE property_id IS NOT NULL \
                 ), told AS ( \
                     SELECT pg_notify('xf_job_cancel', id) FROM cancelled WHERE was_running \
                 ) \
                 SELECT *, (SELECT count(*) FROM told) AS told FROM cancelled"
            ))
            .bind(id.as_str())
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
        Err(StoreError::internal(format!(
            "job {id} neither cancellable nor final"
        )))
    }

    async fn job_counts_by_type(
        &self,
        organization_id: &OrganizationId,
        from: Timestamp,
        to: Timestamp,
    ) -> StoreResult<Vec<(String, JobCounts)>> {
        let rows = sqlx::query(
            "SELECT job_type, count(*) AS total, \
                    count(*) FILTER (WHERE status = 'completed') AS completed, \
                    count(*) FILTER (WHERE status = 'failed') AS failed \
             FROM jobs WHERE organization_id = $1 AND created_at >= $2 AND created_at < $3 \
               AND property_id IS NOT NULL \
             GROUP BY job_type ORDER BY job_type",
        )
        .bind(organization_id.as_str())
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
}

/// Counts a scan in the organization's `scans` meter of `month` unless it already reached
/// `scans_limit`; whether it counted. The upsert locks the meter row, so concurrent scans of
/// the organization (from any instance) queue here and each sees the count the previous one
/// committed.
pub(crate) async fn count_scan(
    tx: &mut sqlx::PgConnection,
    organization_id: &OrganizationId,
    month: &str,
    scans_limit: u64,
) -> StoreResult<bool> {
    let counted = sqlx::query(
        "INSERT INTO usage_counters AS u (organization_id, month, scans) \
         SELECT $1, $2, 1 WHERE $3 > 0 \
         ON CONFLICT (organization_id, month) \
         DO UPDATE SET scans = u.scans + 1 WHERE u.scans < $3 \
         RETURNING u.scans",
    )
    .bind(organization_id.as_str())
    .bind(month)
    .bind(big(scans_limit))
    .fetch_optional(&mut *tx)
    .await
    .map_err(store_error)?;
    Ok(counted.is_some())
}
