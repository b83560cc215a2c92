//! Guards of the request path: rate-limit counters and idempotency records, and their purge.

use async_trait::async_trait;

use super::StoreResult;
use crate::time::Timestamp;

/// One rate-limit counter taking part in a check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateBucket {
    /// Names the counter, e.g. `key:key_…:read` (shared: a caller's names are built once).
    pub name: std::sync::Arc<str>,
    /// Start of the fixed window the counter belongs to.
    pub window_start: Timestamp,
    /// The most the counter may reach in the window.
    pub limit: u64,
    /// Whether this request counts against it (`false`: only read it).
    pub consume: bool,
}

/// The outcome of [`GuardStore::hit_rate_limits`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateOutcome {
    /// Each bucket's count after the operation, in the order given.
    pub counts: Vec<u64>,
    /// Indexes of the consumed buckets that were already at their limit. When non-empty
    /// nothing was counted.
    pub exceeded: Vec<usize>,
}

/// A response kept for an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// The HTTP status it was sent with.
    pub status: u16,
    /// The response's `data`, serialized JSON.
    pub body: String,
}

/// The outcome of [`GuardStore::claim_idempotency_key`].
///
/// Not `#[non_exhaustive]`: every store (or edge) that is given one matches on it, and a
/// variant added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdempotencyClaim {
    /// The caller now owns the key and must complete or release it.
    Acquired,
    /// A finished request with the same fingerprint: replay its response.
    Replay(StoredResponse),
    /// The first request with this key and fingerprint is still running.
    InUse,
    /// The key was used with a different fingerprint.
    Mismatch,
}

/// Everything about a claim on an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyRequest {
    /// Organization, key mode and the key string, joined.
    pub scope: String,
    /// Hash of method, path and body.
    pub fingerprint: String,
    /// Now.
    pub now: Timestamp,
    /// Records created before this are expired (24 h) and are replaced.
    pub expired_before: Timestamp,
    /// Unfinished claims made before this belong to dead requests (60 s) and may be taken over.
    pub stale_before: Timestamp,
}

/// A response kept for an idempotency key together with the write it answers (see
/// [`PropertyStore::insert_property_keeping`](super::PropertyStore::insert_property_keeping)):
/// what [`GuardStore::complete_idempotency_key`] is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptResponse {
    /// The claimed record's scope.
    pub scope: String,
    /// The claiming request's fingerprint: nothing is kept unless the record still has it.
    pub fingerprint: String,
    /// The response to replay.
    pub response: StoredResponse,
}

/// Rate-limit counters and idempotency records.
#[async_trait]
pub trait GuardStore: Send + Sync {
    /// Checks and counts a request against fixed-window counters, atomically: if every
    /// bucket with `consume` is below its limit, each of them is incremented; otherwise none
    /// is, and `exceeded` lists the ones at their limit. Buckets without `consume` are only
    /// read. Counters of windows other than the given one do not count.
    async fn hit_rate_limits(&self, buckets: &[RateBucket]) -> StoreResult<RateOutcome>;

    /// Claims an idempotency key for a request, or reports why it cannot be claimed. Atomic:
    /// of simultaneous claims on a free scope exactly one is `Acquired`. In order:
    ///
    /// - no record for the scope, or one created before `expired_before`: a new record owned
    ///   by this fingerprint replaces it, `Acquired`;
    /// - a record with another fingerprint: `Mismatch` (even if its claim is stale);
    /// - a completed record: `Replay` of its response;
    /// - an unfinished claim made before `stale_before`: taken over (its claim time becomes
    ///   `now`), `Acquired`;
    /// - otherwise `InUse`.
    async fn claim_idempotency_key(
        &self,
        request: &IdempotencyRequest,
    ) -> StoreResult<IdempotencyClaim>;

    /// Stores the response of the claimed request, so retries replay it. Does nothing unless
    /// the scope's record has this fingerprint.
    async fn complete_idempotency_key(
        &self,
        scope: &str,
        fingerprint: &str,
        response: &StoredResponse,
    ) -> StoreResult<()>;

    /// Drops an unfinished claim (the response is not to be kept), so the key is free again
    /// for any fingerprint. Does nothing unless the scope holds an unfinished claim with this
    /// fingerprint: a completed record stays and keeps replaying.
    async fn release_idempotency_key(&self, scope: &str, fingerprint: &str) -> StoreResult<()>;

    /// Records a connect flow's state `id` as used until `expires_at`, and forgets the ids that
    /// expired before `now`: `true` the first time, `false` when the id was used already.
    /// Atomic: of simultaneous claims of one id, exactly one is `true`.
    async fn claim_connect_state(
        &self,
        id: &str,
        expires_at: Timestamp,
        now: Timestamp,
    ) -> StoreResult<bool>;

    /// Deletes rate-limit windows that started before `windows_before` and idempotency
    /// records created before `idempotency_before`; returns how many rows went.
    async fn purge_expired(
        &self,
        windows_before: Timestamp,
        idempotency_before: Timestamp,
    ) -> StoreResult<u64>;
}
