//! TikTok through the Content Posting API.
//!
//! - **creator info**: a direct post (video or photo) first asks
//!   `POST /v2/post/publish/creator_info/query/` what the creator may post now, as TikTok's
//!   Content Posting guidelines require: a privacy level not among its
//!   `privacy_level_options` (an unaudited app's creators may only post `SELF_ONLY`), or a
//!   video longer than its `max_video_post_duration_sec`, is refused before anything is
//!   uploaded; an interaction the creator turned off in the app stays off.
//! - **videos**: start is `POST /v2/post/publish/video/init/` (direct post, with
//!   `post_info`: title, privacy level, comment/duet/stitch switches) or, when
//!   `autoPublish` is off, `POST /v2/post/publish/inbox/video/init/`, with `source_info`
//!   `FILE_UPLOAD` (`video_size`, `chunk_size`, `total_chunk_count`, by TikTok's rules:
//!   chunks of 5 to 64 MB, the remainder in the last, a file under 5 MB in one); the
//!   `publish_id` and `upload_url` are stored at once. Then every chunk but the last is
//!   `PUT` with `Content-Range: bytes a-b/N` (`206` each). A restarted start reads how far
//!   TikTok got (`uploaded_bytes` of the status) and goes on from there.
//! - **finalize**: the last chunk (`201`): TikTok then posts it, or sends it to the
//!   creator's inbox.
//! - **photos**: finalize is `POST /v2/post/publish/content/init/` with `media_type=PHOTO`
//!   and `source_info` `PULL_FROM_URL` (TikTok pulls the signed URL; a carousel's
//!   `photo_images` are its images' URLs in order, the first the cover).
//! - **find**: `POST /v2/post/publish/status/fetch/`: `PUBLISH_COMPLETE` is published
//!   (the post id is `publicaly_available_post_id`), `SEND_TO_USER_INBOX` needs the creator
//!   (`manual`), `FAILED` a refusal with its `fail_reason`, processing waits. A photo post
//!   whose creation was not answered has no `publish_id` to look up: it fails rather than
//!   risk posting twice.
//! - **tokens**: `POST /v2/oauth/token/` with `client_key`, `client_secret` and the
//!   refresh token (TikTok rotates refresh tokens; the new one is stored).

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{json as parse, read, send, token_grant, OAuthApp, DEFAULT_TIMEOUT};
use crate::connect::{oauth, Account, ConnectFailure, Grant, Provider};
use crate::media::publish::{Outcome, PostContext, PublishError, Published, Publisher, TokenGrant};
use crate::media::settings::auto_publish;
use crate::media::Platform;
use crate::net::Answer;

/// The Content Posting API's base.
pub const API_BASE_URL: &str = "https://open.tiktokapis.com";
/// TikTok's authorization page.
pub const AUTHORIZE_URL: &str = "https://www.tiktok.com/v2/auth/authorize/";
/// What a connect link asks for, comma-separated as TikTok wants: the user's id and name
/// (`user.info.profile` holds the `username` a post's URL is made of), and posting.
pub const CONNECT_SCOPES: &str = "user.info.basic,user.info.profile,video.publish,video.upload";
const MB: u64 = 1024 * 1024;

/// The host's TikTok app and where TikTok is.
#[derive(Debug, Clone)]
pub struct TiktokConfig {
    /// The app that refreshes the channels' tokens.
    pub app: OAuthApp,
    /// The API's base (default [`API_BASE_URL`]); the token endpoint is under it.
    pub api_base_url: String,
    /// The authorization page connect links send users to (default [`AUTHORIZE_URL`]).
    pub authorize_url: String,
    /// Bytes per chunk, 5 to 64 MB (default 10 MB).
    pub chunk_size: u64,
    /// How long to wait between status reads (default 5 s).
    pub poll_interval: Duration,
    /// Longest wait for one answer.
    pub timeout: Duration,
}

impl TiktokConfig {
    /// TikTok's endpoints with this app.
    pub fn new(client_key: impl Into<String>, client_secret: impl Into<String>) -> Self {
        TiktokConfig {
            app: OAuthApp::new(client_key, client_secret),
            api_base_url: API_BASE_URL.to_owned(),
            authorize_url: AUTHORIZE_URL.to_owned(),
            chunk_size: 10 * MB,
            poll_interval: Duration::from_secs(5),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// The TikTok client.
#[derive(Debug, Clone)]
pub struct Tiktok {
    config: TiktokConfig,
    client: reqwest::Client,
}

/// How a file is cut into chunks by TikTok's rules: `(chunk_size, total_chunk_count)`.
pub fn chunk_plan(size: u64, wanted: u64) -> (u64, u64) {
    let chunk = wanted.clamp(5 * MB, 64 * MB);
    if size < 5 * MB || size <= chunk {
        return (size, 1);
    }
    // The remainder rides with the last chunk (which may be up to 128 MB).
    (chunk, size / chunk)
}

/// An API error: `error.code` other than `ok`, mapped by TikTok's documented codes.
fn api_error(answer: &Answer) -> PublishError {
    let parsed: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    let code = parsed["error"]["code"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| format!("http_{}", answer.status));
    let message = parsed["error"]["message"]
        .as_str()
        .filter(|m| !m.is_empty())
        .map(str::to_owned)
        .unwrap_or_else(|| format!("HTTP {}", answer.status));
    match code.as_str() {
        "access_token_invalid" => PublishError::Unauthorized(format!("{code}: {message}")),
        "rate_limit_exceeded" => PublishError::RateLimited {
            message: format!("{code}: {message}"),
            retry_after: answer.retry_after,
        },
        _ if answer.status >= 500 => {
            PublishError::Unavailable(format!("HTTP {}: {code}: {message}", answer.status))
        }
        _ => PublishError::Rejected { code, message },
    }
}

impl Tiktok {
    /// The client of `config`.
    pub fn new(config: TiktokConfig) -> Self {
        let client = crate::net::client(config.timeout);
        Tiktok { config, client }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.config.api_base_url.trim_end_matches('/'))
    }

    /// A JSON call of the API (with no body when `body` is `null`); its `data`.
    async fn call(&self, token: &str, path: &str, body: Value) -> Result<Value, PublishError> {
        let body = if body.is_null() {
            String::new()
        } else {
            body.to_string()
        };
        let request = self
            .client
            .post(self.url(path))
            .bearer_auth(token)
            .header("content-type", "application/json; charset=UTF-8")
            .body(body);
        let answer = send(request).await?;
        let parsed: Value = if answer.is_success() {
            parse(&answer, path)?
        } else {
            return Err(api_error(&answer));
        };
        if parsed["error"]["code"].as_str().unwrap_or("ok") != "ok" {
            return Err(api_error(&answer));
        }
        Ok(parsed["data"].clone())
    }

    /// A direct post's `post_info`, within what the creator may post now (`creator`, the
    /// answer of [`Tiktok::creator_info`]): a refusal naming the creator's options when the
    /// privacy level or the video's length is outside them.
    fn post_info(post: &PostContext<'_>, creator: &Value) -> Result<Value, PublishError> {
        let duration_ms = match &post.item.file.facts {
            crate::model::media::FileFacts::Video(video) => Some(video.duration_ms),
            crate::model::media::FileFacts::Image(_) => None,
        };
        let wanted = Wanted {
            privacy: post.setting("privacy").unwrap_or("SELF_ONLY"),
            duration_ms,
            disable_comment: post.flag("disableComment"),
            disable_duet: post.flag("disableDuet"),
            disable_stitch: post.flag("disableStitch"),
            caption: post.caption("caption"),
            cover_ms: post.cover_ms(),
        };
        post_info_for(&wanted, creator)
    }

    /// What the creator may post now: `creator_info/query`'s `data`.
    async fn creator_info(&self, post: &PostContext<'_>) -> Result<Value, PublishError> {
        self.call(
            post.access_token,
            "/v2/post/publish/creator_info/query/",
            Value::Null,
        )
        .await
    }

    /// The status of a publish.
    async fn status(
        &self,
        post: &PostContext<'_>,
        publish_id: &str,
    ) -> Result<Value, PublishError> {
        self.call(
            post.access_token,
            "/v2/post/publish/status/fetch/",
            json!({"publish_id": publish_id}),
        )
        .await
    }

    /// Sends chunks `from..until` (indexes) of the planned upload.
    async fn send_chunks(
        &self,
        post: &PostContext<'_>,
        checkpoint: &Value,
        from: u64,
        until: u64,
    ) -> Result<(), PublishError> {
        let size = post.file.len();
        let chunk = checkpoint["chunkSize"].as_u64().unwrap_or(size);
        let count = checkpoint["chunkCount"].as_u64().unwrap_or(1);
        let upload_url = checkpoint["uploadUrl"]
            .as_str()
            .ok_or_else(|| PublishError::rejected("no_upload_url", "no upload URL"))?;
        for index in from..until {
            let first = index * chunk;
            let last = if index + 1 == count {
                size - 1
            } else {
                first + chunk - 1
            };
            let bytes = read(post.file, first, last - first + 1).await?;
            let request = self
                .client
                .put(upload_url)
                .header("content-type", post.content_type())
                .header("content-range", format!("bytes {first}-{last}/{size}"))
                .body(bytes);
            let answer = send(request).await?;
            if !matches!(answer.status, 200 | 201 | 206) {
                return Err(api_error(&answer));
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Publisher for Tiktok {
    fn platform(&self) -> Platform {
        Platform::Tiktok
    }

    async fn refresh(&self, refresh_token: &str) -> Result<TokenGrant, PublishError> {
        let request = self.client.post(self.url("/v2/oauth/token/")).form(&[
            ("client_key", self.config.app.client_id.as_str()),
            ("client_secret", self.config.app.client_secret.as_str()),
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
        ]);
        token_grant(&send(request).await?)
    }

    async fn start(
        &self,
        post: &PostContext<'_>,
        checkpoint: &mut Value,
    ) -> Result<(), PublishError> {
        if !post.is_video() {
            // Photos are pulled by URL in one call, finalize's; what the creator may post is
            // asked here, where a failed call is simply tried again.
            if auto_publish(post.settings) && checkpoint["postInfo"].is_null() {
                let creator = self.creator_info(post).await?;
                *checkpoint = json!({"postInfo": Self::post_info(post, &creator)?});
                post.save(checkpoint).await?;
            }
            return Ok(());
        }
        let size = post.file.len();
        let from = match checkpoint["publishId"].as_str() {
            Some(publish_id) => {
                let status = self.status(post, publish_id).await?;
                let chunk = checkpoint["chunkSize"].as_u64().unwrap_or(size).max(1);
                status["uploaded_bytes"].as_u64().unwrap_or(0) / chunk
            }
            None => {
                let (chunk, count) = chunk_plan(size, self.config.chunk_size);
                let source = json!({"source": "FILE_UPLOAD", "video_size": size,
                    "chunk_size": chunk, "total_chunk_count": count});
                let (path, body) = if auto_publish(post.settings) {
                    let creator = self.creator_info(post).await?;
                    let info = Self::post_info(post, &creator)?;
                    (
                        "/v2/post/publish/video/init/",
                        json!({"post_info": info, "source_info": source}),
                    )
                } else {
                    (
                        "/v2/post/publish/inbox/video/init/",
                        json!({"source_info": source}),
                    )
                };
                let data = self.call(post.access_token, path, body).await?;
                let (Some(publish_id), Some(upload_url)) =
                    (data["publish_id"].as_str(), data["upload_url"].as_str())
                else {
                    return Err(PublishError::Unavailable(
                        "the init answer has no publish_id and upload_url".into(),
                    ));
                };
                *checkpoint = json!({"publishId": publish_id, "uploadUrl": upload_url,
                    "chunkSize": chunk, "chunkCount": count});
                post.save(checkpoint).await?;
                0
            }
        };
        let count = checkpoint["chunkCount"].as_u64().unwrap_or(1);
        self.send_chunks(post, checkpoint, from, count.saturating_sub(1))
            .await
    }

    async fn finalize(
        &self,
        post: &PostContext<'_>,
        checkpoint: &mut Value,
    ) -> Result<Outcome, PublishError> {
        if post.is_video() {
            let count = checkpoint["chunkCount"].as_u64().unwrap_or(1);
            self.send_chunks(post, checkpoint, count - 1, count).await?;
        } else {
            let (mode, mut info) = if auto_publish(post.settings) {
                let info = checkpoint["postInfo"].clone();
                if !info.is_object() {
                    return Err(PublishError::rejected(
                        "no_post_info",
                        "the photo post reached its creation without the creator's options",
                    ));
                }
                ("DIRECT_POST", info)
            } else {
                // An upload the creator finishes in the app: they choose there.
                ("MEDIA_UPLOAD", json!({}))
            };
            if let Some(title) = post.setting("title").or(post.item.title.as_deref()) {
                info["title"] = json!(title);
            }
            if let Some(caption) = post.caption("caption") {
                info["description"] = json!(caption);
            }
            let photo_images: Vec<&str> = if post.carousel.is_empty() {
                vec![post.media_url]
            } else {
                post.carousel.iter().map(|image| image.url).collect()
            };
            let data = self
                .call(
                    post.access_token,
                    "/v2/post/publish/content/init/",
                    json!({"post_info": info, "post_mode": mode, "media_type": "PHOTO",
                        "source_info": {"source": "PULL_FROM_URL", "photo_cover_index": 0,
                                        "photo_images": photo_images}}),
                )
                .await?;
            let publish_id = data["publish_id"].as_str().ok_or_else(|| {
                PublishError::Unavailable("the photo post's answer has no publish_id".into())
            })?;
            *checkpoint = json!({"publishId": publish_id});
        }
        Ok(Outcome::Pending(Duration::ZERO))
    }

    async fn find(
        &self,
        post: &PostContext<'_>,
        checkpoint: &Value,
    ) -> Result<Option<Outcome>, PublishError> {
        let Some(publish_id) = checkpoint["publishId"].as_str() else {
            return Err(PublishError::rejected(
                "outcome_unknown",
                "TikTok did not answer the post's creation, and without its publish_id it \
                 cannot be looked up: check the account before posting again",
            ));
        };
        let status = self.status(post, publish_id).await?;
        let wait = self.config.poll_interval;
        Ok(Some(match status["status"].as_str().unwrap_or("") {
            "PUBLISH_COMPLETE" => {
                let id = status["publicaly_available_post_id"]
                    .as_array()
                    .and_then(|ids| ids.first())
                    .map(|id| match id {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    });
                match id {
                    Some(id) => Outcome::Published(Published {
                        url: Some(format!(
                            "https://www.tiktok.com/@{}/video/{id}",
                            post.account_name
                        )),
                        remote_id: id,
                    }),
                    // Private posts have no public id: the publish id names it.
                    None => Outcome::Published(Published {
                        remote_id: publish_id.to_owned(),
                        url: None,
                    }),
                }
            }
            "SEND_TO_USER_INBOX" => Outcome::Manual(
                "sent to the creator's TikTok inbox: they finish the post in the app".into(),
            ),
            "FAILED" => {
                return Err(PublishError::rejected(
                    status["fail_reason"].as_str().unwrap_or("failed"),
                    "TikTok could not publish the post",
                ))
            }
            "PROCESSING_UPLOAD" if post.is_video() => {
                let uploaded = status["uploaded_bytes"].as_u64().unwrap_or(0);
                if uploaded < post.file.len() {
                    // The last chunk never arrived: finalize sends it again.
                    return Ok(None);
                }
                Outcome::Pending(wait)
            }
            _ => Outcome::Pending(wait),
        }))
    }
}

/// Connect links for TikTok (Login Kit for the web: no PKCE, scopes comma-separated, the app
/// named by `client_key`); `user/info` names the account: its `open_id`, and its `username`,
/// which a post's URL is made of.
impl Tiktok {
    /// The authorization-code flow of connect links.
    fn flow(&self) -> oauth::CodeFlow<'_> {
        oauth::CodeFlow {
            authorize_url: &self.config.authorize_url,
            token_url: self.url("/v2/oauth/token/").into(),
            client_param: "client_key",
            client_id: &self.config.app.client_id,
            client_secret: &self.config.app.client_secret,
            basic_auth: false,
            token_in_query: false,
            scopes: CONNECT_SCOPES,
            pkce: false,
            extra: &[],
        }
    }

    /// The accounts a connect link's grant reaches.
    async fn connect_accounts(&self, grant: &Grant) -> Result<Vec<Account>, ConnectFailure> {
        let url = self.url("/v2/user/info/?fields=open_id,display_name,username,avatar_url");
        let answer: Value = oauth::get_json(
            &self.client,
            &url,
            &grant.access_token,
            "TikTok's user/info",
        )
        .await?;
        let user = &answer["data"]["user"];
        let Some(open_id) = user["open_id"].as_str().filter(|id| !id.is_empty()) else {
            return Ok(Vec::new());
        };
        let text = |field: &str| {
            user[field]
                .as_str()
                .filter(|v| !v.trim().is_empty())
                .map(str::to_owned)
        };
        Ok(vec![Account {
            account_id: open_id.to_owned(),
            name: text("username")
                .or_else(|| text("display_name"))
                .unwrap_or_else(|| open_id.to_owned()),
            thumbnail: text("avatar_url"),
            access_token: None,
            default_board: None,
        }])
    }
}

oauth::code_flow_connector!(Tiktok, Provider::Tiktok);

/// What a direct post asks TikTok for: the upload's settings and its video's length.
#[derive(Debug, Clone, Copy)]
struct Wanted<'a> {
    privacy: &'a str,
    duration_ms: Option<u64>,
    disable_comment: bool,
    disable_duet: bool,
    disable_stitch: bool,
    caption: Option<&'a str>,
    cover_ms: Option<u64>,
}

/// The `post_info` of `wanted`, within what the creator may post now (`creator`, the `data`
/// of `creator_info/query`, read as given: a field missing or of another type allows
/// nothing, or limits nothing where it is a limit).
fn post_info_for(wanted: &Wanted<'_>, creator: &Value) -> Result<Value, PublishError> {
    let privacy = wanted.privacy;
    let options: Vec<&str> = creator["privacy_level_options"]
        .as_array()
        .map(|options| options.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !options.contains(&privacy) {
        return Err(PublishError::rejected(
            "privacy_level_option_mismatch",
            format!(
                "this TikTok creator may post as {} only, not {privacy} (an app TikTok has \
                 not audited may only post SELF_ONLY)",
                if options.is_empty() {
                    "nothing".to_owned()
                } else {
                    options.join(", ")
                }
            ),
        ));
    }
    if let (Some(duration_ms), Some(longest)) = (
        wanted.duration_ms,
        creator["max_video_post_duration_sec"].as_u64(),
    ) {
        if duration_ms > longest.saturating_mul(1000) {
            return Err(PublishError::rejected(
                "duration_over_creator_limit",
                format!(
                    "the video lasts {:.1} s; this TikTok creator may post videos of at \
                     most {longest} s",
                    duration_ms as f64 / 1000.0
                ),
            ));
        }
    }
    let off =
        |wanted: bool, creator_key: &str| wanted || creator[creator_key].as_bool().unwrap_or(false);
    let mut info = json!({
        "privacy_level": privacy,
        "disable_comment": off(wanted.disable_comment, "comment_disabled"),
        "disable_duet": off(wanted.disable_duet, "duet_disabled"),
        "disable_stitch": off(wanted.disable_stitch, "stitch_disabled"),
    });
    if let Some(caption) = wanted.caption {
        info["title"] = json!(caption);
    }
    if let Some(cover) = wanted.cover_ms {
        // The video's cover: the frame this many milliseconds in.
        info["video_cover_timestamp_ms"] = json!(cover);
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// `creator_info/query` answers of any shape, its documented fields among them.
    fn creator() -> impl Strategy<Value = Value> {
        let level = prop_oneof![
            prop::sample::select(vec![
                "PUBLIC_TO_EVERYONE",
                "MUTUAL_FOLLOW_FRIENDS",
                "FOLLOWER_OF_CREATOR",
                "SELF_ONLY",
            ])
            .prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            Just(Value::Null),
            ".{0,10}".prop_map(Value::from),
        ];
        let field = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e9f64..1e9).prop_map(Value::from),
            ".{0,10}".prop_map(Value::from),
        ];
        (
            prop_oneof![
                prop::collection::vec(level, 0..6).prop_map(Value::Array),
                field.clone(),
            ],
            field.clone(),
            field.clone(),
            field,
        )
            .prop_map(|(levels, longest, comments, duets)| {
                serde_json::json!({
                    "privacy_level_options": levels,
                    "max_video_post_duration_sec": longest,
                    "comment_disabled": comments,
                    "duet_disabled": duets,
                })
            })
    }

    proptest! {
        /// Whatever the creator's answer, the post is one it allows, or a refusal naming why.
        #[test]
        fn post_info_is_within_any_creator_answer_or_refused(
            creator in creator(),
            privacy in prop::sample::select(vec!["PUBLIC_TO_EVERYONE", "SELF_ONLY", "FRIENDS"]),
            duration_ms in prop::option::of(0u64..2_000_000),
            cover_ms in prop::option::of(0u64..900_000),
        ) {
            let wanted = Wanted {
                privacy,
                duration_ms,
                disable_comment: false,
                disable_duet: true,
                disable_stitch: false,
                caption: Some("Hi"),
                cover_ms,
            };
            let allowed: Vec<&str> = creator["privacy_level_options"]
                .as_array()
                .map(|levels| levels.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match post_info_for(&wanted, &creator) {
                Ok(info) => {
                    prop_assert!(allowed.contains(&privacy));
                    prop_assert_eq!(&info["privacy_level"], &Value::from(privacy));
                    if let (Some(ms), Some(longest)) =
                        (duration_ms, creator["max_video_post_duration_sec"].as_u64())
                    {
                        prop_assert!(ms <= longest.saturating_mul(1000));
                    }
                    prop_assert_eq!(&info["disable_duet"], &Value::Bool(true));
                    let creator_off = creator["comment_disabled"].as_bool() == Some(true);
                    prop_assert_eq!(&info["disable_comment"], &Value::Bool(creator_off));
                    prop_assert_eq!(
                        info["video_cover_timestamp_ms"].as_u64(),
                        cover_ms
                    );
                }
                Err(PublishError::Rejected { code, message }) => {
                    prop_assert!(
                        code == "privacy_level_option_mismatch"
                            || code == "duration_over_creator_limit",
                        "{code}"
                    );
                    prop_assert!(message.contains("TikTok creator"), "{message}");
                }
                Err(other) => prop_assert!(false, "{other:?}"),
            }
        }
    }

    #[test]
    fn chunks_follow_tiktoks_rules() {
        assert_eq!(chunk_plan(3 * MB, 10 * MB), (3 * MB, 1));
        assert_eq!(chunk_plan(9 * MB, 10 * MB), (9 * MB, 1));
        assert_eq!(chunk_plan(25 * MB, 10 * MB), (10 * MB, 2));
        assert_eq!(chunk_plan(30 * MB, 10 * MB), (10 * MB, 3));
        assert_eq!(chunk_plan(30 * MB, MB), (5 * MB, 6));
        assert_eq!(chunk_plan(1000 * MB, 100 * MB), (64 * MB, 15));
    }
}
