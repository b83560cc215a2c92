//! PostgreSQL-specific tests of the store: every record survives a round trip, the schema is
//! what the crate documentation promises, errors map to the right kinds, and the atomic rules
//! hold across two separate pools on one database (two pools stand for two app instances).

use std::sync::Arc;

use serde_json::json;
use sqlx::postgres::PgPoolOptions;
use xf_core::ids::{ApiKeyId, Id, IssueId, JobId, OrganizationId, PropertyId};
use xf_core::model::{
    ApiKey, EventType, Issue, IssueStatus, JobRecord, JobStatus, JobSubject, KeyMode, Organization,
    Property, Report, ScanKind, Severity, UsageCounters, SEO_SCAN,
};
use xf_core::plans::LimitOverrides;
use xf_core::store::prelude::*;
use xf_core::store::{
    After, AttemptOutcome, CancelOutcome, ClaimRequest, ClaimedJob, Finish, IdempotencyClaim,
    IdempotencyRequest, JobFilter, PageRequest, RateBucket, Store, StoredResponse,
};
use xf_core::testing::Dump;
use xf_core::time::Timestamp;
use xf_core::StoreError;
use xf_storage_postgres::testing::fresh_database;
use xf_storage_postgres::PgStore;

fn ms(millis: i64) -> Timestamp {
    Timestamp::from_unix_millis(millis).expect("timestamp in range")
}

/// 2026-11-22T10:15:30.123Z
fn t0() -> Timestamp {
    ms(1_795_342_530_123)
}

fn later(seconds: i64) -> Timestamp {
    t0().plus(chrono::Duration::seconds(seconds))
}

/// The id of kind `T` numbered `n`: the prefix and `n` in 32 hex digits.
fn id<T: Id>(n: u128) -> T {
    T::parse_str(&format!("{}_{n:032x}", T::PREFIX)).expect("a well-formed id")
}

fn org(n: u128) -> OrganizationId {
    id(n)
}

fn prop(n: u128) -> PropertyId {
    id(n)
}

fn jid(n: u128) -> JobId {
    id(n)
}

fn key(n: u128) -> ApiKeyId {
    id(n)
}

fn organization(id: OrganizationId) -> Organization {
    Organization {
        name: format!("Org {id}"),
        id,
        plan: "growth".to_owned(),
        shop_domain: None,
        limits: LimitOverrides::default(),
        created_at: t0(),
    }
}

fn api_key(id: ApiKeyId, organization_id: OrganizationId) -> ApiKey {
    ApiKey {
        key_hash: format!("hash-of-{id}"),
        id,
        organization_id,
        mode: KeyMode::Live,
        prefix: "xf_live_".to_owned(),
        created_at: t0(),
        revoked_at: None,
        last_used_at: None,
    }
}

fn property(
    id: PropertyId,
    organization_id: OrganizationId,
    url: &str,
    created_at: Timestamp,
) -> Property {
    Property {
        id,
        organization_id,
        name: url.to_owned(),
        url: url.to_owned(),
        verified: false,
        created_at,
        gsc_site_url: None,
    }
}

fn job(id: JobId, organization_id: OrganizationId, created_at: Timestamp) -> JobRecord {
    let subject = JobSubject {
        property_id: prop(1),
        property_name: "example.com".to_owned(),
        tenant_label: "Org".to_owned(),
        shop_domain: None,
    };
    let payload = json!({"maxPages": 25, "maxDepth": 2});
    JobRecord {
        id,
        ..JobRecord::new(organization_id, SEO_SCAN, payload, subject, created_at)
    }
}

/// Claims every due scan at `now` with a five-minute lease.
async fn claim_scans(store: &dyn Store, now: Timestamp) -> Vec<ClaimedJob> {
    store
        .claim_jobs(&ClaimRequest {
            job_types: vec![SEO_SCAN.to_owned()],
            limit: 1_000,
            now,
            lease_expires_at: now.plus(chrono::Duration::minutes(5)),
        })
        .await
        .expect("claim")
}

fn page(limit: usize) -> PageRequest {
    PageRequest { limit, after: None }
}

/// A second store on the same database with its own pool: another app instance.
async fn other_instance(store: &PgStore) -> PgStore {
    let options = store.pool().connect_options().as_ref().clone();
    let pool = PgPoolOptions::new()
        .max_connections(10)
        .connect_with(options)
        .await
        .expect("second pool connects");
    PgStore::new(pool)
}

/// Both instances, as trait objects, alternating.
async fn two_instances() -> [Arc<dyn Store>; 2] {
    let first = fresh_database().await;
    let second = other_instance(&first).await;
    [Arc::new(first), Arc::new(second)]
}

#[tokio::test]
async fn every_record_survives_a_round_trip_with_all_fields_set() {
    let store = fresh_database().await;
    let org = Organization {
        shop_domain: Some("shop.example".to_owned()),
        limits: LimitOverrides {
            read_per_hour: Some(7),
            scans_per_month: Some(u64::MAX),
            max_depth: Some(0),
            ..LimitOverrides::default()
        },
        ..organization(org(1))
    };
    store.insert_organization(&org).await.unwrap();
    assert_eq!(
        store.get_organization(&org.id).await.unwrap(),
        Some(org.clone())
    );

    let key = ApiKey {
        mode: KeyMode::Test,
        revoked_at: Some(later(5)),
        ..api_key(key(1), org.id.clone())
    };
    store.insert_api_key(&key, 5).await.unwrap();
    assert_eq!(
        store.find_api_key(&key.key_hash).await.unwrap(),
        Some((key.clone(), org.clone()))
    );

    let site = Property {
        verified: true,
        gsc_site_url: Some("sc-domain:example.com".to_owned()),
        ..property(prop(1), org.id.clone(), "https://example.com/", t0())
    };
    store.insert_property(&site).await.unwrap();
    assert_eq!(
        store.get_property(&site.id).await.unwrap(),
        Some(site.clone())
    );

    // A job as queued, with every optional field set, then through an attempt to the end.
    let queued = JobRecord {
        payload: json!({"maxPages": u32::MAX, "maxDepth": 9, "note": "ünïcödé ✓"}),
        subject: job(jid(1), org.id.clone(), t0())
            .subject
            .map(|subject| JobSubject {
                shop_domain: Some("shop.example".to_owned()),
                ..subject
            }),
        max_attempts: 7,
        run_at: later(1),
        ..job(jid(1), org.id.clone(), t0())
    };
    store
        .insert_job_counted(&queued, "2026-11", 10)
        .await
        .unwrap();
    assert_eq!(
        store.get_job(&queued.id).await.unwrap(),
        Some(queued.clone())
    );
    let claimed = claim_scans(&store, later(2)).await;
    assert_eq!(claimed.len(), 1);
    let result = json!({"score": 87, "pagesScanned": u32::MAX, "issuesCount": 3});
    let reached = store
        .finish_jobs(
            &[Finish {
                attempt: claimed[0].attempt.clone(),
                outcome: AttemptOutcome::Completed(result.clone()),
            }],
            later(3),
        )
        .await
        .unwrap();
    assert_eq!(reached, vec![Some(JobStatus::Completed)]);
    let finished = JobRecord {
        status: JobStatus::Completed,
        progress: 100,
        attempts: 1,
        started_at: Some(later(2)),
        completed_at: Some(later(3)),
        result: Some(result),
        ..queued.clone()
    };
    assert_eq!(
        store.get_job(&queued.id).await.unwrap(),
        Some(finished.clone())
    );

    let issue = Issue {
        id: id::<IssueId>(1),
        organization_id: org.id.clone(),
        property_id: site.id.clone(),
        job_id: finished.id.clone(),
        scan_kind: ScanKind::Page,
        issue_type: "title_missing".to_owned(),
        title: "Missing title".to_owned(),
        severity: Severity::Critical,
        url: Some("https://example.com/a".to_owned()),
        evidence: "The page has no <title>. ünïcödé ✓".to_owned(),
        how_to_fix: "Add a <title>.".to_owned(),
        subject: "https://example.com/a".to_owned(),
        status: IssueStatus::Resolved,
        created_at: t0(),
        last_seen_at: later(3),
        resolved_at: Some(later(4)),
        fixed_at: Some(later(5)),
    };
    store.insert_issue(&issue).await.unwrap();
    assert_eq!(
        store.get_issue(&issue.id).await.unwrap(),
        Some(issue.clone())
    );

    let report = Report {
        token: "RptToken0123456789abcdefghijklmn".to_owned(),
        organization_id: org.id.clone(),
        property_id: site.id.clone(),
        scan_id: finished.id.clone(),
        expires_at: later(86_400),
        view_count: 41,
        created_at: t0(),
    };
    store.insert_report(&report).await.unwrap();
    assert_eq!(
        store.get_report(&report.token).await.unwrap(),
        Some(report.clone())
    );

    let dump = store.dump().await.unwrap();
    assert_eq!(dump.organizations, vec![org.clone()]);
    assert_eq!(dump.api_keys, vec![key]);
    assert_eq!(dump.properties, vec![site]);
    assert_eq!(dump.jobs, vec![finished.clone()]);
    assert_eq!(dump.issues, vec![issue]);
    assert_eq!(dump.reports, vec![report]);
    assert_eq!(
        dump.usage,
        vec![(
            org.id.to_string(),
            "2026-11".to_owned(),
            UsageCounters {
                scans: 1,
                ..UsageCounters::default()
            }
        )]
    );
    assert_eq!(dump.events.len(), 1);
    let event = &dump.events[0];
    assert_eq!(
        (
            &event.organization_id,
            event.event_type,
            event.job_id(),
            event.created_at
        ),
        (
            &org.id,
            EventType::JobCompleted,
            Some(&finished.id),
            later(3)
        )
    );
    assert!(event.id.as_str().starts_with("evt_"));
}

#[tokio::test]
async fn timestamps_keep_milliseconds_and_extreme_bounds_are_accepted() {
    let store = fresh_database().await;
    let created = ms(1_795_342_530_999);
    store
        .insert_property(&property(prop(1), org(1), "https://a.example/", created))
        .await
        .unwrap();
    assert_eq!(
        store
            .get_property(&prop(1))
            .await
            .unwrap()
            .unwrap()
            .created_at,
        created
    );
    store
        .insert_job_counted(&job(jid(1), org(1), created), "2026-11", 5)
        .await
        .unwrap();
    let counts = store
        .job_counts_by_type(&org(1), Timestamp::MIN, Timestamp::MAX)
        .await
        .unwrap();
    assert_eq!(counts.len(), 1);
    assert_eq!(counts[0].1.total, 1);
    let first_page = store
        .list_properties(
            &org(1),
            &PageRequest {
                limit: 10,
                after: Some(After {
                    created_at: Timestamp::MAX,
                    id: String::new(),
                }),
            },
        )
        .await
        .unwrap();
    assert_eq!(first_page.len(), 1);
}

#[tokio::test]
async fn keyset_pages_break_created_at_ties_by_id_in_byte_order() {
    let store = fresh_database().await;
    // Ids break ties of equal creation times; newest-first lists go by id descending.
    for n in [0xa, 0x2, 0xb, 0x1] {
        let url = format!("https://example.com/{n}");
        store
            .insert_property(&property(prop(n), org(1), &url, t0()))
            .await
            .unwrap();
    }
    store
        .insert_property(&property(
            prop(0xff),
            org(1),
            "https://old.example/",
            later(-1),
        ))
        .await
        .unwrap();
    store
        .insert_property(&property(prop(0x9), org(2), "https://other.example/", t0()))
        .await
        .unwrap();

    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let items = store
            .list_properties(&org(1), &PageRequest { limit: 2, after })
            .await
            .unwrap();
        if items.is_empty() {
            break;
        }
        after = items.last().map(|p| After {
            created_at: p.created_at,
            id: p.id.to_string(),
        });
        seen.extend(items.into_iter().map(|p| p.id));
    }
    assert_eq!(
        seen,
        [prop(0xb), prop(0xa), prop(0x2), prop(0x1), prop(0xff)]
    );
    assert_eq!(store.count_properties(&org(1)).await.unwrap(), 5);

    // Report tokens mix cases: they compare as bytes ("B" < "Z" < "a" < "b"), not by a
    // locale's collation.
    for first in ["a", "B", "b", "Z"] {
        let report = Report {
            token: format!("{first}{}", "0".repeat(31)),
            organization_id: org(1),
            property_id: prop(1),
            scan_id: jid(1),
            expires_at: later(86_400),
            view_count: 0,
            created_at: t0(),
        };
        store.insert_report(&report).await.unwrap();
    }
    let mut tokens = Vec::new();
    let mut after = None;
    loop {
        let items = store
            .list_live_reports(&org(1), t0(), &PageRequest { limit: 3, after })
            .await
            .unwrap();
        if items.is_empty() {
            break;
        }
        after = items.last().map(|r| After {
            created_at: r.created_at,
            id: r.token.clone(),
        });
        tokens.extend(items.into_iter().map(|r| r.token[..1].to_owned()));
    }
    assert_eq!(tokens, ["b", "a", "Z", "B"]);
}

#[tokio::test]
async fn schema_is_migrated_once_with_unlogged_rate_counters() {
    let store = fresh_database().await;
    // Applying again (as every instance does at start-up) changes nothing.
    store.migrate().await.unwrap();
    other_instance(&store).await.migrate().await.unwrap();
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations WHERE success")
        .fetch_one(store.pool())
        .await
        .unwrap();
    let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|e| e == "sql")
        })
        .count();
    assert_eq!(applied, files as i64);

    let persistence: Vec<(String, String)> = sqlx::query_as(
        "SELECT relname::text, relpersistence::text FROM pg_class \
         WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace \
         AND relname NOT LIKE '\\_sqlx%' ORDER BY relname",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    let expected: Vec<(String, String)> = [
        ("api_keys", "p"),
        ("channels", "p"),
        ("connect_states", "p"),
        ("events", "p"),
        ("gsc_accounts", "p"),
        ("gsc_rows", "p"),
        ("gsc_snapshots", "p"),
        ("gsc_sync_claims", "p"),
        ("idempotency_keys", "p"),
        ("issue_changes", "p"),
        ("issues", "p"),
        ("jobs", "p"),
        ("media_items", "p"),
        ("media_uploads", "p"),
        ("organizations", "p"),
        ("properties", "p"),
        ("rate_limit_counters", "u"),
        ("reports", "p"),
        ("scan_history", "p"),
        ("scan_pages", "p"),
        ("scan_schedules", "p"),
        ("schedule_runs", "p"),
        ("usage_counters", "p"),
        ("webhook_deliveries", "p"),
        ("webhook_messages", "p"),
        ("webhooks", "p"),
    ]
    .into_iter()
    .map(|(table, kind)| (table.to_owned(), kind.to_owned()))
    .collect();
    assert_eq!(persistence, expected);
}

#[tokio::test]
async fn unique_rules_are_reported_as_duplicates_by_name() {
    let store = fresh_database().await;
    store
        .insert_organization(&organization(org(1)))
        .await
        .unwrap();
    assert_eq!(
        store.insert_organization(&organization(org(1))).await,
        Err(StoreError::Duplicate("organization id"))
    );

    let first = property(prop(1), org(1), "https://example.com/", t0());
    store.insert_property(&first).await.unwrap();
    // Same URL under another id, and the very same row again: both are the URL rule.
    assert_eq!(
        store
            .insert_property(&property(prop(2), org(1), "https://example.com/", t0()))
            .await,
        Err(StoreError::Duplicate("property url"))
    );
    assert_eq!(
        store.insert_property(&first).await,
        Err(StoreError::Duplicate("property url"))
    );
    assert_eq!(
        store
            .insert_property(&property(prop(1), org(1), "https://other.example/", t0()))
            .await,
        Err(StoreError::Duplicate("property id"))
    );
    // The same URL in another organization is fine.
    store
        .insert_property(&property(prop(3), org(2), "https://example.com/", t0()))
        .await
        .unwrap();

    store
        .insert_api_key(&api_key(key(1), org(1)), 5)
        .await
        .unwrap();
    let same_hash = ApiKey {
        key_hash: api_key(key(1), org(1)).key_hash,
        ..api_key(key(2), org(1))
    };
    assert_eq!(
        store.insert_api_key(&same_hash, 5).await,
        Err(StoreError::Duplicate("api key"))
    );
    // A duplicate is reported as such even when the cap is reached too.
    assert_eq!(
        store.insert_api_key(&same_hash, 1).await,
        Err(StoreError::Duplicate("api key"))
    );

    store
        .insert_job_counted(&job(jid(1), org(1), t0()), "2026-11", 5)
        .await
        .unwrap();
    assert_eq!(
        store
            .insert_job_counted(&job(jid(1), org(1), t0()), "2026-11", 5)
            .await,
        Err(StoreError::Duplicate("job id"))
    );
    // The rejected job was not counted.
    assert_eq!(store.get_usage(&org(1), "2026-11").await.unwrap().scans, 1);
}

#[tokio::test]
async fn an_unreachable_database_is_unavailable_and_a_bad_url_is_not() {
    // Nothing listens on port 1.
    let store = PgStore::connect("postgres://postgres@127.0.0.1:1/xf").expect("lazy pool");
    assert!(matches!(
        store.ping().await,
        Err(StoreError::Unavailable(_))
    ));
    assert!(matches!(
        store.migrate().await,
        Err(StoreError::Unavailable(_))
    ));
    assert!(matches!(
        PgStore::connect("not a url"),
        Err(StoreError::Internal(_))
    ));
}

#[tokio::test]
async fn the_store_recovers_by_itself_after_its_connections_are_killed() {
    let store = fresh_database().await;
    store
        .insert_organization(&organization(org(1)))
        .await
        .unwrap();
    // Open a few connections, then have another instance kill every session of this database
    // (as a server restart or failover would).
    let [a, b, c] = [store.ping(), store.ping(), store.ping()];
    let (a, b, c) = tokio::join!(a, b, c);
    assert!(a.is_ok() && b.is_ok() && c.is_ok());
    let killer = other_instance(&store).await;
    let killed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .fetch_all(killer.pool())
    .await
    .unwrap();
    assert!(!killed.is_empty() && killed.iter().all(|k| *k));
    // The pool pings a connection idle for half a second before handing it out: it notices
    // the dead connections and opens new ones.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert_eq!(
        store.get_organization(&org(1)).await.unwrap().map(|o| o.id),
        Some(org(1))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scan_quota_is_exact_across_instances() {
    let stores = two_instances().await;
    let limit = 7;
    let mut tasks = Vec::new();
    for i in 0..40 {
        let store = stores[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            store
                .insert_job_counted(&job(jid(i as u128), org(1), t0()), "2026-11", limit)
                .await
        }));
    }
    let mut accepted = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(()) => accepted += 1,
            Err(error) => assert_eq!(error, StoreError::LimitReached("scansPerMonth")),
        }
    }
    assert_eq!(accepted, limit);
    assert_eq!(
        stores[0].get_usage(&org(1), "2026-11").await.unwrap().scans,
        limit
    );
    let jobs = stores[1]
        .list_jobs(&org(1), &JobFilter::default(), &page(100))
        .await
        .unwrap();
    assert_eq!(jobs.len() as u64, limit);
    // Another month and another organization have their own meters.
    stores[0]
        .insert_job_counted(&job(jid(1_000), org(1), t0()), "2026-12", limit)
        .await
        .unwrap();
    stores[0]
        .insert_job_counted(&job(jid(1_001), org(2), t0()), "2026-11", limit)
        .await
        .unwrap();
    // A limit of zero admits nothing, even on a fresh meter.
    assert_eq!(
        stores[0]
            .insert_job_counted(&job(jid(1_002), org(3), t0()), "2026-11", 0)
            .await,
        Err(StoreError::LimitReached("scansPerMonth"))
    );
    assert_eq!(
        stores[0].get_usage(&org(3), "2026-11").await.unwrap(),
        UsageCounters::default()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_cap_is_exact_across_instances() {
    let stores = two_instances().await;
    stores[0]
        .insert_organization(&organization(org(1)))
        .await
        .unwrap();
    let revoked = ApiKey {
        revoked_at: Some(t0()),
        ..api_key(key(500), org(1))
    };
    stores[0].insert_api_key(&revoked, 3).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..12 {
        let store = stores[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            store
                .insert_api_key(&api_key(key(100 + i as u128), org(1)), 3)
                .await
        }));
    }
    let mut accepted = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(()) => accepted += 1,
            Err(error) => assert_eq!(error, StoreError::LimitReached("maxActiveKeys")),
        }
    }
    // The revoked key does not count.
    assert_eq!(accepted, 3);
    let keys = stores[1].list_api_keys(&org(1)).await.unwrap();
    assert_eq!(keys.len(), 4);
    assert_eq!(keys.iter().filter(|k| k.revoked_at.is_none()).count(), 3);
    // Revoking one frees a place.
    let active = keys.iter().find(|k| k.revoked_at.is_none()).unwrap();
    stores[1].revoke_api_key(&active.id, t0()).await.unwrap();
    stores[0]
        .insert_api_key(&api_key(key(501), org(1)), 3)
        .await
        .unwrap();
}

fn bucket(name: &str, limit: u64, consume: bool) -> RateBucket {
    RateBucket {
        name: name.into(),
        window_start: t0().start_of_hour(),
        limit,
        consume,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_are_exact_and_all_or_nothing_across_instances() {
    let stores = two_instances().await;
    let mut tasks = Vec::new();
    for i in 0..30 {
        let store = stores[i % 2].clone();
        // Half the requests name the counters in the other order: locks are still taken in
        // one order, so nothing deadlocks.
        let buckets = if i % 3 == 0 {
            vec![bucket("org:daily", 25, true), bucket("key:write", 10, true)]
        } else {
            vec![bucket("key:write", 10, true), bucket("org:daily", 25, true)]
        };
        tasks.push(tokio::spawn(async move {
            let outcome = store.hit_rate_limits(&buckets).await.expect("no error");
            (buckets[0].name.clone(), outcome)
        }));
    }
    let mut accepted = 0;
    for task in tasks {
        let (first, outcome) = task.await.unwrap();
        let write_index = usize::from(&*first != "key:write");
        if outcome.exceeded.is_empty() {
            accepted += 1;
        } else {
            // Only the write counter can be full; the rejected request reports the counts as
            // they were: the write counter at its limit.
            assert_eq!(outcome.exceeded, vec![write_index]);
            assert_eq!(outcome.counts[write_index], 10);
        }
    }
    assert_eq!(accepted, 10);
    // Rejected requests counted nowhere: the daily counter saw only the accepted ten.
    let peek = stores[0]
        .hit_rate_limits(&[
            bucket("key:write", 10, false),
            bucket("org:daily", 25, false),
        ])
        .await
        .unwrap();
    assert_eq!(peek.counts, vec![10, 10]);
    assert!(peek.exceeded.is_empty());
}

/// Many requests at once, so each instance gathers them into batches: each is still decided as
/// alone, one after the other. Every request consumes one of three key counters (limit 7) and
/// the organization's (limit 15) and peeks at a third counter: exactly 15 are accepted, each
/// seeing its own organization count (1 to 15, once each), no key counter passes 7, and the
/// refused ones counted nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_rate_counts_decide_each_request_as_alone() {
    let stores = two_instances().await;
    let barrier = Arc::new(tokio::sync::Barrier::new(60));
    let mut tasks = Vec::new();
    for i in 0..60 {
        let (store, barrier) = (stores[i % 2].clone(), Arc::clone(&barrier));
        let buckets = vec![
            bucket(&format!("batch:key{}", i % 3), 7, true),
            bucket("batch:peeked", 1, false),
            bucket("batch:org", 15, true),
        ];
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            (
                i % 3,
                store.hit_rate_limits(&buckets).await.expect("no error"),
            )
        }));
    }
    let mut org_counts = Vec::new();
    let mut accepted_per_key = [0u64; 3];
    for task in tasks {
        let (key, outcome) = task.await.unwrap();
        assert_eq!(outcome.counts[1], 0, "the peeked counter was never counted");
        if outcome.exceeded.is_empty() {
            accepted_per_key[key] += 1;
            assert!(outcome.counts[0] <= 7, "{outcome:?}");
            org_counts.push(outcome.counts[2]);
        } else {
            assert!(
                outcome
                    .exceeded
                    .iter()
                    .all(|&index| index == 0 || index == 2),
                "{outcome:?}"
            );
        }
    }
    org_counts.sort_unstable();
    assert_eq!(org_counts, (1..=15).collect::<Vec<u64>>());
    let peek = stores[1]
        .hit_rate_limits(&[
            bucket("batch:key0", 7, false),
            bucket("batch:key1", 7, false),
            bucket("batch:key2", 7, false),
            bucket("batch:org", 15, false),
            bucket("batch:peeked", 1, false),
        ])
        .await
        .unwrap();
    assert_eq!(
        peek.counts,
        vec![
            accepted_per_key[0],
            accepted_per_key[1],
            accepted_per_key[2],
            15,
            0
        ]
    );
    assert!(accepted_per_key.iter().all(|&count| count <= 7));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_dropped_at_any_point_leaves_no_transaction_open() {
    // One connection, so every call below runs on the connection the dropped ones used.
    let base = fresh_database().await;
    let options = base.pool().connect_options().as_ref().clone();
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .expect("a one-connection pool");
    let store = PgStore::new(pool);
    for attempt in 0..60u64 {
        // Polled a few times, with pauses in which the server answers, then dropped: at
        // some attempt while `BEGIN` is on its way, at others later.
        let organization = organization(org(u128::from(attempt) + 1));
        let keys = [api_key(
            key(u128::from(attempt) + 1),
            organization.id.clone(),
        )];
        let mut call = Box::pin(store.insert_organization_with_keys(&organization, &keys));
        for _ in 0..attempt % 6 + 1 {
            let polled = std::future::poll_fn(|cx| {
                std::task::Poll::Ready(std::future::Future::poll(call.as_mut(), cx).is_ready())
            })
            .await;
            if polled {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1 + attempt / 6 % 3)).await;
        }
        drop(call);
        // A statement on the connection (so whatever it had queued has run), then a look
        // from another connection at what the pool's connection is doing between statements.
        sqlx::query("SELECT 1")
            .execute(store.pool())
            .await
            .expect("the connection answers");
        let (open,): (i64,) = sqlx::query_as(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND state = 'idle in transaction'",
        )
        .fetch_one(base.pool())
        .await
        .expect("the activity");
        assert_eq!(open, 0, "attempt {attempt} left a transaction open");
    }
}

/// One call of `xf_hit_rate_limits_many` with `batch` (a request's buckets as
/// `(name, limit, consume)`): each request's number, counts and exceeded indexes.
async fn hit_batch(
    store: &PgStore,
    batch: &[&[(&str, i64, bool)]],
) -> Vec<(i32, Vec<i64>, Vec<i32>)> {
    let (mut requests, mut names, mut windows, mut limits, mut consume) =
        (vec![], vec![], vec![], vec![], vec![]);
    for (request, buckets) in batch.iter().enumerate() {
        for (name, limit, consumed) in buckets.iter() {
            requests.push(request as i32);
            names.push(*name);
            windows.push(t0().start_of_hour().as_datetime());
            limits.push(*limit);
            consume.push(*consumed);
        }
    }
    sqlx::query_as(
        "SELECT request, counts, exceeded FROM xf_hit_rate_limits_many($1::integer[], \
         $2::text[], $3::timestamptz[], $4::bigint[], $5::boolean[])",
    )
    .bind(&requests)
    .bind(&names)
    .bind(&windows)
    .bind(&limits)
    .bind(&consume)
    .fetch_all(store.pool())
    .await
    .expect("the batch is counted")
}

#[tokio::test]
async fn a_batch_decides_its_requests_one_after_the_other() {
    let store = fresh_database().await;
    // Two writes fill `w` (limit 2) and count `d`; the third write is refused whole, so `d`
    // does not count it; a read peeks at `w` and `d` and counts `r`; the last write names
    // `w` twice, is refused, and reports the counter at its limit in both places.
    let write: &[(&str, i64, bool)] = &[("w", 2, true), ("d", 10, true)];
    let read: &[(&str, i64, bool)] = &[("r", 5, true), ("w", 2, false), ("d", 10, false)];
    let twice: &[(&str, i64, bool)] = &[("w", 2, true), ("w", 2, true)];
    let rows = hit_batch(&store, &[write, write, write, read, twice]).await;
    assert_eq!(
        rows,
        vec![
            (0, vec![1, 1], vec![]),
            (1, vec![2, 2], vec![]),
            (2, vec![2, 2], vec![0]),
            (3, vec![1, 2, 2], vec![]),
            (4, vec![2, 2], vec![0, 1]),
        ]
    );
    // The counts were written back once: a lone request sees them.
    let peek = store
        .hit_rate_limits(&[
            bucket("w", 2, false),
            bucket("d", 10, false),
            bucket("r", 5, false),
        ])
        .await
        .unwrap();
    assert_eq!(peek.counts, vec![2, 2, 1]);
    // A counter consumed twice in one request counts once, as alone.
    let rows = hit_batch(
        &store,
        &[&[("x", 5, true), ("x", 5, true)], &[("x", 5, true)]],
    )
    .await;
    assert_eq!(rows, vec![(0, vec![1, 1], vec![]), (1, vec![2], vec![])]);
    // Requests out of order, or arrays of different lengths, are refused.
    let refused = sqlx::query(
        "SELECT * FROM xf_hit_rate_limits_many('{1,0}'::integer[], '{a,b}'::text[], \
         ARRAY[now(), now()], '{5,5}'::bigint[], '{true,true}'::boolean[])",
    )
    .fetch_all(store.pool())
    .await;
    assert!(refused.is_err());
    let refused = sqlx::query(
        "SELECT * FROM xf_hit_rate_limits_many('{0}'::integer[], '{a,b}'::text[], \
         ARRAY[now()], '{5}'::bigint[], '{true}'::boolean[])",
    )
    .fetch_all(store.pool())
    .await;
    assert!(refused.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_counts_one_window_and_peeks_at_the_others() {
    let stores = two_instances().await;
    for _ in 0..3 {
        stores[1]
            .hit_rate_limits(&[
                bucket("key:write", 100, true),
                bucket("org:daily", 100, true),
            ])
            .await
            .unwrap();
    }
    let outcome = stores[0]
        .hit_rate_limits(&[
            bucket("key:read", 100, true),
            bucket("key:write", 100, false),
            bucket("org:daily", 100, false),
        ])
        .await
        .unwrap();
    assert_eq!(outcome.counts, vec![1, 3, 3]);
    // Another window of the same counter starts from zero.
    let next_hour = RateBucket {
        window_start: later(3_600).start_of_hour(),
        ..bucket("key:read", 100, true)
    };
    let outcome = stores[1].hit_rate_limits(&[next_hour]).await.unwrap();
    assert_eq!(outcome.counts, vec![1]);
}

fn claim(fingerprint: &str, now: Timestamp) -> IdempotencyRequest {
    IdempotencyRequest {
        scope: "org_1:live:key-1".to_owned(),
        fingerprint: fingerprint.to_owned(),
        now,
        expired_before: now.plus(chrono::Duration::hours(-24)),
        stale_before: now.plus(chrono::Duration::seconds(-60)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotency_key_is_claimed_by_exactly_one_instance() {
    let stores = two_instances().await;
    let mut tasks = Vec::new();
    for i in 0..20 {
        let store = stores[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            store.claim_idempotency_key(&claim("fp-a", t0())).await
        }));
    }
    let mut acquired = 0;
    for task in tasks {
        match task.await.unwrap().unwrap() {
            IdempotencyClaim::Acquired => acquired += 1,
            other => assert_eq!(other, IdempotencyClaim::InUse),
        }
    }
    assert_eq!(acquired, 1);
    assert_eq!(
        stores[1]
            .claim_idempotency_key(&claim("fp-b", later(1)))
            .await,
        Ok(IdempotencyClaim::Mismatch)
    );
    let response = StoredResponse {
        status: 201,
        body: r#"{"id":"prop_1"}"#.to_owned(),
    };
    stores[0]
        .complete_idempotency_key("org_1:live:key-1", "fp-a", &response)
        .await
        .unwrap();
    assert_eq!(
        stores[1]
            .claim_idempotency_key(&claim("fp-a", later(2)))
            .await,
        Ok(IdempotencyClaim::Replay(response.clone()))
    );
    // A finished record is never taken over as stale, only replaced once expired.
    assert_eq!(
        stores[0]
            .claim_idempotency_key(&claim("fp-a", later(600)))
            .await,
        Ok(IdempotencyClaim::Replay(response))
    );
    assert_eq!(
        stores[0]
            .claim_idempotency_key(&claim("fp-b", later(24 * 3_600 + 1)))
            .await,
        Ok(IdempotencyClaim::Acquired)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_claim_is_taken_over_by_exactly_one_instance() {
    let stores = two_instances().await;
    assert_eq!(
        stores[0].claim_idempotency_key(&claim("fp-a", t0())).await,
        Ok(IdempotencyClaim::Acquired)
    );
    // 61 s later the first request is presumed dead: one retry takes over, the rest wait.
    let mut tasks = Vec::new();
    for i in 0..10 {
        let store = stores[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            store.claim_idempotency_key(&claim("fp-a", later(61))).await
        }));
    }
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap().unwrap());
    }
    let acquired = outcomes
        .iter()
        .filter(|o| **o == IdempotencyClaim::Acquired)
        .count();
    assert_eq!(acquired, 1);
    assert!(outcomes
        .iter()
        .all(|o| matches!(o, IdempotencyClaim::Acquired | IdempotencyClaim::InUse)));
    // Released, the key is free at once.
    stores[1]
        .release_idempotency_key("org_1:live:key-1", "fp-a")
        .await
        .unwrap();
    assert_eq!(
        stores[0]
            .claim_idempotency_key(&claim("fp-c", later(62)))
            .await,
        Ok(IdempotencyClaim::Acquired)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_finish_race_has_one_winner_per_job() {
    let stores = two_instances().await;
    for i in 0..16 {
        stores[0]
            .insert_job_counted(&job(jid(i), org(1), t0()), "2026-11", 100)
            .await
            .unwrap();
    }
    let claimed = claim_scans(&*stores[0], later(1)).await;
    assert_eq!(claimed.len(), 16);
    let mut tasks = Vec::new();
    for (i, claim) in claimed.into_iter().enumerate() {
        let canceller = stores[i % 2].clone();
        let worker = stores[(i + 1) % 2].clone();
        let cancel_id = claim.job.id.clone();
        tasks.push(tokio::spawn(async move {
            let cancel =
                tokio::spawn(async move { canceller.cancel_job(&cancel_id, later(2)).await });
            let finish = Finish {
                attempt: claim.attempt.clone(),
                outcome: AttemptOutcome::Completed(json!({"score": 90})),
            };
            let finished = worker.finish_jobs(&[finish], later(3)).await.unwrap();
            (claim.job.id, cancel.await.unwrap().unwrap(), finished[0])
        }));
    }
    for task in tasks {
        let (id, cancelled, finished) = task.await.unwrap();
        let stored = stores[0].get_job(&id).await.unwrap().unwrap();
        let events = stores[1].job_events(&id).await.unwrap();
        assert_eq!(events.len(), 1, "{id}: one event for one final state");
        match (cancelled, finished) {
            (CancelOutcome::Cancelled(job), None) => {
                assert_eq!(stored.status, JobStatus::Cancelled);
                assert_eq!(stored, job);
                assert_eq!(stored.completed_at, Some(later(2)));
                assert_eq!(events[0].event_type, EventType::JobCancelled);
            }
            (CancelOutcome::NotCancellable(job), Some(JobStatus::Completed)) => {
                assert_eq!(job.status, JobStatus::Completed);
                assert_eq!(stored, job);
                assert_eq!(stored.progress, 100);
                assert_eq!(events[0].event_type, EventType::JobCompleted);
            }
            other => panic!("{id}: both or neither won: {other:?}"),
        }
    }
    assert_eq!(stores[1].count_active_jobs(&org(1)).await.unwrap(), 0);
    assert_eq!(
        stores[1].cancel_job(&jid(9_999), later(4)).await,
        Ok(CancelOutcome::NotFound)
    );
}

/// Eight claimers on two instances empty one queue: every job is claimed exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_from_two_instances_never_overlap() {
    let stores = two_instances().await;
    let jobs: Vec<JobRecord> = (0..300).map(|i| job(jid(i), org(1), t0())).collect();
    stores[0].insert_jobs(&jobs).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let store = stores[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let request = ClaimRequest {
                    job_types: vec![SEO_SCAN.to_owned()],
                    limit: 7,
                    now: later(1),
                    lease_expires_at: later(300),
                };
                let claimed = store.claim_jobs(&request).await.unwrap();
                if claimed.is_empty() {
                    return mine;
                }
                mine.extend(claimed.into_iter().map(|c| c.job.id));
            }
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    let unique: std::collections::HashSet<&JobId> = all.iter().collect();
    assert_eq!(all.len(), 300, "every job claimed");
    assert_eq!(unique.len(), 300, "no job claimed twice");
}

/// The pick of `xf_claim_jobs` can be served by the partial index of pending jobs in claim
/// order (no sort), so its cost follows the queue, not the table of finished jobs. The
/// function forbids the planner the alternatives, as this test does.
#[tokio::test]
async fn claims_read_only_the_pending_index() {
    let store = fresh_database().await;
    let jobs: Vec<JobRecord> = (0..50).map(|i| job(jid(i), org(1), t0())).collect();
    store.insert_jobs(&jobs).await.unwrap();
    let mut connection = store.pool().acquire().await.unwrap();
    sqlx::raw_sql("SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off")
        .execute(&mut *connection)
        .await
        .unwrap();
    let plan: Vec<String> = sqlx::query_scalar(
        "EXPLAIN SELECT id FROM jobs \
         WHERE status = 'pending' AND run_at <= now() AND job_type = ANY('{seo-scan}') \
         ORDER BY run_at, id LIMIT 8 FOR UPDATE SKIP LOCKED",
    )
    .fetch_all(&mut *connection)
    .await
    .unwrap();
    let plan = plan.join("\n");
    assert!(plan.contains("Index Scan using jobs_ready_idx"), "{plan}");
    assert!(!plan.contains("Sort"), "{plan}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_usage_additions_all_count() {
    let stores = two_instances().await;
    let mut tasks = Vec::new();
    for i in 0..20 {
        let store = stores[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            store
                .add_usage(
                    &org(1),
                    "2026-11",
                    &UsageCounters {
                        ai_input_tokens: 100,
                        images_optimized: 1,
                        ..UsageCounters::default()
                    },
                )
                .await
        }));
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let usage = stores[0].get_usage(&org(1), "2026-11").await.unwrap();
    assert_eq!(usage.ai_input_tokens, 2_000);
    assert_eq!(usage.images_optimized, 20);
    // Sums saturate instead of failing.
    let huge = UsageCounters {
        redirects_created: u64::MAX,
        ..UsageCounters::default()
    };
    stores[1]
        .add_usage(&org(1), "2026-11", &huge)
        .await
        .unwrap();
    let usage = stores[1]
        .add_usage(&org(1), "2026-11", &huge)
        .await
        .unwrap();
    assert_eq!(usage.redirects_created, i64::MAX as u64);
    assert_eq!(usage.ai_input_tokens, 2_000);
}

/// Reads of a property by id probe the primary key however much the table grew since its
/// statistics were taken: no plan made while it was small (a sequential scan) is kept for
/// later. Counted by the table's statistics, which every backend flushes as it closes.
#[tokio::test]
async fn property_reads_probe_the_primary_key_after_the_table_grew() {
    let store = fresh_database().await;
    store
        .insert_organization(&organization(org(1)))
        .await
        .unwrap();
    let first = xf_core::testing::property(&org(1), "https://first.example/", t0());
    store.insert_property(&first).await.unwrap();
    sqlx::query("ANALYZE properties")
        .execute(store.pool())
        .await
        .unwrap();
    // As under load: many readers of one property at once, batched, again and again.
    let read_together = |store: PgStore| {
        let id = first.id.clone();
        async move {
            let readers: Vec<_> = (0..24)
                .map(|_| {
                    let (store, id) = (store.clone(), id.clone());
                    tokio::spawn(async move { store.get_property(&id).await.unwrap() })
                })
                .collect();
            for reader in readers {
                assert!(reader.await.unwrap().is_some());
            }
        }
    };
    for _ in 0..12 {
        read_together(store.clone()).await;
    }
    // The table grows fifty-thousandfold, with no ANALYZE after.
    const GROWTH: i64 = 50_000;
    sqlx::query(
        "INSERT INTO properties (id, organization_id, name, url, verified, created_at) \
         SELECT 'prop_' || lpad(to_hex(g), 32, '0'), organization_id, 'grown', \
                'https://grown-' || g || '.example/', false, created_at \
         FROM properties, generate_series(1, $1::bigint) g",
    )
    .bind(GROWTH)
    .execute(store.pool())
    .await
    .unwrap();
    for _ in 0..12 {
        read_together(store.clone()).await;
    }
    let options = store.pool().connect_options().as_ref().clone();
    let database = options.get_database().unwrap().to_owned();
    store.pool().close().await;
    let observer = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .unwrap();
    // The store's backends flush their counts as they exit; the pool may leave one open.
    let (seq_read, index_scans) = loop {
        let others: i64 = sqlx::query_scalar(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE datname = $1 AND pid <> pg_backend_pid()",
        )
        .bind(&database)
        .fetch_one(&observer)
        .await
        .unwrap();
        if others == 0 {
            break sqlx::query_as::<_, (i64, i64)>(
                "SELECT seq_tup_read, coalesce(idx_scan, 0) FROM pg_stat_user_tables \
                 WHERE relname = 'properties'",
            )
            .fetch_one(&observer)
            .await
            .unwrap();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(index_scans > 0, "the reads' counts were not flushed");
    assert!(
        seq_read < GROWTH,
        "a read scanned the grown table: {seq_read} rows read sequentially"
    );
}
