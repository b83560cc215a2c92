//! Media items and connected channels.

use async_trait::async_trait;

use super::StoreResult;
use crate::ids::{ChannelId, JobId, MediaId, OrganizationId, UploadId};
use crate::model::media::{
    Channel, MediaEdit, MediaItem, MediaKind, MediaStatus, Platform, Post, Upload, UploadPart,
};
use crate::model::JobRecord;
use crate::time::Timestamp;

/// What [`MediaStore::append_upload_part`] did.
///
/// Not `#[non_exhaustive]`: every store (or edge) that is given one matches on it, and a
/// variant added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Appended {
    /// The part was added; the upload as it is now.
    Added(Upload),
    /// The upload's offset is not the part's: another request got there first. Its offset.
    OffsetMoved(u64),
    /// No such upload (or it expired).
    Missing,
}

/// What [`MediaStore::cancel_media`] did.
///
/// Not `#[non_exhaustive]`: every store (or edge) that is given one matches on it, and a
/// variant added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MediaCancel {
    /// The posts were cancelled: the item as it is now, and the jobs of the cancelled posts.
    Cancelled(Box<MediaItem>, Vec<JobId>),
    /// Nothing was cancelled, for this reason ([`MediaItem::cancel`]'s).
    Refused(String),
    /// No such item.
    Missing,
}

/// What [`MediaStore::delete_media`] did.
///
/// Not `#[non_exhaustive]`: every store (or edge) that is given one matches on it, and a
/// variant added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MediaDelete {
    /// Deleted: the item as it was, and the jobs of its posts that were not final.
    Deleted(Box<MediaItem>, Vec<JobId>),
    /// Nothing was deleted, for this reason.
    Refused(String),
    /// No such item.
    Missing,
}

/// What [`MediaStore::delete_posts`] did.
///
/// Not `#[non_exhaustive]`: every store (or edge) that is given one matches on it, and a
/// variant added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostsDelete {
    /// The item as it is now: the posts asked for are `deleting` (their jobs stored) or were
    /// already `deleting` or `deleted`.
    Started(Box<MediaItem>),
    /// Nothing was started, for this reason ([`MediaItem::delete_posts`]'s).
    Refused(String),
    /// No such item.
    Missing,
}

/// What [`MediaStore::edit_media`] did.
///
/// Not `#[non_exhaustive]`: every store (or edge) that is given one matches on it, and a
/// variant added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MediaEdited {
    /// The item as it is now.
    Edited(Box<MediaItem>),
    /// Nothing was changed, for this reason.
    Refused(String),
    /// No such item.
    Missing,
}

/// Why an edit is refused when the job of a post on `platform` is no longer pending.
pub fn edit_refused_running(platform: Platform) -> String {
    format!(
        "the post to {} is being published now; an item can be changed only before any of \
         its posts starts (cancel it instead)",
        platform.as_str()
    )
}

/// Filters of `GET /media/videos` and `GET /media/images`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MediaFilter {
    /// Videos or images.
    pub kind: MediaKind,
    /// Only items with this overall status.
    pub status: Option<MediaStatus>,
    /// Only items that target this platform.
    pub platform: Option<Platform>,
}

/// Media items and channels.
#[async_trait]
pub trait MediaStore: Send + Sync {
    /// Stores a new media item and the pending jobs that publish its posts, all or nothing;
    /// [`StoreError::Duplicate`](crate::StoreError::Duplicate) when the id is taken. Idle
    /// workers are woken. A job that is not pending is refused
    /// ([`check_new_job`](super::check_new_job)).
    async fn insert_media(&self, item: &MediaItem, jobs: &[JobRecord]) -> StoreResult<()>;

    /// Replaces the post of `account` on `platform` of item `id` and derives the item's
    /// statuses again ([`MediaItem::set_post`]), and writes the events of the change
    /// ([`post_events`](crate::media::events::post_events) of the item before and after) to
    /// the outbox, atomically; the item as it is now, or `None` when there is no such item or
    /// post.
    async fn update_post(
        &self,
        id: &MediaId,
        platform: Platform,
        account: &str,
        post: &Post,
        now: Timestamp,
    ) -> StoreResult<Option<MediaItem>>;

    /// Cancels the item's unfinished posts ([`MediaItem::cancel`]) under the item's lock,
    /// so that no worker's write comes between the check and the cancel, and writes the
    /// events of the change ([`cancel_events`](crate::media::events::cancel_events)),
    /// atomically.
    async fn cancel_media(&self, id: &MediaId, now: Timestamp) -> StoreResult<MediaCancel>;

    /// Changes the item before anything of it was sent ([`MediaItem::edit`]) and moves its
    /// posts' jobs to the new run time, atomically, under the item's lock: refused (nothing
    /// changed) when the edit is, or when one of those jobs is no longer pending (a worker
    /// took it up), naming the platform. Idle workers are woken when the jobs run now.
    async fn edit_media(
        &self,
        id: &MediaId,
        edit: &MediaEdit,
        now: Timestamp,
    ) -> StoreResult<MediaEdited>;

    /// Deletes the item if [`MediaItem::deletable`], under its lock (no worker's write comes
    /// between the check and the delete): the item as it was and the jobs of its posts not yet
    /// final, which the caller cancels. Its file stays in the blob store for the caller (or
    /// the blob sweep) to delete.
    async fn delete_media(&self, id: &MediaId) -> StoreResult<MediaDelete>;

    /// Starts deleting the item's published posts on `platform` (only `account`'s, when
    /// given) from the platform ([`MediaItem::delete_posts`]) under the item's lock, and
    /// stores the `media-delete-post` jobs that delete them with the change, atomically.
    /// Idle workers are woken. A job that is not pending is refused
    /// ([`check_new_job`](super::check_new_job)).
    async fn delete_posts(
        &self,
        id: &MediaId,
        platform: Platform,
        account: Option<&str>,
        now: Timestamp,
    ) -> StoreResult<PostsDelete>;

    /// The organization's channel of `account` on `platform`.
    async fn find_channel(
        &self,
        organization_id: &OrganizationId,
        platform: Platform,
        account: &str,
    ) -> StoreResult<Option<Channel>>;

    /// Stores a refreshed access token (sealed) and its expiry; the refresh token only when
    /// `sealed_refresh_token` is given (a refresh that returned none keeps the old one).
    async fn update_channel_tokens(
        &self,
        id: &ChannelId,
        sealed_access_token: &str,
        sealed_refresh_token: Option<&str>,
        expires_at: Option<Timestamp>,
        now: Timestamp,
    ) -> StoreResult<()>;

    /// Marks the channel disconnected (its grant was revoked), with the reason; connecting
    /// it again ([`MediaStore::put_channel`]) clears it. A channel that was connected until
    /// now gets its `channel.disconnected` event
    /// ([`channel_disconnected`](crate::media::events::channel_disconnected)) in the same
    /// transaction; one already disconnected keeps its first reason and gets no second event.
    async fn disconnect_channel(
        &self,
        id: &ChannelId,
        reason: &str,
        now: Timestamp,
    ) -> StoreResult<()>;

    /// The media item with this id (any organization: the caller checks ownership).
    async fn get_media(&self, id: &MediaId) -> StoreResult<Option<MediaItem>>;

    /// The organization's items matching `filter`, newest first (`createdAt`, then id,
    /// descending), skipping `offset` and taking at most `limit`; and how many match in all.
    async fn list_media(
        &self,
        organization_id: &OrganizationId,
        filter: &MediaFilter,
        offset: u64,
        limit: usize,
    ) -> StoreResult<(Vec<MediaItem>, u64)>;

    /// Connects a channel, or connects it again: a channel of the same organization,
    /// platform and account is updated (name, thumbnail, tokens, expiry, `updated_at`) and
    /// keeps its id and `created_at`, and is no longer disconnected. Returns the stored
    /// channel. `None` when the organization does not exist.
    async fn put_channel(&self, channel: &Channel) -> StoreResult<Option<Channel>>;

    /// Sets (or, with `None`, clears) the board a Pinterest channel's pins go on when an upload
    /// names none; the channel as it is now, or `None` when there is no Pinterest channel of
    /// this id.
    async fn set_channel_default_board(
        &self,
        id: &ChannelId,
        board: Option<&str>,
        now: Timestamp,
    ) -> StoreResult<Option<Channel>>;

    /// Stores a new resumable upload.
    async fn insert_upload(&self, upload: &Upload) -> StoreResult<()>;

    /// The upload with this id (any organization: the caller checks ownership), unless it
    /// expired at or before `now`.
    async fn get_upload(&self, id: &UploadId, now: Timestamp) -> StoreResult<Option<Upload>>;

    /// Adds `part` to the upload if its offset is still `part.offset` and it has not expired
    /// at `now`, and moves the offset past the part, atomically: of two requests at one
    /// offset, one wins.
    async fn append_upload_part(
        &self,
        id: &UploadId,
        part: &UploadPart,
        now: Timestamp,
    ) -> StoreResult<Appended>;

    /// Removes an upload (terminated, or used by a media item) and returns it, so that its
    /// parts' blobs can be deleted.
    async fn delete_upload(&self, id: &UploadId) -> StoreResult<Option<Upload>>;

    /// Removes up to `limit` uploads that expired at or before `now`, and returns them.
    async fn take_expired_uploads(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<Upload>>;

    /// Those of `keys` that a media item's file or a resumable upload's part names: the
    /// blobs the blob sweep must keep.
    async fn blob_keys_in_use(
        &self,
        keys: &[String],
    ) -> StoreResult<std::collections::HashSet<String>>;

    /// The organization's channels, by platform (in the order of [`Platform::ALL`]), then
    /// oldest first.
    async fn list_channels(&self, organization_id: &OrganizationId) -> StoreResult<Vec<Channel>>;
}
