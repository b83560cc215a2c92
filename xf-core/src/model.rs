//! The records the API serves. They serialize to the spec's field names (camelCase); fields
//! that are internal to the service are skipped.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::plans::LimitOverrides;
use crate::time::Timestamp;

/// Whether a key acts for real or in the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum KeyMode {
    /// `xf_live_`: reads and writes act on the organization's data.
    Live,
    /// `xf_test_`: reads see real data, writes return deterministic mocks and change nothing.
    Test,
}

impl KeyMode {
    /// `live` or `test`.
    pub fn as_str(&self) -> &'static str {
        match self {
            KeyMode::Live => "live",
            KeyMode::Test => "test",
        }
    }

    /// The prefix of keys of this mode.
    pub fn key_prefix(&self) -> &'static str {
        match self {
            KeyMode::Live => "xf_live_",
            KeyMode::Test => "xf_test_",
        }
    }

    /// Parses `live` or `test`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "live" => Some(KeyMode::Live),
            "test" => Some(KeyMode::Test),
            _ => None,
        }
    }
}

/// A customer organization (workspace).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Organization {
    /// `org_…`
    pub id: String,
    /// Display name; the jobs' `tenantLabel`.
    pub name: String,
    /// The plan's name in the catalog.
    pub plan: String,
    /// Shown as `shopDomain` on jobs when set by the host.
    pub shop_domain: Option<String>,
    /// Per-organization overrides of the plan's limits.
    pub limits: LimitOverrides,
    /// When it was created.
    pub created_at: Timestamp,
}

/// An API key as stored: only the SHA-256 hash of the secret is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKey {
    /// `key_…`
    pub id: String,
    /// The owning organization.
    pub organization_id: String,
    /// Live or test.
    pub mode: KeyMode,
    /// Lower-case hex SHA-256 of the full key.
    #[serde(skip)]
    pub key_hash: String,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was revoked, if it was.
    pub revoked_at: Option<Timestamp>,
}

/// A website registered by an organization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Property {
    /// `prop_…`
    pub id: String,
    /// The owning organization.
    #[serde(skip)]
    pub organization_id: String,
    /// Display name (defaults to the URL's host).
    pub name: String,
    /// The normalised URL; unique within the organization.
    pub url: String,
    /// Whether the host marked ownership as verified.
    pub verified: bool,
    /// When it was created.
    pub created_at: Timestamp,
    /// The Search Console site linked by the host, if any.
    #[serde(skip)]
    pub gsc_site_url: Option<String>,
}

/// The job states of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    /// Queued, not started.
    Pending,
    /// Being worked on.
    Processing,
    /// Finished with a result.
    Completed,
    /// Finished with an error.
    Failed,
    /// Stopped on request.
    Cancelled,
}

impl JobStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [JobStatus; 5] = [
        JobStatus::Pending,
        JobStatus::Processing,
        JobStatus::Completed,
        JobStatus::Failed,
        JobStatus::Cancelled,
    ];

    /// The wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            JobStatus::Pending => "pending",
            JobStatus::Processing => "processing",
            JobStatus::Completed => "completed",
            JobStatus::Failed => "failed",
            JobStatus::Cancelled => "cancelled",
        }
    }

    /// Parses a wire name.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Pending or processing.
    pub fn is_active(&self) -> bool {
        matches!(self, JobStatus::Pending | JobStatus::Processing)
    }
}

/// The job type of every scan and crawl.
pub const SEO_SCAN: &str = "seo-scan";

/// The outcome of a completed scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobResult {
    /// 0 to 100.
    pub score: u32,
    /// Pages fetched and analysed.
    pub pages_scanned: u32,
    /// Issues found.
    pub issues_count: u32,
}

/// A background job (a scan).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    /// `job_…`
    pub id: String,
    /// The owning organization.
    #[serde(skip)]
    pub organization_id: String,
    /// `seo-scan`.
    #[serde(rename = "type")]
    pub job_type: String,
    /// Lifecycle state.
    pub status: JobStatus,
    /// 0 to 100; kept when cancelled.
    pub progress: u8,
    /// The scanned property.
    pub property_id: String,
    /// The property's name when the job was queued.
    pub property_name: String,
    /// Always `organization`.
    pub tenant_type: String,
    /// The organization's name.
    pub tenant_label: String,
    /// The organization's shop domain, if the host set one.
    pub shop_domain: Option<String>,
    /// Page budget of the crawl.
    #[serde(skip)]
    pub max_pages: u32,
    /// Depth budget of the crawl (clicks from the start URL).
    #[serde(skip)]
    pub max_depth: u32,
    /// When it was queued.
    pub created_at: Timestamp,
    /// When a worker picked it up.
    pub started_at: Option<Timestamp>,
    /// When it reached a final state.
    pub completed_at: Option<Timestamp>,
    /// Why it failed.
    pub error: Option<String>,
    /// Present on completed jobs only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<JobResult>,
}

/// How a job ended, as recorded by the job engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    /// Completed with a result.
    Completed(JobResult),
    /// Failed with a message.
    Failed(String),
}

/// Whether an issue concerns one page or the whole site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ScanKind {
    /// About a single URL.
    Page,
    /// About the site as a whole (robots.txt, sitemap, duplicates, broken links, loops).
    Site,
}

impl ScanKind {
    /// The wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            ScanKind::Page => "page",
            ScanKind::Site => "site",
        }
    }

    /// Parses a wire name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "page" => Some(ScanKind::Page),
            "site" => Some(ScanKind::Site),
            _ => None,
        }
    }
}

/// The lifecycle state of an issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum IssueStatus {
    /// Seen in the latest completed scan.
    Open,
    /// A later completed scan fetched the URL and no longer found it.
    Resolved,
    /// Marked fixed by the host.
    Fixed,
}

impl IssueStatus {
    /// The wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            IssueStatus::Open => "open",
            IssueStatus::Resolved => "resolved",
            IssueStatus::Fixed => "fixed",
        }
    }

    /// Parses a wire name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "open" => Some(IssueStatus::Open),
            "resolved" => Some(IssueStatus::Resolved),
            "fixed" => Some(IssueStatus::Fixed),
            _ => None,
        }
    }
}

/// How serious an issue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Breaks indexing or the page.
    Error,
    /// Hurts ranking or users.
    Warning,
    /// Worth knowing.
    Notice,
}

impl Severity {
    /// The wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Notice => "notice",
        }
    }

    /// Parses a wire name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "error" => Some(Severity::Error),
            "warning" => Some(Severity::Warning),
            "notice" => Some(Severity::Notice),
            _ => None,
        }
    }
}

/// A problem a scan found on a property.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Issue {
    /// `iss_…`
    pub id: String,
    /// The owning organization.
    #[serde(skip)]
    pub organization_id: String,
    /// The property it was found on.
    pub property_id: String,
    /// The scan that last saw it.
    pub job_id: String,
    /// `page` or `site`.
    pub scan_kind: ScanKind,
    /// A stable identifier of the check, e.g. `missing_title`.
    #[serde(rename = "type")]
    pub issue_type: String,
    /// How serious it is.
    pub severity: Severity,
    /// The page, for page issues; null for site issues.
    pub url: Option<String>,
    /// What was found, for people.
    pub message: String,
    /// Lifecycle state.
    pub status: IssueStatus,
    /// When it was first found.
    pub created_at: Timestamp,
    /// When a scan last found it.
    pub last_seen_at: Timestamp,
    /// When a later scan no longer found it.
    pub resolved_at: Option<Timestamp>,
    /// When the host marked it fixed.
    pub fixed_at: Option<Timestamp>,
}

/// Counts of a property's issues by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct IssueSummary {
    /// Open issues.
    pub open: u64,
    /// Resolved issues.
    pub resolved: u64,
    /// Fixed issues.
    pub fixed: u64,
    /// All issues.
    pub total: u64,
}

/// A shared audit report link created by the host for a completed scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The secret token of the public link.
    pub token: String,
    /// The owning organization.
    #[serde(skip)]
    pub organization_id: String,
    /// The reported property.
    pub property_id: String,
    /// The completed scan job it shows.
    pub scan_id: String,
    /// After this the link is expired.
    pub expires_at: Timestamp,
    /// Views counted by the host's public page.
    pub view_count: u64,
    /// When it was created.
    pub created_at: Timestamp,
}

/// Monthly plan meters of an organization.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageCounters {
    /// Live scans queued this month.
    pub scans: u64,
    /// AI input tokens, recorded by the host.
    pub ai_input_tokens: u64,
    /// AI output tokens, recorded by the host.
    pub ai_output_tokens: u64,
    /// Redirects created, recorded by the host.
    pub redirects_created: u64,
    /// Images optimized, recorded by the host.
    pub images_optimized: u64,
}

impl UsageCounters {
    /// Field-wise saturating sum.
    pub fn plus(&self, other: &UsageCounters) -> UsageCounters {
        UsageCounters {
            scans: self.scans.saturating_add(other.scans),
            ai_input_tokens: self.ai_input_tokens.saturating_add(other.ai_input_tokens),
            ai_output_tokens: self.ai_output_tokens.saturating_add(other.ai_output_tokens),
            redirects_created: self
                .redirects_created
                .saturating_add(other.redirects_created),
            images_optimized: self.images_optimized.saturating_add(other.images_optimized),
        }
    }
}

/// Job counts of one type (or all types) in a period.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct JobCounts {
    /// Jobs created.
    pub total: u64,
    /// Of those, completed.
    pub completed: u64,
    /// Of those, failed.
    pub failed: u64,
}
