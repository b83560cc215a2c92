//! Behaviours of jobs as the API sees them: queueing, reading, listing, counting and
//! cancelling.

use std::sync::Arc;

use chrono::Duration;
use serde_json::json;

use super::{
    assert_no_events, assert_single_event, at, claim, claim_one, completed, finish, first_page,
    job, kept_lease, millis, minutes, run_concurrently, seconds, seed_job, seed_job_of_type,
    seed_organization, seed_property, seed_running_job, sort_newest_first, stored_job, tally,
    typed_job, unique_job_type, wait_for_signal, walk_pages, TestStore, BASE_MONTH, NO_SCAN_LIMIT,
};
use crate::error::StoreError;
use crate::ids::{JobId, PropertyId};
use crate::model::{EventType, JobCounts, JobRecord, JobStatus, UsageCounters};
use crate::store::{After, AttemptOutcome, AttemptState, CancelOutcome, JobFilter, QueueSignal};

fn job_ids(jobs: &[JobRecord]) -> Vec<JobId> {
    jobs.iter().map(|job| job.id.clone()).collect()
}

fn job_position(job: &JobRecord) -> After {
    After {
        created_at: job.created_at,
        id: job.id.to_string(),
    }
}

/// `insert_job_counted` stores the job and adds one to the organization's `scans` meter of
/// the given month only; the other meters stay zero.
pub async fn job_insert_counted_counts_scans(store: Arc<dyn TestStore>) {
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
pub async fn job_insert_counted_refuses_at_limit(store: Arc<dyn TestStore>) {
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
pub async fn job_insert_counted_concurrent_respects_limit(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Racing scans").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let jobs: Vec<JobRecord> = (0..20).map(|n| job(&org, &site, minutes(n + 1))).collect();
    let results = run_concurrently(jobs.len(), |n| {
        let store = Arc::clone(&store);
        let job = jobs[n].clone();
        async move { store.insert_job_counted(&job, BASE_MONTH, 5).await }
    })
    .await;

    let mut accepted: Vec<JobId> = (0..jobs.len())
        .filter(|&n| results[n].is_ok())
        .map(|n| jobs[n].id.clone())
        .collect();
    assert_eq!(tally(&results), (5, 15), "{results:?}");
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

/// `insert_jobs` stores pending jobs exactly as given (payload, attempts allowed and a
/// `run_at` after creation included) without counting them in any meter. It is all or none:
/// a batch with an id that is already stored, or with one id twice, is
/// [`StoreError::Duplicate`] and stores nothing, the stored job staying as it was.
pub async fn job_insert_jobs_all_or_nothing(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Host jobs").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let mut first = typed_job(&org, &site, minutes(1), &unique_job_type("host"));
    first.payload = json!({"sitemap": site.url, "notify": ["a@example.com"], "depth": 3});
    if let Some(subject) = first.subject.as_mut() {
        subject.shop_domain = Some("host.myshopify.com".to_owned());
    }
    first.max_attempts = 5;
    first.run_at = minutes(90);
    let second = job(&org, &site, minutes(2));
    store
        .insert_jobs(&[first.clone(), second.clone()])
        .await
        .unwrap();
    assert_eq!(store.get_job(&first.id).await.unwrap(), Some(first.clone()));
    assert_eq!(
        store.get_job(&second.id).await.unwrap(),
        Some(second.clone())
    );
    assert_eq!(
        store.get_usage(&org.id, BASE_MONTH).await.unwrap(),
        UsageCounters::default(),
        "insert_jobs counts in no meter"
    );

    // The duplicate comes last, so a backend that writes job by job has stored the first
    // before it fails.
    let fresh = job(&org, &site, minutes(3));
    let clash = JobRecord {
        id: first.id.clone(),
        ..job(&org, &site, minutes(4))
    };
    assert!(matches!(
        store.insert_jobs(&[fresh.clone(), clash]).await,
        Err(StoreError::Duplicate(_))
    ));
    assert_eq!(store.get_job(&fresh.id).await.unwrap(), None);
    assert_eq!(store.get_job(&first.id).await.unwrap(), Some(first.clone()));

    let twin = job(&org, &site, minutes(5));
    assert!(matches!(
        store.insert_jobs(&[twin.clone(), twin.clone()]).await,
        Err(StoreError::Duplicate(_))
    ));
    assert_eq!(store.get_job(&twin.id).await.unwrap(), None);

    store.insert_jobs(&[]).await.unwrap();
    assert_eq!(
        store
            .list_jobs(&org.id, &JobFilter::default(), &first_page(10))
            .await
            .unwrap(),
        vec![second, first]
    );
}

/// `get_job` returns the job in its current state (from any organization's point of view);
/// `list_jobs` is newest first and applies each filter (status, property, type) and their
/// combination, scoped to the organization.
pub async fn job_get_and_list_with_filters(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Job lists").await;
    let other = seed_organization(&*store, "Job lists neighbour").await;
    let p1 = seed_property(&*store, &org, minutes(0)).await;
    let p2 = seed_property(&*store, &org, minutes(0)).await;
    let foreign_site = seed_property(&*store, &other, minutes(0)).await;
    let s = &*store;
    let scan = unique_job_type("scan");
    let audit = unique_job_type("audit");

    // The claimed jobs of a type are seeded before its pending ones.
    let j2 = seed_job_of_type(s, &org, &p1, minutes(2), JobStatus::Processing, &scan).await;
    let j3 = seed_job_of_type(s, &org, &p2, minutes(3), JobStatus::Completed, &scan).await;
    let j4 = seed_job_of_type(s, &org, &p2, minutes(4), JobStatus::Failed, &audit).await;
    let j5 = seed_job_of_type(s, &org, &p1, minutes(5), JobStatus::Cancelled, &audit).await;
    let j1 = seed_job_of_type(s, &org, &p1, minutes(1), JobStatus::Pending, &scan).await;
    let j6 = seed_job_of_type(s, &org, &p2, minutes(6), JobStatus::Pending, &scan).await;
    let foreign = seed_job_of_type(
        s,
        &other,
        &foreign_site,
        minutes(3),
        JobStatus::Pending,
        &scan,
    )
    .await;

    for job in [&j1, &j2, &j3, &j4, &j5, &j6, &foreign] {
        assert_eq!(store.get_job(&job.id).await.unwrap().as_ref(), Some(job));
    }
    assert_eq!(store.get_job(&JobId::new()).await.unwrap(), None);

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

    let by_property = |id: &PropertyId| JobFilter {
        property_id: Some(id.clone()),
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
        job_ids(&list(by_type(&audit)).await),
        job_ids(&[j5.clone(), j4.clone()])
    );
    assert_eq!(
        job_ids(&list(by_type(&scan)).await),
        job_ids(&[j6.clone(), j3.clone(), j2.clone(), j1.clone()])
    );
    assert_eq!(list(by_type(&unique_job_type("unknown"))).await, vec![]);

    let combined = JobFilter {
        status: Some(JobStatus::Pending),
        property_id: Some(p2.id.clone()),
        job_type: Some(scan.clone()),
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
pub async fn job_list_pages_with_keyset(store: Arc<dyn TestStore>) {
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
    let org_id = &org.id;
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
    let expected_p1: Vec<JobRecord> = expected
        .iter()
        .filter(|j| j.property_id() == Some(&p1.id))
        .cloned()
        .collect();
    assert_eq!(pages.concat(), expected_p1);
}

/// `count_active_jobs` counts the organization's pending and processing jobs only.
pub async fn job_count_active(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Active").await;
    let other = seed_organization(&*store, "Active neighbour").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let other_site = seed_property(&*store, &other, minutes(0)).await;
    let s = &*store;
    assert_eq!(store.count_active_jobs(&org.id).await.unwrap(), 0);

    seed_job(s, &org, &site, minutes(1), JobStatus::Pending).await;
    seed_job(s, &org, &site, minutes(2), JobStatus::Pending).await;
    let running = seed_running_job(s, &org, &site, minutes(3)).await;
    seed_job(s, &org, &site, minutes(4), JobStatus::Completed).await;
    seed_job(s, &org, &site, minutes(5), JobStatus::Failed).await;
    seed_job(s, &org, &site, minutes(6), JobStatus::Cancelled).await;
    seed_job(s, &other, &other_site, minutes(7), JobStatus::Pending).await;
    assert_eq!(store.count_active_jobs(&org.id).await.unwrap(), 3);
    assert_eq!(store.count_active_jobs(&other.id).await.unwrap(), 1);

    assert_eq!(
        finish(s, &running.attempt, completed(), minutes(8)).await,
        Some(JobStatus::Completed)
    );
    assert_eq!(store.count_active_jobs(&org.id).await.unwrap(), 2);
}

/// `latest_jobs_for_properties` gives, for each asked property that has jobs, its most
/// recently created job in any state (equal times: the greatest id); properties without jobs,
/// and properties not asked for, give nothing.
pub async fn job_latest_for_properties(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Latest").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let quiet = seed_property(&*store, &org, minutes(0)).await;
    let busy = seed_property(&*store, &org, minutes(0)).await;
    let other = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let latest = |ids: Vec<PropertyId>| {
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
            PropertyId::new(),
        ])
        .await,
        expected
    );

    let tie_small = job(&org, &quiet, minutes(50));
    let tie_large = job(&org, &quiet, minutes(50));
    assert!(tie_small.id < tie_large.id, "new ids are time-ordered");
    for job in [&tie_large, &tie_small] {
        store
            .insert_job_counted(job, BASE_MONTH, NO_SCAN_LIMIT)
            .await
            .unwrap();
    }
    assert_eq!(latest(vec![quiet.id.clone()]).await, vec![tie_large]);
}

/// `job_counts_by_type` counts the organization's jobs created in `[from, to)` per type (all,
/// completed, failed), one entry per type that has such jobs, sorted by type.
pub async fn job_counts_by_type_over_half_open_range(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Counts").await;
    let other = seed_organization(&*store, "Counts neighbour").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let other_site = seed_property(&*store, &other, minutes(0)).await;
    let s = &*store;
    let from = at("2026-11-01T00:00:00.000Z");
    let to = at("2026-12-01T00:00:00.000Z");
    // Types of this behaviour's own, sorting as their labels do.
    let audit = unique_job_type("audit");
    let scan = unique_job_type("scan");
    let zz_other = unique_job_type("zz-other");

    // scan: in range at both ends, and just outside on either side. The claimed jobs of a
    // type are seeded before its pending ones.
    let seed = |created_at, status| seed_job_of_type(s, &org, &site, created_at, status, &scan);
    seed(from, JobStatus::Completed).await;
    seed(from.plus(Duration::days(1)), JobStatus::Failed).await;
    seed(millis(from, -1), JobStatus::Completed).await;
    seed(to, JobStatus::Failed).await;
    // Another organization's jobs do not count.
    seed_job_of_type(
        s,
        &other,
        &other_site,
        from.plus(Duration::days(1)),
        JobStatus::Completed,
        &scan,
    )
    .await;
    seed(millis(to, -1), JobStatus::Pending).await;
    // audit: completed and cancelled in range.
    let seed = |created_at, status| seed_job_of_type(s, &org, &site, created_at, status, &audit);
    seed(from.plus(Duration::days(2)), JobStatus::Completed).await;
    seed(from.plus(Duration::days(4)), JobStatus::Cancelled).await;
    // A type with jobs only outside the range does not appear.
    seed_job_of_type(
        s,
        &org,
        &site,
        to.plus(Duration::days(1)),
        JobStatus::Pending,
        &zz_other,
    )
    .await;

    assert_eq!(
        store.job_counts_by_type(&org.id, from, to).await.unwrap(),
        vec![
            (
                audit.clone(),
                JobCounts {
                    total: 2,
                    completed: 1,
                    failed: 0
                }
            ),
            (
                scan.clone(),
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
                scan,
                JobCounts {
                    total: 1,
                    completed: 0,
                    failed: 1
                }
            ),
            (
                zz_other,
                JobCounts {
                    total: 1,
                    completed: 0,
                    failed: 0
                }
            ),
        ]
    );
}

/// `cancel_job` cancels pending and processing jobs (keeping progress and `startedAt`,
/// setting `completedAt`); finished jobs are `NotCancellable` and returned unchanged; an
/// unknown id is `NotFound`.
pub async fn job_cancel(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Canceller").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;

    let pending = seed_job(s, &org, &site, minutes(1), JobStatus::Pending).await;
    let expected = JobRecord {
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

    let running = seed_running_job(s, &org, &site, minutes(2)).await;
    assert_eq!(
        store
            .heartbeat(&running.attempt, Some(40), kept_lease())
            .await
            .unwrap(),
        AttemptState::Running
    );
    let processing = stored_job(s, &running.job.id).await;
    let expected = JobRecord {
        status: JobStatus::Cancelled,
        completed_at: Some(minutes(12)),
        ..processing.clone()
    };
    assert_eq!(expected.progress, 40);
    assert_eq!(expected.started_at, Some(seconds(minutes(2), 1)));
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
        store.cancel_job(&JobId::new(), minutes(14)).await.unwrap(),
        CancelOutcome::NotFound
    );
}

/// Cancelling a pending job (one that ran and was given back, so it has progress) cancels it
/// at once: `completedAt` is set, the progress kept, `job.cancelled` written once, and no
/// claim takes it any more. Cancelling it again is `NotCancellable` and writes no event.
pub async fn job_cancel_pending_stops_claims(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Cancel pending").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let running = seed_running_job(s, &org, &site, minutes(1)).await;
    assert_eq!(
        store
            .heartbeat(&running.attempt, Some(30), kept_lease())
            .await
            .unwrap(),
        AttemptState::Running
    );
    assert!(store
        .release_job(&running.attempt, minutes(2))
        .await
        .unwrap());
    let pending = stored_job(s, &running.job.id).await;
    assert_eq!((pending.status, pending.progress), (JobStatus::Pending, 30));

    let cancelled = JobRecord {
        status: JobStatus::Cancelled,
        completed_at: Some(minutes(3)),
        ..pending.clone()
    };
    assert_eq!(
        store.cancel_job(&pending.id, minutes(3)).await.unwrap(),
        CancelOutcome::Cancelled(cancelled.clone())
    );
    assert_eq!(stored_job(s, &pending.id).await, cancelled);
    assert_single_event(s, &cancelled, EventType::JobCancelled, minutes(3)).await;
    assert_eq!(
        claim(s, &pending.job_type, 10, minutes(60), kept_lease()).await,
        vec![],
        "a cancelled job is not claimed"
    );

    assert_eq!(
        store.cancel_job(&pending.id, minutes(4)).await.unwrap(),
        CancelOutcome::NotCancellable(cancelled.clone())
    );
    assert_eq!(stored_job(s, &pending.id).await, cancelled);
    assert_single_event(s, &cancelled, EventType::JobCancelled, minutes(3)).await;
}

/// Cancelling a running job keeps the progress its attempt reported, writes `job.cancelled`
/// once and tells listeners ([`QueueSignal::CancelRequested`]). The attempt's next heartbeat
/// says `Cancelled` and records nothing; its finish and release are refused and write
/// nothing.
pub async fn job_cancel_running_stops_its_attempt(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Cancel running").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let mut listener = store.listen().await.unwrap();
    let running = seed_running_job(s, &org, &site, minutes(1)).await;
    let attempt = &running.attempt;
    assert_eq!(
        store
            .heartbeat(attempt, Some(40), kept_lease())
            .await
            .unwrap(),
        AttemptState::Running
    );
    let processing = stored_job(s, &running.job.id).await;
    let cancelled = JobRecord {
        status: JobStatus::Cancelled,
        completed_at: Some(minutes(2)),
        ..processing.clone()
    };
    assert_eq!(cancelled.progress, 40);
    assert_eq!(
        store.cancel_job(&processing.id, minutes(2)).await.unwrap(),
        CancelOutcome::Cancelled(cancelled.clone())
    );
    wait_for_signal(
        &mut *listener,
        &QueueSignal::CancelRequested(processing.id.clone()),
    )
    .await;

    assert_eq!(
        store
            .heartbeat(attempt, Some(90), kept_lease())
            .await
            .unwrap(),
        AttemptState::Cancelled
    );
    assert_eq!(finish(s, attempt, completed(), minutes(3)).await, None);
    assert_eq!(
        finish(
            s,
            attempt,
            AttemptOutcome::Failed("stopped".to_owned()),
            minutes(3)
        )
        .await,
        None
    );
    assert!(!store.release_job(attempt, minutes(3)).await.unwrap());
    assert_eq!(stored_job(s, &processing.id).await, cancelled);
    assert_single_event(s, &cancelled, EventType::JobCancelled, minutes(2)).await;
}

/// Of 10 simultaneous cancels of one processing job, exactly one is `Cancelled`; the others
/// are `NotCancellable` and return the job as that one cancel left it.
pub async fn job_cancel_concurrent_single_winner(store: Arc<dyn TestStore>) {
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
    let expected = JobRecord {
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
    assert_eq!(
        store.get_job(&target.id).await.unwrap(),
        Some(expected.clone())
    );
    assert_single_event(
        &*store,
        &expected,
        EventType::JobCancelled,
        minutes(10 + winner as i64),
    )
    .await;
}

/// A cancel racing the finish of the running attempt: exactly one of them takes effect, the
/// job ends in the state of the one that did, and its one event is that state's.
pub async fn job_cancel_races_finish(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Cancel or finish").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let job_type = unique_job_type("race");
    for round in 0..8 {
        let created_at = minutes(round + 1);
        let target = typed_job(&org, &site, created_at, &job_type);
        store
            .insert_jobs(std::slice::from_ref(&target))
            .await
            .unwrap();
        let running = claim_one(&*store, &target, seconds(created_at, 1), kept_lease()).await;
        let ended = seconds(created_at, 2);
        let results = run_concurrently(2, |n| {
            let store = Arc::clone(&store);
            let attempt = running.attempt.clone();
            async move {
                if n == 0 {
                    let cancel = store.cancel_job(&attempt.job_id, ended).await.unwrap();
                    (Some(cancel), None)
                } else {
                    let finished = finish(&*store, &attempt, completed(), ended).await;
                    (None, Some(finished))
                }
            }
        })
        .await;
        let cancel = results[0].0.clone().expect("the cancel task's outcome");
        let finish = results[1].1.expect("the finish task's outcome");
        let stored = stored_job(&*store, &target.id).await;
        match (&cancel, finish) {
            (CancelOutcome::Cancelled(cancelled), None) => {
                assert_eq!(stored.status, JobStatus::Cancelled);
                assert_eq!(&stored, cancelled);
                assert_eq!(stored.result, None);
                assert_single_event(&*store, &stored, EventType::JobCancelled, ended).await;
            }
            (CancelOutcome::NotCancellable(seen), Some(JobStatus::Completed)) => {
                assert_eq!(stored.status, JobStatus::Completed);
                assert_eq!(&stored, seen);
                assert_single_event(&*store, &stored, EventType::JobCompleted, ended).await;
            }
            other => panic!("cancel and finish both or neither took effect: {other:?}"),
        }
    }
}

/// A job about no property (the library's own work, such as publishing) runs on the queue
/// like any other: it is claimed and finished, and `get_job` reads it. But the jobs API's
/// reads never show it: lists, the active count, the per-type counts and the latest job of
/// a property pass it by, and neither finishing, failing nor cancelling it writes an event.
pub async fn job_internal_jobs_stay_out_of_the_api(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Internal").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let job_type = unique_job_type("internal");
    let internal = |at| JobRecord::new(org.id.clone(), job_type.clone(), json!({"n": 1}), None, at);
    let (done, failed, cancelled) = (
        internal(minutes(1)),
        internal(minutes(2)),
        internal(minutes(3)),
    );
    store
        .insert_jobs(&[done.clone(), failed.clone(), cancelled.clone()])
        .await
        .expect("internal jobs are inserted");
    let visible = seed_job(s, &org, &site, minutes(4), JobStatus::Pending).await;

    assert_eq!(stored_job(s, &done.id).await.subject, None);
    let listed = store
        .list_jobs(&org.id, &JobFilter::default(), &first_page(100))
        .await
        .unwrap();
    assert_eq!(job_ids(&listed), vec![visible.id.clone()]);
    let typed = JobFilter {
        job_type: Some(job_type.clone()),
        ..JobFilter::default()
    };
    assert!(store
        .list_jobs(&org.id, &typed, &first_page(100))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(store.count_active_jobs(&org.id).await.unwrap(), 1);
    let counts = store
        .job_counts_by_type(&org.id, minutes(0), minutes(10))
        .await
        .unwrap();
    assert_eq!(
        counts.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(),
        vec![visible.job_type.as_str()]
    );
    let latest = store
        .latest_jobs_for_properties(std::slice::from_ref(&site.id))
        .await
        .unwrap();
    assert_eq!(job_ids(&latest), vec![visible.id.clone()]);

    let claimed = claim(s, &job_type, 10, minutes(5), kept_lease()).await;
    assert_eq!(claimed.len(), 3, "internal jobs are claimed like any other");
    let attempt_of = |id: &JobId| {
        claimed
            .iter()
            .find(|c| &c.job.id == id)
            .map(|c| c.attempt.clone())
            .expect("claimed")
    };
    assert_eq!(
        finish(s, &attempt_of(&done.id), completed(), minutes(6)).await,
        Some(JobStatus::Completed)
    );
    let fail = AttemptOutcome::Failed("rejected".into());
    assert_eq!(
        finish(s, &attempt_of(&failed.id), fail, minutes(6)).await,
        Some(JobStatus::Failed)
    );
    assert!(matches!(
        store.cancel_job(&cancelled.id, minutes(7)).await.unwrap(),
        CancelOutcome::Cancelled(_)
    ));
    for id in [&done.id, &failed.id, &cancelled.id] {
        assert_no_events(s, id).await;
    }
}
