//! A short-lived cache of API-key lookups, so that an authenticated request does not need a
//! store round trip to find its key.
//!
//! An entry holds what the store answered for a key's SHA-256 digest (the key, with the
//! [`Caller`] it authenticates as, or that there is none) and is used for the cache's time to
//! live at most. That bounds how long a change made by another instance (a revoked key, a new
//! plan or limit) goes unseen here; a change made through this instance's facade drops the
//! entries it concerns at once. The map
//! is split into shards by digest, each behind its own lock, so requests with different keys
//! do not wait for each other, and a shard is swept of expired entries when it grows.
//!
//! A hit costs a lock and two reference counts: the caller is built once per lookup, not per
//! request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::Caller;
use crate::ids::{ApiKeyId, OrganizationId};
use crate::model::ApiKey;

/// Shards of the map.
const SHARDS: usize = 16;
/// Entries a shard holds before it is swept of expired ones (and cleared if that is not
/// enough, e.g. under a flood of unknown keys).
const SHARD_CAPACITY: usize = 4_096;

/// The SHA-256 digest of a presented key.
pub(super) type KeyDigest = [u8; 32];

/// What the store said about one key digest.
pub(super) type Lookup = Option<Arc<KnownKey>>;

/// A key the store knows, and the caller it authenticates as.
#[derive(Debug)]
pub(super) struct KnownKey {
    pub(super) api_key: ApiKey,
    /// `None` when the plan catalog has no plan of the organization's plan name.
    pub(super) caller: Option<Caller>,
}

#[derive(Debug)]
struct Entry {
    lookup: Lookup,
    fetched: Instant,
}

/// The cache; see the module documentation.
#[derive(Debug)]
pub(super) struct KeyCache {
    ttl: Duration,
    shards: [Mutex<HashMap<KeyDigest, Entry>>; SHARDS],
}

impl KeyCache {
    /// A cache whose entries live `ttl` (zero: nothing is cached).
    pub(super) fn new(ttl: Duration) -> Self {
        KeyCache {
            ttl,
            shards: std::array::from_fn(|_| Mutex::new(HashMap::new())),
        }
    }

    fn shard(&self, digest: &KeyDigest) -> MutexGuard<'_, HashMap<KeyDigest, Entry>> {
        self.shards[usize::from(digest[0]) % SHARDS]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The cached lookup of `digest`, if one is fresh.
    pub(super) fn get(&self, digest: &KeyDigest) -> Option<Lookup> {
        if self.ttl.is_zero() {
            return None;
        }
        let shard = self.shard(digest);
        let entry = shard.get(digest)?;
        (entry.fetched.elapsed() < self.ttl).then(|| entry.lookup.clone())
    }

    /// Keeps what the store answered for `digest`, fetched at `fetched` (before the store was
    /// asked, so an entry never outlives the bound).
    pub(super) fn put(&self, digest: &KeyDigest, lookup: Lookup, fetched: Instant) {
        if self.ttl.is_zero() {
            return;
        }
        let mut shard = self.shard(digest);
        if shard.len() >= SHARD_CAPACITY {
            let ttl = self.ttl;
            shard.retain(|_, entry| entry.fetched.elapsed() < ttl);
            if shard.len() >= SHARD_CAPACITY {
                shard.clear();
            }
        }
        shard.insert(*digest, Entry { lookup, fetched });
    }

    /// Drops the entry of the stored hash `hash` (lower-case hex; a key just issued, which an
    /// earlier lookup may have found missing).
    pub(super) fn forget_hash(&self, hash: &str) {
        let mut digest = [0; 32];
        if hex::decode_to_slice(hash, &mut digest).is_ok() {
            self.shard(&digest).remove(&digest);
        }
    }

    /// Drops the entries of the key `id`.
    pub(super) fn forget_key(&self, id: &ApiKeyId) {
        self.forget(|known| &known.api_key.id == id);
    }

    /// Drops the entries of the organization `id`'s keys.
    pub(super) fn forget_organization(&self, id: &OrganizationId) {
        self.forget(|known| &known.api_key.organization_id == id);
    }

    fn forget(&self, matches: impl Fn(&KnownKey) -> bool) {
        for shard in &self.shards {
            shard
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .retain(|_, entry| !entry.lookup.as_deref().is_some_and(&matches));
        }
    }
}
