//! Issues found by scans.

use async_trait::async_trait;

use super::{Attempt, PageRequest, StoreResult};
use crate::ids::{IssueId, JobId, OrganizationId, PropertyId};
use crate::model::{Issue, IssueStatus, IssueSummary, ScanKind, Severity};
use crate::time::Timestamp;

/// One finding of a completed scan, for [`IssueStore::complete_scan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewFinding {
    /// The check's id (the issue's `type`).
    pub issue_type: String,
    /// The check's title.
    pub title: String,
    /// The check's severity.
    pub severity: Severity,
    /// The check's scope.
    pub scan_kind: ScanKind,
    /// The page, for page checks.
    pub url: Option<String>,
    /// What identifies the finding across scans (see [`Issue::subject`]).
    pub subject: String,
    /// What was found.
    pub evidence: String,
    /// How to fix it.
    pub how_to_fix: String,
}

/// A completed scan's findings and reach, for [`IssueStore::complete_scan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanFindings {
    /// The property's organization.
    pub organization_id: OrganizationId,
    /// The scanned property.
    pub property_id: PropertyId,
    /// The scan.
    pub job_id: JobId,
    /// When the scan completed.
    pub now: Timestamp,
    /// Everything it found; at most one per (check, subject).
    pub findings: Vec<NewFinding>,
    /// The addresses the scan reached (fetched, or read from its sitemaps and robots.txt): an
    /// open issue whose subject is an address outside this set keeps its state.
    pub reached: Vec<String>,
    /// The pages it fetched, each address once: they replace the property's pages of its
    /// previous completed scan (Search Console's crawl correlation reads them).
    pub pages: Vec<FetchedPage>,
}

/// A page a scan fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedPage {
    /// The normalised address requested.
    pub url: String,
    /// The final status (after redirects); `None` when the fetch got no answer.
    pub status_code: Option<u16>,
}

/// Whether a subject names an address (and so is only resolved by a scan that reached it).
pub fn subject_is_address(subject: &str) -> bool {
    subject.starts_with("http://") || subject.starts_with("https://")
}

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
    /// Inserts an issue; [`StoreError::Duplicate`](crate::StoreError::Duplicate) when the
    /// property already has one of the same type and subject (or the id is taken).
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

    /// The property's issues that a scan completed at `at` saw: first found then or before,
    /// and last seen then or after (what the shared report of that scan shows). Ordered by
    /// check (`type`), then subject.
    async fn issues_seen_at(
        &self,
        property_id: &PropertyId,
        at: Timestamp,
    ) -> StoreResult<Vec<Issue>>;

    /// Completes a scan job and applies its findings to the property's issues, in one
    /// transaction, if `attempt` is the job's current, running attempt: the job completes with
    /// `result` (progress 100, `completedAt` = `scan.now`, and its `job.completed` event) and
    /// the findings follow the lifecycle of docs/crawler.md. For each finding, the issue of the same
    /// check and subject is updated (scan, last seen, evidence, url, title, severity, fix) and
    /// opened again if it was resolved or fixed (`resolvedAt` and `fixedAt` cleared); a
    /// finding without one becomes a new open issue. Then each open issue of the property that
    /// the scan did not find is resolved at `now` if the scan reached its subject (see
    /// [`ScanFindings::reached`]; a subject that is not an address is always reached).
    /// Resolved and fixed issues not found stay as they are. `true`.
    ///
    /// If the attempt is not current (the job was cancelled, or its lease lost) nothing is
    /// written; `false`. So a cancelled or failed scan never changes an issue.
    async fn complete_scan(
        &self,
        scan: &ScanFindings,
        attempt: &Attempt,
        result: &serde_json::Value,
    ) -> StoreResult<bool>;
}
