//! The background runtime in-process, on both backends: a scan runs through a handler and the
//! API shows its life; a running job is cancelled within a second; shutdown lets a job finish
//! within its grace or gives it back to the queue for the next start.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{json, Value};
use xf_core::ids::{JobId, OrganizationId, PropertyId};
use xf_core::model::{EventType, JobRecord, JobStatus, JobSubject, SEO_SCAN};
use xf_core::runtime::{JobContext, JobError, JobHandler, WorkerOptions};
use xf_core::time::{Clock, ManualClock, Timestamp};
use xf_tests::TestApp;

use crate::{org, property, scan};

/// Completes every scan with a fixed result, reporting progress on the way.
#[derive(Debug)]
struct FakeScan;

#[async_trait]
impl JobHandler for FakeScan {
    async fn run(&self, job: JobContext) -> Result<Value, JobError> {
        job.set_progress(60);
        let budget = job.payload()["maxPages"].as_u64().unwrap_or(0);
        Ok(json!({"score": 77, "pagesScanned": budget.min(5), "issuesCount": 2}))
    }
}

/// Works in 20 ms steps forever, counting them; notes when its future is dropped.
#[derive(Debug, Default)]
struct Steps {
    steps: Arc<AtomicU32>,
    dropped_at: Arc<Mutex<Option<Instant>>>,
}

/// Sets `dropped_at` when the handler's future goes away (it was aborted).
struct DropClock(Arc<Mutex<Option<Instant>>>);

impl Drop for DropClock {
    fn drop(&mut self) {
        *self.0.lock().unwrap() = Some(Instant::now());
    }
}

#[async_trait]
impl JobHandler for Steps {
    async fn run(&self, job: JobContext) -> Result<Value, JobError> {
        let _clock = DropClock(Arc::clone(&self.dropped_at));
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let done = self.steps.fetch_add(1, Ordering::SeqCst) + 1;
            job.set_progress(u8::try_from(done.min(90)).unwrap_or(90));
        }
    }
}

/// Sleeps for `payload.ms`, then completes.
#[derive(Debug)]
struct Sleep;

#[async_trait]
impl JobHandler for Sleep {
    async fn run(&self, job: JobContext) -> Result<Value, JobError> {
        let ms = job.payload()["ms"].as_u64().unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(json!({"slept": ms}))
    }
}

/// What a [`HookedClock`] runs the next time it is read.
type Hook = Box<dyn FnOnce() + Send>;

/// A clock that reads `inner` and, the next time it is read once armed, first runs its hook.
#[derive(Clone, Default)]
struct HookedClock {
    inner: Arc<OnceLock<ManualClock>>,
    hook: Arc<Mutex<Option<Hook>>>,
}

impl std::fmt::Debug for HookedClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookedClock").finish_non_exhaustive()
    }
}

impl HookedClock {
    fn arm(&self, hook: impl FnOnce() + Send + 'static) {
        *self.hook.lock().unwrap() = Some(Box::new(hook));
    }
}

impl Clock for HookedClock {
    fn now(&self) -> Timestamp {
        let hook = self.hook.lock().unwrap().take();
        if let Some(hook) = hook {
            hook();
        }
        self.inner.get().expect("a clock to read").now()
    }
}

/// A pending job of `job_type` for a new organization's new property, inserted; and the
/// organization's live key.
async fn queued(app: &TestApp, job_type: &str, payload: Value) -> (JobRecord, String) {
    let owner = org(app, "Runtime").await;
    let site = property(app, &owner.live, "https://runtime.example").await;
    let subject = JobSubject {
        property_id: PropertyId::parse(site["id"].as_str().unwrap()).unwrap(),
        property_name: "runtime.example".to_owned(),
        tenant_label: "Runtime".to_owned(),
        shop_domain: None,
    };
    let organization_id: OrganizationId = owner.id.clone();
    let job = JobRecord::new(organization_id, job_type, payload, subject, app.xf.now());
    app.store
        .insert_jobs(std::slice::from_ref(&job))
        .await
        .unwrap();
    (job, owner.live)
}

async fn status_of(app: &TestApp, id: &JobId) -> JobRecord {
    app.store.get_job(id).await.unwrap().expect("job")
}

/// Polls until `job` reaches `status`, for at most ten seconds.
async fn wait_for(app: &TestApp, id: &JobId, status: JobStatus) -> JobRecord {
    let start = Instant::now();
    loop {
        let job = status_of(app, id).await;
        if job.status == status {
            return job;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "job stayed {:?}, never {status:?}",
            job.status
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub(crate) async fn a_queued_scan_runs_and_the_api_shows_its_result_and_activity(app: TestApp) {
    let owner = org(&app, "Scans").await;
    let site = property(&app, &owner.live, "https://scanned.example").await;
    let job_id = scan(&app, &owner.live, site["id"].as_str().unwrap()).await;
    let workers = app
        .xf
        .spawn_workers(WorkerOptions::new().handler(SEO_SCAN, FakeScan));
    let id = JobId::parse(&job_id).unwrap();
    wait_for(&app, &id, JobStatus::Completed).await;
    workers.shutdown(Duration::from_secs(5)).await;

    let job = app.get(&format!("/jobs/{job_id}"), &owner.live).await;
    let job = &job.expect(200)["job"];
    assert_eq!(job["status"], "completed");
    assert_eq!(job["progress"], 100);
    assert_eq!(job["error"], Value::Null);
    assert_eq!(
        job["result"],
        json!({"score": 77, "pagesScanned": 5, "issuesCount": 2})
    );
    crate::assert_time(&job["startedAt"]);
    crate::assert_time(&job["completedAt"]);
    let usage = app.get("/usage", &owner.live).await;
    let activity = &usage.expect(200)["activity"];
    assert_eq!(
        activity["totals"],
        json!({"jobs": 1, "completed": 1, "failed": 0})
    );
    let events = app.store.job_events(&id).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event_type, EventType::JobCompleted);
}

async fn cancelling_a_running_job_stops_it_within_a_second(app: TestApp) {
    let handler = Steps::default();
    let (steps, dropped_at) = (Arc::clone(&handler.steps), Arc::clone(&handler.dropped_at));
    let (job, key) = queued(&app, "test-steps", json!({})).await;
    // Heartbeats far apart: only the cancel notification can stop the job in time.
    let workers = app.xf.spawn_workers(
        WorkerOptions::new()
            .handler("test-steps", handler)
            .heartbeat_interval(Duration::from_secs(60)),
    );
    wait_for(&app, &job.id, JobStatus::Processing).await;
    while steps.load(Ordering::SeqCst) < 5 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let cancelled_at = Instant::now();
    let reply = app
        .send(xf_tests::request(
            http::Method::POST,
            &format!("/jobs/{}/cancel", job.id),
            Some(&key),
            None,
            &[],
        ))
        .await;
    let cancelled = &reply.expect(200)["job"];
    assert_eq!(cancelled["status"], "cancelled");
    let kept = cancelled["progress"].as_u64().expect("progress");
    loop {
        if let Some(at) = *dropped_at.lock().unwrap() {
            assert!(
                at.duration_since(cancelled_at) < Duration::from_secs(1),
                "the handler ran on for {:?}",
                at.duration_since(cancelled_at)
            );
            break;
        }
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(5),
            "the handler was never stopped"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let steps_at_stop = steps.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        steps.load(Ordering::SeqCst),
        steps_at_stop,
        "no step after the stop"
    );
    workers.shutdown(Duration::from_secs(5)).await;

    let after = status_of(&app, &job.id).await;
    assert_eq!(after.status, JobStatus::Cancelled);
    assert!(after.completed_at.is_some());
    assert_eq!(
        u64::from(after.progress),
        kept,
        "progress kept as cancelled"
    );
    let events = app.store.job_events(&job.id).await.unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].event_type, EventType::JobCancelled);
}

async fn shutdown_lets_a_running_job_finish_within_the_grace(app: TestApp) {
    let (job, _) = queued(&app, "test-sleep", json!({"ms": 300})).await;
    let workers = app
        .xf
        .spawn_workers(WorkerOptions::new().handler("test-sleep", Sleep));
    wait_for(&app, &job.id, JobStatus::Processing).await;
    let report = workers.shutdown(Duration::from_secs(10)).await;
    assert_eq!(report.finished_in_grace, 1);
    assert_eq!(report.released, 0);
    let done = status_of(&app, &job.id).await;
    assert_eq!(done.status, JobStatus::Completed);
    assert_eq!(done.result, Some(json!({"slept": 300})));
}

/// Many attempts finishing while shutdown waits: each outcome is queued for the completer
/// before the attempt's slot comes back, so the shutdown that finds every slot free never
/// closes the queue on an outcome still to be sent.
async fn shutdown_writes_every_outcome_of_attempts_finishing_as_it_waits(app: TestApp) {
    const JOBS: u64 = 40;
    let (first, _) = queued(&app, "test-sleep", json!({"ms": 100})).await;
    let mut jobs = vec![first.clone()];
    for i in 1..JOBS {
        let job = JobRecord::new(
            first.organization_id.clone(),
            "test-sleep",
            json!({"ms": 100 + i}),
            first.subject.clone(),
            app.xf.now(),
        );
        jobs.push(job);
    }
    app.store.insert_jobs(&jobs[1..]).await.unwrap();
    let workers = app.xf.spawn_workers(
        WorkerOptions::new()
            .handler("test-sleep", Sleep)
            .concurrency(JOBS as usize),
    );
    for job in &jobs {
        let seen = status_of(&app, &job.id).await.status;
        if seen == JobStatus::Pending {
            wait_for(&app, &job.id, JobStatus::Processing).await;
        }
    }
    let report = workers.shutdown(Duration::from_secs(10)).await;
    assert_eq!(report.released, 0);
    for (i, job) in (0..).zip(&jobs) {
        let done = status_of(&app, &job.id).await;
        assert_eq!(done.status, JobStatus::Completed, "job {i}");
        assert_eq!(done.result, Some(json!({"slept": 100 + i})));
    }
}

async fn shutdown_past_the_grace_releases_the_job_to_the_next_start(app: TestApp) {
    let (job, _) = queued(&app, "test-sleep", json!({"ms": 60_000})).await;
    let workers = app
        .xf
        .spawn_workers(WorkerOptions::new().handler("test-sleep", Sleep));
    wait_for(&app, &job.id, JobStatus::Processing).await;
    let report = workers.shutdown(Duration::from_millis(200)).await;
    assert_eq!(report.released, 1);
    assert_eq!(report.finished_in_grace, 0);
    let released = status_of(&app, &job.id).await;
    assert_eq!(released.status, JobStatus::Pending);
    assert_eq!(released.attempts, 0, "a released attempt does not count");
    assert!(app.store.job_events(&job.id).await.unwrap().is_empty());

    // The next start takes it up (here with a handler that finishes at once).
    #[derive(Debug)]
    struct Quick;
    #[async_trait]
    impl JobHandler for Quick {
        async fn run(&self, _job: JobContext) -> Result<Value, JobError> {
            Ok(json!({"quick": true}))
        }
    }
    let next = app
        .xf
        .spawn_workers(WorkerOptions::new().handler("test-sleep", Quick));
    let done = wait_for(&app, &job.id, JobStatus::Completed).await;
    next.shutdown(Duration::from_secs(5)).await;
    assert_eq!(done.attempts, 1);
    assert_eq!(done.result, Some(json!({"quick": true})));
}

async fn a_failing_handler_retries_then_fails_with_its_error(app: TestApp) {
    #[derive(Debug)]
    struct Flaky(Arc<AtomicU32>);
    #[async_trait]
    impl JobHandler for Flaky {
        async fn run(&self, _job: JobContext) -> Result<Value, JobError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Err(JobError::Retry("upstream timed out".to_owned()))
        }
    }
    let runs = Arc::new(AtomicU32::new(0));
    let (job, _) = queued(&app, "test-flaky", json!({})).await;
    // Retries wait out their backoff by the injected clock: zero here.
    let workers = app.xf.spawn_workers(
        WorkerOptions::new()
            .handler("test-flaky", Flaky(Arc::clone(&runs)))
            .retry_backoff(Duration::ZERO)
            .poll_interval(Duration::from_millis(20)),
    );
    let failed = wait_for(&app, &job.id, JobStatus::Failed).await;
    workers.shutdown(Duration::from_secs(5)).await;
    assert_eq!(runs.load(Ordering::SeqCst), failed.max_attempts);
    assert_eq!(failed.attempts, failed.max_attempts);
    assert_eq!(failed.error.as_deref(), Some("upstream timed out"));
    let events = app.store.job_events(&job.id).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event_type, EventType::JobFailed);
}

async fn the_runtime_purges_rate_windows_and_idempotency_records_past_their_life(app: TestApp) {
    use xf_core::store::{IdempotencyClaim, IdempotencyRequest, RateBucket};
    let then = app.xf.now();
    let bucket = |consume| RateBucket {
        name: "key:purge-test:read".into(),
        window_start: then.start_of_hour(),
        limit: 100,
        consume,
    };
    app.store.hit_rate_limits(&[bucket(true)]).await.unwrap();
    let claim = |fingerprint: &str, now| IdempotencyRequest {
        scope: "purge-test".to_owned(),
        fingerprint: fingerprint.to_owned(),
        now,
        // Nothing counts as expired or stale by these bounds: only a purge frees the scope.
        expired_before: xf_core::time::Timestamp::MIN,
        stale_before: xf_core::time::Timestamp::MIN,
    };
    assert_eq!(
        app.store
            .claim_idempotency_key(&claim("first", then))
            .await
            .unwrap(),
        IdempotencyClaim::Acquired
    );

    // Three days on, both are past their life (a day's window, 24 h of idempotency).
    app.clock.advance(chrono::Duration::days(3));
    let workers = app
        .xf
        .spawn_workers(WorkerOptions::new().purge_interval(Duration::from_millis(20)));
    let start = Instant::now();
    while app
        .store
        .hit_rate_limits(&[bucket(false)])
        .await
        .unwrap()
        .counts
        != vec![0]
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the window was never purged"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    workers.shutdown(Duration::from_secs(5)).await;
    let now = app.xf.now();
    assert_eq!(
        app.store
            .claim_idempotency_key(&claim("second", now))
            .await
            .unwrap(),
        IdempotencyClaim::Acquired,
        "the old record was purged, so another fingerprint may take the key"
    );
}

crate::backends!(
    the_runtime_purges_rate_windows_and_idempotency_records_past_their_life,
    a_queued_scan_runs_and_the_api_shows_its_result_and_activity,
    cancelling_a_running_job_stops_it_within_a_second,
    shutdown_lets_a_running_job_finish_within_the_grace,
    shutdown_writes_every_outcome_of_attempts_finishing_as_it_waits,
    shutdown_past_the_grace_releases_the_job_to_the_next_start,
    a_failing_handler_retries_then_fails_with_its_error,
    a_worker_told_to_stop_does_not_stretch_its_lease,
);

/// A worker stopped (here: its handle dropped, as when its process dies) just as a heartbeat
/// falls due, with the clock moved on past the lease meanwhile, does not write that heartbeat:
/// the lease it holds ends when it ended, and another worker rescues the job. The clock's hook
/// puts the stop and the clock's move between the heartbeat's turn and its read of the clock,
/// the order a loaded machine can give them.
async fn a_worker_told_to_stop_does_not_stretch_its_lease(app: TestApp) {
    let clock = HookedClock::default();
    let hooked = clock.clone();
    let app = app.reconfigured(move |builder| builder.clock(Arc::new(hooked)));
    // The reconfigured app has a clock of its own, which the hooked one reads.
    clock.inner.set(app.clock.clone()).expect("set once");
    let (job, _) = queued(&app, "test-steps", json!({})).await;
    let quiet = |handler: Steps| {
        WorkerOptions::new()
            .handler("test-steps", handler)
            .poll_interval(Duration::from_secs(3600))
            .purge_interval(Duration::from_secs(3600))
    };
    // Once the job runs and the start-up passes are done, only the heartbeat reads the clock:
    // no poll, rescue or purge is due. (Should another read take the hook, the heartbeat still
    // sees the stop, and the test checks less than it means to; it cannot fail for it.)
    let handler = Steps::default();
    let aborted = Arc::clone(&handler.dropped_at);
    let crashed = app.xf.spawn_workers(
        quiet(handler)
            .rescue_interval(Duration::from_secs(3600))
            .heartbeat_interval(Duration::from_millis(10)),
    );
    wait_for(&app, &job.id, JobStatus::Processing).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (fired_tx, fired) = tokio::sync::oneshot::channel();
    let manual = app.clock.clone();
    clock.arm(move || {
        drop(crashed);
        manual.advance(chrono::Duration::seconds(31));
        let _ = fired_tx.send(());
    });
    tokio::time::timeout(Duration::from_secs(10), fired)
        .await
        .expect("the clock was read within 10 s")
        .expect("the hook ran");
    // The handler is aborted once the heartbeat that took the hook is done, whatever it wrote:
    // only then may a rescue look at the lease.
    let start = Instant::now();
    while aborted.lock().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the stopped attempt's handler was never aborted"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    let rescuer = app.xf.spawn_workers(
        quiet(Steps::default())
            .rescue_interval(Duration::from_millis(20))
            .heartbeat_interval(Duration::from_millis(10)),
    );
    let start = Instant::now();
    loop {
        let now = status_of(&app, &job.id).await;
        if now.attempts == 2 && now.status == JobStatus::Processing {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the job was never rescued: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    rescuer.shutdown(Duration::from_millis(100)).await;
}
