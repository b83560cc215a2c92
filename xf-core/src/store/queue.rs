//! The job engine's side of the jobs: claiming, heartbeats, finishing, releasing and rescuing.
//!
//! A claim starts an *attempt* and hands it a fresh [`AttemptToken`]. Every later write of the
//! attempt (heartbeat, finish, release) names the token and is refused unless the job is
//! still `processing` under that very token. So a worker whose lease ran out, and whose job
//! another worker has since taken up, can never overwrite the newer attempt's outcome; nor
//! can a worker finish a job that was cancelled under it.

use async_trait::async_trait;
use serde_json::Value;
use uuid::Uuid;

use super::StoreResult;
use crate::ids::JobId;
use crate::model::{JobRecord, JobStatus};
use crate::time::Timestamp;

/// Names one attempt of a job; a claim makes a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AttemptToken(Uuid);

impl AttemptToken {
    /// A new random token.
    pub fn new() -> Self {
        AttemptToken(Uuid::new_v4())
    }

    /// The token as a UUID (how a backend stores it).
    pub fn as_uuid(&self) -> Uuid {
        self.0
    }

    /// A token read back from a backend.
    pub fn from_uuid(uuid: Uuid) -> Self {
        AttemptToken(uuid)
    }
}

impl Default for AttemptToken {
    fn default() -> Self {
        Self::new()
    }
}

/// One attempt of one job: what every write of a worker names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The job.
    pub job_id: JobId,
    /// The attempt's token.
    pub token: AttemptToken,
}

/// What a worker asks for when it claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRequest {
    /// Only jobs of these types (those the worker has handlers for).
    pub job_types: Vec<String>,
    /// At most this many: the worker's free slots.
    pub limit: usize,
    /// Now: only jobs whose `run_at` is not after it are due.
    pub now: Timestamp,
    /// The lease of the new attempts.
    pub lease_expires_at: Timestamp,
}

/// A job a worker now runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedJob {
    /// The job, `processing`, with its attempt counted.
    pub job: JobRecord,
    /// The attempt to name in every write.
    pub attempt: Attempt,
}

/// What a heartbeat learned.
///
/// Not `#[non_exhaustive]`: every store (or edge) that is given one matches on it, and a
/// variant added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptState {
    /// The attempt is current; its lease was extended and its progress recorded.
    Running,
    /// The job was cancelled: stop, write nothing more.
    Cancelled,
    /// The attempt is no longer the job's current one (its lease ran out and it was taken up
    /// again or failed, or the job is gone): stop, write nothing more.
    Lost,
}

/// How an attempt ended.
///
/// Not `#[non_exhaustive]`: every store (or edge) that is given one matches on it, and a
/// variant added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// The job is done: `completed`, progress 100, with this result, and `job.completed`.
    Completed(Value),
    /// The job failed for good: `failed` with this error, and `job.failed`.
    Failed(String),
    /// This attempt failed but another may succeed: back to `pending`, due at `run_at`,
    /// unless the attempts are used up, which fails the job as [`AttemptOutcome::Failed`].
    Retry {
        /// Why the attempt failed.
        error: String,
        /// When to try again.
        run_at: Timestamp,
    },
    /// The attempt failed for a reason of xf's own (its store, a bug), not the job's: as
    /// [`AttemptOutcome::Retry`] with `retry_at`, as [`AttemptOutcome::Failed`] without. A
    /// job that fails this way gives back the scan its queuing counted in the organization's
    /// monthly `scans` ([`JobStore::insert_job_counted`](super::JobStore::insert_job_counted)),
    /// as does a job the rescue fails once its attempts are used up (its worker died).
    Internal {
        /// What the job shows: words for the customer, never the cause's text (which the
        /// runtime logs with the job's id).
        error: String,
        /// When to try again; `None` to fail now.
        retry_at: Option<Timestamp>,
    },
}

/// One finished attempt, for [`QueueStore::finish_jobs`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finish {
    /// The attempt.
    pub attempt: Attempt,
    /// How it ended.
    pub outcome: AttemptOutcome,
}

/// What [`QueueStore::rescue_expired`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RescueReport {
    /// Jobs put back to `pending` for another attempt.
    pub requeued: u64,
    /// Jobs failed because their attempts were used up.
    pub failed: u64,
}

/// A wake-up call to workers.
///
/// Not `#[non_exhaustive]`: every store (or edge) that is given one matches on it, and a
/// variant added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueSignal {
    /// New jobs may be due: claim.
    JobsReady,
    /// This job was cancelled: stop it if it runs here.
    CancelRequested(JobId),
    /// Events were written to the outbox: fan them out to webhooks.
    EventsWritten,
}

/// Receives [`QueueSignal`]s. Signals are hints: one may be lost (a dropped connection), so
/// workers also poll.
#[async_trait]
pub trait QueueListener: Send {
    /// The next signal; an error when the channel broke (listen again).
    async fn next(&mut self) -> StoreResult<QueueSignal>;
}

/// [`lease_expired_error`] with `{max}` for the number of attempts, for a backend that
/// writes the message itself.
pub const LEASE_EXPIRED_ERROR: &str = "the worker running this job stopped responding (its \
     lease expired) and all {max} attempts are used up";

/// The error of a rescued job whose attempts are used up.
pub fn lease_expired_error(max_attempts: u32) -> String {
    LEASE_EXPIRED_ERROR.replace("{max}", &max_attempts.to_string())
}

/// Jobs, the engine's side.
#[async_trait]
pub trait QueueStore: Send + Sync {
    /// Claims up to `limit` due pending jobs of the given types, oldest `run_at` first, in
    /// one atomic step: each becomes `processing` with one more attempt, a new token and the
    /// given lease, and `startedAt` set if it was not. Concurrent claims never return the
    /// same job.
    async fn claim_jobs(&self, request: &ClaimRequest) -> StoreResult<Vec<ClaimedJob>>;

    /// Extends the attempt's lease and records its progress (if given; progress never goes
    /// down and stays within 100), if the attempt is current.
    async fn heartbeat(
        &self,
        attempt: &Attempt,
        progress: Option<u8>,
        lease_expires_at: Timestamp,
    ) -> StoreResult<AttemptState>;

    /// Records how attempts ended, each atomically with its outbox event. One item per
    /// attempt; the answer says, in the same order, the state each job reached, or `None`
    /// where the attempt was not current (nothing was written for it).
    async fn finish_jobs(
        &self,
        finishes: &[Finish],
        now: Timestamp,
    ) -> StoreResult<Vec<Option<JobStatus>>>;

    /// Gives a current attempt back, unfinished (a worker shutting down): the job is
    /// `pending` again and due now, and the attempt does not count. `false` if the attempt
    /// was not current.
    async fn release_job(&self, attempt: &Attempt, now: Timestamp) -> StoreResult<bool>;

    /// Takes up jobs whose lease expired before `now`: back to `pending` while attempts are
    /// left, otherwise `failed` with [`lease_expired_error`] and `job.failed`.
    async fn rescue_expired(&self, now: Timestamp) -> StoreResult<RescueReport>;

    /// Starts listening for [`QueueSignal`]s.
    async fn listen(&self) -> StoreResult<Box<dyn QueueListener>>;
}
