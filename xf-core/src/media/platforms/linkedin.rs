//! LinkedIn through the versioned REST API (`LinkedIn-Version`, Rest.li 2.0).
//!
//! - **start** (videos): `POST /rest/videos?action=initializeUpload` with the owner and the
//!   size; the answer's `uploadInstructions` say which bytes go to which URL. Each part is
//!   `PUT` exactly as instructed (`firstByte` to `lastByte`) and its `ETag` kept; then
//!   `POST /rest/videos?action=finalizeUpload` with the video, the upload token and the
//!   ETags in order. The instructions and the ETags so far are stored, so a restart sends
//!   only the parts still missing. (Images: `POST /rest/images?action=initializeUpload`
//!   and one `PUT`.)
//! - **poll**: `GET /rest/videos/{urn}` (or `/rest/images/{urn}`) until `AVAILABLE`;
//!   `PROCESSING_FAILED` is a refusal.
//! - **finalize**: `POST /rest/posts` with the author, the commentary, public visibility,
//!   the main feed, and the media; the post's URN comes back in `x-restli-id`.
//! - **find**: the author's recent posts (`GET /rest/posts?q=author`) with this media.
//! - **tokens**: `POST /oauth/v2/accessToken` with the refresh-token grant.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{by_status, json as parse, read, send, OAuthApp, DEFAULT_TIMEOUT};
use crate::media::publish::{
    Outcome, PollOutcome, PostContext, PublishError, Published, Publisher, TokenGrant,
};
use crate::media::Platform;
use crate::net::Answer;

/// The REST API's base.
pub const API_BASE_URL: &str = "https://api.linkedin.com";
/// The OAuth token endpoint.
pub const TOKEN_URL: &str = "https://www.linkedin.com/oauth/v2/accessToken";
/// The API version sent in `LinkedIn-Version`.
pub const API_VERSION: &str = "202411";

/// The host's LinkedIn app and where LinkedIn is.
#[derive(Debug, Clone)]
pub struct LinkedinConfig {
    /// The app that refreshes the channels' tokens.
    pub app: OAuthApp,
    /// The REST API's base (default [`API_BASE_URL`]).
    pub api_base_url: String,
    /// The token endpoint (default [`TOKEN_URL`]).
    pub token_url: String,
    /// How long to wait between status reads (default 5 s).
    pub poll_interval: std::time::Duration,
    /// Longest wait for one answer.
    pub timeout: std::time::Duration,
}

impl LinkedinConfig {
    /// LinkedIn's endpoints with this app.
    pub fn new(client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        LinkedinConfig {
            app: OAuthApp::new(client_id, client_secret),
            api_base_url: API_BASE_URL.to_owned(),
            token_url: TOKEN_URL.to_owned(),
            poll_interval: std::time::Duration::from_secs(5),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// The LinkedIn client.
#[derive(Debug, Clone)]
pub struct Linkedin {
    config: LinkedinConfig,
    client: reqwest::Client,
}

/// A REST error: `{status, serviceErrorCode, code, message}`.
fn api_error(answer: &Answer) -> PublishError {
    let parsed: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    let code = parsed["code"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| parsed["serviceErrorCode"].as_i64().map(|c| c.to_string()))
        .unwrap_or_else(|| format!("http_{}", answer.status));
    let message = parsed["message"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| format!("HTTP {}", answer.status));
    by_status(answer, code, message)
}

/// A URN as one path segment.
fn segment(urn: &str) -> String {
    url::form_urlencoded::byte_serialize(urn.as_bytes()).collect()
}

impl Linkedin {
    /// The client of `config`.
    pub fn new(config: LinkedinConfig) -> Self {
        let client = crate::net::client(config.timeout);
        Linkedin { config, client }
    }

    fn request(&self, method: reqwest::Method, path: &str, token: &str) -> reqwest::RequestBuilder {
        let url = format!("{}{path}", self.config.api_base_url.trim_end_matches('/'));
        self.client
            .request(method, url)
            .bearer_auth(token)
            .header("linkedin-version", API_VERSION)
            .header("x-restli-protocol-version", "2.0.0")
    }

    async fn json_call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> Result<Answer, PublishError> {
        let mut request = self.request(method, path, token);
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        let answer = send(request).await?;
        if answer.is_success() {
            Ok(answer)
        } else {
            Err(api_error(&answer))
        }
    }

    fn media(checkpoint: &Value) -> Result<&str, PublishError> {
        checkpoint["media"]
            .as_str()
            .ok_or_else(|| PublishError::rejected("no_media", "no uploaded media"))
    }

    fn resource(post: &PostContext<'_>) -> &'static str {
        if post.is_video() {
            "videos"
        } else {
            "images"
        }
    }
}

#[async_trait]
impl Publisher for Linkedin {
    fn platform(&self) -> Platform {
        Platform::Linkedin
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
        let token = post.access_token;
        if checkpoint["media"].is_null() {
            let mut request = json!({"owner": post.account});
            if post.is_video() {
                request["fileSizeBytes"] = json!(post.file.len());
                request["uploadCaptions"] = json!(false);
                request["uploadThumbnail"] = json!(false);
            }
            let path = format!("/rest/{}?action=initializeUpload", Self::resource(post));
            let answer = self
                .json_call(
                    reqwest::Method::POST,
                    &path,
                    token,
                    Some(json!({"initializeUploadRequest": request})),
                )
                .await?;
            let value = parse::<Value>(&answer, "initializeUpload")?["value"].clone();
            let (media, parts) = if post.is_video() {
                let parts: Vec<Value> = value["uploadInstructions"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                (value["video"].clone(), parts)
            } else {
                let part = json!({"uploadUrl": value["uploadUrl"], "firstByte": 0,
                    "lastByte": post.file.len().saturating_sub(1)});
                (value["image"].clone(), vec![part])
            };
            if media.as_str().is_none() || parts.is_empty() {
                return Err(PublishError::Unavailable(
                    "initializeUpload answered no media URN or upload instructions".into(),
                ));
            }
            *checkpoint = json!({"media": media, "uploadToken": value["uploadToken"],
                "parts": parts, "etags": [], "finalized": false});
            post.save(checkpoint).await?;
        }
        let parts = checkpoint["parts"].as_array().cloned().unwrap_or_default();
        let done = checkpoint["etags"].as_array().map_or(0, Vec::len);
        for part in parts.iter().skip(done) {
            let (Some(url), Some(first), Some(last)) = (
                part["uploadUrl"].as_str(),
                part["firstByte"].as_u64(),
                part["lastByte"].as_u64(),
            ) else {
                return Err(PublishError::Unavailable(
                    "an upload instruction is malformed".into(),
                ));
            };
            let bytes = read(post.file, first, last - first + 1).await?;
            let request = self
                .client
                .put(url)
                .bearer_auth(token)
                .header("content-type", "application/octet-stream")
                .body(bytes);
            let answer = send(request).await?;
            if !answer.is_success() {
                return Err(api_error(&answer));
            }
            let etag = answer.header("etag").unwrap_or("").to_owned();
            if let Some(etags) = checkpoint["etags"].as_array_mut() {
                etags.push(json!(etag));
            }
            post.save(checkpoint).await?;
        }
        if post.is_video() && checkpoint["finalized"] != json!(true) {
            let body = json!({"finalizeUploadRequest": {
                "video": checkpoint["media"], "uploadToken": checkpoint["uploadToken"],
                "uploadedPartIds": checkpoint["etags"]}});
            self.json_call(
                reqwest::Method::POST,
                "/rest/videos?action=finalizeUpload",
                token,
                Some(body),
            )
            .await?;
            checkpoint["finalized"] = json!(true);
        }
        Ok(())
    }

    async fn poll(
        &self,
        post: &PostContext<'_>,
        checkpoint: &mut Value,
    ) -> Result<PollOutcome, PublishError> {
        let media = Self::media(checkpoint)?;
        let path = format!("/rest/{}/{}", Self::resource(post), segment(media));
        let answer = self
            .json_call(reqwest::Method::GET, &path, post.access_token, None)
            .await?;
        let status: Value = parse(&answer, "the media's status")?;
        match status["status"].as_str().unwrap_or("") {
            "AVAILABLE" => Ok(PollOutcome::Ready),
            "PROCESSING_FAILED" => Err(PublishError::rejected(
                "PROCESSING_FAILED",
                "LinkedIn could not process the media",
            )),
            _ => Ok(PollOutcome::Wait(self.config.poll_interval)),
        }
    }

    async fn finalize(
        &self,
        post: &PostContext<'_>,
        checkpoint: &mut Value,
    ) -> Result<Outcome, PublishError> {
        let media = Self::media(checkpoint)?.to_owned();
        let mut content = json!({"media": {"id": media}});
        content["media"]["title"] = json!(post.title());
        let body = json!({
            "author": post.account,
            "commentary": post.caption("comment").unwrap_or(""),
            "visibility": "PUBLIC",
            "distribution": {"feedDistribution": "MAIN_FEED", "targetEntities": [],
                             "thirdPartyDistributionChannels": []},
            "content": content,
            "lifecycleState": "PUBLISHED",
            "isReshareDisabledByAuthor": false,
        });
        let answer = self
            .json_call(
                reqwest::Method::POST,
                "/rest/posts",
                post.access_token,
                Some(body),
            )
            .await?;
        let urn = answer
            .header("x-restli-id")
            .filter(|urn| urn.starts_with("urn:li:"))
            .ok_or_else(|| {
                PublishError::Unavailable("the post's answer has no x-restli-id".into())
            })?;
        Ok(Outcome::Published(published(urn)))
    }

    async fn find(
        &self,
        post: &PostContext<'_>,
        checkpoint: &Value,
    ) -> Result<Option<Outcome>, PublishError> {
        let media = Self::media(checkpoint)?;
        let path = format!(
            "/rest/posts?q=author&author={}&count=20&sortBy=LAST_MODIFIED",
            segment(post.account)
        );
        let answer = self
            .json_call(reqwest::Method::GET, &path, post.access_token, None)
            .await?;
        let posts: Value = parse(&answer, "the author's posts")?;
        let found = posts["elements"].as_array().and_then(|elements| {
            elements
                .iter()
                .find(|p| p["content"]["media"]["id"].as_str() == Some(media))
        });
        Ok(found
            .and_then(|p| p["id"].as_str())
            .map(|urn| Outcome::Published(published(urn))))
    }
}

fn published(urn: &str) -> Published {
    Published {
        remote_id: urn.to_owned(),
        url: Some(format!("https://www.linkedin.com/feed/update/{urn}/")),
    }
}
