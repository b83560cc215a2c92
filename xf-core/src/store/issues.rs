//! Issues found by scans.

use async_trait::async_trait;

use super::{PageRequest, StoreResult};
use crate::ids::{IssueId, PropertyId};
use crate::model::{Issue, IssueStatus, IssueSummary, ScanKind};
use crate::time::Timestamp;

/// Filters of `GET /properties/{id}/issues`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IssueFilter {
    /// Only page or only site issues.
    pub scan_kind: Option<ScanKind>,
    /// Only issues in this state.
    pub status: Option<IssueStatus>,
}

/// Issues.
#[async_trait]
pub trait IssueStore: Send + Sync {
    /// Inserts an issue.
    async fn insert_issue(&self, issue: &Issue) -> StoreResult<()>;

    /// The issue with this id (any organization: the caller checks ownership).
    async fn get_issue(&self, id: &IssueId) -> StoreResult<Option<Issue>>;

    /// Marks an issue fixed at `now` (keeping an earlier fix time); returns it.
    async fn set_issue_fixed(&self, id: &IssueId, now: Timestamp) -> StoreResult<Option<Issue>>;

    /// A page of the property's issues matching `filter`, newest first.
    async fn list_issues(
        &self,
        property_id: &PropertyId,
        filter: &IssueFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<Issue>>;

    /// Counts of all the property's issues by state.
    async fn issue_summary(&self, property_id: &PropertyId) -> StoreResult<IssueSummary>;
}
