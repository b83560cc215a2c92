//! The storage conformance suite (crate feature `testing`).
//!
//! Every backend must pass all of it. Each behaviour is one `pub async fn <behaviour>(store:
//! Arc<dyn Store>)` that panics when the store breaks the contract documented on
//! [`Store`]. Each is self-contained: it creates its own organizations, properties, jobs, rate
//! buckets and idempotency scopes with fresh ids, so behaviours may share one store and run in
//! any order or at the same time, and never rely on the store being empty.
//!
//! A backend's test crate runs the whole suite with [`store_conformance!`](crate::store_conformance),
//! as `xf-storage-memory/tests/conformance.rs` and `xf-storage-postgres/tests/conformance.rs` do:
//!
//! ```text
//! async fn make_store() -> std::sync::Arc<dyn xf_core::store::Store> {
//!     std::sync::Arc::new(xf_storage_memory::MemoryStore::new())
//! }
//! xf_core::store_conformance!(make_store);
//! ```
//!
//! The macro expands to one `#[tokio::test]` per behaviour (on a multi-threaded runtime, so the
//! concurrency behaviours really run in parallel); the crate using it needs `tokio` (with the
//! `macros` and `rt-multi-thread` features) as a dev-dependency. Adding a behaviour means
//! writing its function here and adding its name to the list in the macro, in this file.
//!
//! Conventions: every timestamp has millisecond precision and lies in or after 2026, except in
//! [`purge_expired_removes_old_rows`], which alone uses instants before 2000 (see there). Ids
//! compare as byte strings.
//!
//! The record constructors ([`organization`], [`api_key`], [`property`], [`job`], [`issue`],
//! [`report`], [`rate_bucket`], [`idempotency_request`]) are public so that other tests can
//! seed stores with them.

use std::future::Future;
use std::sync::Arc;

use chrono::Duration;
use rand::distributions::{Alphanumeric, DistString};

use crate::auth;
use crate::error::StoreError;
use crate::ids::{self, new_id};
use crate::model::{
    ApiKey, Issue, IssueStatus, IssueSummary, Job, JobCounts, JobOutcome, JobResult, JobStatus,
    KeyMode, Organization, Property, Report, ScanKind, Severity, UsageCounters, SEO_SCAN,
};
use crate::plans::LimitOverrides;
use crate::store::{
    After, CancelOutcome, IdempotencyClaim, IdempotencyRequest, IssueFilter, JobFilter,
    PageRequest, RateBucket, RateOutcome, Store, StoreResult, StoredResponse,
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

/// A new organization named `name`: a fresh `org_` id, plan [`PLAN`], no shop domain, no
/// limit overrides, created at [`base_time`]. Not stored: pass it to
/// [`Store::insert_organization`].
pub fn organization(name: &str) -> Organization {
    Organization {
        id: new_id(ids::ORGANIZATION),
        name: name.to_owned(),
        plan: PLAN.to_owned(),
        shop_domain: None,
        limits: LimitOverrides::default(),
        created_at: base_time(),
    }
}

/// A new, unrevoked API key of the organization whose secret is `key` (only its hash, as
/// [`auth::hash_key`] computes it, is kept), with a fresh `key_` id. Use
/// [`auth::generate_key`] for a random, well-formed `key`; a request authenticated with `key`
/// then finds this record. Not stored: pass it to [`Store::insert_api_key`] (or, with its new
/// organization, to [`Store::insert_organization_with_keys`]).
pub fn api_key(organization_id: &str, mode: KeyMode, key: &str, created_at: Timestamp) -> ApiKey {
    ApiKey {
        id: new_id(ids::API_KEY),
        organization_id: organization_id.to_owned(),
        mode,
        key_hash: auth::hash_key(key),
        created_at,
        revoked_at: None,
    }
}

/// A new, unverified property of the organization at `url` (taken as already normalised),
/// named after the URL's host (or the URL itself when it has none), with a fresh `prop_` id
/// and no Search Console site. Not stored: pass it to [`Store::insert_property`].
pub fn property(organization_id: &str, url: &str, created_at: Timestamp) -> Property {
    let name = url::Url::parse(url)
        .ok()
        .and_then(|parsed| parsed.host_str().map(str::to_owned))
        .unwrap_or_else(|| url.to_owned());
    Property {
        id: new_id(ids::PROPERTY),
        organization_id: organization_id.to_owned(),
        name,
        url: url.to_owned(),
        verified: false,
        created_at,
        gsc_site_url: None,
    }
}

/// A new pending `seo-scan` job of `property` in `organization`, as the scan use case builds
/// it: fresh `job_` id, progress 0, tenant `organization` labelled with the organization's
/// name and shop domain, a budget of 25 pages and depth 2, not started. Not stored: pass it to
/// [`Store::insert_job_counted`].
pub fn job(organization: &Organization, property: &Property, created_at: Timestamp) -> Job {
    Job {
        id: new_id(ids::JOB),
        organization_id: organization.id.clone(),
        job_type: SEO_SCAN.to_owned(),
        status: JobStatus::Pending,
        progress: 0,
        property_id: property.id.clone(),
        property_name: property.name.clone(),
        tenant_type: "organization".to_owned(),
        tenant_label: organization.name.clone(),
        shop_domain: organization.shop_domain.clone(),
        max_pages: 25,
        max_depth: 2,
        created_at,
        started_at: None,
        completed_at: None,
        error: None,
        result: None,
    }
}

/// A new issue of `property` found by the job `job_id`, with a fresh `iss_` id, first and
/// last seen at `created_at`. Page issues are `missing_title` warnings on
/// `<property url>/about`; site issues are `missing_sitemap` warnings without a URL. A
/// `Resolved` issue gets `resolvedAt = created_at`, a `Fixed` one `fixedAt = created_at`. Not
/// stored: pass it to [`Store::insert_issue`].
pub fn issue(
    property: &Property,
    job_id: &str,
    scan_kind: ScanKind,
    status: IssueStatus,
    created_at: Timestamp,
) -> Issue {
    let (issue_type, url, message) = match scan_kind {
        ScanKind::Page => (
            "missing_title",
            Some(format!("{}/about", property.url.trim_end_matches('/'))),
            "The page has no <title> element.",
        ),
        ScanKind::Site => ("missing_sitemap", None, "No sitemap.xml was found."),
    };
    Issue {
        id: new_id(ids::ISSUE),
        organization_id: property.organization_id.clone(),
        property_id: property.id.clone(),
        job_id: job_id.to_owned(),
        scan_kind,
        issue_type: issue_type.to_owned(),
        severity: Severity::Warning,
        url,
        message: message.to_owned(),
        status,
        created_at,
        last_seen_at: created_at,
        resolved_at: (status == IssueStatus::Resolved).then_some(created_at),
        fixed_at: (status == IssueStatus::Fixed).then_some(created_at),
    }
}

/// A new report of `property` showing the scan `scan_id`, with a random 32-character base62
/// token (as the report use case makes them) and no views. Not stored: pass it to
/// [`Store::insert_report`].
pub fn report(
    property: &Property,
    scan_id: &str,
    created_at: Timestamp,
    expires_at: Timestamp,
) -> Report {
    Report {
        token: Alphanumeric.sample_string(&mut rand::thread_rng(), 32),
        organization_id: property.organization_id.clone(),
        property_id: property.id.clone(),
        scan_id: scan_id.to_owned(),
        expires_at,
        view_count: 0,
        created_at,
    }
}

/// A key of `mode` with a fresh random secret, for `organization_id`.
pub fn random_key(organization_id: &str, mode: KeyMode, created_at: Timestamp) -> ApiKey {
    api_key(organization_id, mode, &auth::generate_key(mode), created_at)
}

/// A rate-limit bucket for [`Store::hit_rate_limits`].
pub fn rate_bucket(name: &str, window_start: Timestamp, limit: u64, consume: bool) -> RateBucket {
    RateBucket {
        name: name.to_owned(),
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
// Private helpers
// ---------------------------------------------------------------------------------------------

/// A scans limit no behaviour reaches, for jobs that are not about the quota.
const NO_SCAN_LIMIT: u64 = 1_000_000;

fn unique(label: &str) -> String {
    format!("{label} {}", new_id("t"))
}

/// A URL no other property has: `https://<fresh id>.example.com`.
fn unique_url() -> String {
    format!("https://{}.example.com", new_id("site").replace('_', "-"))
}

fn minutes(n: i64) -> Timestamp {
    base_time().plus(Duration::minutes(n))
}

fn millis(base: Timestamp, n: i64) -> Timestamp {
    base.plus(Duration::milliseconds(n))
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

/// Inserts a pending job (counted in its creation month) and moves it to `status` with the
/// store's own transitions: started 1 s after creation, finished or cancelled 2 s after.
async fn seed_job(
    store: &dyn Store,
    organization: &Organization,
    property: &Property,
    created_at: Timestamp,
    status: JobStatus,
) -> Job {
    let mut job = job(organization, property, created_at);
    store
        .insert_job_counted(&job, &created_at.month_key(), NO_SCAN_LIMIT)
        .await
        .expect("insert job");
    let started = created_at.plus(Duration::seconds(1));
    let ended = created_at.plus(Duration::seconds(2));
    if matches!(
        status,
        JobStatus::Processing | JobStatus::Completed | JobStatus::Failed
    ) {
        job = store
            .start_job(&job.id, started)
            .await
            .expect("start job")
            .expect("a pending job starts");
    }
    match status {
        JobStatus::Pending | JobStatus::Processing => {}
        JobStatus::Completed => {
            job = store
                .finish_job(&job.id, &JobOutcome::Completed(sample_result()), ended)
                .await
                .expect("finish job")
                .expect("a processing job completes");
        }
        JobStatus::Failed => {
            job = store
                .finish_job(
                    &job.id,
                    &JobOutcome::Failed("crawl failed".to_owned()),
                    ended,
                )
                .await
                .expect("finish job")
                .expect("a processing job fails");
        }
        JobStatus::Cancelled => match store.cancel_job(&job.id, ended).await.expect("cancel") {
            CancelOutcome::Cancelled(cancelled) => job = cancelled,
            other => panic!("a pending job is cancellable, got {other:?}"),
        },
    }
    assert_eq!(job.status, status);
    job
}

/// Same as [`seed_job`] but with another job type.
async fn seed_typed_job(
    store: &dyn Store,
    organization: &Organization,
    property: &Property,
    created_at: Timestamp,
    job_type: &str,
) -> Job {
    let mut job = job(organization, property, created_at);
    job.job_type = job_type.to_owned();
    store
        .insert_job_counted(&job, &created_at.month_key(), NO_SCAN_LIMIT)
        .await
        .expect("insert job");
    job
}

fn sample_result() -> JobResult {
    JobResult {
        score: 87,
        pages_scanned: 12,
        issues_count: 4,
    }
}

fn ids_of<T>(items: &[T], id: impl Fn(&T) -> &str) -> Vec<String> {
    items.iter().map(|item| id(item).to_owned()).collect()
}

fn job_ids(jobs: &[Job]) -> Vec<String> {
    ids_of(jobs, |j| &j.id)
}

fn first_page(limit: usize) -> PageRequest {
    PageRequest { limit, after: None }
}

fn property_position(property: &Property) -> After {
    After {
        created_at: property.created_at,
        id: property.id.clone(),
    }
}

fn job_position(job: &Job) -> After {
    After {
        created_at: job.created_at,
        id: job.id.clone(),
    }
}

fn issue_position(issue: &Issue) -> After {
    After {
        created_at: issue.created_at,
        id: issue.id.clone(),
    }
}

fn report_position(report: &Report) -> After {
    After {
        created_at: report.created_at,
        id: report.token.clone(),
    }
}

/// Sorts newest first: `created_at` desc, then the id (bytewise) desc.
fn sort_newest_first<T>(items: &mut [T], key: impl Fn(&T) -> (Timestamp, String)) {
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

async fn claim(
    store: &dyn Store,
    scope: &str,
    fingerprint: &str,
    now: Timestamp,
) -> IdempotencyClaim {
    store
        .claim_idempotency_key(&idempotency_request(scope, fingerprint, now))
        .await
        .expect("claim idempotency key")
}

async fn hit(store: &dyn Store, buckets: &[RateBucket]) -> RateOutcome {
    store
        .hit_rate_limits(buckets)
        .await
        .expect("hit rate limits")
}

// ---------------------------------------------------------------------------------------------
// Behaviours: ping, organizations
// ---------------------------------------------------------------------------------------------

/// `ping` answers `Ok`.
pub async fn ping_succeeds(store: Arc<dyn Store>) {
    assert_eq!(store.ping().await, Ok(()));
}

/// An inserted organization reads back equal, every field included; an unknown id is `None`.
pub async fn organization_insert_and_get(store: Arc<dyn Store>) {
    let mut org = organization(&unique("Acme"));
    org.plan = "starter".to_owned();
    org.shop_domain = Some("acme.myshopify.com".to_owned());
    org.limits = LimitOverrides {
        scans_per_month: Some(7),
        max_depth: Some(4),
        ..LimitOverrides::default()
    };
    org.created_at = at("2026-11-02T03:04:05.678Z");
    store.insert_organization(&org).await.unwrap();

    let plain = organization(&unique("Plain"));
    store.insert_organization(&plain).await.unwrap();

    assert_eq!(store.get_organization(&org.id).await.unwrap(), Some(org));
    assert_eq!(
        store.get_organization(&plain.id).await.unwrap(),
        Some(plain)
    );
    assert_eq!(
        store
            .get_organization(&new_id(ids::ORGANIZATION))
            .await
            .unwrap(),
        None
    );
}

/// `find_organization_by_name` matches the exact name and returns the first-created
/// organization (on equal creation times, the smallest id).
pub async fn organization_find_by_name_returns_first_created(store: Arc<dyn Store>) {
    let name = unique("Shared Name");
    let mut second = organization(&name);
    second.created_at = minutes(60);
    let mut first = organization(&name);
    first.created_at = minutes(0);
    let mut third = organization(&name);
    third.created_at = minutes(120);
    for org in [&second, &third, &first] {
        store.insert_organization(org).await.unwrap();
    }
    store
        .insert_organization(&organization(&unique("Other")))
        .await
        .unwrap();

    assert_eq!(
        store.find_organization_by_name(&name).await.unwrap(),
        Some(first)
    );
    assert_eq!(
        store
            .find_organization_by_name(&name.to_uppercase())
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .find_organization_by_name(&format!("{name} "))
            .await
            .unwrap(),
        None
    );

    let tie_name = unique("Tie");
    let smaller = organization(&tie_name);
    let larger = organization(&tie_name);
    assert!(smaller.id < larger.id, "new_id is time-ordered");
    store.insert_organization(&larger).await.unwrap();
    store.insert_organization(&smaller).await.unwrap();
    assert_eq!(
        store.find_organization_by_name(&tie_name).await.unwrap(),
        Some(smaller)
    );
}

/// `update_organization` sets the plan and/or replaces (not merges) the limit overrides,
/// leaves what it is not given alone, and returns `None` for an unknown id.
pub async fn organization_update_plan_and_limits(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Updatable").await;

    let updated = store
        .update_organization(&org.id, Some("starter"), None)
        .await
        .unwrap()
        .expect("known organization");
    let expected = Organization {
        plan: "starter".to_owned(),
        ..org.clone()
    };
    assert_eq!(updated, expected);

    let first_limits = LimitOverrides {
        max_active_keys: Some(5),
        scans_per_month: Some(50),
        ..LimitOverrides::default()
    };
    let updated = store
        .update_organization(&org.id, None, Some(&first_limits))
        .await
        .unwrap()
        .expect("known organization");
    let expected = Organization {
        limits: first_limits,
        ..expected
    };
    assert_eq!(updated, expected);

    let second_limits = LimitOverrides {
        read_per_hour: Some(10),
        ..LimitOverrides::default()
    };
    let updated = store
        .update_organization(&org.id, Some("free"), Some(&second_limits))
        .await
        .unwrap()
        .expect("known organization");
    let expected = Organization {
        plan: "free".to_owned(),
        limits: second_limits,
        ..expected
    };
    assert_eq!(updated, expected);

    let unchanged = store
        .update_organization(&org.id, None, None)
        .await
        .unwrap();
    assert_eq!(unchanged.as_ref(), Some(&expected));
    assert_eq!(
        store.get_organization(&org.id).await.unwrap(),
        Some(expected)
    );

    assert_eq!(
        store
            .update_organization(&new_id(ids::ORGANIZATION), Some("free"), None)
            .await
            .unwrap(),
        None
    );
}

// ---------------------------------------------------------------------------------------------
// Behaviours: API keys
// ---------------------------------------------------------------------------------------------

/// An inserted key is found by its hash together with its organization, revoked or not; an
/// unknown hash is `None`.
pub async fn api_key_insert_and_find_by_hash(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Keys").await;
    let live = random_key(&org.id, KeyMode::Live, minutes(1));
    let test = random_key(&org.id, KeyMode::Test, minutes(2));
    store.insert_api_key(&live, 10).await.unwrap();
    store.insert_api_key(&test, 10).await.unwrap();

    assert_eq!(
        store.find_api_key(&live.key_hash).await.unwrap(),
        Some((live.clone(), org.clone()))
    );
    assert_eq!(
        store.find_api_key(&test.key_hash).await.unwrap(),
        Some((test.clone(), org.clone()))
    );
    assert_eq!(
        store
            .find_api_key(&auth::hash_key(&auth::generate_key(KeyMode::Live)))
            .await
            .unwrap(),
        None
    );

    let revoked = store
        .revoke_api_key(&live.id, minutes(3))
        .await
        .unwrap()
        .expect("known key");
    let expected = ApiKey {
        revoked_at: Some(minutes(3)),
        ..live.clone()
    };
    assert_eq!(revoked, expected);
    assert_eq!(
        store.find_api_key(&live.key_hash).await.unwrap(),
        Some((expected, org))
    );
}

/// A second key with a hash that is already stored, in the same or another organization, is
/// [`StoreError::Duplicate`] and is not stored.
pub async fn api_key_duplicate_hash_rejected(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Dup keys").await;
    let other_org = seed_organization(&*store, "Other dup keys").await;
    let secret = auth::generate_key(KeyMode::Live);
    let first = api_key(&org.id, KeyMode::Live, &secret, minutes(1));
    store.insert_api_key(&first, 10).await.unwrap();

    let same_org = api_key(&org.id, KeyMode::Live, &secret, minutes(2));
    assert!(matches!(
        store.insert_api_key(&same_org, 10).await,
        Err(StoreError::Duplicate(_))
    ));
    let other = api_key(&other_org.id, KeyMode::Live, &secret, minutes(3));
    assert!(matches!(
        store.insert_api_key(&other, 10).await,
        Err(StoreError::Duplicate(_))
    ));

    assert_eq!(
        store.list_api_keys(&org.id).await.unwrap(),
        vec![first.clone()]
    );
    assert_eq!(store.list_api_keys(&other_org.id).await.unwrap(), vec![]);
    assert_eq!(
        store.find_api_key(&auth::hash_key(&secret)).await.unwrap(),
        Some((first, org))
    );
}

/// `insert_api_key` refuses with [`StoreError::LimitReached`] when the organization already
/// has `max_active` unrevoked keys, storing nothing; revoked keys and other organizations'
/// keys do not count.
pub async fn api_key_max_active_enforced(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Capped").await;
    let neighbour = seed_organization(&*store, "Neighbour").await;
    for n in 0..3 {
        let key = random_key(&neighbour.id, KeyMode::Live, minutes(n));
        store.insert_api_key(&key, 10).await.unwrap();
    }

    let new_key = |n: i64| random_key(&org.id, KeyMode::Live, minutes(n));
    let first = new_key(1);
    let second = new_key(2);
    store.insert_api_key(&first, 2).await.unwrap();
    store.insert_api_key(&second, 2).await.unwrap();

    let third = new_key(3);
    assert!(matches!(
        store.insert_api_key(&third, 2).await,
        Err(StoreError::LimitReached(_))
    ));
    assert_eq!(store.find_api_key(&third.key_hash).await.unwrap(), None);
    assert_eq!(
        store.list_api_keys(&org.id).await.unwrap(),
        vec![first.clone(), second.clone()]
    );

    let revoked_first = store
        .revoke_api_key(&first.id, minutes(4))
        .await
        .unwrap()
        .expect("known key");
    store.insert_api_key(&third, 2).await.unwrap();
    let fourth = new_key(5);
    assert!(matches!(
        store.insert_api_key(&fourth, 2).await,
        Err(StoreError::LimitReached(_))
    ));
    assert_eq!(
        store.list_api_keys(&org.id).await.unwrap(),
        vec![revoked_first, second, third]
    );

    let empty_org = seed_organization(&*store, "No keys allowed").await;
    let refused = random_key(&empty_org.id, KeyMode::Test, minutes(6));
    assert!(matches!(
        store.insert_api_key(&refused, 0).await,
        Err(StoreError::LimitReached(_))
    ));
    assert_eq!(store.list_api_keys(&empty_org.id).await.unwrap(), vec![]);
}

/// Concurrent inserts never push an organization past `max_active`: of 10 simultaneous
/// inserts with a cap of 3, exactly 3 succeed.
pub async fn api_key_concurrent_inserts_respect_max_active(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Racing keys").await;
    let results = run_concurrently(10, |n| {
        let store = Arc::clone(&store);
        let key = random_key(&org.id, KeyMode::Live, minutes(n as i64));
        async move { store.insert_api_key(&key, 3).await }
    })
    .await;
    let accepted = results.iter().filter(|r| r.is_ok()).count();
    let refused = results
        .iter()
        .filter(|r| matches!(r, Err(StoreError::LimitReached(_))))
        .count();
    assert_eq!((accepted, refused), (3, 7), "{results:?}");
    assert_eq!(store.list_api_keys(&org.id).await.unwrap().len(), 3);
}

/// `revoke_api_key` sets `revokedAt` once: revoking again keeps the first time. An unknown id
/// is `None`.
pub async fn api_key_revoke_keeps_first_time(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Revoker").await;
    let key = random_key(&org.id, KeyMode::Live, minutes(0));
    store.insert_api_key(&key, 5).await.unwrap();

    let expected = ApiKey {
        revoked_at: Some(minutes(10)),
        ..key.clone()
    };
    assert_eq!(
        store.revoke_api_key(&key.id, minutes(10)).await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(
        store.revoke_api_key(&key.id, minutes(20)).await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(store.list_api_keys(&org.id).await.unwrap(), vec![expected]);
    assert_eq!(
        store
            .revoke_api_key(&new_id(ids::API_KEY), minutes(30))
            .await
            .unwrap(),
        None
    );
}

/// `list_api_keys` returns the organization's keys, revoked or not, oldest first (equal
/// creation times: smallest id first), and no other organization's.
pub async fn api_key_list_oldest_first(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Listing keys").await;
    let other = seed_organization(&*store, "Other listing keys").await;
    let make = |org_id: &str, n: i64| {
        api_key(
            org_id,
            KeyMode::Live,
            &auth::generate_key(KeyMode::Live),
            minutes(n),
        )
    };
    let oldest = make(&org.id, 1);
    let tie_small = make(&org.id, 5);
    let tie_large = make(&org.id, 5);
    let middle = make(&org.id, 3);
    let foreign = make(&other.id, 2);
    for key in [&tie_large, &middle, &foreign, &tie_small, &oldest] {
        store.insert_api_key(key, 10).await.unwrap();
    }
    let revoked_middle = store
        .revoke_api_key(&middle.id, minutes(6))
        .await
        .unwrap()
        .expect("known key");

    assert_eq!(
        store.list_api_keys(&org.id).await.unwrap(),
        vec![oldest, revoked_middle, tie_small, tie_large]
    );
    assert_eq!(store.list_api_keys(&other.id).await.unwrap(), vec![foreign]);
    assert_eq!(
        store
            .list_api_keys(&new_id(ids::ORGANIZATION))
            .await
            .unwrap(),
        vec![]
    );
}

/// `insert_organization_with_keys` stores the organization and all its keys. When one key's
/// hash is already stored it is [`StoreError::Duplicate`] and stores nothing: neither the
/// organization nor any of its other keys.
pub async fn organization_with_keys_inserted_atomically(store: Arc<dyn Store>) {
    let org = organization(&unique("With keys"));
    let live = random_key(&org.id, KeyMode::Live, minutes(0));
    let test = random_key(&org.id, KeyMode::Test, minutes(1));
    store
        .insert_organization_with_keys(&org, &[live.clone(), test.clone()])
        .await
        .unwrap();
    assert_eq!(
        store.get_organization(&org.id).await.unwrap(),
        Some(org.clone())
    );
    assert_eq!(
        store.find_api_key(&live.key_hash).await.unwrap(),
        Some((live.clone(), org.clone()))
    );
    assert_eq!(
        store.find_api_key(&test.key_hash).await.unwrap(),
        Some((test.clone(), org.clone()))
    );
    assert_eq!(
        store.list_api_keys(&org.id).await.unwrap(),
        vec![live.clone(), test]
    );

    // The duplicate comes last, so a backend that writes key by key has stored the others
    // (and the organization) before it fails.
    let refused = organization(&unique("Refused with keys"));
    let fresh = random_key(&refused.id, KeyMode::Test, minutes(2));
    let mut duplicate = random_key(&refused.id, KeyMode::Live, minutes(3));
    duplicate.key_hash = live.key_hash.clone();
    assert!(matches!(
        store
            .insert_organization_with_keys(&refused, &[fresh.clone(), duplicate])
            .await,
        Err(StoreError::Duplicate(_))
    ));
    assert_eq!(store.get_organization(&refused.id).await.unwrap(), None);
    assert_eq!(store.find_api_key(&fresh.key_hash).await.unwrap(), None);
    assert_eq!(store.list_api_keys(&refused.id).await.unwrap(), vec![]);
    assert_eq!(
        store.find_api_key(&live.key_hash).await.unwrap(),
        Some((live, org)),
        "the stored key is untouched"
    );

    let twins = organization(&unique("Twin keys"));
    let secret = auth::generate_key(KeyMode::Live);
    let first = api_key(&twins.id, KeyMode::Live, &secret, minutes(4));
    let second = api_key(&twins.id, KeyMode::Live, &secret, minutes(5));
    assert!(matches!(
        store
            .insert_organization_with_keys(&twins, &[first, second])
            .await,
        Err(StoreError::Duplicate(_))
    ));
    assert_eq!(store.get_organization(&twins.id).await.unwrap(), None);
    assert_eq!(
        store.find_api_key(&auth::hash_key(&secret)).await.unwrap(),
        None
    );
}

// ---------------------------------------------------------------------------------------------
// Behaviours: properties
// ---------------------------------------------------------------------------------------------

/// An inserted property reads back equal from any organization's point of view; an unknown id
/// is `None`.
pub async fn property_insert_and_get(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Sites").await;
    let mut site = property(
        &org.id,
        "https://shop.example.com",
        at("2026-11-03T04:05:06.789Z"),
    );
    site.name = "My shop".to_owned();
    site.verified = true;
    site.gsc_site_url = Some("sc-domain:example.com".to_owned());
    store.insert_property(&site).await.unwrap();

    assert_eq!(store.get_property(&site.id).await.unwrap(), Some(site));
    assert_eq!(
        store.get_property(&new_id(ids::PROPERTY)).await.unwrap(),
        None
    );
}

/// A second property with the same URL in the same organization is
/// [`StoreError::Duplicate`] and is not stored; the same URL in another organization is fine.
pub async fn property_duplicate_url_rejected_per_organization(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "First owner").await;
    let other = seed_organization(&*store, "Second owner").await;
    let url = unique_url();
    let original = property(&org.id, &url, minutes(1));
    store.insert_property(&original).await.unwrap();

    let duplicate = property(&org.id, &url, minutes(2));
    assert!(matches!(
        store.insert_property(&duplicate).await,
        Err(StoreError::Duplicate(_))
    ));
    assert_eq!(store.get_property(&duplicate.id).await.unwrap(), None);
    assert_eq!(store.count_properties(&org.id).await.unwrap(), 1);

    let elsewhere = property(&other.id, &url, minutes(3));
    store.insert_property(&elsewhere).await.unwrap();
    assert_eq!(
        store.find_property_by_url(&org.id, &url).await.unwrap(),
        Some(original)
    );
    assert_eq!(
        store.find_property_by_url(&other.id, &url).await.unwrap(),
        Some(elsewhere)
    );
}

/// Of 10 simultaneous inserts of the same URL in one organization, exactly one succeeds and
/// the others are [`StoreError::Duplicate`].
pub async fn property_concurrent_duplicate_url_single_winner(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Racing sites").await;
    let url = unique_url();
    let candidates: Vec<Property> = (0..10)
        .map(|n| property(&org.id, &url, minutes(n)))
        .collect();
    let results = run_concurrently(candidates.len(), |n| {
        let store = Arc::clone(&store);
        let candidate = candidates[n].clone();
        async move { store.insert_property(&candidate).await }
    })
    .await;
    let winners: Vec<usize> = (0..results.len()).filter(|&n| results[n].is_ok()).collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    assert!(results
        .iter()
        .all(|r| r.is_ok() || matches!(r, Err(StoreError::Duplicate(_)))));
    assert_eq!(
        store.find_property_by_url(&org.id, &url).await.unwrap(),
        Some(candidates[winners[0]].clone())
    );
    assert_eq!(store.count_properties(&org.id).await.unwrap(), 1);
}

/// `get_properties` returns each existing property asked for once, whatever its
/// organization; unknown ids give nothing.
pub async fn property_get_many(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Many").await;
    let elsewhere = seed_organization(&*store, "Elsewhere").await;
    let a = seed_property(&*store, &org, minutes(0)).await;
    let b = seed_property(&*store, &org, minutes(1)).await;
    let c = seed_property(&*store, &elsewhere, minutes(2)).await;
    seed_property(&*store, &org, minutes(3)).await;
    let ids = vec![
        c.id.clone(),
        a.id.clone(),
        "prop_unknown".to_owned(),
        a.id.clone(),
        b.id.clone(),
    ];
    let mut found = store.get_properties(&ids).await.unwrap();
    found.sort_by(|x, y| x.id.cmp(&y.id));
    let mut expected = vec![a, b, c];
    expected.sort_by(|x, y| x.id.cmp(&y.id));
    assert_eq!(found, expected);
    assert_eq!(store.get_properties(&[]).await.unwrap(), vec![]);
}

/// `find_property_by_url` matches the exact URL within the given organization only.
pub async fn property_find_by_url(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Finder").await;
    let other = seed_organization(&*store, "Not the finder").await;
    let url = format!("{}/blog", unique_url());
    let site = property(&org.id, &url, minutes(1));
    let sibling = property(&org.id, &format!("{url}/archive"), minutes(2));
    store.insert_property(&site).await.unwrap();
    store.insert_property(&sibling).await.unwrap();

    assert_eq!(
        store.find_property_by_url(&org.id, &url).await.unwrap(),
        Some(site)
    );
    assert_eq!(
        store
            .find_property_by_url(&org.id, &format!("{url}/archive"))
            .await
            .unwrap(),
        Some(sibling)
    );
    assert_eq!(
        store
            .find_property_by_url(&org.id, &format!("{url}/"))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .find_property_by_url(&org.id, &url.to_uppercase())
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store.find_property_by_url(&other.id, &url).await.unwrap(),
        None
    );
}

/// `list_properties` is newest first, equal creation times ordered by id descending, and
/// `limit` caps the page.
pub async fn property_list_newest_first(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Ordering").await;
    // Ids are generated in order a < b < c < d < e; creation times disagree with that order
    // and b, c, d share one.
    let urls: Vec<String> = (0..5).map(|_| unique_url()).collect();
    let a = property(&org.id, &urls[0], minutes(30));
    let b = property(&org.id, &urls[1], minutes(10));
    let c = property(&org.id, &urls[2], minutes(10));
    let d = property(&org.id, &urls[3], minutes(10));
    let e = property(&org.id, &urls[4], minutes(5));
    for site in [&c, &e, &a, &d, &b] {
        store.insert_property(site).await.unwrap();
    }

    let all = store
        .list_properties(&org.id, &first_page(10))
        .await
        .unwrap();
    assert_eq!(
        all,
        vec![a.clone(), d.clone(), c.clone(), b.clone(), e.clone()]
    );

    let two = store
        .list_properties(&org.id, &first_page(2))
        .await
        .unwrap();
    assert_eq!(two, vec![a, d.clone()]);

    let after_d = store
        .list_properties(
            &org.id,
            &PageRequest {
                limit: 10,
                after: Some(property_position(&d)),
            },
        )
        .await
        .unwrap();
    assert_eq!(after_d, vec![c, b, e]);
}

/// Keyset pagination over 25 properties (with shared creation times, inserted out of order,
/// mixed with another organization's) in pages of 7 yields 7, 7, 7, 4 items: every property
/// exactly once, in newest-first order.
pub async fn property_list_pages_with_keyset(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Paging").await;
    let other = seed_organization(&*store, "Paging neighbour").await;
    let mut mine = Vec::new();
    for n in 0..25_i64 {
        // Creation times repeat in groups and run against id order.
        mine.push(property(&org.id, &unique_url(), minutes((n * 7) % 9)));
        store
            .insert_property(&property(&other.id, &unique_url(), minutes((n * 5) % 9)))
            .await
            .unwrap();
    }
    // Insert in an order that is neither id order nor time order.
    for n in (0..25).map(|n| (n * 11) % 25) {
        store.insert_property(&mine[n]).await.unwrap();
    }
    let mut expected = mine.clone();
    sort_newest_first(&mut expected, |p| (p.created_at, p.id.clone()));

    let store_ref = &store;
    let org_id = org.id.as_str();
    let pages = walk_pages(
        7,
        |page| async move { store_ref.list_properties(org_id, &page).await },
        property_position,
    )
    .await;
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![7, 7, 7, 4]
    );
    assert_eq!(pages.concat(), expected);
}

/// Lists and counts of properties only see the given organization's.
pub async fn property_list_and_count_scoped_to_organization(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Scoped").await;
    let other = seed_organization(&*store, "Scoped neighbour").await;
    let empty = seed_organization(&*store, "Scoped empty").await;
    let mine_old = seed_property(&*store, &org, minutes(1)).await;
    let theirs = seed_property(&*store, &other, minutes(2)).await;
    let mine_new = seed_property(&*store, &org, minutes(3)).await;

    assert_eq!(
        store
            .list_properties(&org.id, &first_page(10))
            .await
            .unwrap(),
        vec![mine_new, mine_old]
    );
    assert_eq!(
        store
            .list_properties(&other.id, &first_page(10))
            .await
            .unwrap(),
        vec![theirs]
    );
    assert_eq!(
        store
            .list_properties(&empty.id, &first_page(10))
            .await
            .unwrap(),
        vec![]
    );
    assert_eq!(store.count_properties(&org.id).await.unwrap(), 2);
    assert_eq!(store.count_properties(&other.id).await.unwrap(), 1);
    assert_eq!(store.count_properties(&empty.id).await.unwrap(), 0);
}

/// `set_property_verified` marks a property verified (idempotently) and returns it; an
/// unknown id is `None`.
pub async fn property_set_verified(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Verifier").await;
    let site = seed_property(&*store, &org, minutes(1)).await;
    let untouched = seed_property(&*store, &org, minutes(2)).await;
    let expected = Property {
        verified: true,
        ..site.clone()
    };

    assert_eq!(
        store.set_property_verified(&site.id).await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(
        store.set_property_verified(&site.id).await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(store.get_property(&site.id).await.unwrap(), Some(expected));
    assert_eq!(
        store.get_property(&untouched.id).await.unwrap(),
        Some(untouched)
    );
    assert_eq!(
        store
            .set_property_verified(&new_id(ids::PROPERTY))
            .await
            .unwrap(),
        None
    );
}

/// `set_property_gsc_site` links, relinks and unlinks a Search Console site and returns the
/// property; an unknown id is `None`.
pub async fn property_set_gsc_site(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Linker").await;
    let site = seed_property(&*store, &org, minutes(1)).await;

    let linked = Property {
        gsc_site_url: Some("sc-domain:example.com".to_owned()),
        ..site.clone()
    };
    assert_eq!(
        store
            .set_property_gsc_site(&site.id, Some("sc-domain:example.com"))
            .await
            .unwrap(),
        Some(linked.clone())
    );
    assert_eq!(store.get_property(&site.id).await.unwrap(), Some(linked));

    let relinked = Property {
        gsc_site_url: Some("https://www.example.com/".to_owned()),
        ..site.clone()
    };
    assert_eq!(
        store
            .set_property_gsc_site(&site.id, Some("https://www.example.com/"))
            .await
            .unwrap(),
        Some(relinked)
    );

    assert_eq!(
        store.set_property_gsc_site(&site.id, None).await.unwrap(),
        Some(site.clone())
    );
    assert_eq!(store.get_property(&site.id).await.unwrap(), Some(site));
    assert_eq!(
        store
            .set_property_gsc_site(&new_id(ids::PROPERTY), Some("sc-domain:x.com"))
            .await
            .unwrap(),
        None
    );
}

// ---------------------------------------------------------------------------------------------
// Behaviours: jobs
// ---------------------------------------------------------------------------------------------

/// `insert_job_counted` stores the job and adds one to the organization's `scans` meter of
/// the given month only; the other meters stay zero.
pub async fn job_insert_counted_counts_scans(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Counting").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let first = job(&org, &site, minutes(1));
    let second = job(&org, &site, minutes(2));
    store
        .insert_job_counted(&first, BASE_MONTH, 3)
        .await
        .unwrap();
    assert_eq!(
        store.get_usage(&org.id, BASE_MONTH).await.unwrap(),
        UsageCounters {
            scans: 1,
            ..UsageCounters::default()
        }
    );
    store
        .insert_job_counted(&second, BASE_MONTH, 3)
        .await
        .unwrap();

    assert_eq!(store.get_job(&first.id).await.unwrap(), Some(first));
    assert_eq!(store.get_job(&second.id).await.unwrap(), Some(second));
    assert_eq!(
        store.get_usage(&org.id, BASE_MONTH).await.unwrap(),
        UsageCounters {
            scans: 2,
            ..UsageCounters::default()
        }
    );
    assert_eq!(
        store.get_usage(&org.id, "2026-12").await.unwrap(),
        UsageCounters::default()
    );
}

/// At the limit, `insert_job_counted` is [`StoreError::LimitReached`] and writes nothing: the
/// job is absent and the meter unchanged. Scans recorded otherwise count towards the limit;
/// another month has its own meter.
pub async fn job_insert_counted_refuses_at_limit(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Quota").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    store
        .add_usage(
            &org.id,
            BASE_MONTH,
            &UsageCounters {
                scans: 1,
                images_optimized: 4,
                ..UsageCounters::default()
            },
        )
        .await
        .unwrap();

    let first = job(&org, &site, minutes(1));
    let second = job(&org, &site, minutes(2));
    let refused = job(&org, &site, minutes(3));
    store
        .insert_job_counted(&first, BASE_MONTH, 3)
        .await
        .unwrap();
    store
        .insert_job_counted(&second, BASE_MONTH, 3)
        .await
        .unwrap();
    assert!(matches!(
        store.insert_job_counted(&refused, BASE_MONTH, 3).await,
        Err(StoreError::LimitReached(_))
    ));

    let at_limit = UsageCounters {
        scans: 3,
        images_optimized: 4,
        ..UsageCounters::default()
    };
    assert_eq!(store.get_job(&refused.id).await.unwrap(), None);
    assert_eq!(
        store.get_usage(&org.id, BASE_MONTH).await.unwrap(),
        at_limit
    );
    assert_eq!(
        job_ids(
            &store
                .list_jobs(&org.id, &JobFilter::default(), &first_page(10))
                .await
                .unwrap()
        ),
        vec![second.id.clone(), first.id.clone()]
    );
    assert_eq!(store.count_active_jobs(&org.id).await.unwrap(), 2);

    // A lower limit than the meter refuses too.
    assert!(matches!(
        store.insert_job_counted(&refused, BASE_MONTH, 1).await,
        Err(StoreError::LimitReached(_))
    ));
    assert_eq!(
        store.get_usage(&org.id, BASE_MONTH).await.unwrap(),
        at_limit
    );

    // The next month has its own meter.
    store
        .insert_job_counted(&refused, "2026-12", 3)
        .await
        .unwrap();
    assert_eq!(
        store.get_usage(&org.id, "2026-12").await.unwrap(),
        UsageCounters {
            scans: 1,
            ..UsageCounters::default()
        }
    );
    assert_eq!(
        store.get_usage(&org.id, BASE_MONTH).await.unwrap(),
        at_limit
    );

    // A limit of zero refuses the first job of a month.
    let never = job(&org, &site, minutes(4));
    assert!(matches!(
        store.insert_job_counted(&never, "2027-01", 0).await,
        Err(StoreError::LimitReached(_))
    ));
    assert_eq!(store.get_job(&never.id).await.unwrap(), None);
    assert_eq!(
        store.get_usage(&org.id, "2027-01").await.unwrap(),
        UsageCounters::default()
    );
}

/// Of 20 simultaneous `insert_job_counted` calls with a limit of 5, exactly 5 succeed; the
/// meter ends at 5 and exactly those 5 jobs exist.
pub async fn job_insert_counted_concurrent_respects_limit(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Racing scans").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let jobs: Vec<Job> = (0..20).map(|n| job(&org, &site, minutes(n + 1))).collect();
    let results = run_concurrently(jobs.len(), |n| {
        let store = Arc::clone(&store);
        let job = jobs[n].clone();
        async move { store.insert_job_counted(&job, BASE_MONTH, 5).await }
    })
    .await;

    let mut accepted: Vec<String> = (0..jobs.len())
        .filter(|&n| results[n].is_ok())
        .map(|n| jobs[n].id.clone())
        .collect();
    let refused = results
        .iter()
        .filter(|r| matches!(r, Err(StoreError::LimitReached(_))))
        .count();
    assert_eq!((accepted.len(), refused), (5, 15), "{results:?}");
    assert_eq!(store.get_usage(&org.id, BASE_MONTH).await.unwrap().scans, 5);
    let mut listed = job_ids(
        &store
            .list_jobs(&org.id, &JobFilter::default(), &first_page(100))
            .await
            .unwrap(),
    );
    accepted.sort();
    listed.sort();
    assert_eq!(listed, accepted);
}

/// `get_job` returns the job in its current state (from any organization's point of view);
/// `list_jobs` is newest first and applies each filter (status, property, type) and their
/// combination, scoped to the organization.
pub async fn job_get_and_list_with_filters(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Job lists").await;
    let other = seed_organization(&*store, "Job lists neighbour").await;
    let p1 = seed_property(&*store, &org, minutes(0)).await;
    let p2 = seed_property(&*store, &org, minutes(0)).await;
    let foreign_site = seed_property(&*store, &other, minutes(0)).await;
    let s = &*store;

    let j1 = seed_job(s, &org, &p1, minutes(1), JobStatus::Pending).await;
    let j2 = seed_job(s, &org, &p1, minutes(2), JobStatus::Processing).await;
    let j3 = seed_job(s, &org, &p2, minutes(3), JobStatus::Completed).await;
    let mut j4 = job(&org, &p2, minutes(4));
    j4.job_type = "seo-audit".to_owned();
    store
        .insert_job_counted(&j4, BASE_MONTH, NO_SCAN_LIMIT)
        .await
        .unwrap();
    store
        .start_job(&j4.id, minutes(5))
        .await
        .unwrap()
        .expect("pending job starts");
    let j4 = store
        .finish_job(
            &j4.id,
            &JobOutcome::Failed("timeout".to_owned()),
            minutes(6),
        )
        .await
        .unwrap()
        .expect("processing job fails");
    let mut j5 = job(&org, &p1, minutes(5));
    j5.job_type = "seo-audit".to_owned();
    store
        .insert_job_counted(&j5, BASE_MONTH, NO_SCAN_LIMIT)
        .await
        .unwrap();
    let CancelOutcome::Cancelled(j5) = store.cancel_job(&j5.id, minutes(7)).await.unwrap() else {
        panic!("a pending job is cancellable");
    };
    let j6 = seed_job(s, &org, &p2, minutes(6), JobStatus::Pending).await;
    let foreign = seed_job(s, &other, &foreign_site, minutes(3), JobStatus::Pending).await;

    for job in [&j1, &j2, &j3, &j4, &j5, &j6, &foreign] {
        assert_eq!(store.get_job(&job.id).await.unwrap().as_ref(), Some(job));
    }
    assert_eq!(store.get_job(&new_id(ids::JOB)).await.unwrap(), None);

    let list = |filter: JobFilter| {
        let store = Arc::clone(&store);
        let org_id = org.id.clone();
        async move {
            store
                .list_jobs(&org_id, &filter, &first_page(100))
                .await
                .unwrap()
        }
    };
    assert_eq!(
        list(JobFilter::default()).await,
        vec![
            j6.clone(),
            j5.clone(),
            j4.clone(),
            j3.clone(),
            j2.clone(),
            j1.clone()
        ]
    );
    let by_status = |status| JobFilter {
        status: Some(status),
        ..JobFilter::default()
    };
    assert_eq!(
        list(by_status(JobStatus::Pending)).await,
        vec![j6.clone(), j1.clone()]
    );
    assert_eq!(
        list(by_status(JobStatus::Processing)).await,
        vec![j2.clone()]
    );
    assert_eq!(
        list(by_status(JobStatus::Completed)).await,
        vec![j3.clone()]
    );
    assert_eq!(list(by_status(JobStatus::Failed)).await, vec![j4.clone()]);
    assert_eq!(
        list(by_status(JobStatus::Cancelled)).await,
        vec![j5.clone()]
    );

    let by_property = |id: &str| JobFilter {
        property_id: Some(id.to_owned()),
        ..JobFilter::default()
    };
    assert_eq!(
        job_ids(&list(by_property(&p1.id)).await),
        job_ids(&[j5.clone(), j2.clone(), j1.clone()])
    );
    assert_eq!(
        job_ids(&list(by_property(&p2.id)).await),
        job_ids(&[j6.clone(), j4.clone(), j3.clone()])
    );
    assert_eq!(list(by_property(&foreign_site.id)).await, vec![]);

    let by_type = |job_type: &str| JobFilter {
        job_type: Some(job_type.to_owned()),
        ..JobFilter::default()
    };
    assert_eq!(
        job_ids(&list(by_type("seo-audit")).await),
        job_ids(&[j5.clone(), j4.clone()])
    );
    assert_eq!(
        job_ids(&list(by_type(SEO_SCAN)).await),
        job_ids(&[j6.clone(), j3.clone(), j2.clone(), j1.clone()])
    );
    assert_eq!(list(by_type("unknown-type")).await, vec![]);

    let combined = JobFilter {
        status: Some(JobStatus::Pending),
        property_id: Some(p2.id.clone()),
        job_type: Some(SEO_SCAN.to_owned()),
    };
    assert_eq!(list(combined).await, vec![j6.clone()]);
    let combined_empty = JobFilter {
        status: Some(JobStatus::Failed),
        property_id: Some(p1.id.clone()),
        job_type: None,
    };
    assert_eq!(list(combined_empty).await, vec![]);

    assert_eq!(
        store
            .list_jobs(&other.id, &JobFilter::default(), &first_page(100))
            .await
            .unwrap(),
        vec![foreign]
    );
}

/// Keyset pagination of jobs, unfiltered (25 jobs in pages of 7) and filtered by property
/// (13 of them in pages of 4), yields every matching job exactly once, newest first.
pub async fn job_list_pages_with_keyset(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Job paging").await;
    let p1 = seed_property(&*store, &org, minutes(0)).await;
    let p2 = seed_property(&*store, &org, minutes(0)).await;
    let mut jobs = Vec::new();
    for n in 0..25_i64 {
        let site = if n % 2 == 0 { &p1 } else { &p2 };
        jobs.push(job(&org, site, minutes(1 + (n * 7) % 9)));
    }
    for n in (0..25).map(|n| (n * 11) % 25) {
        store
            .insert_job_counted(&jobs[n], BASE_MONTH, NO_SCAN_LIMIT)
            .await
            .unwrap();
    }
    let mut expected = jobs.clone();
    sort_newest_first(&mut expected, |j| (j.created_at, j.id.clone()));

    let store_ref = &store;
    let org_id = org.id.as_str();
    let unfiltered = JobFilter::default();
    let filter_ref = &unfiltered;
    let pages = walk_pages(
        7,
        |page| async move { store_ref.list_jobs(org_id, filter_ref, &page).await },
        job_position,
    )
    .await;
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![7, 7, 7, 4]
    );
    assert_eq!(pages.concat(), expected);

    let only_p1 = JobFilter {
        property_id: Some(p1.id.clone()),
        ..JobFilter::default()
    };
    let filter_ref = &only_p1;
    let pages = walk_pages(
        4,
        |page| async move { store_ref.list_jobs(org_id, filter_ref, &page).await },
        job_position,
    )
    .await;
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![4, 4, 4, 1]
    );
    let expected_p1: Vec<Job> = expected
        .iter()
        .filter(|j| j.property_id == p1.id)
        .cloned()
        .collect();
    assert_eq!(pages.concat(), expected_p1);
}

/// `count_active_jobs` counts the organization's pending and processing jobs only.
pub async fn job_count_active(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Active").await;
    let other = seed_organization(&*store, "Active neighbour").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let other_site = seed_property(&*store, &other, minutes(0)).await;
    let s = &*store;
    assert_eq!(store.count_active_jobs(&org.id).await.unwrap(), 0);

    seed_job(s, &org, &site, minutes(1), JobStatus::Pending).await;
    seed_job(s, &org, &site, minutes(2), JobStatus::Pending).await;
    let processing = seed_job(s, &org, &site, minutes(3), JobStatus::Processing).await;
    seed_job(s, &org, &site, minutes(4), JobStatus::Completed).await;
    seed_job(s, &org, &site, minutes(5), JobStatus::Failed).await;
    seed_job(s, &org, &site, minutes(6), JobStatus::Cancelled).await;
    seed_job(s, &other, &other_site, minutes(7), JobStatus::Pending).await;
    assert_eq!(store.count_active_jobs(&org.id).await.unwrap(), 3);
    assert_eq!(store.count_active_jobs(&other.id).await.unwrap(), 1);

    store
        .finish_job(
            &processing.id,
            &JobOutcome::Completed(sample_result()),
            minutes(8),
        )
        .await
        .unwrap()
        .expect("processing job completes");
    assert_eq!(store.count_active_jobs(&org.id).await.unwrap(), 2);
}

/// `latest_jobs_for_properties` gives, for each asked property that has jobs, its most
/// recently created job in any state (equal times: the greatest id); properties without jobs,
/// and properties not asked for, give nothing.
pub async fn job_latest_for_properties(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Latest").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let quiet = seed_property(&*store, &org, minutes(0)).await;
    let busy = seed_property(&*store, &org, minutes(0)).await;
    let other = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let latest = |ids: Vec<String>| {
        let store = Arc::clone(&store);
        async move {
            let mut jobs = store.latest_jobs_for_properties(&ids).await.unwrap();
            jobs.sort_by(|a, b| a.id.cmp(&b.id));
            jobs
        }
    };
    assert_eq!(latest(vec![site.id.clone()]).await, vec![]);
    assert_eq!(latest(vec![]).await, vec![]);

    let newest = seed_job(s, &org, &site, minutes(30), JobStatus::Cancelled).await;
    seed_job(s, &org, &site, minutes(10), JobStatus::Completed).await;
    seed_job(s, &org, &site, minutes(20), JobStatus::Pending).await;
    let busy_job = seed_job(s, &org, &busy, minutes(40), JobStatus::Pending).await;
    seed_job(s, &org, &other, minutes(45), JobStatus::Pending).await;
    assert_eq!(latest(vec![site.id.clone()]).await, vec![newest.clone()]);
    assert_eq!(latest(vec![quiet.id.clone()]).await, vec![]);
    let mut expected = vec![newest, busy_job];
    expected.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(
        latest(vec![
            site.id.clone(),
            quiet.id.clone(),
            busy.id.clone(),
            "prop_unknown".into()
        ])
        .await,
        expected
    );

    let tie_small = job(&org, &quiet, minutes(50));
    let tie_large = job(&org, &quiet, minutes(50));
    assert!(tie_small.id < tie_large.id, "new_id is time-ordered");
    for job in [&tie_large, &tie_small] {
        store
            .insert_job_counted(job, BASE_MONTH, NO_SCAN_LIMIT)
            .await
            .unwrap();
    }
    assert_eq!(latest(vec![quiet.id.clone()]).await, vec![tie_large]);
}

/// `cancel_job` cancels pending and processing jobs (keeping progress and `startedAt`,
/// setting `completedAt`); finished jobs are `NotCancellable` and returned unchanged; an
/// unknown id is `NotFound`.
pub async fn job_cancel(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Canceller").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;

    let pending = seed_job(s, &org, &site, minutes(1), JobStatus::Pending).await;
    let expected = Job {
        status: JobStatus::Cancelled,
        completed_at: Some(minutes(10)),
        ..pending.clone()
    };
    assert_eq!(
        store.cancel_job(&pending.id, minutes(10)).await.unwrap(),
        CancelOutcome::Cancelled(expected.clone())
    );
    assert_eq!(
        store.get_job(&pending.id).await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(
        store.cancel_job(&pending.id, minutes(11)).await.unwrap(),
        CancelOutcome::NotCancellable(expected)
    );

    let processing = seed_job(s, &org, &site, minutes(2), JobStatus::Processing).await;
    let processing = store
        .set_job_progress(&processing.id, 40)
        .await
        .unwrap()
        .expect("processing job takes progress");
    let expected = Job {
        status: JobStatus::Cancelled,
        completed_at: Some(minutes(12)),
        ..processing.clone()
    };
    assert_eq!(expected.progress, 40);
    assert_eq!(
        expected.started_at,
        Some(minutes(2).plus(Duration::seconds(1)))
    );
    assert_eq!(
        store.cancel_job(&processing.id, minutes(12)).await.unwrap(),
        CancelOutcome::Cancelled(expected.clone())
    );
    assert_eq!(store.get_job(&processing.id).await.unwrap(), Some(expected));

    for status in [JobStatus::Completed, JobStatus::Failed] {
        let finished = seed_job(s, &org, &site, minutes(3), status).await;
        assert_eq!(
            store.cancel_job(&finished.id, minutes(13)).await.unwrap(),
            CancelOutcome::NotCancellable(finished.clone())
        );
        assert_eq!(store.get_job(&finished.id).await.unwrap(), Some(finished));
    }

    assert_eq!(
        store
            .cancel_job(&new_id(ids::JOB), minutes(14))
            .await
            .unwrap(),
        CancelOutcome::NotFound
    );
}

/// Of 10 simultaneous cancels of one processing job, exactly one is `Cancelled`; the others
/// are `NotCancellable` and return the job as that one cancel left it.
pub async fn job_cancel_concurrent_single_winner(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Racing cancels").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let target = seed_job(&*store, &org, &site, minutes(1), JobStatus::Processing).await;
    let outcomes = run_concurrently(10, |n| {
        let store = Arc::clone(&store);
        let id = target.id.clone();
        async move { store.cancel_job(&id, minutes(10 + n as i64)).await.unwrap() }
    })
    .await;

    let winners: Vec<usize> = (0..outcomes.len())
        .filter(|&n| matches!(outcomes[n], CancelOutcome::Cancelled(_)))
        .collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    let winner = winners[0];
    let expected = Job {
        status: JobStatus::Cancelled,
        completed_at: Some(minutes(10 + winner as i64)),
        ..target.clone()
    };
    for (n, outcome) in outcomes.iter().enumerate() {
        if n == winner {
            assert_eq!(outcome, &CancelOutcome::Cancelled(expected.clone()));
        } else {
            assert_eq!(outcome, &CancelOutcome::NotCancellable(expected.clone()));
        }
    }
    assert_eq!(store.get_job(&target.id).await.unwrap(), Some(expected));
}

/// A cancel racing a finish on the same processing job: exactly one of them takes effect, and
/// the job ends in the state of the one that did.
pub async fn job_cancel_races_finish(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Cancel or finish").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    for round in 0..8 {
        let target = seed_job(
            &*store,
            &org,
            &site,
            minutes(round + 1),
            JobStatus::Processing,
        )
        .await;
        let results = run_concurrently(2, |n| {
            let store = Arc::clone(&store);
            let id = target.id.clone();
            async move {
                if n == 0 {
                    (
                        Some(store.cancel_job(&id, minutes(100)).await.unwrap()),
                        None,
                    )
                } else {
                    let outcome = JobOutcome::Completed(sample_result());
                    (
                        None,
                        Some(store.finish_job(&id, &outcome, minutes(100)).await.unwrap()),
                    )
                }
            }
        })
        .await;
        let cancel = results[0].0.clone().expect("the cancel task's outcome");
        let finish = results[1].1.clone().expect("the finish task's outcome");
        let stored = store
            .get_job(&target.id)
            .await
            .unwrap()
            .expect("job exists");
        match (&cancel, &finish) {
            (CancelOutcome::Cancelled(cancelled), None) => {
                assert_eq!(stored.status, JobStatus::Cancelled);
                assert_eq!(&stored, cancelled);
                assert_eq!(stored.result, None);
            }
            (CancelOutcome::NotCancellable(seen), Some(finished)) => {
                assert_eq!(stored.status, JobStatus::Completed);
                assert_eq!(&stored, finished);
                assert_eq!(seen, finished);
            }
            other => panic!("cancel and finish both or neither took effect: {other:?}"),
        }
    }
}

/// `start_job` moves only a pending job to processing, setting `startedAt`; otherwise it is
/// `None` and changes nothing.
pub async fn job_start_only_from_pending(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Starter").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let pending = seed_job(s, &org, &site, minutes(1), JobStatus::Pending).await;

    let expected = Job {
        status: JobStatus::Processing,
        started_at: Some(minutes(5)),
        ..pending.clone()
    };
    assert_eq!(
        store.start_job(&pending.id, minutes(5)).await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(
        store.start_job(&pending.id, minutes(6)).await.unwrap(),
        None
    );
    assert_eq!(store.get_job(&pending.id).await.unwrap(), Some(expected));

    for status in [
        JobStatus::Completed,
        JobStatus::Failed,
        JobStatus::Cancelled,
    ] {
        let finished = seed_job(s, &org, &site, minutes(2), status).await;
        assert_eq!(
            store.start_job(&finished.id, minutes(7)).await.unwrap(),
            None
        );
        assert_eq!(store.get_job(&finished.id).await.unwrap(), Some(finished));
    }
    assert_eq!(
        store
            .start_job(&new_id(ids::JOB), minutes(8))
            .await
            .unwrap(),
        None
    );
}

/// `set_job_progress` records progress only while the job is processing; otherwise it is
/// `None` and changes nothing.
pub async fn job_progress_only_while_processing(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Progress").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;

    let pending = seed_job(s, &org, &site, minutes(1), JobStatus::Pending).await;
    assert_eq!(store.set_job_progress(&pending.id, 10).await.unwrap(), None);
    assert_eq!(store.get_job(&pending.id).await.unwrap(), Some(pending));

    let processing = seed_job(s, &org, &site, minutes(2), JobStatus::Processing).await;
    for progress in [30, 60, 99] {
        let expected = Job {
            progress,
            ..processing.clone()
        };
        assert_eq!(
            store
                .set_job_progress(&processing.id, progress)
                .await
                .unwrap(),
            Some(expected.clone())
        );
        assert_eq!(store.get_job(&processing.id).await.unwrap(), Some(expected));
    }

    for status in [
        JobStatus::Completed,
        JobStatus::Failed,
        JobStatus::Cancelled,
    ] {
        let finished = seed_job(s, &org, &site, minutes(3), status).await;
        assert_eq!(
            store.set_job_progress(&finished.id, 50).await.unwrap(),
            None
        );
        assert_eq!(store.get_job(&finished.id).await.unwrap(), Some(finished));
    }
    assert_eq!(
        store.set_job_progress(&new_id(ids::JOB), 50).await.unwrap(),
        None
    );
}

/// `finish_job` completes a processing job (status completed, progress 100, the result,
/// `completedAt`) or fails it (status failed, the error, progress kept, no result); a job
/// that is not processing, a cancelled one included, is left as it is and the answer is
/// `None`.
pub async fn job_finish_only_from_processing(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Finisher").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;

    let to_complete = seed_job(s, &org, &site, minutes(1), JobStatus::Processing).await;
    let to_complete = store
        .set_job_progress(&to_complete.id, 70)
        .await
        .unwrap()
        .expect("processing");
    let result = sample_result();
    let completed = Job {
        status: JobStatus::Completed,
        progress: 100,
        completed_at: Some(minutes(10)),
        result: Some(result),
        ..to_complete.clone()
    };
    assert_eq!(
        store
            .finish_job(&to_complete.id, &JobOutcome::Completed(result), minutes(10))
            .await
            .unwrap(),
        Some(completed.clone())
    );
    assert_eq!(
        store.get_job(&to_complete.id).await.unwrap(),
        Some(completed.clone())
    );
    assert_eq!(
        store
            .finish_job(
                &to_complete.id,
                &JobOutcome::Failed("late".to_owned()),
                minutes(11)
            )
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store.get_job(&to_complete.id).await.unwrap(),
        Some(completed)
    );

    let to_fail = seed_job(s, &org, &site, minutes(2), JobStatus::Processing).await;
    let to_fail = store
        .set_job_progress(&to_fail.id, 35)
        .await
        .unwrap()
        .expect("processing");
    let failed = Job {
        status: JobStatus::Failed,
        completed_at: Some(minutes(12)),
        error: Some("robots.txt disallows crawling".to_owned()),
        ..to_fail.clone()
    };
    assert_eq!(failed.progress, 35);
    assert_eq!(
        store
            .finish_job(
                &to_fail.id,
                &JobOutcome::Failed("robots.txt disallows crawling".to_owned()),
                minutes(12)
            )
            .await
            .unwrap(),
        Some(failed.clone())
    );
    assert_eq!(store.get_job(&to_fail.id).await.unwrap(), Some(failed));

    let pending = seed_job(s, &org, &site, minutes(3), JobStatus::Pending).await;
    let cancelled = seed_job(s, &org, &site, minutes(4), JobStatus::Cancelled).await;
    let failed_before = seed_job(s, &org, &site, minutes(5), JobStatus::Failed).await;
    for untouched in [pending, cancelled, failed_before] {
        assert_eq!(
            store
                .finish_job(&untouched.id, &JobOutcome::Completed(result), minutes(13))
                .await
                .unwrap(),
            None
        );
        assert_eq!(store.get_job(&untouched.id).await.unwrap(), Some(untouched));
    }
    assert_eq!(
        store
            .finish_job(
                &new_id(ids::JOB),
                &JobOutcome::Completed(result),
                minutes(14)
            )
            .await
            .unwrap(),
        None
    );
}

/// `job_counts_by_type` counts the organization's jobs created in `[from, to)` per type (all,
/// completed, failed), one entry per type that has such jobs, sorted by type.
pub async fn job_counts_by_type_over_half_open_range(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Counts").await;
    let other = seed_organization(&*store, "Counts neighbour").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let other_site = seed_property(&*store, &other, minutes(0)).await;
    let s = &*store;
    let from = at("2026-11-01T00:00:00.000Z");
    let to = at("2026-12-01T00:00:00.000Z");

    // seo-scan: in range at both ends, and just outside on either side.
    seed_job(s, &org, &site, from, JobStatus::Completed).await;
    seed_job(
        s,
        &org,
        &site,
        from.plus(Duration::days(1)),
        JobStatus::Failed,
    )
    .await;
    seed_job(s, &org, &site, millis(to, -1), JobStatus::Pending).await;
    seed_job(s, &org, &site, millis(from, -1), JobStatus::Completed).await;
    seed_job(s, &org, &site, to, JobStatus::Failed).await;
    // seo-audit: completed and cancelled in range.
    let audit_done =
        seed_typed_job(s, &org, &site, from.plus(Duration::days(2)), "seo-audit").await;
    store
        .start_job(&audit_done.id, from.plus(Duration::days(2)))
        .await
        .unwrap()
        .expect("pending job starts");
    store
        .finish_job(
            &audit_done.id,
            &JobOutcome::Completed(sample_result()),
            from.plus(Duration::days(3)),
        )
        .await
        .unwrap()
        .expect("processing job completes");
    let audit_cancelled =
        seed_typed_job(s, &org, &site, from.plus(Duration::days(4)), "seo-audit").await;
    assert!(matches!(
        store
            .cancel_job(&audit_cancelled.id, from.plus(Duration::days(4)))
            .await
            .unwrap(),
        CancelOutcome::Cancelled(_)
    ));
    // A type with jobs only outside the range does not appear.
    seed_typed_job(s, &org, &site, to.plus(Duration::days(1)), "zz-other").await;
    // Another organization's jobs do not count.
    seed_job(
        s,
        &other,
        &other_site,
        from.plus(Duration::days(1)),
        JobStatus::Completed,
    )
    .await;

    assert_eq!(
        store.job_counts_by_type(&org.id, from, to).await.unwrap(),
        vec![
            (
                "seo-audit".to_owned(),
                JobCounts {
                    total: 2,
                    completed: 1,
                    failed: 0
                }
            ),
            (
                SEO_SCAN.to_owned(),
                JobCounts {
                    total: 3,
                    completed: 1,
                    failed: 1
                }
            ),
        ]
    );
    assert_eq!(
        store.job_counts_by_type(&org.id, from, from).await.unwrap(),
        vec![]
    );
    assert_eq!(
        store
            .job_counts_by_type(&org.id, to, to.plus(Duration::days(2)))
            .await
            .unwrap(),
        vec![
            (
                SEO_SCAN.to_owned(),
                JobCounts {
                    total: 1,
                    completed: 0,
                    failed: 1
                }
            ),
            (
                "zz-other".to_owned(),
                JobCounts {
                    total: 1,
                    completed: 0,
                    failed: 0
                }
            ),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Behaviours: issues
// ---------------------------------------------------------------------------------------------

/// An inserted issue reads back equal; an unknown id is `None`.
pub async fn issue_insert_and_get(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Issues").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(1), JobStatus::Completed).await;
    let mut page_issue = issue(
        &site,
        &scan.id,
        ScanKind::Page,
        IssueStatus::Resolved,
        minutes(2),
    );
    page_issue.severity = Severity::Error;
    page_issue.last_seen_at = minutes(3);
    page_issue.resolved_at = Some(minutes(4));
    let site_issue = issue(
        &site,
        &scan.id,
        ScanKind::Site,
        IssueStatus::Open,
        minutes(2),
    );
    store.insert_issue(&page_issue).await.unwrap();
    store.insert_issue(&site_issue).await.unwrap();

    assert_eq!(
        store.get_issue(&page_issue.id).await.unwrap(),
        Some(page_issue)
    );
    assert_eq!(
        store.get_issue(&site_issue.id).await.unwrap(),
        Some(site_issue)
    );
    assert_eq!(store.get_issue(&new_id(ids::ISSUE)).await.unwrap(), None);
}

/// `list_issues` is newest first (ties by id descending), scoped to the property, and
/// applies the scan-kind and status filters alone and together.
pub async fn issue_list_with_filters(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Issue lists").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let other_site = seed_property(&*store, &org, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(1), JobStatus::Completed).await;
    let other_scan = seed_job(&*store, &org, &other_site, minutes(1), JobStatus::Completed).await;

    let i1 = issue(
        &site,
        &scan.id,
        ScanKind::Page,
        IssueStatus::Open,
        minutes(2),
    );
    let i2 = issue(
        &site,
        &scan.id,
        ScanKind::Site,
        IssueStatus::Open,
        minutes(3),
    );
    let i3 = issue(
        &site,
        &scan.id,
        ScanKind::Page,
        IssueStatus::Resolved,
        minutes(4),
    );
    let i4 = issue(
        &site,
        &scan.id,
        ScanKind::Page,
        IssueStatus::Fixed,
        minutes(5),
    );
    let i5 = issue(
        &site,
        &scan.id,
        ScanKind::Site,
        IssueStatus::Fixed,
        minutes(5),
    );
    let foreign = issue(
        &other_site,
        &other_scan.id,
        ScanKind::Page,
        IssueStatus::Open,
        minutes(6),
    );
    for issue in [&i3, &i5, &foreign, &i1, &i4, &i2] {
        store.insert_issue(issue).await.unwrap();
    }

    let list = |scan_kind: Option<ScanKind>, status: Option<IssueStatus>| {
        let store = Arc::clone(&store);
        let property_id = site.id.clone();
        async move {
            store
                .list_issues(
                    &property_id,
                    &IssueFilter { scan_kind, status },
                    &first_page(100),
                )
                .await
                .unwrap()
        }
    };
    assert_eq!(
        list(None, None).await,
        vec![i5.clone(), i4.clone(), i3.clone(), i2.clone(), i1.clone()]
    );
    assert_eq!(
        list(Some(ScanKind::Page), None).await,
        vec![i4.clone(), i3.clone(), i1.clone()]
    );
    assert_eq!(
        list(Some(ScanKind::Site), None).await,
        vec![i5.clone(), i2.clone()]
    );
    assert_eq!(
        list(None, Some(IssueStatus::Open)).await,
        vec![i2.clone(), i1.clone()]
    );
    assert_eq!(
        list(None, Some(IssueStatus::Resolved)).await,
        vec![i3.clone()]
    );
    assert_eq!(
        list(None, Some(IssueStatus::Fixed)).await,
        vec![i5.clone(), i4.clone()]
    );
    assert_eq!(
        list(Some(ScanKind::Page), Some(IssueStatus::Fixed)).await,
        vec![i4.clone()]
    );
    assert_eq!(
        list(Some(ScanKind::Site), Some(IssueStatus::Resolved)).await,
        vec![]
    );
    assert_eq!(
        store
            .list_issues(&site.id, &IssueFilter::default(), &first_page(2))
            .await
            .unwrap(),
        vec![i5, i4]
    );
    assert_eq!(
        store
            .list_issues(&other_site.id, &IssueFilter::default(), &first_page(100))
            .await
            .unwrap(),
        vec![foreign]
    );
}

/// Keyset pagination of issues, unfiltered (25 in pages of 7) and filtered to page issues (16
/// of them in pages of 5), yields every matching issue exactly once, newest first.
pub async fn issue_list_pages_with_keyset(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Issue paging").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(0), JobStatus::Completed).await;
    let issues: Vec<Issue> = (0..25_i64)
        .map(|n| {
            let kind = if n % 3 == 0 {
                ScanKind::Site
            } else {
                ScanKind::Page
            };
            issue(
                &site,
                &scan.id,
                kind,
                IssueStatus::Open,
                minutes(1 + (n * 4) % 7),
            )
        })
        .collect();
    for n in (0..25).map(|n| (n * 11) % 25) {
        store.insert_issue(&issues[n]).await.unwrap();
    }
    let mut expected = issues.clone();
    sort_newest_first(&mut expected, |i| (i.created_at, i.id.clone()));

    let store_ref = &store;
    let property_id = site.id.as_str();
    let all = IssueFilter::default();
    let filter_ref = &all;
    let pages = walk_pages(
        7,
        |page| async move { store_ref.list_issues(property_id, filter_ref, &page).await },
        issue_position,
    )
    .await;
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![7, 7, 7, 4]
    );
    assert_eq!(pages.concat(), expected);

    let page_only = IssueFilter {
        scan_kind: Some(ScanKind::Page),
        status: None,
    };
    let filter_ref = &page_only;
    let pages = walk_pages(
        5,
        |page| async move { store_ref.list_issues(property_id, filter_ref, &page).await },
        issue_position,
    )
    .await;
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![5, 5, 5, 1]
    );
    let expected_pages: Vec<Issue> = expected
        .into_iter()
        .filter(|i| i.scan_kind == ScanKind::Page)
        .collect();
    assert_eq!(pages.concat(), expected_pages);
}

/// `issue_summary` counts all of the property's issues by state (only that property's), and
/// is all zeros for a property without issues.
pub async fn issue_summary_counts(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Summary").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let other_site = seed_property(&*store, &org, minutes(0)).await;
    let empty_site = seed_property(&*store, &org, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(1), JobStatus::Completed).await;
    let other_scan = seed_job(&*store, &org, &other_site, minutes(1), JobStatus::Completed).await;
    let statuses = [
        (ScanKind::Page, IssueStatus::Open),
        (ScanKind::Site, IssueStatus::Open),
        (ScanKind::Page, IssueStatus::Open),
        (ScanKind::Page, IssueStatus::Resolved),
        (ScanKind::Page, IssueStatus::Fixed),
        (ScanKind::Site, IssueStatus::Fixed),
    ];
    let mut opened = Vec::new();
    for (n, (kind, status)) in statuses.into_iter().enumerate() {
        let item = issue(&site, &scan.id, kind, status, minutes(2 + n as i64));
        store.insert_issue(&item).await.unwrap();
        if status == IssueStatus::Open {
            opened.push(item);
        }
    }
    store
        .insert_issue(&issue(
            &other_site,
            &other_scan.id,
            ScanKind::Page,
            IssueStatus::Open,
            minutes(2),
        ))
        .await
        .unwrap();

    assert_eq!(
        store.issue_summary(&site.id).await.unwrap(),
        IssueSummary {
            open: 3,
            resolved: 1,
            fixed: 2,
            total: 6
        }
    );
    store
        .set_issue_fixed(&opened[0].id, minutes(30))
        .await
        .unwrap()
        .expect("known issue");
    assert_eq!(
        store.issue_summary(&site.id).await.unwrap(),
        IssueSummary {
            open: 2,
            resolved: 1,
            fixed: 3,
            total: 6
        }
    );
    assert_eq!(
        store.issue_summary(&other_site.id).await.unwrap(),
        IssueSummary {
            open: 1,
            resolved: 0,
            fixed: 0,
            total: 1
        }
    );
    assert_eq!(
        store.issue_summary(&empty_site.id).await.unwrap(),
        IssueSummary::default()
    );
}

/// `set_issue_fixed` sets status fixed and `fixedAt` (keeping the first fix time, and any
/// `resolvedAt`) and returns the issue; an unknown id is `None`.
pub async fn issue_set_fixed_keeps_first_fixed_at(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Fixer").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(1), JobStatus::Completed).await;
    let open = issue(
        &site,
        &scan.id,
        ScanKind::Page,
        IssueStatus::Open,
        minutes(2),
    );
    let resolved = issue(
        &site,
        &scan.id,
        ScanKind::Site,
        IssueStatus::Resolved,
        minutes(3),
    );
    store.insert_issue(&open).await.unwrap();
    store.insert_issue(&resolved).await.unwrap();

    let fixed = Issue {
        status: IssueStatus::Fixed,
        fixed_at: Some(minutes(10)),
        ..open.clone()
    };
    assert_eq!(
        store.set_issue_fixed(&open.id, minutes(10)).await.unwrap(),
        Some(fixed.clone())
    );
    assert_eq!(
        store.set_issue_fixed(&open.id, minutes(20)).await.unwrap(),
        Some(fixed.clone())
    );
    assert_eq!(store.get_issue(&open.id).await.unwrap(), Some(fixed));

    let fixed_resolved = Issue {
        status: IssueStatus::Fixed,
        fixed_at: Some(minutes(11)),
        ..resolved.clone()
    };
    assert_eq!(fixed_resolved.resolved_at, Some(minutes(3)));
    assert_eq!(
        store
            .set_issue_fixed(&resolved.id, minutes(11))
            .await
            .unwrap(),
        Some(fixed_resolved.clone())
    );
    assert_eq!(
        store.get_issue(&resolved.id).await.unwrap(),
        Some(fixed_resolved)
    );
    assert_eq!(
        store
            .set_issue_fixed(&new_id(ids::ISSUE), minutes(12))
            .await
            .unwrap(),
        None
    );
}

// ---------------------------------------------------------------------------------------------
// Behaviours: reports
// ---------------------------------------------------------------------------------------------

/// An inserted report reads back equal; a second report with the same token is
/// [`StoreError::Duplicate`] and changes nothing; an unknown token is `None`.
pub async fn report_insert_get_and_duplicate_token(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Reports").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let other_site = seed_property(&*store, &org, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(1), JobStatus::Completed).await;
    let other_scan = seed_job(&*store, &org, &other_site, minutes(1), JobStatus::Completed).await;
    let shared = report(&site, &scan.id, minutes(2), minutes(60 * 24 * 7));
    store.insert_report(&shared).await.unwrap();
    assert_eq!(
        store.get_report(&shared.token).await.unwrap(),
        Some(shared.clone())
    );

    let mut clash = report(
        &other_site,
        &other_scan.id,
        minutes(3),
        minutes(60 * 24 * 30),
    );
    clash.token = shared.token.clone();
    assert!(matches!(
        store.insert_report(&clash).await,
        Err(StoreError::Duplicate(_))
    ));
    assert_eq!(store.get_report(&shared.token).await.unwrap(), Some(shared));
    assert_eq!(
        store
            .get_report(&Alphanumeric.sample_string(&mut rand::thread_rng(), 32))
            .await
            .unwrap(),
        None
    );
}

/// `list_live_reports` lists the organization's reports expiring strictly after `now`, newest
/// first with ties ordered by token descending (tokens compare bytewise, so `Z` sorts before
/// `a`), and pages with (`createdAt`, token) positions: 25 live reports in pages of 7 yield 7,
/// 7, 7, 4, each exactly once.
pub async fn report_list_live_excludes_expired_and_pages(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Live reports").await;
    let other = seed_organization(&*store, "Live reports neighbour").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let other_site = seed_property(&*store, &other, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(0), JobStatus::Completed).await;
    let other_scan = seed_job(
        &*store,
        &other,
        &other_site,
        minutes(0),
        JobStatus::Completed,
    )
    .await;
    let now = minutes(1_000);

    let mut live = Vec::new();
    for n in 0..25_i64 {
        let mut item = report(
            &site,
            &scan.id,
            minutes(1 + (n * 7) % 6),
            now.plus(Duration::days(1 + n)),
        );
        // Tokens starting with upper- and lower-case letters share creation times.
        let first = ["A", "b", "Z", "c", "M"][(n % 5) as usize];
        item.token = format!("{first}{}", &item.token[1..]);
        live.push(item);
    }
    // Expiring exactly at `now` counts as expired; 1 ms later is live.
    live[0].expires_at = millis(now, 1);
    let mut expired = Vec::new();
    for n in 0..5_i64 {
        let expires_at = if n == 0 {
            now
        } else {
            now.plus(Duration::days(-n))
        };
        expired.push(report(&site, &scan.id, minutes(1 + n), expires_at));
    }
    let foreign = report(
        &other_site,
        &other_scan.id,
        minutes(3),
        now.plus(Duration::days(9)),
    );
    store.insert_report(&foreign).await.unwrap();
    for n in (0..25).map(|n| (n * 11) % 25) {
        store.insert_report(&live[n]).await.unwrap();
        if n < 5 {
            store.insert_report(&expired[n]).await.unwrap();
        }
    }
    let mut expected = live.clone();
    sort_newest_first(&mut expected, |r| (r.created_at, r.token.clone()));

    let everything = store
        .list_live_reports(&org.id, now, &first_page(100))
        .await
        .unwrap();
    assert_eq!(everything, expected);

    let store_ref = &store;
    let org_id = org.id.as_str();
    let pages = walk_pages(
        7,
        |page| async move { store_ref.list_live_reports(org_id, now, &page).await },
        report_position,
    )
    .await;
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![7, 7, 7, 4]
    );
    assert_eq!(pages.concat(), expected);

    // Later, the first report (expiring 1 ms after `now`) is gone too.
    let later = store
        .list_live_reports(&org.id, millis(now, 1), &first_page(100))
        .await
        .unwrap();
    assert_eq!(later.len(), 24);
    assert!(later.iter().all(|r| r.token != live[0].token));

    assert_eq!(
        store
            .list_live_reports(&other.id, now, &first_page(100))
            .await
            .unwrap(),
        vec![foreign]
    );
}

/// `increment_report_views` adds one view per call and returns the report; an unknown token
/// is `None`.
pub async fn report_increment_views(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Views").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(1), JobStatus::Completed).await;
    let shared = report(&site, &scan.id, minutes(2), minutes(10_000));
    let untouched = report(&site, &scan.id, minutes(3), minutes(10_000));
    store.insert_report(&shared).await.unwrap();
    store.insert_report(&untouched).await.unwrap();

    for views in 1..=3 {
        assert_eq!(
            store.increment_report_views(&shared.token).await.unwrap(),
            Some(Report {
                view_count: views,
                ..shared.clone()
            })
        );
    }
    assert_eq!(
        store
            .get_report(&shared.token)
            .await
            .unwrap()
            .map(|r| r.view_count),
        Some(3)
    );
    assert_eq!(
        store.get_report(&untouched.token).await.unwrap(),
        Some(untouched)
    );
    assert_eq!(
        store
            .increment_report_views(&Alphanumeric.sample_string(&mut rand::thread_rng(), 32))
            .await
            .unwrap(),
        None
    );
}

// ---------------------------------------------------------------------------------------------
// Behaviours: usage
// ---------------------------------------------------------------------------------------------

/// `get_usage` is all zeros for a month (or organization) without recorded usage.
pub async fn usage_defaults_to_zero(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Unused").await;
    assert_eq!(
        store.get_usage(&org.id, BASE_MONTH).await.unwrap(),
        UsageCounters::default()
    );
    assert_eq!(
        store.get_usage(&org.id, "1999-01").await.unwrap(),
        UsageCounters::default()
    );
}

/// `add_usage` adds field-wise to one organization's counters of one month and returns the
/// totals; other months and organizations are separate.
pub async fn usage_add_accumulates_per_month_and_organization(store: Arc<dyn Store>) {
    let org = seed_organization(&*store, "Usage").await;
    let other = seed_organization(&*store, "Usage neighbour").await;
    let first = UsageCounters {
        scans: 1,
        ai_input_tokens: 100,
        ..UsageCounters::default()
    };
    let second = UsageCounters {
        scans: 0,
        ai_input_tokens: 50,
        ai_output_tokens: 5,
        redirects_created: 2,
        images_optimized: 3,
    };
    let total = UsageCounters {
        scans: 1,
        ai_input_tokens: 150,
        ai_output_tokens: 5,
        redirects_created: 2,
        images_optimized: 3,
    };
    assert_eq!(
        store.add_usage(&org.id, BASE_MONTH, &first).await.unwrap(),
        first
    );
    assert_eq!(
        store.add_usage(&org.id, BASE_MONTH, &second).await.unwrap(),
        total
    );
    assert_eq!(store.get_usage(&org.id, BASE_MONTH).await.unwrap(), total);

    let december = UsageCounters {
        images_optimized: 9,
        ..UsageCounters::default()
    };
    assert_eq!(
        store
            .add_usage(&org.id, "2026-12", &december)
            .await
            .unwrap(),
        december
    );
    assert_eq!(
        store
            .add_usage(&other.id, BASE_MONTH, &second)
            .await
            .unwrap(),
        second
    );
    assert_eq!(store.get_usage(&org.id, BASE_MONTH).await.unwrap(), total);
    assert_eq!(store.get_usage(&org.id, "2026-12").await.unwrap(), december);
    assert_eq!(
        store.get_usage(&other.id, BASE_MONTH).await.unwrap(),
        second
    );
    assert_eq!(
        store
            .add_usage(&org.id, BASE_MONTH, &UsageCounters::default())
            .await
            .unwrap(),
        total
    );
}

// ---------------------------------------------------------------------------------------------
// Behaviours: rate limits
// ---------------------------------------------------------------------------------------------

/// `hit_rate_limits` increments only the buckets with `consume`, reads the others, and
/// reports every bucket's count in the order given.
pub async fn rate_limit_consumes_only_consume_buckets(store: Arc<dyn Store>) {
    let window = at("2026-11-01T10:00:00.000Z");
    let a = unique("key:a:read");
    let b = unique("key:b:write");
    let c = unique("org:c:daily");
    let s = &*store;
    let buckets = [
        rate_bucket(&a, window, 5, true),
        rate_bucket(&b, window, 5, false),
        rate_bucket(&c, window, 5, true),
    ];
    assert_eq!(
        hit(s, &buckets).await,
        RateOutcome {
            counts: vec![1, 0, 1],
            exceeded: vec![]
        }
    );
    assert_eq!(
        hit(s, &buckets).await,
        RateOutcome {
            counts: vec![2, 0, 2],
            exceeded: vec![]
        }
    );
    assert_eq!(
        hit(s, &[rate_bucket(&b, window, 5, true)]).await,
        RateOutcome {
            counts: vec![1],
            exceeded: vec![]
        }
    );
    let reversed = [
        rate_bucket(&c, window, 5, false),
        rate_bucket(&b, window, 5, true),
        rate_bucket(&a, window, 5, false),
    ];
    assert_eq!(
        hit(s, &reversed).await,
        RateOutcome {
            counts: vec![2, 2, 2],
            exceeded: vec![]
        }
    );
    assert_eq!(
        hit(s, &buckets).await,
        RateOutcome {
            counts: vec![3, 2, 3],
            exceeded: vec![]
        }
    );
}

/// At the limit, `hit_rate_limits` refuses all-or-nothing: `exceeded` lists every consumed
/// bucket at its limit and no bucket is counted. A bucket only read does not refuse, even at
/// its limit.
pub async fn rate_limit_refuses_at_limit_all_or_nothing(store: Arc<dyn Store>) {
    let window = at("2026-11-01T11:00:00.000Z");
    let a = unique("key:a:write");
    let b = unique("org:b:daily");
    let s = &*store;
    let both = [
        rate_bucket(&a, window, 3, true),
        rate_bucket(&b, window, 2, true),
    ];
    assert_eq!(hit(s, &both).await.counts, vec![1, 1]);
    assert_eq!(hit(s, &both).await.counts, vec![2, 2]);
    assert_eq!(
        hit(s, &both).await,
        RateOutcome {
            counts: vec![2, 2],
            exceeded: vec![1]
        }
    );
    // `a` was not counted by the refused call: it still has room for exactly one.
    assert_eq!(
        hit(s, &[rate_bucket(&a, window, 3, true)]).await,
        RateOutcome {
            counts: vec![3],
            exceeded: vec![]
        }
    );
    assert_eq!(
        hit(s, &both).await,
        RateOutcome {
            counts: vec![3, 2],
            exceeded: vec![0, 1]
        }
    );
    // Only read, a full bucket does not refuse the others.
    let d = unique("key:d:read");
    assert_eq!(
        hit(
            s,
            &[
                rate_bucket(&d, window, 10, true),
                rate_bucket(&a, window, 3, false),
                rate_bucket(&b, window, 2, false),
            ]
        )
        .await,
        RateOutcome {
            counts: vec![1, 3, 2],
            exceeded: vec![]
        }
    );
    // A raised limit lets the bucket count again.
    assert_eq!(
        hit(s, &[rate_bucket(&b, window, 3, true)]).await,
        RateOutcome {
            counts: vec![3],
            exceeded: vec![]
        }
    );
    // A limit of zero refuses at once.
    let zero = unique("key:zero:write");
    assert_eq!(
        hit(s, &[rate_bucket(&zero, window, 0, true)]).await,
        RateOutcome {
            counts: vec![0],
            exceeded: vec![0]
        }
    );
}

/// Each (name, window start) is its own counter: a new window starts from zero, the old
/// window keeps its count, and another name in the same window is separate.
pub async fn rate_limit_windows_are_separate(store: Arc<dyn Store>) {
    let name = unique("key:x:read");
    let first_window = at("2026-11-01T12:00:00.000Z");
    let next_window = at("2026-11-01T13:00:00.000Z");
    let s = &*store;
    let in_first = [rate_bucket(&name, first_window, 2, true)];
    assert_eq!(hit(s, &in_first).await.counts, vec![1]);
    assert_eq!(hit(s, &in_first).await.counts, vec![2]);
    assert_eq!(hit(s, &in_first).await.exceeded, vec![0]);

    assert_eq!(
        hit(s, &[rate_bucket(&name, next_window, 2, true)]).await,
        RateOutcome {
            counts: vec![1],
            exceeded: vec![]
        }
    );
    assert_eq!(
        hit(s, &[rate_bucket(&name, first_window, 2, false)])
            .await
            .counts,
        vec![2]
    );
    assert_eq!(
        hit(
            s,
            &[rate_bucket(&unique("key:y:read"), first_window, 2, true)]
        )
        .await
        .counts,
        vec![1]
    );
    assert_eq!(
        hit(s, &[rate_bucket(&name, next_window, 2, false)])
            .await
            .counts,
        vec![1]
    );
}

/// Of 50 simultaneous hits on a bucket with limit 20, exactly 20 are counted (seeing counts 1
/// to 20, each once) and 30 are refused at 20.
pub async fn rate_limit_concurrent_hits_respect_limit(store: Arc<dyn Store>) {
    let name = unique("key:busy:read");
    let window = at("2026-11-01T14:00:00.000Z");
    let outcomes = run_concurrently(50, |_| {
        let store = Arc::clone(&store);
        let bucket = rate_bucket(&name, window, 20, true);
        async move { store.hit_rate_limits(&[bucket]).await.unwrap() }
    })
    .await;
    let mut accepted: Vec<u64> = outcomes
        .iter()
        .filter(|o| o.exceeded.is_empty())
        .map(|o| o.counts[0])
        .collect();
    accepted.sort_unstable();
    assert_eq!(accepted, (1..=20).collect::<Vec<u64>>());
    let refused: Vec<&RateOutcome> = outcomes.iter().filter(|o| !o.exceeded.is_empty()).collect();
    assert_eq!(refused.len(), 30);
    assert!(refused
        .iter()
        .all(|o| o.counts == vec![20] && o.exceeded == vec![0]));
    assert_eq!(
        hit(&*store, &[rate_bucket(&name, window, 20, false)])
            .await
            .counts,
        vec![20]
    );
}

// ---------------------------------------------------------------------------------------------
// Behaviours: idempotency
// ---------------------------------------------------------------------------------------------

/// The first claim of a scope is `Acquired`; while unfinished, the same fingerprint is
/// `InUse` and another fingerprint `Mismatch`. Scopes are independent.
pub async fn idempotency_claim_in_use_and_mismatch(store: Arc<dyn Store>) {
    let scope = unique("org:live:order-1");
    let other_scope = unique("org:live:order-2");
    let t0 = at("2026-11-01T15:00:00.000Z");
    let s = &*store;
    assert_eq!(
        claim(s, &scope, "fp-a", t0).await,
        IdempotencyClaim::Acquired
    );
    assert_eq!(
        claim(s, &scope, "fp-a", millis(t0, 1_000)).await,
        IdempotencyClaim::InUse
    );
    assert_eq!(
        claim(s, &scope, "fp-b", millis(t0, 2_000)).await,
        IdempotencyClaim::Mismatch
    );
    assert_eq!(
        claim(s, &scope, "fp-a", millis(t0, 3_000)).await,
        IdempotencyClaim::InUse
    );
    assert_eq!(
        claim(s, &other_scope, "fp-a", t0).await,
        IdempotencyClaim::Acquired
    );
}

/// After `complete_idempotency_key`, claims with the same fingerprint replay the stored
/// status and body (again and again, even long after the claim went stale) and another
/// fingerprint is `Mismatch`. Completing with a fingerprint that does not own the scope does
/// nothing.
pub async fn idempotency_complete_then_replay(store: Arc<dyn Store>) {
    let scope = unique("org:live:create-property");
    let t0 = at("2026-11-01T16:00:00.000Z");
    let s = &*store;
    let response = StoredResponse {
        status: 201,
        body: r#"{"property":{"id":"prop_1","url":"https://example.com"}}"#.to_owned(),
    };
    assert_eq!(
        claim(s, &scope, "fp-a", t0).await,
        IdempotencyClaim::Acquired
    );
    store
        .complete_idempotency_key(&scope, "fp-a", &response)
        .await
        .unwrap();
    assert_eq!(
        claim(s, &scope, "fp-a", millis(t0, 5_000)).await,
        IdempotencyClaim::Replay(response.clone())
    );
    assert_eq!(
        claim(s, &scope, "fp-a", millis(t0, 6_000)).await,
        IdempotencyClaim::Replay(response.clone())
    );
    assert_eq!(
        claim(s, &scope, "fp-a", t0.plus(Duration::hours(23))).await,
        IdempotencyClaim::Replay(response.clone())
    );
    assert_eq!(
        claim(s, &scope, "fp-b", t0.plus(Duration::hours(1))).await,
        IdempotencyClaim::Mismatch
    );

    let other_scope = unique("org:live:queue-scan");
    assert_eq!(
        claim(s, &other_scope, "fp-x", t0).await,
        IdempotencyClaim::Acquired
    );
    store
        .complete_idempotency_key(&other_scope, "fp-y", &response)
        .await
        .unwrap();
    assert_eq!(
        claim(s, &other_scope, "fp-x", millis(t0, 1_000)).await,
        IdempotencyClaim::InUse
    );
}

/// `release_idempotency_key` drops an unfinished claim so the next claim, with any
/// fingerprint, is `Acquired`. It does nothing for another fingerprint or for a completed
/// record.
pub async fn idempotency_release_frees_key(store: Arc<dyn Store>) {
    let scope = unique("org:test:batch");
    let t0 = at("2026-11-01T17:00:00.000Z");
    let s = &*store;
    assert_eq!(
        claim(s, &scope, "fp-a", t0).await,
        IdempotencyClaim::Acquired
    );
    store.release_idempotency_key(&scope, "fp-b").await.unwrap();
    assert_eq!(
        claim(s, &scope, "fp-a", millis(t0, 1_000)).await,
        IdempotencyClaim::InUse
    );

    store.release_idempotency_key(&scope, "fp-a").await.unwrap();
    assert_eq!(
        claim(s, &scope, "fp-b", millis(t0, 2_000)).await,
        IdempotencyClaim::Acquired
    );
    assert_eq!(
        claim(s, &scope, "fp-a", millis(t0, 3_000)).await,
        IdempotencyClaim::Mismatch
    );

    let response = StoredResponse {
        status: 202,
        body: r#"{"results":[]}"#.to_owned(),
    };
    store
        .complete_idempotency_key(&scope, "fp-b", &response)
        .await
        .unwrap();
    store.release_idempotency_key(&scope, "fp-b").await.unwrap();
    assert_eq!(
        claim(s, &scope, "fp-b", millis(t0, 4_000)).await,
        IdempotencyClaim::Replay(response)
    );

    // Releasing a scope that was never claimed is harmless.
    store
        .release_idempotency_key(&unique("org:test:never"), "fp-a")
        .await
        .unwrap();
}

/// An unfinished claim made before `stale_before` (exclusive) is taken over by a claim with
/// the same fingerprint, which is `Acquired` and renews the claim; a different fingerprint is
/// still `Mismatch`.
pub async fn idempotency_stale_claim_taken_over(store: Arc<dyn Store>) {
    let scope = unique("org:live:stale");
    let t0 = at("2026-11-01T18:00:00.000Z");
    let s = &*store;
    assert_eq!(
        claim(s, &scope, "fp-a", t0).await,
        IdempotencyClaim::Acquired
    );
    // stale_before = now - 60 s: t0 - 1 ms, then exactly t0: not stale yet.
    assert_eq!(
        claim(s, &scope, "fp-a", millis(t0, 59_999)).await,
        IdempotencyClaim::InUse
    );
    assert_eq!(
        claim(s, &scope, "fp-a", millis(t0, 60_000)).await,
        IdempotencyClaim::InUse
    );
    assert_eq!(
        claim(s, &scope, "fp-b", millis(t0, 61_000)).await,
        IdempotencyClaim::Mismatch
    );
    // stale_before = t0 + 1 s: the claim of t0 is stale and taken over.
    assert_eq!(
        claim(s, &scope, "fp-a", millis(t0, 61_000)).await,
        IdempotencyClaim::Acquired
    );
    // The takeover renewed the claim: it is in use until 60 s after the takeover.
    assert_eq!(
        claim(s, &scope, "fp-a", millis(t0, 62_000)).await,
        IdempotencyClaim::InUse
    );
    assert_eq!(
        claim(s, &scope, "fp-a", millis(t0, 121_000)).await,
        IdempotencyClaim::InUse
    );
    assert_eq!(
        claim(s, &scope, "fp-a", millis(t0, 122_000)).await,
        IdempotencyClaim::Acquired
    );
}

/// A record created before `expired_before` is replaced by the next claim, whatever its
/// fingerprint or state: the claim is `Acquired` and the new fingerprint owns the scope.
pub async fn idempotency_expired_record_replaced(store: Arc<dyn Store>) {
    let scope = unique("org:live:expiring");
    let t0 = at("2026-11-02T00:00:00.000Z");
    let s = &*store;
    let response = StoredResponse {
        status: 202,
        body: r#"{"job":{"id":"job_1"}}"#.to_owned(),
    };
    assert_eq!(
        claim(s, &scope, "fp-a", t0).await,
        IdempotencyClaim::Acquired
    );
    store
        .complete_idempotency_key(&scope, "fp-a", &response)
        .await
        .unwrap();
    // expired_before = now - 24 h = t0: created exactly then, not expired yet.
    assert_eq!(
        claim(s, &scope, "fp-b", t0.plus(Duration::hours(24))).await,
        IdempotencyClaim::Mismatch
    );
    // expired_before = t0 + 1 ms: expired, replaced by the new fingerprint's claim.
    let later = millis(t0.plus(Duration::hours(24)), 1);
    assert_eq!(
        claim(s, &scope, "fp-b", later).await,
        IdempotencyClaim::Acquired
    );
    assert_eq!(
        claim(s, &scope, "fp-b", millis(later, 1_000)).await,
        IdempotencyClaim::InUse
    );
    assert_eq!(
        claim(s, &scope, "fp-a", millis(later, 2_000)).await,
        IdempotencyClaim::Mismatch
    );

    // An expired unfinished claim is replaced too, by the same fingerprint.
    let unfinished = unique("org:live:expiring-unfinished");
    assert_eq!(
        claim(s, &unfinished, "fp-a", t0).await,
        IdempotencyClaim::Acquired
    );
    assert_eq!(
        claim(s, &unfinished, "fp-a", t0.plus(Duration::hours(25))).await,
        IdempotencyClaim::Acquired
    );
    assert_eq!(
        claim(
            s,
            &unfinished,
            "fp-a",
            t0.plus(Duration::hours(25)).plus(Duration::seconds(1))
        )
        .await,
        IdempotencyClaim::InUse
    );
}

/// Of 30 simultaneous first claims of one scope and fingerprint, exactly one is `Acquired`
/// and the rest are `InUse`.
pub async fn idempotency_concurrent_claims_single_winner(store: Arc<dyn Store>) {
    let scope = unique("org:live:race");
    let t0 = at("2026-11-01T19:00:00.000Z");
    let claims = run_concurrently(30, |n| {
        let store = Arc::clone(&store);
        let request = idempotency_request(&scope, "fp-race", millis(t0, n as i64));
        async move { store.claim_idempotency_key(&request).await.unwrap() }
    })
    .await;
    let acquired = claims
        .iter()
        .filter(|c| **c == IdempotencyClaim::Acquired)
        .count();
    let in_use = claims
        .iter()
        .filter(|c| **c == IdempotencyClaim::InUse)
        .count();
    assert_eq!((acquired, in_use), (1, 29), "{claims:?}");
}

// ---------------------------------------------------------------------------------------------
// Behaviours: maintenance
// ---------------------------------------------------------------------------------------------

/// `purge_expired` deletes rate-limit windows starting before `windows_before` and
/// idempotency records created before `idempotency_before` (both exclusive), keeps the rest,
/// and returns how many rows went.
///
/// Unlike every other behaviour it must count rows it did not create, so it works before
/// 2000-01-01, where nothing else in the suite writes: its exact count holds as long as no
/// one else writes rate windows or idempotency records dated before 2000 to the same store
/// at the same time.
pub async fn purge_expired_removes_old_rows(store: Arc<dyn Store>) {
    let cutoff = at("2000-01-01T00:00:00.000Z");
    let s = &*store;
    let a = unique("purge:a");
    let b = unique("purge:b");
    let c = unique("purge:c");
    let old_window = at("1990-01-01T00:00:00.000Z");
    let older_window = at("1991-06-01T05:00:00.000Z");
    let last_old_window = at("1999-12-31T23:00:00.000Z");
    // Three old windows (one of them hit twice) and one at the cutoff.
    hit(s, &[rate_bucket(&a, old_window, 10, true)]).await;
    hit(s, &[rate_bucket(&a, old_window, 10, true)]).await;
    hit(s, &[rate_bucket(&a, older_window, 10, true)]).await;
    hit(s, &[rate_bucket(&b, last_old_window, 10, true)]).await;
    hit(s, &[rate_bucket(&c, cutoff, 10, true)]).await;

    // One idempotency record just before the cutoff and one at it.
    let old_scope = unique("purge:old");
    let kept_scope = unique("purge:kept");
    let old_time = millis(cutoff, -1);
    assert_eq!(
        claim(s, &old_scope, "fp", old_time).await,
        IdempotencyClaim::Acquired
    );
    assert_eq!(
        claim(s, &kept_scope, "fp", cutoff).await,
        IdempotencyClaim::Acquired
    );

    assert_eq!(store.purge_expired(cutoff, cutoff).await.unwrap(), 4);

    let peek = |name: &str, window| [rate_bucket(name, window, 10, false)];
    assert_eq!(hit(s, &peek(&a, old_window)).await.counts, vec![0]);
    assert_eq!(hit(s, &peek(&a, older_window)).await.counts, vec![0]);
    assert_eq!(hit(s, &peek(&b, last_old_window)).await.counts, vec![0]);
    assert_eq!(hit(s, &peek(&c, cutoff)).await.counts, vec![1]);

    // Neither claim is stale or expired by these requests' own bounds, so only a purged
    // record can be acquired again.
    let request = |scope: &str| IdempotencyRequest {
        scope: scope.to_owned(),
        fingerprint: "fp".to_owned(),
        now: millis(cutoff, 1),
        expired_before: at("1999-01-01T00:00:00.000Z"),
        stale_before: at("1999-12-31T23:00:00.000Z"),
    };
    assert_eq!(
        store
            .claim_idempotency_key(&request(&old_scope))
            .await
            .unwrap(),
        IdempotencyClaim::Acquired
    );
    assert_eq!(
        store
            .claim_idempotency_key(&request(&kept_scope))
            .await
            .unwrap(),
        IdempotencyClaim::InUse
    );

    // Nothing older is left: purging again removes nothing but the re-acquired record, which
    // was created after the cutoff and stays.
    assert_eq!(store.purge_expired(cutoff, cutoff).await.unwrap(), 0);
}

/// `dump` holds every inserted record in its current state (and usage rows), each list sorted
/// by its key.
pub async fn dump_contains_inserted_records(store: Arc<dyn Store>) {
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
        .contains(&(org.id.clone(), BASE_MONTH.to_owned(), usage)));

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
}

// ---------------------------------------------------------------------------------------------
// The macro
// ---------------------------------------------------------------------------------------------

/// Runs the whole conformance suite against a backend: expands to one `#[tokio::test]` (on a
/// multi-threaded runtime) per behaviour of [`testing`](crate::testing), each calling it with
/// a store from `make_store().await`, an `async fn() -> Arc<dyn Store>` in scope (compiled and
/// run in each backend's `tests/conformance.rs`):
///
/// ```text
/// async fn make_store() -> std::sync::Arc<dyn xf_core::store::Store> {
///     std::sync::Arc::new(xf_storage_memory::MemoryStore::new())
/// }
/// xf_core::store_conformance!(make_store);
/// ```
#[macro_export]
macro_rules! store_conformance {
    ($make_store:path) => {
        $crate::__store_conformance_tests!(
            $make_store;
            ping_succeeds,
            organization_insert_and_get,
            organization_find_by_name_returns_first_created,
            organization_update_plan_and_limits,
            api_key_insert_and_find_by_hash,
            api_key_duplicate_hash_rejected,
            api_key_max_active_enforced,
            api_key_concurrent_inserts_respect_max_active,
            api_key_revoke_keeps_first_time,
            api_key_list_oldest_first,
            organization_with_keys_inserted_atomically,
            property_insert_and_get,
            property_duplicate_url_rejected_per_organization,
            property_concurrent_duplicate_url_single_winner,
            property_get_many,
            property_find_by_url,
            property_list_newest_first,
            property_list_pages_with_keyset,
            property_list_and_count_scoped_to_organization,
            property_set_verified,
            property_set_gsc_site,
            job_insert_counted_counts_scans,
            job_insert_counted_refuses_at_limit,
            job_insert_counted_concurrent_respects_limit,
            job_get_and_list_with_filters,
            job_list_pages_with_keyset,
            job_count_active,
            job_latest_for_properties,
            job_cancel,
            job_cancel_concurrent_single_winner,
            job_cancel_races_finish,
            job_start_only_from_pending,
            job_progress_only_while_processing,
            job_finish_only_from_processing,
            job_counts_by_type_over_half_open_range,
            issue_insert_and_get,
            issue_list_with_filters,
            issue_list_pages_with_keyset,
            issue_summary_counts,
            issue_set_fixed_keeps_first_fixed_at,
            report_insert_get_and_duplicate_token,
            report_list_live_excludes_expired_and_pages,
            report_increment_views,
            usage_defaults_to_zero,
            usage_add_accumulates_per_month_and_organization,
            rate_limit_consumes_only_consume_buckets,
            rate_limit_refuses_at_limit_all_or_nothing,
            rate_limit_windows_are_separate,
            rate_limit_concurrent_hits_respect_limit,
            idempotency_claim_in_use_and_mismatch,
            idempotency_complete_then_replay,
            idempotency_release_frees_key,
            idempotency_stale_claim_taken_over,
            idempotency_expired_record_replaced,
            idempotency_concurrent_claims_single_winner,
            purge_expired_removes_old_rows,
            dump_contains_inserted_records,
        );
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
