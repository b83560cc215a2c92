//! # xf-storage-memory
//!
//! The in-memory [`Store`]: for tests, demos and single-process use. All state sits behind
//! one `RwLock`, and every operation takes the lock once and never across an `.await`, so
//! each operation is atomic with respect to every other: the same guarantees the PostgreSQL
//! backend gives with transactions and conditional updates. Workers are woken through an
//! in-process channel, where PostgreSQL uses `LISTEN/NOTIFY`; every write that appends to the
//! event outbox sends [`QueueSignal::EventsWritten`] once it lets go of the lock. Nothing
//! survives the process.
//!
//! ```
//! use std::sync::Arc;
//! let xf = xf_core::Xf::builder(Arc::new(xf_storage_memory::MemoryStore::new()))
//!     .secret_key(xf_core::Xf::random_secret_key())
//!     .public_base_url("https://app.example.com")
//!     .build()
//!     .expect("a complete configuration");
//! # let _ = xf;
//! ```
//!
//! One module per aggregate, as the storage traits of `xf_core::store` are split.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod events;
mod gsc;
mod guards;
mod issues;
mod jobs;
mod media;
mod organizations;
mod properties;
mod reports;
mod schedules;
mod usage;
mod webhooks;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::{Deref, DerefMut};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;
use tokio::sync::broadcast;
use xf_core::model::{
    ApiKey, Event, Issue, JobStatus, Organization, Property, Report, UsageCounters, Webhook,
    WebhookDelivery,
};
use xf_core::store::{
    After, AttemptToken, PageRequest, QueueSignal, Store, StoreResult, StoredResponse,
};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::jobs::StoredJob;
use crate::webhooks::{MessageKey, QueuedMessage};

/// An owner's index entry: when the record was created, and its id.
type IndexKey = (Timestamp, String);

#[derive(Debug, Default)]
struct State {
    organizations: BTreeMap<String, Organization>,
    api_keys: BTreeMap<String, ApiKey>,
    key_ids_by_hash: HashMap<String, String>,
    /// Indexed by organization.
    properties: Indexed<Property>,
    property_urls: HashMap<(String, String), String>,
    /// Indexed by organization.
    jobs: Indexed<StoredJob>,
    /// Ids of the pending jobs, in claim order: (run_at, id).
    pending: BTreeSet<(Timestamp, String)>,
    /// Ids of the processing jobs by lease end: (lease_expires_at, id).
    leases: BTreeSet<(Timestamp, String)>,
    /// The outbox, in id order.
    events: Vec<Event>,
    /// For each event of `events`, whether an enabled webhook of its organization subscribed
    /// to its type when it was written: one that had none is never fanned out.
    subscribed: Vec<bool>,
    /// Indexed by property.
    issues: Indexed<Issue>,
    /// Issue ids by property, type and subject: one issue per check and subject.
    issue_keys: issues::IssueKeys,
    /// Scan history records by job id.
    scan_records: HashMap<String, xf_core::model::ScanRecord>,
    /// The history records in order: (property, completed at, job id).
    scan_order: BTreeSet<(String, Timestamp, String)>,
    /// Scan schedules by property.
    schedules: HashMap<String, xf_core::model::schedule::ScanSchedule>,
    /// Claimed schedule slots by (property, slot).
    schedule_runs: BTreeMap<(String, Timestamp), xf_core::model::schedule::ScheduleRun>,
    /// Each recorded scan's issue changes, by job id, ordered by issue id.
    issue_changes: HashMap<String, Vec<xf_core::model::IssueChangeRecord>>,
    /// Indexed by organization; keyed by token.
    reports: Indexed<Report>,
    usage: BTreeMap<(String, String), UsageCounters>,
    idempotency: HashMap<String, IdempotencyRecord>,
    /// Used connect states, with when they expire.
    connect_states: HashMap<String, Timestamp>,
    /// Indexed by organization.
    webhooks: Indexed<Webhook>,
    /// How many events of `events` (from the first) fan-outs have taken.
    fanned_out: usize,
    /// The delivery queue: one message per (webhook, event).
    messages: BTreeMap<MessageKey, QueuedMessage>,
    /// The queued messages in claim order: (when claimable, webhook, event).
    message_queue: BTreeSet<(Timestamp, String, String)>,
    /// The delivery log, indexed by webhook.
    deliveries: Indexed<WebhookDelivery>,
    /// Linked Google accounts by organization.
    gsc_accounts: HashMap<String, xf_core::gsc::GscAccount>,
    /// Sync claims by property.
    gsc_claims: HashMap<String, gsc::SyncClaim>,
    /// Search Console snapshots (with their rows) by property.
    gsc_snapshots: HashMap<String, std::sync::Arc<xf_core::gsc::NewSnapshot>>,
    /// The pages of each property's latest completed scan.
    scan_pages: HashMap<String, gsc::LatestScan>,
    /// Media items, indexed by organization.
    media: Indexed<xf_core::media::MediaItem>,
    /// Connected channels.
    channels: Vec<xf_core::media::Channel>,
    /// Resumable uploads by id.
    uploads: HashMap<String, xf_core::media::Upload>,
}

#[derive(Debug, Clone)]
struct IdempotencyRecord {
    fingerprint: String,
    created_at: Timestamp,
    claimed_at: Timestamp,
    response: Option<StoredResponse>,
}

/// The current attempt of a processing job.
#[derive(Debug, Clone, Copy)]
struct Lease {
    token: AttemptToken,
    expires_at: Timestamp,
}

/// The in-memory store. See the crate documentation.
#[derive(Debug)]
pub struct MemoryStore {
    state: RwLock<State>,
    /// Rate-limit counters, sharded outside the one lock (they are hit on every request).
    rate_counters: guards::RateCounters,
    signals: broadcast::Sender<QueueSignal>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        // A listener that falls this far behind skips to the newest signals; workers poll,
        // so a skipped wake-up delays a claim by one poll interval at most.
        let (signals, _) = broadcast::channel(1024);
        MemoryStore {
            state: RwLock::new(State::default()),
            rate_counters: guards::RateCounters::default(),
            signals,
        }
    }

    // A panic while holding the lock cannot leave a half-applied operation behind (each
    // operation validates before it mutates), so a poisoned lock is safe to keep using.
    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// The state, to change. Dropping the guard lets go of the lock and then sends
    /// [`QueueSignal::EventsWritten`] if events a webhook subscribes to were appended
    /// meanwhile: so no operation that writes events (finishing, cancelling, rescuing jobs)
    /// can forget the signal.
    fn write(&self) -> WriteGuard<'_> {
        let state = self
            .state
            .write()
            .unwrap_or_else(|poison| poison.into_inner());
        WriteGuard {
            events_before: state.events.len(),
            state: Some(state),
            signals: &self.signals,
        }
    }

    /// Tells listening workers; nobody listening is fine.
    fn signal(&self, signal: QueueSignal) {
        let _ = self.signals.send(signal);
    }
}

/// The write lock on the state; see [`MemoryStore::write`].
struct WriteGuard<'a> {
    /// `Some` until dropped.
    state: Option<RwLockWriteGuard<'a, State>>,
    events_before: usize,
    signals: &'a broadcast::Sender<QueueSignal>,
}

impl Deref for WriteGuard<'_> {
    type Target = State;

    fn deref(&self) -> &State {
        self.state
            .as_ref()
            .expect("the guard holds the lock until dropped")
    }
}

impl DerefMut for WriteGuard<'_> {
    fn deref_mut(&mut self) -> &mut State {
        self.state
            .as_mut()
            .expect("the guard holds the lock until dropped")
    }
}

impl Drop for WriteGuard<'_> {
    fn drop(&mut self) {
        // Only events a fan-out will take wake the delivery engines.
        let wrote_events = self.state.take().is_some_and(|state| {
            state
                .subscribed
                .get(self.events_before..)
                .is_some_and(|written| written.contains(&true))
        });
        // The lock is released here, before anyone is woken.
        if wrote_events {
            let _ = self.signals.send(QueueSignal::EventsWritten);
        }
    }
}

/// The store's hash maps: hashbrown's fast hasher, seeded at random per process. Keys include
/// what crawled sites send (addresses), so the seed is random rather than fixed.
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Records by id, with an index per owner (an organization or a property) in creation order.
#[derive(Debug)]
struct Indexed<T> {
    /// Boxed, so that the map moves pointers, not records, as it grows.
    rows: FastMap<String, Box<T>>,
    by_owner: FastMap<String, OwnerIndex>,
}

impl<T> Default for Indexed<T> {
    fn default() -> Self {
        Self {
            rows: FastMap::default(),
            by_owner: FastMap::default(),
        }
    }
}

/// One owner's records as `(created_at, id)`, oldest first, in a sorted vector: records
/// arrive in that order almost always (ids grow with time), so a new one is one comparison
/// and a push, where a tree would compare its id with a dozen others.
#[derive(Debug, Default)]
struct OwnerIndex(Vec<IndexKey>);

impl OwnerIndex {
    /// Where `(created_at, id)` is, or would go.
    fn search(&self, created_at: Timestamp, id: &str) -> Result<usize, usize> {
        self.0
            .binary_search_by(|(at, other)| (*at, other.as_str()).cmp(&(created_at, id)))
    }

    fn insert(&mut self, created_at: Timestamp, id: &str) {
        let in_order = self
            .0
            .last()
            .is_none_or(|(at, last)| (*at, last.as_str()) < (created_at, id));
        if in_order {
            self.0.push((created_at, id.to_owned()));
        } else if let Err(at) = self.search(created_at, id) {
            self.0.insert(at, (created_at, id.to_owned()));
        }
    }

    fn remove(&mut self, created_at: Timestamp, id: &str) {
        if let Ok(at) = self.search(created_at, id) {
            self.0.remove(at);
        }
    }

    /// The entries strictly before `(created_at, id)`.
    fn before(&self, created_at: Timestamp, id: &str) -> &[IndexKey] {
        let end = self
            .0
            .partition_point(|(at, other)| (*at, other.as_str()) < (created_at, id));
        &self.0[..end]
    }
}

impl<T: Clone> Indexed<T> {
    /// Adds a record; `false` (and nothing stored) when the id is taken.
    fn insert(&mut self, owner: &str, created_at: Timestamp, id: &str, row: &T) -> bool {
        self.insert_owned(owner, created_at, id, || row.clone())
    }

    /// [`Indexed::insert`] of a row made only if the id is free (nothing cloned).
    fn insert_owned(
        &mut self,
        owner: &str,
        created_at: Timestamp,
        id: &str,
        row: impl FnOnce() -> T,
    ) -> bool {
        if self.contains(id) {
            return false;
        }
        match self.by_owner.get_mut(owner) {
            Some(index) => index.insert(created_at, id),
            None => {
                let mut index = OwnerIndex::default();
                index.insert(created_at, id);
                self.by_owner.insert(owner.to_owned(), index);
            }
        }
        self.rows.insert(id.to_owned(), Box::new(row()));
        true
    }

    fn contains(&self, id: &str) -> bool {
        self.rows.contains_key(id)
    }

    fn get(&self, id: &str) -> Option<T> {
        self.rows.get(id).map(|row| T::clone(row))
    }

    /// Applies `change` to the record and returns the result.
    fn update(&mut self, id: &str, change: impl FnOnce(&mut T)) -> Option<T> {
        self.rows.get_mut(id).map(|row| {
            change(row);
            T::clone(row)
        })
    }

    fn get_mut(&mut self, id: &str) -> Option<&mut T> {
        self.rows.get_mut(id).map(|row| &mut **row)
    }

    /// `owner`'s index entries, oldest first.
    fn index_of(&self, owner: &str) -> impl DoubleEndedIterator<Item = &IndexKey> {
        self.by_owner
            .get(owner)
            .into_iter()
            .flat_map(|index| &index.0)
    }

    /// `owner`'s records, oldest first.
    fn of(&self, owner: &str) -> impl Iterator<Item = &T> {
        self.index_of(owner)
            .filter_map(|(_, id)| self.rows.get(id).map(|row| &**row))
    }

    /// Calls `visit` with each of `owner`'s records, oldest first.
    fn for_each_of(&mut self, owner: &str, mut visit: impl FnMut(&mut T)) {
        let Some(index) = self.by_owner.get(owner) else {
            return;
        };
        for (_, id) in &index.0 {
            if let Some(row) = self.rows.get_mut(id) {
                visit(row);
            }
        }
    }

    /// Removes the record, which must be indexed under `owner` at `created_at`.
    fn remove(&mut self, owner: &str, created_at: Timestamp, id: &str) -> Option<T> {
        if let Some(index) = self.by_owner.get_mut(owner) {
            index.remove(created_at, id);
            if index.0.is_empty() {
                self.by_owner.remove(owner);
            }
        }
        self.rows.remove(id).map(|row| *row)
    }

    /// How many records `owner` has.
    fn count(&self, owner: &str) -> usize {
        self.by_owner.get(owner).map_or(0, |index| index.0.len())
    }

    /// The ids of `owner`'s records, newest first.
    fn ids_of(&self, owner: &str) -> Vec<String> {
        self.index_of(owner)
            .rev()
            .map(|(_, id)| id.clone())
            .collect()
    }

    /// Every record, in no particular order.
    fn values(&self) -> impl Iterator<Item = &T> {
        self.rows.values().map(|row| &**row)
    }

    /// Removes every record that `gone` accepts; returns how many. One pass over the rows
    /// and one over each index, where removing them one by one would shift an index per
    /// record.
    fn remove_where(&mut self, gone: impl Fn(&T) -> bool) -> u64 {
        let before = self.rows.len();
        self.rows.retain(|_, row| !gone(row));
        let removed = before - self.rows.len();
        if removed > 0 {
            let rows = &self.rows;
            self.by_owner.retain(|_, index| {
                index.0.retain(|(_, id)| rows.contains_key(id));
                !index.0.is_empty()
            });
        }
        removed as u64
    }

    /// The owner's records newest first, starting after `page.after`, that `keep` accepts;
    /// at most `page.limit`. An index entry without its record is corrupt state, an error.
    fn page(
        &self,
        owner: &str,
        page: &PageRequest,
        keep: impl Fn(&T) -> bool,
    ) -> StoreResult<Vec<T>> {
        let Some(index) = self.by_owner.get(owner) else {
            return Ok(Vec::new());
        };
        let entries = match &page.after {
            Some(After { created_at, id }) => index.before(*created_at, id),
            None => &index.0[..],
        };
        entries
            .iter()
            .rev()
            .map(|(_, id)| {
                self.rows
                    .get(id)
                    .map(|row| &**row)
                    .ok_or_else(|| StoreError::internal(format!("index entry {id} has no record")))
            })
            .filter(|row| row.as_ref().map_or(true, |row| keep(row)))
            .take(page.limit)
            .map(|row| row.cloned())
            .collect()
    }
}

#[async_trait]
impl Store for MemoryStore {
    async fn ping(&self) -> StoreResult<()> {
        Ok(())
    }

    async fn gauges(&self) -> StoreResult<xf_core::store::StoreGauges> {
        let state = self.read();
        let mut jobs = BTreeMap::<&str, xf_core::store::JobGauge>::new();
        let unfinished = state.pending.iter().chain(&state.leases);
        for job in unfinished.filter_map(|(_, id)| state.jobs.rows.get(id)) {
            let job = &job.record;
            let gauge = jobs.entry(&job.job_type).or_default();
            match job.status {
                JobStatus::Processing => gauge.running += 1,
                _ if job.attempts == 0 => gauge.queued += 1,
                _ => gauge.retrying += 1,
            }
        }
        Ok(xf_core::store::StoreGauges {
            jobs: jobs
                .into_iter()
                .map(|(job_type, gauge)| xf_core::store::JobGauge {
                    job_type: job_type.to_owned(),
                    ..gauge
                })
                .collect(),
            webhook_messages_waiting: state.messages.len() as u64,
            uploads_open: state.uploads.len() as u64,
        })
    }
}

#[cfg(feature = "testing")]
#[async_trait]
impl xf_core::testing::Dump for MemoryStore {
    async fn dump(&self) -> StoreResult<xf_core::testing::StoreDump> {
        let state = self.read();
        Ok(xf_core::testing::StoreDump {
            organizations: state.organizations.values().cloned().collect(),
            api_keys: state.api_keys.values().cloned().collect(),
            properties: sorted(state.properties.values().cloned(), |p| p.id.as_str()),
            jobs: sorted(state.jobs.values().map(|j| j.record.clone()), |j| {
                j.id.as_str()
            }),
            issues: sorted(state.issues.values().cloned(), |i| i.id.as_str()),
            scan_records: sorted(state.scan_records.values().cloned(), |r| r.job_id.as_str()),
            reports: sorted(state.reports.values().cloned(), |r| r.token.as_str()),
            usage: state
                .usage
                .iter()
                .map(|((org, month), counters)| (org.clone(), month.clone(), *counters))
                .collect(),
            events: state.events.clone(),
        })
    }
}

/// `records` sorted by `key` (a dump lists them by their key).
#[cfg(feature = "testing")]
fn sorted<T>(records: impl Iterator<Item = T>, key: impl Fn(&T) -> &str) -> Vec<T> {
    let mut records: Vec<T> = records.collect();
    records.sort_by(|a, b| key(a).cmp(key(b)));
    records
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(millis: i64) -> Timestamp {
        Timestamp::from_unix_millis(millis).expect("a time")
    }

    fn ids(index: &OwnerIndex) -> Vec<&str> {
        index.0.iter().map(|(_, id)| id.as_str()).collect()
    }

    #[test]
    fn an_owner_index_stays_sorted_whatever_the_order_of_arrival() {
        let mut index = OwnerIndex::default();
        index.insert(at(2), "b");
        index.insert(at(3), "a");
        // Late arrivals: an earlier time, and the same time with a smaller id.
        index.insert(at(1), "z");
        index.insert(at(2), "a");
        // Already there: kept once.
        index.insert(at(2), "b");
        assert_eq!(ids(&index), ["z", "a", "b", "a"]);
        assert_eq!(index.0[3].0, at(3));
        let before: Vec<&str> = index
            .before(at(2), "b")
            .iter()
            .map(|(_, id)| id.as_str())
            .collect();
        assert_eq!(before, ["z", "a"]);
        assert!(index.before(at(1), "z").is_empty());
        assert_eq!(index.before(at(9), "").len(), 4);
        index.remove(at(2), "a");
        index.remove(at(7), "missing");
        assert_eq!(ids(&index), ["z", "b", "a"]);
    }

    #[test]
    fn removing_where_keeps_the_rest_and_their_indexes() {
        let mut rows: Indexed<i64> = Indexed::default();
        for n in 0..6_i64 {
            let owner = if n % 2 == 0 { "even" } else { "odd" };
            assert!(rows.insert(owner, at(n), &format!("r{n}"), &n));
        }
        assert_eq!(rows.remove_where(|n| *n < 3), 3);
        assert_eq!(rows.ids_of("even"), ["r4"]);
        assert_eq!(rows.ids_of("odd"), ["r5", "r3"]);
        assert_eq!(rows.remove_where(|n| *n == 4), 1);
        assert_eq!(rows.count("even"), 0);
        assert!(!rows.by_owner.contains_key("even"));
        assert_eq!(rows.remove_where(|_| false), 0);
        assert_eq!(rows.values().count(), 2);
    }
}
