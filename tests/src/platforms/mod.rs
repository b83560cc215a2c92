//! A local stand-in of the social platforms' endpoints the publishing clients call, for
//! tests. It is a real HTTP server on a loopback port that checks each request against the
//! shapes the platforms document, answers with their documented shapes, and records what it
//! got, so tests can check what the clients sent.
//!
//! **YouTube** (under `/youtube`):
//! - `GET /authorize`: Google's consent screen (see [`crate::oauth`]): `client_id`,
//!   `redirect_uri`, `response_type=code`, `scope` with `youtube.upload` and
//!   `youtube.readonly` (space-separated), `access_type=offline`, `state`, PKCE `S256`.
//! - `POST /token`: Google's refresh-token grant (form `client_id`, `client_secret`,
//!   `refresh_token`, `grant_type=refresh_token`); `invalid_grant` for an unknown or revoked
//!   refresh token; and the authorization-code grant (`code`, `redirect_uri`,
//!   `code_verifier`), answering the consenting user's tokens.
//! - `GET /youtube/v3/channels?part=snippet&mine=true`: the token's channels,
//!   `{"items": [{"id", "snippet": {"title", "thumbnails"}}]}`.
//! - `POST /upload/youtube/v3/videos?uploadType=resumable&part=snippet,status`: a bearer
//!   token, JSON metadata (`snippet.title` of 1 to 100 characters, `status.privacyStatus`
//!   public, private or unlisted), `X-Upload-Content-Length` and a `video/*`
//!   `X-Upload-Content-Type`; answers `200` with the session in `Location`.
//! - `PUT` on the session: `Content-Range: bytes a-b/N` starting where the session stands,
//!   the body exactly that long, every chunk but the last a multiple of 256 KiB; or the
//!   status probe `Content-Range: bytes */N` with no body. Answers `308` with `Range:
//!   bytes=0-x` (none before the first byte), and `201` with the video resource when the
//!   last byte arrives (`200` with it to later probes).
//! - Errors in Google's shape `{"error": {"code", "message", "errors": [{"reason"}]}}`.
//!
//! **Instagram** (under `/graph/v21.0`):
//! - `POST /{ig-user-id}/media`: form `access_token`, `media_type=REELS` with `video_url`
//!   or `image_url`, `caption`; the stand-in fetches the URL (a `Range` request for the
//!   first kilobyte, then the whole) and checks the bytes are a video or a JPEG. Answers
//!   `{"id"}` of the container, `IN_PROGRESS` for two status reads, then `FINISHED` (or
//!   `ERROR` when the media could not be fetched).
//! - Carousels on the same route: an item is `image_url` with `is_carousel_item=true` (no
//!   caption), fetched as an image; the carousel is `media_type=CAROUSEL` with `children`,
//!   2 to 10 comma-separated item containers of the account that no other carousel holds,
//!   and an optional `caption`. It is `IN_PROGRESS` for two reads, then `FINISHED` (`ERROR`
//!   when an item could not be fetched); an item is not published on its own.
//! - `GET /{container-id}?fields=status_code`, `POST /{ig-user-id}/media_publish`
//!   (`creation_id`), `GET /{media-id}?fields=permalink`, `GET /{ig-user-id}/media`.
//! - An unknown token is `400` with `{"error": {"code": 190, "type": "OAuthException"}}`.
//!
//! **TikTok** (under `/tiktok`): a photo post (`POST /v2/post/publish/content/init/`,
//! `media_type=PHOTO`, `PULL_FROM_URL`) has 1 to 35 `photo_images` and a
//! `photo_cover_index` among them; each URL is fetched and must be a JPEG or WebP. Errors in
//! TikTok's shape `{"error": {"code", "message", "log_id"}}`.
//!
//! **LinkedIn** (under `/linkedin`): `POST /rest/posts` carries `content.media`, or
//! `content.multiImage.images`: 2 to 20 `{"id", "altText"?}`, each an image URN issued by
//! `/rest/images?action=initializeUpload` to the post's author and uploaded; the author's
//! posts (`GET /rest/posts?q=author`) show the content as sent. Errors in LinkedIn's shape
//! `{"status", "code", "message"}`.
//!
//! **Pinterest** (under `/pinterest`): `POST /v5/pins` takes a `media_source` of
//! `video_id`, `image_url` (a JPEG, fetched) or `multiple_image_urls`: 2 to 5 `items`
//! `{"url", "title"?, "description"?, "link"?}` and an optional `index` among them, each URL
//! fetched and a JPEG, PNG or WebP. Errors in Pinterest's shape `{"code", "message"}`.
//!
//! Posts of two images or more are recorded with their images' sizes
//! ([`PlatformStandIn::carousels`]).
//!
//! Failures are scripted per route ([`PlatformStandIn::fail_next`]), and a route can be held
//! until the test lets it go ([`PlatformStandIn::hold`]), before or after the stand-in acts
//! on the request.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::to_bytes;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::{header, HeaderMap, Method, StatusCode};
use serde_json::{json, Value};
use tokio::sync::Notify;
use xf_core::media::platforms::instagram::InstagramConfig;
use xf_core::media::platforms::youtube::{YoutubeConfig, CHUNK_UNIT};

use crate::google::ServerTask;

// Each platform's endpoints, which `handle` dispatches to.
mod instagram;
mod linkedin;
mod pinterest;
mod tiktok;
mod youtube;

use instagram::*;
use linkedin::*;
use pinterest::*;
use tiktok::*;
use youtube::*;

/// The OAuth client id the YouTube stand-in accepts.
pub const YOUTUBE_CLIENT_ID: &str = "xf-publisher.apps.googleusercontent.com";
/// The scope of YouTube uploads.
pub const YOUTUBE_UPLOAD_SCOPE: &str = "https://www.googleapis.com/auth/youtube.upload";
/// The scope of managing YouTube videos: reading the account (what `channels.list` with
/// `mine=true` needs, which `youtube.upload` alone does not allow) and `videos.delete`.
pub const YOUTUBE_FORCE_SSL_SCOPE: &str = "https://www.googleapis.com/auth/youtube.force-ssl";
/// The OAuth client secret the YouTube stand-in accepts.
pub const YOUTUBE_CLIENT_SECRET: &str = "GOCSPX-xf-publisher";
/// The Facebook app the Instagram stand-in accepts for connect links.
pub const INSTAGRAM_APP_ID: &str = "1234567890123456";
/// Its secret.
pub const INSTAGRAM_APP_SECRET: &str = "instagram-app-secret";
/// The TikTok app the stand-in accepts.
pub const TIKTOK_CLIENT_KEY: &str = "awxftestclientkey";
/// Its secret.
pub const TIKTOK_CLIENT_SECRET: &str = "tiktok-secret";
/// The LinkedIn app the stand-in accepts.
pub const LINKEDIN_CLIENT_ID: &str = "78xftestlinkedin";
/// Its secret.
pub const LINKEDIN_CLIENT_SECRET: &str = "linkedin-secret";
/// The Pinterest app the stand-in accepts.
pub const PINTEREST_CLIENT_ID: &str = "1500000";
/// Its secret.
pub const PINTEREST_CLIENT_SECRET: &str = "pinterest-secret";
/// LinkedIn's part size in upload instructions.
const LINKEDIN_PART: u64 = 4 * 1024 * 1024;
const MB: u64 = 1024 * 1024;

/// The largest request body read.
const BODY_LIMIT: usize = 64 << 20;

/// A route of the stand-in, for scripted failures and holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// Google's consent screen, for YouTube.
    YoutubeAuthorize,
    /// YouTube's token endpoint.
    YoutubeToken,
    /// `channels.list` of the Data API.
    YoutubeChannels,
    /// Opening a YouTube upload session.
    YoutubeSession,
    /// A chunk that does not finish a YouTube upload.
    YoutubeChunk,
    /// The chunk that finishes a YouTube upload.
    YoutubeLastChunk,
    /// Facebook Login's authorization page.
    InstagramAuthorize,
    /// Meta's token endpoint (the code, and the long-lived exchange).
    InstagramToken,
    /// `me/accounts`: the user's Pages and their Instagram accounts.
    InstagramPages,
    /// Creating an Instagram container.
    InstagramContainer,
    /// Reading a container's status.
    InstagramStatus,
    /// `media_publish`.
    InstagramPublish,
    /// TikTok's authorization page.
    TiktokAuthorize,
    /// TikTok's token endpoint.
    TiktokToken,
    /// TikTok's `user/info`.
    TiktokUserInfo,
    /// TikTok's `creator_info/query`.
    TiktokCreatorInfo,
    /// TikTok's init calls (video direct post, inbox, photo).
    TiktokInit,
    /// A TikTok chunk upload.
    TiktokChunk,
    /// TikTok's status fetch.
    TiktokStatus,
    /// LinkedIn's authorization page.
    LinkedinAuthorize,
    /// LinkedIn's token endpoint.
    LinkedinToken,
    /// LinkedIn's OpenID Connect `userinfo`, `organizationAcls` and `organizations/{id}`.
    LinkedinIdentity,
    /// LinkedIn's `initializeUpload` and `finalizeUpload`, and media reads.
    LinkedinMedia,
    /// A LinkedIn part upload.
    LinkedinPart,
    /// LinkedIn's `/rest/posts`.
    LinkedinPost,
    /// Pinterest's authorization page.
    PinterestAuthorize,
    /// Pinterest's `user_account` and `boards` (the list).
    PinterestUserAccount,
    /// Pinterest's token endpoint.
    PinterestToken,
    /// Pinterest's media registration and reads.
    PinterestMedia,
    /// Pinterest's upload form.
    PinterestUpload,
    /// Pinterest's pins and board reads.
    PinterestPin,
    /// YouTube's `videos.delete`.
    YoutubeDelete,
    /// LinkedIn's post deletion (`DELETE /rest/posts/{urn}`).
    LinkedinDelete,
    /// Pinterest's pin deletion (`DELETE /v5/pins/{pin_id}`).
    PinterestDelete,
    /// YouTube's `thumbnails.set`.
    YoutubeThumbnail,
    /// YouTube's `commentThreads.insert`, Instagram's `/{ig-media-id}/comments` and LinkedIn's
    /// `/rest/socialActions/{urn}/comments`.
    Comment,
}

/// A scripted failure.
#[derive(Debug, Clone)]
pub enum Failure {
    /// Answer this status and JSON body (with `Retry-After` seconds, if given) instead of
    /// acting on the request.
    Answer(u16, Value, Option<u64>),
    /// Act on the request, then answer only after this long (the client gives up first).
    ActThenStall(Duration),
}

/// A hold on a route: the next request there waits until [`Held::release`].
#[derive(Debug, Clone)]
pub struct Held {
    arrived: Arc<Notify>,
    release: Arc<Notify>,
    after_acting: bool,
}

impl Held {
    /// Waits until a request reached the hold.
    pub async fn arrived(&self) {
        self.arrived.notified().await;
    }

    /// Lets the held request go on.
    pub fn release(&self) {
        self.release.notify_one();
    }
}

/// One request as the stand-in got it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Its method.
    pub method: Method,
    /// Its path and query.
    pub uri: String,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body's length.
    pub body_len: usize,
    /// Its body, when it is not media bytes (JSON or a form).
    pub text: String,
}

impl Seen {
    /// A header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Debug)]
struct Session {
    size: u64,
    received: Vec<u8>,
    metadata: Value,
    video: Option<Value>,
}

#[derive(Debug)]
struct Container {
    account: String,
    caption: Option<String>,
    /// What was fetched of its media URL: its length, or why not. A carousel's: its items'
    /// lengths summed, or why one failed.
    fetched: Result<usize, String>,
    reads: u32,
    media_id: Option<String>,
    /// Whether it is a carousel item (`is_carousel_item=true`), published only through its
    /// carousel.
    carousel_item: bool,
    /// A carousel's item containers, in order; empty for any other container.
    children: Vec<String>,
}

#[derive(Debug, Default)]
struct StandInState {
    /// Access tokens accepted.
    access_tokens: HashSet<String>,
    /// Refresh tokens and the access token each refresh issues.
    refresh_tokens: HashMap<String, String>,
    failures: VecDeque<(Route, Failure)>,
    holds: HashMap<Route, Held>,
    seen: Vec<Seen>,
    sessions: HashMap<String, Session>,
    videos: Vec<Value>,
    containers: HashMap<String, Container>,
    /// Instagram media, oldest first: id, account, caption.
    media: Vec<(String, String, Option<String>)>,
    next_id: u64,
    /// TikTok publishes by publish id.
    tiktok: HashMap<String, TiktokPublish>,
    /// What `creator_info/query` answers (`data`), as set by the test.
    tiktok_creator: Value,
    /// The access tokens that asked `creator_info/query`: TikTok's guidelines require it
    /// before a direct post.
    tiktok_creator_asked: HashSet<String>,
    /// LinkedIn media by URN: parts (first, last, received), finalized, status reads, owner
    /// and bytes received.
    linkedin_media: HashMap<String, LinkedinMedia>,
    /// LinkedIn posts: URN, author, media URN (a multi-image post's first image), and the
    /// commentary as LinkedIn shows it.
    linkedin_posts: Vec<(String, String, String, String)>,
    /// The `content.multiImage.images` of LinkedIn's multi-image posts, as sent, by URN.
    linkedin_images: HashMap<String, Value>,
    /// Pinterest media by id: uploaded, status reads.
    pinterest_media: HashMap<String, (bool, u32)>,
    /// Pinterest pins, as answered.
    pins: Vec<Value>,
    /// Posts deleted, in order: platform and the post's id (video id, URN, pin id). A
    /// request for a post already deleted is not listed again.
    deleted: Vec<(&'static str, String)>,
    /// Comments made, in order: platform, the post's id, and the text as the platform shows
    /// it.
    comments: Vec<(&'static str, String, String)>,
    /// Custom thumbnails set, in order: the video's id, the content type and the bytes.
    thumbnails: Vec<(String, String, Vec<u8>)>,
    /// Posts of two images or more, in order: platform, the post's id as answered (the
    /// Instagram media id, the LinkedIn URN, the pin id, the TikTok publish id), and the
    /// images' sizes in bytes, in order.
    carousels: Vec<(&'static str, String, Vec<usize>)>,
    /// The accounts users consent as, by the access token the consent issues: the refresh
    /// token issued with it, and the accounts (id, name) the grant reaches.
    consenting: HashMap<String, Consenting>,
    /// Meta's short-lived user tokens, to the long-lived ones they are exchanged for.
    short_tokens: HashMap<String, String>,
}

/// What a consent grants: the refresh token issued with it, and the accounts (id, name).
type Consenting = (Option<String>, Vec<(String, String)>);

#[derive(Debug)]
struct TiktokPublish {
    size: u64,
    chunk: u64,
    count: u64,
    received: u64,
    inbox: bool,
    photo: bool,
    post_id: Option<String>,
}

#[derive(Debug)]
struct LinkedinMedia {
    parts: Vec<(u64, u64, bool)>,
    finalized: bool,
    reads: u32,
    /// The `owner` it was initialized for (a person or organization URN).
    owner: String,
    /// The bytes its parts received (an image's one `PUT`).
    received: usize,
}

#[derive(Debug)]
struct Inner {
    state: Mutex<StandInState>,
    base_url: String,
    client: reqwest::Client,
    /// Each platform's consent screen and its codes, by platform name.
    auth: HashMap<&'static str, crate::oauth::AuthorizationServer>,
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, StandInState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running stand-in of YouTube's and Instagram's endpoints. Clones share the server.
#[derive(Debug, Clone)]
pub struct PlatformStandIn {
    inner: Arc<Inner>,
    _server: Arc<ServerTask>,
}

impl PlatformStandIn {
    /// Starts the stand-in on a loopback port.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr: SocketAddr = listener.local_addr().expect("local address");
        let inner = Arc::new(Inner {
            state: Mutex::new(StandInState {
                tiktok_creator: creator_data(
                    &[
                        "PUBLIC_TO_EVERYONE",
                        "MUTUAL_FOLLOW_FRIENDS",
                        "FOLLOWER_OF_CREATOR",
                        "SELF_ONLY",
                    ],
                    600,
                ),
                ..StandInState::default()
            }),
            base_url: format!("http://{addr}"),
            client: reqwest::Client::new(),
            auth: ["youtube", "instagram", "tiktok", "linkedin", "pinterest"]
                .into_iter()
                .map(|platform| (platform, crate::oauth::AuthorizationServer::default()))
                .collect(),
        });
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&inner));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        PlatformStandIn {
            inner,
            _server: Arc::new(ServerTask(server)),
        }
    }

    /// The YouTube client's settings for this stand-in: 256 KiB chunks, 2 s time-outs.
    pub fn youtube_config(&self) -> YoutubeConfig {
        YoutubeConfig {
            token_url: format!("{}/youtube/token", self.inner.base_url),
            authorize_url: format!("{}/youtube/authorize", self.inner.base_url),
            upload_base_url: format!("{}/youtube", self.inner.base_url),
            chunk_size: CHUNK_UNIT,
            timeout: Duration::from_secs(2),
            ..YoutubeConfig::new(YOUTUBE_CLIENT_ID, YOUTUBE_CLIENT_SECRET)
        }
    }

    /// The Instagram client's settings for this stand-in: status reads 20 ms apart, 2 s
    /// time-outs.
    pub fn instagram_config(&self) -> InstagramConfig {
        InstagramConfig {
            graph_base_url: format!("{}/graph/v21.0", self.inner.base_url),
            app: Some(xf_core::media::platforms::OAuthApp::new(
                INSTAGRAM_APP_ID,
                INSTAGRAM_APP_SECRET,
            )),
            authorize_url: format!("{}/facebook/v21.0/dialog/oauth", self.inner.base_url),
            poll_interval: Duration::from_millis(20),
            timeout: Duration::from_secs(2),
        }
    }

    /// The next user at `platform`'s consent screen (`youtube`, `tiktok`, `linkedin`,
    /// `pinterest`) consents: the code is exchanged for `access_token` (and `refresh_token`),
    /// which reach `accounts` (id, name: YouTube channels, the TikTok user, the LinkedIn
    /// member's `sub` then administered organizations' numeric ids, the Pinterest user).
    pub fn consent(
        &self,
        platform: &str,
        access_token: &str,
        refresh_token: Option<&str>,
        accounts: &[(&str, &str)],
    ) {
        self.consenting(access_token, refresh_token, accounts);
        self.auth(platform).consent_as(access_token);
    }

    /// The next user at `platform`'s consent screen declines.
    pub fn declines(&self, platform: &str) {
        self.auth(platform).deny_next();
    }

    /// Every request `platform`'s consent screen got, decoded.
    pub fn authorization_requests(
        &self,
        platform: &str,
    ) -> Vec<std::collections::BTreeMap<String, String>> {
        self.auth(platform).requests()
    }

    /// `platform`'s authorization server.
    fn auth(&self, platform: &str) -> &crate::oauth::AuthorizationServer {
        &self.inner.auth[platform]
    }

    /// Remembers what a consent as `access_token` grants.
    fn consenting(
        &self,
        access_token: &str,
        refresh_token: Option<&str>,
        accounts: &[(&str, &str)],
    ) {
        self.inner.state().consenting.insert(
            access_token.to_owned(),
            (
                refresh_token.map(str::to_owned),
                accounts
                    .iter()
                    .map(|(id, name)| ((*id).to_owned(), (*name).to_owned()))
                    .collect(),
            ),
        );
    }

    /// Accepts `access_token`, and `refresh_token` (if given) to issue `refreshed`.
    pub fn grant(&self, access_token: &str, refresh: Option<(&str, &str)>) {
        let mut state = self.inner.state();
        state.access_tokens.insert(access_token.to_owned());
        if let Some((refresh_token, refreshed)) = refresh {
            state
                .refresh_tokens
                .insert(refresh_token.to_owned(), refreshed.to_owned());
        }
    }

    /// Stops accepting an access token (it expired).
    pub fn expire(&self, access_token: &str) {
        self.inner.state().access_tokens.remove(access_token);
    }

    /// Revokes a refresh token (the user took the grant back).
    pub fn revoke(&self, refresh_token: &str) {
        self.inner.state().refresh_tokens.remove(refresh_token);
    }

    /// The next request on `route` fails as `failure`.
    pub fn fail_next(&self, route: Route, failure: Failure) {
        self.inner.state().failures.push_back((route, failure));
    }

    /// Holds the next request on `route`, before the stand-in acts on it, or after (it
    /// acted, the answer waits).
    pub fn hold(&self, route: Route, after_acting: bool) -> Held {
        let held = Held {
            arrived: Arc::new(Notify::new()),
            release: Arc::new(Notify::new()),
            after_acting,
        };
        self.inner.state().holds.insert(route, held.clone());
        held
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.inner.state().seen.clone()
    }

    /// The YouTube videos made so far (the resources as answered).
    pub fn videos(&self) -> Vec<Value> {
        self.inner.state().videos.clone()
    }

    /// The Instagram media published so far: id and caption.
    pub fn instagram_media(&self) -> Vec<(String, Option<String>)> {
        self.inner
            .state()
            .media
            .iter()
            .map(|(id, _, caption)| (id.clone(), caption.clone()))
            .collect()
    }

    /// What TikTok's `creator_info/query` answers from now on: these privacy levels and this
    /// longest video (the default: all four levels, 600 s).
    pub fn tiktok_creator(&self, privacy_levels: &[&str], max_video_seconds: u64) {
        self.inner.state().tiktok_creator = creator_data(privacy_levels, max_video_seconds);
    }

    /// The TikTok posts made (published or sent to an inbox): their publish ids.
    pub fn tiktok_posts(&self) -> Vec<String> {
        let state = self.inner.state();
        let mut ids: Vec<String> = state
            .tiktok
            .iter()
            .filter(|(_, p)| p.received == p.size || p.photo)
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        ids
    }

    /// The LinkedIn posts made: URN and media URN.
    pub fn linkedin_posts(&self) -> Vec<(String, String)> {
        let state = self.inner.state();
        state
            .linkedin_posts
            .iter()
            .map(|(urn, _, media, _)| (urn.clone(), media.clone()))
            .collect()
    }

    /// The LinkedIn posts' commentary as LinkedIn shows it (read from the little text format).
    pub fn linkedin_commentary(&self) -> Vec<String> {
        let state = self.inner.state();
        state
            .linkedin_posts
            .iter()
            .map(|(_, _, _, text)| text.clone())
            .collect()
    }

    /// The Pinterest pins made, as answered.
    pub fn pins(&self) -> Vec<Value> {
        self.inner.state().pins.clone()
    }

    /// The custom thumbnails set, in order: the video's id, the content type and the bytes.
    pub fn thumbnails(&self) -> Vec<(String, String, Vec<u8>)> {
        self.inner.state().thumbnails.clone()
    }

    /// The comments made, in order: platform, the post's id and the text as shown.
    pub fn comments(&self) -> Vec<(&'static str, String, String)> {
        self.inner.state().comments.clone()
    }

    /// The posts deleted, in order: platform (`youtube`, `linkedin`, `pinterest`) and id.
    pub fn deleted(&self) -> Vec<(&'static str, String)> {
        self.inner.state().deleted.clone()
    }

    /// The carousels posted, in order: platform, the post's id, and its images' sizes in bytes, in order.
    pub fn carousels(&self) -> Vec<(&'static str, String, Vec<usize>)> {
        self.inner.state().carousels.clone()
    }

    /// The TikTok client's settings for this stand-in: 5 MB chunks, quick status reads.
    pub fn tiktok_config(&self) -> xf_core::media::platforms::tiktok::TiktokConfig {
        xf_core::media::platforms::tiktok::TiktokConfig {
            api_base_url: format!("{}/tiktok", self.inner.base_url),
            authorize_url: format!("{}/tiktok/v2/auth/authorize/", self.inner.base_url),
            chunk_size: 5 * 1024 * 1024,
            poll_interval: Duration::from_millis(20),
            timeout: Duration::from_secs(5),
            ..xf_core::media::platforms::tiktok::TiktokConfig::new(
                TIKTOK_CLIENT_KEY,
                TIKTOK_CLIENT_SECRET,
            )
        }
    }

    /// The LinkedIn client's settings for this stand-in.
    pub fn linkedin_config(&self) -> xf_core::media::platforms::linkedin::LinkedinConfig {
        xf_core::media::platforms::linkedin::LinkedinConfig {
            api_base_url: format!("{}/linkedin", self.inner.base_url),
            token_url: format!("{}/linkedin/oauth/v2/accessToken", self.inner.base_url),
            authorize_url: format!("{}/linkedin/oauth/v2/authorization", self.inner.base_url),
            connect_organizations: true,
            poll_interval: Duration::from_millis(20),
            timeout: Duration::from_secs(5),
            ..xf_core::media::platforms::linkedin::LinkedinConfig::new(
                LINKEDIN_CLIENT_ID,
                LINKEDIN_CLIENT_SECRET,
            )
        }
    }

    /// The Pinterest client's settings for this stand-in.
    pub fn pinterest_config(&self) -> xf_core::media::platforms::pinterest::PinterestConfig {
        xf_core::media::platforms::pinterest::PinterestConfig {
            api_base_url: format!("{}/pinterest", self.inner.base_url),
            authorize_url: format!("{}/pinterest/oauth/", self.inner.base_url),
            poll_interval: Duration::from_millis(20),
            timeout: Duration::from_secs(5),
            ..xf_core::media::platforms::pinterest::PinterestConfig::new(
                PINTEREST_CLIENT_ID,
                PINTEREST_CLIENT_SECRET,
            )
        }
    }

    /// What the stand-in fetched of each container's media URL: its length, or why not
    /// (carousel containers, which have no URL of their own, aside).
    pub fn fetched(&self) -> Vec<Result<usize, String>> {
        self.inner
            .state()
            .containers
            .values()
            .filter(|c| c.children.is_empty())
            .map(|c| c.fetched.clone())
            .collect()
    }
}

/// A Google API error.
fn google_error(status: u16, reason: &str, message: &str) -> Response {
    answer(
        status,
        json!({"error": {"code": status, "message": message,
            "errors": [{"reason": reason, "domain": "youtube.video", "message": message}]}}),
        None,
    )
}

/// A Graph API error.
fn graph_error(status: u16, code: i64, message: &str) -> Response {
    let kind = if code == 190 {
        "OAuthException"
    } else {
        "IGApiException"
    };
    answer(
        status,
        json!({"error": {"message": message, "type": kind, "code": code,
            "fbtrace_id": "AbCdEfGh"}}),
        None,
    )
}

fn answer(status: u16, body: Value, retry_after: Option<u64>) -> Response {
    let mut response = (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        [(header::CONTENT_TYPE, "application/json; charset=UTF-8")],
        body.to_string(),
    )
        .into_response();
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, seconds.into());
    }
    response
}

fn form(text: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(text.as_bytes())
        .into_owned()
        .collect()
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::to_owned)
}

async fn handle(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = to_bytes(body, BODY_LIMIT).await else {
        return google_error(413, "tooLarge", "body too large");
    };
    let uri = parts.uri.to_string();
    let path = parts.uri.path().to_owned();
    let query = form(parts.uri.query().unwrap_or(""));
    let text = if body.len() <= 64 << 10 && std::str::from_utf8(&body).is_ok() {
        String::from_utf8_lossy(&body).into_owned()
    } else {
        String::new()
    };
    inner.state().seen.push(Seen {
        method: parts.method.clone(),
        uri: uri.clone(),
        headers: parts.headers.clone(),
        body_len: body.len(),
        text: text.clone(),
    });
    let route = route_of(&parts.method, &path, &parts.headers, &inner);
    let Some(route) = route else {
        return answer(404, json!({"error": "not found"}), None);
    };
    let scripted = {
        let mut state = inner.state();
        let at = state.failures.iter().position(|(r, _)| *r == route);
        at.and_then(|i| state.failures.remove(i)).map(|(_, f)| f)
    };
    let stall = match scripted {
        Some(Failure::Answer(status, body, retry_after)) => {
            return answer(status, body, retry_after)
        }
        Some(Failure::ActThenStall(wait)) => Some(wait),
        None => None,
    };
    let held = inner.state().holds.remove(&route);
    if let Some(held) = held.as_ref().filter(|h| !h.after_acting) {
        held.arrived.notify_one();
        held.release.notified().await;
    }
    let response = match route {
        Route::YoutubeAuthorize => inner.auth["youtube"].authorize(
            parts.uri.query().unwrap_or_default(),
            &crate::oauth::Expect {
                client_param: "client_id",
                client_id: YOUTUBE_CLIENT_ID,
                scopes: &[YOUTUBE_UPLOAD_SCOPE, YOUTUBE_FORCE_SSL_SCOPE],
                separator: ' ',
                pkce: crate::oauth::Pkce::S256,
                fixed: &[("access_type", "offline")],
                denial: "access_denied",
            },
        ),
        Route::YoutubeToken => youtube_token(&inner, &text),
        Route::YoutubeChannels => youtube_channels(&inner, &parts.headers, &query),
        Route::YoutubeSession => youtube_session(&inner, &parts.headers, &query, &text),
        Route::YoutubeChunk | Route::YoutubeLastChunk => {
            youtube_chunk(&inner, &parts.headers, &query, &body)
        }
        Route::InstagramAuthorize => inner.auth["instagram"].authorize(
            parts.uri.query().unwrap_or_default(),
            &crate::oauth::Expect {
                client_param: "client_id",
                client_id: INSTAGRAM_APP_ID,
                scopes: &[
                    "instagram_basic",
                    "instagram_content_publish",
                    "instagram_manage_comments",
                    "pages_show_list",
                    "pages_read_engagement",
                ],
                separator: ',',
                pkce: crate::oauth::Pkce::Unsupported,
                fixed: &[],
                denial: "access_denied",
            },
        ),
        Route::InstagramToken => instagram_token(&inner, &query),
        Route::InstagramPages => instagram_pages(&inner, &query),
        Route::InstagramContainer => instagram_container(&inner, &path, &text).await,
        Route::InstagramStatus => instagram_get(&inner, &path, &query),
        Route::InstagramPublish => instagram_publish(&inner, &path, &text),
        Route::TiktokAuthorize | Route::LinkedinAuthorize | Route::PinterestAuthorize => {
            platform_authorize(&inner, route, parts.uri.query().unwrap_or_default())
        }
        Route::TiktokUserInfo | Route::LinkedinIdentity | Route::PinterestUserAccount => {
            identity(&inner, route, &path, &parts.headers, &query)
        }
        Route::TiktokToken | Route::LinkedinToken | Route::PinterestToken => {
            oauth_token(&inner, route, &parts.headers, &text)
        }
        Route::TiktokCreatorInfo => tiktok_creator_info(&inner, &parts.headers),
        Route::TiktokInit => tiktok_init(&inner, &path, &parts.headers, &text).await,
        Route::TiktokChunk => tiktok_chunk(&inner, &parts.headers, &query, &body),
        Route::TiktokStatus => tiktok_status(&inner, &parts.headers, &text),
        Route::LinkedinMedia => {
            linkedin_media(&inner, &parts.method, &path, &query, &parts.headers, &text)
        }
        Route::LinkedinPart => linkedin_part(&inner, &path, &parts.headers, &body),
        Route::LinkedinPost => linkedin_post(&inner, &parts.method, &parts.headers, &query, &text),
        Route::PinterestMedia => {
            pinterest_media(&inner, &parts.method, &path, &parts.headers, &text)
        }
        Route::PinterestUpload => pinterest_upload(&inner, &parts.headers, &body),
        Route::PinterestPin => {
            pinterest_pin(&inner, &parts.method, &path, &parts.headers, &text).await
        }
        Route::YoutubeDelete => youtube_delete(&inner, &parts.headers, &query, &body),
        Route::LinkedinDelete => linkedin_delete(&inner, &path, &parts.headers, &body),
        Route::PinterestDelete => pinterest_delete(&inner, &path, &parts.headers, &body),
        Route::Comment => comment(&inner, &path, &parts.headers, &query, &text),
        Route::YoutubeThumbnail => youtube_thumbnail(&inner, &parts.headers, &query, &body),
    };
    if let Some(held) = held.filter(|h| h.after_acting) {
        held.arrived.notify_one();
        held.release.notified().await;
    }
    if let Some(wait) = stall {
        tokio::time::sleep(wait).await;
    }
    response
}

/// Which route a request is on (the last chunk of a session is told from the others).
fn route_of(method: &Method, path: &str, headers: &HeaderMap, inner: &Inner) -> Option<Route> {
    if let Some(rest) = path.strip_prefix("/youtube") {
        return match (method.as_str(), rest) {
            ("GET", "/authorize") => Some(Route::YoutubeAuthorize),
            ("POST", "/token") => Some(Route::YoutubeToken),
            ("GET", "/youtube/v3/channels") => Some(Route::YoutubeChannels),
            ("DELETE", "/youtube/v3/videos") => Some(Route::YoutubeDelete),
            ("POST", "/youtube/v3/commentThreads") => Some(Route::Comment),
            ("POST", "/upload/youtube/v3/thumbnails/set") => Some(Route::YoutubeThumbnail),
            ("POST", "/upload/youtube/v3/videos") => Some(Route::YoutubeSession),
            ("PUT", "/upload/youtube/v3/videos") => {
                let range = headers
                    .get(header::CONTENT_RANGE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                let last = parse_content_range(range)
                    .and_then(|(span, total)| span.map(|(_, last)| last + 1 == total));
                let _ = inner;
                Some(if last == Some(true) {
                    Route::YoutubeLastChunk
                } else {
                    Route::YoutubeChunk
                })
            }
            _ => None,
        };
    }
    if let Some(rest) = path.strip_prefix("/tiktok") {
        return match (method.as_str(), rest) {
            ("GET", "/v2/auth/authorize/") => Some(Route::TiktokAuthorize),
            ("POST", "/v2/oauth/token/") => Some(Route::TiktokToken),
            ("GET", "/v2/user/info/") => Some(Route::TiktokUserInfo),
            ("POST", "/v2/post/publish/status/fetch/") => Some(Route::TiktokStatus),
            ("POST", "/v2/post/publish/creator_info/query/") => Some(Route::TiktokCreatorInfo),
            ("POST", init) if init.starts_with("/v2/post/publish/") => Some(Route::TiktokInit),
            ("PUT", "/upload/") => Some(Route::TiktokChunk),
            _ => None,
        };
    }
    if let Some(rest) = path.strip_prefix("/linkedin") {
        return match (method.as_str(), rest) {
            ("GET", "/oauth/v2/authorization") => Some(Route::LinkedinAuthorize),
            ("POST", "/oauth/v2/accessToken") => Some(Route::LinkedinToken),
            ("GET", "/v2/userinfo") | ("GET", "/rest/organizationAcls") => {
                Some(Route::LinkedinIdentity)
            }
            ("GET", org) if org.starts_with("/rest/organizations/") => {
                Some(Route::LinkedinIdentity)
            }
            ("PUT", part) if part.starts_with("/upload/") => Some(Route::LinkedinPart),
            ("DELETE", post) if post.starts_with("/rest/posts/") => Some(Route::LinkedinDelete),
            ("POST", comments)
                if comments.starts_with("/rest/socialActions/")
                    && comments.ends_with("/comments") =>
            {
                Some(Route::Comment)
            }
            (_, "/rest/posts") => Some(Route::LinkedinPost),
            (_, media)
                if media.starts_with("/rest/videos") || media.starts_with("/rest/images") =>
            {
                Some(Route::LinkedinMedia)
            }
            _ => None,
        };
    }
    if let Some(rest) = path.strip_prefix("/pinterest") {
        return match (method.as_str(), rest) {
            ("GET", "/oauth/") => Some(Route::PinterestAuthorize),
            ("GET", "/v5/user_account") | ("GET", "/v5/boards") => {
                Some(Route::PinterestUserAccount)
            }
            ("POST", "/v5/oauth/token") => Some(Route::PinterestToken),
            ("POST", "/s3") => Some(Route::PinterestUpload),
            ("DELETE", pin) if pin.starts_with("/v5/pins/") => Some(Route::PinterestDelete),
            (_, media) if media.starts_with("/v5/media") => Some(Route::PinterestMedia),
            (_, pins) if pins.starts_with("/v5/pins") || pins.starts_with("/v5/boards/") => {
                Some(Route::PinterestPin)
            }
            _ => None,
        };
    }
    if method == Method::GET && path == "/facebook/v21.0/dialog/oauth" {
        return Some(Route::InstagramAuthorize);
    }
    let rest = path.strip_prefix("/graph/v21.0/")?;
    let segments: Vec<&str> = rest.split('/').collect();
    match (method.as_str(), segments.as_slice()) {
        ("GET", ["oauth", "access_token"]) => Some(Route::InstagramToken),
        ("GET", ["me", "accounts"]) => Some(Route::InstagramPages),
        ("POST", [_, "media"]) => Some(Route::InstagramContainer),
        ("POST", [_, "media_publish"]) => Some(Route::InstagramPublish),
        ("POST", [_, "comments"]) => Some(Route::Comment),
        ("GET", [_]) | ("GET", [_, "media"]) => Some(Route::InstagramStatus),
        _ => None,
    }
}

/// A refresh-token grant of TikTok (`client_key`), LinkedIn (`client_id` in the form) or
/// Pinterest (HTTP Basic). TikTok and Pinterest rotate the refresh token.
fn oauth_token(inner: &Inner, route: Route, headers: &HeaderMap, text: &str) -> Response {
    let fields = form(text);
    let field = |name: &str| fields.get(name).map(String::as_str);
    let client_ok = match route {
        Route::TiktokToken => {
            field("client_key") == Some(TIKTOK_CLIENT_KEY)
                && field("client_secret") == Some(TIKTOK_CLIENT_SECRET)
        }
        Route::LinkedinToken => {
            field("client_id") == Some(LINKEDIN_CLIENT_ID)
                && field("client_secret") == Some(LINKEDIN_CLIENT_SECRET)
        }
        _ => {
            use base64::Engine;
            let expected = base64::engine::general_purpose::STANDARD
                .encode(format!("{PINTEREST_CLIENT_ID}:{PINTEREST_CLIENT_SECRET}"));
            headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                == Some(format!("Basic {expected}").as_str())
        }
    };
    if !client_ok {
        return answer(
            401,
            json!({"error": "invalid_client", "error_description": "Client authentication failed"}),
            None,
        );
    }
    if field("grant_type") == Some("authorization_code") {
        return code_grant(inner, route, &fields);
    }
    if field("grant_type") != Some("refresh_token") {
        return answer(
            400,
            json!({"error": "unsupported_grant_type", "error_description": "grant_type must be refresh_token"}),
            None,
        );
    }
    let mut state = inner.state();
    let Some(refresh) = field("refresh_token").map(str::to_owned) else {
        return answer(
            400,
            json!({"error": "invalid_request", "error_description": "refresh_token is missing"}),
            None,
        );
    };
    let Some(access) = state.refresh_tokens.get(&refresh).cloned() else {
        return answer(
            400,
            json!({"error": "invalid_grant", "error_description": "The refresh token is invalid or revoked"}),
            None,
        );
    };
    state.access_tokens.insert(access.clone());
    let mut body = json!({"access_token": access, "expires_in": 86400, "token_type": "Bearer"});
    if route != Route::LinkedinToken {
        state.next_id += 1;
        let rotated = format!("{refresh}.r{}", state.next_id);
        state.refresh_tokens.remove(&refresh);
        state.refresh_tokens.insert(rotated.clone(), access);
        body["refresh_token"] = json!(rotated);
        body["refresh_expires_in"] = json!(31_536_000);
    }
    answer(200, body, None)
}

/// The consent screens of TikTok (Login Kit for the web: `client_key`, comma-separated
/// scopes, no PKCE), LinkedIn (space-separated scopes, no PKCE for web apps) and Pinterest
/// (comma-separated scopes, no PKCE).
fn platform_authorize(inner: &Inner, route: Route, query: &str) -> Response {
    use crate::oauth::{Expect, Pkce};
    let (platform, expect) = match route {
        Route::TiktokAuthorize => (
            "tiktok",
            Expect {
                client_param: "client_key",
                client_id: TIKTOK_CLIENT_KEY,
                scopes: &[
                    "user.info.basic",
                    "user.info.profile",
                    "video.publish",
                    "video.upload",
                ],
                separator: ',',
                pkce: Pkce::Unsupported,
                fixed: &[],
                denial: "access_denied",
            },
        ),
        Route::LinkedinAuthorize => (
            "linkedin",
            Expect {
                client_param: "client_id",
                client_id: LINKEDIN_CLIENT_ID,
                scopes: &["openid", "profile", "w_member_social"],
                separator: ' ',
                pkce: Pkce::Unsupported,
                fixed: &[],
                denial: "user_cancelled_authorize",
            },
        ),
        _ => (
            "pinterest",
            Expect {
                client_param: "client_id",
                client_id: PINTEREST_CLIENT_ID,
                scopes: &[
                    "user_accounts:read",
                    "boards:read",
                    "boards:write",
                    "pins:read",
                    "pins:write",
                ],
                separator: ',',
                pkce: Pkce::Unsupported,
                fixed: &[],
                denial: "access_denied",
            },
        ),
    };
    inner.auth[platform].authorize(query, &expect)
}

/// The authorization-code grant of TikTok, LinkedIn and Pinterest (the client already
/// authenticated): the consenting user's tokens, in each platform's answer shape.
fn code_grant(inner: &Inner, route: Route, fields: &HashMap<String, String>) -> Response {
    let (platform, client_id) = match route {
        Route::TiktokToken => ("tiktok", TIKTOK_CLIENT_KEY),
        Route::LinkedinToken => ("linkedin", LINKEDIN_CLIENT_ID),
        _ => ("pinterest", PINTEREST_CLIENT_ID),
    };
    let fields: std::collections::BTreeMap<String, String> =
        fields.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let access = match inner.auth[platform].redeem(&fields, client_id) {
        Ok(access) => access,
        Err((error, description)) => {
            return answer(
                400,
                json!({"error": error, "error_description": description}),
                None,
            )
        }
    };
    let mut state = inner.state();
    let (refresh, accounts) = state.consenting.get(&access).cloned().unwrap_or_default();
    state.access_tokens.insert(access.clone());
    if let Some(refresh) = &refresh {
        state.refresh_tokens.insert(refresh.clone(), access.clone());
    }
    let mut body = json!({"access_token": access, "token_type": "Bearer"});
    match route {
        Route::TiktokToken => {
            body["expires_in"] = json!(86_400);
            body["open_id"] = json!(accounts.first().map(|(id, _)| id.clone()));
            body["scope"] = json!("user.info.basic,user.info.profile,video.publish,video.upload");
            body["refresh_token"] = json!(refresh);
            body["refresh_expires_in"] = json!(31_536_000);
        }
        Route::LinkedinToken => {
            body["expires_in"] = json!(5_184_000);
            body["scope"] = json!("openid,profile,w_member_social");
            if let Some(refresh) = refresh {
                body["refresh_token"] = json!(refresh);
                body["refresh_token_expires_in"] = json!(31_536_000);
            }
        }
        _ => {
            body["expires_in"] = json!(2_592_000);
            body["response_type"] = json!("authorization_code");
            body["scope"] =
                json!("user_accounts:read,boards:read,boards:write,pins:read,pins:write");
            body["refresh_token"] = json!(refresh);
            body["refresh_token_expires_in"] = json!(5_184_000);
        }
    }
    answer(200, body, None)
}

/// The identity endpoints: TikTok's `user/info`, LinkedIn's `userinfo`,
/// `organizationAcls` and `organizations/{id}`, Pinterest's `user_account`; each reads the
/// accounts the token's consent reached.
fn identity(
    inner: &Inner,
    route: Route,
    path: &str,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
) -> Response {
    let state = inner.state();
    let Some(token) = bearer(headers).filter(|t| state.access_tokens.contains(t)) else {
        return match route {
            Route::TiktokUserInfo => tiktok_error(
                401,
                "access_token_invalid",
                "The access token is invalid or not found in the request.",
            ),
            _ => answer(
                401,
                json!({"code": 2, "message": "Authentication failed."}),
                None,
            ),
        };
    };
    let accounts = state
        .consenting
        .get(&token)
        .map(|(_, accounts)| accounts.clone())
        .unwrap_or_default();
    match route {
        Route::TiktokUserInfo => {
            let fields = query.get("fields").cloned().unwrap_or_default();
            if !fields.split(',').any(|f| f == "open_id") {
                return tiktok_error(400, "invalid_params", "fields must name open_id");
            }
            let Some((open_id, username)) = accounts.first() else {
                return tiktok_error(
                    401,
                    "scope_not_authorized",
                    "user.info.basic was not granted",
                );
            };
            tiktok_ok(
                json!({"user": {"open_id": open_id, "union_id": format!("u-{open_id}"),
                "display_name": format!("{username} (display)"), "username": username,
                "avatar_url": format!("https://p16.example/{open_id}.jpeg")}}),
            )
        }
        Route::PinterestUserAccount if path.ends_with("/v5/boards") => match accounts.first() {
            Some((id, _)) => answer(
                200,
                json!({"items": [
                    {"id": format!("{id}-main"), "name": "Main", "privacy": "PUBLIC"},
                    {"id": format!("{id}-ideas"), "name": "Ideas", "privacy": "SECRET"},
                ], "bookmark": null}),
                None,
            ),
            None => answer(404, json!({"code": 3, "message": "User not found."}), None),
        },
        Route::PinterestUserAccount => match accounts.first() {
            Some((id, username)) => answer(
                200,
                json!({"id": id, "username": username, "account_type": "BUSINESS",
                    "profile_image": format!("https://i.pinimg.example/{id}.jpg"),
                    "website_url": "", "board_count": 1, "pin_count": 0}),
                None,
            ),
            None => answer(404, json!({"code": 3, "message": "User not found."}), None),
        },
        _ if path.ends_with("/v2/userinfo") => match accounts.first() {
            Some((sub, name)) => answer(
                200,
                json!({"sub": sub, "name": name, "given_name": name, "family_name": "",
                    "picture": format!("https://media.licdn.example/{sub}.jpg"), "locale": "en_US"}),
                None,
            ),
            None => answer(
                401,
                json!({"status": 401, "message": "Empty oauth2 access token"}),
                None,
            ),
        },
        _ => {
            let versioned = headers.get("linkedin-version").is_some()
                && headers
                    .get("x-restli-protocol-version")
                    .and_then(|v| v.to_str().ok())
                    == Some("2.0.0");
            if !versioned {
                return answer(
                    400,
                    json!({"status": 400, "message": "A version header is required"}),
                    None,
                );
            }
            let organizations = accounts.get(1..).unwrap_or_default();
            if let Some(id) = path.strip_prefix("/linkedin/rest/organizations/") {
                return match organizations.iter().find(|(org, _)| org == id) {
                    Some((id, name)) => answer(
                        200,
                        json!({"id": id.parse::<u64>().unwrap_or(0), "localizedName": name}),
                        None,
                    ),
                    None => answer(404, json!({"status": 404, "message": "Not found"}), None),
                };
            }
            if query.get("q").map(String::as_str) != Some("roleAssignee") {
                return answer(
                    400,
                    json!({"status": 400, "message": "q=roleAssignee is expected"}),
                    None,
                );
            }
            let member = accounts
                .first()
                .map(|(sub, _)| sub.clone())
                .unwrap_or_default();
            let elements: Vec<Value> = organizations
                .iter()
                .map(|(id, _)| {
                    json!({"organization": format!("urn:li:organization:{id}"), "role": "ADMINISTRATOR",
                        "roleAssignee": format!("urn:li:person:{member}"), "state": "APPROVED"})
                })
                .collect();
            answer(
                200,
                json!({"paging": {"count": 10, "start": 0, "total": elements.len()}, "elements": elements}),
                None,
            )
        }
    }
}

/// An image format, as told by a file's first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ImageFormat {
    /// JPEG (`FF D8 FF`).
    Jpeg,
    /// PNG (its eight-byte signature).
    Png,
    /// WebP (`RIFF`, a length, `WEBP`).
    Webp,
}

impl ImageFormat {
    /// The format `bytes` start with, if one of these.
    fn of(bytes: &[u8]) -> Option<ImageFormat> {
        if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(ImageFormat::Jpeg)
        } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(ImageFormat::Png)
        } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
            Some(ImageFormat::Webp)
        } else {
            None
        }
    }

    /// Its usual name.
    fn name(self) -> &'static str {
        match self {
            ImageFormat::Jpeg => "JPEG",
            ImageFormat::Png => "PNG",
            ImageFormat::Webp => "WebP",
        }
    }
}

/// Fetches an image URL: it must answer an image in one of `formats`; its length.
async fn fetch_image(
    client: &reqwest::Client,
    url: &str,
    formats: &[ImageFormat],
) -> Result<usize, String> {
    let reply = client.get(url).send().await.map_err(|e| e.to_string())?;
    if !reply.status().is_success() {
        return Err(format!("answered {}", reply.status()));
    }
    let bytes = reply.bytes().await.map_err(|e| e.to_string())?;
    if !ImageFormat::of(&bytes).is_some_and(|format| formats.contains(&format)) {
        let names: Vec<&str> = formats.iter().map(|format| format.name()).collect();
        return Err(format!("not a {}", names.join(" or ")));
    }
    Ok(bytes.len())
}

/// A comment under a post, as each platform documents creating one: YouTube's
/// `commentThreads.insert` (`part=snippet`, the video's id and `textOriginal`, answered with
/// the thread), Instagram's `POST /{ig-media-id}/comments` (`message`, answered `{id}`),
/// LinkedIn's `POST /rest/socialActions/{encoded urn}/comments` (`actor`, `object`,
/// `message.text` in the little format, answered `201` with the comment).
fn comment(
    inner: &Inner,
    path: &str,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    text: &str,
) -> Response {
    if path.starts_with("/youtube/") {
        let mut state = inner.state();
        if !bearer(headers).is_some_and(|t| state.access_tokens.contains(&t)) {
            return google_error(401, "authError", "Invalid Credentials");
        }
        let body: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let video = body["snippet"]["videoId"].as_str().unwrap_or("").to_owned();
        let said = body["snippet"]["topLevelComment"]["snippet"]["textOriginal"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        if query.get("part").map(String::as_str) != Some("snippet")
            || said.is_empty()
            || said.chars().count() > 10_000
        {
            return google_error(
                400,
                "invalidCommentMetadata",
                "part=snippet and a textOriginal of 1 to 10,000 characters are expected",
            );
        }
        if !state.videos.iter().any(|v| v["id"] == video.as_str()) {
            return google_error(404, "videoNotFound", "The video could not be found.");
        }
        state.next_id += 1;
        let id = format!("Ugz{:012}", state.next_id);
        state.comments.push(("youtube", video.clone(), said));
        return answer(
            200,
            json!({"kind": "youtube#commentThread", "id": id,
                "snippet": {"videoId": video, "topLevelComment": {"id": id}}}),
            None,
        );
    }
    if path.starts_with("/graph/") {
        let fields = form(text);
        let mut state = inner.state();
        if !fields
            .get("access_token")
            .is_some_and(|t| state.access_tokens.contains(t))
        {
            return graph_error(400, 190, "Error validating access token");
        }
        let media = path
            .trim_start_matches("/graph/v21.0/")
            .trim_end_matches("/comments")
            .to_owned();
        let said = fields.get("message").cloned().unwrap_or_default();
        if said.is_empty() || said.chars().count() > 2_200 {
            return graph_error(
                400,
                100,
                "(#100) message is required, at most 2,200 characters",
            );
        }
        if !state.media.iter().any(|(id, _, _)| *id == media) {
            return graph_error(400, 100, "(#100) the media does not exist");
        }
        state.next_id += 1;
        let id = format!("1795{:08}", state.next_id);
        state.comments.push(("instagram", media, said));
        return answer(200, json!({"id": id}), None);
    }
    if let Err(refused) = linkedin_headers_ok(inner, headers) {
        return *refused;
    }
    let encoded = path
        .trim_start_matches("/linkedin/rest/socialActions/")
        .trim_end_matches("/comments");
    let urn = decoded_segment(encoded);
    let body: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let little = body["message"]["text"].as_str().unwrap_or("");
    let mut state = inner.state();
    let author = state
        .linkedin_posts
        .iter()
        .find(|(u, _, _, _)| *u == urn)
        .map(|(_, author, _, _)| author.clone());
    let Some(author) = author else {
        return linkedin_error(404, "NOT_FOUND", "no such post");
    };
    if encoded.contains(':')
        || body["object"] != urn.as_str()
        || body["actor"] != author.as_str()
        || little.is_empty()
        || little.chars().count() > 1_250
    {
        return linkedin_error(
            422,
            "INVALID_COMMENT",
            "actor (the post's author here), object (the post) and message.text are required",
        );
    }
    state.next_id += 1;
    let id = format!("{:016}", state.next_id);
    state
        .comments
        .push(("linkedin", urn.clone(), little_shown(little)));
    let mut response = answer(
        201,
        json!({"id": id, "$URN": format!("urn:li:comment:({urn},{id})"), "actor": author,
            "object": urn, "message": {"text": little}}),
        None,
    );
    response
        .headers_mut()
        .insert("x-restli-id", id.parse().expect("a header value"));
    response
}
