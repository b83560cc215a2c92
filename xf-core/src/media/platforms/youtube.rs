//! YouTube through the YouTube Data API v3's resumable upload.
//!
//! - **start**: `POST {upload}/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status`
//!   with the video's metadata as JSON and `X-Upload-Content-Length` / `-Type`; the answer's
//!   `Location` is the upload session, stored at once. Then every chunk but the last is
//!   `PUT` to the session with `Content-Range: bytes a-b/N`, each a multiple of 256 KiB; each
//!   answer is `308 Resume Incomplete` whose `Range: bytes=0-b` says how much arrived. A
//!   restarted start asks the session where it stands (`PUT` with `Content-Range: bytes
//!   */N` and no body) and goes on from there. A session that is gone (`404`, `410`) is
//!   dropped and a new one is made on the next try.
//! - **poll**: nothing to wait for.
//! - **finalize**: asks where the session stands, then sends the rest; the answer of the
//!   last chunk (`200` or `201`) is the video resource, whose `id` is the `videoId`. This is
//!   the irreversible call: the video exists once the last byte arrives.
//! - **find**: asks the session: `200`/`201` carries the video; `308` means the upload is
//!   not complete (nothing was published, finalize again).
//! - **tokens**: Google's OAuth 2.0 refresh-token grant.

use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{by_status, json as parse, read, send, OAuthApp, DEFAULT_TIMEOUT};
use crate::connect::{oauth, Account, ConnectFailure, Grant, Provider};
use crate::media::inspect::RangeRead;
use crate::media::publish::{
    Outcome, PostContext, PublishError, Published, PublishedPost, Publisher, TokenGrant,
};
use crate::media::{FileFacts, Platform};
use crate::net::Answer;

/// Google's OAuth 2.0 token endpoint.
pub const TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
/// The base of the upload endpoint.
pub const UPLOAD_BASE_URL: &str = "https://www.googleapis.com";
/// Google's authorization endpoint.
pub const AUTHORIZE_URL: &str = oauth::GOOGLE_AUTHORIZE_URL;
/// What a connect link asks for: uploading videos, and managing them (`youtube.force-ssl`:
/// reading which channel the grant is, as `channels.list` does not accept `youtube.upload`
/// alone, and deleting a published video with `videos.delete`).
pub const CONNECT_SCOPES: &str =
    "https://www.googleapis.com/auth/youtube.upload https://www.googleapis.com/auth/youtube.force-ssl";
/// The granularity of resumable upload chunks.
pub const CHUNK_UNIT: u64 = 256 * 1024;

/// The host's OAuth client and where YouTube is.
#[derive(Debug, Clone)]
pub struct YoutubeConfig {
    /// The Google OAuth client that refreshes the channels' tokens.
    pub app: OAuthApp,
    /// The token endpoint (default [`TOKEN_URL`]).
    pub token_url: String,
    /// The authorization endpoint connect links send users to (default [`AUTHORIZE_URL`]).
    pub authorize_url: String,
    /// The base of the upload endpoint and of the Data API's `channels` (default
    /// [`UPLOAD_BASE_URL`]).
    pub upload_base_url: String,
    /// Bytes per chunk, rounded down to a multiple of 256 KiB (default 8 MiB).
    pub chunk_size: u64,
    /// Longest wait for one answer.
    pub timeout: Duration,
}

impl YoutubeConfig {
    /// YouTube's endpoints with this OAuth client.
    pub fn new(client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        YoutubeConfig {
            app: OAuthApp::new(client_id, client_secret),
            token_url: TOKEN_URL.to_owned(),
            authorize_url: AUTHORIZE_URL.to_owned(),
            upload_base_url: UPLOAD_BASE_URL.to_owned(),
            chunk_size: 32 * CHUNK_UNIT,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// The YouTube client.
#[derive(Debug, Clone)]
pub struct Youtube {
    config: YoutubeConfig,
    client: reqwest::Client,
}

impl Youtube {
    /// The client of `config`.
    pub fn new(config: YoutubeConfig) -> Self {
        let client = crate::net::client(config.timeout);
        Youtube { config, client }
    }

    fn chunk(&self) -> u64 {
        (self.config.chunk_size / CHUNK_UNIT).max(1) * CHUNK_UNIT
    }

    /// Asks the session how many bytes it has: `Ok(Err(video))` when the upload is
    /// complete, `Ok(Ok(offset))` otherwise.
    async fn probe(
        &self,
        session: &str,
        size: u64,
        token: &str,
    ) -> Result<Result<u64, Value>, PublishError> {
        let request = self
            .client
            .put(session)
            .bearer_auth(token)
            .header("content-range", format!("bytes */{size}"))
            .header("content-length", "0");
        let answer = send(request).await?;
        session_answer(&answer)
    }

    /// Sends bytes from `offset` until `until` (exclusive) or the upload's end, a chunk at
    /// a time; the server's offset after each chunk, or the video once the last byte is in.
    async fn upload(
        &self,
        post: &PostContext<'_>,
        session: &str,
        mut offset: u64,
        until: u64,
    ) -> Result<Result<u64, Value>, PublishError> {
        let size = post.file.len();
        while offset < until {
            let len = self.chunk().min(until - offset);
            let bytes = read(post.file, offset, len).await?;
            let last = offset + bytes.len() as u64 - 1;
            let request = self
                .client
                .put(session)
                .bearer_auth(post.access_token)
                .header("content-type", post.content_type())
                .header("content-range", format!("bytes {offset}-{last}/{size}"))
                .body(bytes);
            let answer = send(request).await?;
            match session_answer(&answer)? {
                Ok(next) => offset = next,
                done @ Err(_) => return Ok(done),
            }
        }
        Ok(Ok(offset))
    }

    /// The session of the checkpoint, or a new one (stored at once).
    async fn session(
        &self,
        post: &PostContext<'_>,
        checkpoint: &mut Value,
    ) -> Result<String, PublishError> {
        if let Some(session) = checkpoint.get("session").and_then(Value::as_str) {
            return Ok(session.to_owned());
        }
        let privacy = post.setting("privacy").unwrap_or("public");
        let mut snippet = json!({"title": post.title(), "categoryId": "22"});
        if let Some(description) = post.caption("description") {
            snippet["description"] = json!(description);
        }
        let metadata = json!({
            "snippet": snippet,
            "status": {"privacyStatus": privacy, "selfDeclaredMadeForKids": false},
        });
        let url = format!(
            "{}/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status",
            self.config.upload_base_url.trim_end_matches('/')
        );
        let request = self
            .client
            .post(url)
            .bearer_auth(post.access_token)
            .header("content-type", "application/json; charset=UTF-8")
            .header("x-upload-content-length", post.file.len().to_string())
            .header("x-upload-content-type", post.content_type())
            .body(metadata.to_string());
        let answer = send(request).await?;
        if !answer.is_success() {
            return Err(api_error(&answer));
        }
        let session = answer
            .header("location")
            .filter(|l| l.starts_with("http"))
            .ok_or_else(|| {
                PublishError::Unavailable("the upload session's answer has no Location".into())
            })?
            .to_owned();
        *checkpoint = json!({"session": session});
        post.save(checkpoint).await?;
        Ok(session)
    }

    fn published(post: &PostContext<'_>, video: &Value) -> Result<Published, PublishError> {
        let id = video
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .ok_or_else(|| {
                PublishError::Unavailable("the finished upload's answer has no video id".into())
            })?;
        // Vertical videos up to three minutes are Shorts.
        let short = matches!(&post.item.file.facts, FileFacts::Video(v)
            if v.height > v.width && v.duration_ms <= 180_000);
        let url = if short {
            format!("https://www.youtube.com/shorts/{id}")
        } else {
            format!("https://www.youtube.com/watch?v={id}")
        };
        Ok(Published {
            remote_id: id.to_owned(),
            url: Some(url),
        })
    }
}

/// A session's answer: `308` with how much it has, `200`/`201` with the video, or an error
/// (a session that is gone is [`PublishError::Unavailable`]: a new one is made).
fn session_answer(answer: &Answer) -> Result<Result<u64, Value>, PublishError> {
    match answer.status {
        308 => Ok(Ok(answer
            .header("range")
            .and_then(|r| r.trim().strip_prefix("bytes=0-"))
            .and_then(|last| last.parse::<u64>().ok())
            .map_or(0, |last| last + 1))),
        200 | 201 => Ok(Err(parse(answer, "the upload session")?)),
        404 | 410 => Err(PublishError::Unavailable(format!(
            "the upload session is gone (HTTP {}); a new one is made",
            answer.status
        ))),
        _ => Err(api_error(answer)),
    }
}

#[derive(Deserialize)]
struct ErrorAnswer {
    error: ErrorBody,
}

#[derive(Deserialize)]
struct ErrorBody {
    message: Option<String>,
    #[serde(default)]
    errors: Vec<ErrorItem>,
}

#[derive(Deserialize)]
struct ErrorItem {
    reason: Option<String>,
}

/// A Google API error: its first `reason` and `message`. Quota reasons are rate limits.
fn api_error(answer: &Answer) -> PublishError {
    let parsed: Option<ErrorAnswer> = serde_json::from_slice(&answer.body).ok();
    let (reason, message) = parsed
        .map(|a| {
            let reason = a.error.errors.into_iter().find_map(|e| e.reason);
            (reason, a.error.message)
        })
        .unwrap_or_default();
    let reason = reason.unwrap_or_else(|| format!("http_{}", answer.status));
    let message = message.unwrap_or_else(|| format!("HTTP {}", answer.status));
    let quota = matches!(
        reason.as_str(),
        "quotaExceeded" | "rateLimitExceeded" | "userRateLimitExceeded" | "uploadLimitExceeded"
    );
    if answer.status == 403 && quota {
        return PublishError::RateLimited {
            message: format!("{reason}: {message}"),
            retry_after: answer.retry_after,
        };
    }
    by_status(answer, reason, message)
}

#[async_trait]
impl Publisher for Youtube {
    fn platform(&self) -> Platform {
        Platform::Youtube
    }

    async fn refresh(&self, refresh_token: &str) -> Result<TokenGrant, PublishError> {
        self.config
            .app
            .refresh_in_body(&self.client, &self.config.token_url, refresh_token)
            .await
    }

    async fn start(
        &self,
        post: &PostContext<'_>,
        checkpoint: &mut Value,
    ) -> Result<(), PublishError> {
        let size = post.file.len();
        let resumed = checkpoint.get("session").is_some();
        let session = self.session(post, checkpoint).await?;
        let offset = if resumed {
            match self.probe(&session, size, post.access_token).await {
                Ok(Ok(offset)) => offset,
                // Complete already: nothing more to send before finalize, which finds it.
                Ok(Err(_)) => return Ok(()),
                Err(error) => {
                    // A session that is gone is forgotten, so the next try makes another.
                    *checkpoint = Value::Null;
                    post.save(checkpoint).await?;
                    return Err(error);
                }
            }
        } else {
            0
        };
        // Everything but the last chunk: the last byte makes the video, and that is
        // finalize's to send.
        let last_chunk_start = size.saturating_sub(1) / self.chunk() * self.chunk();
        match self.upload(post, &session, offset, last_chunk_start).await {
            Ok(_) => Ok(()),
            Err(error) => {
                if matches!(&error, PublishError::Unavailable(m) if m.contains("session is gone")) {
                    *checkpoint = Value::Null;
                    post.save(checkpoint).await?;
                }
                Err(error)
            }
        }
    }

    async fn finalize(
        &self,
        post: &PostContext<'_>,
        checkpoint: &mut Value,
    ) -> Result<Outcome, PublishError> {
        let session = checkpoint
            .get("session")
            .and_then(Value::as_str)
            .ok_or_else(|| PublishError::rejected("no_session", "no upload session to finish"))?
            .to_owned();
        let size = post.file.len();
        let video = match self.probe(&session, size, post.access_token).await? {
            Err(video) => video,
            Ok(offset) => match self.upload(post, &session, offset, size).await? {
                Err(video) => video,
                Ok(_) => {
                    return Err(PublishError::Unavailable(
                        "the last chunk was not answered with the video".into(),
                    ))
                }
            },
        };
        Ok(Outcome::Published(Self::published(post, &video)?))
    }

    async fn find(
        &self,
        post: &PostContext<'_>,
        checkpoint: &Value,
    ) -> Result<Option<Outcome>, PublishError> {
        let Some(session) = checkpoint.get("session").and_then(Value::as_str) else {
            return Ok(None);
        };
        match self
            .probe(session, post.file.len(), post.access_token)
            .await?
        {
            Err(video) => Ok(Some(Outcome::Published(Self::published(post, &video)?))),
            Ok(_) => Ok(None),
        }
    }

    /// `commentThreads.insert`: `POST /youtube/v3/commentThreads?part=snippet` with the
    /// video's id and the text as the top-level comment's `textOriginal`; the thread's id.
    /// Like `videos.delete`, it needs `youtube.force-ssl`.
    async fn comment(&self, post: &PublishedPost<'_>, text: &str) -> Result<String, PublishError> {
        let url = format!(
            "{}/youtube/v3/commentThreads?part=snippet",
            self.config.upload_base_url.trim_end_matches('/')
        );
        let body = json!({"snippet": {"videoId": post.remote_id,
            "topLevelComment": {"snippet": {"textOriginal": text}}}});
        let request = self
            .client
            .post(url)
            .bearer_auth(post.access_token)
            .header("content-type", "application/json; charset=UTF-8")
            .body(body.to_string());
        let answer = send(request).await?;
        if !answer.is_success() {
            return Err(api_error(&answer));
        }
        let thread: Value = parse(&answer, "commentThreads.insert")?;
        thread["id"].as_str().map(str::to_owned).ok_or_else(|| {
            PublishError::Unavailable("the comment thread's answer has no id".into())
        })
    }

    /// `thumbnails.set`: `POST /upload/youtube/v3/thumbnails/set?videoId=…` with the image as
    /// the body (a media upload: JPEG or PNG, at most 2 MB), answered with a
    /// `youtube#thumbnailSetResponse`. YouTube refuses it (`403`) for channels that may not
    /// set custom thumbnails (not yet verified).
    async fn set_thumbnail(
        &self,
        post: &PublishedPost<'_>,
        image: &dyn RangeRead,
        content_type: &str,
    ) -> Result<(), PublishError> {
        let url = format!(
            "{}/upload/youtube/v3/thumbnails/set",
            self.config.upload_base_url.trim_end_matches('/')
        );
        let bytes = read(image, 0, image.len()).await?;
        let request = self
            .client
            .post(url)
            .query(&[("videoId", post.remote_id), ("uploadType", "media")])
            .bearer_auth(post.access_token)
            .header("content-type", content_type)
            .body(bytes);
        let answer = send(request).await?;
        if answer.is_success() {
            Ok(())
        } else {
            Err(api_error(&answer))
        }
    }

    /// `videos.delete`: `DELETE /youtube/v3/videos?id=…`, answered `204`. A video YouTube
    /// no longer has (`404 videoNotFound`) is deleted already. It needs the
    /// `youtube.force-ssl` scope, which channels connected before xf asked for it lack
    /// (YouTube refuses with `insufficientPermissions`; connect the channel again).
    async fn delete(&self, post: &PublishedPost<'_>) -> Result<(), PublishError> {
        let url = format!(
            "{}/youtube/v3/videos",
            self.config.upload_base_url.trim_end_matches('/')
        );
        let request = self
            .client
            .delete(url)
            .query(&[("id", post.remote_id)])
            .bearer_auth(post.access_token);
        let answer = send(request).await?;
        match answer.status {
            200..=299 | 404 => Ok(()),
            _ => Err(api_error(&answer)),
        }
    }
}

/// Connect links for YouTube: Google's consent for uploading (and reading which channel it
/// is), then `channels.list` with `mine=true` names the channel the grant reaches.
impl Youtube {
    /// The authorization-code flow of connect links.
    fn flow(&self) -> oauth::CodeFlow<'_> {
        oauth::google_flow(
            &self.config.authorize_url,
            &self.config.token_url,
            &self.config.app.client_id,
            &self.config.app.client_secret,
            CONNECT_SCOPES,
        )
    }

    /// The accounts a connect link's grant reaches.
    async fn connect_accounts(&self, grant: &Grant) -> Result<Vec<Account>, ConnectFailure> {
        #[derive(Deserialize)]
        struct Channels {
            #[serde(default)]
            items: Vec<Channel>,
        }
        #[derive(Deserialize)]
        struct Channel {
            id: String,
            snippet: Option<Snippet>,
        }
        #[derive(Deserialize)]
        struct Snippet {
            title: Option<String>,
            thumbnails: Option<Value>,
        }
        let url = format!(
            "{}/youtube/v3/channels?part=snippet&mine=true&maxResults=50",
            self.config.upload_base_url.trim_end_matches('/')
        );
        let channels: Channels = oauth::get_json(
            &self.client,
            &url,
            &grant.access_token,
            "YouTube's channels.list",
        )
        .await?;
        Ok(channels
            .items
            .into_iter()
            .map(|channel| {
                let snippet = channel.snippet;
                let thumbnail = snippet
                    .as_ref()
                    .and_then(|s| s.thumbnails.as_ref())
                    .and_then(|t| t.pointer("/default/url"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                Account {
                    name: snippet
                        .and_then(|s| s.title)
                        .filter(|t| !t.trim().is_empty())
                        .unwrap_or_else(|| channel.id.clone()),
                    account_id: channel.id,
                    thumbnail,
                    access_token: None,
                    default_board: None,
                }
            })
            .collect())
    }
}

oauth::code_flow_connector!(Youtube, Provider::Youtube);
