//! Rate-limit counters and idempotency records.

use async_trait::async_trait;
use xf_core::store::{
    GuardStore, IdempotencyClaim, IdempotencyRequest, RateBucket, RateOutcome, StoreResult,
    StoredResponse,
};
use xf_core::time::Timestamp;

use crate::{IdempotencyRecord, MemoryStore};

#[async_trait]
impl GuardStore for MemoryStore {
    async fn hit_rate_limits(&self, buckets: &[RateBucket]) -> StoreResult<RateOutcome> {
        let mut state = self.write();
        let key = |b: &RateBucket| (b.name.clone(), b.window_start);
        let mut counts: Vec<u64> = buckets
            .iter()
            .map(|b| state.rate_counters.get(&key(b)).copied().unwrap_or(0))
            .collect();
        let exceeded: Vec<usize> = buckets
            .iter()
            .enumerate()
            .filter(|(i, b)| b.consume && counts[*i] >= b.limit)
            .map(|(i, _)| i)
            .collect();
        if exceeded.is_empty() {
            for (i, bucket) in buckets.iter().enumerate().filter(|(_, b)| b.consume) {
                counts[i] += 1;
                state.rate_counters.insert(key(bucket), counts[i]);
            }
        }
        Ok(RateOutcome { counts, exceeded })
    }

    async fn claim_idempotency_key(
        &self,
        request: &IdempotencyRequest,
    ) -> StoreResult<IdempotencyClaim> {
        let mut state = self.write();
        let fresh = IdempotencyRecord {
            fingerprint: request.fingerprint.clone(),
            created_at: request.now,
            claimed_at: request.now,
            response: None,
        };
        let record = match state.idempotency.get_mut(&request.scope) {
            Some(record) if record.created_at >= request.expired_before => record,
            _ => {
                state.idempotency.insert(request.scope.clone(), fresh);
                return Ok(IdempotencyClaim::Acquired);
            }
        };
        if record.fingerprint != request.fingerprint {
            return Ok(IdempotencyClaim::Mismatch);
        }
        if let Some(response) = &record.response {
            return Ok(IdempotencyClaim::Replay(response.clone()));
        }
        if record.claimed_at < request.stale_before {
            record.claimed_at = request.now;
            return Ok(IdempotencyClaim::Acquired);
        }
        Ok(IdempotencyClaim::InUse)
    }

    async fn complete_idempotency_key(
        &self,
        scope: &str,
        fingerprint: &str,
        response: &StoredResponse,
    ) -> StoreResult<()> {
        if let Some(record) = self
            .write()
            .idempotency
            .get_mut(scope)
            .filter(|r| r.fingerprint == fingerprint)
        {
            record.response = Some(response.clone());
        }
        Ok(())
    }

    async fn release_idempotency_key(&self, scope: &str, fingerprint: &str) -> StoreResult<()> {
        let mut state = self.write();
        if state
            .idempotency
            .get(scope)
            .is_some_and(|r| r.fingerprint == fingerprint && r.response.is_none())
        {
            state.idempotency.remove(scope);
        }
        Ok(())
    }

    async fn purge_expired(
        &self,
        windows_before: Timestamp,
        idempotency_before: Timestamp,
    ) -> StoreResult<u64> {
        let mut state = self.write();
        let before = state.rate_counters.len() + state.idempotency.len();
        state
            .rate_counters
            .retain(|(_, window), _| *window >= windows_before);
        state
            .idempotency
            .retain(|_, r| r.created_at >= idempotency_before);
        Ok((before - state.rate_counters.len() - state.idempotency.len()) as u64)
    }
}
