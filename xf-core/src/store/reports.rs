//! Shared reports.

use async_trait::async_trait;

use super::{PageRequest, StoreResult};
use crate::ids::OrganizationId;
use crate::model::Report;
use crate::time::Timestamp;

/// Shared reports, keyed by their token.
#[async_trait]
pub trait ReportStore: Send + Sync {
    /// Inserts a report; [`StoreError::Duplicate`](crate::StoreError::Duplicate) if the token
    /// exists.
    async fn insert_report(&self, report: &Report) -> StoreResult<()>;

    /// The report with this token (any organization: the caller checks ownership).
    async fn get_report(&self, token: &str) -> StoreResult<Option<Report>>;

    /// A page of the organization's reports that expire after `now`, newest first (the
    /// page position's id is the token).
    async fn list_live_reports(
        &self,
        organization_id: &OrganizationId,
        now: Timestamp,
        page: &PageRequest,
    ) -> StoreResult<Vec<Report>>;

    /// Adds one view; returns the report.
    async fn increment_report_views(&self, token: &str) -> StoreResult<Option<Report>>;
}
