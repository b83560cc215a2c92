//! The media publishing API's records: media items with their per-platform state, and
//! connected channels.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ids::{ChannelId, MediaId, OrganizationId};
use crate::time::Timestamp;

/// A social platform media can be published to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Platform {
    /// YouTube (Shorts and long-form video).
    Youtube,
    /// Instagram (Reels and posts).
    Instagram,
    /// TikTok.
    Tiktok,
    /// LinkedIn (image and video posts).
    Linkedin,
    /// Pinterest (pins).
    Pinterest,
}

impl Platform {
    /// Every platform, in the spec's order.
    pub const ALL: [Platform; 5] = [
        Platform::Youtube,
        Platform::Instagram,
        Platform::Tiktok,
        Platform::Linkedin,
        Platform::Pinterest,
    ];

    /// Its name in the API (`youtube`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Youtube => "youtube",
            Platform::Instagram => "instagram",
            Platform::Tiktok => "tiktok",
            Platform::Linkedin => "linkedin",
            Platform::Pinterest => "pinterest",
        }
    }

    /// The platform of a name, if it is one.
    pub fn parse(name: &str) -> Option<Platform> {
        Platform::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// Its name as people write it (`YouTube`, `TikTok`, ...).
    pub fn label(self) -> &'static str {
        match self {
            Platform::Youtube => "YouTube",
            Platform::Instagram => "Instagram",
            Platform::Tiktok => "TikTok",
            Platform::Linkedin => "LinkedIn",
            Platform::Pinterest => "Pinterest",
        }
    }

    /// Whether media of `kind` can go there (YouTube takes no images).
    pub fn accepts(self, kind: MediaKind) -> bool {
        !(kind == MediaKind::Image && self == Platform::Youtube)
    }

    /// Why a published post cannot be deleted through the platform's API, where it cannot
    /// (`None` where it can: YouTube's `videos.delete`, LinkedIn's post deletion, Pinterest's
    /// pin deletion).
    pub fn deletion_refused(self) -> Option<&'static str> {
        match self {
            Platform::Youtube | Platform::Linkedin | Platform::Pinterest => None,
            Platform::Instagram => Some(
                "Instagram's Graph API has no way to delete a published post (only its \
                 comments); delete it in the Instagram app",
            ),
            Platform::Tiktok => Some(
                "TikTok's Content Posting API cannot delete a posted video; delete it in the \
                 TikTok app",
            ),
        }
    }
}

/// The job type of deleting one published post from its platform
/// (`DELETE /media/{videos|images}/{id}/posts/{platform}`).
pub const MEDIA_DELETE_POST: &str = "media-delete-post";

/// Attempts of a `media-delete-post` job before the deletion is given up (the post stays
/// `published`, with why in its `error`).
pub const DELETE_ATTEMPTS: u32 = 6;

/// Video or image.
///
/// Not `#[non_exhaustive]`: a closed set the specification fixes; a variant added would
/// change the API, and must stop code that does not handle it from compiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum MediaKind {
    /// An `.mp4` or `.mov` video.
    Video,
    /// A `.jpg`, `.png` or `.webp` image.
    Image,
}

impl MediaKind {
    /// `video` or `image`.
    pub fn as_str(self) -> &'static str {
        match self {
            MediaKind::Video => "video",
            MediaKind::Image => "image",
        }
    }
}

/// The overall status of a media item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum MediaStatus {
    /// Saved as a draft: never processed automatically.
    Draft,
    /// Waiting to be processed or published.
    Pending,
    /// Waiting for its `scheduledAt`.
    Scheduled,
    /// Platform calls are under way.
    Processing,
    /// Every selected platform is `published` or `manual`.
    Completed,
    /// At least one selected platform failed (the others keep their own status).
    Failed,
    /// Every post was cancelled before it was published (`POST .../{id}/cancel`).
    Cancelled,
}

impl MediaStatus {
    /// Every status.
    pub const ALL: [MediaStatus; 7] = [
        MediaStatus::Draft,
        MediaStatus::Pending,
        MediaStatus::Scheduled,
        MediaStatus::Processing,
        MediaStatus::Completed,
        MediaStatus::Failed,
        MediaStatus::Cancelled,
    ];

    /// Its name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            MediaStatus::Draft => "draft",
            MediaStatus::Pending => "pending",
            MediaStatus::Scheduled => "scheduled",
            MediaStatus::Processing => "processing",
            MediaStatus::Completed => "completed",
            MediaStatus::Failed => "failed",
            MediaStatus::Cancelled => "cancelled",
        }
    }

    /// The status of a name, if it is one.
    pub fn parse(name: &str) -> Option<MediaStatus> {
        MediaStatus::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// The status of a new item (docs/media.md): a draft stays `draft`; a `scheduledAt` in the
    /// future is `scheduled`; anything else is `pending`.
    pub fn initial(is_draft: bool, scheduled_at: Option<Timestamp>, now: Timestamp) -> Self {
        match (is_draft, scheduled_at) {
            (true, _) => MediaStatus::Draft,
            (false, Some(at)) if at > now => MediaStatus::Scheduled,
            _ => MediaStatus::Pending,
        }
    }
}

/// The status of a media item on one platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum PlatformStatus {
    /// Nothing done yet (or the platform is not selected).
    Idle,
    /// Waiting to be sent.
    Pending,
    /// Being uploaded or processed by the platform.
    Processing,
    /// Live.
    Published,
    /// Failed on that platform.
    Failed,
    /// Needs a person to finish it on the platform.
    Manual,
    /// Cancelled before it was published: nothing more happens to it.
    Cancelled,
    /// Published, and being deleted from the platform
    /// (`DELETE /media/{videos|images}/{id}/posts/{platform}`).
    Deleting,
    /// Published, then deleted from the platform.
    Deleted,
}

impl PlatformStatus {
    /// Its name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            PlatformStatus::Idle => "idle",
            PlatformStatus::Pending => "pending",
            PlatformStatus::Processing => "processing",
            PlatformStatus::Published => "published",
            PlatformStatus::Failed => "failed",
            PlatformStatus::Manual => "manual",
            PlatformStatus::Cancelled => "cancelled",
            PlatformStatus::Deleting => "deleting",
            PlatformStatus::Deleted => "deleted",
        }
    }

    /// Whether a post going from this status to `next` is published for the first time: a
    /// deletion given up puts a `deleting` post back to `published`, which is no new post.
    pub fn publishes(self, next: PlatformStatus) -> bool {
        use PlatformStatus::{Deleted, Deleting, Published};
        next == Published && !matches!(self, Published | Deleting | Deleted)
    }
}

/// The file of a media item, as stored and inspected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredFile {
    /// Where the bytes are in the blob store.
    pub key: String,
    /// The name the client gave the file.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// What inspecting the content found.
    pub facts: FileFacts,
}

/// What inspecting a file's content found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum FileFacts {
    /// A video's container, duration, display size, rotation and codecs.
    Video(VideoFacts),
    /// An image's format and size.
    Image(ImageFacts),
}

/// How far the publishing of one post got: each step's checkpoint is stored before the
/// next step starts, so an attempt that stops anywhere resumes where it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum PostStage {
    /// Nothing sent yet.
    #[default]
    New,
    /// Reversible work is under way or done (an upload session, a container, the media's
    /// bytes); the checkpoint says how far.
    Started,
    /// The platform is ready for the irreversible call.
    Ready,
    /// The irreversible call was made and its outcome is not known (it timed out, or the
    /// process stopped): the platform is asked for the post before anything else is done.
    Finalizing,
    /// Finished: published, needs a person, or failed for good.
    Done,
}

/// One post: a media item on one account of one platform, published by one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Post {
    /// Where it stands.
    pub status: PlatformStatus,
    /// How far publishing got.
    #[serde(default)]
    pub stage: PostStage,
    /// The platform client's state after the last step (session URL, container id, …).
    #[serde(default)]
    pub checkpoint: Value,
    /// The platform's id of the post, once published.
    pub remote_id: Option<String>,
    /// Its public address, once published.
    pub url: Option<String>,
    /// Why it failed (the platform's code and message where it gave them), or what is
    /// being waited for.
    pub error: Option<String>,
    /// The job that publishes it; once it is being deleted, the job that deletes it.
    pub job_id: Option<crate::ids::JobId>,
    /// Why it failed, as a code and a message (the platform's where it refused), once it
    /// failed for good.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<PostFailure>,
    /// The first comment posted under it (the platform's `firstComment` setting), once xf
    /// started sending it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_comment: Option<FollowUp>,
    /// Its custom thumbnail (YouTube's, from the upload's `thumbnail` part), once xf started
    /// setting it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thumbnail: Option<FollowUp>,
}

/// What xf does once a post is published (its first comment, its custom thumbnail): done after
/// the post, reported on it; its failure does not fail the post.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct FollowUp {
    /// `sending`, `done` or `failed`.
    pub status: FollowUpStatus,
    /// The platform's id of what was made (a comment's), once done; null where the platform
    /// gives none (a thumbnail).
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub id: Option<String>,
    /// Why it was not done (or why its outcome is not known), when it failed.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub error: Option<String>,
}

/// Where a follow-up stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum FollowUpStatus {
    /// Being sent now.
    Sending,
    /// Done: the comment posted, the thumbnail set.
    Done,
    /// Not done (or its outcome is not known).
    Failed,
}

impl FollowUp {
    /// A follow-up being sent.
    pub fn sending() -> Self {
        FollowUp {
            status: FollowUpStatus::Sending,
            id: None,
            error: None,
        }
    }

    /// A follow-up done, with the id of what it made, if any.
    pub fn done(id: Option<String>) -> Self {
        FollowUp {
            status: FollowUpStatus::Done,
            id,
            error: None,
        }
    }

    /// A follow-up not done, with why.
    pub fn failed(error: impl Into<String>) -> Self {
        FollowUp {
            status: FollowUpStatus::Failed,
            id: None,
            error: Some(error.into()),
        }
    }
}

/// Why a post failed for good: the code and message of `media.post.failed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PostFailure {
    /// `platform` when the platform refused the post (then `code` is the platform's own),
    /// `xf` when xf stopped it (then `code` is one of xf's, see docs/webhooks.md).
    pub source: FailureSource,
    /// The platform's error code, or xf's.
    pub code: String,
    /// The platform's message, or xf's.
    pub message: String,
}

/// Who decided that a post failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum FailureSource {
    /// The platform refused the post or its media.
    Platform,
    /// xf stopped: the channel is disconnected, the attempts ran out, publishing to the
    /// platform is not configured, ….
    Xf,
}

impl PostFailure {
    /// A refusal with the platform's code and message.
    pub fn platform(code: impl Into<String>, message: impl Into<String>) -> Self {
        PostFailure {
            source: FailureSource::Platform,
            code: code.into(),
            message: message.into(),
        }
    }

    /// A failure xf decided, with one of its codes.
    pub fn xf(code: &'static str, message: impl Into<String>) -> Self {
        PostFailure {
            source: FailureSource::Xf,
            code: code.to_owned(),
            message: message.into(),
        }
    }

    /// The post's `error` text: `code: message` for a platform's refusal, the message for
    /// xf's.
    pub fn text(&self) -> String {
        match self.source {
            FailureSource::Platform => format!("{}: {}", self.code, self.message),
            FailureSource::Xf => self.message.clone(),
        }
    }
}

impl Post {
    /// A post not yet sent, in `status`.
    pub fn new(status: PlatformStatus) -> Self {
        Post {
            status,
            stage: PostStage::New,
            checkpoint: Value::Null,
            remote_id: None,
            url: None,
            error: None,
            job_id: None,
            failure: None,
            first_comment: None,
            thumbnail: None,
        }
    }

    /// Marks it failed for good, with why.
    pub fn fail(&mut self, failure: PostFailure) {
        self.status = PlatformStatus::Failed;
        self.stage = PostStage::Done;
        self.error = Some(failure.text());
        self.failure = Some(failure);
    }

    /// Whether its publishing is over: nothing more will be sent to publish it (a published
    /// post being deleted, or deleted, is one).
    pub fn is_final(&self) -> bool {
        matches!(
            self.status,
            PlatformStatus::Published
                | PlatformStatus::Failed
                | PlatformStatus::Manual
                | PlatformStatus::Cancelled
                | PlatformStatus::Deleting
                | PlatformStatus::Deleted
        )
    }

    /// Whether it may still be cancelled: nothing irreversible was sent (its stage is before
    /// `Finalizing`) and it is not final.
    pub fn is_cancellable(&self) -> bool {
        // A post left to a person (`autoPublish` off) that xf never sent is one too.
        let left_to_a_person = self.status == PlatformStatus::Manual
            && self.stage == PostStage::New
            && self.job_id.is_none();
        (!self.is_final() || left_to_a_person)
            && matches!(
                self.stage,
                PostStage::New | PostStage::Started | PostStage::Ready
            )
    }

    /// Marks it cancelled.
    pub fn cancel(&mut self) {
        self.status = PlatformStatus::Cancelled;
        self.stage = PostStage::Done;
        self.error = None;
    }
}

impl FileFacts {
    /// The MIME type of the content, as inspecting it found it.
    pub fn content_type(&self) -> &'static str {
        match self {
            FileFacts::Video(video) => match video.container {
                VideoContainer::Mp4 => "video/mp4",
                VideoContainer::Mov => "video/quicktime",
            },
            FileFacts::Image(image) => match image.format {
                ImageFormat::Jpeg => "image/jpeg",
                ImageFormat::Png => "image/png",
                ImageFormat::Webp => "image/webp",
            },
        }
    }
}

/// A media item on one selected platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlatformTarget {
    /// Where it stands there: derived from its posts (see [`PlatformTarget::settle`]).
    pub status: PlatformStatus,
    /// The accounts it goes to (`channelId` for YouTube, `accountId` elsewhere).
    pub accounts: Vec<String>,
    /// The platform's settings given with the upload (the nested keys of the spec).
    pub settings: Map<String, Value>,
    /// The platform's id of the post, once published.
    pub remote_id: Option<String>,
    /// Its public address, once published.
    pub url: Option<String>,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// One post per account, by account.
    #[serde(default)]
    pub posts: BTreeMap<String, Post>,
    /// The custom thumbnail its posts get (YouTube's, from the upload's `thumbnail` part).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thumbnail: Option<StoredFile>,
}

impl PlatformTarget {
    /// Derives the platform's status, id, URL and error from its posts: `cancelled` when all
    /// were cancelled; else `deleted` when all the others were deleted; else, of the others
    /// (a post being deleted, or deleted, counting as published), `failed` if any failed;
    /// `published` when all are; `manual` when all are published or manual and some manual;
    /// `processing` once any started; `pending` while any waits; else `idle`. The id and URL
    /// are the first published post's (not deleted); the error the first failed one's.
    pub fn settle(&mut self) {
        if self.posts.is_empty() {
            return;
        }
        let statuses: Vec<PlatformStatus> = self
            .posts
            .values()
            .map(|p| p.status)
            .filter(|status| *status != PlatformStatus::Cancelled)
            .collect();
        if statuses.is_empty() || statuses.iter().all(|s| *s == PlatformStatus::Deleted) {
            self.status = if statuses.is_empty() {
                PlatformStatus::Cancelled
            } else {
                PlatformStatus::Deleted
            };
            self.remote_id = None;
            self.url = None;
            self.error = None;
            return;
        }
        let statuses: Vec<PlatformStatus> = statuses
            .into_iter()
            .map(|status| match status {
                PlatformStatus::Deleting | PlatformStatus::Deleted => PlatformStatus::Published,
                other => other,
            })
            .collect();
        let all = |wanted: &[PlatformStatus]| statuses.iter().all(|s| wanted.contains(s));
        let any = |wanted: PlatformStatus| statuses.contains(&wanted);
        self.status = if any(PlatformStatus::Failed) {
            PlatformStatus::Failed
        } else if all(&[PlatformStatus::Published]) {
            PlatformStatus::Published
        } else if all(&[PlatformStatus::Published, PlatformStatus::Manual]) {
            PlatformStatus::Manual
        } else if any(PlatformStatus::Processing)
            || any(PlatformStatus::Published)
            || any(PlatformStatus::Manual)
        {
            PlatformStatus::Processing
        } else if any(PlatformStatus::Pending) {
            PlatformStatus::Pending
        } else {
            PlatformStatus::Idle
        };
        let published = self
            .posts
            .values()
            .find(|p| p.remote_id.is_some() && p.status != PlatformStatus::Deleted);
        self.remote_id = published.and_then(|p| p.remote_id.clone());
        self.url = published.and_then(|p| p.url.clone());
        self.error = self
            .posts
            .values()
            .find(|p| p.status == PlatformStatus::Failed)
            .or_else(|| self.posts.values().find(|p| p.error.is_some()))
            .and_then(|p| p.error.clone());
    }
}

/// A change of an item before publication (`PATCH /media/.../{id}`), checked: each field
/// given replaces the stored one (`Some(None)` clears a text or the schedule).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MediaEdit {
    /// The new internal title.
    pub title: Option<Option<String>>,
    /// The new internal description.
    pub description: Option<Option<String>>,
    /// The new `scheduledAt` (`Some(None)`: as soon as possible).
    pub scheduled_at: Option<Option<Timestamp>>,
    /// Each changed platform's settings, whole.
    pub settings: BTreeMap<Platform, Map<String, Value>>,
    /// The item's `updated_at` the edit was checked against: an item changed since (another
    /// edit, a worker) refuses it, so that it is never applied to what it was not checked
    /// with. `None` applies it to the item as it is.
    pub based_on: Option<Timestamp>,
}

/// The jobs an edit moves ([`MediaItem::edit`]): each with its post's platform, and when
/// they run now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rescheduled {
    /// The posts' jobs.
    pub jobs: Vec<(Platform, crate::ids::JobId)>,
    /// Their new run time.
    pub run_at: Timestamp,
}

/// An uploaded video or image and its publication plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaItem {
    /// `med_…`.
    pub id: MediaId,
    /// The owner.
    pub organization_id: OrganizationId,
    /// Video or image.
    pub kind: MediaKind,
    /// Internal title.
    pub title: Option<String>,
    /// Internal description (the default caption).
    pub description: Option<String>,
    /// The overall status.
    pub status: MediaStatus,
    /// When to publish; `None` for as soon as possible.
    pub scheduled_at: Option<Timestamp>,
    /// The file (a carousel's first image).
    pub file: StoredFile,
    /// A carousel's other images, in order after [`MediaItem::file`]; empty for a single
    /// file. An image upload with several `file` parts is one carousel post on each platform.
    pub carousel: Vec<StoredFile>,
    /// The selected platforms and their state, in the order of [`Platform::ALL`].
    pub targets: BTreeMap<Platform, PlatformTarget>,
    /// When it was uploaded.
    pub created_at: Timestamp,
    /// When anything about it last changed.
    pub updated_at: Timestamp,
}

impl MediaItem {
    /// Whether nothing more will happen to any of its posts (a draft's never start).
    pub fn is_settled(&self) -> bool {
        self.status != MediaStatus::Draft
            && self
                .targets
                .values()
                .flat_map(|t| t.posts.values())
                .all(Post::is_final)
    }

    /// The blobs the item names: its files', and its custom thumbnail's.
    pub fn blob_keys(&self) -> impl Iterator<Item = &str> {
        self.files().map(|file| file.key.as_str()).chain(
            self.targets
                .values()
                .filter_map(|t| t.thumbnail.as_ref())
                .map(|thumbnail| thumbnail.key.as_str()),
        )
    }

    /// What storing it adds to its organization's meters: one upload, and the bytes of its
    /// files and thumbnail.
    pub fn upload_usage(&self) -> crate::model::UsageCounters {
        let thumbnails = self.targets.values().filter_map(|t| t.thumbnail.as_ref());
        crate::model::UsageCounters {
            media_uploads: 1,
            media_bytes: self
                .files()
                .chain(thumbnails)
                .fold(0u64, |sum, file| sum.saturating_add(file.size)),
            ..Default::default()
        }
    }

    /// What a change of one post (from `before` to `after`) adds to the organization's
    /// meters: a post counts once when it reaches `published`, and once when it reaches
    /// `deleted`.
    pub fn post_usage(
        before: &MediaItem,
        after: &MediaItem,
        platform: Platform,
        account: &str,
    ) -> crate::model::UsageCounters {
        let (Some(old), Some(new)) = (
            before.post(platform, account),
            after.post(platform, account),
        ) else {
            return crate::model::UsageCounters::default();
        };
        let deleted =
            new.status == PlatformStatus::Deleted && old.status != PlatformStatus::Deleted;
        crate::model::UsageCounters {
            posts_published: u64::from(old.status.publishes(new.status)),
            posts_deleted: u64::from(deleted),
            ..Default::default()
        }
    }

    /// Its files in order: [`MediaItem::file`], then a carousel's other images.
    pub fn files(&self) -> impl Iterator<Item = &StoredFile> {
        std::iter::once(&self.file).chain(&self.carousel)
    }

    /// Whether it is a carousel (several images, one post).
    pub fn is_carousel(&self) -> bool {
        !self.carousel.is_empty()
    }

    /// The selected platforms, in the order of [`Platform::ALL`].
    pub fn platforms(&self) -> Vec<Platform> {
        self.targets.keys().copied().collect()
    }

    /// The post of `account` on `platform`, if the item has one.
    pub fn post(&self, platform: Platform, account: &str) -> Option<&Post> {
        self.targets.get(&platform)?.posts.get(account)
    }

    /// Replaces the post of `account` on `platform` (if the item has one) and derives the
    /// platform's and the item's status again, as of `now`; whether there was such a post.
    pub fn set_post(
        &mut self,
        platform: Platform,
        account: &str,
        post: Post,
        now: Timestamp,
    ) -> bool {
        let Some(slot) = self
            .targets
            .get_mut(&platform)
            .and_then(|t| t.posts.get_mut(account))
        else {
            return false;
        };
        if slot.status == PlatformStatus::Cancelled {
            // A cancel is the last word: a worker that was still on the post (it learns
            // of the cancel from this write's answer) changes nothing.
            return true;
        }
        let mut post = post;
        if matches!(
            slot.status,
            PlatformStatus::Deleting | PlatformStatus::Deleted
        ) && post.job_id != slot.job_id
        {
            // A worker of another job than the deletion's (publishing's, still posting the
            // first comment) writes the post as it read it before the deletion started: its
            // news is kept, and the deletion stands.
            post.status = slot.status;
            post.job_id = slot.job_id.clone();
            post.error = slot.error.clone();
        }
        let settled = |c: &Option<FollowUp>| {
            c.as_ref()
                .is_some_and(|c| c.status != FollowUpStatus::Sending)
        };
        // A follow-up's outcome only moves forward, whoever writes after.
        if settled(&slot.first_comment) && !settled(&post.first_comment) {
            post.first_comment = slot.first_comment.clone();
        }
        if settled(&slot.thumbnail) && !settled(&post.thumbnail) {
            post.thumbnail = slot.thumbnail.clone();
        }
        *slot = post;
        self.settle(now);
        self.updated_at = now;
        true
    }

    /// Changes the item before anything of it was sent (`PATCH /media/.../{id}`): what
    /// `edit` gives replaces what is stored, the status follows the new `scheduledAt`, and
    /// the jobs of the posts that run are named with their new run time. Refused, naming the
    /// platform, once any post started (its platform may hold a session made with the old
    /// texts) or is final.
    pub fn edit(&mut self, edit: &MediaEdit, now: Timestamp) -> Result<Rescheduled, String> {
        if edit.based_on.is_some_and(|seen| seen != self.updated_at) {
            return Err(
                "the item changed while this change was being checked; send it again".to_owned(),
            );
        }
        for (platform, target) in &self.targets {
            for (account, post) in &target.posts {
                let untouched = post.stage == PostStage::New
                    && matches!(
                        post.status,
                        PlatformStatus::Idle | PlatformStatus::Pending | PlatformStatus::Manual
                    );
                if !untouched {
                    return Err(format!(
                        "the post to {} account {account} is {} on {}; an item can be \
                         changed only before any of its posts starts (cancel it instead)",
                        platform.as_str(),
                        post.status.as_str(),
                        platform.label()
                    ));
                }
            }
        }
        if let Some(title) = &edit.title {
            self.title = title.clone();
        }
        if let Some(description) = &edit.description {
            self.description = description.clone();
        }
        if let Some(scheduled_at) = edit.scheduled_at {
            self.scheduled_at = scheduled_at;
        }
        for (platform, settings) in &edit.settings {
            if let Some(target) = self.targets.get_mut(platform) {
                target.settings = settings.clone();
            }
        }
        let run_at = self.scheduled_at.filter(|at| *at > now).unwrap_or(now);
        let mut jobs = Vec::new();
        if self.status != MediaStatus::Draft {
            self.status = MediaStatus::initial(false, self.scheduled_at, now);
            for (platform, target) in &mut self.targets {
                for post in target.posts.values_mut() {
                    if let Some(job) = &post.job_id {
                        post.status = if self.status == MediaStatus::Scheduled {
                            PlatformStatus::Idle
                        } else {
                            PlatformStatus::Pending
                        };
                        // What an earlier attempt waited for is the past now.
                        post.error = None;
                        jobs.push((*platform, job.clone()));
                    }
                }
            }
        }
        self.settle(now);
        self.updated_at = now;
        Ok(Rescheduled { jobs, run_at })
    }

    /// Whether the item may be deleted (`DELETE /media/.../{id}`): refused, naming the
    /// platform, while a post's irreversible call is under way (its outcome not yet known)
    /// or a post is being deleted from its platform; else the jobs of the posts not yet
    /// final, which the delete cancels.
    pub fn deletable(&self) -> Result<Vec<crate::ids::JobId>, String> {
        if let Some((platform, account)) = self.post_being_sent() {
            return Err(format!(
                "the post to {} account {account} is being created on {} right now; delete \
                 the item once it has settled",
                platform.as_str(),
                platform.label()
            ));
        }
        if let Some((platform, account, _)) = self
            .posts()
            .find(|(_, _, p)| p.status == PlatformStatus::Deleting)
        {
            return Err(format!(
                "the post to {} account {account} is being deleted from {} right now; delete \
                 the item once that has finished",
                platform.as_str(),
                platform.label()
            ));
        }
        Ok(self
            .posts()
            .filter(|(_, _, p)| !p.is_final())
            .filter_map(|(_, _, p)| p.job_id.clone())
            .collect())
    }

    /// Every post, with its platform and account.
    fn posts(&self) -> impl Iterator<Item = (Platform, &str, &Post)> {
        self.targets.iter().flat_map(|(platform, target)| {
            target
                .posts
                .iter()
                .map(move |(account, post)| (*platform, account.as_str(), post))
        })
    }

    /// The first post whose irreversible call was made and whose outcome is not yet known
    /// (neither final nor cancellable): its platform and account.
    fn post_being_sent(&self) -> Option<(Platform, &str)> {
        self.posts()
            .find(|(_, _, p)| !p.is_final() && !p.is_cancellable())
            .map(|(platform, account, _)| (platform, account))
    }

    /// Cancels every post not yet final (`POST .../{id}/cancel`), all or none: refused,
    /// naming the platform, when a post's irreversible call was already made, or when every
    /// post is already final. The jobs of the cancelled posts, to cancel in the engine.
    pub fn cancel(&mut self, now: Timestamp) -> Result<Vec<crate::ids::JobId>, String> {
        if let Some((platform, account)) = self.post_being_sent() {
            return Err(format!(
                "the post to {} account {account} was already sent to {}, which cannot be \
                 undone; nothing was cancelled (cancel again once it has settled, or delete \
                 it from {} after)",
                platform.as_str(),
                platform.label(),
                platform.label()
            ));
        }
        if !self.posts().any(|(_, _, p)| p.is_cancellable()) {
            let states: Vec<String> = self
                .targets
                .iter()
                .map(|(platform, t)| format!("{} is {}", platform.as_str(), t.status.as_str()))
                .collect();
            return Err(format!("nothing left to cancel: {}", states.join(", ")));
        }
        let mut jobs = Vec::new();
        for target in self.targets.values_mut() {
            for post in target.posts.values_mut().filter(|p| p.is_cancellable()) {
                post.cancel();
                jobs.extend(post.job_id.clone());
            }
        }
        self.settle(now);
        self.updated_at = now;
        Ok(jobs)
    }

    /// Starts deleting the published posts on `platform` (only `account`'s, when given) from
    /// the platform (`DELETE /media/.../{id}/posts/{platform}`), all or none: each becomes
    /// `deleting`, and the `media-delete-post` job that deletes it is returned, to store
    /// with the change. Posts already being deleted, or deleted, are left as they are (a
    /// second request starts nothing). Refused, naming the account, when a post is not
    /// published (one still to come can be cancelled instead).
    ///
    /// The caller checks first that the platform can delete posts
    /// ([`Platform::deletion_refused`]) and that the item has posts there.
    pub fn delete_posts(
        &mut self,
        platform: Platform,
        account: Option<&str>,
        now: Timestamp,
    ) -> Result<Vec<crate::model::JobRecord>, String> {
        let Some(target) = self.targets.get_mut(&platform) else {
            return Err(format!("the item has no posts on {}", platform.as_str()));
        };
        let chosen = |name: &str| account.is_none_or(|wanted| wanted == name);
        for (name, post) in target.posts.iter().filter(|(name, _)| chosen(name)) {
            let published = post.status == PlatformStatus::Published && post.remote_id.is_some();
            let deleting = matches!(
                post.status,
                PlatformStatus::Deleting | PlatformStatus::Deleted
            );
            if !published && !deleting {
                let instead = if post.is_cancellable() {
                    " (it can still be cancelled: POST .../cancel)"
                } else {
                    ""
                };
                return Err(format!(
                    "the post to {} account {name} is {}, not published: there is nothing on \
                     {} to delete{instead}",
                    platform.as_str(),
                    post.status.as_str(),
                    platform.label()
                ));
            }
        }
        let mut jobs = Vec::new();
        for (name, post) in target.posts.iter_mut().filter(|(name, _)| chosen(name)) {
            if post.status != PlatformStatus::Published {
                continue;
            }
            post.status = PlatformStatus::Deleting;
            post.error = None;
            let mut job = crate::model::JobRecord::new(
                self.organization_id.clone(),
                MEDIA_DELETE_POST,
                serde_json::json!({"mediaId": self.id, "platform": platform, "account": name}),
                None,
                now,
            );
            // Two spare attempts, as publishing has: a worker that dies during the last one
            // leaves the job to the lease rescue, whose attempt gives the deletion up.
            job.max_attempts = DELETE_ATTEMPTS + 2;
            post.job_id = Some(job.id.clone());
            jobs.push(job);
        }
        if !jobs.is_empty() {
            self.settle(now);
            self.updated_at = now;
        }
        Ok(jobs)
    }

    /// Derives each platform's status from its posts, and the overall status from the
    /// platforms' (docs/media.md): `completed` when it has no platform and is no draft
    /// (nothing is left to do); `cancelled` when every platform was cancelled (a draft
    /// too); else a draft stays `draft`; else, of the others, `failed` when any platform
    /// failed (the others keep their own status); `completed` when every platform is
    /// `published` or `manual` (or `deleted` since); `processing` once any platform started; otherwise
    /// `scheduled` while the time is in the future, else `pending`.
    pub fn settle(&mut self, now: Timestamp) {
        for target in self.targets.values_mut() {
            target.settle();
        }
        if self.targets.is_empty() {
            // Nothing to publish (an image uploaded without platforms): settled at once,
            // unless it is a draft.
            if self.status != MediaStatus::Draft {
                self.status = MediaStatus::Completed;
            }
            return;
        }
        if self
            .targets
            .values()
            .all(|t| t.status == PlatformStatus::Cancelled)
        {
            self.status = MediaStatus::Cancelled;
            return;
        }
        if self.status == MediaStatus::Draft {
            return;
        }
        // A platform whose posts were deleted after publication counts as published: the
        // item's publication completed.
        let statuses: Vec<PlatformStatus> = self
            .targets
            .values()
            .map(|t| t.status)
            .filter(|status| *status != PlatformStatus::Cancelled)
            .map(|status| match status {
                PlatformStatus::Deleted => PlatformStatus::Published,
                other => other,
            })
            .collect();
        self.status = if statuses.is_empty() {
            MediaStatus::Cancelled
        } else if statuses.contains(&PlatformStatus::Failed) {
            MediaStatus::Failed
        } else if statuses
            .iter()
            .all(|s| matches!(s, PlatformStatus::Published | PlatformStatus::Manual))
        {
            MediaStatus::Completed
        } else if statuses.iter().any(|s| {
            matches!(
                s,
                PlatformStatus::Processing | PlatformStatus::Published | PlatformStatus::Manual
            )
        }) {
            MediaStatus::Processing
        } else {
            MediaStatus::initial(false, self.scheduled_at, now)
        };
    }
}

/// A social account connected by the host, that media can be published to.
#[derive(Clone, PartialEq, Eq)]
pub struct Channel {
    /// `ch_…`.
    pub id: ChannelId,
    /// The owner.
    pub organization_id: OrganizationId,
    /// The platform.
    pub platform: Platform,
    /// The platform's id of the account (`channelId` for YouTube, the account id, URN or
    /// user id elsewhere).
    pub account_id: String,
    /// Its display name (YouTube's title, LinkedIn's name, a username elsewhere).
    pub name: String,
    /// Its picture, if any.
    pub thumbnail: Option<String>,
    /// The OAuth access token, sealed with the host's secret.
    pub sealed_access_token: String,
    /// The OAuth refresh token, sealed, if the platform issued one.
    pub sealed_refresh_token: Option<String>,
    /// When the access token expires, if known.
    pub expires_at: Option<Timestamp>,
    /// Why it is disconnected (its grant was revoked), until it is connected again.
    pub disconnected: Option<String>,
    /// The board its pins go on when an upload names none (Pinterest; the account's first
    /// board when it was connected by link).
    pub default_board: Option<String>,
    /// When it was connected.
    pub created_at: Timestamp,
    /// When it was last connected again or changed.
    pub updated_at: Timestamp,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("id", &self.id)
            .field("platform", &self.platform)
            .field("account_id", &self.account_id)
            .field("name", &self.name)
            .field("disconnected", &self.disconnected)
            .finish_non_exhaustive()
    }
}

/// A piece of a resumable upload: the body of one `PATCH` (or of the creation request),
/// stored as a blob of its own until the upload is used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UploadPart {
    /// Where its bytes start in the upload.
    pub offset: u64,
    /// How many bytes it holds.
    pub length: u64,
    /// Its blob.
    pub key: String,
}

/// A resumable upload (tus 1.0.0), whose id is the `fileId` the upload forms accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upload {
    /// `upl_…`.
    pub id: crate::ids::UploadId,
    /// The owner.
    pub organization_id: OrganizationId,
    /// The whole upload's size (`Upload-Length`).
    pub length: u64,
    /// Bytes received so far (`Upload-Offset`).
    pub offset: u64,
    /// `Upload-Metadata` as sent: keys and base64 values.
    pub metadata: Vec<(String, String)>,
    /// The pieces received, in order, each starting where the one before ends.
    pub parts: Vec<UploadPart>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it is purged if unused (`Upload-Expires`): 24 hours after creation.
    pub expires_at: Timestamp,
}

impl Upload {
    /// The decoded value of a metadata key (`filename`, ...), if it is UTF-8.
    pub fn metadata_value(&self, key: &str) -> Option<String> {
        use base64::Engine;
        let (_, value) = self.metadata.iter().find(|(k, _)| k == key)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(value)
            .ok()?;
        String::from_utf8(bytes).ok()
    }

    /// Whether every byte arrived.
    pub fn is_complete(&self) -> bool {
        self.offset == self.length
    }
}

/// The associated data that binds a channel's sealed tokens to it.
pub(crate) fn channel_owner(
    organization_id: &crate::ids::OrganizationId,
    platform: Platform,
    account_id: &str,
) -> String {
    format!("{organization_id}/{}/{account_id}", platform.as_str())
}

/// The container of an accepted video upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum VideoContainer {
    /// An MP4 file (ISO base media, `.mp4`).
    Mp4,
    /// A QuickTime movie (`.mov`).
    Mov,
}

/// The format of an accepted image upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ImageFormat {
    /// A JPEG image (`.jpg`, `.jpeg`).
    Jpeg,
    /// A PNG image (`.png`).
    Png,
    /// A WebP image (`.webp`).
    Webp,
}

/// What the content of a video upload says about itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct VideoFacts {
    /// The container, which matches the file's extension.
    pub container: VideoContainer,
    /// The duration in milliseconds: the movie header's, else the longest track's, else the
    /// fragmented movie's (`mehd`); 0 when the file states none.
    pub duration_ms: u64,
    /// The display width in pixels, after the video track's rotation.
    pub width: u32,
    /// The display height in pixels, after the video track's rotation.
    pub height: u32,
    /// The clockwise rotation of the video track: 0, 90, 180 or 270.
    pub rotation: u16,
    /// The sample entry code of the video track, e.g. `avc1`, `hvc1`, `mp4v`, `apcn`.
    pub video_codec: String,
    /// The sample entry code of the first audio track, e.g. `mp4a`; `None` without audio.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub audio_codec: Option<String>,
    /// The video track's average frame rate in thousandths of a frame per second (29.97 fps
    /// is 29,970): its sample count over its media duration. 0 when the file does not say: a
    /// fragmented MP4 keeps its samples in fragments, which are not read, and items stored
    /// before this was read have none. Serialized as `frameRate`, in frames per second
    /// (`29.97`), or `null` when unknown; see [`VideoFacts::frame_rate`].
    #[serde(rename = "frameRate", default, with = "frame_rate_json")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<f64>, required = true))]
    pub frame_rate_millis: u32,
}

impl VideoFacts {
    /// The average frame rate in frames per second, when the file states it.
    pub fn frame_rate(&self) -> Option<f64> {
        (self.frame_rate_millis > 0).then(|| f64::from(self.frame_rate_millis) / 1000.0)
    }
}

/// `frameRate` in JSON: frames per second as a number, `null` (or absent) when unknown.
mod frame_rate_json {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(millis: &u32, serializer: S) -> Result<S::Ok, S::Error> {
        if *millis == 0 {
            serializer.serialize_none()
        } else {
            serializer.serialize_f64(f64::from(*millis) / 1000.0)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
        let fps = Option::<f64>::deserialize(deserializer)?;
        Ok(fps
            .filter(|fps| fps.is_finite() && *fps > 0.0)
            .map_or(0, |fps| {
                (fps * 1000.0).round().min(f64::from(u32::MAX)) as u32
            }))
    }
}

/// What the content of an image upload says about itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ImageFacts {
    /// The format, which matches the file's extension.
    pub format: ImageFormat,
    /// The width in pixels, as stored (EXIF orientation is not applied).
    pub width: u32,
    /// The height in pixels, as stored (EXIF orientation is not applied).
    pub height: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(statuses: &[PlatformStatus]) -> PlatformTarget {
        let posts = statuses
            .iter()
            .enumerate()
            .map(|(i, status)| {
                let mut post = Post::new(*status);
                if matches!(
                    status,
                    PlatformStatus::Published | PlatformStatus::Deleting | PlatformStatus::Deleted
                ) {
                    post.remote_id = Some(format!("post-{i}"));
                    post.url = Some(format!("https://example.com/{i}"));
                }
                (format!("account-{i}"), post)
            })
            .collect();
        let mut target = PlatformTarget {
            status: PlatformStatus::Idle,
            accounts: Vec::new(),
            settings: Map::new(),
            remote_id: None,
            url: None,
            error: None,
            posts,
            thumbnail: None,
        };
        target.settle();
        target
    }

    #[test]
    fn deleted_posts_settle_their_platform_as_deleted_only_when_all_are() {
        use PlatformStatus::*;
        let all = target(&[Deleted, Deleted, Cancelled]);
        assert_eq!(all.status, Deleted);
        assert_eq!(
            all.remote_id, None,
            "a deleted post's id is not the platform's"
        );
        assert_eq!(all.url, None);
        // Being deleted, or deleted beside a live one, the platform is still published, and
        // its id is the live post's.
        let some = target(&[Deleted, Published]);
        assert_eq!(some.status, Published);
        assert_eq!(some.remote_id.as_deref(), Some("post-1"));
        assert_eq!(target(&[Deleting]).status, Published);
        assert_eq!(target(&[Deleted, Manual]).status, Manual);
        assert_eq!(target(&[Deleted, Failed]).status, Failed);
        assert_eq!(target(&[Cancelled]).status, Cancelled);
    }

    #[test]
    fn a_stale_publishing_write_does_not_undo_a_deletion() {
        use crate::ids::{JobId, MediaId, OrganizationId};
        let now = Timestamp::from_datetime(chrono::Utc::now());
        let mut published = Post::new(PlatformStatus::Published);
        published.remote_id = Some("vid1".into());
        published.job_id = Some(JobId::new());
        let mut target = target(&[]);
        target.accounts = vec!["UC1".into()];
        target.posts.insert("UC1".into(), published.clone());
        let mut item = MediaItem {
            id: MediaId::new(),
            organization_id: OrganizationId::new(),
            kind: MediaKind::Video,
            title: None,
            description: None,
            status: MediaStatus::Completed,
            scheduled_at: None,
            file: StoredFile {
                key: "k".into(),
                name: "a.mp4".into(),
                size: 1,
                facts: FileFacts::Image(ImageFacts {
                    format: ImageFormat::Jpeg,
                    width: 1,
                    height: 1,
                }),
            },
            carousel: Vec::new(),
            targets: [(Platform::Youtube, target)].into(),
            created_at: now,
            updated_at: now,
        };
        item.settle(now);
        let jobs = item.delete_posts(Platform::Youtube, None, now).unwrap();
        let deleting = item.post(Platform::Youtube, "UC1").unwrap().clone();
        assert_eq!(deleting.status, PlatformStatus::Deleting);
        assert_eq!(deleting.job_id, Some(jobs[0].id.clone()));
        // Publishing's worker, still holding the post as published, stores its first comment.
        let mut stale = published.clone();
        stale.first_comment = Some(FollowUp::done(Some("c1".into())));
        item.set_post(Platform::Youtube, "UC1", stale, now);
        let kept = item.post(Platform::Youtube, "UC1").unwrap();
        assert_eq!(kept.status, PlatformStatus::Deleting);
        assert_eq!(kept.job_id, deleting.job_id);
        assert_eq!(kept.first_comment, Some(FollowUp::done(Some("c1".into()))));
        // The deletion's worker, which read the post before the comment was posted, keeps it.
        let mut deleted = deleting.clone();
        deleted.status = PlatformStatus::Deleted;
        item.set_post(Platform::Youtube, "UC1", deleted, now);
        let kept = item.post(Platform::Youtube, "UC1").unwrap();
        assert_eq!(kept.status, PlatformStatus::Deleted);
        assert_eq!(kept.first_comment, Some(FollowUp::done(Some("c1".into()))));
        // A deletion's own job may also give it up: published again. (A post published
        // anew, to delete again.)
        let post = item
            .targets
            .get_mut(&Platform::Youtube)
            .and_then(|t| t.posts.get_mut("UC1"))
            .unwrap();
        post.status = PlatformStatus::Published;
        let jobs = item.delete_posts(Platform::Youtube, None, now).unwrap();
        let mut given_up = item.post(Platform::Youtube, "UC1").unwrap().clone();
        assert_eq!(given_up.job_id, Some(jobs[0].id.clone()));
        given_up.status = PlatformStatus::Published;
        item.set_post(Platform::Youtube, "UC1", given_up, now);
        assert_eq!(
            item.post(Platform::Youtube, "UC1").unwrap().status,
            PlatformStatus::Published
        );
    }

    #[test]
    fn only_youtube_linkedin_and_pinterest_posts_can_be_deleted() {
        for platform in Platform::ALL {
            let refused = platform.deletion_refused();
            let can = matches!(
                platform,
                Platform::Youtube | Platform::Linkedin | Platform::Pinterest
            );
            assert_eq!(refused.is_none(), can, "{platform:?}");
            if let Some(rule) = refused {
                assert!(rule.contains(platform.label()), "{rule}");
            }
        }
    }
}
