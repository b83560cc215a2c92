//! Behaviours of the job engine's side of the jobs: claiming, heartbeats, finishing,
//! releasing, rescuing and listening.
//!
//! Every job claimed here has a type of its behaviour's own, and every rescue is at
//! [`rescue_time`]; see the [module documentation](super) for why.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{
    assert_no_events, assert_single_event, claim, claim_one, completed, finish, insert_counted,
    job, kept_lease, millis, minutes, rescue_time, rescue_until_taken_up, run_concurrently,
    sample_result_value, seconds, seed_job, seed_job_of_type, seed_organization, seed_property,
    seed_running_job, stored_job, typed_job, unique_job_type, wait_for_signal, TestStore,
    NO_SCAN_LIMIT,
};
use crate::ids::JobId;
use crate::model::{EventType, JobRecord, JobStatus};
use crate::store::{
    lease_expired_error, Attempt, AttemptOutcome, AttemptState, AttemptToken, ClaimRequest,
    ClaimedJob, Finish, JobGauge, QueueSignal, Store,
};
use crate::time::Timestamp;

/// The job as a claim at `now` leaves it: processing, one more attempt, started (if it was
/// not already).
fn claimed_record(job: &JobRecord, now: Timestamp) -> JobRecord {
    JobRecord {
        status: JobStatus::Processing,
        attempts: job.attempts + 1,
        started_at: job.started_at.or(Some(now)),
        ..job.clone()
    }
}

/// Takes up expired leases, at [`rescue_time`] like every rescue of the suite.
async fn rescue(store: &dyn Store) {
    store
        .rescue_expired(rescue_time())
        .await
        .expect("rescue expired leases");
}

/// Sends a heartbeat that records `progress` and keeps the lease; returns what it learned.
async fn heartbeat(store: &dyn Store, attempt: &Attempt, progress: Option<u8>) -> AttemptState {
    store
        .heartbeat(attempt, progress, kept_lease())
        .await
        .expect("heartbeat")
}

/// An attempt of the job that no claim made.
fn foreign_attempt(job_id: &JobId) -> Attempt {
    Attempt {
        job_id: job_id.clone(),
        token: AttemptToken::new(),
    }
}

/// A claim takes at most `limit` jobs, only of the types asked for, only due ones
/// (`run_at <= now`), the oldest `run_at` first (not the oldest creation). Each becomes
/// processing with its first attempt counted, `startedAt = now` and a token of its own. A
/// limit of zero, or no types, takes nothing.
pub async fn queue_claim_takes_due_jobs_oldest_first(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Claims").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let mine = unique_job_type("claim");
    let theirs = unique_job_type("claim-other");
    let make = |created_at: i64, run_at: i64, job_type: &str| JobRecord {
        run_at: minutes(run_at),
        ..typed_job(&org, &site, minutes(created_at), job_type)
    };
    let third = make(1, 3, &mine);
    let first = make(2, 1, &mine);
    let second = make(3, 2, &mine);
    let later = make(4, 15, &mine);
    let other_type = make(5, 1, &theirs);
    store
        .insert_jobs(&[
            third.clone(),
            first.clone(),
            second.clone(),
            later.clone(),
            other_type.clone(),
        ])
        .await
        .unwrap();
    let now = minutes(10);
    let request = |job_types: Vec<String>, limit: usize, now: Timestamp| ClaimRequest {
        job_types,
        limit,
        now,
        lease_expires_at: kept_lease(),
    };

    assert_eq!(
        store
            .claim_jobs(&request(vec![mine.clone()], 0, now))
            .await
            .unwrap(),
        vec![]
    );
    assert_eq!(
        store.claim_jobs(&request(vec![], 10, now)).await.unwrap(),
        vec![]
    );
    assert_eq!(stored_job(&*store, &first.id).await, first);

    let mut taken = store
        .claim_jobs(&request(vec![mine.clone()], 2, now))
        .await
        .unwrap();
    taken.sort_by_key(|c| c.job.run_at);
    assert_eq!(
        taken.iter().map(|c| c.job.clone()).collect::<Vec<_>>(),
        vec![claimed_record(&first, now), claimed_record(&second, now)]
    );
    assert_ne!(taken[0].attempt.token, taken[1].attempt.token);
    for claimed in &taken {
        assert_eq!(claimed.attempt.job_id, claimed.job.id);
        assert_eq!(stored_job(&*store, &claimed.job.id).await, claimed.job);
    }

    let next = claim(&*store, &mine, 10, now, kept_lease()).await;
    assert_eq!(
        next.iter().map(|c| c.job.clone()).collect::<Vec<_>>(),
        vec![claimed_record(&third, now)]
    );
    // Due at its `run_at`, not a millisecond before.
    assert_eq!(
        claim(&*store, &mine, 10, millis(minutes(15), -1), kept_lease()).await,
        vec![]
    );
    let at_run_at = claim(&*store, &mine, 10, minutes(15), kept_lease()).await;
    assert_eq!(
        at_run_at.iter().map(|c| c.job.clone()).collect::<Vec<_>>(),
        vec![claimed_record(&later, minutes(15))]
    );

    assert_eq!(stored_job(&*store, &other_type.id).await, other_type);
    let both = store
        .claim_jobs(&request(vec![mine.clone(), theirs.clone()], 10, now))
        .await
        .unwrap();
    assert_eq!(
        both.iter().map(|c| c.job.clone()).collect::<Vec<_>>(),
        vec![claimed_record(&other_type, now)]
    );
    assert_eq!(
        store
            .claim_jobs(&request(vec![mine, theirs], 10, minutes(60)))
            .await
            .unwrap(),
        vec![]
    );
}

/// A claim takes pending jobs only: processing, completed, failed and cancelled jobs of the
/// type stay as they are.
pub async fn queue_claim_takes_only_pending_jobs(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Only pending").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let job_type = unique_job_type("pending-only");
    let mut others = Vec::new();
    for (n, status) in [
        JobStatus::Processing,
        JobStatus::Completed,
        JobStatus::Failed,
        JobStatus::Cancelled,
    ]
    .into_iter()
    .enumerate()
    {
        let created_at = minutes(n as i64);
        others.push(seed_job_of_type(s, &org, &site, created_at, status, &job_type).await);
    }
    // Seeded after the claimed ones, whose claims would otherwise take it.
    let pending = seed_job_of_type(s, &org, &site, minutes(5), JobStatus::Pending, &job_type).await;

    let claimed = claim(s, &job_type, 10, minutes(30), kept_lease()).await;
    assert_eq!(
        claimed.iter().map(|c| c.job.clone()).collect::<Vec<_>>(),
        vec![claimed_record(&pending, minutes(30))]
    );
    for other in others {
        assert_eq!(stored_job(s, &other.id).await, other);
    }
}

/// Claims made at the same time never take the same job: 8 claimers, each claiming up to 3
/// jobs at a time until a claim comes back empty, together take each of 20 due jobs exactly
/// once (with tokens all different), and leave a job that is not due yet.
pub async fn queue_concurrent_claims_never_share_a_job(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Racing claims").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let job_type = unique_job_type("race");
    let due: Vec<JobRecord> = (0..20)
        .map(|n| typed_job(&org, &site, minutes(n), &job_type))
        .collect();
    let not_due = JobRecord {
        run_at: minutes(120),
        ..typed_job(&org, &site, minutes(20), &job_type)
    };
    let mut all = due.clone();
    all.push(not_due.clone());
    store.insert_jobs(&all).await.unwrap();

    let now = minutes(60);
    let takes = run_concurrently(8, |_| {
        let store = Arc::clone(&store);
        let job_type = job_type.clone();
        async move {
            let mut taken: Vec<ClaimedJob> = Vec::new();
            loop {
                let batch = claim(&*store, &job_type, 3, now, kept_lease()).await;
                assert!(batch.len() <= 3, "a claim takes at most `limit` jobs");
                if batch.is_empty() {
                    return taken;
                }
                taken.extend(batch);
            }
        }
    })
    .await;
    let taken: Vec<ClaimedJob> = takes.into_iter().flatten().collect();
    let mut taken_ids: Vec<JobId> = taken.iter().map(|c| c.job.id.clone()).collect();
    taken_ids.sort();
    let mut due_ids: Vec<JobId> = due.iter().map(|j| j.id.clone()).collect();
    due_ids.sort();
    assert_eq!(taken_ids, due_ids, "every due job is taken exactly once");
    let tokens: BTreeSet<_> = taken.iter().map(|c| c.attempt.token.as_uuid()).collect();
    assert_eq!(
        tokens.len(),
        taken.len(),
        "every attempt has a token of its own"
    );
    for job in &due {
        assert_eq!(stored_job(&*store, &job.id).await, claimed_record(job, now));
    }
    assert_eq!(stored_job(&*store, &not_due.id).await, not_due);
}

/// A heartbeat of the current attempt records its progress, which never goes down and stays
/// within 100; a heartbeat without progress changes none. Nothing else of the job changes.
pub async fn queue_heartbeat_records_progress_that_never_goes_down(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Progress").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let running = seed_running_job(s, &org, &site, minutes(1)).await;
    for (reported, recorded) in [
        (Some(40), 40),
        (Some(20), 40),
        (None, 40),
        (Some(75), 75),
        (Some(250), 100),
        (Some(99), 100),
    ] {
        assert_eq!(
            heartbeat(s, &running.attempt, reported).await,
            AttemptState::Running
        );
        assert_eq!(
            stored_job(s, &running.job.id).await,
            JobRecord {
                progress: recorded,
                ..running.job.clone()
            },
            "after a heartbeat with {reported:?}"
        );
    }
}

/// A heartbeat moves the attempt's lease to the end it names: a rescue after the claim's
/// lease ended but before the heartbeat's leaves the job processing, its attempt current.
pub async fn queue_heartbeat_extends_the_lease(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Extending").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let job_type = unique_job_type("extend");
    // The claim's lease ends before `rescue_time`, so a rescue of another behaviour may take
    // the job up before the heartbeat extends it (and the heartbeat is then `Lost`). That
    // round proves nothing; the next one, with a new job, most likely does.
    for round in 0..10 {
        let created_at = minutes(round);
        let job = typed_job(&org, &site, created_at, &job_type);
        store.insert_jobs(std::slice::from_ref(&job)).await.unwrap();
        let lease_end = minutes(round + 1);
        let running = claim_one(s, &job, seconds(created_at, 1), lease_end).await;
        match heartbeat(s, &running.attempt, Some(10)).await {
            AttemptState::Running => {
                rescue(s).await;
                assert_eq!(
                    stored_job(s, &job.id).await,
                    JobRecord {
                        progress: 10,
                        ..running.job.clone()
                    },
                    "the heartbeat's lease outlasts the rescue"
                );
                assert_eq!(
                    heartbeat(s, &running.attempt, None).await,
                    AttemptState::Running
                );
                return;
            }
            AttemptState::Lost => {
                let rescued = stored_job(s, &job.id).await;
                assert_eq!(
                    (rescued.status, rescued.run_at),
                    (JobStatus::Pending, rescue_time()),
                    "a heartbeat is lost only when a rescue took the job up"
                );
            }
            AttemptState::Cancelled => panic!("nobody cancelled job {}", job.id),
        }
    }
    panic!("other behaviours' rescues took up every job before its heartbeat");
}

/// A heartbeat that does not name the job's current attempt is `Lost` and changes nothing:
/// a pending job, a processing job under another token, a completed or failed job with the
/// attempt that finished it, an unknown job.
pub async fn queue_heartbeat_only_for_current_attempt(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Heartbeats").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;

    let pending = seed_job(s, &org, &site, minutes(1), JobStatus::Pending).await;
    assert_eq!(
        heartbeat(s, &foreign_attempt(&pending.id), Some(10)).await,
        AttemptState::Lost
    );
    assert_eq!(stored_job(s, &pending.id).await, pending);

    let running = seed_running_job(s, &org, &site, minutes(2)).await;
    assert_eq!(
        heartbeat(s, &foreign_attempt(&running.job.id), Some(10)).await,
        AttemptState::Lost
    );
    assert_eq!(stored_job(s, &running.job.id).await, running.job);
    assert_eq!(
        heartbeat(s, &running.attempt, Some(10)).await,
        AttemptState::Running
    );

    for outcome in [completed(), AttemptOutcome::Failed("broken".to_owned())] {
        let done = seed_running_job(s, &org, &site, minutes(3)).await;
        assert!(finish(s, &done.attempt, outcome, minutes(4))
            .await
            .is_some());
        let finished = stored_job(s, &done.job.id).await;
        assert_eq!(
            heartbeat(s, &done.attempt, Some(50)).await,
            AttemptState::Lost
        );
        assert_eq!(stored_job(s, &done.job.id).await, finished);
    }

    assert_eq!(
        heartbeat(s, &foreign_attempt(&JobId::new()), Some(10)).await,
        AttemptState::Lost
    );
}

/// Finishing the current attempt as completed sets status completed, progress 100, the
/// result and `completedAt`, keeps the rest, and writes `job.completed` once. Finishing the
/// same attempt again is refused and writes nothing.
pub async fn queue_finish_completed_sets_result(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Completer").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let running = seed_running_job(s, &org, &site, minutes(1)).await;
    assert_eq!(
        heartbeat(s, &running.attempt, Some(70)).await,
        AttemptState::Running
    );
    let processing = stored_job(s, &running.job.id).await;

    assert_eq!(
        finish(s, &running.attempt, completed(), minutes(10)).await,
        Some(JobStatus::Completed)
    );
    let expected = JobRecord {
        status: JobStatus::Completed,
        progress: 100,
        result: Some(sample_result_value()),
        completed_at: Some(minutes(10)),
        ..processing
    };
    assert_eq!(stored_job(s, &expected.id).await, expected);
    assert_single_event(s, &expected, EventType::JobCompleted, minutes(10)).await;

    assert_eq!(
        finish(
            s,
            &running.attempt,
            AttemptOutcome::Failed("late".to_owned()),
            minutes(11)
        )
        .await,
        None
    );
    assert_eq!(stored_job(s, &expected.id).await, expected);
    assert_single_event(s, &expected, EventType::JobCompleted, minutes(10)).await;
}

/// Finishing the current attempt as failed sets status failed, the error and `completedAt`,
/// keeps the progress, has no result, and writes `job.failed` once. Finishing the same
/// attempt again is refused and writes nothing.
pub async fn queue_finish_failed_sets_error(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Failer").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let running = seed_running_job(s, &org, &site, minutes(1)).await;
    assert_eq!(
        heartbeat(s, &running.attempt, Some(35)).await,
        AttemptState::Running
    );
    let processing = stored_job(s, &running.job.id).await;
    let error = "robots.txt disallows crawling".to_owned();

    assert_eq!(
        finish(
            s,
            &running.attempt,
            AttemptOutcome::Failed(error.clone()),
            minutes(12)
        )
        .await,
        Some(JobStatus::Failed)
    );
    let expected = JobRecord {
        status: JobStatus::Failed,
        error: Some(error),
        completed_at: Some(minutes(12)),
        ..processing
    };
    assert_eq!((expected.progress, &expected.result), (35, &None));
    assert_eq!(stored_job(s, &expected.id).await, expected);
    assert_single_event(s, &expected, EventType::JobFailed, minutes(12)).await;

    assert_eq!(
        finish(s, &running.attempt, completed(), minutes(13)).await,
        None
    );
    assert_eq!(stored_job(s, &expected.id).await, expected);
    assert_single_event(s, &expected, EventType::JobFailed, minutes(12)).await;
}

/// A retry while attempts are left puts the job back to pending, due at the retry's `run_at`
/// (not claimable a millisecond before, claimable at it), without an event; the next claim
/// counts the next attempt and keeps the first `startedAt`. A retry of the last attempt
/// fails the job with the retry's error and writes `job.failed` once.
pub async fn queue_finish_retry_requeues_until_attempts_used_up(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Retrier").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let job = typed_job(&org, &site, minutes(1), &unique_job_type("retry"));
    store.insert_jobs(std::slice::from_ref(&job)).await.unwrap();
    assert_eq!(job.max_attempts, 3);
    let started_at = seconds(minutes(1), 1);
    let mut attempt = claim_one(s, &job, started_at, kept_lease()).await;

    for round in 1..=2_i64 {
        let run_at = minutes(10 * round);
        let retry = AttemptOutcome::Retry {
            error: format!("timeout {round}"),
            run_at,
        };
        assert_eq!(
            finish(s, &attempt.attempt, retry, millis(run_at, -60_000)).await,
            Some(JobStatus::Pending)
        );
        let pending = stored_job(s, &job.id).await;
        assert_eq!(
            pending,
            JobRecord {
                status: JobStatus::Pending,
                run_at,
                // Why the attempt failed: see `queue_finish_retry_records_why_the_attempt_failed`.
                error: pending.error.clone(),
                ..attempt.job.clone()
            }
        );
        assert_eq!(pending.attempts, round as u32);
        assert_no_events(s, &job.id).await;
        assert_eq!(
            claim(s, &job.job_type, 10, millis(run_at, -1), kept_lease()).await,
            vec![],
            "not due before its run_at"
        );
        let previous = attempt.attempt.clone();
        attempt = claim_one(s, &pending, run_at, kept_lease()).await;
        assert_eq!(
            (
                attempt.job.status,
                attempt.job.attempts,
                attempt.job.started_at
            ),
            (JobStatus::Processing, round as u32 + 1, Some(started_at))
        );
        assert_ne!(attempt.attempt.token, previous.token);
        assert_eq!(heartbeat(s, &previous, Some(5)).await, AttemptState::Lost);
    }

    let last_retry = AttemptOutcome::Retry {
        error: "timeout 3".to_owned(),
        run_at: minutes(40),
    };
    assert_eq!(
        finish(s, &attempt.attempt, last_retry, minutes(25)).await,
        Some(JobStatus::Failed)
    );
    let failed = stored_job(s, &job.id).await;
    assert_eq!(
        (
            failed.status,
            failed.attempts,
            failed.error.as_deref(),
            failed.completed_at,
            &failed.result
        ),
        (
            JobStatus::Failed,
            3,
            Some("timeout 3"),
            Some(minutes(25)),
            &None
        )
    );
    assert_single_event(s, &failed, EventType::JobFailed, minutes(25)).await;
    assert_eq!(
        claim(s, &job.job_type, 10, minutes(60), kept_lease()).await,
        vec![]
    );
}

/// While a retry waits, the job's `error` says why its last attempt failed; once a later
/// attempt completes, the job has no error.
pub async fn queue_finish_retry_records_why_the_attempt_failed(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Retry errors").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let running = seed_running_job(s, &org, &site, minutes(1)).await;
    let retry = AttemptOutcome::Retry {
        error: "the site answered 503".to_owned(),
        run_at: minutes(5),
    };
    assert_eq!(
        finish(s, &running.attempt, retry, minutes(2)).await,
        Some(JobStatus::Pending)
    );
    let waiting = stored_job(s, &running.job.id).await;
    assert_eq!(waiting.error.as_deref(), Some("the site answered 503"));

    let again = claim_one(s, &waiting, minutes(5), kept_lease()).await;
    assert_eq!(
        finish(s, &again.attempt, completed(), minutes(6)).await,
        Some(JobStatus::Completed)
    );
    let done = stored_job(s, &running.job.id).await;
    assert_eq!((done.status, done.error), (JobStatus::Completed, None));
}

/// `finish_jobs` answers each item, in order: the state its job reached, or `None` for an
/// attempt that is not current (for which nothing is written). One batch can complete, fail,
/// refuse and requeue; each job gets its own event, or none.
pub async fn queue_finish_batch_answers_per_item_in_order(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Batches").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let job_type = unique_job_type("batch");
    let jobs: Vec<JobRecord> = (0..4)
        .map(|n| typed_job(&org, &site, minutes(n), &job_type))
        .collect();
    store.insert_jobs(&jobs).await.unwrap();
    let mut taken = claim(s, &job_type, 10, minutes(5), kept_lease()).await;
    taken.sort_by_key(|c| c.job.run_at);
    assert_eq!(taken.len(), 4);
    let now = minutes(6);

    let answers = store
        .finish_jobs(
            &[
                Finish {
                    attempt: taken[0].attempt.clone(),
                    outcome: completed(),
                },
                Finish {
                    attempt: taken[1].attempt.clone(),
                    outcome: AttemptOutcome::Failed("broken".to_owned()),
                },
                Finish {
                    attempt: foreign_attempt(&taken[2].job.id),
                    outcome: completed(),
                },
                Finish {
                    attempt: taken[3].attempt.clone(),
                    outcome: AttemptOutcome::Retry {
                        error: "busy".to_owned(),
                        run_at: minutes(30),
                    },
                },
            ],
            now,
        )
        .await
        .unwrap();
    assert_eq!(
        answers,
        vec![
            Some(JobStatus::Completed),
            Some(JobStatus::Failed),
            None,
            Some(JobStatus::Pending)
        ]
    );

    let first = stored_job(s, &taken[0].job.id).await;
    assert_eq!(
        (first.status, first.result, first.completed_at),
        (JobStatus::Completed, Some(sample_result_value()), Some(now))
    );
    assert_single_event(s, &taken[0].job, EventType::JobCompleted, now).await;
    let second = stored_job(s, &taken[1].job.id).await;
    assert_eq!(
        (second.status, second.error.as_deref(), second.completed_at),
        (JobStatus::Failed, Some("broken"), Some(now))
    );
    assert_single_event(s, &taken[1].job, EventType::JobFailed, now).await;
    assert_eq!(stored_job(s, &taken[2].job.id).await, taken[2].job);
    assert_no_events(s, &taken[2].job.id).await;
    let fourth = stored_job(s, &taken[3].job.id).await;
    assert_eq!(
        (fourth.status, fourth.run_at, fourth.completed_at),
        (JobStatus::Pending, minutes(30), None)
    );
    assert_no_events(s, &taken[3].job.id).await;

    assert_eq!(
        finish(s, &taken[2].attempt, completed(), minutes(7)).await,
        Some(JobStatus::Completed),
        "the refused item's attempt is still current"
    );
    assert_eq!(store.finish_jobs(&[], minutes(8)).await.unwrap(), vec![]);
}

/// Finishing an attempt that is not the job's current one is `None` and writes nothing, in
/// any outcome: a pending job, a processing job under another token, a finished job with the
/// attempt that finished it, an unknown job.
pub async fn queue_finish_only_for_current_attempt(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Finisher").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let outcomes = || {
        [
            completed(),
            AttemptOutcome::Failed("late".to_owned()),
            AttemptOutcome::Retry {
                error: "late".to_owned(),
                run_at: minutes(30),
            },
        ]
    };

    let pending = seed_job(s, &org, &site, minutes(1), JobStatus::Pending).await;
    let running = seed_running_job(s, &org, &site, minutes(2)).await;
    for outcome in outcomes() {
        let attempt = foreign_attempt(&pending.id);
        assert_eq!(finish(s, &attempt, outcome, minutes(3)).await, None);
    }
    for outcome in outcomes() {
        let attempt = foreign_attempt(&running.job.id);
        assert_eq!(finish(s, &attempt, outcome, minutes(3)).await, None);
    }
    assert_eq!(stored_job(s, &pending.id).await, pending);
    assert_eq!(stored_job(s, &running.job.id).await, running.job);
    assert_no_events(s, &pending.id).await;
    assert_no_events(s, &running.job.id).await;

    for (n, (outcome, event_type)) in [
        (completed(), EventType::JobCompleted),
        (
            AttemptOutcome::Failed("broken".to_owned()),
            EventType::JobFailed,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let done = seed_running_job(s, &org, &site, minutes(4 + n as i64)).await;
        assert!(finish(s, &done.attempt, outcome, minutes(10))
            .await
            .is_some());
        let finished = stored_job(s, &done.job.id).await;
        for outcome in outcomes() {
            assert_eq!(finish(s, &done.attempt, outcome, minutes(11)).await, None);
        }
        assert_eq!(stored_job(s, &done.job.id).await, finished);
        assert_single_event(s, &finished, event_type, minutes(10)).await;
    }

    assert_eq!(
        finish(s, &foreign_attempt(&JobId::new()), completed(), minutes(12)).await,
        None
    );
}

/// Releasing the current attempt puts the job back to pending, due at the release's `now`
/// and claimable at once; the attempt does not count, the progress and the first
/// `startedAt` stay, and no event is written. The released attempt is no longer current; a
/// release naming another token is `false` and changes nothing.
pub async fn queue_release_requeues_without_counting_the_attempt(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Releaser").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let running = seed_running_job(s, &org, &site, minutes(1)).await;
    assert_eq!(
        heartbeat(s, &running.attempt, Some(20)).await,
        AttemptState::Running
    );
    let processing = stored_job(s, &running.job.id).await;

    assert!(store
        .release_job(&running.attempt, minutes(5))
        .await
        .unwrap());
    let released = JobRecord {
        status: JobStatus::Pending,
        attempts: 0,
        run_at: minutes(5),
        ..processing
    };
    assert_eq!(released.progress, 20);
    assert_eq!(released.started_at, Some(seconds(minutes(1), 1)));
    assert_eq!(stored_job(s, &released.id).await, released);
    assert_no_events(s, &released.id).await;

    assert!(!store
        .release_job(&running.attempt, minutes(6))
        .await
        .unwrap());
    assert_eq!(
        heartbeat(s, &running.attempt, Some(30)).await,
        AttemptState::Lost
    );
    assert_eq!(
        finish(s, &running.attempt, completed(), minutes(6)).await,
        None
    );
    assert_eq!(stored_job(s, &released.id).await, released);

    let again = claim_one(s, &released, minutes(5), kept_lease()).await;
    assert_eq!(again.job, claimed_record(&released, minutes(5)));
    assert_eq!(again.job.attempts, 1);
    assert!(!store
        .release_job(&foreign_attempt(&released.id), minutes(7))
        .await
        .unwrap());
    assert_eq!(stored_job(s, &released.id).await, again.job);
    assert_no_events(s, &released.id).await;
}

/// A rescue puts a job whose lease expired back to pending while it has attempts left: due
/// at the rescue's `now` (not before), its attempt counted, no event. The next claim counts
/// the next attempt with a new token and keeps the first `startedAt`. A job whose lease has
/// not expired stays as it is.
pub async fn queue_rescue_requeues_while_attempts_remain(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Rescued").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let job = typed_job(&org, &site, minutes(1), &unique_job_type("rescue"));
    store.insert_jobs(std::slice::from_ref(&job)).await.unwrap();
    let started_at = seconds(minutes(1), 1);
    let first = claim_one(s, &job, started_at, minutes(2)).await;
    let lasting = seed_running_job(s, &org, &site, minutes(1)).await;

    let requeued = rescue_until_taken_up(s, &job.id).await;
    assert_eq!(
        requeued,
        JobRecord {
            status: JobStatus::Pending,
            run_at: rescue_time(),
            error: requeued.error.clone(),
            ..first.job.clone()
        }
    );
    assert_eq!(requeued.attempts, 1, "the lost attempt counts");
    assert_no_events(s, &job.id).await;
    assert_eq!(stored_job(s, &lasting.job.id).await, lasting.job);

    assert_eq!(
        claim(
            s,
            &job.job_type,
            10,
            millis(rescue_time(), -1),
            kept_lease()
        )
        .await,
        vec![]
    );
    let second = claim_one(s, &requeued, rescue_time(), kept_lease()).await;
    assert_eq!(
        (
            second.job.status,
            second.job.attempts,
            second.job.started_at
        ),
        (JobStatus::Processing, 2, Some(started_at))
    );
    assert_ne!(second.attempt.token, first.attempt.token);

    rescue(s).await;
    assert_eq!(stored_job(s, &job.id).await, second.job);
    assert_eq!(
        finish(s, &second.attempt, completed(), seconds(rescue_time(), 1)).await,
        Some(JobStatus::Completed)
    );
    let done = stored_job(s, &job.id).await;
    assert_single_event(s, &done, EventType::JobCompleted, seconds(rescue_time(), 1)).await;
}

/// A rescue fails a job whose lease expired on its last attempt (after a retry too): status
/// failed with [`lease_expired_error`], `completedAt` the rescue's `now`, and `job.failed`
/// written once even when several rescues run at the same time. The lost attempt's writes are
/// refused afterwards.
pub async fn queue_rescue_fails_job_when_attempts_used_up(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Rescue fails").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let job_type = unique_job_type("rescue-fail");

    let single = JobRecord {
        max_attempts: 1,
        ..typed_job(&org, &site, minutes(1), &job_type)
    };
    store
        .insert_jobs(std::slice::from_ref(&single))
        .await
        .unwrap();
    let single_attempt = claim_one(s, &single, seconds(minutes(1), 1), minutes(2)).await;

    let retried = JobRecord {
        max_attempts: 2,
        ..typed_job(&org, &site, minutes(10), &job_type)
    };
    store
        .insert_jobs(std::slice::from_ref(&retried))
        .await
        .unwrap();
    let first = claim_one(s, &retried, seconds(minutes(10), 1), kept_lease()).await;
    let retry = AttemptOutcome::Retry {
        error: "timeout".to_owned(),
        run_at: minutes(20),
    };
    assert_eq!(
        finish(s, &first.attempt, retry, minutes(11)).await,
        Some(JobStatus::Pending)
    );
    let retried_pending = stored_job(s, &retried.id).await;
    let last = claim_one(s, &retried_pending, minutes(20), minutes(21)).await;
    assert_eq!(last.job.attempts, 2);

    run_concurrently(4, |_| {
        let store = Arc::clone(&store);
        async move { rescue(&*store).await }
    })
    .await;

    for (claimed, max_attempts) in [(&single_attempt, 1), (&last, 2)] {
        let failed = rescue_until_taken_up(s, &claimed.job.id).await;
        assert_eq!(
            failed,
            JobRecord {
                status: JobStatus::Failed,
                error: Some(lease_expired_error(max_attempts)),
                completed_at: Some(rescue_time()),
                ..claimed.job.clone()
            }
        );
        assert_single_event(s, &failed, EventType::JobFailed, rescue_time()).await;

        rescue(s).await;
        assert_eq!(
            heartbeat(s, &claimed.attempt, Some(90)).await,
            AttemptState::Lost
        );
        assert_eq!(
            finish(s, &claimed.attempt, completed(), seconds(rescue_time(), 1)).await,
            None
        );
        assert!(!store
            .release_job(&claimed.attempt, seconds(rescue_time(), 1))
            .await
            .unwrap());
        assert_eq!(stored_job(s, &failed.id).await, failed);
        assert_single_event(s, &failed, EventType::JobFailed, rescue_time()).await;
    }
}

/// Once a rescue took a job up and another claim made a new attempt, the old attempt is
/// refused everywhere and writes nothing: its heartbeat is `Lost`, its finish `None`, its
/// release `false`. The new attempt runs and completes as usual.
pub async fn queue_stale_attempt_rejected_after_rescue(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Stale attempts").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let job = typed_job(&org, &site, minutes(1), &unique_job_type("stale"));
    store.insert_jobs(std::slice::from_ref(&job)).await.unwrap();
    let old = claim_one(s, &job, seconds(minutes(1), 1), minutes(2)).await;
    let requeued = rescue_until_taken_up(s, &job.id).await;
    assert_eq!(requeued.status, JobStatus::Pending);
    let new = claim_one(s, &requeued, rescue_time(), kept_lease()).await;
    assert_eq!(new.job.attempts, 2);

    assert_eq!(
        heartbeat(s, &old.attempt, Some(50)).await,
        AttemptState::Lost
    );
    for outcome in [
        completed(),
        AttemptOutcome::Failed("late".to_owned()),
        AttemptOutcome::Retry {
            error: "late".to_owned(),
            run_at: rescue_time(),
        },
    ] {
        assert_eq!(
            finish(s, &old.attempt, outcome, seconds(rescue_time(), 1)).await,
            None
        );
    }
    assert!(!store
        .release_job(&old.attempt, seconds(rescue_time(), 1))
        .await
        .unwrap());
    assert_eq!(stored_job(s, &job.id).await, new.job);
    assert_no_events(s, &job.id).await;

    assert_eq!(
        heartbeat(s, &new.attempt, Some(60)).await,
        AttemptState::Running
    );
    assert_eq!(
        finish(s, &new.attempt, completed(), seconds(rescue_time(), 2)).await,
        Some(JobStatus::Completed)
    );
    let done = stored_job(s, &job.id).await;
    assert_eq!((done.progress, done.attempts), (100, 2));
    assert_single_event(s, &done, EventType::JobCompleted, seconds(rescue_time(), 2)).await;
}

/// A listener hears [`QueueSignal::JobsReady`] after `insert_jobs` and after
/// `insert_job_counted`.
pub async fn queue_listen_hears_jobs_ready(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Listener").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let mut listener = store.listen().await.unwrap();
    let job_type = unique_job_type("listen");
    store
        .insert_jobs(&[typed_job(&org, &site, minutes(1), &job_type)])
        .await
        .unwrap();
    wait_for_signal(&mut *listener, &QueueSignal::JobsReady).await;

    let counted = job(&org, &site, minutes(2));
    store
        .insert_job_counted(&counted, &counted.created_at.month_key(), NO_SCAN_LIMIT)
        .await
        .unwrap();
    wait_for_signal(&mut *listener, &QueueSignal::JobsReady).await;
}

/// `gauges` counts each type's unfinished jobs by state: pending ones no attempt started
/// (`queued`), processing ones (`running`), pending ones after an attempt (`retrying`);
/// finished jobs are not counted, and a type with none unfinished is absent. Behaviours share
/// the store, so only this behaviour's own types are looked at.
pub async fn queue_gauges_count_unfinished_jobs_by_state(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Gauged").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let kind = unique_job_type("gauged");
    let finished_kind = unique_job_type("gauged-finished");
    let jobs: Vec<JobRecord> = (1..=4)
        .map(|minute| typed_job(&org, &site, minutes(minute), &kind))
        .collect();
    store.insert_jobs(&jobs).await.unwrap();
    let finished = typed_job(&org, &site, minutes(1), &finished_kind);
    store
        .insert_jobs(std::slice::from_ref(&finished))
        .await
        .unwrap();
    let _running = claim_one(s, &jobs[0], seconds(minutes(1), 1), kept_lease()).await;
    let retried = claim_one(s, &jobs[1], seconds(minutes(2), 1), kept_lease()).await;
    let retry = AttemptOutcome::Retry {
        error: "timeout".to_owned(),
        run_at: minutes(30),
    };
    let now = seconds(minutes(2), 2);
    assert_eq!(
        finish(s, &retried.attempt, retry, now).await,
        Some(JobStatus::Pending)
    );
    let done = claim_one(s, &finished, seconds(minutes(1), 1), kept_lease()).await;
    assert_eq!(
        finish(s, &done.attempt, completed(), now).await,
        Some(JobStatus::Completed)
    );

    let gauges = store.gauges().await.expect("gauges");
    let ours: Vec<_> = gauges
        .jobs
        .iter()
        .filter(|gauge| gauge.job_type == kind || gauge.job_type == finished_kind)
        .cloned()
        .collect();
    assert_eq!(
        ours,
        vec![JobGauge {
            job_type: kind.clone(),
            queued: 2,
            running: 1,
            retrying: 1,
        }]
    );
    let mut types: Vec<&str> = gauges.jobs.iter().map(|g| g.job_type.as_str()).collect();
    let sorted = {
        let mut sorted = types.clone();
        sorted.sort_unstable();
        sorted
    };
    assert_eq!(types, sorted, "sorted by type");
    types.dedup();
    assert_eq!(types.len(), gauges.jobs.len(), "each type once");
}

/// A failure of xf's own ([`AttemptOutcome::Internal`]) retries like a retry while attempts
/// remain (the job still counted), and once the job fails so, the scan its queuing counted in
/// the month's `scans` is given back, once. A failure of the job's own keeps its count; a job
/// that was never counted gives nothing back; a rescue that fails a counted job (its worker
/// died with its attempts used up) gives its scan back too.
pub async fn queue_internal_failure_gives_back_a_counted_scan(store: Arc<dyn TestStore>) {
    use crate::testing::BASE_MONTH;
    let org = seed_organization(&*store, "Given back").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let s = &*store;
    let scans = || async { s.get_usage(&org.id, BASE_MONTH).await.unwrap().scans };
    let counted = |max_attempts: u32, label: &str| JobRecord {
        max_attempts,
        ..typed_job(&org, &site, minutes(1), &unique_job_type(label))
    };
    let internal = |retry_at: Option<Timestamp>| AttemptOutcome::Internal {
        error: "xf failed on its side".to_owned(),
        retry_at,
    };

    let retried = counted(2, "internal-retried");
    insert_counted(s, &retried).await;
    assert_eq!(scans().await, 1);
    let attempt = claim_one(s, &retried, minutes(2), kept_lease()).await;
    let outcome = internal(Some(minutes(3)));
    assert_eq!(
        finish(s, &attempt.attempt, outcome, minutes(2)).await,
        Some(JobStatus::Pending)
    );
    let pending = stored_job(s, &retried.id).await;
    assert_eq!(
        (pending.run_at, pending.error.as_deref()),
        (minutes(3), Some("xf failed on its side"))
    );
    assert_eq!(scans().await, 1, "a retried job is still counted");
    let attempt = claim_one(s, &pending, minutes(3), kept_lease()).await;
    let outcome = internal(Some(minutes(4)));
    assert_eq!(
        finish(s, &attempt.attempt, outcome, minutes(3)).await,
        Some(JobStatus::Failed)
    );
    assert_single_event(s, &retried, EventType::JobFailed, minutes(3)).await;
    assert_eq!(
        scans().await,
        0,
        "its attempts used up, the scan is given back"
    );

    let own_fault = counted(3, "job-failed");
    insert_counted(s, &own_fault).await;
    let attempt = claim_one(s, &own_fault, minutes(2), kept_lease()).await;
    let outcome = AttemptOutcome::Failed("the site cannot be scanned".to_owned());
    finish(s, &attempt.attempt, outcome, minutes(2)).await;
    assert_eq!(
        scans().await,
        1,
        "a failure of the job's own keeps its count"
    );

    let at_once = counted(3, "internal-at-once");
    insert_counted(s, &at_once).await;
    assert_eq!(scans().await, 2);
    let attempt = claim_one(s, &at_once, minutes(2), kept_lease()).await;
    assert_eq!(
        finish(s, &attempt.attempt, internal(None), minutes(2)).await,
        Some(JobStatus::Failed)
    );
    assert_eq!(scans().await, 1);

    let uncounted = counted(1, "internal-uncounted");
    store
        .insert_jobs(std::slice::from_ref(&uncounted))
        .await
        .unwrap();
    let attempt = claim_one(s, &uncounted, minutes(2), kept_lease()).await;
    finish(s, &attempt.attempt, internal(None), minutes(2)).await;
    assert_eq!(scans().await, 1, "a job never counted gives nothing back");

    let abandoned = counted(1, "rescued");
    insert_counted(s, &abandoned).await;
    assert_eq!(scans().await, 2);
    claim_one(s, &abandoned, minutes(2), minutes(5)).await;
    let rescued = rescue_until_taken_up(s, &abandoned.id).await;
    assert_eq!(rescued.status, JobStatus::Failed);
    assert_eq!(
        scans().await,
        1,
        "a rescued job that fails gives its scan back"
    );
}
