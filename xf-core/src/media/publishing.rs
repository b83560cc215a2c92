//! The `media-publish` job handler: it drives a [`Publisher`] through its steps and keeps the
//! channels' tokens fresh. It takes what it needs (`Publishing`: the store, the clock, the
//! files, the platforms' clients, the token sealer, the media URL signer), not the facade.
//!
//! One job publishes one post (a media item on one account of one platform). The job
//! engine claims it exactly once across instances and not before its `run_at` (the item's
//! `scheduledAt`). The handler:
//!
//! 1. reads the item and the post; a post already final is left alone;
//! 2. finds the channel (a disconnected one fails the post with its reason) and an access
//!    token, refreshed when it expires within five minutes;
//! 3. runs the step the post's stage calls for, storing the checkpoint after each:
//!    `New` → start → `Started` → poll until ready → `Ready` → `Finalizing` (stored
//!    *before* the irreversible call) → finalize → `Done`. A post found in `Finalizing` (a
//!    time-out, a crash) is looked for on the platform first, and finalized again only
//!    when the platform has no trace of it;
//! 4. maps failures: a rate limit or an outage is retried with backoff (not before the
//!    limit's reset); a refusal fails the post with the platform's code and message; a
//!    401 refreshes the token once, and a revoked grant disconnects the channel and fails
//!    its pending posts. When the job's attempts run out, the post fails with the last
//!    error.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use tracing::Instrument;

use super::blob::BlobStore;
use super::file_url::MediaUrls;
use super::publish::{
    CarouselImage, CheckpointSink, Outcome, PollOutcome, PostContext, PublishError, Published,
    PublishedPost, Publisher,
};
use super::{
    Channel, FailureSource, MediaItem, MediaKind, MediaStatus, Platform, PlatformStatus, Post,
    PostFailure, PostStage,
};
use crate::ids::MediaId;
use crate::model::media::{
    channel_owner, FollowUp, FollowUpStatus, DELETE_ATTEMPTS, MEDIA_DELETE_POST,
};
use crate::runtime::{JobContext, JobError, JobHandler};
use crate::secret::Sealer;
use crate::store::{MediaFilter, MediaStore};
use crate::time::Clock;

/// The codes of the failures xf decides (`source: xf` in a post's failure and in
/// `media.post.failed`); a platform's refusal carries the platform's own code.
pub mod failure_codes {
    /// The channel's grant was revoked, or it was disconnected before the post started.
    pub const CHANNEL_DISCONNECTED: &str = "channel_disconnected";
    /// The account the post goes to is no longer connected at all.
    pub const CHANNEL_NOT_CONNECTED: &str = "channel_not_connected";
    /// The platform kept refusing the access token, and it could not be refreshed.
    pub const UNAUTHORIZED: &str = "unauthorized";
    /// The channel's stored tokens cannot be opened (the host's secret key changed).
    pub const TOKEN_UNREADABLE: &str = "token_unreadable";
    /// This server has no client for the platform.
    pub const PLATFORM_NOT_CONFIGURED: &str = "platform_not_configured";
    /// Every attempt ended in an error worth retrying (rate limits, outages); the message
    /// is the last one's.
    pub const ATTEMPTS_EXHAUSTED: &str = "attempts_exhausted";
}

/// Attempts of a `media-publish` job before its post fails (each waits out a doubling
/// backoff).
pub(crate) const PUBLISH_ATTEMPTS: u32 = 6;

/// How long a signed media URL works.
const MEDIA_URL_LIFETIME_HOURS: i64 = 6;
/// An access token this close to its expiry is refreshed first.
const REFRESH_MARGIN_MINUTES: i64 = 5;

/// The payload of a `media-publish` job.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PublishPayload {
    media_id: MediaId,
    platform: Platform,
    account: String,
}

/// Why an attempt stops short of a final post.
#[derive(Debug)]
enum Halt {
    /// Try again later, not before `after` if given; the last field is the error's class
    /// for the metrics (`rate_limited`, `unavailable`, …).
    Retry(String, Option<Duration>, &'static str),
    /// The post failed for good.
    Fail(PostFailure),
    /// The post was cancelled: nothing more is sent or stored.
    Cancelled,
}

impl From<PublishError> for Halt {
    fn from(error: PublishError) -> Self {
        match error {
            PublishError::RateLimited {
                message,
                retry_after,
            } => Halt::Retry(
                format!("rate limited by the platform: {message}"),
                retry_after,
                "rate_limited",
            ),
            PublishError::Unavailable(message) => Halt::Retry(message, None, "unavailable"),
            PublishError::OutcomeUnknown(message) => Halt::Retry(
                format!(
                    "the outcome of publishing is not known ({message}); the platform is \
                     checked for the post before anything else is sent"
                ),
                None,
                "outcome_unknown",
            ),
            PublishError::Rejected { code, message } => {
                Halt::Fail(PostFailure::platform(code, message))
            }
            unauthorized @ PublishError::Unauthorized(_) => Halt::Fail(PostFailure::xf(
                failure_codes::UNAUTHORIZED,
                unauthorized.to_string(),
            )),
            disconnected @ PublishError::Disconnected(_) => Halt::Fail(PostFailure::xf(
                failure_codes::CHANNEL_DISCONNECTED,
                disconnected.to_string(),
            )),
            PublishError::Cancelled => Halt::Cancelled,
        }
    }
}

/// Settings of the publishing handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublishOptions {
    /// The longest an attempt waits for a platform's processing before it gives the job
    /// back to the queue (it resumes at the same step later).
    pub max_wait: Duration,
}

impl Default for PublishOptions {
    fn default() -> Self {
        PublishOptions {
            max_wait: Duration::from_secs(600),
        }
    }
}

/// What publishing needs: the store, the clock, the files and the platforms' clients, the
/// sealer of the channels' tokens, and the signer of the URLs platforms pull media from.
pub(crate) struct Publishing {
    pub metrics: crate::metrics::Metrics,
    pub store: Arc<dyn MediaStore>,
    pub clock: Arc<dyn Clock>,
    pub blobs: Arc<dyn BlobStore>,
    pub publishers: Publishers,
    pub token_sealer: Sealer,
    pub media_urls: MediaUrls,
}

impl std::fmt::Debug for Publishing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publishing")
            .field("publishers", &self.publishers.keys().collect::<Vec<_>>())
            .field("media_urls", &self.media_urls)
            .finish_non_exhaustive()
    }
}

/// The `media-publish` job handler (registered by
/// [`Xf::spawn_workers`](crate::Xf::spawn_workers)).
#[derive(Debug, Clone)]
pub struct PublishHandler {
    publishing: Arc<Publishing>,
    options: PublishOptions,
}

impl PublishHandler {
    pub(crate) fn new(publishing: Arc<Publishing>, options: PublishOptions) -> Self {
        PublishHandler {
            publishing,
            options,
        }
    }
}

impl Publishing {
    /// Marks the channel disconnected and fails the posts on it that have not finished,
    /// with a message naming the reason.
    pub(crate) async fn disconnect(&self, channel: &Channel, reason: &str) {
        self.metrics.disconnection(channel.platform.as_str());
        let now = self.clock.now();
        if let Err(error) = self
            .store
            .disconnect_channel(&channel.id, reason, now)
            .await
        {
            tracing::warn!(%error, channel_id = %channel.id, "marking a channel disconnected failed");
        }
        let message = disconnected_message(channel, reason);
        // The unfinished items are gathered first and changed after: failing a post moves
        // its item out of the status being paged through.
        let mut unfinished = Vec::new();
        for kind in [MediaKind::Video, MediaKind::Image] {
            for status in [
                MediaStatus::Pending,
                MediaStatus::Scheduled,
                MediaStatus::Processing,
            ] {
                let filter = MediaFilter {
                    kind,
                    status: Some(status),
                    platform: Some(channel.platform),
                };
                let mut offset = 0;
                while let Ok((items, _)) = self
                    .store
                    .list_media(&channel.organization_id, &filter, offset, 100)
                    .await
                {
                    let count = items.len() as u64;
                    unfinished.extend(items.into_iter().filter_map(|item| {
                        let post = item.post(channel.platform, &channel.account_id)?;
                        (!post.is_final()).then(|| (item.id.clone(), post.clone()))
                    }));
                    if count < 100 {
                        break;
                    }
                    offset += count;
                }
            }
        }
        for (id, mut failed) in unfinished {
            failed.fail(PostFailure::xf(
                failure_codes::CHANNEL_DISCONNECTED,
                message.clone(),
            ));
            let updated = self
                .store
                .update_post(&id, channel.platform, &channel.account_id, &failed, now)
                .await;
            if let Err(error) = updated {
                tracing::warn!(%error, media_id = %id, "failing a post of a disconnected channel");
            }
        }
    }
}

/// A final failure as a metric label: `rejected` when the platform refused the post, xf's
/// failure code otherwise.
fn failure_class(failure: &PostFailure) -> &'static str {
    use failure_codes::*;
    if failure.source == FailureSource::Platform {
        return "rejected";
    }
    [
        CHANNEL_DISCONNECTED,
        CHANNEL_NOT_CONNECTED,
        UNAUTHORIZED,
        TOKEN_UNREADABLE,
        PLATFORM_NOT_CONFIGURED,
        ATTEMPTS_EXHAUSTED,
    ]
    .into_iter()
    .find(|code| *code == failure.code)
    .unwrap_or("other")
}

/// The failure of a post on a disconnected channel.
fn disconnected(channel: &Channel, reason: &str) -> PostFailure {
    PostFailure::xf(
        failure_codes::CHANNEL_DISCONNECTED,
        disconnected_message(channel, reason),
    )
}

fn disconnected_message(channel: &Channel, reason: &str) -> String {
    format!(
        "the {} channel {} is disconnected ({reason}); connect it again (a connect link with \
         channelId {} does) and upload anew",
        channel.platform.label(),
        channel.account_id,
        channel.id
    )
}

/// The post being published: its last stored state, and where to store the next.
struct PostRecord {
    publishing: Arc<Publishing>,
    media_id: MediaId,
    platform: Platform,
    account: String,
    post: Mutex<Post>,
}

impl PostRecord {
    fn get(&self) -> Post {
        self.post.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Changes the post and stores it.
    async fn update(&self, change: impl FnOnce(&mut Post)) -> Result<(), PublishError> {
        let post = {
            let mut post = self.post.lock().unwrap_or_else(|p| p.into_inner());
            change(&mut post);
            post.clone()
        };
        let stored = self
            .publishing
            .store
            .update_post(
                &self.media_id,
                self.platform,
                &self.account,
                &post,
                self.publishing.clock.now(),
            )
            .await
            .map_err(|e| PublishError::Unavailable(format!("storing the post's progress: {e}")))?;
        match stored
            .as_ref()
            .and_then(|item| item.post(self.platform, &self.account))
        {
            // A cancel came first: the store kept it (`MediaItem::set_post`).
            Some(stored) if stored.status == PlatformStatus::Cancelled => {
                Err(PublishError::Cancelled)
            }
            Some(_) => Ok(()),
            None => Err(PublishError::rejected(
                "gone",
                "the media item or its post no longer exists",
            )),
        }
    }

    /// Stores the post as published (or, with `manual`, as waiting for a person), with the
    /// last checkpoint, in one write.
    async fn finish(&self, checkpoint: Value, outcome: Finished) -> Result<(), PublishError> {
        self.update(|post| {
            post.checkpoint = checkpoint;
            post.stage = PostStage::Done;
            match outcome {
                Finished::Published(published) => {
                    post.status = PlatformStatus::Published;
                    post.remote_id = Some(published.remote_id);
                    post.url = published.url;
                    post.error = None;
                }
                Finished::Manual(reason) => {
                    post.status = PlatformStatus::Manual;
                    post.error = Some(reason);
                }
            }
        })
        .await
    }
}

#[async_trait]
impl CheckpointSink for PostRecord {
    async fn save(&self, checkpoint: &Value) -> Result<(), PublishError> {
        let checkpoint = checkpoint.clone();
        self.update(|post| post.checkpoint = checkpoint).await
    }
}

enum Finished {
    Published(Published),
    Manual(String),
}

#[async_trait]
impl JobHandler for PublishHandler {
    async fn run(&self, job: JobContext) -> Result<Value, JobError> {
        if job.job().job_type == MEDIA_DELETE_POST {
            return self.run_delete(job).await;
        }
        let (payload, item, post) = self.job_post(&job).await?;
        let record = PostRecord {
            publishing: Arc::clone(&self.publishing),
            media_id: item.id.clone(),
            platform: payload.platform,
            account: payload.account.clone(),
            post: Mutex::new(post),
        };
        let summary = |record: &PostRecord| {
            let post = record.get();
            json!({
                "mediaId": item.id,
                "platform": payload.platform,
                "account": payload.account,
                "status": post.status,
                "remoteId": post.remote_id,
                "url": post.url,
            })
        };
        if record.get().is_final() {
            // Follow-ups a stopped worker left unsent (or half sent) are settled now.
            self.follow_ups(&item, &record).await;
            return Ok(summary(&record));
        }
        let attempts = job.job().attempts;
        let last_attempt = attempts >= PUBLISH_ATTEMPTS;
        if attempts > PUBLISH_ATTEMPTS && record.get().stage != PostStage::Finalizing {
            // The worker of the last attempt died (its lease ran out and the job came back):
            // the post fails with the last error instead of staying `processing`. A post
            // whose final call may have gone through is looked up first, as always.
            let error = format!(
                "publishing stopped after {PUBLISH_ATTEMPTS} attempts: {}",
                job.job()
                    .error
                    .as_deref()
                    .unwrap_or("the worker publishing it stopped responding")
            );
            let failure = PostFailure::xf(failure_codes::ATTEMPTS_EXHAUSTED, error.clone());
            let _ = record.update(|post| post.fail(failure)).await;
            let platform = payload.platform.as_str();
            (self.publishing.metrics).publish_attempt(platform, "failed", "attempts_exhausted");
            return Err(JobError::Fail(error));
        }
        let platform = payload.platform.as_str();
        let metrics = &self.publishing.metrics;
        match self.publish(&job, &item, &record).await {
            Ok(()) => {
                metrics.publish_attempt(platform, "published", "none");
                self.follow_ups(&item, &record).await;
                Ok(summary(&record))
            }
            Err(Halt::Cancelled) => {
                metrics.publish_attempt(platform, "cancelled", "none");
                Ok(summary(&record))
            }
            Err(Halt::Retry(error, after, class)) if !last_attempt => {
                metrics.publish_attempt(platform, "retrying", class);
                let noted = error.clone();
                let _ = record
                    .update(|post| post.error = Some(format!("will try again: {noted}")))
                    .await;
                Err(match after {
                    Some(after) => JobError::RetryAfter { error, after },
                    None => JobError::Retry(error),
                })
            }
            Err(Halt::Retry(error, _, _)) => {
                self.fail(
                    &record,
                    PostFailure::xf(failure_codes::ATTEMPTS_EXHAUSTED, error),
                )
                .await
            }
            Err(Halt::Fail(failure)) => self.fail(&record, failure).await,
        }
    }
}

impl PublishHandler {
    /// The post a job names: its payload, its item and the post as stored.
    async fn job_post(
        &self,
        job: &JobContext,
    ) -> Result<(PublishPayload, MediaItem, Post), JobError> {
        let payload: PublishPayload = serde_json::from_value(job.payload().clone())
            .map_err(|e| JobError::Fail(format!("the job's payload is not a post: {e}")))?;
        let item = (self.publishing.store)
            .get_media(&payload.media_id)
            .await
            .map_err(|e| {
                JobError::Internal(crate::error::While::new("the store failed", e).into())
            })?
            .ok_or_else(|| JobError::Fail("the media item no longer exists".into()))?;
        let post = item
            .post(payload.platform, &payload.account)
            .cloned()
            .ok_or_else(|| JobError::Fail("the media item has no such post".into()))?;
        Ok((payload, item, post))
    }

    /// Stores the post as failed for good; the job fails with its error.
    async fn fail(&self, record: &PostRecord, failure: PostFailure) -> Result<Value, JobError> {
        let platform = record.platform.as_str();
        (self.publishing.metrics).publish_attempt(platform, "failed", failure_class(&failure));
        let error = failure.text();
        let _ = record.update(|post| post.fail(failure)).await;
        Err(JobError::Fail(error))
    }

    /// A `media-delete-post` job: deletes one published post (`deleting`) from its platform.
    /// Deleted (or gone already), the post is `deleted` and `media.post.deleted` is sent. A
    /// rate limit or an outage is retried with backoff; a refusal, a disconnected channel or
    /// the last attempt's error gives the deletion up: the post is `published` again, with
    /// why in its `error`, and may be deleted again later.
    async fn run_delete(&self, job: JobContext) -> Result<Value, JobError> {
        let (payload, item, post) = self.job_post(&job).await?;
        let summary = |status: PlatformStatus| {
            json!({
                "mediaId": item.id,
                "platform": payload.platform,
                "account": payload.account,
                "status": status,
                "remoteId": post.remote_id,
            })
        };
        let Some(remote_id) = post.remote_id.clone() else {
            return Err(JobError::Fail("the post has no id on its platform".into()));
        };
        if post.status != PlatformStatus::Deleting {
            return Ok(summary(post.status));
        }
        let record = PostRecord {
            publishing: Arc::clone(&self.publishing),
            media_id: item.id.clone(),
            platform: payload.platform,
            account: payload.account.clone(),
            post: Mutex::new(post.clone()),
        };
        let platform = payload.platform;
        let metrics = &self.publishing.metrics;
        let attempts = job.job().attempts;
        let outcome = if attempts > DELETE_ATTEMPTS {
            // The worker of the last attempt died: give up with what it last said.
            let last = job.job().error.clone();
            Err(Halt::Retry(
                last.unwrap_or_else(|| "the worker deleting it stopped responding".into()),
                None,
                "attempts_exhausted",
            ))
        } else {
            self.delete(&item, &record, &remote_id).await
        };
        let give_up = match outcome {
            Ok(()) => {
                record
                    .update(|post| {
                        post.status = PlatformStatus::Deleted;
                        post.error = None;
                    })
                    .await
                    .map_err(|e| JobError::Retry(e.to_string()))?;
                metrics.post_deletion(platform.as_str(), "deleted");
                return Ok(summary(PlatformStatus::Deleted));
            }
            Err(Halt::Retry(error, after, _)) if attempts < DELETE_ATTEMPTS => {
                metrics.post_deletion(platform.as_str(), "retrying");
                let noted = format!("deleting it; will try again: {error}");
                let _ = record.update(|post| post.error = Some(noted)).await;
                return Err(match after {
                    Some(after) => JobError::RetryAfter { error, after },
                    None => JobError::Retry(error),
                });
            }
            Err(Halt::Retry(error, _, _)) => {
                format!("deleting stopped after {DELETE_ATTEMPTS} attempts: {error}")
            }
            Err(halt) => halt_text(halt),
        };
        metrics.post_deletion(platform.as_str(), "failed");
        let error = format!(
            "the post was not deleted from {}: {give_up}; it is still published (delete it \
             again, or on the platform)",
            platform.label()
        );
        let noted = error.clone();
        let _ = record
            .update(|post| {
                post.status = PlatformStatus::Published;
                post.error = Some(noted);
            })
            .await;
        Err(JobError::Fail(error))
    }

    /// Deletes the post `remote_id` through the platform's client, with the channel's
    /// token (refreshed once when the platform refuses it).
    async fn delete(
        &self,
        item: &MediaItem,
        record: &PostRecord,
        remote_id: &str,
    ) -> Result<(), Halt> {
        let (publisher, mut channel) = self.channel(item, record).await?;
        let mut token = self.fresh_token(&mut channel, publisher.as_ref()).await?;
        let mut refreshed = false;
        loop {
            let context = PublishedPost {
                remote_id,
                account: &record.account,
                access_token: &token,
            };
            match publisher.delete(&context).await {
                Ok(()) => return Ok(()),
                Err(error) => {
                    token = self
                        .after_refusal(error, &mut channel, publisher.as_ref(), &mut refreshed)
                        .await?;
                }
            }
        }
    }

    /// What a platform's error leaves to do with the channel's token: a first `401` with a
    /// refresh token is a fresh token to try again with; another `401`, or a revoked grant,
    /// disconnects the channel; anything else stops the attempt as it is.
    async fn after_refusal(
        &self,
        error: PublishError,
        channel: &mut Channel,
        publisher: &dyn Publisher,
        refreshed: &mut bool,
    ) -> Result<String, Halt> {
        match error {
            PublishError::Unauthorized(_)
                if !*refreshed && channel.sealed_refresh_token.is_some() =>
            {
                *refreshed = true;
                self.refresh(channel, publisher).await
            }
            PublishError::Unauthorized(reason) | PublishError::Disconnected(reason) => {
                self.publishing.disconnect(channel, &reason).await;
                Err(Halt::Fail(disconnected(channel, &reason)))
            }
            other => Err(other.into()),
        }
    }

    /// What follows a published post: its first comment, then its custom thumbnail.
    async fn follow_ups(&self, item: &MediaItem, record: &PostRecord) {
        self.first_comment(item, record).await;
        self.thumbnail(item, record).await;
    }

    /// Posts the platform's `firstComment` under the post once it is published, at most once:
    /// it is stored as `sending` before the call and as `done` or `failed` after, and one
    /// found `sending` (the worker stopped during the call) is marked failed, not sent again.
    /// Nothing here fails the post.
    async fn first_comment(&self, item: &MediaItem, record: &PostRecord) {
        let post = record.get();
        let text = item
            .targets
            .get(&record.platform)
            .and_then(|target| target.settings.get("firstComment"))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|text| !text.is_empty());
        let (Some(text), Some(remote_id)) = (text, post.remote_id.as_deref()) else {
            return;
        };
        if post.status != PlatformStatus::Published {
            return;
        }
        match post.first_comment.as_ref().map(|c| c.status) {
            Some(FollowUpStatus::Done | FollowUpStatus::Failed) => return,
            Some(FollowUpStatus::Sending) => {
                let lost = FollowUp::failed(
                    "the worker stopped while the comment was being sent, so whether it was \
                     posted is not known; it is not sent again",
                );
                let _ = record.update(|p| p.first_comment = Some(lost)).await;
                return;
            }
            None => {}
        }
        let sending = record
            .update(|p| p.first_comment = Some(FollowUp::sending()))
            .await;
        if sending.is_err() {
            return;
        }
        let outcome = match self.publisher_and_token(item, record).await {
            Err(why) => Err(why),
            Ok((publisher, token)) => {
                let published = PublishedPost {
                    remote_id,
                    account: &record.account,
                    access_token: &token,
                };
                publisher
                    .comment(&published, text)
                    .await
                    .map_err(|error| match error {
                        PublishError::Unavailable(_) | PublishError::OutcomeUnknown(_) => {
                            format!(
                                "whether the comment was posted is not known ({error}); it is \
                                 not sent again"
                            )
                        }
                        refused => refused.to_string(),
                    })
            }
        };
        let comment = match outcome {
            Ok(id) => FollowUp::done(Some(id)),
            Err(error) => FollowUp::failed(error),
        };
        let _ = record.update(|p| p.first_comment = Some(comment)).await;
    }

    /// Sets the post's custom thumbnail (YouTube's, from the upload's `thumbnail` part) once
    /// it is published: stored as `sending` before the call and as `done` or `failed` after.
    /// Setting a thumbnail again is harmless, so one found `sending` (the worker stopped
    /// during the call) is sent again. Nothing here fails the post.
    async fn thumbnail(&self, item: &MediaItem, record: &PostRecord) {
        let post = record.get();
        let thumbnail = item
            .targets
            .get(&record.platform)
            .and_then(|target| target.thumbnail.as_ref());
        let (Some(thumbnail), Some(remote_id)) = (thumbnail, post.remote_id.as_deref()) else {
            return;
        };
        let settled = post
            .thumbnail
            .as_ref()
            .is_some_and(|t| t.status != FollowUpStatus::Sending);
        if post.status != PlatformStatus::Published || settled {
            return;
        }
        let sending = record
            .update(|p| p.thumbnail = Some(FollowUp::sending()))
            .await;
        if sending.is_err() {
            return;
        }
        let outcome = async {
            let image = (self.publishing.blobs)
                .open(&thumbnail.key)
                .await
                .map_err(|e| format!("the thumbnail cannot be read: {e}"))?;
            let (publisher, token) = self.publisher_and_token(item, record).await?;
            let published = PublishedPost {
                remote_id,
                account: &record.account,
                access_token: &token,
            };
            let content_type = thumbnail.facts.content_type();
            publisher
                .set_thumbnail(&published, image.as_ref(), content_type)
                .await
                .map_err(|error| error.to_string())
        }
        .await;
        let done = match outcome {
            Ok(()) => FollowUp::done(None),
            Err(error) => FollowUp::failed(error),
        };
        let _ = record.update(|p| p.thumbnail = Some(done)).await;
    }

    /// What a follow-up of a published post calls with: the platform's client and the
    /// channel's access token (refreshed when it expires soon); why not, as text.
    async fn publisher_and_token(
        &self,
        item: &MediaItem,
        record: &PostRecord,
    ) -> Result<(Arc<dyn Publisher>, String), String> {
        let (publisher, mut channel) = self.channel(item, record).await.map_err(halt_text)?;
        let token = self
            .fresh_token(&mut channel, publisher.as_ref())
            .await
            .map_err(halt_text)?;
        Ok((publisher, token))
    }

    /// The platform's client and the item's channel on it, connected; why not, as the
    /// post's failure.
    async fn channel(
        &self,
        item: &MediaItem,
        record: &PostRecord,
    ) -> Result<(Arc<dyn Publisher>, Channel), Halt> {
        let publishing = &*self.publishing;
        let (platform, account) = (record.platform, record.account.as_str());
        let publisher = publishing
            .publishers
            .get(&platform)
            .cloned()
            .ok_or_else(|| {
                Halt::Fail(PostFailure::xf(
                    failure_codes::PLATFORM_NOT_CONFIGURED,
                    format!(
                        "publishing to {} is not configured on this server",
                        platform.label()
                    ),
                ))
            })?;
        let channel = publishing
            .store
            .find_channel(&item.organization_id, platform, account)
            .await
            .map_err(|e| Halt::Retry(format!("the store failed: {e}"), None, "store"))?
            .ok_or_else(|| {
                Halt::Fail(PostFailure::xf(
                    failure_codes::CHANNEL_NOT_CONNECTED,
                    format!(
                        "the {} account {account} is no longer connected",
                        platform.label()
                    ),
                ))
            })?;
        if let Some(reason) = &channel.disconnected {
            return Err(Halt::Fail(disconnected(&channel, reason)));
        }
        Ok((publisher, channel))
    }

    async fn publish(
        &self,
        job: &JobContext,
        item: &MediaItem,
        record: &PostRecord,
    ) -> Result<(), Halt> {
        let publishing = &*self.publishing;
        let (platform, account) = (record.platform, record.account.as_str());
        let (publisher, mut channel) = self.channel(item, record).await?;
        // Every file (a carousel's images), opened, and a signed URL of each.
        let expires = publishing
            .clock
            .now()
            .plus(chrono::Duration::hours(MEDIA_URL_LIFETIME_HOURS));
        let mut opened = Vec::new();
        let mut urls = Vec::new();
        for (index, file) in item.files().enumerate() {
            opened.push(publishing.blobs.open(&file.key).await.map_err(|e| {
                Halt::Retry(format!("the media file cannot be read: {e}"), None, "blob")
            })?);
            urls.push(publishing.media_urls.url(&item.id, index, expires));
        }
        let carousel: Vec<CarouselImage<'_>> = item
            .files()
            .zip(&opened)
            .zip(&urls)
            .map(|((file, bytes), url)| CarouselImage {
                file,
                bytes: bytes.as_ref(),
                url,
            })
            .filter(|_| item.is_carousel())
            .collect();
        let mut token = self.fresh_token(&mut channel, publisher.as_ref()).await?;
        if record.get().status != PlatformStatus::Processing {
            record
                .update(|post| {
                    post.status = PlatformStatus::Processing;
                    post.error = None;
                })
                .await?;
        }
        let settings = item
            .targets
            .get(&platform)
            .map(|t| t.settings.clone())
            .unwrap_or_default();
        let mut refreshed = false;
        let started = tokio::time::Instant::now();
        loop {
            let context = PostContext {
                item,
                account,
                account_name: &channel.name,
                default_board: channel.default_board.as_deref(),
                settings: &settings,
                access_token: &token,
                file: opened[0].as_ref(),
                media_url: &urls[0],
                carousel: &carousel,
                checkpoints: record,
            };
            let step = tracing::info_span!(
                "publish_step",
                platform = platform.as_str(),
                media_id = %item.id,
                account,
                stage = ?record.get().stage,
            );
            let stepped = self.step(publisher.as_ref(), &context, record);
            let error = match stepped.instrument(step).await {
                Ok(Step::Done) => return Ok(()),
                Ok(Step::Next) => continue,
                Ok(Step::Wait(wait)) => {
                    if started.elapsed() + wait > self.options.max_wait {
                        return Err(Halt::Retry(
                            format!("{} is still processing the post", platform.label()),
                            Some(wait),
                            "processing",
                        ));
                    }
                    job.set_progress(50);
                    tokio::time::sleep(wait).await;
                    continue;
                }
                Err(error) => error,
            };
            token = self
                .after_refusal(error, &mut channel, publisher.as_ref(), &mut refreshed)
                .await?;
        }
    }

    /// The step the post's stage calls for.
    async fn step(
        &self,
        publisher: &dyn Publisher,
        context: &PostContext<'_>,
        record: &PostRecord,
    ) -> Result<Step, PublishError> {
        let post = record.get();
        let mut checkpoint = post.checkpoint.clone();
        match post.stage {
            PostStage::New => {
                publisher.start(context, &mut checkpoint).await?;
                record
                    .update(|post| {
                        post.checkpoint = checkpoint;
                        post.stage = PostStage::Started;
                    })
                    .await?;
                Ok(Step::Next)
            }
            PostStage::Started => match publisher.poll(context, &mut checkpoint).await? {
                PollOutcome::Ready => {
                    record
                        .update(|post| {
                            post.checkpoint = checkpoint;
                            post.stage = PostStage::Ready;
                        })
                        .await?;
                    Ok(Step::Next)
                }
                PollOutcome::Wait(wait) => {
                    record.update(|post| post.checkpoint = checkpoint).await?;
                    Ok(Step::Wait(wait))
                }
            },
            PostStage::Ready => {
                // Stored before the irreversible call: if its outcome is lost, the next
                // attempt looks for the post before sending anything.
                record
                    .update(|post| post.stage = PostStage::Finalizing)
                    .await?;
                let outcome = publisher.finalize(context, &mut checkpoint).await;
                self.settle(record, outcome, checkpoint).await
            }
            PostStage::Finalizing => match publisher.find(context, &checkpoint).await? {
                Some(outcome) => self.settle(record, Ok(outcome), checkpoint).await,
                None => {
                    // The platform has no trace of it: the call never took effect.
                    record.update(|post| post.stage = PostStage::Ready).await?;
                    Ok(Step::Next)
                }
            },
            PostStage::Done => Ok(Step::Done),
        }
    }

    /// Stores what finalizing (or looking for the post) found.
    async fn settle(
        &self,
        record: &PostRecord,
        outcome: Result<Outcome, PublishError>,
        checkpoint: Value,
    ) -> Result<Step, PublishError> {
        match outcome {
            Ok(Outcome::Published(published)) => {
                record
                    .finish(checkpoint, Finished::Published(published))
                    .await?;
                Ok(Step::Done)
            }
            Ok(Outcome::Manual(reason)) => {
                record.finish(checkpoint, Finished::Manual(reason)).await?;
                Ok(Step::Done)
            }
            Ok(Outcome::Pending(wait)) => {
                record.update(|post| post.checkpoint = checkpoint).await?;
                Ok(Step::Wait(wait))
            }
            Err(error) => {
                // A refusal, a rate limit and a refused token are answers: nothing was
                // published, and the call may be made again. Anything else (no answer, a
                // 5xx, a broken answer) leaves the outcome unknown: the stage stays
                // `Finalizing`, and whatever the call learned (a publish id, say) is kept for
                // the look-up.
                let definite = matches!(
                    error,
                    PublishError::Rejected { .. }
                        | PublishError::RateLimited { .. }
                        | PublishError::Unauthorized(_)
                        | PublishError::Disconnected(_)
                );
                record
                    .update(|post| {
                        post.checkpoint = checkpoint;
                        if definite {
                            post.stage = PostStage::Ready;
                        }
                    })
                    .await?;
                if definite {
                    Err(error)
                } else {
                    Err(PublishError::OutcomeUnknown(error.to_string()))
                }
            }
        }
    }

    /// The channel's access token, refreshed first when it expires within five minutes.
    async fn fresh_token(
        &self,
        channel: &mut Channel,
        publisher: &dyn Publisher,
    ) -> Result<String, Halt> {
        let margin = chrono::Duration::minutes(REFRESH_MARGIN_MINUTES);
        let expiring = channel
            .expires_at
            .is_some_and(|at| at <= self.publishing.clock.now().plus(margin));
        if expiring && channel.sealed_refresh_token.is_some() {
            return self.refresh(channel, publisher).await;
        }
        let owner = channel_owner(
            &channel.organization_id,
            channel.platform,
            &channel.account_id,
        );
        self.publishing
            .token_sealer
            .open(&owner, &channel.sealed_access_token)
            .map_err(|_| {
                Halt::Fail(PostFailure::xf(
                    failure_codes::TOKEN_UNREADABLE,
                    "the channel's token cannot be opened (the host's secret key changed?); \
                     connect the channel again",
                ))
            })
    }

    /// Refreshes the channel's access token and stores it (and a new refresh token, if the
    /// platform rotated it; never an empty one).
    async fn refresh(
        &self,
        channel: &mut Channel,
        publisher: &dyn Publisher,
    ) -> Result<String, Halt> {
        let publishing = &*self.publishing;
        let owner = channel_owner(
            &channel.organization_id,
            channel.platform,
            &channel.account_id,
        );
        let sealer = &publishing.token_sealer;
        let refresh_token = channel
            .sealed_refresh_token
            .as_deref()
            .and_then(|sealed| sealer.open(&owner, sealed).ok())
            .ok_or_else(|| {
                Halt::Fail(PostFailure::xf(
                    failure_codes::TOKEN_UNREADABLE,
                    "the channel's refresh token cannot be opened; connect it again",
                ))
            })?;
        let platform = channel.platform.as_str();
        let refreshed = publisher.refresh(&refresh_token).await;
        let outcome = if refreshed.is_ok() {
            "refreshed"
        } else {
            "failed"
        };
        publishing.metrics.token_refresh(platform, outcome);
        let grant = match refreshed {
            Ok(grant) => grant,
            Err(PublishError::Disconnected(reason) | PublishError::Unauthorized(reason)) => {
                // Platforms that rotate refresh tokens (TikTok, Pinterest) refuse the old one
                // once another job, here or on another instance, refreshed first: then the
                // stored tokens are newer than ours, and they are used instead.
                let stored = publishing
                    .store
                    .find_channel(
                        &channel.organization_id,
                        channel.platform,
                        &channel.account_id,
                    )
                    .await
                    .map_err(|e| Halt::Retry(format!("the store failed: {e}"), None, "store"))?;
                if let Some(stored) = stored.filter(|s| {
                    s.disconnected.is_none()
                        && s.sealed_refresh_token != channel.sealed_refresh_token
                }) {
                    let token = sealer.open(&owner, &stored.sealed_access_token).ok();
                    if let Some(token) = token {
                        *channel = stored;
                        return Ok(token);
                    }
                }
                publishing.disconnect(channel, &reason).await;
                return Err(Halt::Fail(disconnected(channel, &reason)));
            }
            Err(other) => return Err(other.into()),
        };
        let now = publishing.clock.now();
        let sealed_access = sealer.seal(&owner, &grant.access_token);
        let sealed_refresh = grant
            .refresh_token
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| sealer.seal(&owner, t));
        let expires_at = grant
            .expires_in
            .and_then(|d| chrono::Duration::from_std(d).ok())
            .map(|d| now.plus(d));
        publishing
            .store
            .update_channel_tokens(
                &channel.id,
                &sealed_access,
                sealed_refresh.as_deref(),
                expires_at,
                now,
            )
            .await
            .map_err(|e| Halt::Retry(format!("storing a refreshed token: {e}"), None, "store"))?;
        channel.sealed_access_token = sealed_access;
        if let Some(sealed) = sealed_refresh {
            channel.sealed_refresh_token = Some(sealed);
        }
        channel.expires_at = expires_at;
        Ok(grant.access_token)
    }
}

/// Why an attempt stopped, as text.
fn halt_text(halt: Halt) -> String {
    match halt {
        Halt::Retry(message, _, _) => message,
        Halt::Fail(failure) => failure.text(),
        Halt::Cancelled => "the post was cancelled".to_owned(),
    }
}

/// What a step leaves to do.
enum Step {
    /// The post is final.
    Done,
    /// Run the next step now.
    Next,
    /// The platform is processing: the same step again after this long.
    Wait(Duration),
}

/// The publishers of a facade, by platform.
pub(crate) type Publishers = BTreeMap<Platform, Arc<dyn Publisher>>;
