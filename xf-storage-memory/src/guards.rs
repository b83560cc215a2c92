//! Rate-limit counters and idempotency records.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};
use xf_core::store::text_rule::*;

use async_trait::async_trait;
use smallvec::SmallVec;
use xf_core::hash::TrustedHash;
use xf_core::store::{
    GuardStore, IdempotencyClaim, IdempotencyRequest, RateBucket, RateOutcome, StoreResult,
    StoredResponse,
};
use xf_core::time::Timestamp;

use crate::{IdempotencyRecord, MemoryStore, State};

/// Keeps `response` on `scope`'s record if the record still has `fingerprint`: what
/// completing a claim does, alone or with the write it answers.
pub(crate) fn keep_response(
    state: &mut State,
    scope: &str,
    fingerprint: &str,
    response: &StoredResponse,
) {
    if let Some(record) = state
        .idempotency
        .get_mut(scope)
        .filter(|record| record.fingerprint == fingerprint)
    {
        record.response = Some(response.clone());
    }
}

#[async_trait]
impl GuardStore for MemoryStore {
    async fn hit_rate_limits(&self, buckets: &[RateBucket]) -> StoreResult<RateOutcome> {
        Ok(self.rate_counters.hit(buckets))
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
        let response = &*stored(response);
        keep_response(&mut self.write(), scope, fingerprint, response);
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

    async fn claim_connect_state(
        &self,
        id: &str,
        expires_at: Timestamp,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let mut state = self.write();
        state.connect_states.retain(|_, expires| *expires >= now);
        Ok(state
            .connect_states
            .insert(id.to_owned(), expires_at)
            .is_none())
    }

    async fn purge_expired(
        &self,
        windows_before: Timestamp,
        idempotency_before: Timestamp,
    ) -> StoreResult<u64> {
        let windows = self.rate_counters.purge(windows_before);
        let mut state = self.write();
        let before = state.idempotency.len();
        state
            .idempotency
            .retain(|_, r| r.created_at >= idempotency_before);
        Ok(windows + (before - state.idempotency.len()) as u64)
    }
}

/// Shards of the rate counters.
const RATE_SHARDS: usize = 16;

/// The rate-limit counters, outside the store's one lock: split into shards by bucket name,
/// each behind its own mutex, so requests of different keys count without waiting for each
/// other or for any other store operation. A request locks the shards of its buckets in
/// index order (so two requests never deadlock) and holds them while it decides, which keeps
/// its all-or-nothing rule exact.
#[derive(Debug, Default)]
pub(crate) struct RateCounters {
    /// Per shard: bucket name, then its windows (a few at most) and their counts.
    shards: [Mutex<Shard>; RATE_SHARDS],
}

/// One shard: bucket name, then its windows and their counts.
type Shard = HashMap<Counter, Vec<(Timestamp, u64)>, TrustedHash>;

/// A counter's name with its hash, taken once a request: the hash picks the shard and is all
/// the shard's map hashes, so a name's bytes are read once, not once per lookup.
#[derive(Clone, Debug)]
struct Counter {
    hash: u64,
    name: Arc<str>,
}

impl Counter {
    fn new(name: &Arc<str>) -> Self {
        Counter {
            hash: TrustedHash::default().hash_one(&**name),
            name: Arc::clone(name),
        }
    }

    fn shard(&self) -> usize {
        // Mixed (Fibonacci hashing) so that the shard is not a slice of the bits the shard's
        // own map places its keys by.
        let mixed = self.hash.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (mixed >> 32) as usize % RATE_SHARDS
    }
}

impl PartialEq for Counter {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.name == other.name
    }
}

impl Eq for Counter {}

impl Hash for Counter {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// Shard `index` among those a request locked.
fn locked_shard<'a>(
    locked: &'a mut [(usize, MutexGuard<'_, Shard>)],
    index: usize,
) -> &'a mut Shard {
    let (_, guard) = locked
        .iter_mut()
        .find(|(i, _)| *i == index)
        .expect("every bucket's shard is locked");
    guard
}

fn count_of(windows: Option<&Vec<(Timestamp, u64)>>, window: Timestamp) -> u64 {
    windows
        .and_then(|windows| windows.iter().find(|(start, _)| *start == window))
        .map_or(0, |(_, count)| *count)
}

impl RateCounters {
    /// [`GuardStore::hit_rate_limits`].
    fn hit(&self, buckets: &[RateBucket]) -> RateOutcome {
        // Each bucket's counter and shard, and the shards in index order: the order they are
        // locked in. A request has three buckets, so these stay on the stack.
        let counters: SmallVec<[Counter; 4]> =
            buckets.iter().map(|b| Counter::new(&b.name)).collect();
        let mut order: SmallVec<[usize; 4]> = counters.iter().map(Counter::shard).collect();
        order.sort_unstable();
        order.dedup();
        let mut locked: SmallVec<[(usize, MutexGuard<'_, Shard>); 4]> = order
            .into_iter()
            .map(|index| {
                let guard = self.shards[index]
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                (index, guard)
            })
            .collect();
        let mut counts: Vec<u64> = buckets
            .iter()
            .zip(&counters)
            .map(|(b, counter)| {
                count_of(
                    locked_shard(&mut locked, counter.shard()).get(counter),
                    b.window_start,
                )
            })
            .collect();
        let exceeded: Vec<usize> = buckets
            .iter()
            .enumerate()
            .filter(|(i, b)| b.consume && counts[*i] >= b.limit)
            .map(|(i, _)| i)
            .collect();
        if exceeded.is_empty() {
            for (i, (bucket, counter)) in buckets.iter().zip(&counters).enumerate() {
                if !bucket.consume {
                    continue;
                }
                let shard = locked_shard(&mut locked, counter.shard());
                let Some(windows) = shard.get_mut(counter) else {
                    shard.insert(counter.clone(), vec![(bucket.window_start, 1)]);
                    counts[i] = 1;
                    continue;
                };
                match windows
                    .iter_mut()
                    .find(|(start, _)| *start == bucket.window_start)
                {
                    Some((_, count)) => {
                        *count += 1;
                        counts[i] = *count;
                    }
                    None => {
                        windows.push((bucket.window_start, 1));
                        counts[i] = 1;
                    }
                }
            }
        }
        RateOutcome { counts, exceeded }
    }

    /// Drops windows that started before `before`; how many.
    fn purge(&self, before: Timestamp) -> u64 {
        let mut dropped = 0;
        for shard in &self.shards {
            let mut shard = shard
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            shard.retain(|_, windows| {
                let had = windows.len();
                windows.retain(|(start, _)| *start >= before);
                dropped += (had - windows.len()) as u64;
                !windows.is_empty()
            });
        }
        dropped
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn counter_names_spread_over_shards_and_hashes() {
        let names: Vec<String> = (0..1_600)
            .map(|i| {
                let kind = ["read", "write"][i % 2];
                format!("key:{}:{kind}", xf_core::ids::new_id("key"))
            })
            .collect();
        let mut per_shard = [0; RATE_SHARDS];
        for name in &names {
            per_shard[Counter::new(&Arc::from(name.as_str())).shard()] += 1;
        }
        // 100 a shard on average; far from empty or crowded anywhere.
        assert!(
            per_shard.iter().all(|n| (50..200).contains(n)),
            "{per_shard:?}"
        );
        let hasher = TrustedHash::default();
        // What the shards' maps hash: the counter, by the hash of its name.
        let hashes: HashSet<u64> = names
            .iter()
            .map(|n| hasher.hash_one(Counter::new(&Arc::from(n.as_str()))))
            .collect();
        assert_eq!(hashes.len(), names.len());
        // The map's own bits (the low ones place a key, the top seven tell keys apart in a
        // group) differ between names too.
        let low: HashSet<u64> = hashes.iter().map(|h| h & 0xfff).collect();
        let top: HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
        assert!(low.len() > 1_000, "{}", low.len());
        assert_eq!(top.len(), 128);
    }
}
