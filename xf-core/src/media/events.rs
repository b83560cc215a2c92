//! The media API's events: what each says, and when a change makes one.
//!
//! The stores call [`post_events`] inside the transaction that updates a post and
//! [`channel_disconnected`] inside the one that marks a channel disconnected, and write what
//! they return to the outbox with the change: no change without its event, no event without
//! its change. The delivery's `data` is the event's snapshot, taken then.

use serde::Serialize;
use serde_json::Value;

use super::api::MediaItemView;
use crate::ids::{ChannelId, Id, OrganizationId};
use crate::model::media::{Channel, MediaItem, Platform, PlatformStatus, Post, PostFailure};
use crate::model::EventType;
use crate::time::Timestamp;

pub use crate::model::NewEvent;

/// `data` of `media.post.published`, `media.post.failed` and `media.post.deleted`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MediaPostEventData {
    /// The post that was published, failed or was deleted.
    pub post: PostOutcome,
    /// The item as `GET /media/{videos|images}/{id}` showed it right after the change.
    pub media: MediaItemView,
}

/// One post's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PostOutcome {
    /// The platform.
    pub platform: Platform,
    /// The account it went to (`channelId` for YouTube, `accountId` elsewhere).
    pub account_id: String,
    /// `published`, `failed` or `deleted`.
    pub status: PlatformStatus,
    /// The platform's id of the post (YouTube and TikTok video id, Instagram media id,
    /// LinkedIn URN, pin id); null unless published (or deleted: the id it had).
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub post_id: Option<String>,
    /// The post's public address; null unless published (or deleted: the address it had),
    /// and when the platform gives none.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub url: Option<String>,
    /// Why it failed, for people: the text the item's post shows as its `error`; null unless
    /// failed.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub error: Option<String>,
    /// Why it failed, for programs: who stopped it and their code; null unless failed.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub failure: Option<PostFailure>,
}

/// `data` of `media.completed` and `media.failed`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MediaEventData {
    /// The item as `GET /media/{videos|images}/{id}` showed it when its last post finished.
    pub media: MediaItemView,
}

/// `data` of `channel.disconnected`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChannelEventData {
    /// The channel.
    pub channel: DisconnectedChannel,
}

/// A channel whose grant was revoked.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DisconnectedChannel {
    /// `ch_…`, as `GET /channels` and the admin API show it.
    pub id: ChannelId,
    /// The platform.
    pub platform: Platform,
    /// The platform's id of the account (`channelId` for YouTube).
    pub account_id: String,
    /// Its display name.
    pub name: String,
    /// Why: the platform's answer to the token or its refresh.
    pub reason: String,
    /// What to do: connect it again with a connect link naming this channel. Its posts that
    /// had not finished failed with `channel_disconnected`; upload them anew once connected.
    pub reconnect: String,
}

/// The events of replacing `before`'s post of `account` on `platform` to make `after`:
/// `media.post.published`, `media.post.failed` or `media.post.deleted` when the post reached
/// that state now, then `media.completed` or `media.failed` when this was the item's last
/// unfinished post.
pub fn post_events(
    before: &MediaItem,
    after: &MediaItem,
    platform: Platform,
    account: &str,
) -> Vec<NewEvent> {
    let (Some(old), Some(new)) = (
        before.post(platform, account),
        after.post(platform, account),
    ) else {
        return Vec::new();
    };
    let mut events = Vec::new();
    let reached = |status| new.status == status && old.status != status;
    let post_event = if old.status.publishes(new.status) {
        Some(EventType::MediaPostPublished)
    } else if reached(PlatformStatus::Failed) {
        Some(EventType::MediaPostFailed)
    } else if reached(PlatformStatus::Deleted) {
        Some(EventType::MediaPostDeleted)
    } else {
        None
    };
    let item_event = item_event(before, after);
    if post_event.is_none() && item_event.is_none() {
        return events;
    }
    // The item as it is now, built once for every event of the change.
    let media = MediaItemView::from(after);
    if let Some(event_type) = post_event {
        let data = MediaPostEventData {
            post: outcome(platform, account, new),
            media: media.clone(),
        };
        events.push(new_event(after, event_type, &data));
    }
    if let Some(event_type) = item_event {
        events.push(new_event(after, event_type, &MediaEventData { media }));
    }
    events
}

/// The item's event when a change settled it: `media.failed` or `media.completed`; none for
/// an item whose every post was cancelled (the caller did that).
fn item_event(before: &MediaItem, after: &MediaItem) -> Option<EventType> {
    if !after.is_settled() || before.is_settled() {
        return None;
    }
    match after.status {
        crate::model::media::MediaStatus::Failed => Some(EventType::MediaFailed),
        crate::model::media::MediaStatus::Cancelled => None,
        _ => Some(EventType::MediaCompleted),
    }
}

/// The events of cancelling `before`'s unfinished posts to make `after`: the item's
/// `media.completed` or `media.failed` when the posts left (published or failed before the
/// cancel) settle it that way; nothing when every post was cancelled.
pub fn cancel_events(before: &MediaItem, after: &MediaItem) -> Vec<NewEvent> {
    item_event(before, after)
        .map(|event_type| {
            let media = MediaItemView::from(after);
            new_event(after, event_type, &MediaEventData { media })
        })
        .into_iter()
        .collect()
}

/// The event of marking `channel` disconnected for `reason` (the store writes it only when
/// the channel was connected until then).
pub fn channel_disconnected(channel: &Channel, reason: &str) -> NewEvent {
    let data = ChannelEventData {
        channel: DisconnectedChannel {
            id: channel.id.clone(),
            platform: channel.platform,
            account_id: channel.account_id.clone(),
            name: channel.name.clone(),
            reason: reason.to_owned(),
            reconnect: format!(
                "connect it again with a connect link for channelId {} (POST \
                 /admin/organizations/{}/connect-links, provider {}); until then its posts fail",
                channel.id,
                channel.organization_id,
                channel.platform.as_str()
            ),
        },
    };
    NewEvent {
        organization_id: channel.organization_id.clone(),
        event_type: EventType::ChannelDisconnected,
        data: serde_json::to_value(&data).expect("event data serializes"),
    }
}

fn outcome(platform: Platform, account: &str, post: &Post) -> PostOutcome {
    let published = matches!(
        post.status,
        PlatformStatus::Published | PlatformStatus::Deleted
    );
    let failure = (post.status == PlatformStatus::Failed).then(|| {
        post.failure
            .clone()
            .unwrap_or_else(|| PostFailure::xf("failed", post.error.clone().unwrap_or_default()))
    });
    PostOutcome {
        platform,
        account_id: account.to_owned(),
        status: post.status,
        post_id: post.remote_id.clone().filter(|_| published),
        url: post.url.clone().filter(|_| published),
        error: failure.as_ref().map(|failure| {
            post.error
                .clone()
                .unwrap_or_else(|| format!("{}: {}", failure.code, failure.message))
        }),
        failure,
    }
}

fn new_event(item: &MediaItem, event_type: EventType, data: &impl Serialize) -> NewEvent {
    NewEvent {
        organization_id: item.organization_id.clone(),
        event_type,
        data: serde_json::to_value(data).expect("event data serializes"),
    }
}

/// The `data` of a test delivery of media event `event_type` (`POST /webhooks/{id}/test`):
/// a YouTube video of no real organization's, in the state the event names. `None` for the
/// job events, whose test data is a job.
///
/// One piece: the sample `data` of every event type, one arm each, in `EventType::ALL`'s order.
pub fn sample_data(event_type: EventType, now: Timestamp) -> Option<Value> {
    use crate::model::media::{
        MediaKind, MediaStatus, PlatformTarget, StoredFile, VideoContainer, VideoFacts,
    };
    let owner = OrganizationId::derived(&[0u8; 16]);
    let failed = matches!(
        event_type,
        EventType::MediaPostFailed | EventType::MediaFailed
    );
    let mut post = Post::new(PlatformStatus::Published);
    post.stage = crate::model::media::PostStage::Done;
    if event_type == EventType::MediaPostDeleted {
        post.status = PlatformStatus::Deleted;
    }
    if failed {
        post.fail(PostFailure::platform(
            "invalidVideoMetadata",
            "test delivery: the video was rejected",
        ));
    } else {
        post.remote_id = Some("dQw4w9WgXcQ".to_owned());
        post.url = Some("https://www.youtube.com/watch?v=dQw4w9WgXcQ".to_owned());
    }
    let account = "UC_test_channel".to_owned();
    let mut target = PlatformTarget {
        status: PlatformStatus::Idle,
        accounts: vec![account.clone()],
        settings: serde_json::Map::new(),
        remote_id: None,
        url: None,
        error: None,
        posts: [(account.clone(), post.clone())].into(),
        thumbnail: None,
    };
    target.settle();
    let mut item = MediaItem {
        id: crate::ids::MediaId::derived(&[0u8; 16]),
        organization_id: owner.clone(),
        kind: MediaKind::Video,
        title: Some("Test video".to_owned()),
        description: None,
        status: MediaStatus::Processing,
        scheduled_at: None,
        file: StoredFile {
            key: String::new(),
            name: "test.mp4".to_owned(),
            size: 1_048_576,
            facts: crate::model::media::FileFacts::Video(VideoFacts {
                container: VideoContainer::Mp4,
                duration_ms: 15_000,
                width: 1080,
                height: 1920,
                rotation: 0,
                video_codec: "avc1".to_owned(),
                audio_codec: Some("mp4a".to_owned()),
                frame_rate_millis: 30_000,
            }),
        },
        carousel: Vec::new(),
        targets: [(Platform::Youtube, target)].into(),
        created_at: now.plus(chrono::Duration::minutes(-5)),
        updated_at: now,
    };
    item.settle(now);
    let data = match event_type {
        EventType::MediaPostPublished
        | EventType::MediaPostFailed
        | EventType::MediaPostDeleted => {
            serde_json::to_value(MediaPostEventData {
                post: outcome(Platform::Youtube, &account, &post),
                media: MediaItemView::from(&item),
            })
        }
        EventType::MediaCompleted | EventType::MediaFailed => {
            serde_json::to_value(MediaEventData {
                media: MediaItemView::from(&item),
            })
        }
        EventType::ChannelDisconnected => {
            let channel = Channel {
                id: ChannelId::derived(&[0u8; 16]),
                organization_id: owner,
                platform: Platform::Youtube,
                account_id: account,
                name: "Test channel".to_owned(),
                thumbnail: None,
                sealed_access_token: String::new(),
                sealed_refresh_token: None,
                expires_at: None,
                disconnected: None,
                default_board: None,
                created_at: now,
                updated_at: now,
            };
            return Some(
                channel_disconnected(
                    &channel,
                    "test delivery: invalid_grant: Token has been expired or revoked.",
                )
                .data,
            );
        }
        EventType::ScanScheduleFailed => {
            serde_json::to_value(crate::model::schedule::ScheduleEventData {
                schedule: crate::model::schedule::ScheduleFailure {
                    property_id: crate::ids::PropertyId::derived(&[0u8; 16]),
                    property_name: "example.com".to_owned(),
                    slot: now,
                    code: "quota_exceeded".to_owned(),
                    message: "The organization's scansPerMonth (100) is spent until the month ends; the next slot tries again.".to_owned(),
                },
            })
        }
        EventType::JobCompleted | EventType::JobFailed | EventType::JobCancelled => return None,
    };
    Some(data.expect("event data serializes"))
}
