//! Scheduled scans (beyond the spec): setting a property's schedule, and the scheduler pass
//! that the runtime makes on every instance, whose claims queue each due slot once.

use super::scans::{scan_budget, scan_job};
use super::{Caller, Xf};
use crate::api::{DeletedSchedule, ScanOptions, ScheduleRequest, ScheduleTick, ScheduleView};
use crate::error::{Error, Result};
use crate::ids::PropertyId;
use crate::media::events::NewEvent;
use crate::model::schedule::{
    Cadence, ScanSchedule, ScheduleEventData, ScheduleFailure, SlotOutcome,
};
use crate::model::EventType;
use crate::store::SlotClaim;

/// Due schedules one pass takes at most; a pass with more leaves the rest to the next.
const DUE_BATCH: usize = 200;

/// Runs shown with a schedule.
const RUNS_SHOWN: usize = 10;

impl Xf {
    /// `PUT /properties/{propertyId}/schedule`: sets (or replaces) the property's schedule;
    /// its next slot is the first after now. A test key gets the schedule as it would be,
    /// and nothing is stored.
    pub async fn put_schedule(
        &self,
        caller: &Caller,
        property_id: &PropertyId,
        request: ScheduleRequest,
    ) -> Result<ScheduleView> {
        let property = self.owned_property(caller, property_id).await?;
        let cadence = Cadence::new(
            request.frequency,
            &request.time,
            &request.timezone,
            request.day_of_week,
            request.day_of_month.map(crate::params::DayOfMonth::get),
        )
        .map_err(|error| Error::invalid(error.field, error.message))?;
        let now = if caller.is_test() {
            self.mock_time()
        } else {
            self.now()
        };
        let schedule = ScanSchedule {
            property_id: property.id.clone(),
            organization_id: caller.organization.id.clone(),
            next_run_at: cadence.next_slot(now),
            cadence,
            max_pages: request
                .max_pages
                .map(|b| u32::try_from(b.get()).unwrap_or(u32::MAX)),
            max_depth: request
                .max_depth
                .map(|b| u32::try_from(b.get()).unwrap_or(u32::MAX)),
            created_at: now,
            updated_at: now,
        };
        let stored = if caller.is_test() {
            schedule
        } else {
            self.store().put_schedule(&schedule).await?
        };
        let runs = self.store().schedule_runs(&property.id, RUNS_SHOWN).await?;
        Ok(view(&stored, runs))
    }

    /// `GET /properties/{propertyId}/schedule`: the schedule with its latest runs; `404` when
    /// the property has none.
    pub async fn get_schedule(
        &self,
        caller: &Caller,
        property_id: &PropertyId,
    ) -> Result<ScheduleView> {
        let property = self.owned_property(caller, property_id).await?;
        let schedule = self
            .store()
            .get_schedule(&property.id)
            .await?
            .ok_or(Error::NotFound("schedule"))?;
        let runs = self.store().schedule_runs(&property.id, RUNS_SHOWN).await?;
        Ok(view(&schedule, runs))
    }

    /// `DELETE /properties/{propertyId}/schedule`: no more scheduled scans (its past runs
    /// stay on record); `404` when the property has none. A test key deletes nothing.
    pub async fn delete_schedule(
        &self,
        caller: &Caller,
        property_id: &PropertyId,
    ) -> Result<DeletedSchedule> {
        let property = self.owned_property(caller, property_id).await?;
        let found = if caller.is_test() {
            self.store().get_schedule(&property.id).await?.is_some()
        } else {
            self.store().delete_schedule(&property.id).await?
        };
        if !found {
            return Err(Error::NotFound("schedule"));
        }
        Ok(DeletedSchedule {
            property_id: property.id,
            deleted: true,
        })
    }

    /// One pass of the scheduler: claims every due slot it can. Each slot is claimed once
    /// across instances (the store decides); a claimed slot queues a scan counted against
    /// the organization's `scansPerMonth`, or is skipped while a scan of the property is
    /// pending or running, or queues nothing when the quota is spent (and sends
    /// `scan.schedule.failed`); either way it is recorded. The schedule moves on to its
    /// first slot after now: slots missed while no instance ran are not made up.
    pub async fn run_due_schedules(&self) -> Result<ScheduleTick> {
        let now = self.now();
        let mut tick = ScheduleTick::default();
        for schedule in self.store().due_schedules(now, DUE_BATCH).await? {
            let Some(organization) = self
                .store()
                .get_organization(&schedule.organization_id)
                .await?
            else {
                continue;
            };
            let Some(property) = self.store().get_property(&schedule.property_id).await? else {
                continue;
            };
            let Some(plan) = self.plans().get(&organization.plan) else {
                tracing::warn!(
                    organization = %organization.id,
                    plan = %organization.plan,
                    "a scheduled scan's organization has a plan the catalog lacks; its slot waits"
                );
                continue;
            };
            let limits = plan.limits_with(&organization.limits);
            let options = ScanOptions {
                max_pages: schedule
                    .max_pages
                    .and_then(|n| crate::params::CrawlBudget::new(u64::from(n))),
                max_depth: schedule
                    .max_depth
                    .and_then(|n| crate::params::CrawlBudget::new(u64::from(n))),
                render: None,
            };
            let budget = scan_budget(&limits, &options);
            // Scheduled scans render as the server's default has it.
            let render = self.render_mode(None)?;
            let job = scan_job(&organization, &property, &budget, render, now)?;
            let failure = ScheduleFailure {
                property_id: property.id.clone(),
                property_name: property.name.clone(),
                slot: schedule.next_run_at,
                code: "quota_exceeded".to_owned(),
                message: format!(
                    "The organization's scansPerMonth ({}) is spent until the month ends; the \
                     next slot tries again.",
                    limits.scans_per_month
                ),
            };
            let claim = SlotClaim {
                property_id: property.id.clone(),
                slot: schedule.next_run_at,
                next_run_at: schedule.cadence.next_slot(now),
                now,
                job,
                month: now.month_key(),
                scans_limit: limits.scans_per_month,
                quota_event: NewEvent {
                    organization_id: organization.id.clone(),
                    event_type: EventType::ScanScheduleFailed,
                    data: serde_json::to_value(ScheduleEventData { schedule: failure })
                        .map_err(Error::internal)?,
                },
            };
            match self.store().claim_schedule_slot(&claim).await? {
                None => tick.lost += 1,
                Some(run) => match run.outcome {
                    SlotOutcome::Queued => tick.queued += 1,
                    SlotOutcome::SkippedBusy => tick.skipped_busy += 1,
                    SlotOutcome::QuotaExceeded => tick.quota_exceeded += 1,
                },
            }
        }
        Ok(tick)
    }
}

/// The API's view of a schedule.
fn view(schedule: &ScanSchedule, runs: Vec<crate::model::schedule::ScheduleRun>) -> ScheduleView {
    let cadence = &schedule.cadence;
    ScheduleView {
        property_id: schedule.property_id.clone(),
        frequency: cadence.frequency,
        time: cadence.time(),
        timezone: cadence.timezone.name().to_owned(),
        day_of_week: cadence.day_of_week,
        day_of_month: cadence.day_of_month,
        max_pages: schedule.max_pages,
        max_depth: schedule.max_depth,
        next_run_at: schedule.next_run_at,
        created_at: schedule.created_at,
        updated_at: schedule.updated_at,
        runs,
    }
}
