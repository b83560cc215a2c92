//! Scan schedules.

use async_trait::async_trait;
use xf_core::ids::PropertyId;
use xf_core::model::schedule::{ScanSchedule, ScheduleRun, SlotOutcome};
use xf_core::model::SEO_SCAN;
use xf_core::store::{QueueSignal, ScheduleStore, SlotClaim, StoreResult};
use xf_core::time::Timestamp;

use crate::MemoryStore;

#[async_trait]
impl ScheduleStore for MemoryStore {
    async fn put_schedule(&self, schedule: &ScanSchedule) -> StoreResult<ScanSchedule> {
        let mut state = self.write();
        let mut stored = schedule.clone();
        if let Some(earlier) = state.schedules.get(schedule.property_id.as_str()) {
            stored.created_at = earlier.created_at;
        }
        state
            .schedules
            .insert(schedule.property_id.to_string(), stored.clone());
        Ok(stored)
    }

    async fn get_schedule(&self, property_id: &PropertyId) -> StoreResult<Option<ScanSchedule>> {
        Ok(self.read().schedules.get(property_id.as_str()).cloned())
    }

    async fn delete_schedule(&self, property_id: &PropertyId) -> StoreResult<bool> {
        Ok(self
            .write()
            .schedules
            .remove(property_id.as_str())
            .is_some())
    }

    async fn due_schedules(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<ScanSchedule>> {
        let state = self.read();
        let mut due: Vec<ScanSchedule> = state
            .schedules
            .values()
            .filter(|schedule| schedule.next_run_at <= now)
            .cloned()
            .collect();
        due.sort_by(|a, b| {
            (a.next_run_at, a.property_id.as_str()).cmp(&(b.next_run_at, b.property_id.as_str()))
        });
        due.truncate(limit);
        Ok(due)
    }

    async fn claim_schedule_slot(&self, claim: &SlotClaim) -> StoreResult<Option<ScheduleRun>> {
        let run = {
            let mut state = self.write();
            let property = claim.property_id.as_str();
            match state.schedules.get_mut(property) {
                Some(schedule) if schedule.next_run_at == claim.slot => {
                    schedule.next_run_at = claim.next_run_at;
                }
                _ => return Ok(None),
            }
            let key = (property.to_owned(), claim.slot);
            if state.schedule_runs.contains_key(&key) {
                return Ok(None);
            }
            let busy = state.jobs.values().any(|job| {
                job.record.job_type == SEO_SCAN
                    && job.record.status.is_active()
                    && job.record.property_id() == Some(&claim.property_id)
            });
            let (outcome, job_id) = if busy {
                (SlotOutcome::SkippedBusy, None)
            } else if state.insert_counted(&claim.job, &claim.month, claim.scans_limit)? {
                (SlotOutcome::Queued, Some(claim.job.id.clone()))
            } else {
                state.record_snapshot_event(claim.quota_event.clone(), claim.now);
                (SlotOutcome::QuotaExceeded, None)
            };
            let run = ScheduleRun {
                property_id: claim.property_id.clone(),
                slot: claim.slot,
                outcome,
                job_id,
                claimed_at: claim.now,
            };
            state.schedule_runs.insert(key, run.clone());
            run
        };
        match run.outcome {
            SlotOutcome::Queued => self.signal(QueueSignal::JobsReady),
            SlotOutcome::QuotaExceeded => self.signal(QueueSignal::EventsWritten),
            SlotOutcome::SkippedBusy => {}
        }
        Ok(Some(run))
    }

    async fn schedule_runs(
        &self,
        property_id: &PropertyId,
        limit: usize,
    ) -> StoreResult<Vec<ScheduleRun>> {
        let state = self.read();
        let property = property_id.to_string();
        Ok(state
            .schedule_runs
            .range((property.clone(), Timestamp::MIN)..=(property, Timestamp::MAX))
            .rev()
            .take(limit)
            .map(|(_, run)| run.clone())
            .collect())
    }
}
