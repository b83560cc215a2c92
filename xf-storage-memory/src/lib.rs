//! # xf-storage-memory
//!
//! The in-memory [`Store`]: for tests, demos and single-process use. All state sits behind
//! one `RwLock`, and every operation takes the lock once and never across an `.await`, so
//! each operation is atomic with respect to every other: the same guarantees the PostgreSQL
//! backend gives with transactions and conditional updates. Nothing survives the process.
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

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;
use xf_core::model::{
    ApiKey, Issue, IssueStatus, IssueSummary, Job, JobCounts, JobOutcome, JobStatus, Organization,
    Property, Report, UsageCounters,
};
use xf_core::plans::LimitOverrides;
use xf_core::store::{
    After, CancelOutcome, IdempotencyClaim, IdempotencyRequest, IssueFilter, JobFilter,
    PageRequest, RateBucket, RateOutcome, Store, StoreDump, StoreResult, StoredResponse,
};
use xf_core::time::Timestamp;
use xf_core::StoreError;

/// Newest-first index key: (owner, created_at, id). Iterated in reverse.
type IndexKey = (String, Timestamp, String);

#[derive(Debug, Default)]
struct State {
    organizations: BTreeMap<String, Organization>,
    api_keys: BTreeMap<String, ApiKey>,
    key_ids_by_hash: HashMap<String, String>,
    /// Indexed by organization.
    properties: Indexed<Property>,
    property_urls: HashMap<(String, String), String>,
    /// Indexed by organization.
    jobs: Indexed<Job>,
    /// Indexed by property.
    issues: Indexed<Issue>,
    /// Indexed by organization; keyed by token.
    reports: Indexed<Report>,
    usage: BTreeMap<(String, String), UsageCounters>,
    rate_counters: HashMap<(String, Timestamp), u64>,
    idempotency: HashMap<String, IdempotencyRecord>,
}

#[derive(Debug, Clone)]
struct IdempotencyRecord {
    fingerprint: String,
    created_at: Timestamp,
    claimed_at: Timestamp,
    response: Option<StoredResponse>,
}

/// The in-memory store. See the crate documentation.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: RwLock<State>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    // A panic while holding the lock cannot leave a half-applied operation behind (each
    // operation validates before it mutates), so a poisoned lock is safe to keep using.
    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state
            .write()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

/// Records by id, with a newest-first index per owner (an organization or a property).
#[derive(Debug)]
struct Indexed<T> {
    rows: BTreeMap<String, T>,
    by_owner: BTreeSet<IndexKey>,
}

impl<T> Default for Indexed<T> {
    fn default() -> Self {
        Self {
            rows: BTreeMap::new(),
            by_owner: BTreeSet::new(),
        }
    }
}

impl<T: Clone> Indexed<T> {
    /// Adds a record; `false` (and nothing stored) when the id is taken.
    fn insert(&mut self, owner: &str, created_at: Timestamp, id: &str, row: &T) -> bool {
        if self.contains(id) {
            return false;
        }
        self.by_owner
            .insert((owner.to_owned(), created_at, id.to_owned()));
        self.rows.insert(id.to_owned(), row.clone());
        true
    }

    fn contains(&self, id: &str) -> bool {
        self.rows.contains_key(id)
    }

    fn get(&self, id: &str) -> Option<T> {
        self.rows.get(id).cloned()
    }

    /// Applies `change` to the record and returns the result.
    fn update(&mut self, id: &str, change: impl FnOnce(&mut T)) -> Option<T> {
        self.rows.get_mut(id).map(|row| {
            change(row);
            row.clone()
        })
    }

    fn get_mut(&mut self, id: &str) -> Option<&mut T> {
        self.rows.get_mut(id)
    }

    fn values(&self) -> impl Iterator<Item = &T> {
        self.rows.values()
    }

    /// The owner's records newest first, starting after `page.after`, that `keep` accepts;
    /// at most `page.limit`. An index entry without its record is corrupt state, an error.
    fn page(
        &self,
        owner: &str,
        page: &PageRequest,
        keep: impl Fn(&T) -> bool,
    ) -> StoreResult<Vec<T>> {
        let low = (owner.to_owned(), Timestamp::MIN, String::new());
        let high = match &page.after {
            Some(After { created_at, id }) => (owner.to_owned(), *created_at, id.clone()),
            None => (owner.to_owned(), Timestamp::MAX, String::new()),
        };
        self.by_owner
            .range(low..high)
            .rev()
            .map(|(_, _, id)| {
                self.rows
                    .get(id)
                    .ok_or_else(|| StoreError::Internal(format!("index entry {id} has no record")))
            })
            .filter(|row| row.as_ref().map_or(true, |row| keep(row)))
            .take(page.limit)
            .map(|row| row.cloned())
            .collect()
    }
}

fn job_matches(job: &Job, filter: &JobFilter) -> bool {
    filter.status.is_none_or(|s| job.status == s)
        && filter
            .property_id
            .as_deref()
            .is_none_or(|p| job.property_id == p)
        && filter.job_type.as_deref().is_none_or(|t| job.job_type == t)
}

#[async_trait]
impl Store for MemoryStore {
    async fn ping(&self) -> StoreResult<()> {
        Ok(())
    }

    async fn insert_organization(&self, organization: &Organization) -> StoreResult<()> {
        let mut state = self.write();
        if state.organizations.contains_key(&organization.id) {
            return Err(StoreError::Duplicate("organization id"));
        }
        state
            .organizations
            .insert(organization.id.clone(), organization.clone());
        Ok(())
    }

    async fn insert_organization_with_keys(
        &self,
        organization: &Organization,
        keys: &[ApiKey],
    ) -> StoreResult<()> {
        let mut state = self.write();
        if state.organizations.contains_key(&organization.id) {
            return Err(StoreError::Duplicate("organization id"));
        }
        // Every check before the first write: a failure leaves nothing behind.
        let mut hashes = HashSet::new();
        let mut ids = HashSet::new();
        for key in keys {
            let taken = state.key_ids_by_hash.contains_key(&key.key_hash)
                || state.api_keys.contains_key(&key.id);
            if taken || !hashes.insert(&key.key_hash) || !ids.insert(&key.id) {
                return Err(StoreError::Duplicate("api key"));
            }
        }
        state
            .organizations
            .insert(organization.id.clone(), organization.clone());
        for key in keys {
            state
                .key_ids_by_hash
                .insert(key.key_hash.clone(), key.id.clone());
            state.api_keys.insert(key.id.clone(), key.clone());
        }
        Ok(())
    }

    async fn get_organization(&self, id: &str) -> StoreResult<Option<Organization>> {
        Ok(self.read().organizations.get(id).cloned())
    }

    async fn find_organization_by_name(&self, name: &str) -> StoreResult<Option<Organization>> {
        Ok(self
            .read()
            .organizations
            .values()
            .filter(|o| o.name == name)
            .min_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)))
            .cloned())
    }

    async fn update_organization(
        &self,
        id: &str,
        plan: Option<&str>,
        limits: Option<&LimitOverrides>,
    ) -> StoreResult<Option<Organization>> {
        let mut state = self.write();
        let Some(org) = state.organizations.get_mut(id) else {
            return Ok(None);
        };
        if let Some(plan) = plan {
            org.plan = plan.to_owned();
        }
        if let Some(limits) = limits {
            org.limits = *limits;
        }
        Ok(Some(org.clone()))
    }

    async fn insert_api_key(&self, key: &ApiKey, max_active: u64) -> StoreResult<()> {
        let mut state = self.write();
        if state.key_ids_by_hash.contains_key(&key.key_hash) || state.api_keys.contains_key(&key.id)
        {
            return Err(StoreError::Duplicate("api key"));
        }
        let active = state
            .api_keys
            .values()
            .filter(|k| k.organization_id == key.organization_id && k.revoked_at.is_none())
            .count() as u64;
        if active >= max_active {
            return Err(StoreError::LimitReached("maxActiveKeys"));
        }
        state
            .key_ids_by_hash
            .insert(key.key_hash.clone(), key.id.clone());
        state.api_keys.insert(key.id.clone(), key.clone());
        Ok(())
    }

    async fn find_api_key(&self, key_hash: &str) -> StoreResult<Option<(ApiKey, Organization)>> {
        let state = self.read();
        Ok(state
            .key_ids_by_hash
            .get(key_hash)
            .and_then(|id| state.api_keys.get(id))
            .and_then(|key| {
                let org = state.organizations.get(&key.organization_id)?;
                Some((key.clone(), org.clone()))
            }))
    }

    async fn list_api_keys(&self, organization_id: &str) -> StoreResult<Vec<ApiKey>> {
        let mut keys: Vec<ApiKey> = self
            .read()
            .api_keys
            .values()
            .filter(|k| k.organization_id == organization_id)
            .cloned()
            .collect();
        keys.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(keys)
    }

    async fn revoke_api_key(&self, id: &str, now: Timestamp) -> StoreResult<Option<ApiKey>> {
        let mut state = self.write();
        Ok(state.api_keys.get_mut(id).map(|key| {
            key.revoked_at.get_or_insert(now);
            key.clone()
        }))
    }

    async fn insert_property(&self, property: &Property) -> StoreResult<()> {
        let mut state = self.write();
        let url_key = (property.organization_id.clone(), property.url.clone());
        if state.property_urls.contains_key(&url_key) {
            return Err(StoreError::Duplicate("property url"));
        }
        let (owner, at, id) = (&property.organization_id, property.created_at, &property.id);
        if !state.properties.insert(owner, at, id, property) {
            return Err(StoreError::Duplicate("property id"));
        }
        state.property_urls.insert(url_key, property.id.clone());
        Ok(())
    }

    async fn get_property(&self, id: &str) -> StoreResult<Option<Property>> {
        Ok(self.read().properties.get(id))
    }

    async fn get_properties(&self, ids: &[String]) -> StoreResult<Vec<Property>> {
        let unique: BTreeSet<&String> = ids.iter().collect();
        let state = self.read();
        Ok(unique
            .into_iter()
            .filter_map(|id| state.properties.get(id))
            .collect())
    }

    async fn find_property_by_url(
        &self,
        organization_id: &str,
        url: &str,
    ) -> StoreResult<Option<Property>> {
        let state = self.read();
        Ok(state
            .property_urls
            .get(&(organization_id.to_owned(), url.to_owned()))
            .and_then(|id| state.properties.get(id)))
    }

    async fn list_properties(
        &self,
        organization_id: &str,
        page: &PageRequest,
    ) -> StoreResult<Vec<Property>> {
        let state = self.read();
        state.properties.page(organization_id, page, |_| true)
    }

    async fn count_properties(&self, organization_id: &str) -> StoreResult<u64> {
        Ok(self
            .read()
            .properties
            .values()
            .filter(|p| p.organization_id == organization_id)
            .count() as u64)
    }

    async fn set_property_verified(&self, id: &str) -> StoreResult<Option<Property>> {
        Ok(self.write().properties.update(id, |p| p.verified = true))
    }

    async fn set_property_gsc_site(
        &self,
        id: &str,
        site_url: Option<&str>,
    ) -> StoreResult<Option<Property>> {
        Ok(self
            .write()
            .properties
            .update(id, |p| p.gsc_site_url = site_url.map(str::to_owned)))
    }

    async fn insert_job_counted(
        &self,
        job: &Job,
        month: &str,
        scans_limit: u64,
    ) -> StoreResult<()> {
        let mut state = self.write();
        if state.jobs.contains(&job.id) {
            return Err(StoreError::Duplicate("job id"));
        }
        let usage_key = (job.organization_id.clone(), month.to_owned());
        let used = state.usage.get(&usage_key).map_or(0, |u| u.scans);
        if used >= scans_limit {
            return Err(StoreError::LimitReached("scansPerMonth"));
        }
        state.usage.entry(usage_key).or_default().scans = used + 1;
        state
            .jobs
            .insert(&job.organization_id, job.created_at, &job.id, job);
        Ok(())
    }

    async fn get_job(&self, id: &str) -> StoreResult<Option<Job>> {
        Ok(self.read().jobs.get(id))
    }

    async fn list_jobs(
        &self,
        organization_id: &str,
        filter: &JobFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<Job>> {
        let state = self.read();
        state
            .jobs
            .page(organization_id, page, |j| job_matches(j, filter))
    }

    async fn count_active_jobs(&self, organization_id: &str) -> StoreResult<u64> {
        Ok(self
            .read()
            .jobs
            .values()
            .filter(|j| j.organization_id == organization_id && j.status.is_active())
            .count() as u64)
    }

    async fn latest_jobs_for_properties(&self, property_ids: &[String]) -> StoreResult<Vec<Job>> {
        let wanted: HashSet<&str> = property_ids.iter().map(String::as_str).collect();
        let state = self.read();
        let mut latest: HashMap<&str, &Job> = HashMap::new();
        for job in state
            .jobs
            .values()
            .filter(|j| wanted.contains(j.property_id.as_str()))
        {
            let entry = latest.entry(job.property_id.as_str()).or_insert(job);
            if (job.created_at, &job.id) > (entry.created_at, &entry.id) {
                *entry = job;
            }
        }
        Ok(latest.into_values().cloned().collect())
    }

    async fn cancel_job(&self, id: &str, now: Timestamp) -> StoreResult<CancelOutcome> {
        let mut state = self.write();
        let Some(job) = state.jobs.get_mut(id) else {
            return Ok(CancelOutcome::NotFound);
        };
        if !job.status.is_active() {
            return Ok(CancelOutcome::NotCancellable(job.clone()));
        }
        job.status = JobStatus::Cancelled;
        job.completed_at = Some(now);
        Ok(CancelOutcome::Cancelled(job.clone()))
    }

    async fn start_job(&self, id: &str, now: Timestamp) -> StoreResult<Option<Job>> {
        let mut state = self.write();
        Ok(state
            .jobs
            .get_mut(id)
            .filter(|j| j.status == JobStatus::Pending)
            .map(|job| {
                job.status = JobStatus::Processing;
                job.started_at = Some(now);
                job.clone()
            }))
    }

    async fn set_job_progress(&self, id: &str, progress: u8) -> StoreResult<Option<Job>> {
        let mut state = self.write();
        Ok(state
            .jobs
            .get_mut(id)
            .filter(|j| j.status == JobStatus::Processing)
            .map(|job| {
                job.progress = progress.min(100);
                job.clone()
            }))
    }

    async fn finish_job(
        &self,
        id: &str,
        outcome: &JobOutcome,
        now: Timestamp,
    ) -> StoreResult<Option<Job>> {
        let mut state = self.write();
        Ok(state
            .jobs
            .get_mut(id)
            .filter(|j| j.status == JobStatus::Processing)
            .map(|job| {
                match outcome {
                    JobOutcome::Completed(result) => {
                        job.status = JobStatus::Completed;
                        job.progress = 100;
                        job.result = Some(*result);
                    }
                    JobOutcome::Failed(error) => {
                        job.status = JobStatus::Failed;
                        job.error = Some(error.clone());
                    }
                }
                job.completed_at = Some(now);
                job.clone()
            }))
    }

    async fn job_counts_by_type(
        &self,
        organization_id: &str,
        from: Timestamp,
        to: Timestamp,
    ) -> StoreResult<Vec<(String, JobCounts)>> {
        let state = self.read();
        let mut counts: BTreeMap<String, JobCounts> = BTreeMap::new();
        for job in state.jobs.values().filter(|j| {
            j.organization_id == organization_id && j.created_at >= from && j.created_at < to
        }) {
            let entry = counts.entry(job.job_type.clone()).or_default();
            entry.total += 1;
            entry.completed += u64::from(job.status == JobStatus::Completed);
            entry.failed += u64::from(job.status == JobStatus::Failed);
        }
        Ok(counts.into_iter().collect())
    }

    async fn insert_issue(&self, issue: &Issue) -> StoreResult<()> {
        let mut state = self.write();
        if !state
            .issues
            .insert(&issue.property_id, issue.created_at, &issue.id, issue)
        {
            return Err(StoreError::Duplicate("issue id"));
        }
        Ok(())
    }

    async fn get_issue(&self, id: &str) -> StoreResult<Option<Issue>> {
        Ok(self.read().issues.get(id))
    }

    async fn set_issue_fixed(&self, id: &str, now: Timestamp) -> StoreResult<Option<Issue>> {
        Ok(self.write().issues.update(id, |issue| {
            issue.status = IssueStatus::Fixed;
            issue.fixed_at.get_or_insert(now);
        }))
    }

    async fn list_issues(
        &self,
        property_id: &str,
        filter: &IssueFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<Issue>> {
        let state = self.read();
        state.issues.page(property_id, page, |i| {
            filter.scan_kind.is_none_or(|k| i.scan_kind == k)
                && filter.status.is_none_or(|s| i.status == s)
        })
    }

    async fn issue_summary(&self, property_id: &str) -> StoreResult<IssueSummary> {
        let state = self.read();
        let mut summary = IssueSummary::default();
        for issue in state
            .issues
            .values()
            .filter(|i| i.property_id == property_id)
        {
            match issue.status {
                IssueStatus::Open => summary.open += 1,
                IssueStatus::Resolved => summary.resolved += 1,
                IssueStatus::Fixed => summary.fixed += 1,
            }
            summary.total += 1;
        }
        Ok(summary)
    }

    async fn insert_report(&self, report: &Report) -> StoreResult<()> {
        let mut state = self.write();
        let (owner, at, token) = (&report.organization_id, report.created_at, &report.token);
        if !state.reports.insert(owner, at, token, report) {
            return Err(StoreError::Duplicate("report token"));
        }
        Ok(())
    }

    async fn get_report(&self, token: &str) -> StoreResult<Option<Report>> {
        Ok(self.read().reports.get(token))
    }

    async fn list_live_reports(
        &self,
        organization_id: &str,
        now: Timestamp,
        page: &PageRequest,
    ) -> StoreResult<Vec<Report>> {
        let state = self.read();
        state
            .reports
            .page(organization_id, page, |r| r.expires_at > now)
    }

    async fn increment_report_views(&self, token: &str) -> StoreResult<Option<Report>> {
        Ok(self.write().reports.update(token, |r| r.view_count += 1))
    }

    async fn get_usage(&self, organization_id: &str, month: &str) -> StoreResult<UsageCounters> {
        Ok(self
            .read()
            .usage
            .get(&(organization_id.to_owned(), month.to_owned()))
            .copied()
            .unwrap_or_default())
    }

    async fn add_usage(
        &self,
        organization_id: &str,
        month: &str,
        delta: &UsageCounters,
    ) -> StoreResult<UsageCounters> {
        let mut state = self.write();
        let entry = state
            .usage
            .entry((organization_id.to_owned(), month.to_owned()))
            .or_default();
        *entry = entry.plus(delta);
        Ok(*entry)
    }

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

    async fn dump(&self) -> StoreResult<StoreDump> {
        let state = self.read();
        Ok(StoreDump {
            organizations: state.organizations.values().cloned().collect(),
            api_keys: state.api_keys.values().cloned().collect(),
            properties: state.properties.values().cloned().collect(),
            jobs: state.jobs.values().cloned().collect(),
            issues: state.issues.values().cloned().collect(),
            reports: state.reports.values().cloned().collect(),
            usage: state
                .usage
                .iter()
                .map(|((org, month), counters)| (org.clone(), month.clone(), *counters))
                .collect(),
        })
    }
}
