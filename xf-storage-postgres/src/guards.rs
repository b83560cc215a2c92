//! Rate-limit counters and idempotency records.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::PgPool;
use tokio::sync::{mpsc, oneshot};
use xf_core::store::{
    GuardStore, IdempotencyClaim, IdempotencyRequest, RateBucket, RateOutcome, StoreResult,
    StoredResponse,
};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::error::store_error;
use crate::rows::{self, at, big, RowExt};
use crate::PgStore;

/// A request waiting to be counted, and where its answer goes.
pub(crate) type PendingHit = (Vec<RateBucket>, oneshot::Sender<StoreResult<RateOutcome>>);

/// The most requests one batch counts.
const MAX_BATCH: usize = 256;

/// Counts waiting requests, gathered into batches: whatever is waiting when the previous
/// batch returns goes in one call of `xf_hit_rate_limits_many` (migrations 0006 and 0009),
/// which counts each exactly as alone with three statements per batch; a lone request takes
/// `xf_hit_rate_limits` (0002). So a busy instance makes one round trip for many requests,
/// and an idle one answers at once.
///
/// When the database cannot be reached, a batch waits out the pool's acquire time-out; the
/// requests that queued behind it are then answered `Unavailable` at once, as are those that
/// arrive within [`OUTAGE_FAST_FAIL`] of it, so that no request waits for two time-outs in a
/// row (docs/limits.md's bound on answers during an outage).
async fn count_batches(pool: PgPool, mut waiting: mpsc::UnboundedReceiver<PendingHit>) {
    let mut down: Option<(tokio::time::Instant, StoreError)> = None;
    while let Some(first) = waiting.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match waiting.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        if let Some((since, error)) = &down {
            if since.elapsed() < OUTAGE_FAST_FAIL {
                for (_, reply) in batch {
                    let _ = reply.send(Err(error.clone()));
                }
                continue;
            }
            down = None;
        }
        let outcomes = if batch.len() == 1 {
            hit_one(&pool, &batch[0].0)
                .await
                .map(|outcome| vec![outcome])
        } else {
            hit_many(&pool, &batch).await
        };
        match outcomes {
            Ok(outcomes) => {
                for ((_, reply), outcome) in batch.into_iter().zip(outcomes) {
                    let _ = reply.send(Ok(outcome));
                }
            }
            Err(error) => {
                if matches!(error, StoreError::Unavailable(_)) {
                    down = Some((tokio::time::Instant::now(), error.clone()));
                    // Whoever queued while this batch waited has waited long enough.
                    while let Ok((_, reply)) = waiting.try_recv() {
                        let _ = reply.send(Err(error.clone()));
                    }
                }
                for (_, reply) in batch {
                    let _ = reply.send(Err(error.clone()));
                }
            }
        }
    }
}

/// How long after a batch found the database unreachable new requests are answered
/// `Unavailable` without trying.
const OUTAGE_FAST_FAIL: Duration = Duration::from_millis(500);

/// One request, one call of `xf_hit_rate_limits` (migration 0002): see its comment for how
/// it stays exact and all-or-nothing across instances.
async fn hit_one(pool: &PgPool, buckets: &[RateBucket]) -> StoreResult<RateOutcome> {
    let names: Vec<&str> = buckets.iter().map(|b| &*b.name).collect();
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
    .fetch_one(pool)
    .await
    .map_err(store_error)?;
    outcome(row.col("counts")?, row.col("exceeded")?)
}

/// Several requests, one call of `xf_hit_rate_limits_many`; the outcomes in request order.
async fn hit_many(pool: &PgPool, batch: &[PendingHit]) -> StoreResult<Vec<RateOutcome>> {
    let mut requests = Vec::new();
    let mut names = Vec::new();
    let mut windows = Vec::new();
    let mut limits = Vec::new();
    let mut consume = Vec::new();
    for (index, (buckets, _)) in batch.iter().enumerate() {
        let request = i32::try_from(index).unwrap_or(i32::MAX);
        for bucket in buckets {
            requests.push(request);
            names.push(&*bucket.name);
            windows.push(at(bucket.window_start));
            limits.push(big(bucket.limit));
            consume.push(bucket.consume);
        }
    }
    let found = sqlx::query(
        "SELECT request, counts, exceeded FROM xf_hit_rate_limits_many($1::integer[], \
         $2::text[], $3::timestamptz[], $4::bigint[], $5::boolean[])",
    )
    .bind(&requests)
    .bind(&names)
    .bind(&windows)
    .bind(&limits)
    .bind(&consume)
    .fetch_all(pool)
    .await
    .map_err(store_error)?;
    let mut outcomes: Vec<Option<RateOutcome>> = vec![None; batch.len()];
    for row in &found {
        let request: i32 = row.col("request")?;
        let slot = usize::try_from(request)
            .ok()
            .and_then(|index| outcomes.get_mut(index))
            .ok_or_else(|| {
                StoreError::Internal(format!("unknown request {request} in a rate batch"))
            })?;
        *slot = Some(outcome(row.col("counts")?, row.col("exceeded")?)?);
    }
    outcomes
        .into_iter()
        .map(|outcome| {
            outcome.ok_or_else(|| StoreError::Internal("a rate batch skipped a request".into()))
        })
        .collect()
}

/// A request's outcome from the functions' arrays.
fn outcome(counts: Vec<i64>, exceeded: Vec<i32>) -> StoreResult<RateOutcome> {
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

#[async_trait]
impl GuardStore for PgStore {
    async fn hit_rate_limits(&self, buckets: &[RateBucket]) -> StoreResult<RateOutcome> {
        let sender = self.rates.get_or_init(|| {
            let (sender, receiver) = mpsc::unbounded_channel();
            tokio::spawn(count_batches(self.pool.clone(), receiver));
            sender
        });
        let (reply, answer) = oneshot::channel();
        if sender.send((buckets.to_vec(), reply)).is_ok() {
            if let Ok(outcome) = answer.await {
                return outcome;
            }
        }
        // The batching task is gone (its runtime ended): count this request alone.
        hit_one(&self.pool, buckets).await
    }

    async fn claim_idempotency_key(
        &self,
        request: &IdempotencyRequest,
    ) -> StoreResult<IdempotencyClaim> {
        let mut tx = self.begin().await?;
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

    async fn claim_connect_state(
        &self,
        id: &str,
        expires_at: Timestamp,
        now: Timestamp,
    ) -> StoreResult<bool> {
        // The primary key decides between simultaneous claims; expired ids go on the way.
        let claimed: Option<i32> = sqlx::query_scalar(
            "WITH expired AS (DELETE FROM connect_states WHERE expires_at < $3) \
             INSERT INTO connect_states (id, expires_at) VALUES ($1, $2) \
             ON CONFLICT (id) DO NOTHING RETURNING 1",
        )
        .bind(id)
        .bind(at(expires_at))
        .bind(at(now))
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(claimed.is_some())
    }

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
}
