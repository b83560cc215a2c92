//! Rate-limit counters and idempotency records.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::PgPool;
use xf_core::store::{
    GuardStore, IdempotencyClaim, IdempotencyRequest, RateBucket, RateOutcome, StoreResult,
    StoredResponse,
};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::batch::{BatchFuture, Batcher};
use crate::error::store_error;
use crate::rows::{self, at, big, RowExt};
use crate::PgStore;

/// The batches of the request path's guards (see [`crate::batch`]): rate-limit counts,
/// idempotency claims and completions. One per store and its clones.
pub(crate) struct GuardBatches {
    rates: Batcher<Vec<RateBucket>, RateOutcome>,
    claims: Batcher<IdempotencyRequest, IdempotencyClaim>,
    completions: Batcher<Completion, ()>,
}

impl GuardBatches {
    pub(crate) const fn new() -> Self {
        Self {
            rates: Batcher::new(count),
            claims: Batcher::new(claim),
            completions: Batcher::new(complete),
        }
    }
}

impl std::fmt::Debug for GuardBatches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GuardBatches")
    }
}

/// A response to keep for a claimed key.
struct Completion {
    scope: String,
    fingerprint: String,
    response: StoredResponse,
}

/// Counts a batch of requests: a lone request takes `xf_hit_rate_limits` (0002, in one
/// statement when nothing is exceeded since 0019), several one call of
/// `xf_hit_rate_limits_many` (0006, 0009 and 0019), which counts each exactly as alone with
/// three statements per batch.
fn count(pool: PgPool, batch: Vec<Vec<RateBucket>>) -> BatchFuture<RateOutcome> {
    Box::pin(async move {
        match batch.as_slice() {
            [one] => hit_one(&pool, one).await.map(|outcome| vec![outcome]),
            _ => hit_many(&pool, &batch).await,
        }
    })
}

/// One request, one call of `xf_hit_rate_limits` (migrations 0002 and 0019): see their
/// comments for how it stays exact and all-or-nothing across instances.
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
async fn hit_many(pool: &PgPool, batch: &[Vec<RateBucket>]) -> StoreResult<Vec<RateOutcome>> {
    let mut requests = Vec::new();
    let mut names = Vec::new();
    let mut windows = Vec::new();
    let mut limits = Vec::new();
    let mut consume = Vec::new();
    for (index, buckets) in batch.iter().enumerate() {
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
    per_request(&found, batch.len(), 0, "rate", |_, row| {
        outcome(row.col("counts")?, row.col("exceeded")?)
    })
}

/// A batch function's rows in request order: each row's `request` column numbers its request
/// from `first`, and `decide` reads its outcome. Every request must have exactly one row.
fn per_request<T>(
    rows: &[PgRow],
    requests: usize,
    first: i32,
    what: &str,
    mut decide: impl FnMut(usize, &PgRow) -> StoreResult<T>,
) -> StoreResult<Vec<T>> {
    let mut outcomes: Vec<Option<T>> = std::iter::repeat_with(|| None).take(requests).collect();
    for row in rows {
        let request: i32 = row.col("request")?;
        let index = request
            .checked_sub(first)
            .and_then(|index| usize::try_from(index).ok())
            .filter(|&index| index < requests)
            .ok_or_else(|| {
                StoreError::Internal(format!("unknown request {request} in a {what} batch"))
            })?;
        if outcomes[index].is_some() {
            return Err(StoreError::Internal(format!(
                "request {request} answered twice in a {what} batch"
            )));
        }
        outcomes[index] = Some(decide(index, row)?);
    }
    outcomes
        .into_iter()
        .map(|outcome| {
            outcome.ok_or_else(|| StoreError::Internal(format!("a {what} batch skipped a request")))
        })
        .collect()
}

/// Claims a batch of keys with one call of `xf_claim_idempotency_keys` (migration 0018),
/// which decides each claim as [`GuardStore::claim_idempotency_key`] says, one after the
/// other, in the order of their scopes.
fn claim(pool: PgPool, batch: Vec<IdempotencyRequest>) -> BatchFuture<IdempotencyClaim> {
    Box::pin(async move {
        let scopes: Vec<&str> = batch.iter().map(|r| r.scope.as_str()).collect();
        let fingerprints: Vec<&str> = batch.iter().map(|r| r.fingerprint.as_str()).collect();
        let nows: Vec<DateTime<Utc>> = batch.iter().map(|r| at(r.now)).collect();
        let expired: Vec<DateTime<Utc>> = batch.iter().map(|r| at(r.expired_before)).collect();
        let stale: Vec<DateTime<Utc>> = batch.iter().map(|r| at(r.stale_before)).collect();
        let found = sqlx::query(
            "SELECT request, acquired, held_fingerprint, held_status, held_body \
             FROM xf_claim_idempotency_keys($1::text[], $2::text[], $3::timestamptz[], \
             $4::timestamptz[], $5::timestamptz[])",
        )
        .bind(&scopes)
        .bind(&fingerprints)
        .bind(&nows)
        .bind(&expired)
        .bind(&stale)
        .fetch_all(&pool)
        .await
        .map_err(store_error)?;
        // The function numbers requests from 1 (`WITH ORDINALITY`).
        per_request(&found, batch.len(), 1, "claim", |index, row| {
            if row.col::<bool>("acquired")? {
                Ok(IdempotencyClaim::Acquired)
            } else {
                declined(
                    &batch[index].fingerprint,
                    row.col("held_fingerprint")?,
                    row.col("held_status")?,
                    row.col("held_body")?,
                )
            }
        })
    })
}

/// Why a claim declined, from the record that made it: another fingerprint's, a finished one
/// to replay, or one still running.
fn declined(
    fingerprint: &str,
    held_fingerprint: Option<String>,
    status: Option<i32>,
    body: Option<String>,
) -> StoreResult<IdempotencyClaim> {
    let held = held_fingerprint.ok_or_else(|| {
        StoreError::Internal("idempotency record vanished while locked".to_owned())
    })?;
    if held != fingerprint {
        return Ok(IdempotencyClaim::Mismatch);
    }
    match (status, body) {
        (Some(status), Some(body)) => Ok(IdempotencyClaim::Replay(StoredResponse {
            status: u16::try_from(status).map_err(|_| {
                StoreError::Internal(format!("stored status out of range: {status}"))
            })?,
            body,
        })),
        _ => Ok(IdempotencyClaim::InUse),
    }
}

/// Keeps a batch of responses with one call of `xf_complete_idempotency_keys` (0018).
fn complete(pool: PgPool, batch: Vec<Completion>) -> BatchFuture<()> {
    Box::pin(async move {
        let scopes: Vec<&str> = batch.iter().map(|c| c.scope.as_str()).collect();
        let fingerprints: Vec<&str> = batch.iter().map(|c| c.fingerprint.as_str()).collect();
        let statuses: Vec<i32> = batch.iter().map(|c| i32::from(c.response.status)).collect();
        let bodies: Vec<&str> = batch.iter().map(|c| c.response.body.as_str()).collect();
        sqlx::query(
            "SELECT xf_complete_idempotency_keys($1::text[], $2::text[], $3::integer[], \
             $4::text[])",
        )
        .bind(&scopes)
        .bind(&fingerprints)
        .bind(&statuses)
        .bind(&bodies)
        .execute(&pool)
        .await
        .map_err(store_error)?;
        Ok(vec![(); batch.len()])
    })
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
        self.guards.rates.submit(&self.pool, buckets.to_vec()).await
    }

    async fn claim_idempotency_key(
        &self,
        request: &IdempotencyRequest,
    ) -> StoreResult<IdempotencyClaim> {
        self.guards.claims.submit(&self.pool, request.clone()).await
    }

    async fn complete_idempotency_key(
        &self,
        scope: &str,
        fingerprint: &str,
        response: &StoredResponse,
    ) -> StoreResult<()> {
        let completion = Completion {
            scope: scope.to_owned(),
            fingerprint: fingerprint.to_owned(),
            response: response.clone(),
        };
        self.guards.completions.submit(&self.pool, completion).await
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
