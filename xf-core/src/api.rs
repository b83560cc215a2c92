//! Inputs and outputs of the use cases, shaped as the API serves them (camelCase field names
//! of the spec). `xf-tower` deserializes the inputs and serializes the outputs as they are.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ids::{JobId, OrganizationId, WebhookId};
use crate::model::{
    ChangeCounts, EventType, Issue, IssueChange, IssueStatus, IssueSummary, Job, JobCounts,
    JobStatus, Property, ScanKind, Severity, SeverityCounts, UsageCounters, Webhook,
};
pub use crate::params::Includes;
use crate::params::{
    CheckIdList, CrawlBudget, Cursor, JobTypeName, PageSize, PropertyId, PropertyName, PropertyUrl,
    UrlPrefix, WebhookName, WebhookUrl,
};
use crate::time::Timestamp;

/// A page of a list and the cursor of the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The items, newest first.
    pub items: Vec<T>,
    /// `meta.nextCursor`; `None` on the last page.
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    /// The same page with each item converted.
    pub fn map<U>(self, convert: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(convert).collect(),
            next_cursor: self.next_cursor,
        }
    }
}

/// `limit` and `cursor` of a list request, as query parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
pub struct PageParams {
    /// Page size, 1 to 100 (default 40).
    #[cfg_attr(feature = "openapi", param(inline))]
    pub limit: Option<PageSize>,
    /// `meta.nextCursor` of the previous page. Bound to the list and its filters.
    #[cfg_attr(feature = "openapi", param(inline))]
    pub cursor: Option<Cursor>,
}

/// `GET /health`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Health {
    /// `ok`, or `degraded` when storage does not answer.
    pub status: String,
    /// The path version label, `v1`.
    pub version: String,
    /// Semantic version of the API, `1.0.0`.
    pub api_version: String,
    /// Now.
    pub timestamp: Timestamp,
    /// The host's status page; left out when the host configured none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub status_page: Option<String>,
}

/// What a readiness probe (`GET /readyz`) reports: each check's state. Ready when the store
/// answers, its schema is current, and the background runtime, if this process started one,
/// runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Readiness {
    /// `ok`, or `unreachable` when the store does not answer within the probe's time.
    pub store: &'static str,
    /// `ok`; `pending` when the store's schema is older than this build's (migrations not
    /// applied yet); `unknown` while the store is unreachable.
    pub migrations: &'static str,
    /// `running`; `stopped` when the runtime this process started is stopping or stopped;
    /// `not_started` when this process started none (other processes run the jobs), which
    /// does not make it unready.
    pub runtime: &'static str,
}

impl Readiness {
    /// Whether every check passes.
    pub fn is_ready(&self) -> bool {
        self.store == "ok" && self.migrations == "ok" && self.runtime != "stopped"
    }
}

/// `organization` of the overview.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OrganizationSummary {
    /// `org_…`
    pub id: OrganizationId,
    /// Display name.
    pub name: String,
    /// Plan name.
    pub plan: String,
}

/// `usage` of the overview.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct OverviewUsage {
    /// Plan name.
    pub plan: String,
    /// The current month, e.g. `November 2026`.
    pub period_label: String,
}

/// `totals` of the overview.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct OverviewTotals {
    /// Properties of the organization.
    pub properties: u64,
    /// Pending or processing jobs.
    pub active_jobs: u64,
}

/// `GET /organization`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OrganizationOverview {
    /// Who.
    pub organization: OrganizationSummary,
    /// Plan and period.
    pub usage: OverviewUsage,
    /// Counts.
    pub totals: OverviewTotals,
}

/// `POST /properties` body.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(examples(json!({"url": "https://www.example.com/", "name": "Example shop"}))))]
pub struct NewProperty {
    /// Absolute `http`/`https` URL with a host name; normalised (lower-case host, no default
    /// port, no fragment). A URL with a path (`https://example.com/book/`) is a URL-prefix
    /// property, as in Search Console: its scans start there and fetch only addresses whose
    /// path starts with that path (robots.txt and sitemaps aside).
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub url: PropertyUrl,
    /// Display name; defaults to the URL's host when left out or blank.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub name: Option<PropertyName>,
}

/// `include` of `GET /properties` and `GET /properties/{propertyId}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
pub struct IncludeParams {
    /// Comma-separated enrichments: `gsc`, `lastScan`.
    #[cfg_attr(feature = "openapi", param(inline))]
    #[serde(default)]
    pub include: Includes,
}

/// The Search Console state added by `include=gsc`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PropertyGsc {
    /// Whether a Search Console site is linked.
    pub linked: bool,
    /// The linked site, e.g. `sc-domain:example.com`.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub site_url: Option<String>,
    /// When the snapshot was last synced; null before the first sync.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub last_synced_at: Option<Timestamp>,
    /// Clicks in the snapshot's 28 days.
    #[serde(rename = "clicks28d")]
    pub clicks_28d: u64,
    /// Impressions in the snapshot's 28 days.
    #[serde(rename = "impressions28d")]
    pub impressions_28d: u64,
}

/// The latest scan added by `include=lastScan`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LastScan {
    /// The scan job.
    pub job_id: JobId,
    /// Its state.
    pub status: JobStatus,
    /// Score of a completed scan.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub score: Option<u32>,
    /// Pages of a completed scan.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub pages_scanned: Option<u32>,
    /// Issues of a completed scan.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub issues_count: Option<u32>,
    /// When it finished.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub completed_at: Option<Timestamp>,
}

/// A property with the enrichments asked for.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PropertyView {
    /// The property's own fields.
    #[serde(flatten)]
    pub property: Property,
    /// With `include=gsc`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub gsc: Option<PropertyGsc>,
    /// With `include=lastScan`: the latest scan, or null when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<LastScan>))]
    pub last_scan: Option<Option<LastScan>>,
}

/// Body of `POST /properties/{id}/scans` and `/crawls`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(examples(json!({"maxPages": 100, "maxDepth": 3}))))]
pub struct ScanOptions {
    /// Page budget; clamped to the plan's.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub max_pages: Option<CrawlBudget>,
    /// Depth budget (clicks from the start URL); clamped to the plan's.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub max_depth: Option<CrawlBudget>,
    /// Which pages are rendered in a browser: `never`, `auto` (the pages script builds) or
    /// `always`. The default is `auto` where the server renders pages and `never` where it
    /// does not; `auto` or `always` there is a `validation_error`.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub render: Option<crate::model::RenderMode>,
}

/// Which endpoint queued a scan (both run `seo-scan` jobs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScanEndpoint {
    /// `POST /properties/{id}/scans`
    Scan,
    /// `POST /properties/{id}/crawls`: the response's job also shows `progress`.
    Crawl,
}

/// The job part of a scan-queued response.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct QueuedJob {
    /// `job_…`
    pub id: JobId,
    /// `pending`.
    pub status: JobStatus,
    /// `seo-scan`.
    #[serde(rename = "type")]
    pub job_type: String,
    /// The property.
    pub property_id: PropertyId,
    /// When it was queued.
    pub created_at: Timestamp,
    /// Crawls only: 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub progress: Option<u8>,
}

/// Page and depth budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CrawlLimits {
    /// Pages.
    pub max_pages: u64,
    /// Depth.
    pub max_depth: u64,
}

/// `202` of scans and crawls.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ScanQueued {
    /// The new job.
    pub job: QueuedJob,
    /// The plan's crawler tier.
    pub crawl_tier: String,
    /// What will run after clamping.
    pub effective_limits: CrawlLimits,
    /// Which pages the scan renders in a browser.
    pub render: crate::model::RenderMode,
    /// For people: queued, and whether limits were clamped.
    pub message: String,
}

/// One item of `POST /scans/batch`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BatchScanItem {
    /// The property to scan. An id that names no property of the organization fails this
    /// item alone (`not_found` in its `error`); one of another form breaks the request.
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub property_id: PropertyId,
    /// As for a single scan.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub max_pages: Option<CrawlBudget>,
    /// As for a single scan.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub max_depth: Option<CrawlBudget>,
    /// As for a single scan.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub render: Option<crate::model::RenderMode>,
}

/// Body of `POST /scans/batch`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(examples(json!({"scans": [
    {"propertyId": "prop_0193a1b2c3d4e5f60718293a4b5c6d7e", "maxPages": 50},
    {"propertyId": "prop_0193a1b2c3d4e5f60718293a4b5c6d7f"}
]}))))]
pub struct BatchScanRequest {
    /// 1 to 25 items.
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 25))]
    pub scans: Vec<BatchScanItem>,
}

/// Why one batch item failed.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ItemError {
    /// An error code of the error table.
    pub code: String,
    /// For people.
    pub message: String,
}

/// The outcome of one batch item: a job or an error.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BatchItemResult {
    /// The item's property.
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub property_id: PropertyId,
    /// The queued job, or null.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub job: Option<Job>,
    /// The failure, or null.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub error: Option<ItemError>,
}

/// `202` of `POST /scans/batch`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BatchScanResults {
    /// In request order.
    pub results: Vec<BatchItemResult>,
}

/// Filters of `GET /jobs`, as query parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
#[serde(rename_all = "camelCase")]
pub struct JobListQuery {
    /// Only jobs in this state.
    #[cfg_attr(feature = "openapi", param(inline))]
    pub status: Option<JobStatus>,
    /// Only this property's jobs.
    #[cfg_attr(feature = "openapi", param(inline))]
    pub property_id: Option<PropertyId>,
    /// Only jobs of this type, e.g. `seo-scan`.
    #[cfg_attr(feature = "openapi", param(inline, rename = "type"))]
    #[serde(rename = "type")]
    pub job_type: Option<JobTypeName>,
}

/// `200` of `POST /jobs/{id}/cancel`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CancelledJob {
    /// The job, now cancelled.
    pub job: Job,
    /// For people.
    pub message: String,
}

/// Filters of `GET /properties/{id}/issues`, as query parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
#[serde(rename_all = "camelCase")]
pub struct IssueListQuery {
    /// Only page or only site issues.
    #[cfg_attr(feature = "openapi", param(inline))]
    pub scan_kind: Option<ScanKind>,
    /// Only issues in this state.
    #[cfg_attr(feature = "openapi", param(inline))]
    pub status: Option<IssueStatus>,
    /// Only issues of these checks: ids of the catalogue, comma-separated (beyond the spec).
    #[cfg_attr(feature = "openapi", param(inline, rename = "type"))]
    #[serde(rename = "type")]
    pub types: Option<CheckIdList>,
    /// Only issues of this severity (beyond the spec).
    #[cfg_attr(feature = "openapi", param(inline))]
    pub severity: Option<Severity>,
    /// Only page issues whose address starts with this (beyond the spec).
    #[cfg_attr(feature = "openapi", param(inline))]
    pub url: Option<UrlPrefix>,
}

/// One scan of a property in its history (`GET /properties/{propertyId}/scans`, beyond the
/// spec). The figures are null until the scan completes; `bySeverity` and `changes` are null
/// for scans completed before history was kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ScanHistoryItem {
    /// The scan's job, `job_…`.
    pub job_id: JobId,
    /// The job's state.
    pub status: JobStatus,
    /// When it was queued.
    pub created_at: Timestamp,
    /// When a worker picked it up.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub started_at: Option<Timestamp>,
    /// When it reached a final state.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub completed_at: Option<Timestamp>,
    /// Why it failed.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub error: Option<String>,
    /// The site's score, 0 to 100.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub score: Option<u32>,
    /// Pages audited.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub pages_scanned: Option<u64>,
    /// Findings.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub issues_count: Option<u64>,
    /// Findings by severity.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub by_severity: Option<SeverityCounts>,
    /// Issues the scan opened, resolved and reopened.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub changes: Option<ChangeCounts>,
}

/// Body of `PUT /properties/{propertyId}/schedule` (beyond the spec).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(examples(json!({"frequency": "weekly", "time": "06:30", "timezone": "Europe/Berlin", "dayOfWeek": "monday", "maxPages": 200}))))]
pub struct ScheduleRequest {
    /// How often.
    pub frequency: crate::model::schedule::Frequency,
    /// The local time of day, `HH:MM` on a 24-hour clock.
    #[cfg_attr(
        feature = "openapi",
        schema(pattern = "^([01][0-9]|2[0-3]):[0-5][0-9]$", example = "06:30")
    )]
    pub time: String,
    /// An IANA time zone name, such as `Europe/Berlin` or `UTC`.
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 64, example = "Europe/Berlin")
    )]
    pub timezone: String,
    /// The day of weekly schedules (required for them, refused for the others).
    #[serde(default)]
    pub day_of_week: Option<crate::model::schedule::Weekday>,
    /// The day of monthly schedules, 1 to 31 (the month's last day when it is shorter;
    /// required for them, refused for the others).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub day_of_month: Option<crate::params::DayOfMonth>,
    /// Page budget of each scan; clamped to the plan's when the scan is queued.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub max_pages: Option<CrawlBudget>,
    /// Depth budget of each scan; clamped to the plan's.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub max_depth: Option<CrawlBudget>,
}

/// A property's scan schedule (beyond the spec).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ScheduleView {
    /// The property.
    pub property_id: crate::ids::PropertyId,
    /// How often.
    pub frequency: crate::model::schedule::Frequency,
    /// The local time, `HH:MM`.
    pub time: String,
    /// The IANA time zone.
    pub timezone: String,
    /// The day of weekly schedules.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub day_of_week: Option<crate::model::schedule::Weekday>,
    /// The day of monthly schedules.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub day_of_month: Option<u8>,
    /// Page budget of each scan; null for the plan's.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub max_pages: Option<u32>,
    /// Depth budget of each scan; null for the plan's.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub max_depth: Option<u32>,
    /// The next slot.
    pub next_run_at: Timestamp,
    /// When it was first set.
    pub created_at: Timestamp,
    /// When it was last set.
    pub updated_at: Timestamp,
    /// The latest slots claimed (up to 10, newest first), with what each did.
    pub runs: Vec<crate::model::schedule::ScheduleRun>,
}

/// `200` of `DELETE /properties/{propertyId}/schedule`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeletedSchedule {
    /// The property.
    pub property_id: crate::ids::PropertyId,
    /// Always `true`.
    pub deleted: bool,
}

/// What one pass of the scheduler did ([`crate::Xf::run_due_schedules`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScheduleTick {
    /// Slots that queued a scan.
    pub queued: usize,
    /// Slots skipped because a scan of the property was pending or running.
    pub skipped_busy: usize,
    /// Slots that queued nothing for want of quota.
    pub quota_exceeded: usize,
    /// Due slots another instance claimed first.
    pub lost: usize,
}

/// Query of `GET /properties/{propertyId}/scans/{jobId}/changes`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
#[serde(rename_all = "camelCase")]
pub struct ChangesQuery {
    /// An earlier completed scan of the property to compare with; the scan before it when
    /// absent.
    #[cfg_attr(feature = "openapi", param(inline))]
    pub against: Option<JobId>,
}

/// How one check's findings moved between two scans.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CheckDelta {
    /// The check's id.
    #[serde(rename = "type")]
    pub issue_type: String,
    /// Its findings in the earlier scan (0 when there is none).
    pub before: u64,
    /// Its findings in the later scan.
    pub after: u64,
    /// `after - before`.
    pub delta: i64,
    /// Its issues opened between the two.
    pub opened: u64,
    /// Its issues resolved between the two.
    pub resolved: u64,
    /// Its issues reopened between the two.
    pub reopened: u64,
}

/// One issue that changed between two scans.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IssueChangeItem {
    /// What happened to it between the two scans.
    pub change: IssueChange,
    /// The issue as it is now.
    pub issue: Issue,
}

/// `data` of `GET /properties/{propertyId}/scans/{jobId}/changes`: the net changes between
/// an earlier scan (`against`) and this one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ScanComparison {
    /// The later scan.
    pub scan: ScanHistoryItem,
    /// The earlier scan; null when the later one is the property's first recorded scan.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub against: Option<ScanHistoryItem>,
    /// The changes counted over all pages.
    pub totals: ChangeCounts,
    /// Per check, for every check with findings in either scan or a change between them,
    /// sorted by id.
    pub checks: Vec<CheckDelta>,
    /// A page of the changed issues, sorted by issue id.
    pub changes: Vec<IssueChangeItem>,
}

/// A page of issues with the property's lifecycle summary.
#[derive(Debug, Clone)]
pub struct IssuePage {
    /// Counts over all the property's issues.
    pub summary: IssueSummary,
    /// The page.
    pub issues: Page<Issue>,
}

/// A report in lists.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReportItem {
    /// Secret token of the share link.
    pub token: String,
    /// The property.
    pub property_id: PropertyId,
    /// Its name.
    pub property_name: String,
    /// Its URL.
    pub property_url: String,
    /// The completed scan.
    pub scan_id: JobId,
    /// Expiry of the link.
    pub expires_at: Timestamp,
    /// Views counted by the host.
    pub view_count: u64,
    /// When it was created.
    pub created_at: Timestamp,
    /// The public page: the host's public base URL + `/r/{token}`.
    pub public_url: String,
}

/// A report in detail.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReportDetail {
    /// The list fields.
    #[serde(flatten)]
    pub item: ReportItem,
    /// The scan's score.
    pub score: u32,
    /// The scan's page count.
    pub pages_scanned: u32,
    /// When the scan completed.
    pub scanned_at: Timestamp,
    /// Whether the link has expired.
    pub expired: bool,
}

/// Plan meters with limits.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageLimits {
    /// Live scans per month.
    pub scans_per_month: u64,
    /// AI credits per month.
    pub ai_credits_per_month: u64,
}

/// `usage` of `GET /usage`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UsageMeters {
    /// `YYYY-MM`.
    pub period: String,
    /// Plan name.
    pub plan: String,
    /// This month's counters.
    pub counters: UsageCounters,
    /// The plan's monthly limits.
    pub limits: UsageLimits,
}

/// Totals of `activity`.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ActivityTotals {
    /// Jobs created this month.
    pub jobs: u64,
    /// Of those, completed.
    pub completed: u64,
    /// Of those, failed.
    pub failed: u64,
}

/// `activity` of `GET /usage`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Activity {
    /// `YYYY-MM`.
    pub period: String,
    /// Over all job types.
    pub totals: ActivityTotals,
    /// Per job type.
    pub by_type: BTreeMap<String, JobCounts>,
}

/// `GET /usage`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    /// Meters.
    pub usage: UsageMeters,
    /// Jobs this month.
    pub activity: Activity,
    /// The plan's crawl bounds.
    pub crawl_limits: CrawlLimits,
}

/// `period` of `GET /limits`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LimitsPeriod {
    /// First day of the month, `YYYY-MM-DD`.
    pub start: String,
    /// Last day of the month, `YYYY-MM-DD`.
    pub end: String,
}

/// Names of the rate-limit headers.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RateLimitHeaderNames {
    /// Header with the remaining reads.
    pub read: String,
    /// Header with the remaining writes.
    pub write: String,
}

/// `developerApi` of `GET /limits`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeveloperApiLimits {
    /// Reads per key per hour.
    pub read_per_hour: u64,
    /// Writes per key per hour.
    pub write_per_hour: u64,
    /// Writes per organization per day.
    pub org_write_daily: u64,
    /// Keys active at once.
    pub max_active_keys: u64,
    /// The headers that carry the remaining counts.
    pub rate_limit_headers: RateLimitHeaderNames,
}

/// `GET /limits`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LimitsReport {
    /// Plan name.
    pub plan: String,
    /// The current month.
    pub period: LimitsPeriod,
    /// Rate limits.
    pub developer_api: DeveloperApiLimits,
}

/// One live rate-limit window.
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RateWindow {
    /// Requests allowed in the window.
    pub limit: u64,
    /// Requests left in the window.
    pub remaining: u64,
    /// When the window resets.
    pub reset_at: Timestamp,
}

/// `GET /rate-limits`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RateLimitsReport {
    /// This key's hourly reads.
    pub read: RateWindow,
    /// This key's hourly writes.
    pub write: RateWindow,
    /// The organization's daily writes.
    pub org_write_daily: RateWindow,
}

/// Header names of the remaining-request counters.
pub const READ_REMAINING_HEADER: &str = "X-Developer-Api-RateLimit-read-Remaining";
/// Header names of the remaining-request counters.
pub const WRITE_REMAINING_HEADER: &str = "X-Developer-Api-RateLimit-write-Remaining";

/// `POST /webhooks` body.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(examples(json!({
    "name": "Job outcomes",
    "url": "https://hooks.example.com/xf",
    "events": ["job.completed", "job.failed"]
}))))]
pub struct NewWebhook {
    /// A name for people.
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub name: WebhookName,
    /// Where deliveries are posted: `https` (plain `http` only where the host allows it), a
    /// host that is not and does not resolve to a loopback, private, link-local, CGNAT or
    /// metadata address.
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub url: WebhookUrl,
    /// The events to receive: not empty, and only events of the APIs the organization's plan
    /// includes (job events: the developer API; media and channel events: the media API).
    /// Left out: every event the plan may receive.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(min_items = 1))]
    pub events: Option<Vec<EventType>>,
    /// Whether deliveries are made; true when left out.
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// `PATCH /webhooks/{webhookId}` body: each field left out (or null) is kept.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(examples(json!({"enabled": false}))))]
pub struct WebhookPatch {
    /// A new name.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub name: Option<WebhookName>,
    /// A new URL, checked as on create.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(inline))]
    pub url: Option<WebhookUrl>,
    /// New events; not empty, and only events of the APIs the plan includes.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(min_items = 1))]
    pub events: Option<Vec<EventType>>,
    /// Turn deliveries on or off. Turning them off drops the deliveries still queued.
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// `POST /webhooks/{webhookId}/test` body (optional).
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TestDeliveryRequest {
    /// The event to simulate (one the plan may receive); left out, the first event the plan
    /// may receive (`job.completed`, or `media.post.published` for a media-only plan).
    #[serde(default)]
    pub event: Option<EventType>,
}

/// `data` of `POST /webhooks` (201) and `POST /webhooks/{webhookId}/rotate-secret` (200).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WebhookWithSecret {
    /// The webhook.
    pub webhook: Webhook,
    /// The full signing secret (`whsec_…`), shown only in this response.
    pub secret: String,
}

/// `data` of `DELETE /webhooks/{webhookId}`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeletedWebhook {
    /// The deleted webhook's id.
    pub id: WebhookId,
    /// Always true.
    pub deleted: bool,
}

/// `limit` and `cursor` of `GET /webhooks/{webhookId}/deliveries`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
pub struct DeliveryListParams {
    /// Page size, 1 to 100 (default 25).
    #[cfg_attr(feature = "openapi", param(inline))]
    pub limit: Option<PageSize>,
    /// `meta.nextCursor` of the previous page.
    #[cfg_attr(feature = "openapi", param(inline))]
    pub cursor: Option<Cursor>,
}

impl DeliveryListParams {
    /// The page request, with the log's default size.
    pub fn page(&self) -> PageParams {
        PageParams {
            limit: Some(self.limit.unwrap_or(PageSize::DELIVERIES_DEFAULT)),
            cursor: self.cursor.clone(),
        }
    }
}

/// `GET /organization/gsc`: the portfolio summary, from stored snapshots only.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GscPortfolio {
    /// Whether the host has a Google OAuth client configured.
    pub configured: bool,
    /// Whether the organization has a linked Google account that has not been revoked.
    pub org_connected: bool,
    /// Properties mapped to a Search Console site.
    pub linked_properties: u64,
    /// All the organization's properties.
    pub total_properties: u64,
    /// Clicks of the linked properties' snapshots (28 days each).
    #[serde(rename = "totalClicks28d")]
    pub total_clicks_28d: u64,
    /// Impressions of the linked properties' snapshots (28 days each).
    #[serde(rename = "totalImpressions28d")]
    pub total_impressions_28d: u64,
    /// Linked properties never synced, or last synced more than 48 hours ago.
    pub stale_sync_count: u64,
    /// Google answered `invalid_grant` for the organization's token; link the account again.
    pub token_revoked: bool,
}

/// The connection state of a property's Search Console data.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GscConnection {
    /// The property.
    pub property_id: crate::ids::PropertyId,
    /// Whether the host has a Google OAuth client configured.
    pub configured: bool,
    /// Whether the organization has a linked Google account that has not been revoked.
    pub org_connected: bool,
    /// Google answered `invalid_grant` for the organization's token.
    pub token_revoked: bool,
    /// Whether the property is mapped to a Search Console site.
    pub linked: bool,
    /// That site (`sc-domain:example.com` or a URL prefix).
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub site_url: Option<String>,
    /// When the snapshot was synced; null before the first sync.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub last_synced_at: Option<Timestamp>,
    /// Linked, and never synced or last synced more than 48 hours ago.
    pub stale: bool,
}

/// One query row.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GscQueryRow {
    /// The search query.
    pub query: String,
    /// Its figures over the snapshot's 28 days.
    #[serde(flatten)]
    pub metrics: crate::model::gsc::Metrics,
}

/// One page row, with what the latest completed scan saw of it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GscPageRow {
    /// The page's URL as Google reports it.
    pub page: String,
    /// Its figures over the snapshot's 28 days.
    #[serde(flatten)]
    pub metrics: crate::model::gsc::Metrics,
    /// The crawl correlation: the status and open issues the property's latest completed scan
    /// (as of the sync) found at this URL; null when that scan did not fetch it.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub crawl: Option<crate::model::gsc::PageCrawl>,
}

/// The stored 28-day snapshot.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GscSnapshotView {
    /// The Search Console site it was fetched from.
    pub site_url: String,
    /// When the sync finished.
    pub synced_at: Timestamp,
    /// First day of the window (`YYYY-MM-DD`).
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = Date))]
    pub start_date: chrono::NaiveDate,
    /// Last day: the latest date Google had final data for.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = Date))]
    pub end_date: chrono::NaiveDate,
    /// Always `final`: only finalised data is fetched.
    pub data_state: &'static str,
    /// Totals over the window.
    pub totals: crate::model::gsc::Metrics,
    /// One entry per day, oldest first (28 entries).
    pub daily: Vec<crate::model::gsc::GscDay>,
    /// Query rows in the snapshot (all of them are in `GET .../gsc/queries`).
    pub query_count: u32,
    /// Page rows in the snapshot (all of them are in `GET .../gsc/pages`).
    pub page_count: u32,
    /// The top 10 queries by clicks.
    pub top_queries: Vec<GscQueryRow>,
    /// The top 10 pages by clicks, with their crawl correlation.
    pub top_pages: Vec<GscPageRow>,
    /// How the page rows meet the latest completed scan.
    pub crawl_correlation: crate::model::gsc::CrawlCorrelation,
}

/// `GET /properties/{id}/gsc`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PropertyGscDetail {
    /// The connection state.
    #[serde(flatten)]
    pub connection: GscConnection,
    /// The stored snapshot of the linked site; null when the property is not linked or was
    /// not synced since it was linked to this site.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub snapshot: Option<GscSnapshotView>,
}

/// `GET /properties/{id}/gsc/overview`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GscOverview {
    /// The connection state.
    #[serde(flatten)]
    pub connection: GscConnection,
    /// First day of the snapshot's window; null without a snapshot.
    #[cfg_attr(feature = "openapi", schema(required = true, value_type = Option<String>, format = Date))]
    pub start_date: Option<chrono::NaiveDate>,
    /// Last day of the snapshot's window; null without a snapshot.
    #[cfg_attr(feature = "openapi", schema(required = true, value_type = Option<String>, format = Date))]
    pub end_date: Option<chrono::NaiveDate>,
    /// Totals over the window; zero without a snapshot.
    pub totals: crate::model::gsc::Metrics,
    /// Query rows in the snapshot.
    pub query_count: u32,
    /// Page rows in the snapshot.
    pub page_count: u32,
}

/// `POST /properties/{id}/gsc/sync`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GscSyncResult {
    /// `true` when this request fetched and stored a new snapshot; `false` when a sync of the
    /// property was already running, so nothing was fetched again (`syncedAt` is then the
    /// stored snapshot's, or null).
    pub synced: bool,
    /// When the stored snapshot was synced.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub synced_at: Option<Timestamp>,
}

/// Body of `PUT /admin/organizations/{orgId}/gsc`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GscAccountLink {
    /// The Google OAuth refresh token (scope `webmasters.readonly`), from the host's consent
    /// flow. Stored sealed with the host's secret.
    #[cfg_attr(feature = "openapi", schema(pattern = r"^\s*[!-~]{1,2048}\s*$"))]
    pub refresh_token: String,
    /// The Google account's address, for display.
    #[serde(default)]
    pub account_email: Option<String>,
}

/// The organization's linked Google account, as the admin API shows it (never the token).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GscAccountView {
    /// The organization.
    pub organization_id: OrganizationId,
    /// The Google account's address, if the host gave one.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub account_email: Option<String>,
    /// When it was linked.
    pub linked_at: Timestamp,
    /// Whether Google has since refused the token.
    pub token_revoked: bool,
}
