//! A short-lived cache of API-key lookups, so that an authenticated request does not need a
//! store round trip to find its key.
//!
//! An entry holds what the store answered for a key's hash (the key and its organization, or
//! that there is none) and is used for the cache's time to live at most. That bounds how long a
//! change made by another instance (a revoked key, a new plan or limit) goes unseen here; a
//! change made through this instance's facade drops the entries it concerns at once. The map
//! is split into shards by hash, each behind its own lock, so requests with different keys do
//! not wait for each other, and a shard is swept of expired entries when it grows.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::ids::{ApiKeyId, OrganizationId};
use crate::model::{ApiKey, Organization};

/// Shards of the map.
const SHARDS: usize = 16;
/// Entries a shard holds before it is swept of expired ones (and cleared if that is not
/// enough, e.g. under a flood of unknown keys).
const SHARD_CAPACITY: usize = 4_096;

/// What the store said about one key hash.
pub(super) type Lookup = Option<(ApiKey, Organization)>;

#[derive(Debug)]
struct Entry {
    lookup: Lookup,
    fetched: Instant,
}

/// The cache; see the module documentation.
#[derive(Debug)]
pub(super) struct KeyCache {
    ttl: Duration,
    shards: [Mutex<HashMap<String, Entry>>; SHARDS],
}

impl KeyCache {
    /// A cache whose entries live `ttl` (zero: nothing is cached).
    pub(super) fn new(ttl: Duration) -> Self {
        KeyCache {
            ttl,
            shards: std::array::from_fn(|_| Mutex::new(HashMap::new())),
        }
    }

    fn shard(&self, hash: &str) -> MutexGuard<'_, HashMap<String, Entry>> {
        // Hashes are hex: their first digit spreads keys evenly over the 16 shards.
        let index = hash
            .chars()
            .next()
            .and_then(|c| c.to_digit(16))
            .map_or(0, |digit| digit as usize % SHARDS);
        self.shards[index]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The cached lookup of `hash`, if one is fresh.
    pub(super) fn get(&self, hash: &str) -> Option<Lookup> {
        if self.ttl.is_zero() {
            return None;
        }
        let shard = self.shard(hash);
        let entry = shard.get(hash)?;
        (entry.fetched.elapsed() < self.ttl).then(|| entry.lookup.clone())
    }

    /// Keeps what the store answered for `hash`, fetched at `fetched` (before the store was
    /// asked, so an entry never outlives the bound).
    pub(super) fn put(&self, hash: &str, lookup: Lookup, fetched: Instant) {
        if self.ttl.is_zero() {
            return;
        }
        let mut shard = self.shard(hash);
        if shard.len() >= SHARD_CAPACITY {
            let ttl = self.ttl;
            shard.retain(|_, entry| entry.fetched.elapsed() < ttl);
            if shard.len() >= SHARD_CAPACITY {
                shard.clear();
            }
        }
        shard.insert(hash.to_owned(), Entry { lookup, fetched });
    }

    /// Drops the entry of `hash` (a key just issued, which an earlier lookup may have found
    /// missing).
    pub(super) fn forget_hash(&self, hash: &str) {
        self.shard(hash).remove(hash);
    }

    /// Drops the entries of the key `id`.
    pub(super) fn forget_key(&self, id: &ApiKeyId) {
        self.forget(|(key, _)| &key.id == id);
    }

    /// Drops the entries of the organization `id`'s keys.
    pub(super) fn forget_organization(&self, id: &OrganizationId) {
        self.forget(|(_, organization)| &organization.id == id);
    }

    fn forget(&self, matches: impl Fn(&(ApiKey, Organization)) -> bool) {
        for shard in &self.shards {
            shard
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .retain(|_, entry| !entry.lookup.as_ref().is_some_and(&matches));
        }
    }
}
