//! The records the API serves and the stores keep. Those the API shows serialize to the spec's
//! field names (camelCase); a field internal to the service is skipped. The job is the
//! exception to sharing one type: the engine's [`JobRecord`] carries the payload, attempts and
//! lease that the API's [`Job`] never shows, so the two are separate types.

pub mod gsc;
pub mod history;
pub mod media;
pub mod schedule;

pub use history::{
    net_changes, ChangeCounts, IssueChange, IssueChangeRecord, ScanRecord, SeverityCounts,
};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{
    ApiKeyId, DeliveryId, EventId, IssueId, JobId, OrganizationId, PropertyId, WebhookId,
};
use crate::plans::LimitOverrides;
use crate::time::Timestamp;

/// Whether a key acts for real or in the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Organization {
    /// `org_…`
    pub id: OrganizationId,
    /// Display name; the jobs' `tenantLabel`.
    pub name: String,
    /// The plan's name in the catalog.
    pub plan: String,
    /// Shown as `shopDomain` on jobs when set by the host.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub shop_domain: Option<String>,
    /// Per-organization overrides of the plan's limits.
    pub limits: LimitOverrides,
    /// When it was created.
    pub created_at: Timestamp,
}

/// An API key as stored: only the SHA-256 hash of the secret is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ApiKey {
    /// `key_…`
    pub id: ApiKeyId,
    /// The owning organization.
    pub organization_id: OrganizationId,
    /// Live or test.
    pub mode: KeyMode,
    /// Lower-case hex SHA-256 of the full key.
    #[serde(skip)]
    pub key_hash: String,
    /// The key's first characters (`xf_live_` and four more), to tell keys apart; keys
    /// made before these were kept show only their mode's prefix.
    pub prefix: String,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was revoked, if it was.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub revoked_at: Option<Timestamp>,
    /// When a request last authenticated with it, to the minute (it is written at most once
    /// a minute); `null` if none has.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub last_used_at: Option<Timestamp>,
}

/// A website registered by an organization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Property {
    /// `prop_…`
    pub id: PropertyId,
    /// The owning organization.
    #[serde(skip)]
    pub organization_id: OrganizationId,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct JobResult {
    /// 0 to 100.
    pub score: u32,
    /// Pages fetched and analysed.
    pub pages_scanned: u32,
    /// Issues found.
    pub issues_count: u32,
}

/// What a job is about, copied from its property and organization when it is queued, so the
/// job reads the same after a rename.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSubject {
    /// The property.
    pub property_id: PropertyId,
    /// The property's name when the job was queued.
    pub property_name: String,
    /// The organization's name.
    pub tenant_label: String,
    /// The organization's shop domain, if the host set one.
    pub shop_domain: Option<String>,
}

/// A job as the engine keeps it: everything the API shows, and the payload, attempts and
/// lease that drive it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRecord {
    /// `job_…`
    pub id: JobId,
    /// The owning organization.
    pub organization_id: OrganizationId,
    /// The handler that runs it, e.g. `seo-scan`.
    pub job_type: String,
    /// The handler's input.
    pub payload: Value,
    /// Lifecycle state.
    pub status: JobStatus,
    /// 0 to 100; never goes down; kept when cancelled.
    pub progress: u8,
    /// The property the job is about; `None` for the library's own internal jobs
    /// (publishing a media item), which the jobs API never shows or counts and which write
    /// no events.
    pub subject: Option<JobSubject>,
    /// Attempts started so far.
    pub attempts: u32,
    /// After this many attempts a job that keeps failing (or whose worker keeps dying) fails.
    pub max_attempts: u32,
    /// Not claimed before this (a retry waits out its backoff).
    pub run_at: Timestamp,
    /// When it was queued.
    pub created_at: Timestamp,
    /// When a worker first picked it up.
    pub started_at: Option<Timestamp>,
    /// When it reached a final state.
    pub completed_at: Option<Timestamp>,
    /// Why it failed (or why its last attempt failed, while a retry waits).
    pub error: Option<String>,
    /// What the handler returned; completed jobs only.
    pub result: Option<Value>,
}

impl JobRecord {
    /// A new pending job that may run at once, with [`DEFAULT_MAX_ATTEMPTS`].
    pub fn new(
        organization_id: OrganizationId,
        job_type: impl Into<String>,
        payload: Value,
        subject: impl Into<Option<JobSubject>>,
        now: Timestamp,
    ) -> Self {
        JobRecord {
            id: JobId::new(),
            organization_id,
            job_type: job_type.into(),
            payload,
            status: JobStatus::Pending,
            progress: 0,
            subject: subject.into(),
            attempts: 0,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            run_at: now,
            created_at: now,
            started_at: None,
            completed_at: None,
            error: None,
            result: None,
        }
    }

    /// Whether the jobs API shows the job (it is about a property).
    pub fn is_visible(&self) -> bool {
        self.subject.is_some()
    }

    /// The property the job is about, if any.
    pub fn property_id(&self) -> Option<&PropertyId> {
        self.subject.as_ref().map(|s| &s.property_id)
    }

    /// The API's view of the job; `None` for an internal job (no property), which the API
    /// never shows.
    pub fn view(&self) -> Option<Job> {
        let subject = self.subject.as_ref()?;
        Some(Job {
            id: self.id.clone(),
            job_type: self.job_type.clone(),
            status: self.status,
            progress: self.progress,
            property_id: subject.property_id.clone(),
            property_name: subject.property_name.clone(),
            tenant_type: TENANT_TYPE,
            tenant_label: subject.tenant_label.clone(),
            shop_domain: subject.shop_domain.clone(),
            created_at: self.created_at,
            started_at: self.started_at,
            completed_at: self.completed_at,
            error: self.error.clone(),
            result: match self.status {
                JobStatus::Completed => self.result.clone(),
                _ => None,
            },
        })
    }

    /// The budgets of a scan job (`None` for other types or a malformed payload).
    pub fn scan_payload(&self) -> Option<ScanPayload> {
        (self.job_type == SEO_SCAN)
            .then(|| serde_json::from_value(self.payload.clone()).ok())
            .flatten()
    }

    /// The outcome of a completed scan job.
    pub fn scan_result(&self) -> Option<JobResult> {
        (self.job_type == SEO_SCAN && self.status == JobStatus::Completed)
            .then(|| {
                self.result
                    .as_ref()
                    .and_then(|value| serde_json::from_value(value.clone()).ok())
            })
            .flatten()
    }
}

/// Attempts a job gets unless its producer says otherwise.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// The `tenantType` of every job.
pub const TENANT_TYPE: &str = "organization";

/// The payload of a `seo-scan` job: its budgets, clamped to the plan when it was queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScanPayload {
    /// Page budget of the crawl.
    pub max_pages: u32,
    /// Depth budget of the crawl (clicks from the start URL).
    pub max_depth: u32,
    /// Which pages are rendered in a browser (payloads queued before rendering existed say
    /// nothing, and render none).
    #[serde(default)]
    pub render: RenderMode,
}

/// Which pages of a scan are rendered in a browser before they are audited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum RenderMode {
    /// None: the HTML the server sends is audited.
    #[default]
    Never,
    /// The pages whose HTML shows that script builds them (an empty mount element, a
    /// `<noscript>` asking for JavaScript, or scripts and neither links nor text).
    Auto,
    /// Every HTML page.
    Always,
}

impl RenderMode {
    /// `never`, `auto` or `always`.
    pub fn as_str(self) -> &'static str {
        match self {
            RenderMode::Never => "never",
            RenderMode::Auto => "auto",
            RenderMode::Always => "always",
        }
    }
}

/// A background job, as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Job {
    /// `job_…`
    pub id: JobId,
    /// `seo-scan`, or the type of a host's own job.
    #[serde(rename = "type")]
    pub job_type: String,
    /// Lifecycle state.
    pub status: JobStatus,
    /// 0 to 100; kept when cancelled.
    pub progress: u8,
    /// The scanned property.
    pub property_id: PropertyId,
    /// The property's name when the job was queued.
    pub property_name: String,
    /// Always `organization`.
    pub tenant_type: &'static str,
    /// The organization's name.
    pub tenant_label: String,
    /// The organization's shop domain, if the host set one.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub shop_domain: Option<String>,
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
    /// Present on completed jobs only: for scans, `{score, pagesScanned, issuesCount}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = JobResult))]
    pub result: Option<Value>,
}

/// The events of the outbox: a job reached a final state, a post was published, failed or
/// deleted, a media item settled, a channel was disconnected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub enum EventType {
    /// `job.completed`
    #[serde(rename = "job.completed")]
    JobCompleted,
    /// `job.failed`
    #[serde(rename = "job.failed")]
    JobFailed,
    /// `job.cancelled`
    #[serde(rename = "job.cancelled")]
    JobCancelled,
    /// `media.post.published`: one post (a platform and account) is live.
    #[serde(rename = "media.post.published")]
    MediaPostPublished,
    /// `media.post.failed`: one post failed for good.
    #[serde(rename = "media.post.failed")]
    MediaPostFailed,
    /// `media.post.deleted`: one published post was deleted from its platform
    /// (`DELETE /media/{videos|images}/{id}/posts/{platform}`). Beyond the spec.
    #[serde(rename = "media.post.deleted")]
    MediaPostDeleted,
    /// `media.completed`: every post of an item finished, none failed.
    #[serde(rename = "media.completed")]
    MediaCompleted,
    /// `media.failed`: every post of an item finished, at least one failed.
    #[serde(rename = "media.failed")]
    MediaFailed,
    /// `channel.disconnected`: a channel's grant was revoked; it must be connected again.
    #[serde(rename = "channel.disconnected")]
    ChannelDisconnected,
    /// `scan.schedule.failed`: a slot of a property's scan schedule queued no scan (the
    /// organization's `scansPerMonth` was spent). Beyond the spec.
    #[serde(rename = "scan.schedule.failed")]
    ScanScheduleFailed,
}

impl EventType {
    /// Every event: the spec's three job events, the scan schedules', then the media API's.
    pub const ALL: [EventType; 10] = [
        EventType::JobCompleted,
        EventType::JobFailed,
        EventType::JobCancelled,
        EventType::ScanScheduleFailed,
        EventType::MediaPostPublished,
        EventType::MediaPostFailed,
        EventType::MediaPostDeleted,
        EventType::MediaCompleted,
        EventType::MediaFailed,
        EventType::ChannelDisconnected,
    ];

    /// The wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            EventType::JobCompleted => "job.completed",
            EventType::JobFailed => "job.failed",
            EventType::JobCancelled => "job.cancelled",
            EventType::MediaPostPublished => "media.post.published",
            EventType::MediaPostFailed => "media.post.failed",
            EventType::MediaPostDeleted => "media.post.deleted",
            EventType::MediaCompleted => "media.completed",
            EventType::MediaFailed => "media.failed",
            EventType::ChannelDisconnected => "channel.disconnected",
            EventType::ScanScheduleFailed => "scan.schedule.failed",
        }
    }

    /// Parses a wire name.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == text)
    }

    /// The event of a job reaching `status`; `None` for states that are not final.
    pub fn for_status(status: JobStatus) -> Option<Self> {
        match status {
            JobStatus::Completed => Some(EventType::JobCompleted),
            JobStatus::Failed => Some(EventType::JobFailed),
            JobStatus::Cancelled => Some(EventType::JobCancelled),
            JobStatus::Pending | JobStatus::Processing => None,
        }
    }

    /// The API whose entitlement receiving the event needs: the developer API for job and
    /// schedule events, the media API for the others.
    pub fn entitlement(&self) -> crate::plans::Entitlement {
        match self {
            EventType::JobCompleted
            | EventType::JobFailed
            | EventType::JobCancelled
            | EventType::ScanScheduleFailed => crate::plans::Entitlement::DeveloperApi,
            _ => crate::plans::Entitlement::MediaApi,
        }
    }
}

/// An event a change makes (a snapshot event: media, channels, schedules), before the store
/// gives it an id and a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    /// Whose event it is.
    pub organization_id: OrganizationId,
    /// What happened.
    pub event_type: EventType,
    /// The delivery's `data`.
    pub data: Value,
}

/// What an event is about, and where its delivery's `data` comes from.
///
/// Not `#[non_exhaustive]`: every store (or edge) that is given one matches on it, and a
/// variant added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventSubject {
    /// A job event: `data` is `{job}`, the job as `GET /jobs/{id}` shows it, read when the
    /// event is delivered (a final state does not change).
    Job(JobId),
    /// Any other event: `data` as it was when the change was made (see
    /// [`crate::media::events`]).
    Snapshot(Value),
}

/// A change worth telling the organization about, written to the outbox in the same
/// transaction as the change itself. Webhook delivery reads the outbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// `evt_…`; ids sort in the order events were written.
    pub id: EventId,
    /// Whose event it is.
    pub organization_id: OrganizationId,
    /// What happened.
    pub event_type: EventType,
    /// What it happened to.
    pub subject: EventSubject,
    /// When.
    pub created_at: Timestamp,
}

impl Event {
    /// The job of a job event.
    pub fn job_id(&self) -> Option<&JobId> {
        match &self.subject {
            EventSubject::Job(id) => Some(id),
            EventSubject::Snapshot(_) => None,
        }
    }
}

/// Whether an issue concerns one page or the whole site.
///
/// Not `#[non_exhaustive]`: a closed set the specification fixes; a variant added would
/// change the API, and must stop code that does not handle it from compiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
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
///
/// Not `#[non_exhaustive]`: a closed set the specification fixes; a variant added would
/// change the API, and must stop code that does not handle it from compiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The site or a page is broken for visitors or search engines.
    Critical,
    /// Keeps pages out of search results or hurts them badly.
    High,
    /// Hurts ranking or visitors.
    Medium,
    /// Worth fixing when there is time.
    Low,
}

impl Severity {
    /// Every severity, most serious first.
    pub const ALL: [Severity; 4] = [
        Severity::Critical,
        Severity::High,
        Severity::Medium,
        Severity::Low,
    ];

    /// The wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
        }
    }

    /// Parses a wire name.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// A problem a scan found on a property.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Issue {
    /// `iss_…`
    pub id: IssueId,
    /// The owning organization.
    #[serde(skip)]
    pub organization_id: OrganizationId,
    /// The property it was found on.
    pub property_id: PropertyId,
    /// The scan that last saw it.
    pub job_id: JobId,
    /// `page` or `site`.
    pub scan_kind: ScanKind,
    /// The check's stable id, e.g. `title_missing` (see the catalogue).
    #[serde(rename = "type")]
    pub issue_type: String,
    /// The check's title.
    pub title: String,
    /// How serious it is.
    pub severity: Severity,
    /// The page, for page issues; null for site issues.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub url: Option<String>,
    /// What the scan found, briefly.
    pub evidence: String,
    /// How to fix it.
    pub how_to_fix: String,
    /// What identifies the issue across scans within its property and check: the page, or
    /// what a site issue is about.
    #[serde(skip)]
    pub subject: String,
    /// Lifecycle state.
    pub status: IssueStatus,
    /// When it was first found.
    pub created_at: Timestamp,
    /// When a scan last found it.
    pub last_seen_at: Timestamp,
    /// When a later scan no longer found it.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub resolved_at: Option<Timestamp>,
    /// When the host marked it fixed.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub fixed_at: Option<Timestamp>,
}

/// Counts of a property's issues by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

impl IssueSummary {
    /// Counts one issue in `status` (and in `total`).
    pub fn count(&mut self, status: IssueStatus) {
        match status {
            IssueStatus::Open => self.open += 1,
            IssueStatus::Resolved => self.resolved += 1,
            IssueStatus::Fixed => self.fixed += 1,
        }
        self.total += 1;
    }
}

/// A shared audit report link created by the host for a completed scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The secret token of the public link.
    pub token: String,
    /// The owning organization.
    #[serde(skip)]
    pub organization_id: OrganizationId,
    /// The reported property.
    pub property_id: PropertyId,
    /// The completed scan job it shows.
    pub scan_id: JobId,
    /// After this the link is expired.
    pub expires_at: Timestamp,
    /// Views counted by the host's public page.
    pub view_count: u64,
    /// When it was created.
    pub created_at: Timestamp,
}

/// Monthly plan meters of an organization.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    /// Media items uploaded (a carousel counts once), counted as they are stored.
    pub media_uploads: u64,
    /// The bytes of their files (a carousel's images, a YouTube thumbnail).
    pub media_bytes: u64,
    /// Posts that reached `published` on their platform.
    pub posts_published: u64,
    /// Published posts deleted from their platform.
    pub posts_deleted: u64,
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
            media_uploads: self.media_uploads.saturating_add(other.media_uploads),
            media_bytes: self.media_bytes.saturating_add(other.media_bytes),
            posts_published: self.posts_published.saturating_add(other.posts_published),
            posts_deleted: self.posts_deleted.saturating_add(other.posts_deleted),
        }
    }

    /// Whether it adds nothing.
    pub fn is_zero(&self) -> bool {
        *self == UsageCounters::default()
    }
}

/// Job counts of one type (or all types) in a period.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobCounts {
    /// Jobs created.
    pub total: u64,
    /// Of those, completed.
    pub completed: u64,
    /// Of those, failed.
    pub failed: u64,
}

/// A webhook endpoint of an organization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    /// `wh_…`
    pub id: WebhookId,
    /// The owning organization.
    #[serde(skip)]
    pub organization_id: OrganizationId,
    /// A name for people.
    pub name: String,
    /// Where deliveries are `POST`ed.
    #[cfg_attr(feature = "openapi", schema(format = "uri"))]
    pub url: String,
    /// The first 12 characters of the signing secret (`whsec_` and 6 more), to tell secrets
    /// apart.
    pub secret_prefix: String,
    /// The events it receives.
    pub events: Vec<EventType>,
    /// Whether deliveries are made (a `410 Gone` answer turns it off).
    pub enabled: bool,
    /// When the last attempt was made.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub last_delivery_at: Option<Timestamp>,
    /// The HTTP status of the last attempt; 0 when no response came.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub last_delivery_status: Option<u16>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was last changed (not counting deliveries).
    pub updated_at: Timestamp,
    /// The signing secrets, sealed.
    #[serde(skip)]
    pub secrets: WebhookSecrets,
}

/// A webhook's signing secrets as stored: each sealed (encrypted and authenticated) with a key
/// derived from the host's secret, never in the clear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSecrets {
    /// The current secret, sealed.
    pub current: String,
    /// The secret before the last rotation, sealed, with the end of its overlap: until then
    /// it signs beside the current one.
    pub previous: Option<(String, Timestamp)>,
}

/// One attempt in a webhook's delivery log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WebhookDelivery {
    /// `whd_…`
    pub id: DeliveryId,
    /// The webhook.
    pub webhook_id: WebhookId,
    /// The event delivered.
    pub event: EventType,
    /// The receiver's HTTP status; 0 when no response came (refused, unreachable, timed out).
    pub status_code: u16,
    /// Whether the receiver answered 2xx.
    pub success: bool,
    /// How long the attempt took, in milliseconds.
    pub duration_ms: u64,
    /// When the attempt was made.
    pub created_at: Timestamp,
}
