//! Pinterest through the API v5.
//!
//! - **start** (videos): `POST /v5/media` registers an upload (`media_type: video`); the
//!   answer's `upload_url` and `upload_parameters` take the file as a `multipart/form-data`
//!   `POST` (the parameters as fields, then `file`). The registration is stored first, so a
//!   restart uploads again to the same registration. Images need no start: Pinterest pulls
//!   them from the signed URL.
//! - **poll**: `GET /v5/media/{media_id}` until `succeeded` (`failed` is a refusal).
//! - **finalize**: `POST /v5/pins` on the board (`boardId` setting) with the title,
//!   description and `media_source` (`video_id` with the media and a cover frame,
//!   `image_url` with the signed URL, or for a carousel pin `multiple_image_urls`, its
//!   `items` the images' signed URLs in order); the pin's `id` comes back.
//! - **find**: the board's recent pins (`GET /v5/boards/{board_id}/pins`) with this title
//!   and description.
//! - **tokens**: `POST /v5/oauth/token` with HTTP Basic client authentication and the
//!   refresh-token grant.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{by_status, json as parse, read, send, token_grant, OAuthApp, DEFAULT_TIMEOUT};
use crate::connect::{oauth, Account, ConnectFailure, Grant, Provider};
use crate::media::publish::{
    Outcome, PollOutcome, PostContext, PublishError, Published, PublishedPost, Publisher,
    TokenGrant,
};
use crate::media::Platform;
use crate::net::Answer;

/// The API's base.
pub const API_BASE_URL: &str = "https://api.pinterest.com";
/// Pinterest's authorization page.
pub const AUTHORIZE_URL: &str = "https://www.pinterest.com/oauth/";
/// What a connect link asks for, comma-separated as Pinterest wants: the account, its boards,
/// and pinning (the scopes `POST /v5/pins` and `/v5/media` need).
pub const CONNECT_SCOPES: &str = "user_accounts:read,boards:read,boards:write,pins:read,pins:write";

/// The host's Pinterest app and where Pinterest is.
#[derive(Debug, Clone)]
pub struct PinterestConfig {
    /// The app that refreshes the channels' tokens.
    pub app: OAuthApp,
    /// The API's base (default [`API_BASE_URL`]); the token endpoint is under it.
    pub api_base_url: String,
    /// The authorization page connect links send users to (default [`AUTHORIZE_URL`]).
    pub authorize_url: String,
    /// How long to wait between status reads (default 5 s).
    pub poll_interval: std::time::Duration,
    /// Longest wait for one answer.
    pub timeout: std::time::Duration,
}

impl PinterestConfig {
    /// Pinterest's endpoints with this app.
    pub fn new(client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        PinterestConfig {
            app: OAuthApp::new(client_id, client_secret),
            api_base_url: API_BASE_URL.to_owned(),
            authorize_url: AUTHORIZE_URL.to_owned(),
            poll_interval: std::time::Duration::from_secs(5),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// The Pinterest client.
#[derive(Debug, Clone)]
pub struct Pinterest {
    config: PinterestConfig,
    client: reqwest::Client,
}

/// An API error: `{code, message}`.
fn api_error(answer: &Answer) -> PublishError {
    let parsed: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    let code = parsed["code"]
        .as_i64()
        .map(|c| c.to_string())
        .unwrap_or_else(|| format!("http_{}", answer.status));
    let message = parsed["message"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| format!("HTTP {}", answer.status));
    by_status(answer, code, message)
}

impl Pinterest {
    /// The client of `config`.
    pub fn new(config: PinterestConfig) -> Self {
        let client = crate::net::client(config.timeout);
        Pinterest { config, client }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.config.api_base_url.trim_end_matches('/'))
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> Result<Value, PublishError> {
        let mut request = self
            .client
            .request(method, self.url(path))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        let answer = send(request).await?;
        if !answer.is_success() {
            return Err(api_error(&answer));
        }
        parse(&answer, path)
    }

    fn board<'a>(post: &'a PostContext<'_>) -> Result<&'a str, PublishError> {
        post.setting("boardId")
            .or(post.default_board)
            .ok_or_else(|| {
                PublishError::rejected(
                    "no_board",
                    "a pin needs a boardId, and the channel has no default board",
                )
            })
    }

    fn texts(post: &PostContext<'_>) -> (String, Option<String>) {
        (
            post.title().chars().take(100).collect(),
            post.caption("description").map(str::to_owned),
        )
    }
}

#[async_trait]
impl Publisher for Pinterest {
    fn platform(&self) -> Platform {
        Platform::Pinterest
    }

    async fn refresh(&self, refresh_token: &str) -> Result<TokenGrant, PublishError> {
        let request = self
            .client
            .post(self.url("/v5/oauth/token"))
            .basic_auth(
                &self.config.app.client_id,
                Some(&self.config.app.client_secret),
            )
            .form(&[
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
            return Ok(());
        }
        if checkpoint["mediaId"].is_null() {
            let registered = self
                .call(
                    reqwest::Method::POST,
                    "/v5/media",
                    post.access_token,
                    Some(json!({"media_type": "video"})),
                )
                .await?;
            if registered["media_id"].as_str().is_none()
                || registered["upload_url"].as_str().is_none()
            {
                return Err(PublishError::Unavailable(
                    "the media registration has no media_id and upload_url".into(),
                ));
            }
            *checkpoint = json!({"mediaId": registered["media_id"],
                "uploadUrl": registered["upload_url"],
                "uploadParameters": registered["upload_parameters"]});
            post.save(checkpoint).await?;
        }
        let upload_url = checkpoint["uploadUrl"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let mut form = reqwest::multipart::Form::new();
        if let Some(fields) = checkpoint["uploadParameters"].as_object() {
            for (name, value) in fields {
                let text = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned);
                form = form.text(name.clone(), text);
            }
        }
        let bytes = read(post.file, 0, post.file.len()).await?;
        let part = reqwest::multipart::Part::bytes(bytes)
            .file_name(post.item.file.name.clone())
            .mime_str(post.content_type())
            .map_err(|e| PublishError::Unavailable(e.to_string()))?;
        let answer = send(
            self.client
                .post(upload_url)
                .multipart(form.part("file", part)),
        )
        .await?;
        if !answer.is_success() {
            return Err(PublishError::Unavailable(format!(
                "the media upload answered HTTP {}",
                answer.status
            )));
        }
        Ok(())
    }

    async fn poll(
        &self,
        post: &PostContext<'_>,
        checkpoint: &mut Value,
    ) -> Result<PollOutcome, PublishError> {
        let Some(media_id) = checkpoint["mediaId"].as_str() else {
            return Ok(PollOutcome::Ready);
        };
        let status = self
            .call(
                reqwest::Method::GET,
                &format!("/v5/media/{media_id}"),
                post.access_token,
                None,
            )
            .await?;
        match status["status"].as_str().unwrap_or("") {
            "succeeded" => Ok(PollOutcome::Ready),
            "failed" => Err(PublishError::rejected(
                "media_failed",
                "Pinterest could not process the video",
            )),
            _ => Ok(PollOutcome::Wait(self.config.poll_interval)),
        }
    }

    async fn finalize(
        &self,
        post: &PostContext<'_>,
        checkpoint: &mut Value,
    ) -> Result<Outcome, PublishError> {
        let (title, description) = Self::texts(post);
        let media_source = match checkpoint["mediaId"].as_str() {
            // The cover is the frame at a whole second: the chosen one's (rounded down), else
            // the first second's.
            Some(media_id) => json!({"source_type": "video_id", "media_id": media_id,
                "cover_image_key_frame_time": post.cover_ms().map_or(1, |ms| ms / 1000)}),
            None if !post.carousel.is_empty() => {
                let items: Vec<Value> = post
                    .carousel
                    .iter()
                    .map(|image| json!({"url": image.url}))
                    .collect();
                json!({"source_type": "multiple_image_urls", "items": items, "index": 0})
            }
            None => json!({"source_type": "image_url", "url": post.media_url}),
        };
        let mut body = json!({"board_id": Self::board(post)?, "title": title,
            "media_source": media_source});
        if let Some(description) = description {
            body["description"] = json!(description);
        }
        let pin = self
            .call(
                reqwest::Method::POST,
                "/v5/pins",
                post.access_token,
                Some(body),
            )
            .await?;
        let id = pin["id"]
            .as_str()
            .ok_or_else(|| PublishError::Unavailable("the pin's answer has no id".into()))?;
        Ok(Outcome::Published(published(id)))
    }

    async fn find(
        &self,
        post: &PostContext<'_>,
        _checkpoint: &Value,
    ) -> Result<Option<Outcome>, PublishError> {
        let (title, description) = Self::texts(post);
        let path = format!("/v5/boards/{}/pins?page_size=25", Self::board(post)?);
        let pins = self
            .call(reqwest::Method::GET, &path, post.access_token, None)
            .await?;
        let found = pins["items"].as_array().and_then(|items| {
            items.iter().find(|pin| {
                pin["title"].as_str() == Some(title.as_str())
                    && pin["description"].as_str() == description.as_deref()
            })
        });
        Ok(found
            .and_then(|pin| pin["id"].as_str())
            .map(|id| Outcome::Published(published(id))))
    }

    /// Deletes the pin: `DELETE /v5/pins/{pin_id}`, answered `204`; a `404` is a pin that is
    /// gone already.
    async fn delete(&self, post: &PublishedPost<'_>) -> Result<(), PublishError> {
        let pin: String = url::form_urlencoded::byte_serialize(post.remote_id.as_bytes()).collect();
        let request = self
            .client
            .delete(self.url(&format!("/v5/pins/{pin}")))
            .bearer_auth(post.access_token);
        let answer = send(request).await?;
        match answer.status {
            200..=299 | 404 => Ok(()),
            _ => Err(api_error(&answer)),
        }
    }
}

fn published(id: &str) -> Published {
    Published {
        remote_id: id.to_owned(),
        url: Some(format!("https://www.pinterest.com/pin/{id}/")),
    }
}

/// Connect links for Pinterest (no PKCE, scopes comma-separated, the app authenticated with
/// HTTP Basic at the token endpoint): `user_account` names the account.
impl Pinterest {
    /// The authorization-code flow of connect links.
    fn flow(&self) -> oauth::CodeFlow<'_> {
        oauth::CodeFlow {
            authorize_url: &self.config.authorize_url,
            token_url: self.url("/v5/oauth/token").into(),
            client_param: "client_id",
            client_id: &self.config.app.client_id,
            client_secret: &self.config.app.client_secret,
            basic_auth: true,
            token_in_query: false,
            scopes: CONNECT_SCOPES,
            pkce: false,
            extra: &[],
        }
    }

    /// The accounts a connect link's grant reaches: the user, whose first board (`boards`,
    /// in Pinterest's order) becomes its default board.
    async fn connect_accounts(&self, grant: &Grant) -> Result<Vec<Account>, ConnectFailure> {
        let account: Value = oauth::get_json(
            &self.client,
            &self.url("/v5/user_account"),
            &grant.access_token,
            "Pinterest's user_account",
        )
        .await?;
        let id = account["id"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| account["id"].as_u64().map(|id| id.to_string()));
        let Some(id) = id.filter(|id| !id.is_empty()) else {
            return Ok(Vec::new());
        };
        let boards: Value = oauth::get_json(
            &self.client,
            &self.url("/v5/boards?page_size=25"),
            &grant.access_token,
            "Pinterest's boards",
        )
        .await?;
        let first_board = boards["items"][0]["id"].as_str().map(str::to_owned);
        Ok(vec![Account {
            name: account["username"].as_str().unwrap_or(&id).to_owned(),
            thumbnail: account["profile_image"].as_str().map(str::to_owned),
            account_id: id,
            access_token: None,
            default_board: first_board,
        }])
    }
}

oauth::code_flow_connector!(Pinterest, Provider::Pinterest);
