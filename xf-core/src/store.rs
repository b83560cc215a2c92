//! The storage trait every backend implements, and the value types of its operations.
//!
//! Every rule that must hold across app instances sharing one store is an operation here that
//! the backend performs atomically: property uniqueness, the scan quota, job cancellation,
//! rate-limit counters, idempotency claims and the key cap. The use cases in [`crate::Xf`]
//! never read-then-write for those rules. The conformance suite in [`crate::testing`] pins
//! down the behaviour of each operation; both backends run all of it.

use async_trait::async_trait;

use crate::error::StoreError;
use crate::model::{
    ApiKey, Issue, IssueStatus, IssueSummary, Job, JobCounts, JobOutcome, JobStatus, Organization,
    Property, Report, ScanKind, UsageCounters,
};
use crate::plans::LimitOverrides;
use crate::time::Timestamp;

/// The result type of storage operations.
pub type StoreResult<T> = Result<T, StoreError>;

/// A position in a newest-first list: items strictly older than this are next.
///
/// Ids (and report tokens) compare as byte strings, in Rust's `String` order; an SQL backend
/// compares them with `COLLATE "C"`, so `Z` sorts before `a` everywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct After {
    /// The last item's `createdAt`.
    pub created_at: Timestamp,
    /// The last item's id (or token, for reports), the tie-breaker.
    pub id: String,
}

/// One page request: ordered by `created_at` desc, then id desc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    /// At most this many items. Callers ask for one more than they show, to learn whether
    /// another page exists.
    pub limit: usize,
    /// Start after this position; `None` for the first page.
    pub after: Option<After>,
}

/// Filters of `GET /jobs`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobFilter {
    /// Only jobs in this state.
    pub status: Option<JobStatus>,
    /// Only jobs of this property.
    pub property_id: Option<String>,
    /// Only jobs of this type.
    pub job_type: Option<String>,
}

/// Filters of `GET /properties/{id}/issues`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IssueFilter {
    /// Only page or only site issues.
    pub scan_kind: Option<ScanKind>,
    /// Only issues in this state.
    pub status: Option<IssueStatus>,
}

/// The outcome of [`Store::cancel_job`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The job was pending or processing and is now cancelled.
    Cancelled(Job),
    /// The job had already finished; it is returned unchanged.
    NotCancellable(Job),
    /// No job with that id.
    NotFound,
}

/// One rate-limit counter taking part in a check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateBucket {
    /// Names the counter, e.g. `key:key_…:read`.
    pub name: String,
    /// Start of the fixed window the counter belongs to.
    pub window_start: Timestamp,
    /// The most the counter may reach in the window.
    pub limit: u64,
    /// Whether this request counts against it (`false`: only read it).
    pub consume: bool,
}

/// The outcome of [`Store::hit_rate_limits`].
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

/// The outcome of [`Store::claim_idempotency_key`].
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

/// A copy of all domain data, for tests that must prove nothing changed. Rate-limit counters
/// and idempotency records are bookkeeping and are not part of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreDump {
    /// All organizations, by id.
    pub organizations: Vec<Organization>,
    /// All API keys, by id.
    pub api_keys: Vec<ApiKey>,
    /// All properties, by id.
    pub properties: Vec<Property>,
    /// All jobs, by id.
    pub jobs: Vec<Job>,
    /// All issues, by id.
    pub issues: Vec<Issue>,
    /// All reports, by token.
    pub reports: Vec<Report>,
    /// All usage rows: organization id, month (`YYYY-MM`), counters; by organization and month.
    pub usage: Vec<(String, String, UsageCounters)>,
}

/// A storage backend. Object-safe: the facade holds an `Arc<dyn Store>`.
#[async_trait]
pub trait Store: Send + Sync + std::fmt::Debug {
    /// Checks that the backend answers.
    async fn ping(&self) -> StoreResult<()>;

    // ---- organizations and keys ----

    /// Inserts a new organization.
    async fn insert_organization(&self, organization: &Organization) -> StoreResult<()>;

    /// Inserts a new organization together with its first keys, atomically: either the
    /// organization and every key are stored, or nothing is. A key whose hash is already
    /// stored (in any organization), or two keys sharing a hash, fail with
    /// [`StoreError::Duplicate`], as in [`Store::insert_api_key`]. The key cap is not checked
    /// here: the organization has no other keys, so the caller compares `keys.len()` with it.
    async fn insert_organization_with_keys(
        &self,
        organization: &Organization,
        keys: &[ApiKey],
    ) -> StoreResult<()>;

    /// The organization with this id.
    async fn get_organization(&self, id: &str) -> StoreResult<Option<Organization>>;

    /// The first-created organization with exactly this name (case-sensitive; on equal
    /// creation times, the one with the smallest id).
    async fn find_organization_by_name(&self, name: &str) -> StoreResult<Option<Organization>>;

    /// Sets the plan and/or replaces the limit overrides; returns the updated organization.
    async fn update_organization(
        &self,
        id: &str,
        plan: Option<&str>,
        limits: Option<&LimitOverrides>,
    ) -> StoreResult<Option<Organization>>;

    /// Inserts a key unless the organization already has `max_active` unrevoked keys, in
    /// which case it fails with [`StoreError::LimitReached`]. Atomic with respect to
    /// concurrent inserts for the same organization. A key whose hash is already stored (in
    /// any organization) fails with [`StoreError::Duplicate`]. Nothing is stored on failure.
    async fn insert_api_key(&self, key: &ApiKey, max_active: u64) -> StoreResult<()>;

    /// The key with this hash and its organization, revoked or not.
    async fn find_api_key(&self, key_hash: &str) -> StoreResult<Option<(ApiKey, Organization)>>;

    /// The organization's keys, revoked or not, oldest first (equal creation times: smallest
    /// id first).
    async fn list_api_keys(&self, organization_id: &str) -> StoreResult<Vec<ApiKey>>;

    /// Revokes a key (keeping the first revocation time); returns it, or `None` if unknown.
    async fn revoke_api_key(&self, id: &str, now: Timestamp) -> StoreResult<Option<ApiKey>>;

    // ---- properties ----

    /// Inserts a property; [`StoreError::Duplicate`] when the organization already has one
    /// with the same URL.
    async fn insert_property(&self, property: &Property) -> StoreResult<()>;

    /// The property with this id (any organization: the caller checks ownership).
    async fn get_property(&self, id: &str) -> StoreResult<Option<Property>>;

    /// The properties with these ids that exist (any organization), in no particular order.
    /// One call for the properties of a whole page of reports.
    async fn get_properties(&self, ids: &[String]) -> StoreResult<Vec<Property>>;

    /// The organization's property with exactly this normalised URL.
    async fn find_property_by_url(
        &self,
        organization_id: &str,
        url: &str,
    ) -> StoreResult<Option<Property>>;

    /// A page of the organization's properties, newest first.
    async fn list_properties(
        &self,
        organization_id: &str,
        page: &PageRequest,
    ) -> StoreResult<Vec<Property>>;

    /// How many properties the organization has.
    async fn count_properties(&self, organization_id: &str) -> StoreResult<u64>;

    /// Marks a property verified; returns it, or `None` if unknown.
    async fn set_property_verified(&self, id: &str) -> StoreResult<Option<Property>>;

    /// Links (or unlinks, with `None`) a Search Console site; returns the property.
    async fn set_property_gsc_site(
        &self,
        id: &str,
        site_url: Option<&str>,
    ) -> StoreResult<Option<Property>>;

    // ---- jobs ----

    /// Inserts a live job and counts it in the organization's monthly `scans` meter, unless
    /// the meter for `month` already reached `scans_limit`: then nothing is written and it
    /// fails with [`StoreError::LimitReached`]. Atomic across instances.
    async fn insert_job_counted(&self, job: &Job, month: &str, scans_limit: u64)
        -> StoreResult<()>;

    /// The job with this id (any organization: the caller checks ownership).
    async fn get_job(&self, id: &str) -> StoreResult<Option<Job>>;

    /// A page of the organization's jobs matching `filter`, newest first.
    async fn list_jobs(
        &self,
        organization_id: &str,
        filter: &JobFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<Job>>;

    /// How many of the organization's jobs are pending or processing.
    async fn count_active_jobs(&self, organization_id: &str) -> StoreResult<u64>;

    /// For each of these properties that has jobs, its most recently created job in any
    /// state (on equal creation times, the greatest id: the job that heads a newest-first
    /// list); in no particular order. One call for a whole page of properties.
    async fn latest_jobs_for_properties(&self, property_ids: &[String]) -> StoreResult<Vec<Job>>;

    /// Cancels the job if it is pending or processing, keeping its progress and setting
    /// `completedAt` to `now`. Atomic: a job cannot be both cancelled and finished.
    async fn cancel_job(&self, id: &str, now: Timestamp) -> StoreResult<CancelOutcome>;

    /// Moves a pending job to processing (setting `startedAt`); `None` unless it was pending.
    async fn start_job(&self, id: &str, now: Timestamp) -> StoreResult<Option<Job>>;

    /// Records progress of a processing job; `None` unless it is processing.
    async fn set_job_progress(&self, id: &str, progress: u8) -> StoreResult<Option<Job>>;

    /// Finishes a processing job (completed with progress 100 and a result, or failed with an
    /// error); `None` unless it was processing, so a cancelled job stays cancelled.
    async fn finish_job(
        &self,
        id: &str,
        outcome: &JobOutcome,
        now: Timestamp,
    ) -> StoreResult<Option<Job>>;

    /// Counts of the organization's jobs created in `[from, to)`, per job type: one entry for
    /// each type with at least one such job, sorted by type (bytewise).
    async fn job_counts_by_type(
        &self,
        organization_id: &str,
        from: Timestamp,
        to: Timestamp,
    ) -> StoreResult<Vec<(String, JobCounts)>>;

    // ---- issues ----

    /// Inserts an issue.
    async fn insert_issue(&self, issue: &Issue) -> StoreResult<()>;

    /// The issue with this id (any organization: the caller checks ownership).
    async fn get_issue(&self, id: &str) -> StoreResult<Option<Issue>>;

    /// Marks an issue fixed at `now` (keeping an earlier fix time); returns it.
    async fn set_issue_fixed(&self, id: &str, now: Timestamp) -> StoreResult<Option<Issue>>;

    /// A page of the property's issues matching `filter`, newest first.
    async fn list_issues(
        &self,
        property_id: &str,
        filter: &IssueFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<Issue>>;

    /// Counts of all the property's issues by state.
    async fn issue_summary(&self, property_id: &str) -> StoreResult<IssueSummary>;

    // ---- reports ----

    /// Inserts a report; [`StoreError::Duplicate`] if the token exists.
    async fn insert_report(&self, report: &Report) -> StoreResult<()>;

    /// The report with this token (any organization: the caller checks ownership).
    async fn get_report(&self, token: &str) -> StoreResult<Option<Report>>;

    /// A page of the organization's reports that expire after `now`, newest first (the
    /// page position's id is the token).
    async fn list_live_reports(
        &self,
        organization_id: &str,
        now: Timestamp,
        page: &PageRequest,
    ) -> StoreResult<Vec<Report>>;

    /// Adds one view; returns the report.
    async fn increment_report_views(&self, token: &str) -> StoreResult<Option<Report>>;

    // ---- usage ----

    /// The organization's counters for `month` (`YYYY-MM`); zeros when none were recorded.
    async fn get_usage(&self, organization_id: &str, month: &str) -> StoreResult<UsageCounters>;

    /// Adds `delta` to the organization's counters for `month`; returns the new totals.
    async fn add_usage(
        &self,
        organization_id: &str,
        month: &str,
        delta: &UsageCounters,
    ) -> StoreResult<UsageCounters>;

    // ---- rate limits and idempotency ----

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

    // ---- maintenance ----

    /// Deletes rate-limit windows that started before `windows_before` and idempotency
    /// records created before `idempotency_before`; returns how many rows went.
    async fn purge_expired(
        &self,
        windows_before: Timestamp,
        idempotency_before: Timestamp,
    ) -> StoreResult<u64>;

    /// A copy of all domain data (see [`StoreDump`]).
    async fn dump(&self) -> StoreResult<StoreDump>;
}
