//! Jobs: list, detail, cancel.

use axum::extract::State;
use axum::response::Response;
use http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::routes;
use xf_core::api::{CancelledJob, JobListQuery, PageParams};
use xf_core::model::Job;
use xf_core::params::JobId;
use xf_core::Xf;

use super::{Envelope, PageEnvelope, Routes};
use crate::envelope;
use crate::error::ApiError;
use crate::extract::{Authed, PathParam, Query};

/// `data` of `GET /jobs`.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobList {
    /// Newest first.
    pub jobs: Vec<Job>,
}

/// `data` of `GET /jobs/{jobId}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobDetail {
    /// The job.
    pub job: Job,
}

/// The routes of this module.
pub fn router(routes: Routes) -> Routes {
    routes
        .routes(routes!(list_jobs))
        .routes(routes!(get_job))
        .routes(routes!(cancel_job))
}

/// The organization's jobs, newest first.
#[utoipa::path(get, path = "/jobs", tag = "jobs", params(PageParams, JobListQuery),
    responses((status = 200, description = "A page of jobs", body = PageEnvelope<JobList>)))]
async fn list_jobs(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    Query(page): Query<PageParams>,
    Query(filters): Query<JobListQuery>,
) -> Result<Response, ApiError> {
    let page = xf.list_jobs(&caller, &filters, &page).await?;
    Ok(envelope::page("jobs", &page))
}

/// One job; `result` is present once it completed.
#[utoipa::path(get, path = "/jobs/{jobId}", tag = "jobs",
    params(("jobId" = inline(JobId), Path, description = "Job id")),
    responses(
        (status = 200, description = "The job", body = Envelope<JobDetail>),
        (status = 404, description = "`not_found`"),
    ))]
async fn get_job(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(job_id): PathParam<JobId>,
) -> Result<Response, ApiError> {
    let job = xf.get_job(&caller, &job_id).await?;
    Ok(envelope::data(StatusCode::OK, &JobDetail { job }))
}

/// Cancels a pending or processing job; it keeps its progress.
#[utoipa::path(post, path = "/jobs/{jobId}/cancel", tag = "jobs",
    params(("jobId" = inline(JobId), Path, description = "Job id")),
    responses(
        (status = 200, description = "Cancelled", body = Envelope<CancelledJob>),
        (status = 400, description = "`job_not_cancellable`: the job already finished"),
        (status = 404, description = "`not_found`"),
    ))]
async fn cancel_job(
    State(xf): State<Xf>,
    Authed(caller): Authed,
    PathParam(job_id): PathParam<JobId>,
) -> Result<Response, ApiError> {
    Ok(envelope::data(
        StatusCode::OK,
        &xf.cancel_job(&caller, &job_id).await?,
    ))
}
