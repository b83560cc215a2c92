//! Jobs: the API's side ([`JobStore`]) and the engine's ([`QueueStore`]).
//!
//! Besides the records, the state keeps two ordered indexes that stand in for PostgreSQL's
//! partial indexes: the pending jobs by `(run_at, id)`, which claims walk, and the
//! processing jobs by lease end, which the rescue walks.

use std::collections::{BTreeMap, HashMap, HashSet};
use xf_core::store::text_rule::*;

use async_trait::async_trait;
use tokio::sync::broadcast;
use xf_core::ids::{EventId, JobId, OrganizationId, PropertyId};
use xf_core::media::events::NewEvent;
use xf_core::model::{Event, EventSubject, EventType, JobCounts, JobRecord, JobStatus};
use xf_core::store::{
    check_new_job, lease_expired_error, Attempt, AttemptOutcome, AttemptState, AttemptToken,
    CancelOutcome, ClaimRequest, ClaimedJob, Finish, JobFilter, JobStore, PageRequest,
    QueueListener, QueueSignal, QueueStore, RescueReport, StoreResult,
};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::{Lease, MemoryStore, State};

/// A job and, while an attempt runs (or was cancelled under it), that attempt.
#[derive(Debug, Clone)]
pub(crate) struct StoredJob {
    pub(crate) record: JobRecord,
    lease: Option<Lease>,
    /// The month whose `scans` meter counted it, for a job queued with `insert_job_counted`:
    /// given back should it fail for a reason of xf's own.
    counted_month: Option<String>,
}

fn job_matches(job: &JobRecord, filter: &JobFilter) -> bool {
    job.is_visible()
        && filter.status.is_none_or(|s| job.status == s)
        && filter
            .property_id
            .as_ref()
            .is_none_or(|p| job.property_id() == Some(p))
        && filter.job_type.as_deref().is_none_or(|t| job.job_type == t)
}

impl State {
    pub(crate) fn insert_job(&mut self, job: &JobRecord) -> StoreResult<()> {
        check_new_job(job)?;
        let stored = StoredJob {
            record: job.clone(),
            lease: None,
            counted_month: None,
        };
        let (owner, at, id) = (
            job.organization_id.as_str(),
            job.created_at,
            job.id.as_str(),
        );
        if !self.jobs.insert(owner, at, id, &stored) {
            return Err(StoreError::Duplicate("job id"));
        }
        self.pending.insert((job.run_at, job.id.to_string()));
        Ok(())
    }

    /// Inserts a pending job and counts it in its organization's `scans` meter of `month`,
    /// unless the meter reached `scans_limit`: then nothing is written (`false`). A job id
    /// already taken is a duplicate, whatever the meter.
    pub(crate) fn insert_counted(
        &mut self,
        job: &JobRecord,
        month: &str,
        scans_limit: u64,
    ) -> StoreResult<bool> {
        if self.jobs.contains(job.id.as_str()) {
            return Err(StoreError::Duplicate("job id"));
        }
        let usage_key = (job.organization_id.to_string(), month.to_owned());
        let used = self.usage.get(&usage_key).map_or(0, |u| u.scans);
        if used >= scans_limit {
            return Ok(false);
        }
        self.insert_job(job)?;
        if let Some(stored) = self.jobs.get_mut(job.id.as_str()) {
            stored.counted_month = Some(month.to_owned());
        }
        self.usage.entry(usage_key).or_default().scans = used + 1;
        Ok(true)
    }

    /// Gives back the scan job `id`'s queuing counted, if it did (once: it is then no longer
    /// counted).
    fn give_back_scan(&mut self, id: &str) {
        let Some(job) = self.jobs.get_mut(id) else {
            return;
        };
        let Some(month) = job.counted_month.take() else {
            return;
        };
        let key = (job.record.organization_id.to_string(), month);
        if let Some(usage) = self.usage.get_mut(&key) {
            usage.scans = usage.scans.saturating_sub(1);
        }
    }

    /// Checks that `jobs` can all be inserted (each pending, ids new and distinct) before
    /// any is, so that an insert is all or nothing.
    pub(crate) fn check_new_jobs(&self, jobs: &[JobRecord]) -> StoreResult<()> {
        let mut ids = HashSet::new();
        for job in jobs {
            check_new_job(job)?;
            if self.jobs.contains(job.id.as_str()) || !ids.insert(&job.id) {
                return Err(StoreError::Duplicate("job id"));
            }
        }
        Ok(())
    }

    /// Writes the event of a job that just reached a final state.
    pub(crate) fn record_event(&mut self, job: &JobRecord, now: Timestamp) {
        let event_type = EventType::for_status(job.status).filter(|_| job.is_visible());
        if let Some(event_type) = event_type {
            self.append_event(Event {
                id: EventId::new(),
                organization_id: job.organization_id.clone(),
                event_type,
                subject: EventSubject::Job(job.id.clone()),
                created_at: now,
            });
        }
    }

    /// Writes an event that carries its delivery's data (the media API's).
    pub(crate) fn record_snapshot_event(&mut self, mut event: NewEvent, now: Timestamp) {
        event.replace_nul();
        self.append_event(Event {
            id: EventId::new(),
            organization_id: event.organization_id,
            event_type: event.event_type,
            subject: EventSubject::Snapshot(event.data),
            created_at: now,
        });
    }

    /// Appends `event` to the outbox, noting whether an enabled webhook of its organization
    /// subscribes to it now (an event that has nobody to go to is never fanned out).
    fn append_event(&mut self, event: Event) {
        let subscribed = self
            .subscribers(&event.organization_id, event.event_type)
            .next()
            .is_some();
        self.events.push(event);
        self.subscribed.push(subscribed);
    }

    /// The job if `attempt` is its current, running attempt.
    pub(crate) fn current(&mut self, attempt: &Attempt) -> Option<&mut StoredJob> {
        self.jobs.get_mut(attempt.job_id.as_str()).filter(|job| {
            job.record.status == JobStatus::Processing
                && job.lease.is_some_and(|lease| lease.token == attempt.token)
        })
    }

    /// Ends the running attempt of job `id`: its lease leaves the index. With `keep_token`,
    /// the attempt is remembered so that its heartbeat can learn it was cancelled.
    pub(crate) fn end_attempt(&mut self, id: &str, keep_token: bool) {
        let Some(job) = self.jobs.get_mut(id) else {
            return;
        };
        if let Some(lease) = job.lease {
            self.leases.remove(&(lease.expires_at, id.to_owned()));
            job.lease = keep_token.then_some(Lease {
                token: lease.token,
                expires_at: Timestamp::MIN,
            });
        }
    }

    /// Puts job `id` back in the queue, due at `run_at`; `error` says why the attempt that
    /// ended failed (none for a release or a rescue).
    pub(crate) fn requeue(&mut self, id: &str, run_at: Timestamp, error: Option<String>) {
        self.end_attempt(id, false);
        if let Some(job) = self.jobs.get_mut(id) {
            job.record.status = JobStatus::Pending;
            job.record.run_at = run_at;
            if error.is_some() {
                job.record.error = error;
            }
            self.pending.insert((run_at, id.to_owned()));
        }
    }

    /// Moves pending job `id` to `run_at` (its place in the queue too).
    pub(crate) fn reschedule_pending(&mut self, id: &xf_core::ids::JobId, run_at: Timestamp) {
        let Some(job) = self.jobs.get_mut(id.as_str()) else {
            return;
        };
        if job.record.status != JobStatus::Pending {
            return;
        }
        self.pending.remove(&(job.record.run_at, id.to_string()));
        job.record.run_at = run_at;
        self.pending.insert((run_at, id.to_string()));
    }

    /// Records how an attempt ended (see [`QueueStore::finish_jobs`]): the state its job
    /// reached, or `None` when the attempt was not current.
    pub(crate) fn finish(&mut self, finish: &Finish, now: Timestamp) -> Option<JobStatus> {
        let job = self.current(&finish.attempt)?;
        let exhausted = job.record.attempts >= job.record.max_attempts;
        let id = finish.attempt.job_id.as_str();
        Some(match &finish.outcome {
            AttemptOutcome::Completed(result) => {
                self.finalize(id, JobStatus::Completed, now, |job| {
                    job.progress = 100;
                    job.result = Some(result.clone());
                    job.error = None;
                });
                JobStatus::Completed
            }
            AttemptOutcome::Retry { run_at, error } if !exhausted => {
                self.requeue(id, *run_at, Some(error.clone()));
                JobStatus::Pending
            }
            AttemptOutcome::Internal {
                error,
                retry_at: Some(run_at),
            } if !exhausted => {
                self.requeue(id, *run_at, Some(error.clone()));
                JobStatus::Pending
            }
            AttemptOutcome::Failed(error) | AttemptOutcome::Retry { error, .. } => {
                self.finalize(id, JobStatus::Failed, now, |job| {
                    job.error = Some(error.clone());
                });
                JobStatus::Failed
            }
            AttemptOutcome::Internal { error, .. } => {
                self.finalize(id, JobStatus::Failed, now, |job| {
                    job.error = Some(error.clone());
                });
                self.give_back_scan(id);
                JobStatus::Failed
            }
        })
    }

    /// Moves job `id` to a final state, with its event.
    pub(crate) fn finalize(
        &mut self,
        id: &str,
        status: JobStatus,
        now: Timestamp,
        change: impl FnOnce(&mut JobRecord),
    ) {
        self.end_attempt(id, false);
        let Some(job) = self.jobs.get_mut(id) else {
            return;
        };
        job.record.status = status;
        job.record.completed_at = Some(now);
        change(&mut job.record);
        let record = job.record.clone();
        self.record_event(&record, now);
    }
}

#[async_trait]
impl JobStore for MemoryStore {
    async fn insert_job_counted(
        &self,
        job: &JobRecord,
        month: &str,
        scans_limit: u64,
    ) -> StoreResult<()> {
        let job = &*stored(job);
        if !self.write().insert_counted(job, month, scans_limit)? {
            return Err(StoreError::LimitReached("scansPerMonth"));
        }
        self.signal(QueueSignal::JobsReady);
        Ok(())
    }

    async fn insert_jobs(&self, jobs: &[JobRecord]) -> StoreResult<()> {
        let jobs = &*stored_all(jobs);
        {
            let mut state = self.write();
            state.check_new_jobs(jobs)?;
            for job in jobs {
                state.insert_job(job)?;
            }
        }
        self.signal(QueueSignal::JobsReady);
        Ok(())
    }

    async fn get_job(&self, id: &JobId) -> StoreResult<Option<JobRecord>> {
        Ok(self.read().jobs.get(id.as_str()).map(|j| j.record))
    }

    async fn list_jobs(
        &self,
        organization_id: &OrganizationId,
        filter: &JobFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<JobRecord>> {
        let state = self.read();
        let jobs = state.jobs.page(organization_id.as_str(), page, |j| {
            job_matches(&j.record, filter)
        })?;
        Ok(jobs.into_iter().map(|j| j.record).collect())
    }

    async fn count_active_jobs(&self, organization_id: &OrganizationId) -> StoreResult<u64> {
        Ok(self
            .read()
            .jobs
            .values()
            .filter(|j| {
                &j.record.organization_id == organization_id
                    && j.record.status.is_active()
                    && j.record.is_visible()
            })
            .count() as u64)
    }

    async fn latest_jobs_for_properties(
        &self,
        property_ids: &[PropertyId],
    ) -> StoreResult<Vec<JobRecord>> {
        let wanted: HashSet<&PropertyId> = property_ids.iter().collect();
        let state = self.read();
        let mut latest: HashMap<&PropertyId, &JobRecord> = HashMap::new();
        for (property_id, job) in state.jobs.values().filter_map(|j| {
            let property_id = j.record.property_id()?;
            wanted
                .contains(property_id)
                .then_some((property_id, &j.record))
        }) {
            let entry = latest.entry(property_id).or_insert(job);
            if (job.created_at, &job.id) > (entry.created_at, &entry.id) {
                *entry = job;
            }
        }
        Ok(latest.into_values().cloned().collect())
    }

    async fn cancel_job(&self, id: &JobId, now: Timestamp) -> StoreResult<CancelOutcome> {
        let (outcome, was_running) = {
            let mut state = self.write();
            let Some(job) = state.jobs.get(id.as_str()) else {
                return Ok(CancelOutcome::NotFound);
            };
            let was_running = match job.record.status {
                JobStatus::Pending => {
                    state.pending.remove(&(job.record.run_at, id.to_string()));
                    false
                }
                JobStatus::Processing => {
                    state.end_attempt(id.as_str(), true);
                    true
                }
                _ => return Ok(CancelOutcome::NotCancellable(job.record)),
            };
            let Some(job) = state.jobs.get_mut(id.as_str()) else {
                return Ok(CancelOutcome::NotFound);
            };
            job.record.status = JobStatus::Cancelled;
            job.record.completed_at = Some(now);
            let record = job.record.clone();
            state.record_event(&record, now);
            (CancelOutcome::Cancelled(record), was_running)
        };
        if was_running {
            self.signal(QueueSignal::CancelRequested(id.clone()));
        }
        Ok(outcome)
    }

    async fn job_counts_by_type(
        &self,
        organization_id: &OrganizationId,
        from: Timestamp,
        to: Timestamp,
    ) -> StoreResult<Vec<(String, JobCounts)>> {
        let state = self.read();
        let mut counts: BTreeMap<String, JobCounts> = BTreeMap::new();
        for job in state.jobs.values().map(|j| &j.record).filter(|j| {
            &j.organization_id == organization_id
                && j.is_visible()
                && j.created_at >= from
                && j.created_at < to
        }) {
            let entry = counts.entry(job.job_type.clone()).or_default();
            entry.total += 1;
            entry.completed += u64::from(job.status == JobStatus::Completed);
            entry.failed += u64::from(job.status == JobStatus::Failed);
        }
        Ok(counts.into_iter().collect())
    }
}

#[async_trait]
impl QueueStore for MemoryStore {
    async fn claim_jobs(&self, request: &ClaimRequest) -> StoreResult<Vec<ClaimedJob>> {
        let mut state = self.write();
        let types: HashSet<&str> = request.job_types.iter().map(String::as_str).collect();
        let due: Vec<(Timestamp, String)> = state
            .pending
            .range(..=(request.now, String::from("~")))
            .filter(|(_, id)| {
                state
                    .jobs
                    .rows
                    .get(id)
                    .is_some_and(|j| types.contains(j.record.job_type.as_str()))
            })
            .take(request.limit)
            .cloned()
            .collect();
        let mut claimed = Vec::with_capacity(due.len());
        for key in due {
            state.pending.remove(&key);
            let token = AttemptToken::new();
            let Some(job) = state.jobs.get_mut(&key.1) else {
                continue;
            };
            job.record.status = JobStatus::Processing;
            job.record.attempts += 1;
            job.record.started_at.get_or_insert(request.now);
            job.lease = Some(Lease {
                token,
                expires_at: request.lease_expires_at,
            });
            let record = job.record.clone();
            state.leases.insert((request.lease_expires_at, key.1));
            claimed.push(ClaimedJob {
                attempt: Attempt {
                    job_id: record.id.clone(),
                    token,
                },
                job: record,
            });
        }
        Ok(claimed)
    }

    async fn heartbeat(
        &self,
        attempt: &Attempt,
        progress: Option<u8>,
        lease_expires_at: Timestamp,
    ) -> StoreResult<AttemptState> {
        let mut state = self.write();
        let id = attempt.job_id.to_string();
        let Some(job) = state.jobs.get_mut(&id) else {
            return Ok(AttemptState::Lost);
        };
        let mine = job.lease.is_some_and(|l| l.token == attempt.token);
        match job.record.status {
            JobStatus::Processing if mine => {
                if let Some(progress) = progress {
                    job.record.progress = job.record.progress.max(progress.min(100));
                }
                let old = job.lease.replace(Lease {
                    token: attempt.token,
                    expires_at: lease_expires_at,
                });
                if let Some(old) = old {
                    state.leases.remove(&(old.expires_at, id.clone()));
                }
                state.leases.insert((lease_expires_at, id));
                Ok(AttemptState::Running)
            }
            JobStatus::Cancelled if mine => Ok(AttemptState::Cancelled),
            _ => Ok(AttemptState::Lost),
        }
    }

    async fn finish_jobs(
        &self,
        finishes: &[Finish],
        now: Timestamp,
    ) -> StoreResult<Vec<Option<JobStatus>>> {
        let finishes = &*stored_all(finishes);
        let mut requeued = false;
        let outcomes = {
            let mut state = self.write();
            let mut outcomes = Vec::with_capacity(finishes.len());
            for finish in finishes {
                let reached = state.finish(finish, now);
                requeued |= reached == Some(JobStatus::Pending);
                outcomes.push(reached);
            }
            outcomes
        };
        if requeued {
            self.signal(QueueSignal::JobsReady);
        }
        Ok(outcomes)
    }

    async fn release_job(&self, attempt: &Attempt, now: Timestamp) -> StoreResult<bool> {
        {
            let mut state = self.write();
            let Some(job) = state.current(attempt) else {
                return Ok(false);
            };
            job.record.attempts = job.record.attempts.saturating_sub(1);
            state.requeue(attempt.job_id.as_str(), now, None);
        }
        self.signal(QueueSignal::JobsReady);
        Ok(true)
    }

    async fn rescue_expired(&self, now: Timestamp) -> StoreResult<RescueReport> {
        let mut report = RescueReport::default();
        {
            let mut state = self.write();
            let expired: Vec<String> = state
                .leases
                .range(..(now, String::new()))
                .map(|(_, id)| id.clone())
                .collect();
            for id in expired {
                let Some(job) = state.jobs.get(&id) else {
                    continue;
                };
                if job.record.attempts < job.record.max_attempts {
                    state.requeue(&id, now, None);
                    report.requeued += 1;
                } else {
                    let error = lease_expired_error(job.record.max_attempts);
                    state.finalize(&id, JobStatus::Failed, now, |job| job.error = Some(error));
                    state.give_back_scan(&id);
                    report.failed += 1;
                }
            }
        }
        if report.requeued > 0 {
            self.signal(QueueSignal::JobsReady);
        }
        Ok(report)
    }

    async fn listen(&self) -> StoreResult<Box<dyn QueueListener>> {
        Ok(Box::new(MemoryListener(self.signals.subscribe())))
    }
}

/// Signals from the store's channel.
#[derive(Debug)]
struct MemoryListener(broadcast::Receiver<QueueSignal>);

#[async_trait]
impl QueueListener for MemoryListener {
    async fn next(&mut self) -> StoreResult<QueueSignal> {
        match self.0.recv().await {
            Ok(signal) => Ok(signal),
            // Signals were skipped: claiming is always safe, and a skipped cancel reaches the
            // job through its next heartbeat.
            Err(broadcast::error::RecvError::Lagged(_)) => Ok(QueueSignal::JobsReady),
            Err(broadcast::error::RecvError::Closed) => {
                Err(StoreError::unavailable("the store was dropped"))
            }
        }
    }
}
