//! Scans, batches and jobs.

use super::{Caller, Fingerprint, Xf};
use crate::api::{
    BatchItemResult, BatchScanRequest, BatchScanResults, CancelledJob, CrawlLimits, ItemError,
    JobListQuery, Page, PageParams, QueuedJob, ScanEndpoint, ScanOptions, ScanQueued,
};
use crate::error::{Error, Result, StoreError};
use crate::ids::{Id, JobId, PropertyId};
use crate::model::{
    Job, JobRecord, JobStatus, JobSubject, Organization, Property, RenderMode, ScanPayload,
    SEO_SCAN,
};
use crate::params::CrawlBudget;
use crate::plans::Limits;
use crate::store::{After, CancelOutcome, JobFilter};

/// Most items in one batch.
pub const MAX_BATCH: usize = 25;

/// A scan's budget after clamping, whether clamping changed what was asked, and what it
/// renders.
struct Budget {
    limits: CrawlLimits,
    clamped: bool,
    render: RenderMode,
}

/// Clamps requested budgets (already checked to be 1 or more) to the plan's.
fn budget(limits: &Limits, options: &ScanOptions) -> Budget {
    let mut clamped = false;
    let mut pick = |requested: Option<CrawlBudget>, max: u64| match requested {
        None => max,
        Some(value) if value.get() > max => {
            clamped = true;
            max
        }
        Some(value) => value.get(),
    };
    let max_pages = pick(options.max_pages, limits.max_pages);
    let max_depth = pick(options.max_depth, limits.max_depth);
    Budget {
        limits: CrawlLimits {
            max_pages,
            max_depth,
        },
        clamped,
        render: RenderMode::Never,
    }
}

impl Xf {
    /// The scan's `render`, or the default: `auto` where pages can be rendered, `never`
    /// elsewhere (where asking for more is a validation error).
    pub(super) fn render_mode(&self, asked: Option<RenderMode>) -> Result<RenderMode> {
        let renders = self.renders_pages();
        match asked {
            None if renders => Ok(RenderMode::Auto),
            None | Some(RenderMode::Never) => Ok(RenderMode::Never),
            Some(mode) if renders => Ok(mode),
            Some(mode) => Err(Error::invalid(
                "render",
                format!(
                    "must be never: this server renders no pages, so {} cannot apply",
                    mode.as_str()
                ),
            )),
        }
    }
}

impl Xf {
    /// `POST /properties/{id}/scans` and `/crawls`: queues a `seo-scan` job.
    pub async fn queue_scan(
        &self,
        caller: &Caller,
        request: &Fingerprint,
        property_id: &PropertyId,
        options: ScanOptions,
        endpoint: ScanEndpoint,
    ) -> Result<ScanQueued> {
        let mut budget = budget(&caller.limits, &options);
        budget.render = self.render_mode(options.render)?;
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
                property_id: property.id.clone(),
                created_at: job.created_at,
                progress: (endpoint == ScanEndpoint::Crawl).then_some(job.progress),
            },
            crawl_tier: caller.plan.crawl_tier.clone(),
            effective_limits: budget.limits,
            render: budget.render,
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
                render: item.render,
            };
            let outcome = async {
                let mut budget = budget(&caller.limits, &options);
                budget.render = self.render_mode(options.render)?;
                // Each item stands alone: an id of the wrong form is that item's 404.
                let property_id = PropertyId::parse(item.property_id.as_str())
                    .map_err(|_| Error::NotFound("property"))?;
                let property = self.owned_property(caller, &property_id).await?;
                self.queue_job(caller, request, &property, &budget, index)
                    .await
            }
            .await;
            results.push(match outcome {
                Ok(job) => BatchItemResult {
                    property_id: item.property_id,
                    job: job.view(),
                    error: None,
                },
                // An outage fails the whole batch: the client must retry, not guess.
                Err(error @ (Error::Unavailable { .. } | Error::Internal { .. })) => {
                    return Err(error)
                }
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
    ) -> Result<JobRecord> {
        let now = if caller.is_test() {
            self.mock_time()
        } else {
            self.now()
        };
        let mut job = scan_job(
            &caller.organization,
            property,
            &budget.limits,
            budget.render,
            now,
        )?;
        if caller.is_test() {
            job.id = JobId::derived(&self.mock_digest(caller, request, JobId::PREFIX, index));
            return Ok(job);
        }
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
            property_id: query.property_id.clone(),
            job_type: query.job_type.as_ref().map(|t| t.as_str().to_owned()),
        };
        let filters = format!(
            "status={}&propertyId={}&type={}",
            filter.status.map_or("", |s| s.as_str()),
            filter.property_id.as_ref().map_or("", |id| id.as_str()),
            filter.job_type.as_deref().unwrap_or(""),
        );
        let (request, limit) = self.page_request("jobs", &filters, params)?;
        let jobs = self
            .store()
            .list_jobs(&caller.organization.id, &filter, &request)
            .await?;
        let page = self.finish_page("jobs", &filters, jobs, limit, |j| After {
            created_at: j.created_at,
            id: j.id.as_str().to_owned(),
        });
        Ok(Page {
            items: page.items.iter().filter_map(JobRecord::view).collect(),
            next_cursor: page.next_cursor,
        })
    }

    /// `GET /jobs/{id}`.
    pub async fn get_job(&self, caller: &Caller, id: &JobId) -> Result<Job> {
        let job = self.owned_job(caller, id).await?;
        job.view().ok_or(Error::NotFound("job"))
    }

    /// The caller's job with this id.
    async fn owned_job(&self, caller: &Caller, id: &JobId) -> Result<JobRecord> {
        self.store()
            .get_job(id)
            .await?
            .filter(|job| job.organization_id == caller.organization.id && job.is_visible())
            .ok_or(Error::NotFound("job"))
    }

    /// `POST /jobs/{id}/cancel`: pending or processing jobs only; progress is kept.
    pub async fn cancel_job(&self, caller: &Caller, id: &JobId) -> Result<CancelledJob> {
        let job = self.owned_job(caller, id).await?;
        let job = if caller.is_test() {
            if !job.status.is_active() {
                return Err(Error::JobNotCancellable {
                    status: job.status.as_str(),
                });
            }
            JobRecord {
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
        Ok(CancelledJob {
            job: job.view().ok_or(Error::NotFound("job"))?,
            message,
        })
    }
}

/// A pending `seo-scan` job of `property` with `limits` as its budgets.
pub(super) fn scan_job(
    organization: &Organization,
    property: &Property,
    limits: &CrawlLimits,
    render: RenderMode,
    now: crate::time::Timestamp,
) -> Result<JobRecord> {
    let payload = ScanPayload {
        max_pages: u32::try_from(limits.max_pages).unwrap_or(u32::MAX),
        max_depth: u32::try_from(limits.max_depth).unwrap_or(u32::MAX),
        render,
    };
    let subject = JobSubject {
        property_id: property.id.clone(),
        property_name: property.name.clone(),
        tenant_label: organization.name.clone(),
        shop_domain: organization.shop_domain.clone(),
    };
    Ok(JobRecord::new(
        organization.id.clone(),
        SEO_SCAN,
        serde_json::to_value(payload).map_err(Error::internal)?,
        subject,
        now,
    ))
}

/// The budgets of a scan asking for `options` under `limits`, clamped to them.
pub(super) fn scan_budget(limits: &Limits, options: &ScanOptions) -> CrawlLimits {
    budget(limits, options).limits
}
