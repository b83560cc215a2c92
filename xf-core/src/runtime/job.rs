//! The contract between the runtime and the handler of a job type.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::watch;

use crate::model::JobRecord;
use crate::store::Attempt;

/// How an attempt failed, as its handler says.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// Worth another attempt (a timeout, an unavailable dependency): the job goes back to
    /// the queue after a backoff, unless its attempts are used up.
    #[error("{0}")]
    Retry(String),
    /// Hopeless (bad input): the job fails now, with this message as its `error`.
    #[error("{0}")]
    Fail(String),
    /// A failure of xf's own (its store failed, say), not of the job: retried as
    /// [`JobError::Retry`]. The cause is logged at `error` with the job's id; the job shows
    /// [`INTERNAL_FAILURE`] instead, and if it fails so for good, the scan its queuing
    /// counted against the organization's quota is given back. The cause keeps its sources
    /// (the store's error, and the driver's under it) for that log line.
    #[error("{0}")]
    Internal(crate::error::BoxError),
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

/// The `error` a job shows after a failure of xf's own: what happened, in words a customer
/// can act on; the cause is in the log under the job's id.
pub const INTERNAL_FAILURE: &str = "xf failed on its side while running this job, not because \
     of anything the job was given; the cause is logged under this job's id for the operator. \
     A job that fails so is not counted against the organization's scansPerMonth";

/// What a handler gets: the job, and the means to report progress and learn of a cancel.
#[derive(Debug)]
pub struct JobContext {
    pub(super) job: JobRecord,
    pub(super) attempt: Attempt,
    pub(super) progress: Arc<AtomicU8>,
    pub(super) stop: watch::Receiver<Option<Stop>>,
    pub(super) settled: Arc<AtomicBool>,
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
pub(super) enum Stop {
    /// The job was cancelled (or its attempt lost): write nothing.
    Abandon,
    /// The worker shuts down: give the job back.
    Release,
}
