//! Authentication, plan entitlements, rate limits and idempotency: what runs before a use case.

use chrono::Duration;
use sha2::{Digest, Sha256};

use std::sync::Arc;

use super::key_cache::{KeyDigest, KnownKey, Lookup};
use super::{Caller, CallerInfo, Xf};
use crate::api::RateWindow;
use crate::auth;
use crate::error::{Error, Result};
use crate::model::{ApiKey, KeyMode, Organization};
use crate::params::IdempotencyKey;
use crate::plans::Entitlement;
use crate::store::{
    IdempotencyClaim, IdempotencyRequest, KeptResponse, RateBucket, StoredResponse,
};
use crate::time::Timestamp;

/// Idempotency records are kept this long.
pub(crate) const IDEMPOTENCY_TTL_HOURS: i64 = 24;
/// An unfinished claim older than this belongs to a request that died; it may be taken over.
const IDEMPOTENCY_STALE_SECS: i64 = 60;

/// How stale a key's stored `lastUsedAt` may be before a request with it writes it again.
const KEY_USE_GRANULARITY_MS: i64 = 60_000;

/// Whether a request reads or writes, for rate limiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestKind {
    /// GET.
    Read,
    /// POST, PATCH, DELETE.
    Write,
}

/// The outcome of a rate-limit check: the remaining counts for the headers, and whether the
/// request was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateCheck {
    /// Reads left for this key this hour.
    pub read_remaining: u64,
    /// The smaller of this key's writes left this hour and the organization's writes left today.
    pub write_remaining: u64,
    /// `Some(seconds until the exceeded window resets)` when the request is rejected.
    pub retry_after_secs: Option<u64>,
}

/// SHA-256 of a request's method, path and body: what idempotency compares and what
/// test-mode ids derive from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The fingerprint of a request.
    pub fn of(method: &str, path: &str, body: &[u8]) -> Self {
        let mut hasher = Sha256::new();
        for part in [method.as_bytes(), path.as_bytes()] {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part);
        }
        hasher.update(body);
        Self(hasher.finalize().into())
    }

    /// The raw digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

/// A claimed idempotency key that must be completed or abandoned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyTicket {
    scope: String,
    fingerprint: String,
}

/// A claimed key's answer to keep with the write that makes it, in the write's own transaction:
/// the claim's ticket, and how the write's result reads as the answer to keep (`None`: it
/// cannot be kept, and the caller completes or abandons the ticket as usual). Given to the
/// use cases that can keep it so ([`Xf::create_property_keeping`]); they return the kept
/// response when they did.
pub struct Keep<T> {
    ticket: IdempotencyTicket,
    render: Box<Render<T>>,
}

/// How a write's result reads as the answer to keep (see [`Keep`]).
type Render<T> = dyn Fn(&T) -> Option<StoredResponse> + Send + Sync;

impl<T> Keep<T> {
    /// Keeps `render`'s answer for `ticket`.
    pub fn new(
        ticket: IdempotencyTicket,
        render: impl Fn(&T) -> Option<StoredResponse> + Send + Sync + 'static,
    ) -> Self {
        Self {
            ticket,
            render: Box::new(render),
        }
    }

    /// What to keep for `value`, if it renders.
    pub(crate) fn kept(&self, value: &T) -> Option<KeptResponse> {
        (self.render)(value).map(|response| KeptResponse {
            scope: self.ticket.scope.clone(),
            fingerprint: self.ticket.fingerprint.clone(),
            response,
        })
    }
}

impl<T> std::fmt::Debug for Keep<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keep")
            .field("ticket", &self.ticket)
            .finish_non_exhaustive()
    }
}

/// How to go on after [`Xf::begin_idempotent`].
///
/// Not `#[non_exhaustive]`: every store (or edge) that is given one matches on it, and a
/// variant added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdempotencyStart {
    /// Run the request, then complete or abandon the ticket.
    Proceed(IdempotencyTicket),
    /// Send this stored response again.
    Replay(StoredResponse),
}

/// The three rate-limit windows of a caller at `now`: key reads per hour, key writes per hour,
/// organization writes per day, in that order.
fn rate_buckets(caller: &Caller, now: Timestamp, kind: Option<RequestKind>) -> [RateBucket; 3] {
    let hour = now.start_of_hour();
    let limits = &caller.limits;
    let [read, write, org_write] = caller.rate_names.clone();
    let writes = kind == Some(RequestKind::Write);
    [
        RateBucket {
            name: read,
            window_start: hour,
            limit: limits.read_per_hour,
            consume: kind == Some(RequestKind::Read),
        },
        RateBucket {
            name: write,
            window_start: hour,
            limit: limits.write_per_hour,
            consume: writes,
        },
        RateBucket {
            name: org_write,
            window_start: now.start_of_day(),
            limit: limits.org_write_daily,
            consume: writes,
        },
    ]
}

/// When window `bucket_index` of [`rate_buckets`], which started at `start`, resets.
fn window_end(bucket_index: usize, start: Timestamp) -> Timestamp {
    match bucket_index {
        2 => start.plus(Duration::days(1)),
        _ => start.plus(Duration::hours(1)),
    }
}

impl Xf {
    /// Finds the caller of a request by its API key and checks that the organization's plan
    /// has `entitlement`.
    ///
    /// A missing, unknown or revoked key is `ApiKeyInvalid`; a plan that lacks the
    /// entitlement (or that the catalog no longer has) is `PlanRequired`. Lookups are reused
    /// for [`XfBuilder::key_cache_ttl`](super::XfBuilder::key_cache_ttl) (see there).
    pub async fn authenticate(
        &self,
        key: Option<&str>,
        entitlement: Entitlement,
    ) -> Result<Caller> {
        let (claimed_mode, digest, cached) = self.cached_key(key)?;
        let known = match cached {
            Some(known) => known,
            None => {
                let asked = std::time::Instant::now();
                let hash = hex::encode(digest);
                let known = self
                    .store()
                    .find_api_key(&hash)
                    .await?
                    // A store that answers with another key's row is not believed.
                    .filter(|(api_key, _)| auth::hashes_match(&api_key.key_hash, &hash))
                    .map(|(api_key, organization)| Arc::new(self.known_key(api_key, organization)));
                self.inner.keys.put(&digest, known.clone(), asked);
                if let Some(known) = &known {
                    self.note_key_use(&known.api_key, claimed_mode).await;
                }
                known
            }
        };
        self.caller_of(known.as_deref(), claimed_mode, entitlement)
    }

    /// [`authenticate`](Self::authenticate)'s answer when it needs no store: for a missing or
    /// malformed key, and for a key looked up less than the key cache's lifetime ago. `None`
    /// when the store must be asked.
    pub fn authenticate_cached(
        &self,
        key: Option<&str>,
        entitlement: Entitlement,
    ) -> Option<Result<Caller>> {
        match self.cached_key(key) {
            Err(error) => Some(Err(error)),
            Ok((claimed_mode, _, cached)) => {
                let known = cached?;
                Some(self.caller_of(known.as_deref(), claimed_mode, entitlement))
            }
        }
    }

    /// A key's claimed mode and digest, and what the key cache holds for it (`None`: the
    /// store must be asked); `ApiKeyInvalid` for a missing or malformed key.
    fn cached_key(&self, key: Option<&str>) -> Result<(KeyMode, KeyDigest, Option<Lookup>)> {
        let key = key.ok_or(Error::ApiKeyInvalid)?;
        let claimed_mode = auth::mode_of(key).ok_or(Error::ApiKeyInvalid)?;
        let digest = auth::digest_key(key);
        Ok((claimed_mode, digest, self.inner.keys.get(&digest)))
    }

    /// Records that a request presented a live key of its stored mode, when the stored
    /// `lastUsedAt` is a minute old or more (so a key in use is written at most once a minute
    /// an instance: the key cache asks the store once its lifetime, this writes only when that
    /// answer is stale). A failed write is logged, not the request's failure.
    async fn note_key_use(&self, key: &ApiKey, claimed_mode: KeyMode) {
        if key.revoked_at.is_some() || key.mode != claimed_mode {
            return;
        }
        let now = self.now();
        let stale = key
            .last_used_at
            .is_none_or(|last| now.unix_millis() - last.unix_millis() >= KEY_USE_GRANULARITY_MS);
        if stale {
            if let Err(error) = self.store().touch_api_key(&key.id, now).await {
                tracing::warn!(key = %key.id, %error, "could not record a key's last use");
            }
        }
    }

    /// The caller a looked-up key authenticates as, if it is live, of the mode its prefix
    /// claims, and its plan has `entitlement`.
    fn caller_of(
        &self,
        known: Option<&KnownKey>,
        claimed_mode: KeyMode,
        entitlement: Entitlement,
    ) -> Result<Caller> {
        let known = known.ok_or(Error::ApiKeyInvalid)?;
        // The mode is the stored one; a key whose prefix disagrees with it was not issued by us.
        if known.api_key.revoked_at.is_some() || known.api_key.mode != claimed_mode {
            return Err(Error::ApiKeyInvalid);
        }
        match &known.caller {
            Some(caller) if caller.plan.has(entitlement) => Ok(caller.clone()),
            _ => Err(Error::PlanRequired {
                entitlement: entitlement.as_str(),
                plans: self.plans().names_with(entitlement),
            }),
        }
    }

    /// A key the store found, with the caller it authenticates as: its organization's plan
    /// from the catalog (none if the catalog lacks it), the plan's limits with the
    /// organization's overrides, and the names of its rate-limit counters.
    fn known_key(&self, api_key: ApiKey, organization: Organization) -> KnownKey {
        let caller = self.plans().get(&organization.plan).map(|plan| {
            Caller(Arc::new(CallerInfo {
                limits: plan.limits_with(&organization.limits),
                plan: plan.clone(),
                rate_names: [
                    format!("key:{}:read", api_key.id).into(),
                    format!("key:{}:write", api_key.id).into(),
                    format!("org:{}:write", organization.id).into(),
                ],
                key_id: api_key.id.clone(),
                mode: api_key.mode,
                organization,
            }))
        });
        KnownKey { api_key, caller }
    }

    /// Counts a request against the caller's windows, exactly across all instances sharing
    /// the store. A rejected request is not counted.
    pub async fn check_rate_limit(&self, caller: &Caller, kind: RequestKind) -> Result<RateCheck> {
        let now = self.now();
        let buckets = rate_buckets(caller, now, Some(kind));
        let outcome = self.store().hit_rate_limits(&buckets).await?;
        let counts = three_counts(&outcome.counts)?;
        let left = |i: usize| remaining(&buckets[i], counts[i]);
        // Window ends are worked out only for the exceeded buckets: a `Retry-After` needs them.
        let mut retry_after_secs = None;
        for &index in &outcome.exceeded {
            let bucket = buckets.get(index).ok_or_else(|| {
                Error::internal(format!(
                    "the store reported rate-limit bucket index {index} as exceeded, of 3 buckets"
                ))
            })?;
            let wait = now
                .seconds_until(window_end(index, bucket.window_start))
                .max(1);
            retry_after_secs = retry_after_secs.max(Some(wait));
        }
        if retry_after_secs.is_some() {
            let kind = match kind {
                RequestKind::Read => "read",
                RequestKind::Write => "write",
            };
            self.metrics().rate_limit_refused(kind);
        }
        Ok(RateCheck {
            read_remaining: left(0),
            write_remaining: left(1).min(left(2)),
            retry_after_secs,
        })
    }

    /// Starts an idempotent write: validates the key, then claims it for this request or says
    /// why not (`IdempotencyKeyInUse`, `IdempotencyKeyReused`), or hands back the response to
    /// replay. Scope: organization, key mode and key string.
    pub async fn begin_idempotent(
        &self,
        caller: &Caller,
        key: &IdempotencyKey,
        request: &Fingerprint,
    ) -> Result<IdempotencyStart> {
        let now = self.now();
        let ticket = IdempotencyTicket {
            scope: format!(
                "{}:{}:{}",
                caller.organization.id,
                caller.mode.as_str(),
                key.as_str()
            ),
            fingerprint: request.hex(),
        };
        let claim = self
            .store()
            .claim_idempotency_key(&IdempotencyRequest {
                scope: ticket.scope.clone(),
                fingerprint: ticket.fingerprint.clone(),
                now,
                expired_before: now.plus(Duration::hours(-IDEMPOTENCY_TTL_HOURS)),
                stale_before: now.plus(Duration::seconds(-IDEMPOTENCY_STALE_SECS)),
            })
            .await?;
        match claim {
            IdempotencyClaim::Acquired => Ok(IdempotencyStart::Proceed(ticket)),
            IdempotencyClaim::Replay(response) => {
                self.metrics().idempotency_replayed();
                Ok(IdempotencyStart::Replay(response))
            }
            IdempotencyClaim::InUse => Err(Error::IdempotencyKeyInUse),
            IdempotencyClaim::Mismatch => Err(Error::IdempotencyKeyReused),
        }
    }

    /// Keeps the response of a claimed request for replays.
    pub async fn complete_idempotent(
        &self,
        ticket: &IdempotencyTicket,
        response: &StoredResponse,
    ) -> Result<()> {
        Ok(self
            .store()
            .complete_idempotency_key(&ticket.scope, &ticket.fingerprint, response)
            .await?)
    }

    /// Frees a claimed key whose response is not kept (validation failures, 429s, 5xx).
    pub async fn abandon_idempotent(&self, ticket: &IdempotencyTicket) -> Result<()> {
        Ok(self
            .store()
            .release_idempotency_key(&ticket.scope, &ticket.fingerprint)
            .await?)
    }

    /// The caller's live windows (key reads, key writes, organization writes) without
    /// counting anything.
    pub(super) async fn peek_rate_limits(&self, caller: &Caller) -> Result<[RateWindow; 3]> {
        let now = self.now();
        let buckets = rate_buckets(caller, now, None);
        let outcome = self.store().hit_rate_limits(&buckets).await?;
        windows(&buckets, &outcome.counts)
    }
}

/// The counts the store reported for the three buckets of [`rate_buckets`]: one per bucket, or
/// the store broke its contract.
fn three_counts(counts: &[u64]) -> Result<&[u64; 3]> {
    counts.try_into().map_err(|_| {
        Error::internal(format!(
            "the store reported {} rate-limit counts for 3 buckets",
            counts.len()
        ))
    })
}

/// What `bucket` has left after `count`.
fn remaining(bucket: &RateBucket, count: u64) -> u64 {
    bucket.limit.saturating_sub(count)
}

/// Limit, remaining count and reset time of each bucket of [`rate_buckets`], from the counts
/// the store reported for them: one per bucket, or the store broke its contract.
fn windows(buckets: &[RateBucket; 3], counts: &[u64]) -> Result<[RateWindow; 3]> {
    let counts = three_counts(counts)?;
    Ok(std::array::from_fn(|i| RateWindow {
        limit: buckets[i].limit,
        remaining: remaining(&buckets[i], counts[i]),
        reset_at: window_end(i, buckets[i].window_start),
    }))
}
