//! Jobs as the API sees them: queueing, reading, listing, counting and cancelling.
//!
//! The engine's side (claiming, heartbeats, finishing) is [`QueueStore`](super::QueueStore).

use async_trait::async_trait;

use super::{PageRequest, StoreResult};
use crate::ids::{JobId, OrganizationId, PropertyId};
use crate::model::{JobCounts, JobRecord, JobStatus};
use crate::time::Timestamp;
use crate::StoreError;

/// Refuses to insert a job that is not new: the queue's invariants (a lease exactly while
/// processing, an event for each final state) start from a pending job. Backends call it in
/// [`JobStore::insert_job_counted`] and [`JobStore::insert_jobs`] before writing anything.
pub fn check_new_job(job: &JobRecord) -> StoreResult<()> {
    if job.status == JobStatus::Pending {
        Ok(())
    } else {
        Err(StoreError::internal(format!(
            "job {} must be inserted pending, not {}",
            job.id,
            job.status.as_str()
        )))
    }
}

/// Filters of `GET /jobs`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobFilter {
    /// Only jobs in this state.
    pub status: Option<JobStatus>,
    /// Only jobs of this property.
    pub property_id: Option<PropertyId>,
    /// Only jobs of this type.
    pub job_type: Option<String>,
}

/// The outcome of [`JobStore::cancel_job`].
///
/// Not `#[non_exhaustive]`: every store (or edge) that is given one matches on it, and a
/// variant added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The job was pending or processing and is now cancelled.
    Cancelled(JobRecord),
    /// The job had already finished; it is returned unchanged.
    NotCancellable(JobRecord),
    /// No job with that id.
    NotFound,
}

/// Jobs, the API's side.
#[async_trait]
pub trait JobStore: Send + Sync {
    /// Inserts a pending job and counts it in the organization's monthly `scans` meter,
    /// unless the meter for `month` already reached `scans_limit`: then nothing is written
    /// and it fails with [`StoreError::LimitReached`](crate::StoreError::LimitReached).
    /// Atomic across instances. Idle workers are woken. A job that is not pending is refused
    /// ([`check_new_job`]).
    async fn insert_job_counted(
        &self,
        job: &JobRecord,
        month: &str,
        scans_limit: u64,
    ) -> StoreResult<()>;

    /// Inserts pending jobs that count against no meter (a host's own jobs, maintenance),
    /// all or none. Idle workers are woken. A job that is not pending is refused
    /// ([`check_new_job`]).
    async fn insert_jobs(&self, jobs: &[JobRecord]) -> StoreResult<()>;

    /// The job with this id (any organization: the caller checks ownership).
    async fn get_job(&self, id: &JobId) -> StoreResult<Option<JobRecord>>;

    /// A page of the organization's jobs matching `filter`, newest first.
    async fn list_jobs(
        &self,
        organization_id: &OrganizationId,
        filter: &JobFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<JobRecord>>;

    /// How many of the organization's jobs are pending or processing.
    async fn count_active_jobs(&self, organization_id: &OrganizationId) -> StoreResult<u64>;

    /// For each of these properties that has jobs, its most recently created job in any
    /// state (on equal creation times, the greatest id: the job that heads a newest-first
    /// list); in no particular order. One call for a whole page of properties.
    async fn latest_jobs_for_properties(
        &self,
        property_ids: &[PropertyId],
    ) -> StoreResult<Vec<JobRecord>>;

    /// Cancels the job if it is pending or processing, keeping its progress, setting
    /// `completedAt` to `now` and writing `job.cancelled` to the outbox, in one transaction.
    /// A running attempt learns of it from its next heartbeat and, at once, from a
    /// [`QueueSignal::CancelRequested`](super::QueueSignal::CancelRequested); its later
    /// writes are refused. Atomic: a job cannot be both cancelled and finished.
    async fn cancel_job(&self, id: &JobId, now: Timestamp) -> StoreResult<CancelOutcome>;

    /// Counts of the organization's jobs created in `[from, to)`, per job type: one entry for
    /// each type with at least one such job, sorted by type (bytewise).
    async fn job_counts_by_type(
        &self,
        organization_id: &OrganizationId,
        from: Timestamp,
        to: Timestamp,
    ) -> StoreResult<Vec<(String, JobCounts)>>;
}
