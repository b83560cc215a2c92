//! The storage conformance suite (crate feature `testing`).
//!
//! Every backend must pass all of it. Each behaviour is one `pub async fn <behaviour>(store:
//! Arc<dyn TestStore>)` that panics when the store breaks the contract documented on the
//! traits of [`crate::store`]. A [`TestStore`] is a [`Store`] that can also [`Dump`] its data.
//! The behaviours sit in one module per aggregate, as the store's traits do (organizations and
//! their keys, properties, jobs as the API sees them, the job engine's queue, the event
//! outbox, issues, reports, usage, the request guards, and webhooks with their delivery queue
//! and log), and are all re-exported here.
//!
//! Each behaviour is self-contained: it creates its own organizations, properties, jobs, rate
//! buckets and idempotency scopes with fresh ids, so behaviours may share one store and run in
//! any order or at the same time, and never rely on the store being empty. A few operations
//! reach beyond the records they name; behaviours use them so that they neither disturb nor
//! are disturbed by the others:
//!
//! - A claim takes any due pending job of the types it names: every job a behaviour claims has
//!   a type of that behaviour's own ([`unique_job_type`]), and the behaviour claims exactly
//!   those types.
//! - A rescue takes up every expired lease: every `rescue_expired` of the suite is at
//!   [`rescue_time`]. A lease meant to expire ends before it (so any behaviour's rescue may
//!   take the job up, always with the same `now` and so the same result); every other lease
//!   ends after it ([`kept_lease`]). A behaviour checks its own jobs after a rescue, never the
//!   rescue's counts, which include other behaviours' jobs.
//! - The outbox holds everyone's events: behaviours look at their own jobs' events.
//! - A listener hears everyone's signals: behaviours wait for the one they expect.
//! - A webhook fan-out takes everyone's events and a delivery claim everyone's due messages:
//!   only [`webhook_delivery_queue_lifecycle`] fans out, claims and records attempts, and it
//!   looks at its own webhooks' messages only, never at the counts. Only the webhook
//!   behaviours' organizations have webhooks.
//! - A delivery purge takes every old log row: only
//!   [`webhook_purge_deliveries_removes_old_rows`] purges, before 2026-06-01; every other log
//!   row of the suite is at or after 2027-01-01.
//!
//! A backend's test crate runs the whole suite with [`store_conformance!`](crate::store_conformance),
//! as `xf-storage-memory/tests/conformance.rs` and `xf-storage-postgres/tests/conformance.rs` do:
//!
//! ```text
//! async fn make_store() -> std::sync::Arc<dyn xf_core::testing::TestStore> {
//!     std::sync::Arc::new(xf_storage_memory::MemoryStore::new())
//! }
//! xf_core::store_conformance!(make_store);
//! ```
//!
//! The macro expands to one `#[tokio::test]` per behaviour (on a multi-threaded runtime, so the
//! concurrency behaviours really run in parallel); the crate using it needs `tokio` (with the
//! `macros` and `rt-multi-thread` features) as a dev-dependency. Adding a behaviour means
//! writing its function in the module of its aggregate and adding its name to the one list of
//! behaviours, in `__with_conformance_behaviours!` in this file; a unit test of this module
//! fails while the functions and the list disagree.
//!
//! Conventions: every timestamp has millisecond precision and lies in or after 2026, except in
//! [`purge_expired_removes_old_rows`], which alone uses instants before 2000 (see there). Jobs
//! are created in 2026, rescued at [`rescue_time`] (2028) and hold leases that last until
//! [`kept_lease`] (2030) unless they are meant to expire. Webhook delivery log rows are
//! created at or after 2027-01-01, except in [`webhook_purge_deliveries_removes_old_rows`],
//! which alone logs rows in early 2026 and purges those before 2026-06-01. Ids compare as byte
//! strings.
//!
//! The record constructors ([`organization`], [`api_key`], [`property`], [`job`], [`issue`],
//! [`report`], [`rate_bucket`], [`idempotency_request`], [`webhook`], [`delivery`]) are public so that other tests can
//! seed stores with them.

mod counting;
mod events;
mod gsc;
mod guards;
mod history;
mod issues;
mod jobs;
mod media;
mod organizations;
mod properties;
mod queue;
mod reports;
mod schedules;
mod text;
mod usage;
mod webhooks;

pub use counting::Counting;
pub use events::*;
pub use gsc::*;
pub use guards::*;
pub use history::*;
pub use issues::*;
pub use jobs::*;
pub use media::*;
pub use organizations::*;
pub use properties::*;
pub use queue::*;
pub use reports::*;
pub use schedules::*;
pub use text::*;
pub use usage::*;
pub use webhooks::*;

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::Duration;
use rand::distributions::{Alphanumeric, DistString};
use serde_json::Value;
use uuid::Uuid;

use crate::auth;
use crate::error::StoreError;
use crate::ids::{new_id, ApiKeyId, IssueId, JobId, OrganizationId, PropertyId};
use crate::model::{
    ApiKey, Event, EventType, Issue, IssueStatus, JobRecord, JobResult, JobStatus, JobSubject,
    KeyMode, Organization, Property, Report, ScanKind, ScanPayload, Severity, UsageCounters,
    SEO_SCAN,
};
use crate::plans::LimitOverrides;
use crate::store::{
    After, Attempt, AttemptOutcome, CancelOutcome, ClaimRequest, ClaimedJob, Finish,
    IdempotencyRequest, PageRequest, QueueListener, QueueSignal, RateBucket, Store, StoreResult,
};
use crate::time::Timestamp;

// ---------------------------------------------------------------------------------------------
// Record constructors
// ---------------------------------------------------------------------------------------------

/// The plan of organizations built by [`organization`]: `growth`, which includes the
/// developer API in the default catalog.
pub const PLAN: &str = "growth";

/// The month (`YYYY-MM`) of [`base_time`].
pub const BASE_MONTH: &str = "2026-11";

/// Parses an RFC 3339 literal such as `2026-11-01T10:00:00.250Z`.
///
/// # Panics
///
/// If `text` is not RFC 3339: it is meant for literals in tests.
pub fn at(text: &str) -> Timestamp {
    Timestamp::parse_rfc3339(text).unwrap_or_else(|| panic!("not an RFC 3339 timestamp: {text}"))
}

/// The instant records built here are created at unless told otherwise:
/// `2026-11-01T00:00:00.000Z`.
pub fn base_time() -> Timestamp {
    at("2026-11-01T00:00:00.000Z")
}

/// The `now` of every [`rescue_expired`](crate::store::QueueStore::rescue_expired) of the
/// suite: `2028-01-01T00:00:00.000Z`, after every job of the suite was created.
///
/// A lease that a behaviour means to expire ends before it; every other lease ends after it
/// ([`kept_lease`]). So whichever behaviour's rescue takes up an expired lease, it does so
/// with this `now` and so with the same result, and no rescue takes up a lease that is meant
/// to last. A test that shares a store with the suite and rescues should keep to this too.
pub fn rescue_time() -> Timestamp {
    at("2028-01-01T00:00:00.000Z")
}

/// A lease no rescue of the suite takes up: `2030-01-01T00:00:00.000Z`, after
/// [`rescue_time`].
pub fn kept_lease() -> Timestamp {
    at("2030-01-01T00:00:00.000Z")
}

/// A job type no other caller uses: `label`, a hyphen and 32 hex digits (a job type is made of
/// lower-case letters, digits and hyphens). A claim takes due jobs of any organization, so a
/// test that claims from a shared store gives the jobs it claims a type of its own. Types
/// made from labels sort as the labels do, as long as no label is a prefix of another.
pub fn unique_job_type(label: &str) -> String {
    format!("{label}-{}", Uuid::new_v4().simple())
}

/// A new organization named `name`: a fresh id, plan [`PLAN`], no shop domain, no limit
/// overrides, created at [`base_time`]. Not stored: pass it to
/// [`OrganizationStore::insert_organization`](crate::store::OrganizationStore::insert_organization).
pub fn organization(name: &str) -> Organization {
    Organization {
        id: OrganizationId::new(),
        name: name.to_owned(),
        plan: PLAN.to_owned(),
        shop_domain: None,
        limits: LimitOverrides::default(),
        created_at: base_time(),
    }
}

/// A new, unrevoked API key of the organization whose secret is `key` (only its hash, as
/// [`auth::hash_key`] computes it, is kept), with a fresh id. Use [`auth::generate_key`] for a
/// random, well-formed `key`; a request authenticated with `key` then finds this record. Not
/// stored: pass it to
/// [`OrganizationStore::insert_api_key`](crate::store::OrganizationStore::insert_api_key) (or,
/// with its new organization, to
/// [`OrganizationStore::insert_organization_with_keys`](crate::store::OrganizationStore::insert_organization_with_keys)).
pub fn api_key(
    organization_id: &OrganizationId,
    mode: KeyMode,
    key: &str,
    created_at: Timestamp,
) -> ApiKey {
    ApiKey {
        id: ApiKeyId::new(),
        organization_id: organization_id.clone(),
        mode,
        key_hash: auth::hash_key(key),
        prefix: auth::shown_prefix(key),
        created_at,
        revoked_at: None,
        last_used_at: None,
    }
}

/// A key of `mode` with a fresh random secret, for `organization_id`.
pub fn random_key(
    organization_id: &OrganizationId,
    mode: KeyMode,
    created_at: Timestamp,
) -> ApiKey {
    api_key(organization_id, mode, &auth::generate_key(mode), created_at)
}

/// A new, unverified property of the organization at `url` (taken as already normalised),
/// named after the URL's host (or the URL itself when it has none), with a fresh id and no
/// Search Console site. Not stored: pass it to
/// [`PropertyStore::insert_property`](crate::store::PropertyStore::insert_property).
pub fn property(organization_id: &OrganizationId, url: &str, created_at: Timestamp) -> Property {
    let name = url::Url::parse(url)
        .ok()
        .and_then(|parsed| parsed.host_str().map(str::to_owned))
        .unwrap_or_else(|| url.to_owned());
    Property {
        id: PropertyId::new(),
        organization_id: organization_id.clone(),
        name,
        url: url.to_owned(),
        verified: false,
        created_at,
        gsc_site_url: None,
    }
}

/// A new pending `seo-scan` job of `property` in `organization`, as the scan use case builds
/// it ([`JobRecord::new`]): a fresh id, due at once, a budget of 25 pages and depth 2, the
/// subject copied from the property and the organization. Not stored: pass it to
/// [`JobStore::insert_job_counted`](crate::store::JobStore::insert_job_counted) or
/// [`JobStore::insert_jobs`](crate::store::JobStore::insert_jobs).
pub fn job(organization: &Organization, property: &Property, created_at: Timestamp) -> JobRecord {
    let payload = ScanPayload {
        max_pages: 25,
        max_depth: 2,
        render: crate::model::RenderMode::Never,
    };
    JobRecord::new(
        organization.id.clone(),
        SEO_SCAN,
        serde_json::to_value(payload).expect("a scan payload is JSON"),
        JobSubject {
            property_id: property.id.clone(),
            property_name: property.name.clone(),
            tenant_label: organization.name.clone(),
            shop_domain: organization.shop_domain.clone(),
        },
        created_at,
    )
}

/// A new issue of `property` found by the job `job_id`, with a fresh id, first and last seen
/// at `created_at`. Page issues are `missing_title` warnings on `<property url>/about`; site
/// issues are `missing_sitemap` warnings without a URL. A `Resolved` issue gets
/// `resolvedAt = created_at`, a `Fixed` one `fixedAt = created_at`. Not stored: pass it to
/// [`IssueStore::insert_issue`](crate::store::IssueStore::insert_issue).
pub fn issue(
    property: &Property,
    job_id: &JobId,
    scan_kind: ScanKind,
    status: IssueStatus,
    created_at: Timestamp,
) -> Issue {
    // Each issue gets a subject of its own, so any number of them can share a property.
    let id = IssueId::new();
    let (issue_type, url, subject, evidence) = match scan_kind {
        ScanKind::Page => {
            let url = format!("{}/about/{id}", property.url.trim_end_matches('/'));
            ("title_missing", Some(url.clone()), url, "no <title>")
        }
        ScanKind::Site => (
            "sitemap_missing",
            None,
            format!("sitemap {id}"),
            "no Sitemap line in robots.txt and no /sitemap.xml",
        ),
    };
    Issue {
        id,
        organization_id: property.organization_id.clone(),
        property_id: property.id.clone(),
        job_id: job_id.clone(),
        scan_kind,
        issue_type: issue_type.to_owned(),
        title: "A check of the catalogue".to_owned(),
        severity: Severity::Medium,
        url,
        evidence: evidence.to_owned(),
        how_to_fix: "Fix it.".to_owned(),
        subject,
        status,
        created_at,
        last_seen_at: created_at,
        resolved_at: (status == IssueStatus::Resolved).then_some(created_at),
        fixed_at: (status == IssueStatus::Fixed).then_some(created_at),
    }
}

/// A new report of `property` showing the scan `scan_id`, with a random 32-character base62
/// token (as the report use case makes them) and no views. Not stored: pass it to
/// [`ReportStore::insert_report`](crate::store::ReportStore::insert_report).
pub fn report(
    property: &Property,
    scan_id: &JobId,
    created_at: Timestamp,
    expires_at: Timestamp,
) -> Report {
    Report {
        token: random_token(),
        organization_id: property.organization_id.clone(),
        property_id: property.id.clone(),
        scan_id: scan_id.clone(),
        expires_at,
        view_count: 0,
        created_at,
    }
}

/// A rate-limit bucket for
/// [`GuardStore::hit_rate_limits`](crate::store::GuardStore::hit_rate_limits).
pub fn rate_bucket(name: &str, window_start: Timestamp, limit: u64, consume: bool) -> RateBucket {
    RateBucket {
        name: name.into(),
        window_start,
        limit,
        consume,
    }
}

/// A claim made at `now` with the service's rules: records older than 24 hours are expired,
/// unfinished claims older than 60 seconds are stale.
pub fn idempotency_request(scope: &str, fingerprint: &str, now: Timestamp) -> IdempotencyRequest {
    IdempotencyRequest {
        scope: scope.to_owned(),
        fingerprint: fingerprint.to_owned(),
        now,
        expired_before: now.plus(Duration::hours(-24)),
        stale_before: now.plus(Duration::seconds(-60)),
    }
}

// ---------------------------------------------------------------------------------------------
// What the suite runs against
// ---------------------------------------------------------------------------------------------

/// A copy of all domain data of a store: what tests compare to prove that an operation
/// changed nothing, or exactly what it should. Each list is sorted by its key (ids; report
/// tokens; usage by organization id, then month; events by id).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreDump {
    /// Every organization.
    pub organizations: Vec<Organization>,
    /// Every API key, revoked or not.
    pub api_keys: Vec<ApiKey>,
    /// Every property.
    pub properties: Vec<Property>,
    /// Every job, in any state.
    pub jobs: Vec<JobRecord>,
    /// Every issue.
    pub issues: Vec<Issue>,
    /// Every scan history record, by job id.
    pub scan_records: Vec<crate::model::ScanRecord>,
    /// Every report, expired or not.
    pub reports: Vec<Report>,
    /// Every recorded usage row: organization id, month (`YYYY-MM`) and its counters.
    pub usage: Vec<(String, String, UsageCounters)>,
    /// The whole outbox.
    pub events: Vec<Event>,
}

/// Reads out all domain data of a store; a backend implements it under its own `testing`
/// feature.
#[async_trait]
pub trait Dump: Send + Sync {
    /// A copy of all domain data, each list sorted by its key.
    async fn dump(&self) -> StoreResult<StoreDump>;
}

/// What the suite runs against: a [`Store`] that can [`Dump`] its data. Every such type is
/// one; an `Arc<dyn TestStore>` upcasts to an `Arc<dyn Store>`.
pub trait TestStore: Store + Dump {}

impl<T: Store + Dump + ?Sized> TestStore for T {}

// ---------------------------------------------------------------------------------------------
// Shared helpers of the behaviours
// ---------------------------------------------------------------------------------------------

/// A scans limit no behaviour reaches, for jobs that are not about the quota.
const NO_SCAN_LIMIT: u64 = 1_000_000;

/// How long a behaviour waits for what other tasks do: a listener to hear a signal, a rescue
/// running at the same time to let go of a job.
const WAIT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// `label` made unique: for names, scopes and buckets.
fn unique(label: &str) -> String {
    format!("{label} {}", new_id("t"))
}

/// A URL no other property has: `https://<fresh id>.example.com`.
fn unique_url() -> String {
    format!("https://{}.example.com", new_id("site").replace('_', "-"))
}

/// A random report token, as the report use case makes them.
fn random_token() -> String {
    Alphanumeric.sample_string(&mut rand::thread_rng(), 32)
}

/// [`base_time`] plus `n` minutes.
fn minutes(n: i64) -> Timestamp {
    base_time().plus(Duration::minutes(n))
}

/// `base` plus `n` milliseconds.
fn millis(base: Timestamp, n: i64) -> Timestamp {
    base.plus(Duration::milliseconds(n))
}

/// `base` plus `n` seconds.
fn seconds(base: Timestamp, n: i64) -> Timestamp {
    base.plus(Duration::seconds(n))
}

async fn seed_organization(store: &dyn Store, name: &str) -> Organization {
    let organization = organization(&unique(name));
    store
        .insert_organization(&organization)
        .await
        .expect("insert organization");
    organization
}

async fn seed_property(
    store: &dyn Store,
    organization: &Organization,
    created_at: Timestamp,
) -> Property {
    let property = property(&organization.id, &unique_url(), created_at);
    store
        .insert_property(&property)
        .await
        .expect("insert property");
    property
}

/// A pending job of `job_type` of `property`, created (and due) at `created_at`. Not stored.
fn typed_job(
    organization: &Organization,
    property: &Property,
    created_at: Timestamp,
    job_type: &str,
) -> JobRecord {
    JobRecord {
        job_type: job_type.to_owned(),
        ..job(organization, property, created_at)
    }
}

/// Inserts `job`, counted in the scans meter of its creation month.
async fn insert_counted(store: &dyn Store, job: &JobRecord) {
    store
        .insert_job_counted(job, &job.created_at.month_key(), NO_SCAN_LIMIT)
        .await
        .expect("insert job");
}

/// Claims up to `limit` due jobs of `job_type`.
async fn claim(
    store: &dyn Store,
    job_type: &str,
    limit: usize,
    now: Timestamp,
    lease_expires_at: Timestamp,
) -> Vec<ClaimedJob> {
    store
        .claim_jobs(&ClaimRequest {
            job_types: vec![job_type.to_owned()],
            limit,
            now,
            lease_expires_at,
        })
        .await
        .expect("claim jobs")
}

/// Claims `job`, which must be the only pending job of its type due at `now`, and checks that
/// the claim took it and nothing else.
async fn claim_one(
    store: &dyn Store,
    job: &JobRecord,
    now: Timestamp,
    lease_expires_at: Timestamp,
) -> ClaimedJob {
    let mut claimed = claim(store, &job.job_type, 10, now, lease_expires_at).await;
    assert_eq!(
        claimed.iter().map(|c| &c.job.id).collect::<Vec<_>>(),
        vec![&job.id],
        "the claim takes exactly the one due job of its type"
    );
    let claimed = claimed.remove(0);
    assert_eq!(claimed.attempt.job_id, job.id);
    claimed
}

/// Finishes one attempt; returns the store's answer for it.
async fn finish(
    store: &dyn Store,
    attempt: &Attempt,
    outcome: AttemptOutcome,
    now: Timestamp,
) -> Option<JobStatus> {
    let answers = store
        .finish_jobs(
            &[Finish {
                attempt: attempt.clone(),
                outcome,
            }],
            now,
        )
        .await
        .expect("finish jobs");
    assert_eq!(answers.len(), 1, "one answer per finished attempt");
    answers[0]
}

/// The job as stored now; it must exist.
async fn stored_job(store: &dyn Store, id: &JobId) -> JobRecord {
    store
        .get_job(id)
        .await
        .expect("get job")
        .unwrap_or_else(|| panic!("job {id} exists"))
}

/// Inserts a job of a type of its own (see [`seed_job_of_type`]), so that its claim takes
/// nothing else.
async fn seed_job(
    store: &dyn Store,
    organization: &Organization,
    property: &Property,
    created_at: Timestamp,
    status: JobStatus,
) -> JobRecord {
    let job_type = unique_job_type("seeded");
    seed_job_of_type(store, organization, property, created_at, status, &job_type).await
}

/// Inserts a job of `job_type` (counted in its creation month) and moves it to `status` with
/// the store's own transitions: claimed 1 s after creation with a [`kept_lease`] and, 2 s
/// after creation, completed with [`sample_result`] or failed; or cancelled 2 s after
/// creation without being claimed.
///
/// A claim takes every due pending job of its type, so the jobs of `job_type` that pass
/// through a claim must be seeded before those that stay pending; the claim checks that it
/// took this job alone.
async fn seed_job_of_type(
    store: &dyn Store,
    organization: &Organization,
    property: &Property,
    created_at: Timestamp,
    status: JobStatus,
    job_type: &str,
) -> JobRecord {
    let job = typed_job(organization, property, created_at, job_type);
    insert_counted(store, &job).await;
    let ended = seconds(created_at, 2);
    let job = match status {
        JobStatus::Pending => job,
        JobStatus::Cancelled => match store.cancel_job(&job.id, ended).await.expect("cancel") {
            CancelOutcome::Cancelled(cancelled) => cancelled,
            other => panic!("a pending job is cancellable, got {other:?}"),
        },
        JobStatus::Processing => {
            claim_one(store, &job, seconds(created_at, 1), kept_lease())
                .await
                .job
        }
        JobStatus::Completed | JobStatus::Failed => {
            let claimed = claim_one(store, &job, seconds(created_at, 1), kept_lease()).await;
            let outcome = if status == JobStatus::Completed {
                completed()
            } else {
                AttemptOutcome::Failed("crawl failed".to_owned())
            };
            let reached = finish(store, &claimed.attempt, outcome, ended).await;
            assert_eq!(reached, Some(status), "a current attempt finishes");
            stored_job(store, &job.id).await
        }
    };
    assert_eq!(job.status, status);
    job
}

/// Inserts a job of a type of its own (counted in its creation month) and claims it 1 s after
/// creation with a [`kept_lease`].
async fn seed_running_job(
    store: &dyn Store,
    organization: &Organization,
    property: &Property,
    created_at: Timestamp,
) -> ClaimedJob {
    let job = typed_job(
        organization,
        property,
        created_at,
        &unique_job_type("running"),
    );
    insert_counted(store, &job).await;
    claim_one(store, &job, seconds(created_at, 1), kept_lease()).await
}

/// The result of the completed jobs of the suite.
fn sample_result() -> JobResult {
    JobResult {
        score: 87,
        pages_scanned: 12,
        issues_count: 4,
    }
}

/// [`sample_result`] as a job stores it.
fn sample_result_value() -> Value {
    serde_json::to_value(sample_result()).expect("a job result is JSON")
}

/// An attempt's outcome: completed with [`sample_result`].
fn completed() -> AttemptOutcome {
    AttemptOutcome::Completed(sample_result_value())
}

/// Checks that the job has exactly one event: `event_type`, for the job's organization,
/// written at `at`. Returns it.
async fn assert_single_event(
    store: &dyn Store,
    job: &JobRecord,
    event_type: EventType,
    at: Timestamp,
) -> Event {
    let mut events = store.job_events(&job.id).await.expect("job events");
    assert_eq!(events.len(), 1, "one event for job {}: {events:?}", job.id);
    let event = events.remove(0);
    assert_eq!(
        (
            &event.organization_id,
            event.event_type,
            event.job_id(),
            event.created_at
        ),
        (&job.organization_id, event_type, Some(&job.id), at),
        "the event of job {}",
        job.id
    );
    event
}

/// Checks that the job has no event.
async fn assert_no_events(store: &dyn Store, id: &JobId) {
    assert_eq!(
        store.job_events(id).await.expect("job events"),
        vec![],
        "no event for job {id}"
    );
}

/// Rescues at [`rescue_time`] until the job, whose lease ends before it, is taken up; returns
/// the job then. One rescue may not be enough: a rescue of another behaviour, running at the
/// same time, may hold the job, and this one then passes it by.
async fn rescue_until_taken_up(store: &dyn Store, id: &JobId) -> JobRecord {
    let deadline = tokio::time::Instant::now() + WAIT_TIMEOUT;
    loop {
        store
            .rescue_expired(rescue_time())
            .await
            .expect("rescue expired leases");
        let job = stored_job(store, id).await;
        if job.status != JobStatus::Processing {
            return job;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no rescue took up job {id} within {WAIT_TIMEOUT:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// Waits until `listener` hears `expected`, skipping every other signal (those of other
/// behaviours too); fails after [`WAIT_TIMEOUT`].
async fn wait_for_signal(listener: &mut dyn QueueListener, expected: &QueueSignal) {
    let heard = tokio::time::timeout(WAIT_TIMEOUT, async {
        while listener.next().await.expect("listen") != *expected {}
    })
    .await;
    assert!(
        heard.is_ok(),
        "the listener heard no {expected:?} within {WAIT_TIMEOUT:?}"
    );
}

fn first_page(limit: usize) -> PageRequest {
    PageRequest { limit, after: None }
}

/// Sorts newest first: `created_at` desc, then the id (bytewise) desc.
fn sort_newest_first<T, K: Ord>(items: &mut [T], key: impl Fn(&T) -> (Timestamp, K)) {
    items.sort_by_key(|item| std::cmp::Reverse(key(item)));
}

/// Reads a whole list page by page, each page starting after the previous page's last item,
/// until a page comes back shorter than `page_size`. Returns the pages.
async fn walk_pages<T, F, Fut>(
    page_size: usize,
    mut fetch: F,
    position: impl Fn(&T) -> After,
) -> Vec<Vec<T>>
where
    F: FnMut(PageRequest) -> Fut,
    Fut: Future<Output = StoreResult<Vec<T>>>,
{
    let mut pages = Vec::new();
    let mut after = None;
    loop {
        let page = fetch(PageRequest {
            limit: page_size,
            after: after.clone(),
        })
        .await
        .expect("list a page");
        assert!(
            page.len() <= page_size,
            "a page holds at most `limit` items"
        );
        let done = page.len() < page_size;
        after = page.last().map(&position);
        pages.push(page);
        if done {
            return pages;
        }
        assert!(pages.len() < 1_000, "pagination does not end");
    }
}

/// Runs `count` tasks on the runtime, released together by a barrier; returns their outputs in
/// task order.
/// How many of `results` succeeded, and how many were refused with `LimitReached`.
fn tally<T>(results: &[StoreResult<T>]) -> (usize, usize) {
    let accepted = results.iter().filter(|r| r.is_ok()).count();
    let refused = results
        .iter()
        .filter(|r| matches!(r, Err(StoreError::LimitReached(_))))
        .count();
    (accepted, refused)
}

async fn run_concurrently<T, F, Fut>(count: usize, task: F) -> Vec<T>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let barrier = Arc::new(tokio::sync::Barrier::new(count));
    let handles: Vec<_> = (0..count)
        .map(|index| {
            let barrier = Arc::clone(&barrier);
            let work = task(index);
            tokio::spawn(async move {
                barrier.wait().await;
                work.await
            })
        })
        .collect();
    let mut outputs = Vec::with_capacity(count);
    for handle in handles {
        outputs.push(handle.await.expect("a concurrent task panicked"));
    }
    outputs
}

// ---------------------------------------------------------------------------------------------
// Behaviours of the whole store
// ---------------------------------------------------------------------------------------------

/// `ping` answers `Ok`, and a store set up for use has a current schema.
pub async fn ping_succeeds(store: Arc<dyn TestStore>) {
    assert_eq!(store.ping().await, Ok(()));
    assert_eq!(store.schema_is_current().await, Ok(true));
}

/// `dump` holds every inserted record in its current state, usage rows and the outbox's
/// events, each list sorted by its key.
pub async fn dump_contains_inserted_records(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Dumped").await;
    let key = random_key(&org.id, KeyMode::Live, minutes(1));
    store.insert_api_key(&key, 5).await.unwrap();
    let site = seed_property(&*store, &org, minutes(2)).await;
    let site = store
        .set_property_verified(&site.id)
        .await
        .unwrap()
        .expect("known property");
    let scan = seed_job(&*store, &org, &site, minutes(3), JobStatus::Completed).await;
    let event = assert_single_event(
        &*store,
        &scan,
        EventType::JobCompleted,
        seconds(minutes(3), 2),
    )
    .await;
    let found = issue(
        &site,
        &scan.id,
        ScanKind::Page,
        IssueStatus::Open,
        minutes(4),
    );
    store.insert_issue(&found).await.unwrap();
    let shared = report(&site, &scan.id, minutes(5), minutes(10_000));
    store.insert_report(&shared).await.unwrap();
    let shared = store
        .increment_report_views(&shared.token)
        .await
        .unwrap()
        .expect("known report");
    let usage = store
        .add_usage(
            &org.id,
            BASE_MONTH,
            &UsageCounters {
                ai_output_tokens: 12,
                ..UsageCounters::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(usage.scans, 1, "the job was counted");

    let dump = store.dump().await.unwrap();
    assert!(dump.organizations.contains(&org));
    assert!(dump.api_keys.contains(&key));
    assert!(dump.properties.contains(&site));
    assert!(dump.jobs.contains(&scan));
    assert!(dump.issues.contains(&found));
    assert!(dump.reports.contains(&shared));
    assert!(dump
        .usage
        .contains(&(org.id.to_string(), BASE_MONTH.to_owned(), usage)));
    assert!(dump.events.contains(&event));

    fn is_sorted<K: Ord>(keys: impl Iterator<Item = K>) -> bool {
        let keys: Vec<K> = keys.collect();
        keys.windows(2).all(|pair| pair[0] < pair[1])
    }
    assert!(is_sorted(dump.organizations.iter().map(|o| &o.id)));
    assert!(is_sorted(dump.api_keys.iter().map(|k| &k.id)));
    assert!(is_sorted(dump.properties.iter().map(|p| &p.id)));
    assert!(is_sorted(dump.jobs.iter().map(|j| &j.id)));
    assert!(is_sorted(dump.issues.iter().map(|i| &i.id)));
    assert!(is_sorted(dump.reports.iter().map(|r| &r.token)));
    assert!(is_sorted(dump.usage.iter().map(|(o, m, _)| (o, m))));
    assert!(is_sorted(dump.events.iter().map(|e| &e.id)));
}

// ---------------------------------------------------------------------------------------------
// The list of behaviours and the macro
// ---------------------------------------------------------------------------------------------

/// The one list of behaviours: expands to `$crate::$callback! { <the given tokens> <every
/// behaviour's name, comma-separated> }`. [`store_conformance!`](crate::store_conformance)
/// and [`BEHAVIOURS`] are made from it. Not for direct use.
#[doc(hidden)]
#[macro_export]
macro_rules! __with_conformance_behaviours {
    ($callback:ident! { $($args:tt)* }) => {
        $crate::$callback! {
            $($args)*
            // The whole store.
            ping_succeeds,
            dump_contains_inserted_records,
            // Organizations and API keys.
            organization_insert_and_get,
            organization_find_by_name_returns_first_created,
            organization_update_plan_and_limits,
            organization_with_keys_inserted_atomically,
            api_key_insert_and_find_by_hash,
            api_key_duplicate_hash_rejected,
            api_key_max_active_enforced,
            api_key_concurrent_inserts_respect_max_active,
            api_key_revoke_keeps_first_time,
            api_key_list_oldest_first,
            api_key_touch_moves_last_use_forward,
            organization_list_newest_first_by_page,
            // Properties.
            property_insert_and_get,
            property_insert_keeping_keeps_the_answer_with_it,
            property_reads_at_once_get_their_own,
            property_duplicate_url_rejected_per_organization,
            property_concurrent_duplicate_url_single_winner,
            property_get_many,
            property_find_by_url,
            property_list_newest_first,
            property_list_pages_with_keyset,
            property_list_and_count_scoped_to_organization,
            property_set_verified,
            property_set_gsc_site,
            // Jobs, the API's side.
            job_insert_counted_counts_scans,
            job_insert_counted_refuses_at_limit,
            job_insert_counted_concurrent_respects_limit,
            job_insert_jobs_all_or_nothing,
            job_get_and_list_with_filters,
            job_list_pages_with_keyset,
            job_count_active,
            job_internal_jobs_stay_out_of_the_api,
            job_latest_for_properties,
            job_counts_by_type_over_half_open_range,
            job_cancel,
            job_cancel_pending_stops_claims,
            job_cancel_running_stops_its_attempt,
            job_cancel_concurrent_single_winner,
            job_cancel_races_finish,
            // Jobs, the engine's side.
            queue_claim_takes_due_jobs_oldest_first,
            queue_claim_takes_only_pending_jobs,
            queue_concurrent_claims_never_share_a_job,
            queue_heartbeat_records_progress_that_never_goes_down,
            queue_heartbeat_extends_the_lease,
            queue_heartbeat_only_for_current_attempt,
            queue_finish_completed_sets_result,
            queue_finish_failed_sets_error,
            queue_finish_retry_requeues_until_attempts_used_up,
            queue_finish_retry_records_why_the_attempt_failed,
            queue_finish_batch_answers_per_item_in_order,
            queue_finish_only_for_current_attempt,
            queue_release_requeues_without_counting_the_attempt,
            queue_rescue_requeues_while_attempts_remain,
            queue_rescue_fails_job_when_attempts_used_up,
            queue_internal_failure_gives_back_a_counted_scan,
            queue_stale_attempt_rejected_after_rescue,
            queue_listen_hears_jobs_ready,
            queue_gauges_count_unfinished_jobs_by_state,
            // The event outbox.
            event_list_in_id_order_after_position,
            event_one_per_final_transition,
            // Issues.
            issue_insert_and_get,
            issue_list_with_filters,
            issue_list_pages_with_keyset,
            issue_summary_counts,
            issue_set_fixed_keeps_first_fixed_at,
            issue_seen_at_a_scan_time,
            issue_scans_apply_the_lifecycle,
            issue_scan_completes_with_its_findings_or_not_at_all,
            // Scan history.
            history_records_each_completed_scan,
            history_concurrent_completions_count_each_change_once,
            history_issue_list_filters_by_check_severity_and_url,
            // Scan schedules.
            schedule_put_get_replace_delete,
            schedule_slot_is_claimed_once_by_concurrent_claimers,
            schedule_slot_skipped_while_busy_or_over_quota,
            schedule_slots_cross_daylight_saving_changes_in_berlin,
            // Reports.
            report_insert_get_and_duplicate_token,
            report_list_live_excludes_expired_and_pages,
            report_increment_views,
            // Usage.
            usage_defaults_to_zero,
            usage_add_accumulates_per_month_and_organization,
            // Rate limits, idempotency and their purge.
            rate_limit_consumes_only_consume_buckets,
            rate_limit_refuses_at_limit_all_or_nothing,
            rate_limit_windows_are_separate,
            rate_limit_concurrent_hits_respect_limit,
            rate_limit_concurrent_requests_are_all_or_nothing,
            idempotency_claim_in_use_and_mismatch,
            idempotency_complete_then_replay,
            idempotency_release_frees_key,
            idempotency_stale_claim_taken_over,
            idempotency_expired_record_replaced,
            idempotency_concurrent_claims_single_winner,
            idempotency_simultaneous_claims_over_many_scopes,
            purge_expired_removes_old_rows,
            connect_state_claimed_once,
            // Webhooks, their delivery queue and their log.
            webhook_insert_get_and_list,
            webhook_insert_refuses_at_max,
            webhook_concurrent_inserts_respect_max,
            webhook_update_applies_each_change,
            webhook_rotate_secret_keeps_the_replaced_one,
            webhook_delete_removes_it_and_its_log,
            webhook_test_deliveries_logged_newest_first,
            webhook_purge_deliveries_removes_old_rows,
            webhook_listen_hears_events_written,
            webhook_delivery_queue_lifecycle,
            // Search Console.
            gsc_account_link_and_revoke,
            gsc_sync_claims_are_exclusive,
            gsc_snapshot_replaced_whole,
            gsc_portfolio_counts_current_snapshots,
            gsc_latest_scan_pages_with_open_issues,
            // Media items and channels.
            media_insert_get_and_list,
            channel_put_reconnects_and_lists,
            media_insert_with_jobs_and_update_posts,
            channel_tokens_refresh_and_disconnect,
            media_post_updates_write_their_events,
            media_cancel_is_all_or_none_and_kept,
            media_edit_moves_jobs_and_refuses_once_started,
            media_delete_stops_unfinished_posts_or_refuses,
            media_post_deletion_starts_once_with_its_job,
            channel_disconnection_writes_one_event,
            upload_parts_append_once_per_offset,
            blob_keys_in_use_names_files_and_parts,
            // U+0000 in every aggregate's text.
            text_nul_kept_in_organizations_and_properties,
            text_nul_kept_in_jobs_and_their_outcomes,
            text_nul_kept_in_issues_and_scans,
            text_nul_kept_in_webhooks,
            text_nul_kept_in_search_console,
            text_nul_kept_in_media_channels_and_uploads,
        }
    };
}

/// Runs the whole conformance suite against a backend: expands to one `#[tokio::test]` (on a
/// multi-threaded runtime) per behaviour of [`testing`](crate::testing), each calling it with
/// a store from `make_store().await`, an `async fn() -> Arc<dyn TestStore>` in scope (compiled
/// and run in each backend's `tests/conformance.rs`):
///
/// ```text
/// async fn make_store() -> std::sync::Arc<dyn xf_core::testing::TestStore> {
///     std::sync::Arc::new(xf_storage_memory::MemoryStore::new())
/// }
/// xf_core::store_conformance!(make_store);
/// ```
#[macro_export]
macro_rules! store_conformance {
    ($make_store:path) => {
        $crate::__with_conformance_behaviours! {
            __store_conformance_tests! { $make_store; }
        }
    };
}

/// The expansion of [`store_conformance!`]; not for direct use.
#[doc(hidden)]
#[macro_export]
macro_rules! __store_conformance_tests {
    ($make_store:path; $($behaviour:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $behaviour() {
                $crate::testing::$behaviour($make_store().await).await;
            }
        )+
    };
}

/// The names of the behaviours, for [`BEHAVIOURS`]; not for direct use.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_behaviour_names {
    ($($behaviour:ident),+ $(,)?) => {
        &[$(stringify!($behaviour)),+]
    };
}

/// The name of every behaviour, in the order [`store_conformance!`] lists them.
pub const BEHAVIOURS: &[&str] =
    crate::__with_conformance_behaviours! { __conformance_behaviour_names! {} };

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::BEHAVIOURS;

    /// The source of every module of the suite, by file name.
    const SOURCES: &[(&str, &str)] = &[
        ("mod.rs", include_str!("mod.rs")),
        ("counting.rs", include_str!("counting.rs")),
        ("events.rs", include_str!("events.rs")),
        ("gsc.rs", include_str!("gsc.rs")),
        ("guards.rs", include_str!("guards.rs")),
        ("history.rs", include_str!("history.rs")),
        ("issues.rs", include_str!("issues.rs")),
        ("jobs.rs", include_str!("jobs.rs")),
        ("media.rs", include_str!("media.rs")),
        ("organizations.rs", include_str!("organizations.rs")),
        ("properties.rs", include_str!("properties.rs")),
        ("queue.rs", include_str!("queue.rs")),
        ("reports.rs", include_str!("reports.rs")),
        ("schedules.rs", include_str!("schedules.rs")),
        ("text.rs", include_str!("text.rs")),
        ("usage.rs", include_str!("usage.rs")),
        ("webhooks.rs", include_str!("webhooks.rs")),
    ];

    /// The names of the behaviours `source` defines: its public async functions, each of which
    /// must have a behaviour's signature.
    fn behaviours_in(file: &str, source: &str) -> Vec<String> {
        source
            .lines()
            .filter_map(|line| line.strip_prefix("pub async fn "))
            .map(|rest| {
                let (name, signature) = rest
                    .split_once('(')
                    .unwrap_or_else(|| panic!("{file}: unreadable signature: {rest}"));
                assert_eq!(
                    signature, "store: Arc<dyn TestStore>) {",
                    "{file}: `{name}` is public and async but not a behaviour"
                );
                name.to_owned()
            })
            .collect()
    }

    #[test]
    fn every_module_is_read() {
        let (_, mod_rs) = SOURCES[0];
        let declared: BTreeSet<String> = mod_rs
            .lines()
            .filter_map(|line| line.strip_prefix("mod ")?.strip_suffix(';'))
            .map(|name| format!("{name}.rs"))
            .collect();
        let read: BTreeSet<String> = SOURCES[1..]
            .iter()
            .map(|(file, _)| (*file).to_owned())
            .collect();
        assert_eq!(declared, read, "SOURCES lists every module of the suite");
    }

    #[test]
    fn every_behaviour_is_in_the_macro() {
        let defined: Vec<String> = SOURCES
            .iter()
            .flat_map(|(file, source)| behaviours_in(file, source))
            .collect();
        let defined_set: BTreeSet<&str> = defined.iter().map(String::as_str).collect();
        assert_eq!(
            defined_set.len(),
            defined.len(),
            "a behaviour is defined twice: {defined:?}"
        );
        let listed: BTreeSet<&str> = BEHAVIOURS.iter().copied().collect();
        assert_eq!(
            listed.len(),
            BEHAVIOURS.len(),
            "a behaviour is listed twice: {BEHAVIOURS:?}"
        );
        let unlisted: Vec<&&str> = defined_set.difference(&listed).collect();
        let undefined: Vec<&&str> = listed.difference(&defined_set).collect();
        assert!(
            unlisted.is_empty() && undefined.is_empty(),
            "behaviours missing from `__with_conformance_behaviours!`: {unlisted:?}; \
             listed there but not defined: {undefined:?}"
        );
    }
}
