//! Publishing posts: the `media-publish` job handler that drives a [`Publisher`] through its
//! steps, the channels' tokens, and the signed URLs platforms pull media from.
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
use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};

use super::media::{channel_owner, PUBLISH_ATTEMPTS};
use super::Xf;
use crate::error::{Error, Result};
use crate::ids::MediaId;
use crate::media::inspect::RangeRead;
use crate::media::publish::{
    CheckpointSink, Outcome, PollOutcome, PostContext, PublishError, Published, Publisher,
};
use crate::media::{
    Channel, MediaItem, MediaKind, MediaStatus, Platform, PlatformStatus, Post, PostStage,
};
use crate::runtime::{JobContext, JobError, JobHandler};
use crate::secret::keyed_digest;
use crate::store::MediaFilter;
use crate::time::Timestamp;

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
    /// Try again later, not before `after` if given.
    Retry(String, Option<Duration>),
    /// The post failed for good.
    Fail(String),
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
            ),
            PublishError::Unavailable(message) => Halt::Retry(message, None),
            PublishError::OutcomeUnknown(message) => Halt::Retry(
                format!(
                    "the outcome of publishing is not known ({message}); the platform is \
                     checked for the post before anything else is sent"
                ),
                None,
            ),
            rejected @ PublishError::Rejected { .. } => Halt::Fail(rejected.to_string()),
            other => Halt::Fail(other.to_string()),
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

/// The `media-publish` job handler (registered by [`Xf::spawn_workers`]).
#[derive(Debug, Clone)]
pub struct PublishHandler {
    xf: Xf,
    options: PublishOptions,
}

impl Xf {
    /// The handler of `media-publish` jobs over this facade.
    pub fn publish_handler(&self) -> PublishHandler {
        PublishHandler {
            xf: self.clone(),
            options: self.inner.publish_options,
        }
    }

    /// The configured client of `platform`.
    pub(crate) fn publisher(&self, platform: Platform) -> Option<&Arc<dyn Publisher>> {
        self.inner.publishers.get(&platform)
    }

    /// A signed URL of the item's file under the public base URL (`/m/{token}`), valid
    /// until `expires_at`.
    pub fn media_file_url(&self, id: &MediaId, expires_at: Timestamp) -> String {
        let expires = expires_at.unix_millis().div_euclid(1000);
        let signature = self.media_url_signature(id.as_str(), expires);
        format!(
            "{}/m/{id}.{expires}.{signature}",
            self.config().public_base_url
        )
    }

    fn media_url_signature(&self, id: &str, expires: i64) -> String {
        let digest = keyed_digest(
            &self.inner.media_url_key,
            &[id.as_bytes(), &expires.to_be_bytes()],
        );
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..24])
    }

    /// The file a signed media URL's token names, with its MIME type, if the signature is
    /// right and the URL has not expired; `404` otherwise (a wrong signature is not told
    /// apart from a missing file).
    pub async fn open_media_file(&self, token: &str) -> Result<MediaFile> {
        let missing = || Error::NotFound("media file");
        let mut parts = token.splitn(3, '.');
        let (Some(id), Some(expires), Some(signature)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(missing());
        };
        let expires: i64 = expires.parse().map_err(|_| missing())?;
        let expected = self.media_url_signature(id, expires);
        let signature_ok: bool =
            subtle::ConstantTimeEq::ct_eq(expected.as_bytes(), signature.as_bytes()).into();
        if !signature_ok || self.now().unix_millis().div_euclid(1000) > expires {
            return Err(missing());
        }
        let id = MediaId::parse(id).map_err(|_| missing())?;
        let item = self.store().get_media(&id).await?.ok_or_else(missing)?;
        let reader = self
            .inner
            .blobs
            .open(&item.file.key)
            .await
            .map_err(|_| missing())?;
        Ok(MediaFile {
            content_type: item.file.facts.content_type(),
            reader,
        })
    }

    /// Marks the channel disconnected and fails the posts on it that have not finished,
    /// with a message naming the reason.
    async fn disconnect(&self, channel: &Channel, reason: &str) {
        let now = self.now();
        if let Err(error) = self
            .store()
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
                    .store()
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
            failed.fail(message.clone());
            let updated = self
                .store()
                .update_post(&id, channel.platform, &channel.account_id, &failed, now)
                .await;
            if let Err(error) = updated {
                tracing::warn!(%error, media_id = %id, "failing a post of a disconnected channel");
            }
        }
    }
}

fn disconnected_message(channel: &Channel, reason: &str) -> String {
    format!(
        "the {} channel {} is disconnected ({reason}); connect it again and upload anew",
        channel.platform.label(),
        channel.account_id
    )
}

/// A media file opened through a signed URL.
pub struct MediaFile {
    /// Its MIME type.
    pub content_type: &'static str,
    /// Its bytes.
    pub reader: Box<dyn RangeRead>,
}

impl std::fmt::Debug for MediaFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaFile")
            .field("content_type", &self.content_type)
            .field("len", &self.reader.len())
            .finish()
    }
}

/// The post being published: its last stored state, and where to store the next.
struct PostRecord {
    xf: Xf,
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
    async fn update(
        &self,
        change: impl FnOnce(&mut Post),
    ) -> std::result::Result<(), PublishError> {
        let post = {
            let mut post = self.post.lock().unwrap_or_else(|p| p.into_inner());
            change(&mut post);
            post.clone()
        };
        let stored = self
            .xf
            .store()
            .update_post(
                &self.media_id,
                self.platform,
                &self.account,
                &post,
                self.xf.now(),
            )
            .await
            .map_err(|e| PublishError::Unavailable(format!("storing the post's progress: {e}")))?;
        match stored {
            Some(_) => Ok(()),
            None => Err(PublishError::rejected(
                "gone",
                "the media item or its post no longer exists",
            )),
        }
    }

    /// Stores the post as published (or, with `manual`, as waiting for a person), with the
    /// last checkpoint, in one write.
    async fn finish(
        &self,
        checkpoint: Value,
        outcome: Finished,
    ) -> std::result::Result<(), PublishError> {
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
    async fn save(&self, checkpoint: &Value) -> std::result::Result<(), PublishError> {
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
    async fn run(&self, job: JobContext) -> std::result::Result<Value, JobError> {
        let payload: PublishPayload = serde_json::from_value(job.payload().clone())
            .map_err(|e| JobError::Fail(format!("the job's payload is not a post: {e}")))?;
        let store = self.xf.store();
        let item = store
            .get_media(&payload.media_id)
            .await
            .map_err(|e| JobError::Retry(format!("the store failed: {e}")))?
            .ok_or_else(|| JobError::Fail("the media item no longer exists".into()))?;
        let post = item
            .post(payload.platform, &payload.account)
            .cloned()
            .ok_or_else(|| JobError::Fail("the media item has no such post".into()))?;
        let record = PostRecord {
            xf: self.xf.clone(),
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
            let noted = error.clone();
            let _ = record.update(|post| post.fail(noted)).await;
            return Err(JobError::Fail(error));
        }
        match self.publish(&job, &item, &record).await {
            Ok(()) => Ok(summary(&record)),
            Err(Halt::Retry(error, after)) if !last_attempt => {
                let noted = error.clone();
                let _ = record
                    .update(|post| post.error = Some(format!("will try again: {noted}")))
                    .await;
                Err(match after {
                    Some(after) => JobError::RetryAfter { error, after },
                    None => JobError::Retry(error),
                })
            }
            Err(Halt::Retry(error, _) | Halt::Fail(error)) => {
                let noted = error.clone();
                let _ = record.update(|post| post.fail(noted)).await;
                Err(JobError::Fail(error))
            }
        }
    }
}

impl PublishHandler {
    async fn publish(
        &self,
        job: &JobContext,
        item: &MediaItem,
        record: &PostRecord,
    ) -> std::result::Result<(), Halt> {
        let xf = &self.xf;
        let (platform, account) = (record.platform, record.account.as_str());
        let publisher = xf.publisher(platform).cloned().ok_or_else(|| {
            Halt::Fail(format!(
                "publishing to {} is not configured on this server",
                platform.label()
            ))
        })?;
        let mut channel = xf
            .store()
            .find_channel(&item.organization_id, platform, account)
            .await
            .map_err(|e| Halt::Retry(format!("the store failed: {e}"), None))?
            .ok_or_else(|| {
                Halt::Fail(format!(
                    "the {} account {account} is no longer connected",
                    platform.label()
                ))
            })?;
        if let Some(reason) = &channel.disconnected {
            return Err(Halt::Fail(disconnected_message(&channel, reason)));
        }
        let file = xf
            .inner
            .blobs
            .open(&item.file.key)
            .await
            .map_err(|e| Halt::Retry(format!("the media file cannot be read: {e}"), None))?;
        let media_url = xf.media_file_url(
            &item.id,
            xf.now()
                .plus(chrono::Duration::hours(MEDIA_URL_LIFETIME_HOURS)),
        );
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
                settings: &settings,
                access_token: &token,
                file: file.as_ref(),
                media_url: &media_url,
                checkpoints: record,
            };
            let error = match self.step(publisher.as_ref(), &context, record).await {
                Ok(Step::Done) => return Ok(()),
                Ok(Step::Next) => continue,
                Ok(Step::Wait(wait)) => {
                    if started.elapsed() + wait > self.options.max_wait {
                        return Err(Halt::Retry(
                            format!("{} is still processing the post", platform.label()),
                            Some(wait),
                        ));
                    }
                    job.set_progress(50);
                    tokio::time::sleep(wait).await;
                    continue;
                }
                Err(error) => error,
            };
            match error {
                PublishError::Unauthorized(_)
                    if !refreshed && channel.sealed_refresh_token.is_some() =>
                {
                    refreshed = true;
                    token = self.refresh(&mut channel, publisher.as_ref()).await?;
                }
                PublishError::Unauthorized(reason) | PublishError::Disconnected(reason) => {
                    xf.disconnect(&channel, &reason).await;
                    return Err(Halt::Fail(disconnected_message(&channel, &reason)));
                }
                other => return Err(other.into()),
            }
        }
    }

    /// The step the post's stage calls for.
    async fn step(
        &self,
        publisher: &dyn Publisher,
        context: &PostContext<'_>,
        record: &PostRecord,
    ) -> std::result::Result<Step, PublishError> {
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
        outcome: std::result::Result<Outcome, PublishError>,
        checkpoint: Value,
    ) -> std::result::Result<Step, PublishError> {
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
    ) -> std::result::Result<String, Halt> {
        let margin = chrono::Duration::minutes(REFRESH_MARGIN_MINUTES);
        let expiring = channel
            .expires_at
            .is_some_and(|at| at <= self.xf.now().plus(margin));
        if expiring && channel.sealed_refresh_token.is_some() {
            return self.refresh(channel, publisher).await;
        }
        let owner = channel_owner(
            &channel.organization_id,
            channel.platform,
            &channel.account_id,
        );
        self.xf
            .inner
            .token_sealer
            .open(&owner, &channel.sealed_access_token)
            .map_err(|_| {
                Halt::Fail(
                    "the channel's token cannot be opened (the host's secret key changed?); \
                     connect the channel again"
                        .into(),
                )
            })
    }

    /// Refreshes the channel's access token and stores it (and a new refresh token, if the
    /// platform rotated it; never an empty one).
    async fn refresh(
        &self,
        channel: &mut Channel,
        publisher: &dyn Publisher,
    ) -> std::result::Result<String, Halt> {
        let xf = &self.xf;
        let owner = channel_owner(
            &channel.organization_id,
            channel.platform,
            &channel.account_id,
        );
        let sealer = &xf.inner.token_sealer;
        let refresh_token = channel
            .sealed_refresh_token
            .as_deref()
            .and_then(|sealed| sealer.open(&owner, sealed).ok())
            .ok_or_else(|| {
                Halt::Fail("the channel's refresh token cannot be opened; connect it again".into())
            })?;
        let grant = match publisher.refresh(&refresh_token).await {
            Ok(grant) => grant,
            Err(PublishError::Disconnected(reason) | PublishError::Unauthorized(reason)) => {
                // Platforms that rotate refresh tokens (TikTok, Pinterest) refuse the old one
                // once another job, here or on another instance, refreshed first: then the
                // stored tokens are newer than ours, and they are used instead.
                let stored = xf
                    .store()
                    .find_channel(
                        &channel.organization_id,
                        channel.platform,
                        &channel.account_id,
                    )
                    .await
                    .map_err(|e| Halt::Retry(format!("the store failed: {e}"), None))?;
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
                xf.disconnect(channel, &reason).await;
                return Err(Halt::Fail(disconnected_message(channel, &reason)));
            }
            Err(other) => return Err(other.into()),
        };
        let now = xf.now();
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
        xf.store()
            .update_channel_tokens(
                &channel.id,
                &sealed_access,
                sealed_refresh.as_deref(),
                expires_at,
                now,
            )
            .await
            .map_err(|e| Halt::Retry(format!("storing a refreshed token: {e}"), None))?;
        channel.sealed_access_token = sealed_access;
        if let Some(sealed) = sealed_refresh {
            channel.sealed_refresh_token = Some(sealed);
        }
        channel.expires_at = expires_at;
        Ok(grant.access_token)
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
