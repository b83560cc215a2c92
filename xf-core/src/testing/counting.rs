//! [`Counting`]: a store that counts the calls made to it.
//!
//! Every method forwards to the wrapped store after counting its name; the forwarding below is
//! one line per method of the store's traits, in the traits' order. One answer can be made to
//! break the store's contract on purpose ([`Counting::misreport_rate_limits`]), for tests of
//! how the facade takes a store that does.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::ids::*;
use crate::model::gsc::*;
use crate::model::media::*;
use crate::model::*;
use crate::plans::LimitOverrides;
use crate::store::*;
use crate::time::Timestamp;

use super::{Dump, StoreDump, TestStore};

/// A [`Store`] (and [`Dump`]) that counts the calls made to it, by method name, and forwards each to the
/// store it wraps: for tests that prove what a request did not touch, such as a request
/// refused by its rate limit reading nothing else.
#[derive(Debug)]
pub struct Counting {
    inner: Arc<dyn TestStore>,
    calls: Mutex<BTreeMap<&'static str, u64>>,
    rate_outcome: Mutex<Option<Misreport>>,
}

/// How [`Counting::misreport_rate_limits`] changes the store's answer.
type Misreport = fn(RateOutcome) -> RateOutcome;

impl Counting {
    /// Counts the calls made to `inner`.
    pub fn new(inner: Arc<dyn TestStore>) -> Self {
        Counting {
            inner,
            calls: Mutex::default(),
            rate_outcome: Mutex::default(),
        }
    }

    /// From now on, what `hit_rate_limits` answers is the wrapped store's answer passed
    /// through `change`: a store that misreports its counts.
    pub fn misreport_rate_limits(&self, change: Misreport) {
        *self.rate_outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some(change);
    }

    /// The calls made so far, by method name (methods never called are absent).
    pub fn calls(&self) -> BTreeMap<&'static str, u64> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Forgets the calls counted so far.
    pub fn reset(&self) {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    fn count(&self, method: &'static str) {
        *self
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(method)
            .or_default() += 1;
    }
}

#[async_trait]
impl Dump for Counting {
    async fn dump(&self) -> StoreResult<StoreDump> {
        self.inner.dump().await
    }
}

#[async_trait]
impl EventStore for Counting {
    async fn list_events(&self, after: Option<&EventId>, limit: usize) -> StoreResult<Vec<Event>> {
        self.count("list_events");
        self.inner.list_events(after, limit).await
    }
    async fn job_events(&self, job_id: &JobId) -> StoreResult<Vec<Event>> {
        self.count("job_events");
        self.inner.job_events(job_id).await
    }
}

#[async_trait]
impl GscStore for Counting {
    async fn put_gsc_account(&self, account: &GscAccount) -> StoreResult<bool> {
        self.count("put_gsc_account");
        self.inner.put_gsc_account(account).await
    }
    async fn get_gsc_account(
        &self,
        organization_id: &OrganizationId,
    ) -> StoreResult<Option<GscAccount>> {
        self.count("get_gsc_account");
        self.inner.get_gsc_account(organization_id).await
    }
    async fn revoke_gsc_account(
        &self,
        organization_id: &OrganizationId,
        linked_at: Timestamp,
        now: Timestamp,
    ) -> StoreResult<bool> {
        self.count("revoke_gsc_account");
        self.inner
            .revoke_gsc_account(organization_id, linked_at, now)
            .await
    }
    async fn claim_gsc_sync(
        &self,
        property_id: &PropertyId,
        claim: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool> {
        self.count("claim_gsc_sync");
        self.inner
            .claim_gsc_sync(property_id, claim, now, until)
            .await
    }
    async fn release_gsc_sync(&self, property_id: &PropertyId, claim: &str) -> StoreResult<()> {
        self.count("release_gsc_sync");
        self.inner.release_gsc_sync(property_id, claim).await
    }
    async fn replace_gsc_snapshot(&self, new: &NewSnapshot) -> StoreResult<()> {
        self.count("replace_gsc_snapshot");
        self.inner.replace_gsc_snapshot(new).await
    }
    async fn get_gsc_snapshot(&self, property_id: &PropertyId) -> StoreResult<Option<GscSnapshot>> {
        self.count("get_gsc_snapshot");
        self.inner.get_gsc_snapshot(property_id).await
    }
    async fn get_gsc_snapshots(
        &self,
        property_ids: &[PropertyId],
    ) -> StoreResult<Vec<GscSnapshot>> {
        self.count("get_gsc_snapshots");
        self.inner.get_gsc_snapshots(property_ids).await
    }
    async fn list_gsc_rows(
        &self,
        property_id: &PropertyId,
        kind: RowKind,
        after: Option<u32>,
        limit: usize,
    ) -> StoreResult<Vec<GscRow>> {
        self.count("list_gsc_rows");
        self.inner
            .list_gsc_rows(property_id, kind, after, limit)
            .await
    }
    async fn gsc_portfolio(
        &self,
        organization_id: &OrganizationId,
        fresh_since: Timestamp,
    ) -> StoreResult<PortfolioCounts> {
        self.count("gsc_portfolio");
        self.inner.gsc_portfolio(organization_id, fresh_since).await
    }
    async fn latest_scan_pages(&self, property_id: &PropertyId) -> StoreResult<Option<ScanPages>> {
        self.count("latest_scan_pages");
        self.inner.latest_scan_pages(property_id).await
    }
}

#[async_trait]
impl GuardStore for Counting {
    async fn claim_connect_state(
        &self,
        id: &str,
        expires_at: Timestamp,
        now: Timestamp,
    ) -> StoreResult<bool> {
        self.count("claim_connect_state");
        self.inner.claim_connect_state(id, expires_at, now).await
    }
    async fn hit_rate_limits(&self, buckets: &[RateBucket]) -> StoreResult<RateOutcome> {
        self.count("hit_rate_limits");
        let outcome = self.inner.hit_rate_limits(buckets).await?;
        let change = *self.rate_outcome.lock().unwrap_or_else(|e| e.into_inner());
        Ok(match change {
            Some(change) => change(outcome),
            None => outcome,
        })
    }
    async fn claim_idempotency_key(
        &self,
        request: &IdempotencyRequest,
    ) -> StoreResult<IdempotencyClaim> {
        self.count("claim_idempotency_key");
        self.inner.claim_idempotency_key(request).await
    }
    async fn complete_idempotency_key(
        &self,
        scope: &str,
        fingerprint: &str,
        response: &StoredResponse,
    ) -> StoreResult<()> {
        self.count("complete_idempotency_key");
        self.inner
            .complete_idempotency_key(scope, fingerprint, response)
            .await
    }
    async fn release_idempotency_key(&self, scope: &str, fingerprint: &str) -> StoreResult<()> {
        self.count("release_idempotency_key");
        self.inner.release_idempotency_key(scope, fingerprint).await
    }
    async fn purge_expired(
        &self,
        windows_before: Timestamp,
        idempotency_before: Timestamp,
    ) -> StoreResult<u64> {
        self.count("purge_expired");
        self.inner
            .purge_expired(windows_before, idempotency_before)
            .await
    }
}

#[async_trait]
impl IssueStore for Counting {
    async fn insert_issue(&self, issue: &Issue) -> StoreResult<()> {
        self.count("insert_issue");
        self.inner.insert_issue(issue).await
    }
    async fn get_issue(&self, id: &IssueId) -> StoreResult<Option<Issue>> {
        self.count("get_issue");
        self.inner.get_issue(id).await
    }
    async fn set_issue_fixed(&self, id: &IssueId, now: Timestamp) -> StoreResult<Option<Issue>> {
        self.count("set_issue_fixed");
        self.inner.set_issue_fixed(id, now).await
    }
    async fn list_issues(
        &self,
        property_id: &PropertyId,
        filter: &IssueFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<Issue>> {
        self.count("list_issues");
        self.inner.list_issues(property_id, filter, page).await
    }
    async fn issue_summary(&self, property_id: &PropertyId) -> StoreResult<IssueSummary> {
        self.count("issue_summary");
        self.inner.issue_summary(property_id).await
    }
    async fn issues_seen_at(
        &self,
        property_id: &PropertyId,
        at: Timestamp,
    ) -> StoreResult<Vec<Issue>> {
        self.count("issues_seen_at");
        self.inner.issues_seen_at(property_id, at).await
    }
    async fn issues_by_ids(&self, ids: &[IssueId]) -> StoreResult<Vec<Issue>> {
        self.count("issues_by_ids");
        self.inner.issues_by_ids(ids).await
    }
    async fn scan_records(&self, job_ids: &[JobId]) -> StoreResult<Vec<ScanRecord>> {
        self.count("scan_records");
        self.inner.scan_records(job_ids).await
    }
    async fn recent_scan_records(
        &self,
        property_id: &PropertyId,
        before: Option<&ScanRecord>,
        limit: usize,
    ) -> StoreResult<Vec<ScanRecord>> {
        self.count("recent_scan_records");
        self.inner
            .recent_scan_records(property_id, before, limit)
            .await
    }
    async fn issue_changes(
        &self,
        property_id: &PropertyId,
        after: Option<&ScanRecord>,
        upto: &ScanRecord,
    ) -> StoreResult<Vec<IssueChangeRecord>> {
        self.count("issue_changes");
        self.inner.issue_changes(property_id, after, upto).await
    }
    async fn complete_scan(
        &self,
        scan: ScanFindings,
        attempt: &Attempt,
        result: &serde_json::Value,
    ) -> StoreResult<bool> {
        self.count("complete_scan");
        self.inner.complete_scan(scan, attempt, result).await
    }
}

#[async_trait]
impl JobStore for Counting {
    async fn insert_job_counted(
        &self,
        job: &JobRecord,
        month: &str,
        scans_limit: u64,
    ) -> StoreResult<()> {
        self.count("insert_job_counted");
        self.inner.insert_job_counted(job, month, scans_limit).await
    }
    async fn insert_jobs(&self, jobs: &[JobRecord]) -> StoreResult<()> {
        self.count("insert_jobs");
        self.inner.insert_jobs(jobs).await
    }
    async fn get_job(&self, id: &JobId) -> StoreResult<Option<JobRecord>> {
        self.count("get_job");
        self.inner.get_job(id).await
    }
    async fn list_jobs(
        &self,
        organization_id: &OrganizationId,
        filter: &JobFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<JobRecord>> {
        self.count("list_jobs");
        self.inner.list_jobs(organization_id, filter, page).await
    }
    async fn count_active_jobs(&self, organization_id: &OrganizationId) -> StoreResult<u64> {
        self.count("count_active_jobs");
        self.inner.count_active_jobs(organization_id).await
    }
    async fn latest_jobs_for_properties(
        &self,
        property_ids: &[PropertyId],
    ) -> StoreResult<Vec<JobRecord>> {
        self.count("latest_jobs_for_properties");
        self.inner.latest_jobs_for_properties(property_ids).await
    }
    async fn cancel_job(&self, id: &JobId, now: Timestamp) -> StoreResult<CancelOutcome> {
        self.count("cancel_job");
        self.inner.cancel_job(id, now).await
    }
    async fn job_counts_by_type(
        &self,
        organization_id: &OrganizationId,
        from: Timestamp,
        to: Timestamp,
    ) -> StoreResult<Vec<(String, JobCounts)>> {
        self.count("job_counts_by_type");
        self.inner
            .job_counts_by_type(organization_id, from, to)
            .await
    }
}

#[async_trait]
impl MediaStore for Counting {
    async fn set_channel_default_board(
        &self,
        id: &ChannelId,
        board: Option<&str>,
        now: Timestamp,
    ) -> StoreResult<Option<Channel>> {
        self.count("set_channel_default_board");
        self.inner.set_channel_default_board(id, board, now).await
    }
    async fn insert_media(&self, item: &MediaItem, jobs: &[JobRecord]) -> StoreResult<()> {
        self.count("insert_media");
        self.inner.insert_media(item, jobs).await
    }
    async fn update_post(
        &self,
        id: &MediaId,
        platform: Platform,
        account: &str,
        post: &Post,
        now: Timestamp,
    ) -> StoreResult<Option<MediaItem>> {
        self.count("update_post");
        self.inner
            .update_post(id, platform, account, post, now)
            .await
    }

    async fn edit_media(
        &self,
        id: &MediaId,
        edit: &MediaEdit,
        now: Timestamp,
    ) -> StoreResult<MediaEdited> {
        self.count("edit_media");
        self.inner.edit_media(id, edit, now).await
    }

    async fn delete_media(&self, id: &MediaId) -> StoreResult<MediaDelete> {
        self.count("delete_media");
        self.inner.delete_media(id).await
    }

    async fn cancel_media(&self, id: &MediaId, now: Timestamp) -> StoreResult<MediaCancel> {
        self.count("cancel_media");
        self.inner.cancel_media(id, now).await
    }

    async fn delete_posts(
        &self,
        id: &MediaId,
        platform: Platform,
        account: Option<&str>,
        now: Timestamp,
    ) -> StoreResult<PostsDelete> {
        self.count("delete_posts");
        self.inner.delete_posts(id, platform, account, now).await
    }
    async fn find_channel(
        &self,
        organization_id: &OrganizationId,
        platform: Platform,
        account: &str,
    ) -> StoreResult<Option<Channel>> {
        self.count("find_channel");
        self.inner
            .find_channel(organization_id, platform, account)
            .await
    }
    async fn update_channel_tokens(
        &self,
        id: &ChannelId,
        sealed_access_token: &str,
        sealed_refresh_token: Option<&str>,
        expires_at: Option<Timestamp>,
        now: Timestamp,
    ) -> StoreResult<()> {
        self.count("update_channel_tokens");
        self.inner
            .update_channel_tokens(
                id,
                sealed_access_token,
                sealed_refresh_token,
                expires_at,
                now,
            )
            .await
    }
    async fn disconnect_channel(
        &self,
        id: &ChannelId,
        reason: &str,
        now: Timestamp,
    ) -> StoreResult<()> {
        self.count("disconnect_channel");
        self.inner.disconnect_channel(id, reason, now).await
    }
    async fn get_media(&self, id: &MediaId) -> StoreResult<Option<MediaItem>> {
        self.count("get_media");
        self.inner.get_media(id).await
    }
    async fn list_media(
        &self,
        organization_id: &OrganizationId,
        filter: &MediaFilter,
        offset: u64,
        limit: usize,
    ) -> StoreResult<(Vec<MediaItem>, u64)> {
        self.count("list_media");
        self.inner
            .list_media(organization_id, filter, offset, limit)
            .await
    }
    async fn put_channel(&self, channel: &Channel) -> StoreResult<Option<Channel>> {
        self.count("put_channel");
        self.inner.put_channel(channel).await
    }
    async fn insert_upload(&self, upload: &Upload) -> StoreResult<()> {
        self.count("insert_upload");
        self.inner.insert_upload(upload).await
    }
    async fn get_upload(&self, id: &UploadId, now: Timestamp) -> StoreResult<Option<Upload>> {
        self.count("get_upload");
        self.inner.get_upload(id, now).await
    }
    async fn append_upload_part(
        &self,
        id: &UploadId,
        part: &UploadPart,
        now: Timestamp,
    ) -> StoreResult<Appended> {
        self.count("append_upload_part");
        self.inner.append_upload_part(id, part, now).await
    }
    async fn delete_upload(&self, id: &UploadId) -> StoreResult<Option<Upload>> {
        self.count("delete_upload");
        self.inner.delete_upload(id).await
    }
    async fn take_expired_uploads(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<Upload>> {
        self.count("take_expired_uploads");
        self.inner.take_expired_uploads(now, limit).await
    }
    async fn blob_keys_in_use(
        &self,
        keys: &[String],
    ) -> StoreResult<std::collections::HashSet<String>> {
        self.count("blob_keys_in_use");
        self.inner.blob_keys_in_use(keys).await
    }
    async fn list_channels(&self, organization_id: &OrganizationId) -> StoreResult<Vec<Channel>> {
        self.count("list_channels");
        self.inner.list_channels(organization_id).await
    }
}

#[async_trait]
impl Store for Counting {
    async fn ping(&self) -> StoreResult<()> {
        self.count("ping");
        self.inner.ping().await
    }
    async fn schema_is_current(&self) -> StoreResult<bool> {
        self.count("schema_is_current");
        self.inner.schema_is_current().await
    }
    async fn gauges(&self) -> StoreResult<StoreGauges> {
        self.count("gauges");
        self.inner.gauges().await
    }
    fn pool_status(&self) -> Option<PoolStatus> {
        self.inner.pool_status()
    }
}

#[async_trait]
impl OrganizationStore for Counting {
    async fn insert_organization(&self, organization: &Organization) -> StoreResult<()> {
        self.count("insert_organization");
        self.inner.insert_organization(organization).await
    }
    async fn insert_organization_with_keys(
        &self,
        organization: &Organization,
        keys: &[ApiKey],
    ) -> StoreResult<()> {
        self.count("insert_organization_with_keys");
        self.inner
            .insert_organization_with_keys(organization, keys)
            .await
    }
    async fn get_organization(&self, id: &OrganizationId) -> StoreResult<Option<Organization>> {
        self.count("get_organization");
        self.inner.get_organization(id).await
    }
    async fn list_organizations(&self, page: &PageRequest) -> StoreResult<Vec<Organization>> {
        self.count("list_organizations");
        self.inner.list_organizations(page).await
    }
    async fn find_organization_by_name(&self, name: &str) -> StoreResult<Option<Organization>> {
        self.count("find_organization_by_name");
        self.inner.find_organization_by_name(name).await
    }
    async fn update_organization(
        &self,
        id: &OrganizationId,
        plan: Option<&str>,
        limits: Option<&LimitOverrides>,
    ) -> StoreResult<Option<Organization>> {
        self.count("update_organization");
        self.inner.update_organization(id, plan, limits).await
    }
    async fn insert_api_key(&self, key: &ApiKey, max_active: u64) -> StoreResult<()> {
        self.count("insert_api_key");
        self.inner.insert_api_key(key, max_active).await
    }
    async fn find_api_key(&self, key_hash: &str) -> StoreResult<Option<(ApiKey, Organization)>> {
        self.count("find_api_key");
        self.inner.find_api_key(key_hash).await
    }
    async fn list_api_keys(&self, organization_id: &OrganizationId) -> StoreResult<Vec<ApiKey>> {
        self.count("list_api_keys");
        self.inner.list_api_keys(organization_id).await
    }
    async fn touch_api_key(&self, id: &ApiKeyId, at: Timestamp) -> StoreResult<()> {
        self.count("touch_api_key");
        self.inner.touch_api_key(id, at).await
    }
    async fn revoke_api_key(&self, id: &ApiKeyId, now: Timestamp) -> StoreResult<Option<ApiKey>> {
        self.count("revoke_api_key");
        self.inner.revoke_api_key(id, now).await
    }
}

#[async_trait]
impl PropertyStore for Counting {
    async fn insert_property(&self, property: &Property) -> StoreResult<()> {
        self.count("insert_property");
        self.inner.insert_property(property).await
    }
    async fn insert_property_keeping(
        &self,
        property: &Property,
        kept: &KeptResponse,
    ) -> StoreResult<()> {
        self.count("insert_property_keeping");
        self.inner.insert_property_keeping(property, kept).await
    }
    async fn get_property(&self, id: &PropertyId) -> StoreResult<Option<Property>> {
        self.count("get_property");
        self.inner.get_property(id).await
    }
    async fn get_properties(&self, ids: &[PropertyId]) -> StoreResult<Vec<Property>> {
        self.count("get_properties");
        self.inner.get_properties(ids).await
    }
    async fn find_property_by_url(
        &self,
        organization_id: &OrganizationId,
        url: &str,
    ) -> StoreResult<Option<Property>> {
        self.count("find_property_by_url");
        self.inner.find_property_by_url(organization_id, url).await
    }
    async fn list_properties(
        &self,
        organization_id: &OrganizationId,
        page: &PageRequest,
    ) -> StoreResult<Vec<Property>> {
        self.count("list_properties");
        self.inner.list_properties(organization_id, page).await
    }
    async fn count_properties(&self, organization_id: &OrganizationId) -> StoreResult<u64> {
        self.count("count_properties");
        self.inner.count_properties(organization_id).await
    }
    async fn set_property_verified(&self, id: &PropertyId) -> StoreResult<Option<Property>> {
        self.count("set_property_verified");
        self.inner.set_property_verified(id).await
    }
    async fn set_property_gsc_site(
        &self,
        id: &PropertyId,
        site_url: Option<&str>,
    ) -> StoreResult<Option<Property>> {
        self.count("set_property_gsc_site");
        self.inner.set_property_gsc_site(id, site_url).await
    }
}

#[async_trait]
impl QueueStore for Counting {
    async fn claim_jobs(&self, request: &ClaimRequest) -> StoreResult<Vec<ClaimedJob>> {
        self.count("claim_jobs");
        self.inner.claim_jobs(request).await
    }
    async fn heartbeat(
        &self,
        attempt: &Attempt,
        progress: Option<u8>,
        lease_expires_at: Timestamp,
    ) -> StoreResult<AttemptState> {
        self.count("heartbeat");
        self.inner
            .heartbeat(attempt, progress, lease_expires_at)
            .await
    }
    async fn finish_jobs(
        &self,
        finishes: &[Finish],
        now: Timestamp,
    ) -> StoreResult<Vec<Option<JobStatus>>> {
        self.count("finish_jobs");
        self.inner.finish_jobs(finishes, now).await
    }
    async fn release_job(&self, attempt: &Attempt, now: Timestamp) -> StoreResult<bool> {
        self.count("release_job");
        self.inner.release_job(attempt, now).await
    }
    async fn rescue_expired(&self, now: Timestamp) -> StoreResult<RescueReport> {
        self.count("rescue_expired");
        self.inner.rescue_expired(now).await
    }
    async fn listen(&self) -> StoreResult<Box<dyn QueueListener>> {
        self.count("listen");
        self.inner.listen().await
    }
}

#[async_trait]
impl ReportStore for Counting {
    async fn insert_report(&self, report: &Report) -> StoreResult<()> {
        self.count("insert_report");
        self.inner.insert_report(report).await
    }
    async fn get_report(&self, token: &str) -> StoreResult<Option<Report>> {
        self.count("get_report");
        self.inner.get_report(token).await
    }
    async fn list_live_reports(
        &self,
        organization_id: &OrganizationId,
        now: Timestamp,
        page: &PageRequest,
    ) -> StoreResult<Vec<Report>> {
        self.count("list_live_reports");
        self.inner
            .list_live_reports(organization_id, now, page)
            .await
    }
    async fn increment_report_views(&self, token: &str) -> StoreResult<Option<Report>> {
        self.count("increment_report_views");
        self.inner.increment_report_views(token).await
    }
}

#[async_trait]
impl UsageStore for Counting {
    async fn get_usage(
        &self,
        organization_id: &OrganizationId,
        month: &str,
    ) -> StoreResult<UsageCounters> {
        self.count("get_usage");
        self.inner.get_usage(organization_id, month).await
    }
    async fn add_usage(
        &self,
        organization_id: &OrganizationId,
        month: &str,
        delta: &UsageCounters,
    ) -> StoreResult<UsageCounters> {
        self.count("add_usage");
        self.inner.add_usage(organization_id, month, delta).await
    }
}

#[async_trait]
impl WebhookStore for Counting {
    async fn insert_webhook(&self, webhook: &Webhook, max: u64) -> StoreResult<()> {
        self.count("insert_webhook");
        self.inner.insert_webhook(webhook, max).await
    }
    async fn get_webhook(&self, id: &WebhookId) -> StoreResult<Option<Webhook>> {
        self.count("get_webhook");
        self.inner.get_webhook(id).await
    }
    async fn list_webhooks(&self, organization_id: &OrganizationId) -> StoreResult<Vec<Webhook>> {
        self.count("list_webhooks");
        self.inner.list_webhooks(organization_id).await
    }
    async fn update_webhook(
        &self,
        id: &WebhookId,
        changes: &WebhookChanges,
        now: Timestamp,
    ) -> StoreResult<Option<Webhook>> {
        self.count("update_webhook");
        self.inner.update_webhook(id, changes, now).await
    }
    async fn rotate_webhook_secret(
        &self,
        id: &WebhookId,
        rotation: &SecretRotation,
    ) -> StoreResult<Option<Webhook>> {
        self.count("rotate_webhook_secret");
        self.inner.rotate_webhook_secret(id, rotation).await
    }
    async fn delete_webhook(&self, id: &WebhookId) -> StoreResult<bool> {
        self.count("delete_webhook");
        self.inner.delete_webhook(id).await
    }
    async fn list_deliveries(
        &self,
        webhook_id: &WebhookId,
        page: &PageRequest,
    ) -> StoreResult<Vec<WebhookDelivery>> {
        self.count("list_deliveries");
        self.inner.list_deliveries(webhook_id, page).await
    }
    async fn record_test_delivery(&self, log: &WebhookDelivery) -> StoreResult<bool> {
        self.count("record_test_delivery");
        self.inner.record_test_delivery(log).await
    }
    async fn fan_out_events(&self, limit: usize, now: Timestamp) -> StoreResult<usize> {
        self.count("fan_out_events");
        self.inner.fan_out_events(limit, now).await
    }
    async fn claim_deliveries(
        &self,
        limit: usize,
        now: Timestamp,
        lease_until: Timestamp,
    ) -> StoreResult<Vec<ClaimedDelivery>> {
        self.count("claim_deliveries");
        self.inner.claim_deliveries(limit, now, lease_until).await
    }
    async fn record_deliveries(&self, records: &[DeliveryRecord]) -> StoreResult<Vec<bool>> {
        self.count("record_deliveries");
        self.inner.record_deliveries(records).await
    }
    async fn purge_deliveries(&self, before: Timestamp) -> StoreResult<u64> {
        self.count("purge_deliveries");
        self.inner.purge_deliveries(before).await
    }
}

#[async_trait]
impl ScheduleStore for Counting {
    async fn put_schedule(
        &self,
        schedule: &crate::model::schedule::ScanSchedule,
    ) -> StoreResult<crate::model::schedule::ScanSchedule> {
        self.count("put_schedule");
        self.inner.put_schedule(schedule).await
    }
    async fn get_schedule(
        &self,
        property_id: &PropertyId,
    ) -> StoreResult<Option<crate::model::schedule::ScanSchedule>> {
        self.count("get_schedule");
        self.inner.get_schedule(property_id).await
    }
    async fn delete_schedule(&self, property_id: &PropertyId) -> StoreResult<bool> {
        self.count("delete_schedule");
        self.inner.delete_schedule(property_id).await
    }
    async fn due_schedules(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> StoreResult<Vec<crate::model::schedule::ScanSchedule>> {
        self.count("due_schedules");
        self.inner.due_schedules(now, limit).await
    }
    async fn claim_schedule_slot(
        &self,
        claim: &SlotClaim,
    ) -> StoreResult<Option<crate::model::schedule::ScheduleRun>> {
        self.count("claim_schedule_slot");
        self.inner.claim_schedule_slot(claim).await
    }
    async fn schedule_runs(
        &self,
        property_id: &PropertyId,
        limit: usize,
    ) -> StoreResult<Vec<crate::model::schedule::ScheduleRun>> {
        self.count("schedule_runs");
        self.inner.schedule_runs(property_id, limit).await
    }
}
