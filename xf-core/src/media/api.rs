//! The media API's request and response shapes (the spec's field names).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ids::{ChannelId, MediaId};
use crate::model::media::{FileFacts, MediaItem, MediaKind, MediaStatus, Platform, PlatformStatus};
use crate::time::Timestamp;

/// A media item (`GET /media/videos/{id}`, `GET /media/images/{id}`, and list items).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct MediaItemView {
    /// `med_…`.
    pub id: MediaId,
    /// `video` or `image`.
    pub kind: MediaKind,
    /// Internal title.
    pub title: Option<String>,
    /// Internal description.
    pub description: Option<String>,
    /// The overall status.
    pub status: MediaStatus,
    /// The selected platforms.
    pub platforms: Vec<Platform>,
    /// When it is to be published; null for as soon as possible.
    pub scheduled_at: Option<Timestamp>,
    /// The file: its name, size and what inspecting it found.
    pub file: FileView,
    /// YouTube: `{status, videoId, url, accounts, settings, error, posts}`, where `posts`
    /// has one `{account, status, videoId, url, error}` per account; `{status: idle,
    /// videoId: null, url: null}` when YouTube is not selected. The other platforms' objects
    /// have the same shape with their own id field.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub youtube: Value,
    /// Instagram: `{status, mediaId, url, …}`.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub instagram: Value,
    /// TikTok: `{status, videoId, url, …}`.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub tiktok: Value,
    /// LinkedIn: `{status, urn, url, …}`.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub linkedin: Value,
    /// Pinterest: `{status, pinId, url, …}`.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub pinterest: Value,
    /// When it was uploaded.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// The file of a media item.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct FileView {
    /// The name it was uploaded with.
    pub name: String,
    /// Bytes.
    pub size: u64,
    /// Videos: `container`, `durationMs`, `width`, `height` (as displayed, after rotation),
    /// `rotation`, `videoCodec`, `audioCodec`, `frameRate` (frames per second, `null` when
    /// the file does not state its sample count); images: `format`, `width`, `height`.
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub facts: FileFacts,
}

/// The name of a platform's post id in the API.
fn remote_id_field(platform: Platform) -> &'static str {
    match platform {
        Platform::Youtube | Platform::Tiktok => "videoId",
        Platform::Instagram => "mediaId",
        Platform::Linkedin => "urn",
        Platform::Pinterest => "pinId",
    }
}

impl From<&MediaItem> for MediaItemView {
    fn from(item: &MediaItem) -> Self {
        let platform = |platform: Platform| -> Value {
            let mut view = Map::new();
            match item.targets.get(&platform) {
                Some(target) => {
                    view.insert("status".into(), serde_json::json!(target.status));
                    view.insert(
                        remote_id_field(platform).into(),
                        serde_json::json!(target.remote_id),
                    );
                    view.insert("url".into(), serde_json::json!(target.url));
                    view.insert("accounts".into(), serde_json::json!(target.accounts));
                    view.insert("settings".into(), Value::Object(target.settings.clone()));
                    view.insert("error".into(), serde_json::json!(target.error));
                    let posts: Vec<Value> = target
                        .posts
                        .iter()
                        .map(|(account, post)| {
                            let mut shown = Map::new();
                            shown.insert("account".into(), serde_json::json!(account));
                            shown.insert("status".into(), serde_json::json!(post.status));
                            shown.insert(
                                remote_id_field(platform).into(),
                                serde_json::json!(post.remote_id),
                            );
                            shown.insert("url".into(), serde_json::json!(post.url));
                            shown.insert("error".into(), serde_json::json!(post.error));
                            Value::Object(shown)
                        })
                        .collect();
                    view.insert("posts".into(), Value::Array(posts));
                }
                None => {
                    view.insert("status".into(), serde_json::json!(PlatformStatus::Idle));
                    view.insert(remote_id_field(platform).into(), Value::Null);
                    view.insert("url".into(), Value::Null);
                }
            }
            Value::Object(view)
        };
        MediaItemView {
            id: item.id.clone(),
            kind: item.kind,
            title: item.title.clone(),
            description: item.description.clone(),
            status: item.status,
            platforms: item.platforms(),
            scheduled_at: item.scheduled_at,
            file: FileView {
                name: item.file.name.clone(),
                size: item.file.size,
                facts: item.file.facts.clone(),
            },
            youtube: platform(Platform::Youtube),
            instagram: platform(Platform::Instagram),
            tiktok: platform(Platform::Tiktok),
            linkedin: platform(Platform::Linkedin),
            pinterest: platform(Platform::Pinterest),
            created_at: item.created_at,
            updated_at: item.updated_at,
        }
    }
}

/// One item of an upload result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct UploadedItem {
    /// `med_…`.
    pub id: MediaId,
    /// Internal title.
    pub title: Option<String>,
    /// The overall status.
    pub status: MediaStatus,
    /// The selected platforms.
    pub platforms: Vec<Platform>,
}

/// Query of `GET /media/videos` and `GET /media/images`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
pub struct MediaListQuery {
    /// Page number, from 1 (default 1).
    pub page: Option<String>,
    /// Items per page, 1 to 100 (default 10).
    pub limit: Option<String>,
    /// Only items with this overall status.
    pub status: Option<String>,
    /// Only items that target this platform.
    pub platform: Option<String>,
}

/// `pagination` of a media list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Pagination {
    /// Items matching in all.
    pub total: u64,
    /// This page, from 1.
    pub page: u64,
    /// Items per page.
    pub limit: u64,
    /// Pages in all (0 when nothing matches).
    pub pages: u64,
}

/// A page of media items.
#[derive(Debug, Clone, PartialEq)]
pub struct MediaList {
    /// Newest first.
    pub items: Vec<MediaItemView>,
    /// Where the page is.
    pub pagination: Pagination,
}

/// `GET /channels`: the connected channels by platform.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChannelsView {
    /// `{id, channelId, title, thumbnail}` each.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub youtube: Vec<Value>,
    /// `{id, accountId, username, thumbnail}` each.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub instagram: Vec<Value>,
    /// `{id, accountId, username, thumbnail}` each.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub tiktok: Vec<Value>,
    /// `{id, accountId, name, thumbnail}` each.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub linkedin: Vec<Value>,
    /// `{id, accountId, username, thumbnail}` each.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub pinterest: Vec<Value>,
}

/// Body of `POST /admin/organizations/{orgId}/channels`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewChannel {
    /// `youtube`, `instagram`, `tiktok`, `linkedin` or `pinterest`.
    pub platform: String,
    /// The platform's account id (`accountId`; `channelId` is accepted for YouTube).
    #[serde(default)]
    pub account_id: Option<String>,
    /// YouTube's channel id.
    #[serde(default)]
    pub channel_id: Option<String>,
    /// The display name (`title`, `username` or `name` are accepted too).
    #[serde(default)]
    pub display_name: Option<String>,
    /// YouTube's channel title.
    #[serde(default)]
    pub title: Option<String>,
    /// The account's username.
    #[serde(default)]
    pub username: Option<String>,
    /// LinkedIn's profile or page name.
    #[serde(default)]
    pub name: Option<String>,
    /// The account's picture.
    #[serde(default)]
    pub thumbnail: Option<String>,
    /// The OAuth access token.
    pub access_token: String,
    /// The OAuth refresh token.
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// When the access token expires (RFC 3339).
    #[serde(default)]
    pub expires_at: Option<String>,
}

/// A channel as the admin API shows it (never its tokens).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AdminChannelView {
    /// `ch_…`.
    pub id: ChannelId,
    /// The platform.
    pub platform: Platform,
    /// The platform's account id.
    pub account_id: String,
    /// The display name.
    pub name: String,
    /// The picture.
    pub thumbnail: Option<String>,
    /// When the access token expires.
    pub expires_at: Option<Timestamp>,
    /// The board its pins go on when an upload names none (Pinterest).
    pub default_board: Option<String>,
    /// When it was first connected.
    pub created_at: Timestamp,
    /// When it was last connected or changed.
    pub updated_at: Timestamp,
}

impl From<super::Channel> for AdminChannelView {
    fn from(channel: super::Channel) -> Self {
        AdminChannelView {
            id: channel.id,
            platform: channel.platform,
            account_id: channel.account_id,
            name: channel.name,
            thumbnail: channel.thumbnail,
            expires_at: channel.expires_at,
            default_board: channel.default_board,
            created_at: channel.created_at,
            updated_at: channel.updated_at,
        }
    }
}

/// Body of `PATCH /admin/channels/{channelId}`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChannelChanges {
    /// The board a Pinterest channel's pins go on when an upload names none; `null` clears it.
    pub default_board: Option<String>,
}
