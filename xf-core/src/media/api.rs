//! The media API's request and response shapes (the spec's field names).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ids::{ChannelId, MediaId};
use crate::model::media::{
    FileFacts, ImageFacts, MediaItem, MediaKind, MediaStatus, Platform, PlatformStatus, StoredFile,
    VideoFacts,
};
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
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub title: Option<String>,
    /// Internal description.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub description: Option<String>,
    /// The overall status.
    pub status: MediaStatus,
    /// The selected platforms.
    pub platforms: Vec<Platform>,
    /// When it is to be published; null for as soon as possible.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub scheduled_at: Option<Timestamp>,
    /// The file: its name, size and what inspecting it found (a carousel's first image).
    pub file: FileView,
    /// A carousel's images in order, `file` the first, when the upload had several `file`
    /// parts (one post of them all on each platform); absent for a single file.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(required = false, min_items = 2))]
    pub carousel: Vec<ImageFileView>,
    /// YouTube's custom thumbnail, when the upload had one (its `thumbnail` part).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub thumbnail: Option<ImageFileView>,
    /// YouTube's state (`{status: idle, videoId: null, url: null}` when not selected).
    pub youtube: YoutubeState,
    /// Instagram's state.
    pub instagram: InstagramState,
    /// TikTok's state.
    pub tiktok: TiktokState,
    /// LinkedIn's state.
    pub linkedin: LinkedinState,
    /// Pinterest's state.
    pub pinterest: PinterestState,
    /// When it was uploaded.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// The per-platform state of a media item (`youtube`, `instagram`, …) and its posts: one
/// pair of types per platform, as each names the platform's id of a post differently.
macro_rules! platform_state {
    ($state:ident, $post:ident, $platform:expr, $id:tt, $settings:tt) => {
        /// A media item on one platform: its status, the platform's id and the address of
        /// the first published post, and, when the platform is selected, its accounts,
        /// settings, error and posts.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(rename_all = "camelCase")]
        pub struct $state {
            /// Derived from the posts; `idle` when the platform is not selected.
            pub status: PlatformStatus,
            /// The platform's id of the first published post.
            #[serde(rename = $id)]
            #[cfg_attr(feature = "openapi", schema(required = true))]
            pub remote_id: Option<String>,
            /// The first published post's public address.
            #[cfg_attr(feature = "openapi", schema(required = true))]
            pub url: Option<String>,
            /// The accounts it goes to; absent when the platform is not selected.
            #[serde(skip_serializing_if = "Option::is_none")]
            #[cfg_attr(feature = "openapi", schema(nullable = false))]
            pub accounts: Option<Vec<String>>,
            /// The settings given with the upload; absent when not selected.
            #[serde(skip_serializing_if = "Option::is_none")]
            #[cfg_attr(feature = "openapi", schema(schema_with = $state::settings_schema))]
            pub settings: Option<Map<String, Value>>,
            /// The first failed post's error, or what a post waits for; absent when not
            /// selected, null when there is none.
            #[serde(skip_serializing_if = "Option::is_none")]
            #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, nullable = true))]
            pub error: Option<Option<String>>,
            /// One post per account; absent when not selected.
            #[serde(skip_serializing_if = "Option::is_none")]
            #[cfg_attr(feature = "openapi", schema(nullable = false))]
            pub posts: Option<Vec<$post>>,
        }

        /// One post of a media item: an account of the platform and where its post stands.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(rename_all = "camelCase")]
        pub struct $post {
            /// The account.
            pub account: String,
            /// Where the post stands.
            pub status: PlatformStatus,
            /// The platform's id of the post, once published.
            #[serde(rename = $id)]
            #[cfg_attr(feature = "openapi", schema(required = true))]
            pub remote_id: Option<String>,
            /// Its public address, once published.
            #[cfg_attr(feature = "openapi", schema(required = true))]
            pub url: Option<String>,
            /// Why it failed, or what it waits for.
            #[cfg_attr(feature = "openapi", schema(required = true))]
            pub error: Option<String>,
            /// The first comment under it (`firstComment`), once xf started sending it.
            #[serde(skip_serializing_if = "Option::is_none")]
            #[cfg_attr(feature = "openapi", schema(nullable = false))]
            pub first_comment: Option<crate::model::media::FollowUp>,
            /// Its custom thumbnail (YouTube), once xf started setting it.
            #[serde(skip_serializing_if = "Option::is_none")]
            #[cfg_attr(feature = "openapi", schema(nullable = false))]
            pub thumbnail: Option<crate::model::media::FollowUp>,
        }

        impl $state {
            /// A reference to the component schema of the platform's settings; xf-tower adds
            /// the components, made from the settings tables
            /// ([`settings::json_schema`](super::settings::json_schema)).
            #[cfg(feature = "openapi")]
            fn settings_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::Ref::from_schema_name($settings).into()
            }

            fn of(item: &MediaItem) -> Self {
                match item.targets.get(&$platform) {
                    None => $state {
                        status: PlatformStatus::Idle,
                        remote_id: None,
                        url: None,
                        accounts: None,
                        settings: None,
                        error: None,
                        posts: None,
                    },
                    Some(target) => $state {
                        status: target.status,
                        remote_id: target.remote_id.clone(),
                        url: target.url.clone(),
                        accounts: Some(target.accounts.clone()),
                        settings: Some(target.settings.clone()),
                        error: Some(target.error.clone()),
                        posts: Some(
                            target
                                .posts
                                .iter()
                                .map(|(account, post)| $post {
                                    account: account.clone(),
                                    status: post.status,
                                    remote_id: post.remote_id.clone(),
                                    url: post.url.clone(),
                                    error: post.error.clone(),
                                    first_comment: post.first_comment.clone(),
                                    thumbnail: post.thumbnail.clone(),
                                })
                                .collect(),
                        ),
                    },
                }
            }
        }
    };
}

platform_state!(
    YoutubeState,
    YoutubePost,
    Platform::Youtube,
    "videoId",
    "YoutubeSettings"
);
platform_state!(
    InstagramState,
    InstagramPost,
    Platform::Instagram,
    "mediaId",
    "InstagramSettings"
);
platform_state!(
    TiktokState,
    TiktokPost,
    Platform::Tiktok,
    "videoId",
    "TiktokSettings"
);
platform_state!(
    LinkedinState,
    LinkedinPost,
    Platform::Linkedin,
    "urn",
    "LinkedinSettings"
);
platform_state!(
    PinterestState,
    PinterestPost,
    Platform::Pinterest,
    "pinId",
    "PinterestSettings"
);

/// The file of a media item: its name and size, and what inspecting it found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
#[non_exhaustive]
pub enum FileView {
    /// A video's file.
    Video(VideoFileView),
    /// An image's file.
    Image(ImageFileView),
}

/// A video's file: its container, duration, display size, rotation, codecs and frame rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct VideoFileView {
    /// The name it was uploaded with.
    pub name: String,
    /// Bytes.
    pub size: u64,
    /// What inspecting it found.
    #[serde(flatten)]
    pub facts: VideoFacts,
}

/// An image's file: its format and size.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ImageFileView {
    /// The name it was uploaded with.
    pub name: String,
    /// Bytes.
    pub size: u64,
    /// What inspecting it found.
    #[serde(flatten)]
    pub facts: ImageFacts,
}

impl ImageFileView {
    /// The view of a stored image (`None` for a video).
    fn of(file: &StoredFile) -> Option<Self> {
        match &file.facts {
            FileFacts::Image(facts) => Some(ImageFileView {
                name: file.name.clone(),
                size: file.size,
                facts: facts.clone(),
            }),
            FileFacts::Video(_) => None,
        }
    }
}

impl From<&MediaItem> for MediaItemView {
    fn from(item: &MediaItem) -> Self {
        let (name, size) = (item.file.name.clone(), item.file.size);
        let file = match &item.file.facts {
            FileFacts::Video(facts) => FileView::Video(VideoFileView {
                name,
                size,
                facts: facts.clone(),
            }),
            FileFacts::Image(facts) => FileView::Image(ImageFileView {
                name,
                size,
                facts: facts.clone(),
            }),
        };
        MediaItemView {
            id: item.id.clone(),
            kind: item.kind,
            title: item.title.clone(),
            description: item.description.clone(),
            status: item.status,
            platforms: item.platforms(),
            scheduled_at: item.scheduled_at,
            file,
            carousel: if item.is_carousel() {
                item.files().filter_map(ImageFileView::of).collect()
            } else {
                Vec::new()
            },
            thumbnail: item
                .targets
                .values()
                .find_map(|t| t.thumbnail.as_ref())
                .and_then(ImageFileView::of),
            youtube: YoutubeState::of(item),
            instagram: InstagramState::of(item),
            tiktok: TiktokState::of(item),
            linkedin: LinkedinState::of(item),
            pinterest: PinterestState::of(item),
            created_at: item.created_at,
            updated_at: item.updated_at,
        }
    }
}

/// This UTC month's media meters of the caller's organization (`GET /media/usage`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct MediaUsage {
    /// The month, `YYYY-MM` (UTC).
    pub period: String,
    /// The organization's plan.
    pub plan: String,
    /// Media items uploaded this month (a carousel counts once), counted as they are stored.
    pub uploads: u64,
    /// The bytes of their files (a carousel's images, a YouTube thumbnail).
    pub bytes: u64,
    /// Posts that reached `published` on their platform this month.
    pub posts_published: u64,
    /// Published posts deleted from their platform this month.
    pub posts_deleted: u64,
}

/// The answer of `DELETE /media/videos/{id}` and `DELETE /media/images/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeletedMedia {
    /// The deleted item's id.
    pub id: MediaId,
    /// Always true.
    pub deleted: bool,
    /// How many posts' publishing the delete stopped (posts waiting for their time or under
    /// way); posts already published stay on their platforms.
    pub cancelled_posts: usize,
}

/// One item of an upload result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct UploadedItem {
    /// `med_…`.
    pub id: MediaId,
    /// Internal title.
    #[cfg_attr(feature = "openapi", schema(required = true))]
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

/// Query of `DELETE /media/videos/{id}/posts/{platform}` and `DELETE
/// /media/images/{id}/posts/{platform}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
pub struct PostDeleteQuery {
    /// Only the post to this account (`channelId` for YouTube, `accountId` elsewhere); by
    /// default every post of the item on the platform.
    pub account: Option<String>,
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
    /// YouTube channels.
    pub youtube: Vec<YoutubeChannel>,
    /// Instagram accounts.
    pub instagram: Vec<AccountChannel>,
    /// TikTok accounts.
    pub tiktok: Vec<AccountChannel>,
    /// LinkedIn members and organizations.
    pub linkedin: Vec<LinkedinChannel>,
    /// Pinterest accounts.
    pub pinterest: Vec<AccountChannel>,
}

/// A connected YouTube channel.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct YoutubeChannel {
    /// `ch_…`.
    pub id: ChannelId,
    /// YouTube's channel id (what `selectedYoutubeChannels` names).
    pub channel_id: String,
    /// The channel's title.
    pub title: String,
    /// Its picture.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub thumbnail: Option<String>,
}

/// A connected Instagram, TikTok or Pinterest account.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AccountChannel {
    /// `ch_…`.
    pub id: ChannelId,
    /// The platform's account id (what `selected…Accounts` names).
    pub account_id: String,
    /// The account's username.
    pub username: String,
    /// Its picture.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub thumbnail: Option<String>,
}

/// A connected LinkedIn member or organization.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LinkedinChannel {
    /// `ch_…`.
    pub id: ChannelId,
    /// The member's or organization's URN (what `selectedLinkedinAccounts` names).
    pub account_id: String,
    /// The member's or organization's name.
    pub name: String,
    /// Its picture.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub thumbnail: Option<String>,
}

impl ChannelsView {
    /// The channels by platform, in the order given.
    pub fn of(channels: Vec<super::Channel>) -> Self {
        let mut view = ChannelsView::default();
        for channel in channels {
            let (id, account_id, name, thumbnail) = (
                channel.id,
                channel.account_id,
                channel.name,
                channel.thumbnail,
            );
            let account = || AccountChannel {
                id: id.clone(),
                account_id: account_id.clone(),
                username: name.clone(),
                thumbnail: thumbnail.clone(),
            };
            match channel.platform {
                Platform::Youtube => view.youtube.push(YoutubeChannel {
                    id,
                    channel_id: account_id,
                    title: name,
                    thumbnail,
                }),
                Platform::Linkedin => view.linkedin.push(LinkedinChannel {
                    id,
                    account_id,
                    name,
                    thumbnail,
                }),
                Platform::Instagram => view.instagram.push(account()),
                Platform::Tiktok => view.tiktok.push(account()),
                Platform::Pinterest => view.pinterest.push(account()),
            }
        }
        view
    }
}

/// Body of `POST /admin/organizations/{orgId}/channels`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewChannel {
    /// `youtube`, `instagram`, `tiktok`, `linkedin` or `pinterest`.
    #[cfg_attr(feature = "openapi", schema(value_type = Platform))]
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
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub thumbnail: Option<String>,
    /// When the access token expires.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub expires_at: Option<Timestamp>,
    /// The board its pins go on when an upload names none (Pinterest).
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub default_board: Option<String>,
    /// Why it is disconnected (its grant was revoked or its token refused), until it is
    /// connected again; `null` while it is connected.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub disconnected: Option<String>,
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
            disconnected: channel.disconnected,
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
    #[cfg_attr(feature = "openapi", schema(pattern = "^[!-~]{1,64}$"))]
    pub default_board: Option<String>,
}
