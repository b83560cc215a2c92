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
//!   An attempt told to stop (cancelled, released, or its worker's handle dropped) begins no
//!   heartbeat after it sees the stop: its lease ends when a heartbeat from before the stop
//!   said, and a rescue can take it up.
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
//!
//! [`Xf::spawn_workers`]: crate::Xf::spawn_workers
//! [`QueueSignal::JobsReady`]: crate::store::QueueSignal::JobsReady
//! [`AttemptState::Cancelled`]: crate::store::AttemptState::Cancelled
//! [`AttemptState::Lost`]: crate::store::AttemptState::Lost
//! [`QueueSignal::CancelRequested`]: crate::store::QueueSignal::CancelRequested
//! [`QueueSignal::EventsWritten`]: crate::store::QueueSignal::EventsWritten

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

use crate::store::QueueStore;
use crate::time::{Clock, Timestamp};

mod engine;
mod job;

pub use engine::WorkerHandle;
pub(crate) use engine::{hand_over_slot, next_batch, start, unwritten_places, write_with_retries};
pub use job::{JobContext, JobError, JobHandler, INTERNAL_FAILURE};

/// Upkeep the runtime runs on every purge pass: retention purges, the blob sweep. The layer
/// above the runtime says what it is; it logs what it did.
#[async_trait]
pub(crate) trait Upkeep: Send + Sync + std::fmt::Debug + 'static {
    /// One pass, at `now`.
    async fn run(&self, now: Timestamp);
}

/// What a service started beside the jobs gets from the runtime.
pub(crate) struct Signals {
    /// Turns true when the runtime stops; the service's tasks then end.
    pub stopped: watch::Receiver<bool>,
    /// Notified when the store says events were written.
    pub events_written: Arc<Notify>,
}

/// Background work that runs beside the jobs (the webhook engine); its tasks are awaited when
/// the runtime shuts down.
pub(crate) type Service = Box<dyn FnOnce(Signals) -> Vec<JoinHandle<()>> + Send>;

/// What the runtime runs, besides the handlers in its options.
pub(crate) struct Parts {
    /// The queue.
    pub queue: Arc<dyn QueueStore>,
    /// The clock leases and retries are measured by.
    pub clock: Arc<dyn Clock>,
    /// The purge pass.
    pub upkeep: Box<dyn Upkeep>,
    /// Started with the runtime.
    pub services: Vec<Service>,
    /// What job attempts and rescues are recorded in.
    pub metrics: crate::metrics::Metrics,
}

/// The runtime's settings. [`WorkerOptions::new`] has the defaults.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    pub(crate) handlers: BTreeMap<String, Arc<dyn JobHandler>>,
    concurrency: usize,
    claim_batch: usize,
    lease: Duration,
    heartbeat_interval: Duration,
    pub(crate) poll_interval: Duration,
    rescue_interval: Duration,
    purge_interval: Duration,
    pub(crate) blob_sweep_interval: Duration,
    pub(crate) schedule_interval: Duration,
    retry_backoff: Duration,
    pub(crate) run_jobs: bool,
    pub(crate) webhook_concurrency: usize,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkerOptions {
    /// No handlers; 8 slots; claims of up to 8; a 30 s lease renewed every second; polls
    /// every second; rescues every 5 s; purges every 10 minutes; sweeps blobs every hour;
    /// looks for due scheduled scans every 30 s; retries after 5 s, doubling; 64 webhook
    /// deliveries at once.
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
            schedule_interval: Duration::from_secs(30),
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

    /// How often the runtime looks for scheduled scans whose slot is due (a slot runs at
    /// most this late). Every instance looks; the store lets one claim each slot.
    pub fn schedule_interval(mut self, interval: Duration) -> Self {
        self.schedule_interval = interval.max(Duration::from_millis(10));
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
