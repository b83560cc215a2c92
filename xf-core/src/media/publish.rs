//! Publishing to the platforms: the [`Publisher`] trait each platform's client implements,
//! what it is given, and how it fails.
//!
//! A post (a media item on one account of one platform) is published in three steps, each
//! followed by a stored checkpoint, so that a restart resumes where it stopped:
//!
//! 1. [`Publisher::start`]: reversible work only (an upload session, a container, the
//!    media's bytes). It may save intermediate checkpoints through
//!    [`PostContext::save`] (a resumable upload's session, say), and it is retried with
//!    backoff.
//! 2. [`Publisher::poll`]: one read-only status check, repeated until the platform is ready.
//! 3. [`Publisher::finalize`]: the one irreversible call. It is never retried blindly: when
//!    its outcome is unknown (a time-out, a crash), the post's stage stays
//!    [`PostStage::Finalizing`](super::PostStage::Finalizing) and the next attempt first
//!    asks the platform for the post ([`Publisher::find`]).

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::inspect::RangeRead;
use crate::model::media::{MediaItem, MediaKind, Platform, StoredFile};

/// The job type of publishing one post.
pub const MEDIA_PUBLISH: &str = "media-publish";

/// How a platform call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PublishError {
    /// The platform's rate limit: try again after `retry_after` (if it said).
    #[error("rate limited by the platform: {message}")]
    RateLimited {
        /// The platform's message.
        message: String,
        /// When to try again, if the platform said.
        retry_after: Option<Duration>,
    },
    /// A 5xx, a broken connection or an answer not as documented: worth another try.
    #[error("{0}")]
    Unavailable(String),
    /// The platform refused the post or its media for good.
    #[error("{code}: {message}")]
    Rejected {
        /// The platform's error code.
        code: String,
        /// The platform's message.
        message: String,
    },
    /// The access token was not accepted (401): refresh it and try again.
    #[error("the access token was not accepted: {0}")]
    Unauthorized(String),
    /// The grant was revoked (or cannot be refreshed): the channel must be connected again.
    #[error("the channel's authorization was revoked: {0}")]
    Disconnected(String),
    /// The irreversible call's outcome is not known (it timed out or the answer broke off).
    #[error("the outcome is not known: {0}")]
    OutcomeUnknown(String),
    /// The post was cancelled while this attempt was on it (xf's own, from storing a
    /// checkpoint): stop, sending nothing more.
    #[error("the post was cancelled")]
    Cancelled,
}

impl PublishError {
    /// A refusal with the platform's code and message.
    pub fn rejected(code: impl Into<String>, message: impl Into<String>) -> Self {
        PublishError::Rejected {
            code: code.into(),
            message: message.into(),
        }
    }
}

/// A post the platform has: its id and public address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The platform's id of the post (a video id, media id, URN or pin id).
    pub remote_id: String,
    /// Its public address, where the platform has one.
    pub url: Option<String>,
}

/// What one status check before the irreversible call found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PollOutcome {
    /// Ready for [`Publisher::finalize`].
    Ready,
    /// Still processing: check again after this long.
    Wait(Duration),
}

/// Where a post stands after the irreversible call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Live.
    Published(Published),
    /// The platform needs a person to finish it (TikTok's inbox): why.
    Manual(String),
    /// The platform took it and is still processing: [`Publisher::find`] after this long.
    Pending(Duration),
}

/// A fresh access token from a refresh.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenGrant {
    /// The bearer token.
    pub access_token: String,
    /// How long it lives, if the platform said.
    pub expires_in: Option<Duration>,
    /// A new refresh token, if the platform rotated it (an empty one is never stored).
    pub refresh_token: Option<String>,
}

impl std::fmt::Debug for TokenGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenGrant")
            .field("expires_in", &self.expires_in)
            .finish_non_exhaustive()
    }
}

/// Stores a post's checkpoint in the middle of a step.
#[async_trait]
pub trait CheckpointSink: Send + Sync {
    /// Stores `checkpoint` as the post's; an error when the store failed or the attempt is
    /// no longer current (stop then).
    async fn save(&self, checkpoint: &Value) -> Result<(), PublishError>;
}

/// What a step is given: the post, its media, the account's token.
pub struct PostContext<'a> {
    /// The media item.
    pub item: &'a MediaItem,
    /// The platform's id of the account posted to.
    pub account: &'a str,
    /// The account's display name (a username on TikTok, which its post URLs use).
    pub account_name: &'a str,
    /// The channel's default board (Pinterest), for an upload that names none.
    pub default_board: Option<&'a str>,
    /// The platform's settings of the upload (the spec's nested keys).
    pub settings: &'a Map<String, Value>,
    /// The account's OAuth access token.
    pub access_token: &'a str,
    /// The media's bytes.
    pub file: &'a dyn RangeRead,
    /// A signed, expiring, `Range`-capable URL of the media, for platforms that pull it.
    pub media_url: &'a str,
    /// A carousel's images in order, the first being [`PostContext::file`]; empty for a
    /// single file ([`MediaItem::is_carousel`]).
    pub carousel: &'a [CarouselImage<'a>],
    /// Stores checkpoints within a step.
    pub checkpoints: &'a dyn CheckpointSink,
}

/// One image of a carousel, as a step is given it.
pub struct CarouselImage<'a> {
    /// The image as stored: its name, size and format.
    pub file: &'a StoredFile,
    /// Its bytes.
    pub bytes: &'a dyn RangeRead,
    /// A signed, expiring URL of it, for platforms that pull images.
    pub url: &'a str,
}

impl std::fmt::Debug for CarouselImage<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CarouselImage")
            .field("name", &self.file.name)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for PostContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostContext")
            .field("item", &self.item.id)
            .field("account", &self.account)
            .finish_non_exhaustive()
    }
}

impl PostContext<'_> {
    /// Stores `checkpoint` as the post's, now.
    pub async fn save(&self, checkpoint: &Value) -> Result<(), PublishError> {
        self.checkpoints.save(checkpoint).await
    }

    /// A text setting, trimmed, if given and not empty.
    pub fn setting(&self, key: &str) -> Option<&str> {
        self.settings
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }

    /// A boolean setting (default `false`).
    pub fn flag(&self, key: &str) -> bool {
        self.settings
            .get(key)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// The video frame to show as the cover (`coverTimestampMs`), in milliseconds from the
    /// start, when given for a video (the upload checked it is within the video).
    pub fn cover_ms(&self) -> Option<u64> {
        self.settings
            .get("coverTimestampMs")
            .and_then(Value::as_u64)
            .filter(|_| self.is_video())
    }

    /// The caption: the platform's `key` setting, else the item's description.
    pub fn caption(&self, key: &str) -> Option<&str> {
        self.setting(key).or(self
            .item
            .description
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty()))
    }

    /// The title: the platform's `title` setting, else the item's title, else the file's
    /// name.
    pub fn title(&self) -> &str {
        self.setting("title")
            .or(self
                .item
                .title
                .as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty()))
            .unwrap_or(&self.item.file.name)
    }

    /// The media's MIME type.
    pub fn content_type(&self) -> &'static str {
        self.item.file.facts.content_type()
    }

    /// Whether it is a video.
    pub fn is_video(&self) -> bool {
        self.item.kind == MediaKind::Video
    }
}

/// A published post, as deleting it or commenting on it needs it: its id, the account, the
/// account's token.
pub struct PublishedPost<'a> {
    /// The platform's id of the post (a video id, URN or pin id).
    pub remote_id: &'a str,
    /// The platform's id of the account it was posted to.
    pub account: &'a str,
    /// The account's OAuth access token.
    pub access_token: &'a str,
}

impl std::fmt::Debug for PublishedPost<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PublishedPost")
            .field("remote_id", &self.remote_id)
            .field("account", &self.account)
            .finish_non_exhaustive()
    }
}

/// One platform's client.
#[async_trait]
pub trait Publisher: Send + Sync + std::fmt::Debug {
    /// The platform it publishes to.
    fn platform(&self) -> Platform;

    /// Exchanges a refresh token for a fresh access token. Platforms without refresh
    /// tokens answer [`PublishError::Disconnected`].
    async fn refresh(&self, refresh_token: &str) -> Result<TokenGrant, PublishError>;

    /// Reversible work: sessions, containers, the media's bytes. `checkpoint` is the last
    /// one stored (`null` at first); the step leaves it as the next step needs it.
    async fn start(
        &self,
        post: &PostContext<'_>,
        checkpoint: &mut Value,
    ) -> Result<(), PublishError>;

    /// One read-only status check. By default there is nothing to wait for (the platform
    /// processes after the irreversible call, and [`Publisher::find`] follows it).
    async fn poll(
        &self,
        _post: &PostContext<'_>,
        _checkpoint: &mut Value,
    ) -> Result<PollOutcome, PublishError> {
        Ok(PollOutcome::Ready)
    }

    /// The one irreversible call: the post goes live, goes to a person (TikTok's inbox),
    /// or is taken for processing. A refusal must be [`PublishError::Rejected`]; any other
    /// error leaves the outcome unknown.
    async fn finalize(
        &self,
        post: &PostContext<'_>,
        checkpoint: &mut Value,
    ) -> Result<Outcome, PublishError>;

    /// After [`Publisher::finalize`] (its outcome unknown, or the platform still
    /// processing): where the post stands, or `None` when the platform has no trace of it
    /// (the call never took effect, and it is made again).
    async fn find(
        &self,
        post: &PostContext<'_>,
        checkpoint: &Value,
    ) -> Result<Option<Outcome>, PublishError>;

    /// Posts `text` as the first comment under a published post, once (the call is never
    /// repeated: a comment whose outcome is unknown is not sent again); the comment's id.
    /// Only the platforms with a `firstComment` setting are asked (YouTube, Instagram,
    /// LinkedIn); the default refuses.
    async fn comment(&self, post: &PublishedPost<'_>, text: &str) -> Result<String, PublishError> {
        let _ = (post, text);
        Err(PublishError::rejected(
            "comments_unsupported",
            format!(
                "{} posts take no first comment here",
                self.platform().label()
            ),
        ))
    }

    /// Sets the published post's custom thumbnail to `image` (`content_type` `image/jpeg` or
    /// `image/png`). Setting it again is harmless, so it may be retried. Only YouTube takes
    /// one (the upload's `thumbnail` part); the default refuses.
    async fn set_thumbnail(
        &self,
        post: &PublishedPost<'_>,
        image: &dyn RangeRead,
        content_type: &str,
    ) -> Result<(), PublishError> {
        let _ = (post, image, content_type);
        Err(PublishError::rejected(
            "thumbnails_unsupported",
            format!("{} posts take no custom thumbnail", self.platform().label()),
        ))
    }

    /// Deletes a published post from the platform. A post the platform no longer has (it
    /// answers `404`) is deleted too. Only the platforms whose API can delete a post are
    /// asked ([`Platform::deletion_refused`]); the default refuses.
    async fn delete(&self, post: &PublishedPost<'_>) -> Result<(), PublishError> {
        let _ = post;
        Err(PublishError::rejected(
            "deletion_unsupported",
            self.platform()
                .deletion_refused()
                .unwrap_or("this client cannot delete posts"),
        ))
    }
}
