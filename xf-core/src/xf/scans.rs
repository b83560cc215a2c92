//! Scans, batches and jobs.

use super::{Caller, Fingerprint, Xf};
use crate::api::{
    BatchItemResult, BatchScanRequest, BatchScanResults, CancelledJob, CrawlLimits, ItemError,
    JobListQuery, Page, PageParams, QueuedJob, ScanEndpoint, ScanOptions, ScanQueued,
};
use crate::error::{Error, Result, StoreError};
use crate::ids;
use crate::model::{Job, JobStatus, Property, SEO_SCAN};
use crate::params::{CrawlBudget, JobId};
use crate::store::{After, CancelOutcome, JobFilter};

/// Most items in one batch.
pub const MAX_BATCH: usize = 25;

/// A scan's budget after clamping, and whether clamping changed what was asked.
struct Budget {
    limits: CrawlLimits,
    clamped: bool,
}

/// Clamps requested budgets (already checked to be 1 or more) to the plan's.
fn budget(caller: &Caller, options: &ScanOptions) -> Budget {
    let mut clamped = false;
    let mut pick = |requested: Option<CrawlBudget>, max: u64| match requested {
        None => max,
        Some(value) if value.get() > max => {
            clamped = true;
            max
        }
        Some(value) => value.get(),
    };
    let max_pages = pick(options.max_pages, caller.limits.max_pages);
    let max_depth = pick(options.max_depth, caller.limits.max_depth);
    Budget {
        limits: CrawlLimits {
            max_pages,
            max_depth,
        },
        clamped,
    }
}

impl Xf {
    /// `POST /properties/{id}/scans` and `/crawls`: queues a `seo-scan` job.
    pub async fn queue_scan(
        &self,
        caller: &Caller,
        request: &Fingerprint,
        property_id: &str,
        options: ScanOptions,
        endpoint: ScanEndpoint,
    ) -> Result<ScanQueued> {
        let budget = budget(caller, &options);
        let property = self.owned_property(caller, property_id).await?;
        let job = self
            .queue_job(caller, request, &property, &budget, 0)
            .await?;
        let message = format!(
            "Scan of {} queued with up to {} pages and depth {}{}.",
            property.url,
            budget.limits.max_pages,
            budget.limits.max_depth,
            if budget.clamped {
                "; the requested limits were clamped to the plan's crawl limits"
            } else {
                ""
            }
        );
        Ok(ScanQueued {
            job: QueuedJob {
                id: job.id,
                status: job.status,
                job_type: job.job_type,
                property_id: job.property_id,
                created_at: job.created_at,
                progress: (endpoint == ScanEndpoint::Crawl).then_some(job.progress),
            },
            crawl_tier: caller.plan.crawl_tier.clone(),
            effective_limits: budget.limits,
            message,
        })
    }

    /// `POST /scans/batch`: 1 to 25 scans; each succeeds or fails on its own.
    pub async fn queue_batch(
        &self,
        caller: &Caller,
        request: &Fingerprint,
        batch: BatchScanRequest,
    ) -> Result<BatchScanResults> {
        if batch.scans.is_empty() || batch.scans.len() > MAX_BATCH {
            return Err(Error::invalid(
                "scans",
                format!("must hold 1 to {MAX_BATCH} items"),
            ));
        }
        let mut results = Vec::with_capacity(batch.scans.len());
        for (index, item) in batch.scans.into_iter().enumerate() {
            let options = ScanOptions {
                max_pages: item.max_pages,
                max_depth: item.max_depth,
            };
            let outcome = async {
                let budget = budget(caller, &options);
                let property = self
                    .owned_property(caller, item.property_id.as_str())
                    .await?;
                self.queue_job(caller, request, &property, &budget, index)
                    .await
            }
            .await;
            results.push(match outcome {
                Ok(job) => BatchItemResult {
                    property_id: item.property_id,
                    job: Some(job),
                    error: None,
                },
                // An outage fails the whole batch: the client must retry, not guess.
                Err(error @ (Error::Unavailable { .. } | Error::Internal(_))) => return Err(error),
                Err(error) => BatchItemResult {
                    property_id: item.property_id,
                    job: None,
                    error: Some(ItemError {
                        code: error.code().to_owned(),
                        message: error.to_string(),
                    }),
                },
            });
        }
        Ok(BatchScanResults { results })
    }

    /// Creates the job (live: stored and counted against `scansPerMonth`; test: a mock).
    async fn queue_job(
        &self,
        caller: &Caller,
        request: &Fingerprint,
        property: &Property,
        budget: &Budget,
        index: usize,
    ) -> Result<Job> {
        let (id, created_at) = if caller.is_test() {
            (
                self.mock_id(caller, request, ids::JOB, index),
                self.mock_time(),
            )
        } else {
            (ids::new_id(ids::JOB), self.now())
        };
        let job = Job {
            id,
            organization_id: caller.organization.id.clone(),
            job_type: SEO_SCAN.to_owned(),
            status: JobStatus::Pending,
            progress: 0,
            property_id: property.id.clone(),
            property_name: property.name.clone(),
            tenant_type: "organization".to_owned(),
            tenant_label: caller.organization.name.clone(),
            shop_domain: caller.organization.shop_domain.clone(),
            max_pages: budget.limits.max_pages as u32,
            max_depth: budget.limits.max_depth as u32,
            created_at,
            started_at: None,
            completed_at: None,
            error: None,
            result: None,
        };
        if caller.is_test() {
            return Ok(job);
        }
        let now = job.created_at;
        match self
            .store()
            .insert_job_counted(&job, &now.month_key(), caller.limits.scans_per_month)
            .await
        {
            Ok(()) => Ok(job),
            Err(StoreError::LimitReached(_)) => Err(Error::QuotaExceeded {
                limit: caller.limits.scans_per_month,
                retry_after_secs: now.seconds_until(now.next_month_start()).max(1),
            }),
            Err(other) => Err(other.into()),
        }
    }

    /// `GET /jobs`.
    pub async fn list_jobs(
        &self,
        caller: &Caller,
        query: &JobListQuery,
        params: &PageParams,
    ) -> Result<Page<Job>> {
        let filter = JobFilter {
            status: query.status,
            property_id: query.property_id.as_ref().map(|id| id.as_str().to_owned()),
            job_type: query.job_type.as_ref().map(|t| t.as_str().to_owned()),
        };
        let filters = format!(
            "status={}&propertyId={}&type={}",
            filter.status.map_or("", |s| s.as_str()),
            filter.property_id.as_deref().unwrap_or(""),
            filter.job_type.as_deref().unwrap_or(""),
        );
        let (request, limit) = self.page_request("jobs", &filters, params)?;
        let jobs = self
            .store()
            .list_jobs(&caller.organization.id, &filter, &request)
            .await?;
        Ok(self.finish_page("jobs", &filters, jobs, limit, |j| After {
            created_at: j.created_at,
            id: j.id.clone(),
        }))
    }

    /// `GET /jobs/{id}`.
    pub async fn get_job(&self, caller: &Caller, id: &str) -> Result<Job> {
        if JobId::parse(id).is_err() {
            return Err(Error::NotFound("job"));
        }
        self.store()
            .get_job(id)
            .await?
            .filter(|job| job.organization_id == caller.organization.id)
            .ok_or(Error::NotFound("job"))
    }

    /// `POST /jobs/{id}/cancel`: pending or processing jobs only; progress is kept.
    pub async fn cancel_job(&self, caller: &Caller, id: &str) -> Result<CancelledJob> {
        let job = self.get_job(caller, id).await?;
        let job = if caller.is_test() {
            if !job.status.is_active() {
                return Err(Error::JobNotCancellable {
                    status: job.status.as_str(),
                });
            }
            Job {
                status: JobStatus::Cancelled,
                completed_at: Some(self.mock_time()),
                ..job
            }
        } else {
            match self.store().cancel_job(&job.id, self.now()).await? {
                CancelOutcome::Cancelled(job) => job,
                CancelOutcome::NotCancellable(job) => {
                    return Err(Error::JobNotCancellable {
                        status: job.status.as_str(),
                    })
                }
                CancelOutcome::NotFound => return Err(Error::NotFound("job")),
            }
        };
        let message = format!(
            "Job {} was cancelled at {}% progress.",
            job.id, job.progress
        );
        Ok(CancelledJob { job, message })
    }
}
