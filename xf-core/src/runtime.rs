//! The background runtime: job workers, lease rescue and retention purges.
//!
//! A host starts it with [`Xf::spawn_workers`] and stops it with [`WorkerHandle::shutdown`]:
//!
//! ```no_run
//! # async fn run(xf: xf_core::Xf) {
//! use std::time::Duration;
//! use xf_core::runtime::{JobContext, JobError, WorkerOptions};
//!
//! /// A handler of the host's own job type.
//! #[derive(Debug)]
//! struct Thumbnail;
//!
//! #[async_trait::async_trait]
//! impl xf_core::runtime::JobHandler for Thumbnail {
//!     async fn run(&self, job: JobContext) -> Result<serde_json::Value, JobError> {
//!         job.set_progress(50);
//!         Ok(serde_json::json!({ "done": true }))
//!     }
//! }
//!
//! let workers = xf.spawn_workers(
//!     WorkerOptions::new()
//!         .handler("thumbnail", Thumbnail)
//!         .concurrency(8),
//! );
//! // ... until the process is told to stop:
//! let report = workers.shutdown(Duration::from_secs(30)).await;
//! # let _ = report;
//! # }
//! ```
//!
//! ## How a job runs
//!
//! - A **claimer** takes as many due jobs as there are free slots (at most
//!   [`WorkerOptions::claim_batch`] per claim) in one store call. When it finds none it waits
//!   for a wake-up (a [`QueueSignal::JobsReady`] from the store: `LISTEN/NOTIFY` on
//!   PostgreSQL, a channel in memory), or for the poll interval, whichever comes first.
//! - Each claimed job runs its handler on a task of its own. Beside it, the worker sends a
//!   **heartbeat** every [`WorkerOptions::heartbeat_interval`]: it extends the lease and
//!   carries the progress the handler reported. A heartbeat that answers
//!   [`AttemptState::Cancelled`] or [`AttemptState::Lost`] stops the handler (its task is
//!   aborted at its next `.await`) and nothing more is written for the attempt. A
//!   [`QueueSignal::CancelRequested`] stops it at once, without waiting for the heartbeat.
//! - The outcome goes to a **completer** that writes whatever outcomes are waiting in one
//!   store call, so a busy worker finishes jobs in batches and an idle one at once.
//! - A **rescue** pass every [`WorkerOptions::rescue_interval`] takes up jobs whose lease
//!   expired (their worker died): pending again while attempts are left, failed otherwise.
//! - A **purge** pass every [`WorkerOptions::purge_interval`] deletes rate-limit windows and
//!   idempotency records past their life, webhook delivery log rows older than 30 days, and
//!   resumable uploads 24 hours old (with their bytes), and the partial files of dead blob
//!   writers; every [`WorkerOptions::blob_sweep_interval`] it also reconciles the blob store
//!   with the items and uploads ([`Xf::sweep_blobs`](crate::Xf::sweep_blobs)), deleting
//!   blobs that nothing names.
//! - The **webhook engine** ([`crate::webhooks`]) fans the event outbox out to webhooks and
//!   delivers it, up to [`WorkerOptions::webhook_concurrency`] attempts at once, woken by
//!   [`QueueSignal::EventsWritten`]. In-flight attempts (15 s at most) finish before
//!   [`WorkerHandle::shutdown`] returns.
//!
//! Every rule that must hold across processes (one claim per job, attempt tokens, the
//! outbox) is the store's; the runtime only decides when to call it. So any number of
//! runtimes, in any number of processes, can share one PostgreSQL database.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::{mpsc, watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

use crate::ids::JobId;
use crate::model::JobRecord;
use crate::store::{
    Attempt, AttemptOutcome, AttemptState, ClaimRequest, ClaimedJob, Finish, GuardStore,
    QueueSignal, QueueStore, Store, StoreResult,
};
use crate::time::Timestamp;
use crate::webhooks::engine::EngineOptions;
use crate::xf::{Xf, IDEMPOTENCY_TTL_HOURS};

/// How an attempt failed, as its handler says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// Worth another attempt (a timeout, an unavailable dependency): the job goes back to
    /// the queue after a backoff, unless its attempts are used up.
    #[error("{0}")]
    Retry(String),
    /// Hopeless (bad input): the job fails now, with this message as its `error`.
    #[error("{0}")]
    Fail(String),
    /// Like [`JobError::Retry`], but not before `after` (a rate limit's reset): the wait is
    /// the longer of the two.
    #[error("{error}")]
    RetryAfter {
        /// Why the attempt failed.
        error: String,
        /// The least wait.
        after: Duration,
    },
}

/// What a handler gets: the job, and the means to report progress and learn of a cancel.
#[derive(Debug)]
pub struct JobContext {
    job: JobRecord,
    attempt: Attempt,
    progress: Arc<AtomicU8>,
    stop: watch::Receiver<Option<Stop>>,
    settled: Arc<AtomicBool>,
}

impl JobContext {
    /// The job as it was claimed (`processing`, its attempt counted).
    pub fn job(&self) -> &JobRecord {
        &self.job
    }

    /// The job's payload.
    pub fn payload(&self) -> &Value {
        &self.job.payload
    }

    /// Reports progress (0 to 100); the next heartbeat carries it. Progress never goes down:
    /// a lower value than one reported before is ignored.
    pub fn set_progress(&self, progress: u8) {
        self.progress
            .fetch_max(progress.min(100), Ordering::Relaxed);
    }

    /// The attempt this run is, for a handler that writes its outcome itself (see
    /// [`JobContext::settle`]).
    pub fn attempt(&self) -> &Attempt {
        &self.attempt
    }

    /// Tells the runtime that the handler wrote the attempt's outcome itself, in the same
    /// transaction as its own data (the scan handler completes its job together with the
    /// findings), so the value it returns is not written again.
    pub fn settle(&self) {
        self.settled.store(true, Ordering::Release);
    }

    /// Whether the attempt was told to stop. A handler that works in steps need not check:
    /// the worker aborts it at its next `.await` anyway. This is for work between awaits.
    pub fn is_stopping(&self) -> bool {
        self.stop.borrow().is_some()
    }
}

/// Runs the jobs of one type.
#[async_trait]
pub trait JobHandler: Send + Sync + std::fmt::Debug + 'static {
    /// Runs one attempt; the value is the job's `result`. The future may be dropped at any
    /// `.await` (the job was cancelled, its lease was lost, or the worker is shutting down
    /// past its grace), so the handler must leave nothing half-done that a later attempt
    /// cannot redo.
    async fn run(&self, job: JobContext) -> Result<Value, JobError>;
}

/// Why a running attempt must stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The job was cancelled (or its attempt lost): write nothing.
    Abandon,
    /// The worker shuts down: give the job back.
    Release,
}

/// The runtime's settings. [`WorkerOptions::new`] has the defaults.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    handlers: BTreeMap<String, Arc<dyn JobHandler>>,
    concurrency: usize,
    claim_batch: usize,
    lease: Duration,
    heartbeat_interval: Duration,
    poll_interval: Duration,
    rescue_interval: Duration,
    purge_interval: Duration,
    blob_sweep_interval: Duration,
    retry_backoff: Duration,
    run_jobs: bool,
    webhook_concurrency: usize,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkerOptions {
    /// No handlers; 8 slots; claims of up to 8; a 30 s lease renewed every second; polls
    /// every second; rescues every 5 s; purges every 10 minutes; sweeps blobs every hour;
    /// retries after 5 s, doubling; 64 webhook deliveries at once.
    pub fn new() -> Self {
        WorkerOptions {
            handlers: BTreeMap::new(),
            concurrency: 8,
            claim_batch: 8,
            lease: Duration::from_secs(30),
            heartbeat_interval: Duration::from_secs(1),
            poll_interval: Duration::from_secs(1),
            rescue_interval: Duration::from_secs(5),
            purge_interval: Duration::from_secs(600),
            blob_sweep_interval: Duration::from_secs(3600),
            retry_backoff: Duration::from_secs(5),
            run_jobs: true,
            webhook_concurrency: 64,
        }
    }

    /// Runs jobs of `job_type` with `handler` (replacing an earlier one for the type).
    pub fn handler(mut self, job_type: impl Into<String>, handler: impl JobHandler) -> Self {
        self.handlers.insert(job_type.into(), Arc::new(handler));
        self
    }

    /// The same, with a shared handler.
    pub fn shared_handler(
        mut self,
        job_type: impl Into<String>,
        handler: Arc<dyn JobHandler>,
    ) -> Self {
        self.handlers.insert(job_type.into(), handler);
        self
    }

    /// How many jobs run at once (at least 1). Also caps [`WorkerOptions::claim_batch`].
    pub fn concurrency(mut self, slots: usize) -> Self {
        self.concurrency = slots.max(1);
        self
    }

    /// The most jobs one claim takes (at least 1): 1 claims one job per store call.
    pub fn claim_batch(mut self, jobs: usize) -> Self {
        self.claim_batch = jobs.max(1);
        self
    }

    /// How long an attempt may go without a heartbeat before its job is taken up again.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// How often a running attempt renews its lease and reports progress. Keep it well
    /// under the lease; it also bounds how late a cancel is noticed when a notification is
    /// lost.
    pub fn heartbeat_interval(mut self, interval: Duration) -> Self {
        self.heartbeat_interval = interval;
        self
    }

    /// How often an idle worker looks for due jobs without being woken.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// How often expired leases are rescued.
    pub fn rescue_interval(mut self, interval: Duration) -> Self {
        self.rescue_interval = interval;
        self
    }

    /// How often retention purges run.
    pub fn purge_interval(mut self, interval: Duration) -> Self {
        self.purge_interval = interval;
        self
    }

    /// How often the purge pass also sweeps the blob store for blobs nothing names (at the
    /// first pass, then once this long has passed since the last sweep).
    pub fn blob_sweep_interval(mut self, interval: Duration) -> Self {
        self.blob_sweep_interval = interval;
        self
    }

    /// The wait before the first retry of an attempt that returned [`JobError::Retry`];
    /// each further retry waits twice as long, up to an hour.
    pub fn retry_backoff(mut self, backoff: Duration) -> Self {
        self.retry_backoff = backoff;
        self
    }

    /// How many webhook deliveries are in flight at once (default 64); 0 makes none here.
    pub fn webhook_concurrency(mut self, deliveries: usize) -> Self {
        self.webhook_concurrency = deliveries;
        self
    }

    /// Without jobs, the runtime only rescues leases and purges (a process that serves the
    /// API and leaves jobs and webhook deliveries to worker processes can still keep the
    /// tables tidy).
    pub fn without_jobs(mut self) -> Self {
        self.run_jobs = false;
        self
    }

    /// The job types this runtime runs.
    pub fn job_types(&self) -> Vec<String> {
        self.handlers.keys().cloned().collect()
    }

    fn retry_delay(&self, attempts: u32) -> Duration {
        let doublings = attempts.saturating_sub(1).min(16);
        self.retry_backoff
            .saturating_mul(1 << doublings)
            .min(Duration::from_secs(3600))
    }
}

/// What [`WorkerHandle::shutdown`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Running jobs that finished within the grace.
    pub finished_in_grace: usize,
    /// Running jobs given back to the queue when the grace ran out.
    pub released: usize,
}

/// The running runtime. Dropping it without [`WorkerHandle::shutdown`] stops claiming and
/// aborts running jobs; their leases expire and other workers take them up.
#[derive(Debug)]
pub struct WorkerHandle {
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    claimer: Option<JoinHandle<()>>,
    background: Vec<JoinHandle<()>>,
    completer: Option<JoinHandle<()>>,
}

/// State shared by the runtime's tasks.
struct Shared {
    /// The queue: all the runtime needs of the store, with the guards for the purges.
    queue: Arc<dyn QueueStore>,
    guards: Arc<dyn GuardStore>,
    xf: Xf,
    options: WorkerOptions,
    slots: Arc<Semaphore>,
    running: Mutex<HashMap<JobId, watch::Sender<Option<Stop>>>>,
    wake: Notify,
    /// Wakes the webhook dispatcher when events are written.
    webhook_wake: Arc<Notify>,
    /// The last claim came back short: wait for a wake-up before the next.
    drained: AtomicBool,
    finishes: Mutex<Option<mpsc::UnboundedSender<(Finish, OwnedSemaphorePermit)>>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("options", &self.options)
            .field("running", &self.running().len())
            .field("free_slots", &self.slots.available_permits())
            .finish_non_exhaustive()
    }
}

impl Shared {
    fn now(&self) -> Timestamp {
        self.xf.now()
    }

    fn lease_end(&self, now: Timestamp) -> Timestamp {
        now.plus(chrono::Duration::from_std(self.options.lease).unwrap_or(chrono::Duration::MAX))
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<JobId, watch::Sender<Option<Stop>>>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Closes the completer's channel: it writes what is waiting, then ends.
    fn close_completer(&self) {
        self.finishes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
    }

    /// Tells one running attempt to stop.
    fn stop_job(&self, id: &JobId, stop: Stop) {
        if let Some(sender) = self.running().get(id) {
            sender.send_replace(Some(stop));
        }
    }
}

impl Xf {
    /// Starts the background runtime on the current Tokio runtime. See [`crate::runtime`].
    /// Unless the options name a handler for `seo-scan` (or run no jobs), the facade's own
    /// [`scan handler`](Xf::scan_handler) runs scans.
    pub fn spawn_workers(&self, mut options: WorkerOptions) -> WorkerHandle {
        if options.run_jobs && !options.handlers.contains_key(crate::model::SEO_SCAN) {
            if let Some(scans) = self.scan_handler() {
                options = options.handler(crate::model::SEO_SCAN, scans);
            }
        }
        let publish = crate::media::publish::MEDIA_PUBLISH;
        if options.run_jobs && !options.handlers.contains_key(publish) {
            options = options.handler(publish, self.publish_handler());
        }
        let (stop, stopped) = watch::channel(false);
        let (finish_tx, finish_rx) = mpsc::unbounded_channel();
        let store: Arc<dyn Store> = Arc::clone(self.store());
        let shared = Arc::new(Shared {
            queue: store.clone(),
            guards: store,
            xf: self.clone(),
            slots: Arc::new(Semaphore::new(options.concurrency)),
            options,
            running: Mutex::new(HashMap::new()),
            wake: Notify::new(),
            webhook_wake: Arc::new(Notify::new()),
            drained: AtomicBool::new(false),
            finishes: Mutex::new(Some(finish_tx)),
        });
        let runs_jobs = shared.options.run_jobs && !shared.options.handlers.is_empty();
        let mut background = vec![
            tokio::spawn(rescue_loop(Arc::clone(&shared), stopped.clone())),
            tokio::spawn(purge_loop(Arc::clone(&shared), stopped.clone())),
        ];
        let transport = self.webhook_transport().cloned();
        let delivers = shared.options.run_jobs && shared.options.webhook_concurrency > 0;
        if let Some(transport) = transport.filter(|_| delivers) {
            let options = EngineOptions {
                concurrency: shared.options.webhook_concurrency,
                poll_interval: shared.options.poll_interval,
            };
            background.extend(crate::webhooks::engine::spawn(
                self.clone(),
                transport,
                options,
                Arc::clone(&shared.webhook_wake),
                stopped.clone(),
            ));
        }
        if runs_jobs || delivers {
            background.push(tokio::spawn(listen_loop(
                Arc::clone(&shared),
                stopped.clone(),
            )));
        }
        let claimer =
            runs_jobs.then(|| tokio::spawn(claim_loop(Arc::clone(&shared), stopped.clone())));
        let completer = Some(tokio::spawn(complete_loop(Arc::clone(&shared), finish_rx)));
        tracing::info!(
            job_types = ?shared.options.job_types(),
            concurrency = shared.options.concurrency,
            runs_jobs,
            delivers,
            "background runtime started"
        );
        WorkerHandle {
            shared,
            stop,
            claimer,
            background,
            completer,
        }
    }
}

impl WorkerHandle {
    /// Stops claiming, lets running jobs finish within `grace`, gives the rest back to the
    /// queue (`pending`, their attempt not counted), writes every outcome, and stops.
    pub async fn shutdown(mut self, grace: Duration) -> ShutdownReport {
        self.stop.send_replace(true);
        if let Some(claimer) = self.claimer.take() {
            let _ = claimer.await;
        }
        let concurrency = u32::try_from(self.shared.options.concurrency).unwrap_or(u32::MAX);
        let running_at_start = self.shared.running().len();
        let all_slots = Arc::clone(&self.shared.slots);
        // Every slot free again means every job finished and its outcome was written.
        let drained = tokio::time::timeout(grace, all_slots.acquire_many(concurrency)).await;
        let mut report = ShutdownReport::default();
        if drained.is_err() {
            let ids: Vec<JobId> = self.shared.running().keys().cloned().collect();
            report.released = ids.len();
            for id in &ids {
                self.shared.stop_job(id, Stop::Release);
            }
            // Releases take one store call each; the slots come back when they are done.
            let _ = all_slots.acquire_many(concurrency).await;
        }
        report.finished_in_grace = running_at_start.saturating_sub(report.released);
        // No more outcomes can come: close the completer's channel and let it drain.
        self.shared.close_completer();
        if let Some(completer) = self.completer.take() {
            let _ = completer.await;
        }
        for task in self.background.drain(..) {
            let _ = task.await;
        }
        tracing::info!(?report, "background runtime stopped");
        report
    }
}

impl Drop for WorkerHandle {
    fn drop(&mut self) {
        self.stop.send_replace(true);
        // The completer writes what is waiting, then ends.
        self.shared.close_completer();
        // The ids are copied out first: the lock must be free again for `stop_job`, and a
        // `for` loop would hold its iterator expression's guard until the loop ends.
        let running: Vec<JobId> = self.shared.running().keys().cloned().collect();
        for id in running {
            self.shared.stop_job(&id, Stop::Abandon);
        }
    }
}

/// Waits for `stopped` to turn true.
async fn until_stopped(stopped: &mut watch::Receiver<bool>) {
    let _ = stopped.wait_for(|stop| *stop).await;
}

/// Claims jobs whenever slots are free, and starts them. Claims of up to
/// [`WorkerOptions::claim_batch`] jobs each run side by side, as many at once as the slots
/// allow (`concurrency / claim_batch`), so one-job claims are not held to one database round
/// trip at a time. A claim that comes back short means the queue is drained: no new claim is
/// made until a wake-up or the poll interval.
async fn claim_loop(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let job_types = Arc::new(shared.options.job_types());
    let batch = shared.options.claim_batch.min(shared.options.concurrency);
    let in_flight = (shared.options.concurrency / batch).max(1);
    let mut claims = tokio::task::JoinSet::new();
    loop {
        if claims.len() >= in_flight {
            tokio::select! {
                _ = claims.join_next() => continue,
                _ = until_stopped(&mut stopped) => break,
            }
        }
        let first = tokio::select! {
            permit = Arc::clone(&shared.slots).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            Some(_) = claims.join_next(), if !claims.is_empty() => continue,
            _ = until_stopped(&mut stopped) => break,
        };
        let mut permits = vec![first];
        while permits.len() < batch {
            match Arc::clone(&shared.slots).try_acquire_owned() {
                Ok(permit) => permits.push(permit),
                Err(_) => break,
            }
        }
        if shared.drained.swap(false, Ordering::AcqRel) {
            tokio::select! {
                _ = shared.wake.notified() => {}
                _ = tokio::time::sleep(shared.options.poll_interval) => {}
                _ = until_stopped(&mut stopped) => break,
            }
        }
        claims.spawn(claim(Arc::clone(&shared), Arc::clone(&job_types), permits));
    }
    // Claims in flight finish (starting what they took) before the shutdown waits for jobs.
    while claims.join_next().await.is_some() {}
}

/// One claim: takes up to `permits.len()` jobs and starts each with one of the permits.
async fn claim(
    shared: Arc<Shared>,
    job_types: Arc<Vec<String>>,
    mut permits: Vec<OwnedSemaphorePermit>,
) {
    let now = shared.now();
    let request = ClaimRequest {
        job_types: job_types.to_vec(),
        limit: permits.len(),
        now,
        lease_expires_at: shared.lease_end(now),
    };
    let claimed = match shared.queue.claim_jobs(&request).await {
        Ok(claimed) => claimed,
        Err(error) => {
            tracing::warn!(%error, "claiming jobs failed; retrying after the poll interval");
            Vec::new()
        }
    };
    if claimed.len() < permits.len() {
        shared.drained.store(true, Ordering::Release);
    }
    for job in claimed {
        let Some(permit) = permits.pop() else { break };
        start_job(&shared, job, permit);
    }
}

/// Registers a claimed job as running and spawns its attempt.
fn start_job(shared: &Arc<Shared>, claimed: ClaimedJob, permit: OwnedSemaphorePermit) {
    let (stop_tx, stop_rx) = watch::channel(None);
    shared.running().insert(claimed.job.id.clone(), stop_tx);
    tokio::spawn(run_attempt(Arc::clone(shared), claimed, stop_rx, permit));
}

/// Runs one attempt: the handler, its heartbeats, and its end.
async fn run_attempt(
    shared: Arc<Shared>,
    claimed: ClaimedJob,
    mut stop: watch::Receiver<Option<Stop>>,
    permit: OwnedSemaphorePermit,
) {
    let ClaimedJob { job, attempt } = claimed;
    let Some(handler) = shared.options.handlers.get(&job.job_type).cloned() else {
        // Claims name only the handled types, so this is a store bug; give the job back.
        tracing::error!(job_id = %job.id, job_type = %job.job_type, "claimed a job of a type without handler");
        release(&shared, &attempt).await;
        shared.running().remove(&job.id);
        return;
    };
    let progress = Arc::new(AtomicU8::new(job.progress));
    let settled = Arc::new(AtomicBool::new(false));
    let attempts = job.attempts;
    let context = JobContext {
        job,
        attempt: attempt.clone(),
        progress: Arc::clone(&progress),
        stop: stop.clone(),
        settled: Arc::clone(&settled),
    };
    let mut task = tokio::spawn(async move { handler.run(context).await });
    let mut beat = tokio::time::interval(shared.options.heartbeat_interval);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    beat.tick().await;
    let outcome = loop {
        tokio::select! {
            result = &mut task => break Some(outcome_of(&shared, result, attempts)),
            _ = beat.tick() => {
                let now = shared.now();
                let sent = Some(progress.load(Ordering::Relaxed));
                match shared.queue.heartbeat(&attempt, sent, shared.lease_end(now)).await {
                    Ok(AttemptState::Running) => {}
                    Ok(state) => {
                        tracing::info!(job_id = %attempt.job_id, ?state, "attempt stopped by its heartbeat");
                        task.abort();
                        break None;
                    }
                    Err(error) => tracing::warn!(job_id = %attempt.job_id, %error, "heartbeat failed"),
                }
            }
            changed = stop.changed() => {
                let reason = if changed.is_ok() { *stop.borrow() } else { Some(Stop::Abandon) };
                match reason {
                    Some(Stop::Abandon) => {
                        task.abort();
                        break None;
                    }
                    Some(Stop::Release) => {
                        task.abort();
                        release(&shared, &attempt).await;
                        break None;
                    }
                    None => {}
                }
            }
        }
    };
    shared.running().remove(&attempt.job_id);
    let outcome = outcome.filter(|_| !settled.load(Ordering::Acquire));
    if let Some(outcome) = outcome {
        let sender = shared
            .finishes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(sender) = sender {
            let _ = sender.send((Finish { attempt, outcome }, permit));
        }
    }
}

/// The outcome of a finished handler task.
fn outcome_of(
    shared: &Shared,
    result: Result<Result<Value, JobError>, tokio::task::JoinError>,
    attempts: u32,
) -> AttemptOutcome {
    match result {
        Ok(Ok(value)) => AttemptOutcome::Completed(value),
        Ok(Err(JobError::Fail(error))) => AttemptOutcome::Failed(error),
        Ok(Err(error @ (JobError::Retry(_) | JobError::RetryAfter { .. }))) => {
            let mut delay = shared.options.retry_delay(attempts);
            let error = match error {
                JobError::RetryAfter { error, after } => {
                    delay = delay.max(after);
                    error
                }
                JobError::Retry(error) | JobError::Fail(error) => error,
            };
            AttemptOutcome::Retry {
                error,
                run_at: shared
                    .now()
                    .plus(chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::MAX)),
            }
        }
        Err(join) if join.is_panic() => {
            AttemptOutcome::Failed("the job's handler panicked; see the worker's log".to_owned())
        }
        Err(_) => AttemptOutcome::Failed("the job's handler was aborted".to_owned()),
    }
}

/// Gives an attempt back to the queue.
async fn release(shared: &Shared, attempt: &Attempt) {
    match shared.queue.release_job(attempt, shared.now()).await {
        Ok(true) => tracing::info!(job_id = %attempt.job_id, "job released to the queue"),
        Ok(false) => {}
        Err(error) => {
            // The lease runs out and the rescue takes the job up.
            tracing::warn!(job_id = %attempt.job_id, %error, "releasing the job failed")
        }
    }
}

/// Writes outcomes in batches: whatever is waiting when the previous write returns.
async fn complete_loop(
    shared: Arc<Shared>,
    mut outcomes: mpsc::UnboundedReceiver<(Finish, OwnedSemaphorePermit)>,
) {
    const MAX_BATCH: usize = 1_000;
    while let Some(batch) = next_batch(&mut outcomes, MAX_BATCH).await {
        let (finishes, permits): (Vec<Finish>, Vec<OwnedSemaphorePermit>) =
            batch.into_iter().unzip();
        write_outcomes(&shared, &finishes).await;
        drop(permits);
    }
}

/// The next batch of a queue: the first item, waited for, and whatever else is waiting then,
/// up to `max` in all; `None` once the queue is closed and empty.
pub(crate) async fn next_batch<T>(
    queue: &mut mpsc::UnboundedReceiver<T>,
    max: usize,
) -> Option<Vec<T>> {
    let mut batch = vec![queue.recv().await?];
    while batch.len() < max {
        match queue.try_recv() {
            Ok(next) => batch.push(next),
            Err(_) => break,
        }
    }
    Some(batch)
}

/// Runs a store write until it succeeds, retrying a failed one (`what` names it in the log)
/// after 50 ms, then twice as long each time up to 2 s, for as long as `limit` allows; the
/// last error when that runs out.
pub(crate) async fn write_with_retries<T, F, Fut>(
    limit: Duration,
    what: &str,
    mut write: F,
) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = StoreResult<T>>,
{
    let give_up = tokio::time::Instant::now() + limit;
    let mut pause = Duration::from_millis(50);
    loop {
        match write().await {
            Ok(written) => return Ok(written),
            Err(error) if tokio::time::Instant::now() < give_up => {
                tracing::warn!(%error, "{what} failed; retrying");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            Err(error) => return Err(error),
        }
    }
}

/// Writes a batch of outcomes, retrying while the store is unavailable for up to half a
/// lease; after that the leases run out and the jobs are taken up again.
async fn write_outcomes(shared: &Shared, finishes: &[Finish]) {
    let written = write_with_retries(shared.options.lease / 2, "writing job outcomes", || {
        shared.queue.finish_jobs(finishes, shared.now())
    })
    .await;
    match written {
        Ok(reached) => {
            for (finish, status) in finishes.iter().zip(reached) {
                match status {
                    Some(status) => {
                        tracing::debug!(job_id = %finish.attempt.job_id, status = status.as_str(), "attempt finished")
                    }
                    None => {
                        tracing::info!(job_id = %finish.attempt.job_id, "outcome dropped: the attempt was no longer current")
                    }
                }
            }
        }
        Err(error) => {
            tracing::error!(%error, jobs = finishes.len(), "giving up on job outcomes; their leases will expire and the jobs run again");
        }
    }
}

/// Forwards the store's signals: wake-ups to the claimer, cancels to running attempts.
async fn listen_loop(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    loop {
        let mut listener = tokio::select! {
            listener = shared.queue.listen() => match listener {
                Ok(listener) => listener,
                Err(error) => {
                    tracing::warn!(%error, "cannot listen for queue signals; polling meanwhile");
                    tokio::select! {
                        _ = tokio::time::sleep(shared.options.poll_interval) => continue,
                        _ = until_stopped(&mut stopped) => return,
                    }
                }
            },
            _ = until_stopped(&mut stopped) => return,
        };
        // A wake-up for the signals missed while not listening.
        shared.wake.notify_one();
        shared.webhook_wake.notify_one();
        loop {
            tokio::select! {
                signal = listener.next() => match signal {
                    Ok(QueueSignal::JobsReady) => shared.wake.notify_one(),
                    Ok(QueueSignal::CancelRequested(id)) => shared.stop_job(&id, Stop::Abandon),
                    Ok(QueueSignal::EventsWritten) => shared.webhook_wake.notify_one(),
                    Err(error) => {
                        tracing::warn!(%error, "queue signals interrupted; listening again");
                        break;
                    }
                },
                _ = until_stopped(&mut stopped) => return,
            }
        }
    }
}

/// Takes up jobs whose lease expired.
async fn rescue_loop(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    loop {
        match shared.queue.rescue_expired(shared.now()).await {
            Ok(report) if report.requeued + report.failed > 0 => {
                tracing::info!(
                    requeued = report.requeued,
                    failed = report.failed,
                    "rescued jobs with expired leases"
                );
                shared.wake.notify_one();
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "rescuing expired leases failed"),
        }
        tokio::select! {
            _ = tokio::time::sleep(shared.options.rescue_interval) => {}
            _ = until_stopped(&mut stopped) => return,
        }
    }
}

/// How long rate-limit windows are kept: the longest window (a day) and a day of margin.
const RATE_WINDOW_RETENTION: chrono::Duration = chrono::Duration::days(2);

/// How old a blob must be before the sweep may delete it for nothing naming it: far longer
/// than the moment between finishing a blob and recording it.
const BLOB_SWEEP_GRACE: Duration = Duration::from_secs(3600);

/// Expired resumable uploads deleted per purge pass (with their chunks' blobs).
const PURGE_BATCH: usize = 1_000;

/// Deletes rate-limit windows, idempotency records, old delivery log rows and expired
/// resumable uploads.
async fn purge_loop(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let mut last_sweep: Option<tokio::time::Instant> = None;
    loop {
        let now = shared.now();
        let windows_before = now.plus(-RATE_WINDOW_RETENTION);
        let idempotency_before = now.plus(chrono::Duration::hours(-IDEMPOTENCY_TTL_HOURS));
        match shared
            .guards
            .purge_expired(windows_before, idempotency_before)
            .await
        {
            Ok(0) => {}
            Ok(rows) => tracing::info!(
                rows,
                "purged expired rate-limit windows and idempotency records"
            ),
            Err(error) => tracing::warn!(%error, "retention purge failed"),
        }
        match shared
            .xf
            .store()
            .purge_deliveries(now.plus(-crate::webhooks::LOG_RETENTION))
            .await
        {
            Ok(0) => {}
            Ok(rows) => tracing::info!(rows, "purged webhook delivery log rows older than 30 days"),
            Err(error) => tracing::warn!(%error, "purging the webhook delivery log failed"),
        }
        match shared.xf.purge_expired_uploads(PURGE_BATCH).await {
            Ok(0) => {}
            Ok(uploads) => tracing::info!(uploads, "purged resumable uploads older than 24 hours"),
            Err(error) => tracing::warn!(%error, "purging expired resumable uploads failed"),
        }
        if last_sweep.is_none_or(|at| at.elapsed() >= shared.options.blob_sweep_interval) {
            last_sweep = Some(tokio::time::Instant::now());
            match shared.xf.sweep_blobs(BLOB_SWEEP_GRACE).await {
                Ok(report) if report.orphans + report.partial_files == 0 => {}
                Ok(report) => tracing::info!(?report, "deleted blobs that nothing names"),
                Err(error) => tracing::warn!(%error, "sweeping the blob store failed"),
            }
        } else {
            match shared.xf.clean_partial_blobs().await {
                Ok(0) => {}
                Ok(files) => tracing::info!(files, "removed the partial files of dead writers"),
                Err(error) => tracing::warn!(%error, "cleaning partial blob files failed"),
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(shared.options.purge_interval) => {}
            _ = until_stopped(&mut stopped) => return,
        }
    }
}
