//! Issues found by scans.

use async_trait::async_trait;

use super::{Attempt, PageRequest, StoreResult};
use crate::ids::{IssueId, JobId, OrganizationId, PropertyId};
use crate::model::{
    ChangeCounts, Issue, IssueChangeRecord, IssueStatus, IssueSummary, ScanKind, ScanRecord,
    Severity, SeverityCounts,
};
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
    /// The site's score, 0 to 100.
    pub score: u32,
    /// The pages audited.
    pub pages_scanned: u64,
    /// Everything it found; at most one per (check, subject).
    pub findings: Vec<NewFinding>,
    /// The addresses the scan reached (fetched, or read from its sitemaps and robots.txt): an
    /// open issue whose subject is an address outside this set keeps its state.
    pub reached: Vec<String>,
    /// The pages it fetched, each address once: they replace the property's pages of its
    /// previous completed scan (Search Console's crawl correlation reads them).
    pub pages: Vec<FetchedPage>,
}

impl ScanFindings {
    /// The scan's history record: its figures, its findings counted by severity and by check,
    /// and `changes` (what it did to the property's issues) counted.
    pub fn record(&self, changes: &[IssueChangeRecord]) -> ScanRecord {
        let mut by_severity = SeverityCounts::default();
        let mut by_check = std::collections::BTreeMap::new();
        for finding in &self.findings {
            by_severity.add(finding.severity);
            match by_check.get_mut(&finding.issue_type) {
                Some(count) => *count += 1,
                None => {
                    by_check.insert(finding.issue_type.clone(), 1);
                }
            }
        }
        ScanRecord {
            job_id: self.job_id.clone(),
            organization_id: self.organization_id.clone(),
            property_id: self.property_id.clone(),
            completed_at: self.now,
            score: self.score,
            pages_scanned: self.pages_scanned,
            issues_count: self.findings.len() as u64,
            by_severity,
            by_check,
            changes: ChangeCounts::of(changes),
        }
    }
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
    /// Only issues of these checks (any of them); empty for all.
    pub types: Vec<String>,
    /// Only issues of this severity.
    pub severity: Option<Severity>,
    /// Only page issues whose address starts with this (compared byte for byte).
    pub url_prefix: Option<String>,
}

impl IssueFilter {
    /// Whether `issue` passes the filter.
    pub fn matches(&self, issue: &Issue) -> bool {
        self.scan_kind.is_none_or(|kind| issue.scan_kind == kind)
            && self.status.is_none_or(|status| issue.status == status)
            && (self.types.is_empty() || self.types.contains(&issue.issue_type))
            && self
                .severity
                .is_none_or(|severity| issue.severity == severity)
            && self.url_prefix.as_deref().is_none_or(|prefix| {
                issue
                    .url
                    .as_deref()
                    .is_some_and(|url| url.starts_with(prefix))
            })
    }
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

    /// The issues with these ids, in no particular order (unknown ids are left out).
    async fn issues_by_ids(&self, ids: &[IssueId]) -> StoreResult<Vec<Issue>>;

    /// The history records of these scans, in no particular order (scans without one, not
    /// completed or completed before history was kept, are left out).
    async fn scan_records(&self, job_ids: &[JobId]) -> StoreResult<Vec<ScanRecord>>;

    /// Up to `limit` of the property's history records, newest first (by completion time,
    /// then job id), strictly before `before` in that order when given.
    async fn recent_scan_records(
        &self,
        property_id: &PropertyId,
        before: Option<&ScanRecord>,
        limit: usize,
    ) -> StoreResult<Vec<ScanRecord>>;

    /// The issue changes of the property's scans after `after` (all earlier ones when
    /// `None`) up to and including `upto`, in the order of [`Self::recent_scan_records`]
    /// reversed (oldest scan first), each scan's by issue id.
    async fn issue_changes(
        &self,
        property_id: &PropertyId,
        after: Option<&ScanRecord>,
        upto: &ScanRecord,
    ) -> StoreResult<Vec<IssueChangeRecord>>;

    /// Completes a scan job and applies its findings to the property's issues, in one
    /// transaction, if `attempt` is the job's current, running attempt: the job completes with
    /// `result` (progress 100, `completedAt` = `scan.now`, and its `job.completed` event) and
    /// the findings follow the lifecycle of docs/crawler.md. For each finding, the issue of the same
    /// check and subject is updated (scan, last seen, evidence, url, title, severity, fix) and
    /// opened again if it was resolved or fixed (`resolvedAt` and `fixedAt` cleared); a
    /// finding without one becomes a new open issue. Then each open issue of the property that
    /// the scan did not find (that does not carry the scan's job id now) is resolved at `now`
    /// if the scan reached its subject (see [`ScanFindings::reached`]; a subject that is not
    /// an address is always reached).
    /// Resolved and fixed issues not found stay as they are. Each issue opened, reopened or
    /// resolved gets an [`IssueChangeRecord`], and the scan its [`ScanRecord`]
    /// ([`ScanFindings::record`] with those changes counted). Completions of one property's
    /// scans are serialised, so each sees the issues as the one before left them. `true`.
    ///
    /// If the attempt is not current (the job was cancelled, or its lease lost) nothing is
    /// written; `false`. So a cancelled or failed scan never changes an issue.
    async fn complete_scan(
        &self,
        scan: ScanFindings,
        attempt: &Attempt,
        result: &serde_json::Value,
    ) -> StoreResult<bool>;
}
