//! Behaviours of the event outbox.
//!
//! The outbox holds every behaviour's events, so these look at their own jobs' events only.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{
    assert_no_events, assert_single_event, claim, claim_one, completed, finish, kept_lease,
    minutes, rescue_time, rescue_until_taken_up, seconds, seed_organization, seed_property,
    stored_job, typed_job, unique_job_type, TestStore,
};
use crate::ids::{EventId, JobId};
use crate::model::{Event, EventType, JobRecord, JobStatus, Organization, Property};
use crate::store::{AttemptOutcome, AttemptState, CancelOutcome, ClaimedJob, Store};
use crate::time::Timestamp;

/// Reads the outbox page by page, from `after` on, until the page that holds `last`; checks
/// that each page has at most `limit` events, in id order, all after the page's position.
async fn read_events_until(
    store: &dyn Store,
    after: Option<&EventId>,
    limit: usize,
    last: &EventId,
) -> Vec<Event> {
    let mut after = after.cloned();
    let mut read = Vec::new();
    for _ in 0..10_000 {
        let page = store
            .list_events(after.as_ref(), limit)
            .await
            .expect("list events");
        assert!(page.len() <= limit, "a page holds at most `limit` events");
        assert!(
            page.windows(2).all(|pair| pair[0].id < pair[1].id),
            "events are listed in id order"
        );
        assert!(
            page.iter()
                .all(|event| after.as_ref().is_none_or(|after| &event.id > after)),
            "events are listed strictly after the position"
        );
        assert!(!page.is_empty(), "event {last} is listed");
        after = page.last().map(|event| event.id.clone());
        let done = page.iter().any(|event| &event.id == last);
        read.extend(page);
        if done {
            return read;
        }
    }
    panic!("event {last} is not listed within 10 000 pages");
}

/// Inserts a job of a type of its own that allows `max_attempts`, and claims it 1 s after
/// `created_at` with a lease that ends at `lease_expires_at`.
async fn start_job(
    store: &dyn Store,
    organization: &Organization,
    property: &Property,
    created_at: Timestamp,
    max_attempts: u32,
    lease_expires_at: Timestamp,
) -> ClaimedJob {
    let job = JobRecord {
        max_attempts,
        ..typed_job(
            organization,
            property,
            created_at,
            &unique_job_type("transition"),
        )
    };
    store
        .insert_jobs(std::slice::from_ref(&job))
        .await
        .expect("insert job");
    claim_one(store, &job, seconds(created_at, 1), lease_expires_at).await
}

/// `list_events(after, limit)` lists at most `limit` events with ids greater than `after`
/// (all, from the first, when `None`) in id order, and event ids sort in the order the
/// events were written; `job_events` lists one job's. Read page by page, the outbox holds
/// each of a behaviour's events once, in the order they were written.
pub async fn event_list_in_id_order_after_position(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Outbox").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let job_type = unique_job_type("outbox");
    let jobs: Vec<JobRecord> = (0..5)
        .map(|n| typed_job(&org, &site, minutes(n), &job_type))
        .collect();
    store.insert_jobs(&jobs).await.unwrap();
    let mut taken = claim(s, &job_type, 10, minutes(10), kept_lease()).await;
    taken.sort_by_key(|c| c.job.run_at);
    assert_eq!(taken.len(), 5);

    // One job after the other reaches a final state, each writing its event.
    let mut written = Vec::new();
    for (n, claimed) in taken.iter().enumerate() {
        let now = minutes(20 + n as i64);
        let event_type = match n % 3 {
            0 => {
                assert!(finish(s, &claimed.attempt, completed(), now)
                    .await
                    .is_some());
                EventType::JobCompleted
            }
            1 => {
                let failed = AttemptOutcome::Failed("broken".to_owned());
                assert!(finish(s, &claimed.attempt, failed, now).await.is_some());
                EventType::JobFailed
            }
            _ => {
                let outcome = store.cancel_job(&claimed.job.id, now).await.unwrap();
                assert!(matches!(outcome, CancelOutcome::Cancelled(_)));
                EventType::JobCancelled
            }
        };
        written.push(assert_single_event(s, &claimed.job, event_type, now).await);
    }
    assert!(
        written.windows(2).all(|pair| pair[0].id < pair[1].id),
        "event ids sort in the order the events were written: {written:?}"
    );
    let mine: BTreeSet<JobId> = jobs.iter().map(|job| job.id.clone()).collect();
    let only_mine = |events: Vec<Event>| -> Vec<Event> {
        events
            .into_iter()
            .filter(|event| event.job_id().is_some_and(|id| mine.contains(id)))
            .collect()
    };
    let last = &written[4].id;

    let from_start = read_events_until(s, None, 100, last).await;
    assert_eq!(only_mine(from_start), written);
    let after_first = read_events_until(s, Some(&written[0].id), 2, last).await;
    assert_eq!(only_mine(after_first), written[1..]);
    let after_last = store.list_events(Some(last), 1_000).await.unwrap();
    assert!(after_last.iter().all(|event| &event.id > last));
    assert_eq!(only_mine(after_last), vec![]);

    let first_three = store.list_events(None, 3).await.unwrap();
    assert_eq!(first_three.len(), 3, "the outbox holds at least 5 events");
    assert!(first_three.windows(2).all(|pair| pair[0].id < pair[1].id));
    assert_eq!(
        store.list_events(Some(&written[0].id), 0).await.unwrap(),
        vec![]
    );
    assert_eq!(store.job_events(&JobId::new()).await.unwrap(), vec![]);
}

/// Every change of a job to a final state writes exactly one event, of the state's type, for
/// the job's organization, at the change's `now`: completed or failed by a finish, failed by
/// a retry of the last attempt, failed by a rescue, cancelled while pending or while
/// running. Changes to other states (a retry with attempts left, a release, a rescue that
/// requeues) write none, and neither does any refused write afterwards.
pub async fn event_one_per_final_transition(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Transitions").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let kept = kept_lease();
    let expiring = minutes(30);

    let to_complete = start_job(s, &org, &site, minutes(1), 3, kept).await;
    let to_fail = start_job(s, &org, &site, minutes(2), 3, kept).await;
    let to_retry_last = start_job(s, &org, &site, minutes(3), 1, kept).await;
    let to_rescue_last = start_job(s, &org, &site, minutes(4), 1, expiring).await;
    let to_cancel_running = start_job(s, &org, &site, minutes(5), 3, kept).await;
    let to_retry = start_job(s, &org, &site, minutes(6), 3, kept).await;
    let to_release = start_job(s, &org, &site, minutes(7), 3, kept).await;
    let to_rescue = start_job(s, &org, &site, minutes(8), 3, expiring).await;
    let pending = JobRecord {
        max_attempts: 3,
        ..typed_job(&org, &site, minutes(9), &unique_job_type("transition"))
    };
    store
        .insert_jobs(std::slice::from_ref(&pending))
        .await
        .unwrap();

    let retry = |error: &str| AttemptOutcome::Retry {
        error: error.to_owned(),
        run_at: minutes(60),
    };
    assert_eq!(
        finish(s, &to_complete.attempt, completed(), minutes(11)).await,
        Some(JobStatus::Completed)
    );
    assert_eq!(
        finish(
            s,
            &to_fail.attempt,
            AttemptOutcome::Failed("broken".to_owned()),
            minutes(12)
        )
        .await,
        Some(JobStatus::Failed)
    );
    assert_eq!(
        finish(s, &to_retry_last.attempt, retry("timeout"), minutes(13)).await,
        Some(JobStatus::Failed)
    );
    assert!(matches!(
        store
            .cancel_job(&to_cancel_running.job.id, minutes(15))
            .await
            .unwrap(),
        CancelOutcome::Cancelled(_)
    ));
    assert!(matches!(
        store.cancel_job(&pending.id, minutes(16)).await.unwrap(),
        CancelOutcome::Cancelled(_)
    ));
    assert_eq!(
        finish(s, &to_retry.attempt, retry("busy"), minutes(17)).await,
        Some(JobStatus::Pending)
    );
    assert!(store
        .release_job(&to_release.attempt, minutes(18))
        .await
        .unwrap());
    rescue_until_taken_up(s, &to_rescue_last.job.id).await;
    rescue_until_taken_up(s, &to_rescue.job.id).await;

    let finals = [
        (&to_complete.job, EventType::JobCompleted, minutes(11)),
        (&to_fail.job, EventType::JobFailed, minutes(12)),
        (&to_retry_last.job, EventType::JobFailed, minutes(13)),
        (&to_rescue_last.job, EventType::JobFailed, rescue_time()),
        (&to_cancel_running.job, EventType::JobCancelled, minutes(15)),
        (&pending, EventType::JobCancelled, minutes(16)),
    ];
    let unfinished = [&to_retry.job, &to_release.job, &to_rescue.job];
    let mut before = Vec::new();
    for (job, _, _) in finals {
        let stored = stored_job(s, &job.id).await;
        assert!(!stored.status.is_active(), "job {} is final", job.id);
        before.push(stored);
    }
    for job in unfinished {
        let stored = stored_job(s, &job.id).await;
        assert_eq!(stored.status, JobStatus::Pending);
        before.push(stored);
    }

    // Refused writes: every attempt is stale now, and the final jobs cannot be cancelled.
    let attempts = [
        &to_complete,
        &to_fail,
        &to_retry_last,
        &to_rescue_last,
        &to_cancel_running,
        &to_retry,
        &to_release,
        &to_rescue,
    ];
    for claimed in attempts {
        let expected = if claimed.job.id == to_cancel_running.job.id {
            AttemptState::Cancelled
        } else {
            AttemptState::Lost
        };
        assert_eq!(
            store
                .heartbeat(&claimed.attempt, Some(99), kept)
                .await
                .unwrap(),
            expected,
            "the heartbeat of job {}",
            claimed.job.id
        );
        for outcome in [
            completed(),
            AttemptOutcome::Failed("late".to_owned()),
            retry("late"),
        ] {
            assert_eq!(
                finish(s, &claimed.attempt, outcome, seconds(rescue_time(), 1)).await,
                None
            );
        }
        assert!(!store
            .release_job(&claimed.attempt, seconds(rescue_time(), 1))
            .await
            .unwrap());
    }
    for (job, _, _) in finals {
        assert!(matches!(
            store
                .cancel_job(&job.id, seconds(rescue_time(), 2))
                .await
                .unwrap(),
            CancelOutcome::NotCancellable(_)
        ));
    }
    store.rescue_expired(rescue_time()).await.unwrap();

    for stored in before {
        assert_eq!(stored_job(s, &stored.id).await, stored);
    }
    for (job, event_type, at) in finals {
        assert_single_event(s, job, event_type, at).await;
    }
    for job in unfinished {
        assert_no_events(s, &job.id).await;
    }
}
