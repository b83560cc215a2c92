//! Rate-limit counters and idempotency records.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::Query;
use sqlx::{PgPool, Postgres};
use xf_core::store::text_rule::*;
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

/// Counts a batch of requests (one or more): one statement when every request fits,
/// otherwise one call of `xf_hit_rate_limits_many` (migrations 0006, 0009 and 0019), which
/// decides them one after the other. Either way each request is counted exactly as alone,
/// all or nothing, across instances (migration 0027).
fn count(pool: PgPool, batch: Vec<Vec<RateBucket>>) -> BatchFuture<RateOutcome> {
    Box::pin(async move { hit_many(&pool, &batch).await })
}

/// The whole batch counted at once when each consumed counter stays within the smallest limit
/// its requests give it (0027): each counter's count before the batch, the peeked ones as
/// they are. `XFR01` when a counter would pass its limit, and then nothing was counted.
const COUNT_ALL: &str = "\
    WITH t AS ( \
        SELECT * FROM unnest($1::integer[], $2::text[], $3::timestamptz[], $4::bigint[], \
                             $5::boolean[]) AS u(req, name, window_start, lim, consume) \
    ), added AS ( \
        SELECT name, window_start, count(DISTINCT req) AS n, min(lim) AS lim \
        FROM t WHERE consume GROUP BY name, window_start \
    ), counted AS ( \
        INSERT INTO rate_limit_counters AS c (name, window_start, count) \
        SELECT name, window_start, n FROM added ORDER BY name COLLATE \"C\", window_start \
        ON CONFLICT (name, window_start) DO UPDATE SET count = c.count + EXCLUDED.count \
        RETURNING c.name, c.window_start, c.count \
    ) \
    SELECT k.name, k.window_start, k.count - a.n AS count \
    FROM counted AS k JOIN added AS a ON a.name = k.name AND a.window_start = k.window_start \
    WHERE xf_rate_batch_fits(k.count <= a.lim) \
    UNION ALL \
    SELECT p.name, p.window_start, coalesce(r.count, 0) \
    FROM (SELECT DISTINCT name, window_start FROM t WHERE NOT consume) AS p \
    LEFT JOIN rate_limit_counters AS r \
      ON r.name = p.name AND r.window_start = p.window_start \
    WHERE NOT EXISTS ( \
        SELECT 1 FROM added AS a WHERE a.name = p.name AND a.window_start = p.window_start)";

/// Several requests (or one); the outcomes in request order.
async fn hit_many(pool: &PgPool, batch: &[Vec<RateBucket>]) -> StoreResult<Vec<RateOutcome>> {
    let columns = RateColumns::of(batch);
    let all = columns.bound(COUNT_ALL).fetch_all(pool).await;
    match all {
        Ok(rows) => {
            let counters = rows
                .iter()
                .map(|row| {
                    Ok((
                        row.col("name")?,
                        row.col("window_start")?,
                        rows::unsigned(row.col("count")?, "rate limit count")?,
                    ))
                })
                .collect::<StoreResult<_>>()?;
            all_counted(batch, counters)
        }
        Err(error) if reaches_a_limit(&error) => in_order(pool, &columns, batch.len()).await,
        Err(error) => Err(store_error(error)),
    }
}

/// A batch's buckets as the parallel arrays the statements take: each bucket's request
/// number, counter name, window, limit and whether it is consumed.
struct RateColumns<'a> {
    requests: Vec<i32>,
    names: Vec<&'a str>,
    windows: Vec<DateTime<Utc>>,
    limits: Vec<i64>,
    consume: Vec<bool>,
}

impl<'a> RateColumns<'a> {
    fn of(batch: &'a [Vec<RateBucket>]) -> Self {
        let buckets = batch.iter().map(Vec::len).sum();
        let mut columns = Self {
            requests: Vec::with_capacity(buckets),
            names: Vec::with_capacity(buckets),
            windows: Vec::with_capacity(buckets),
            limits: Vec::with_capacity(buckets),
            consume: Vec::with_capacity(buckets),
        };
        for (index, request) in batch.iter().enumerate() {
            let number = i32::try_from(index).unwrap_or(i32::MAX);
            for bucket in request {
                columns.requests.push(number);
                columns.names.push(&bucket.name);
                columns.windows.push(at(bucket.window_start));
                columns.limits.push(big(bucket.limit));
                columns.consume.push(bucket.consume);
            }
        }
        columns
    }

    /// `sql` with the columns bound as its parameters `$1` to `$5`, in the fields' order.
    fn bound<'q>(&'q self, sql: &'q str) -> Query<'q, Postgres, PgArguments> {
        sqlx::query(sql)
            .bind(&self.requests)
            .bind(&self.names)
            .bind(&self.windows)
            .bind(&self.limits)
            .bind(&self.consume)
    }
}

/// The batch decided one request after the other by `xf_hit_rate_limits_many`; the outcomes
/// of its `requests` requests in order.
async fn in_order(
    pool: &PgPool,
    columns: &RateColumns<'_>,
    requests: usize,
) -> StoreResult<Vec<RateOutcome>> {
    let found = columns
        .bound(
            "SELECT request, counts, exceeded FROM xf_hit_rate_limits_many($1::integer[], \
             $2::text[], $3::timestamptz[], $4::bigint[], $5::boolean[])",
        )
        .fetch_all(pool)
        .await
        .map_err(store_error)?;
    per_request(&found, requests, 0, "rate", |_, row| {
        outcome(row.col("counts")?, row.col("exceeded")?)
    })
}

/// Whether a batch was refused as a whole because a counter would pass its limit (0027).
fn reaches_a_limit(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|error| error.code())
        .is_some_and(|code| code == "XFR01")
}

/// The outcomes of a batch whose every request was counted, from each counter's count before
/// the batch (`counters`: name, window, count): the requests in order, each adding one to
/// each distinct counter it consumes and seeing every counter it names as it then stands.
fn all_counted(
    batch: &[Vec<RateBucket>],
    mut counters: Vec<(String, DateTime<Utc>, u64)>,
) -> StoreResult<Vec<RateOutcome>> {
    let slot = |counters: &[(String, DateTime<Utc>, u64)], bucket: &RateBucket| {
        let window = at(bucket.window_start);
        counters
            .iter()
            .position(|(name, start, _)| **name == *bucket.name && *start == window)
            .ok_or_else(|| {
                StoreError::internal(format!(
                    "the rate counter {} is missing from its batch's answer",
                    bucket.name
                ))
            })
    };
    let mut outcomes = Vec::with_capacity(batch.len());
    for buckets in batch {
        let slots = buckets
            .iter()
            .map(|bucket| slot(&counters, bucket))
            .collect::<StoreResult<Vec<usize>>>()?;
        for (index, (bucket, &at_slot)) in buckets.iter().zip(&slots).enumerate() {
            let counted_already = buckets[..index]
                .iter()
                .zip(&slots)
                .any(|(earlier, &earlier_slot)| earlier.consume && earlier_slot == at_slot);
            if bucket.consume && !counted_already {
                counters[at_slot].2 += 1;
            }
        }
        outcomes.push(RateOutcome {
            counts: slots.iter().map(|&at_slot| counters[at_slot].2).collect(),
            exceeded: Vec::new(),
        });
    }
    Ok(outcomes)
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
                StoreError::internal(format!("unknown request {request} in a {what} batch"))
            })?;
        if outcomes[index].is_some() {
            return Err(StoreError::internal(format!(
                "request {request} answered twice in a {what} batch"
            )));
        }
        outcomes[index] = Some(decide(index, row)?);
    }
    outcomes
        .into_iter()
        .map(|outcome| {
            outcome.ok_or_else(|| StoreError::internal(format!("a {what} batch skipped a request")))
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
    let held = held_fingerprint
        .ok_or_else(|| StoreError::internal("idempotency record vanished while locked"))?;
    if held != fingerprint {
        return Ok(IdempotencyClaim::Mismatch);
    }
    match (status, body) {
        (Some(status), Some(body)) => Ok(IdempotencyClaim::Replay(StoredResponse {
            status: u16::try_from(status).map_err(|_| {
                StoreError::internal(format!("stored status out of range: {status}"))
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
                    StoreError::internal(format!("negative rate bucket index: {index}"))
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
        let response = &*stored(response);
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use proptest::prelude::*;
    use xf_core::store::RateBucket;
    use xf_core::time::Timestamp;

    use super::{hit_many, in_order, RateColumns};
    use crate::testing::fresh_database;

    /// One bucket: which of four counters, its limit (mostly far, so that most batches fit),
    /// whether it is consumed.
    fn bucket() -> impl Strategy<Value = (usize, u64, bool)> {
        (
            0..4usize,
            prop::sample::select(vec![1u64, 3, 5, 100, 100, 100]),
            any::<bool>(),
        )
    }

    /// A batch counted by the store (one statement, or in order when a counter would pass its
    /// limit) answers every request and leaves every counter exactly as the in-order function
    /// does with the same batch from the same counts: far from the limits, near them and past
    /// them.
    #[test]
    fn a_batch_counted_at_once_is_counted_as_in_order() {
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let store = runtime.block_on(fresh_database());
        let pool = store.pool().clone();
        let window = Timestamp::parse_rfc3339("2026-11-29T10:00:00.000Z").expect("a timestamp");
        let cases = AtomicUsize::new(0);
        let config = ProptestConfig::with_cases(256);
        proptest!(config, |(
            before in prop::collection::vec(0u64..5, 4),
            batch in prop::collection::vec(prop::collection::vec(bucket(), 1..4), 1..8),
        )| {
            // Each case counts in counters of its own, `a…` by the store, `b…` in order.
            let case = cases.fetch_add(1, Ordering::Relaxed);
            let requests = |side: &str| -> Vec<Vec<RateBucket>> {
                batch.iter().map(|request| request.iter().map(|&(counter, limit, consume)| RateBucket {
                    name: format!("{side}{case}:{counter}").into(),
                    window_start: window,
                    limit,
                    consume,
                }).collect()).collect()
            };
            let (ours, theirs) = (requests("a"), requests("b"));
            let counters = |side: &str| -> Vec<u64> {
                runtime.block_on(async {
                    let mut counts = Vec::new();
                    for counter in 0..4 {
                        let count: Option<i64> = sqlx::query_scalar(
                            "SELECT count FROM rate_limit_counters WHERE name = $1",
                        )
                        .bind(format!("{side}{case}:{counter}"))
                        .fetch_optional(&pool)
                        .await
                        .expect("a counter");
                        counts.push(count.map_or(0, |count| u64::try_from(count).expect("a count")));
                    }
                    counts
                })
            };
            runtime.block_on(async {
                for side in ["a", "b"] {
                    for (counter, count) in before.iter().enumerate() {
                        sqlx::query(
                            "INSERT INTO rate_limit_counters (name, window_start, count) \
                             VALUES ($1, $2, $3)",
                        )
                        .bind(format!("{side}{case}:{counter}"))
                        .bind(window.as_datetime())
                        .bind(i64::try_from(*count).expect("a count"))
                        .execute(&pool)
                        .await
                        .expect("a counter");
                    }
                }
            });
            let counted = runtime.block_on(hit_many(&pool, &ours)).expect("counted");
            let columns = RateColumns::of(&theirs);
            let expected = runtime.block_on(in_order(&pool, &columns, theirs.len())).expect("counted in order");
            prop_assert_eq!(counted, expected);
            prop_assert_eq!(counters("a"), counters("b"));
        });
    }
}
