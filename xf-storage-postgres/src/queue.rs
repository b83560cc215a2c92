//! Jobs, the engine's side: claim, heartbeat, finish, release, rescue, listen (also for new
//! outbox events, which wake webhook delivery).

use std::collections::HashMap;
use xf_core::store::text_rule::*;

use async_trait::async_trait;
use sqlx::postgres::PgListener;
use sqlx::PgConnection;
use uuid::Uuid;
use xf_core::ids::JobId;
use xf_core::model::JobStatus;
use xf_core::store::{
    Attempt, AttemptOutcome, AttemptState, AttemptToken, ClaimRequest, ClaimedJob, Finish,
    QueueListener, QueueSignal, QueueStore, RescueReport, StoreResult, LEASE_EXPIRED_ERROR,
};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::error::store_error;
use crate::rows::{self, at, RowExt, JOB_COLUMNS};
use crate::{all, PgStore};

/// The channel of new jobs (fired by the `jobs_ready_notify` trigger, and by releases and
/// rescues).
const READY_CHANNEL: &str = "xf_jobs_ready";
/// The channel of cancelled running jobs; the payload is the job id.
const CANCEL_CHANNEL: &str = "xf_job_cancel";
/// The channel of new outbox events (fired by the `events_written_notify` trigger).
const EVENTS_CHANNEL: &str = "xf_events";

impl PgStore {
    /// Wakes idle workers (after jobs went back to pending).
    async fn notify_ready(&self) -> StoreResult<()> {
        sqlx::query("SELECT pg_notify($1, '')")
            .bind(READY_CHANNEL)
            .execute(&self.pool)
            .await
            .map_err(store_error)?;
        Ok(())
    }
}

#[async_trait]
impl QueueStore for PgStore {
    async fn claim_jobs(&self, request: &ClaimRequest) -> StoreResult<Vec<ClaimedJob>> {
        if request.limit == 0 || request.job_types.is_empty() {
            return Ok(Vec::new());
        }
        // One statement (the function `xf_claim_jobs` of migration 0003): pick the oldest due
        // jobs nobody else has locked and start an attempt on each.
        let rows = sqlx::query(&format!(
            "SELECT {JOB_COLUMNS}, attempt_token FROM xf_claim_jobs($1, $2, $3, $4)"
        ))
        .bind(at(request.now))
        .bind(&request.job_types)
        .bind(i32::try_from(request.limit).unwrap_or(i32::MAX))
        .bind(at(request.lease_expires_at))
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        let mut claimed = all(rows, |row| {
            let job = rows::job(row)?;
            Ok(ClaimedJob {
                attempt: Attempt {
                    job_id: job.id.clone(),
                    token: AttemptToken::from_uuid(row.col::<Uuid>("attempt_token")?),
                },
                job,
            })
        })?;
        claimed.sort_by(|a, b| (a.job.run_at, &a.job.id).cmp(&(b.job.run_at, &b.job.id)));
        Ok(claimed)
    }

    async fn heartbeat(
        &self,
        attempt: &Attempt,
        progress: Option<u8>,
        lease_expires_at: Timestamp,
    ) -> StoreResult<AttemptState> {
        let row = sqlx::query(
            "WITH beat AS ( \
                 UPDATE jobs SET lease_expires_at = $3, \
                        progress = GREATEST(progress, LEAST(COALESCE($4, 0), 100)) \
                 WHERE id = $1 AND attempt_token = $2 AND status = 'processing' \
                 RETURNING 1 \
             ) \
             SELECT EXISTS (SELECT 1 FROM beat) AS running, \
                    EXISTS (SELECT 1 FROM jobs WHERE id = $1 AND attempt_token = $2 \
                            AND status = 'cancelled') AS cancelled",
        )
        .bind(attempt.job_id.as_str())
        .bind(attempt.token.as_uuid())
        .bind(at(lease_expires_at))
        .bind(progress.map(i16::from))
        .fetch_one(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(if row.col::<bool>("running")? {
            AttemptState::Running
        } else if row.col::<bool>("cancelled")? {
            AttemptState::Cancelled
        } else {
            AttemptState::Lost
        })
    }

    async fn finish_jobs(
        &self,
        finishes: &[Finish],
        now: Timestamp,
    ) -> StoreResult<Vec<Option<JobStatus>>> {
        let finishes = &*stored_all(finishes);
        let mut connection = self.pool.acquire().await.map_err(store_error)?;
        let reached = finish_attempts(&mut connection, finishes, now).await?;
        drop(connection);
        if reached.contains(&Some(JobStatus::Pending)) {
            self.notify_ready().await?;
        }
        Ok(reached)
    }

    async fn release_job(&self, attempt: &Attempt, now: Timestamp) -> StoreResult<bool> {
        let released = sqlx::query(
            "UPDATE jobs SET status = 'pending', attempts = attempts - 1, run_at = $3, \
                    attempt_token = NULL, lease_expires_at = NULL \
             WHERE id = $1 AND attempt_token = $2 AND status = 'processing'",
        )
        .bind(attempt.job_id.as_str())
        .bind(attempt.token.as_uuid())
        .bind(at(now))
        .execute(&self.pool)
        .await
        .map_err(store_error)?
        .rows_affected()
            == 1;
        if released {
            self.notify_ready().await?;
        }
        Ok(released)
    }

    async fn rescue_expired(&self, now: Timestamp) -> StoreResult<RescueReport> {
        // SKIP LOCKED: a job whose heartbeat is being written right now is not expired, and a
        // rescue running on another instance has it already.
        let row = sqlx::query(
            "WITH expired AS ( \
                 SELECT id AS expired_id FROM jobs \
                 WHERE status = 'processing' AND lease_expires_at < $1 \
                 FOR UPDATE SKIP LOCKED \
             ), changed AS ( \
                 UPDATE jobs SET \
                     status = CASE WHEN attempts < max_attempts THEN 'pending' ELSE 'failed' END, \
                     error = CASE WHEN attempts < max_attempts THEN error \
                                  ELSE replace($2, '{max}', max_attempts::text) END, \
                     completed_at = CASE WHEN attempts < max_attempts THEN NULL ELSE $1 END, \
                     run_at = CASE WHEN attempts < max_attempts THEN $1 ELSE run_at END, \
                     attempt_token = NULL, lease_expires_at = NULL \
                 FROM expired WHERE id = expired_id \
                 RETURNING id, organization_id, status, property_id, counted_month \
             ), outbox AS ( \
                 INSERT INTO events (id, organization_id, event_type, job_id, created_at) \
                 SELECT xf_new_id('evt'), organization_id, 'job.failed', id, $1 \
                 FROM changed WHERE status = 'failed' AND property_id IS NOT NULL \
             ), given_back AS ( \
                 UPDATE usage_counters u SET scans = GREATEST(u.scans - g.n, 0) \
                 FROM (SELECT organization_id, counted_month, count(*) AS n FROM changed \
                       WHERE status = 'failed' AND counted_month IS NOT NULL \
                       GROUP BY organization_id, counted_month) g \
                 WHERE u.organization_id = g.organization_id AND u.month = g.counted_month \
             ) \
             SELECT count(*) FILTER (WHERE status = 'pending') AS requeued, \
                    count(*) FILTER (WHERE status = 'failed') AS failed \
             FROM changed",
        )
        .bind(at(now))
        .bind(LEASE_EXPIRED_ERROR)
        .fetch_one(&self.pool)
        .await
        .map_err(store_error)?;
        let report = RescueReport {
            requeued: row.count("requeued")?,
            failed: row.count("failed")?,
        };
        if report.requeued > 0 {
            self.notify_ready().await?;
        }
        Ok(report)
    }

    async fn listen(&self) -> StoreResult<Box<dyn QueueListener>> {
        let mut listener = PgListener::connect_with(&self.pool)
            .await
            .map_err(store_error)?;
        listener
            .listen_all([READY_CHANNEL, CANCEL_CHANNEL, EVENTS_CHANNEL])
            .await
            .map_err(store_error)?;
        Ok(Box::new(PgQueueListener(listener)))
    }
}

/// Notifications on the queue's channels, on a connection of its own.
#[derive(Debug)]
struct PgQueueListener(PgListener);

#[async_trait]
impl QueueListener for PgQueueListener {
    async fn next(&mut self) -> StoreResult<QueueSignal> {
        loop {
            // `recv` reconnects by itself after a lost connection; notifications sent
            // meanwhile are lost, which the workers' polling makes up for.
            let notification = self.0.recv().await.map_err(store_error)?;
            match notification.channel() {
                CANCEL_CHANNEL => match JobId::parse(notification.payload()) {
                    Ok(id) => return Ok(QueueSignal::CancelRequested(id)),
                    Err(_) => continue,
                },
                EVENTS_CHANNEL => return Ok(QueueSignal::EventsWritten),
                _ => return Ok(QueueSignal::JobsReady),
            }
        }
    }
}

/// Records how attempts ended, as [`QueueStore::finish_jobs`] says, in one statement on
/// `connection` (so a caller can make it part of a larger transaction); waking workers for
/// retries is the caller's. The answer is per attempt, in order: the state its job reached, or
/// `None` when the attempt was not current.
pub(crate) async fn finish_attempts(
    connection: &mut PgConnection,
    finishes: &[Finish],
    now: Timestamp,
) -> StoreResult<Vec<Option<JobStatus>>> {
    if finishes.is_empty() {
        return Ok(Vec::new());
    }
    let mut ids = Vec::with_capacity(finishes.len());
    let mut tokens = Vec::with_capacity(finishes.len());
    let mut kinds = Vec::with_capacity(finishes.len());
    let mut results = Vec::with_capacity(finishes.len());
    let mut errors = Vec::with_capacity(finishes.len());
    let mut retry_at = Vec::with_capacity(finishes.len());
    for finish in finishes {
        ids.push(finish.attempt.job_id.as_str());
        tokens.push(finish.attempt.token.as_uuid());
        let (kind, result, error, run_at) = match &finish.outcome {
            AttemptOutcome::Completed(value) => ("completed", Some(value.to_string()), None, None),
            AttemptOutcome::Failed(error) => ("failed", None, Some(error.as_str()), None),
            AttemptOutcome::Retry { error, run_at } => {
                ("retry", None, Some(error.as_str()), Some(at(*run_at)))
            }
            AttemptOutcome::Internal { error, retry_at } => {
                ("internal", None, Some(error.as_str()), retry_at.map(at))
            }
        };
        kinds.push(kind);
        results.push(result);
        errors.push(error);
        retry_at.push(run_at);
    }
    // One statement for the whole batch: each attempt that is still current moves its
    // job, and every job that reached a final state gets its event, atomically. A retry
    // (and a failure of xf's own with a retry time) goes back to pending unless its attempts
    // are used up; a counted job that fails for a reason of xf's own gives its scan back.
    let rows = sqlx::query(
        "WITH input AS ( \
             SELECT *, kind IN ('retry', 'internal') AND retry_at IS NOT NULL AS retries \
             FROM UNNEST($1::text[], $2::uuid[], $3::text[], $4::text[], \
                         $5::text[], $6::timestamptz[]) \
                 AS i(job_id, token, kind, result, error, retry_at) \
         ), done AS ( \
             UPDATE jobs j SET \
                 status = CASE WHEN i.kind = 'completed' THEN 'completed' \
                               WHEN i.retries AND j.attempts < j.max_attempts THEN 'pending' \
                               ELSE 'failed' END, \
                 progress = CASE WHEN i.kind = 'completed' THEN 100 ELSE j.progress END, \
                 result = CASE WHEN i.kind = 'completed' THEN i.result::jsonb END, \
                 error = CASE WHEN i.kind = 'completed' THEN NULL ELSE i.error END, \
                 completed_at = CASE WHEN i.retries AND j.attempts < j.max_attempts \
                                         THEN NULL ELSE $7 END, \
                 run_at = CASE WHEN i.retries AND j.attempts < j.max_attempts \
                                   THEN i.retry_at ELSE j.run_at END, \
                 attempt_token = NULL, lease_expires_at = NULL \
             FROM input i \
             WHERE j.id = i.job_id AND j.attempt_token = i.token AND j.status = 'processing' \
             RETURNING j.id, j.organization_id, j.status, j.property_id, j.counted_month, \
                       i.kind \
         ), outbox AS ( \
             INSERT INTO events (id, organization_id, event_type, job_id, created_at) \
             SELECT xf_new_id('evt'), organization_id, 'job.' || status, id, $7 \
             FROM done WHERE status <> 'pending' AND property_id IS NOT NULL \
         ), given_back AS ( \
             UPDATE usage_counters u SET scans = GREATEST(u.scans - g.n, 0) \
             FROM (SELECT organization_id, counted_month, count(*) AS n FROM done \
                   WHERE status = 'failed' AND kind = 'internal' \
                     AND counted_month IS NOT NULL \
                   GROUP BY organization_id, counted_month) g \
             WHERE u.organization_id = g.organization_id AND u.month = g.counted_month \
         ) \
         SELECT id, status FROM done",
    )
    .bind(&ids)
    .bind(&tokens)
    .bind(&kinds)
    .bind(&results)
    .bind(&errors)
    .bind(&retry_at)
    .bind(at(now))
    .fetch_all(&mut *connection)
    .await
    .map_err(store_error)?;
    let mut reached = HashMap::with_capacity(rows.len());
    for row in &rows {
        let status: String = row.col("status")?;
        let status = JobStatus::parse(&status)
            .ok_or_else(|| StoreError::internal(format!("unknown job status {status:?}")))?;
        reached.insert(row.col::<String>("id")?, status);
    }
    Ok(ids.iter().map(|id| reached.get(*id).copied()).collect())
}
