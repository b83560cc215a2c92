//! Scan schedules.

use async_trait::async_trait;
use sqlx::postgres::PgRow;
use xf_core::ids::PropertyId;
use xf_core::model::schedule::{
    Cadence, Frequency, ScanSchedule, ScheduleRun, SlotOutcome, Weekday,
};
use xf_core::model::{JobStatus, SEO_SCAN};
use xf_core::store::{ScheduleStore, SlotClaim, StoreResult};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::error::store_error;
use crate::jobs::{count_scan, insert_jobs_query};
use crate::media::insert_events;
use crate::rows::{at, RowExt};
use crate::{all, one, PgStore};

const SCHEDULE_COLUMNS: &str = "property_id, organization_id, frequency, local_time, timezone, \
    day_of_week, day_of_month, max_pages, max_depth, next_run_at, created_at, updated_at";

const RUN_COLUMNS: &str = "property_id, slot, outcome, job_id, claimed_at";

fn schedule(row: &PgRow) -> StoreResult<ScanSchedule> {
    let bad =
        |what: &str| StoreError::internal(format!("a stored schedule's {what} is unreadable"));
    let frequency: String = row.col("frequency")?;
    let frequency = Frequency::parse(&frequency).ok_or_else(|| bad("frequency"))?;
    let day_of_week: Option<String> = row.col("day_of_week")?;
    let day_of_week = match day_of_week {
        Some(day) => Some(Weekday::parse(&day).ok_or_else(|| bad("day of week"))?),
        None => None,
    };
    let day_of_month: Option<i16> = row.col("day_of_month")?;
    let day_of_month = day_of_month.map(|day| u8::try_from(day).unwrap_or(0));
    let time: String = row.col("local_time")?;
    let timezone: String = row.col("timezone")?;
    let cadence = Cadence::new(frequency, &time, &timezone, day_of_week, day_of_month)
        .map_err(|error| bad(error.field))?;
    let budget = |name: &str| -> StoreResult<Option<u32>> {
        let value: Option<i64> = row.col(name)?;
        Ok(value.map(|v| u32::try_from(v).unwrap_or(u32::MAX)))
    };
    Ok(ScanSchedule {
        property_id: row.id("property_id")?,
        organization_id: row.id("organization_id")?,
        cadence,
        max_pages: budget("max_pages")?,
        max_depth: budget("max_depth")?,
        next_run_at: row.timestamp("next_run_at")?,
        created_at: row.timestamp("created_at")?,
        updated_at: row.timestamp("updated_at")?,
    })
}

fn run(row: &PgRow) -> StoreResult<ScheduleRun> {
    let outcome: String = row.col("outcome")?;
    let job_id: Option<String> = row.col("job_id")?;
    Ok(ScheduleRun {
        property_id: row.id("property_id")?,
        slot: row.timestamp("slot")?,
        outcome: SlotOutcome::parse(&outcome)
            .ok_or_else(|| StoreError::internal(format!("unknown slot outcome {outcome:?}")))?,
        job_id: match job_id {
            Some(_) => Some(row.id("job_id")?),
            None => None,
        },
        claimed_at: row.timestamp("claimed_at")?,
    })
}

#[async_trait]
impl ScheduleStore for PgStore {
    async fn put_schedule(&self, schedule: &ScanSchedule) -> StoreResult<ScanSchedule> {
        let cadence = &schedule.cadence;
        let row = sqlx::query(&format!(
            "INSERT INTO scan_schedules ({SCHEDULE_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
             ON CONFLICT (property_id) DO UPDATE SET \
                 frequency = EXCLUDED.frequency, local_time = EXCLUDED.local_time, \
                 timezone = EXCLUDED.timezone, day_of_week = EXCLUDED.day_of_week, \
                 day_of_month = EXCLUDED.day_of_month, max_pages = EXCLUDED.max_pages, \
                 max_depth = EXCLUDED.max_depth, next_run_at = EXCLUDED.next_run_at, \
                 updated_at = EXCLUDED.updated_at \
             RETURNING {SCHEDULE_COLUMNS}"
        ))
        .bind(schedule.property_id.as_str())
        .bind(schedule.organization_id.as_str())
        .bind(cadence.frequency.as_str())
        .bind(cadence.time())
        .bind(cadence.timezone.name())
        .bind(cadence.day_of_week.map(|d| d.as_str()))
        .bind(cadence.day_of_month.map(i16::from))
        .bind(schedule.max_pages.map(i64::from))
        .bind(schedule.max_depth.map(i64::from))
        .bind(at(schedule.next_run_at))
        .bind(at(schedule.created_at))
        .bind(at(schedule.updated_at))
        .fetch_one(&self.pool)
        .await
        .map_err(store_error)?;
        self::schedule(&row)
    }

    async fn get_schedule(&self, property_id: &PropertyId) -> StoreResult<Option<ScanSchedule>> {
        let row = sqlx::query(&format!(
            "SELECT {SCHEDULE_COLUMNS} FROM scan_schedules WHERE property_id = $1"
        ))
        .bind(property_id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, schedule)
    }

    async fn delete_schedule(&self, property_id: &PropertyId) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM scan_schedules WHERE property_id = $1")
            .bind(property_id.as_str())
            .execute(&self.pool)
            .await
            .map_err(store_error)?;
        Ok(done.rows_affected() > 0)
    }

    async fn due_schedules(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<ScanSchedule>> {
        let rows = sqlx::query(&format!(
            "SELECT {SCHEDULE_COLUMNS} FROM scan_schedules WHERE next_run_at <= $1 \
             ORDER BY next_run_at, property_id LIMIT $2"
        ))
        .bind(at(now))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(rows, schedule)
    }

    async fn claim_schedule_slot(&self, claim: &SlotClaim) -> StoreResult<Option<ScheduleRun>> {
        let mut tx = self.begin().await?;
        // The claim: only the claimer that still finds the slot moves the schedule on; a
        // second one waits for the first's row lock, then finds the new slot and gets nothing.
        let claimed = sqlx::query(
            "UPDATE scan_schedules SET next_run_at = $3 \
             WHERE property_id = $1 AND next_run_at = $2",
        )
        .bind(claim.property_id.as_str())
        .bind(at(claim.slot))
        .bind(at(claim.next_run_at))
        .execute(&mut *tx)
        .await
        .map_err(store_error)?;
        if claimed.rows_affected() == 0 {
            tx.rollback().await.map_err(store_error)?;
            return Ok(None);
        }
        let busy: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM jobs WHERE property_id = $1 AND job_type = $2 \
                            AND status IN ($3, $4))",
        )
        .bind(claim.property_id.as_str())
        .bind(SEO_SCAN)
        .bind(JobStatus::Pending.as_str())
        .bind(JobStatus::Processing.as_str())
        .fetch_one(&mut *tx)
        .await
        .map_err(store_error)?;
        let (outcome, job_id) = if busy {
            (SlotOutcome::SkippedBusy, None)
        } else if count_scan(
            &mut tx,
            &claim.job.organization_id,
            &claim.month,
            claim.scans_limit,
        )
        .await?
        {
            xf_core::store::check_new_job(&claim.job)?;
            insert_jobs_query(std::slice::from_ref(&claim.job))
                .build()
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
            (SlotOutcome::Queued, Some(claim.job.id.clone()))
        } else {
            insert_events(&mut tx, std::slice::from_ref(&claim.quota_event), claim.now).await?;
            (SlotOutcome::QuotaExceeded, None)
        };
        let recorded = sqlx::query(&format!(
            "INSERT INTO schedule_runs ({RUN_COLUMNS}) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (property_id, slot) DO NOTHING"
        ))
        .bind(claim.property_id.as_str())
        .bind(at(claim.slot))
        .bind(outcome.as_str())
        .bind(job_id.as_ref().map(|id| id.as_str()))
        .bind(at(claim.now))
        .execute(&mut *tx)
        .await
        .map_err(store_error)?;
        if recorded.rows_affected() == 0 {
            // The slot was claimed before (the schedule was set again onto a claimed slot).
            tx.rollback().await.map_err(store_error)?;
            return Ok(None);
        }
        tx.commit().await.map_err(store_error)?;
        Ok(Some(ScheduleRun {
            property_id: claim.property_id.clone(),
            slot: claim.slot,
            outcome,
            job_id,
            claimed_at: claim.now,
        }))
    }

    async fn schedule_runs(
        &self,
        property_id: &PropertyId,
        limit: usize,
    ) -> StoreResult<Vec<ScheduleRun>> {
        let rows = sqlx::query(&format!(
            "SELECT {RUN_COLUMNS} FROM schedule_runs WHERE property_id = $1 \
             ORDER BY slot DESC LIMIT $2"
        ))
        .bind(property_id.as_str())
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(rows, run)
    }
}
