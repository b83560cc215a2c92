//! The engine: the tasks that claim, run and finish jobs, rescue leases and run the upkeep.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

use super::job::{Stop, INTERNAL_FAILURE};
use super::{JobContext, JobError, Parts, ShutdownReport, Signals, Upkeep, WorkerOptions};
use tracing::Instrument;

use crate::ids::JobId;
use crate::metrics::{JobOutcome, Metrics};
use crate::store::{
    Attempt, AttemptOutcome, AttemptState, ClaimRequest, ClaimedJob, Finish, QueueSignal,
    QueueStore, StoreResult,
};
use crate::time::{Clock, Timestamp};

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
    /// The queue: all the runtime needs of the store.
    queue: Arc<dyn QueueStore>,
    clock: Arc<dyn Clock>,
    upkeep: Box<dyn Upkeep>,
    metrics: Metrics,
    options: WorkerOptions,
    /// One per running attempt (`WorkerOptions::concurrency`).
    slots: Arc<Semaphore>,
    /// One per outcome queued for the completer and not yet written ([`UNWRITTEN`], or the
    /// concurrency if larger): a finished attempt gives its slot back once its outcome is
    /// queued, so the next claim does not wait for the write, and this bounds what waits.
    unwritten: Arc<Semaphore>,
    running: Mutex<HashMap<JobId, watch::Sender<Option<Stop>>>>,
    wake: Notify,
    /// Wakes the services when events are written.
    events_written: Arc<Notify>,
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
        self.clock.now()
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

/// The most outcomes that wait for their writer, unless the concurrency is larger.
pub(crate) const UNWRITTEN: usize = 1_000;

/// Places among the unwritten outcomes for a pool of `concurrency` slots (see
/// [`hand_over_slot`]).
pub(crate) fn unwritten_places(concurrency: usize) -> Arc<Semaphore> {
    Arc::new(Semaphore::new(concurrency.max(UNWRITTEN)))
}

/// Trades a finished attempt's slot for a place among the unwritten outcomes, so that the
/// slot can go back as soon as the outcome is queued for its writer and claims overlap with
/// the writes: the place to hold until the outcome is written, and the slot to give back once
/// it is queued. Were `places` ever closed, the slot itself is held until the write.
pub(crate) async fn hand_over_slot(
    places: &Arc<Semaphore>,
    slot: OwnedSemaphorePermit,
) -> (OwnedSemaphorePermit, Option<OwnedSemaphorePermit>) {
    match Arc::clone(places).acquire_owned().await {
        Ok(place) => (place, Some(slot)),
        Err(_) => (slot, None),
    }
}

/// Starts the runtime on the current Tokio runtime: the claimer (when there are handlers and
/// jobs to run), the completer, the rescue and upkeep passes, the listener of the store's
/// signals, and the services.
pub(crate) fn start(parts: Parts, options: WorkerOptions) -> WorkerHandle {
    let Parts {
        queue,
        clock,
        upkeep,
        services,
        metrics,
    } = parts;
    let (stop, stopped) = watch::channel(false);
    let (finish_tx, finish_rx) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared {
        queue,
        clock,
        upkeep,
        metrics,
        slots: Arc::new(Semaphore::new(options.concurrency)),
        unwritten: unwritten_places(options.concurrency),
        options,
        running: Mutex::new(HashMap::new()),
        wake: Notify::new(),
        events_written: Arc::new(Notify::new()),
        drained: AtomicBool::new(false),
        finishes: Mutex::new(Some(finish_tx)),
    });
    let runs_jobs = shared.options.run_jobs && !shared.options.handlers.is_empty();
    let with_services = !services.is_empty();
    let mut background = vec![
        tokio::spawn(rescue_loop(Arc::clone(&shared), stopped.clone())),
        tokio::spawn(upkeep_loop(Arc::clone(&shared), stopped.clone())),
    ];
    for service in services {
        background.extend(service(Signals {
            stopped: stopped.clone(),
            events_written: Arc::clone(&shared.events_written),
        }));
    }
    if runs_jobs || with_services {
        background.push(tokio::spawn(listen_loop(
            Arc::clone(&shared),
            stopped.clone(),
        )));
    }
    let claimer = runs_jobs.then(|| tokio::spawn(claim_loop(Arc::clone(&shared), stopped.clone())));
    let completer = Some(tokio::spawn(complete_loop(Arc::clone(&shared), finish_rx)));
    tracing::info!(
        job_types = ?shared.options.job_types(),
        concurrency = shared.options.concurrency,
        runs_jobs,
        services = with_services,
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

impl WorkerHandle {
    /// Turns true when the runtime starts stopping; closes when the handle is gone.
    pub(crate) fn stopped(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

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
        // Every slot free again means every job finished and its outcome was queued; closing
        // the completer below writes the queue out.
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
///
/// One piece: one attempt's life: the handler's task, its heartbeats, a cancel or a lost lease,
/// and the finish, as one `select!` loop over them.
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
    let last_attempt = attempts >= job.max_attempts;
    let job_type = job.job_type.clone();
    // Whatever the handler logs (and a tracing backend shows) belongs to this attempt.
    let span = tracing::info_span!(
        "job_attempt",
        job_id = %job.id,
        job_type = %job.job_type,
        attempt = attempts,
        organization_id = %job.organization_id,
    );
    let started = std::time::Instant::now();
    let context = JobContext {
        job,
        attempt: attempt.clone(),
        progress: Arc::clone(&progress),
        stop: stop.clone(),
        settled: Arc::clone(&settled),
    };
    let mut task = tokio::spawn(async move { handler.run(context).await }.instrument(span));
    let mut beat = tokio::time::interval(shared.options.heartbeat_interval);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    beat.tick().await;
    let outcome = loop {
        tokio::select! {
            result = &mut task => break Some(outcome_of(&shared, result, attempts, &attempt.job_id)),
            _ = beat.tick() => {
                // The clock is read before the stop signal is looked at. A stop given before the
                // clock last moved is then seen here, and handled on the next turn: an attempt
                // told to stop never stretches its lease with a later clock's time.
                let now = shared.now();
                if stop.borrow().is_some() {
                    continue;
                }
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
    let ran = match &outcome {
        Some(AttemptOutcome::Completed(_)) => JobOutcome::Completed,
        Some(AttemptOutcome::Retry { .. }) if !last_attempt => JobOutcome::Retrying,
        Some(AttemptOutcome::Internal {
            retry_at: Some(_), ..
        }) if !last_attempt => JobOutcome::Retrying,
        Some(_) => JobOutcome::Failed,
        None => JobOutcome::Stopped,
    };
    shared.metrics.job_run(&job_type, ran, started.elapsed());
    let outcome = outcome.filter(|_| !settled.load(Ordering::Acquire));
    if let Some(outcome) = outcome {
        // The slot goes back once the outcome is queued, not before: a shutdown that finds
        // every slot free closes the completer's queue, and an outcome sent after that would
        // be lost.
        let (held, slot) = hand_over_slot(&shared.unwritten, permit).await;
        let sender = shared
            .finishes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(sender) = sender {
            let _ = sender.send((Finish { attempt, outcome }, held));
        }
        drop(slot);
    }
}

/// The outcome of a finished handler task.
fn outcome_of(
    shared: &Shared,
    result: Result<Result<Value, JobError>, tokio::task::JoinError>,
    attempts: u32,
    job_id: &JobId,
) -> AttemptOutcome {
    match result {
        Ok(Ok(value)) => AttemptOutcome::Completed(value),
        Ok(Err(JobError::Fail(error))) => AttemptOutcome::Failed(error),
        Ok(Err(JobError::Internal(cause))) => {
            let cause = crate::error::Chain(cause.as_ref());
            tracing::error!(%job_id, %cause, "the job failed on an error of xf's own");
            AttemptOutcome::Internal {
                error: INTERNAL_FAILURE.to_owned(),
                retry_at: Some(retry_at(shared, shared.options.retry_delay(attempts))),
            }
        }
        Ok(Err(error @ (JobError::Retry(_) | JobError::RetryAfter { .. }))) => {
            let mut delay = shared.options.retry_delay(attempts);
            let error = match error {
                JobError::RetryAfter { error, after } => {
                    delay = delay.max(after);
                    error
                }
                JobError::Retry(error) | JobError::Fail(error) => error,
                JobError::Internal(cause) => cause.to_string(),
            };
            AttemptOutcome::Retry {
                error,
                run_at: retry_at(shared, delay),
            }
        }
        // The panic's message went to the panic hook; this line names the job it failed.
        Err(join) if join.is_panic() => {
            tracing::error!(%job_id, "the job's handler panicked");
            AttemptOutcome::Internal {
                error: INTERNAL_FAILURE.to_owned(),
                retry_at: None,
            }
        }
        Err(_) => AttemptOutcome::Failed("the job's handler was aborted".to_owned()),
    }
}

/// `delay` from now.
fn retry_at(shared: &Shared, delay: Duration) -> crate::time::Timestamp {
    shared
        .now()
        .plus(chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::MAX))
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

/// Writes outcomes in batches: whatever is waiting when the previous write returns; each
/// outcome's place among the unwritten ones is freed once it is written.
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
        shared.events_written.notify_one();
        loop {
            tokio::select! {
                signal = listener.next() => match signal {
                    Ok(QueueSignal::JobsReady) => shared.wake.notify_one(),
                    Ok(QueueSignal::CancelRequested(id)) => shared.stop_job(&id, Stop::Abandon),
                    Ok(QueueSignal::EventsWritten) => shared.events_written.notify_one(),
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
                shared.metrics.jobs_rescued(report.requeued, report.failed);
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

/// Runs the upkeep every purge interval, the first pass at once.
async fn upkeep_loop(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    loop {
        shared.upkeep.run(shared.now()).await;
        tokio::select! {
            _ = tokio::time::sleep(shared.options.purge_interval) => {}
            _ = until_stopped(&mut stopped) => return,
        }
    }
}
