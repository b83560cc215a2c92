//! Scan schedules and the claims of their slots.

use async_trait::async_trait;

use super::StoreResult;
use crate::ids::PropertyId;
use crate::model::schedule::{ScanSchedule, ScheduleRun};
use crate::model::{JobRecord, NewEvent};
use crate::time::Timestamp;

/// A claim of a schedule's due slot, for [`ScheduleStore::claim_schedule_slot`].
#[derive(Debug, Clone, PartialEq)]
pub struct SlotClaim {
    /// The property.
    pub property_id: PropertyId,
    /// The slot claimed: the schedule's `next_run_at` as the claimer read it.
    pub slot: Timestamp,
    /// The slot after it, which becomes `next_run_at`.
    pub next_run_at: Timestamp,
    /// When the claim is made.
    pub now: Timestamp,
    /// The scan to queue (pending, counted against `scansPerMonth`).
    pub job: JobRecord,
    /// The month the scan counts in (`YYYY-MM`).
    pub month: String,
    /// The organization's `scansPerMonth`.
    pub scans_limit: u64,
    /// The event to write when the quota is spent (`scan.schedule.failed`).
    pub quota_event: NewEvent,
}

/// Scan schedules: one per property.
#[async_trait]
pub trait ScheduleStore: Send + Sync {
    /// Sets the property's schedule, replacing the one it had (whose `created_at` is kept).
    /// Returns the schedule as stored.
    async fn put_schedule(&self, schedule: &ScanSchedule) -> StoreResult<ScanSchedule>;

    /// The property's schedule.
    async fn get_schedule(&self, property_id: &PropertyId) -> StoreResult<Option<ScanSchedule>>;

    /// Removes the property's schedule (its past runs stay); whether it had one.
    async fn delete_schedule(&self, property_id: &PropertyId) -> StoreResult<bool>;

    /// Up to `limit` schedules whose `next_run_at` is at or before `now`, the most overdue
    /// first.
    async fn due_schedules(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<ScanSchedule>>;

    /// Claims a due slot, atomically and once across instances: only while the property's
    /// schedule still has `next_run_at == claim.slot` (else `None`: another claimer took it,
    /// or the schedule changed). The claim moves `next_run_at` to `claim.next_run_at` and
    /// records the slot's run: `skipped_busy` when a `seo-scan` of the property is pending or
    /// processing; else the job is queued and counted as
    /// [`JobStore::insert_job_counted`](super::JobStore::insert_job_counted) does
    /// (`queued`), or, the quota spent, nothing is queued and `claim.quota_event` is written
    /// to the outbox (`quota_exceeded`). Idle workers are woken when a job was queued.
    async fn claim_schedule_slot(&self, claim: &SlotClaim) -> StoreResult<Option<ScheduleRun>>;

    /// Up to `limit` of the property's recorded runs, newest slot first.
    async fn schedule_runs(
        &self,
        property_id: &PropertyId,
        limit: usize,
    ) -> StoreResult<Vec<ScheduleRun>>;
}
