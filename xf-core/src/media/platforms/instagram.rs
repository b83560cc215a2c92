//! Instagram through the Instagram Graph API's content publishing: the platform pulls the
//! media from a signed URL.
//!
//! - **start**: `POST /{ig-user-id}/media` with `media_type=REELS` and `video_url` (videos)
//!   or `image_url` (images), the `caption`, and the token: the answer's `id` is the
//!   container, stored. A carousel first makes one container per image (`image_url` with
//!   `is_carousel_item=true`, each id stored as it comes), then the carousel's own
//!   (`media_type=CAROUSEL`, its `children` comma-separated in order, and the `caption`).
//! - **poll**: `GET /{container}?fields=status_code` until `FINISHED` (`IN_PROGRESS` waits;
//!   `ERROR` and `EXPIRED` are refusals).
//! - **finalize**: `POST /{ig-user-id}/media_publish?creation_id={container}`: the answer's
//!   `id` is the `mediaId`; its `permalink` is read for the URL.
//! - **find**: the container's `status_code`: `PUBLISHED` means it went out, and the
//!   account's recent media (`GET /{ig-user-id}/media`) give its id (the newest with this
//!   caption); `FINISHED` means it did not (publish again).
//! - **tokens**: Instagram's tokens are not refreshed with a refresh token; a `190` (invalid
//!   token) disconnects the channel.

use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{json as parse, send, DEFAULT_TIMEOUT};
use crate::connect::{oauth, Account, ConnectFailure, Grant, Provider};
use crate::media::publish::{
    Outcome, PollOutcome, PostContext, PublishError, Published, PublishedPost, Publisher,
    TokenGrant,
};
use crate::media::Platform;
use crate::net::Answer;

/// The Graph API's base, with its version.
pub const GRAPH_BASE_URL: &str = "https://graph.facebook.com/v21.0";
/// Facebook Login's authorization page, of the same version.
pub const AUTHORIZE_URL: &str = "https://www.facebook.com/v21.0/dialog/oauth";
/// What a connect link asks for, comma-separated: finding the Pages and their Instagram
/// professional accounts, publishing to them, and posting a first comment.
pub const CONNECT_SCOPES: &str = "instagram_basic,instagram_content_publish,\
    instagram_manage_comments,pages_show_list,pages_read_engagement";

/// Where the Graph API is.
#[derive(Debug, Clone)]
pub struct InstagramConfig {
    /// The Graph API's base, version included (default [`GRAPH_BASE_URL`]).
    pub graph_base_url: String,
    /// The Facebook app connect links authorize with (its app id and secret); publishing
    /// needs none.
    pub app: Option<super::OAuthApp>,
    /// Facebook Login's authorization page (default [`AUTHORIZE_URL`]).
    pub authorize_url: String,
    /// How long to wait between status checks of a container (default 5 s).
    pub poll_interval: Duration,
    /// Longest wait for one answer.
    pub timeout: Duration,
}

impl Default for InstagramConfig {
    fn default() -> Self {
        InstagramConfig {
            graph_base_url: GRAPH_BASE_URL.to_owned(),
            app: None,
            authorize_url: AUTHORIZE_URL.to_owned(),
            poll_interval: Duration::from_secs(5),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// The Instagram client.
#[derive(Debug, Clone)]
pub struct Instagram {
    config: InstagramConfig,
    client: reqwest::Client,
}

#[derive(Deserialize)]
struct GraphErrorAnswer {
    error: GraphError,
}

#[derive(Deserialize)]
struct GraphError {
    message: Option<String>,
    code: Option<i64>,
    error_subcode: Option<i64>,
}

/// A Graph API error by its `code`: 190 an invalid token, 4/17/32/613 and 80002 rate
/// limits, 1/2 transient, anything else a refusal with its code and message.
fn graph_error(answer: &Answer) -> PublishError {
    let parsed: Option<GraphErrorAnswer> = serde_json::from_slice(&answer.body).ok();
    let (code, subcode, message) = parsed
        .map(|a| (a.error.code, a.error.error_subcode, a.error.message))
        .unwrap_or_default();
    let message = message.unwrap_or_else(|| format!("HTTP {}", answer.status));
    let code_text = match (code, subcode) {
        (Some(code), Some(sub)) => format!("{code}/{sub}"),
        (Some(code), None) => code.to_string(),
        _ => format!("http_{}", answer.status),
    };
    match code {
        Some(190) => PublishError::Unauthorized(format!("{code_text}: {message}")),
        Some(4 | 17 | 32 | 613 | 80002) => PublishError::RateLimited {
            message: format!("{code_text}: {message}"),
            retry_after: answer.retry_after,
        },
        Some(1 | 2) => PublishError::Unavailable(format!("{code_text}: {message}")),
        _ if answer.status >= 500 => {
            PublishError::Unavailable(format!("HTTP {}: {message}", answer.status))
        }
        _ => PublishError::Rejected {
            code: code_text,
            message,
        },
    }
}

impl Instagram {
    /// The client of `config`.
    pub fn new(config: InstagramConfig) -> Self {
        let client = crate::net::client(config.timeout);
        Instagram { config, client }
    }

    fn url(&self, path: &str) -> String {
        format!(
            "{}/{path}",
            self.config.graph_base_url.trim_end_matches('/')
        )
    }

    /// Sends a Graph API call; its JSON, or the error it is.
    async fn call(
        &self,
        request: reqwest::RequestBuilder,
        what: &str,
    ) -> Result<Value, PublishError> {
        let answer = send(request).await?;
        if !answer.is_success() {
            return Err(graph_error(&answer));
        }
        parse(&answer, what)
    }

    fn container(checkpoint: &Value) -> Result<&str, PublishError> {
        checkpoint
            .get("container")
            .and_then(Value::as_str)
            .ok_or_else(|| PublishError::rejected("no_container", "no media container"))
    }

    async fn status(
        &self,
        post: &PostContext<'_>,
        container: &str,
    ) -> Result<String, PublishError> {
        let request = self.client.get(self.url(container)).query(&[
            ("fields", "status_code,status"),
            ("access_token", post.access_token),
        ]);
        let answer = self.call(request, "the container's status").await?;
        answer
            .get("status_code")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| PublishError::Unavailable("the container has no status_code".into()))
    }

    /// Creates a container: `POST /{ig-user-id}/media` with `form` and the token; its id.
    async fn create_container(
        &self,
        post: &PostContext<'_>,
        mut form: Vec<(&'static str, String)>,
    ) -> Result<String, PublishError> {
        form.push(("access_token", post.access_token.to_owned()));
        let request = self
            .client
            .post(self.url(&format!("{}/media", post.account)))
            .form(&form);
        let answer = self.call(request, "creating the media container").await?;
        answer
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| PublishError::Unavailable("the container answer has no id".into()))
    }

    /// A carousel's containers: one per image still without one (each stored as it comes,
    /// so a restart makes only the missing ones), then the carousel's, stored as
    /// `container`.
    async fn start_carousel(
        &self,
        post: &PostContext<'_>,
        checkpoint: &mut Value,
    ) -> Result<(), PublishError> {
        let mut children: Vec<String> = checkpoint
            .get("children")
            .and_then(Value::as_array)
            .map(|ids| {
                ids.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        for image in post.carousel.iter().skip(children.len()) {
            let form = vec![
                ("image_url", image.url.to_owned()),
                ("is_carousel_item", "true".to_owned()),
            ];
            children.push(self.create_container(post, form).await?);
            *checkpoint = json!({"children": children});
            post.save(checkpoint).await?;
        }
        let mut form = vec![
            ("media_type", "CAROUSEL".to_owned()),
            ("children", children.join(",")),
        ];
        if let Some(caption) = post.caption("caption") {
            form.push(("caption", caption.to_owned()));
        }
        let container = self.create_container(post, form).await?;
        *checkpoint = json!({"container": container, "children": children});
        Ok(())
    }

    async fn permalink(&self, post: &PostContext<'_>, media_id: &str) -> Option<String> {
        let request = self
            .client
            .get(self.url(media_id))
            .query(&[("fields", "permalink"), ("access_token", post.access_token)]);
        let answer = self.call(request, "the media's permalink").await.ok()?;
        answer.get("permalink")?.as_str().map(str::to_owned)
    }
}

#[async_trait]
impl Publisher for Instagram {
    fn platform(&self) -> Platform {
        Platform::Instagram
    }

    async fn refresh(&self, _refresh_token: &str) -> Result<TokenGrant, PublishError> {
        Err(PublishError::Disconnected(
            "Instagram tokens are not refreshed with a refresh token".into(),
        ))
    }

    async fn start(
        &self,
        post: &PostContext<'_>,
        checkpoint: &mut Value,
    ) -> Result<(), PublishError> {
        if checkpoint.get("container").is_some() {
            return Ok(());
        }
        if !post.carousel.is_empty() {
            return self.start_carousel(post, checkpoint).await;
        }
        let mut form = Vec::new();
        if post.is_video() {
            form.push(("media_type", "REELS".to_owned()));
            form.push(("video_url", post.media_url.to_owned()));
            form.push(("share_to_feed", "true".to_owned()));
            if let Some(cover) = post.cover_ms() {
                // The Reel's cover: the frame this many milliseconds in (default 0).
                form.push(("thumb_offset", cover.to_string()));
            }
        } else {
            form.push(("image_url", post.media_url.to_owned()));
        }
        if let Some(caption) = post.caption("caption") {
            form.push(("caption", caption.to_owned()));
        }
        let container = self.create_container(post, form).await?;
        *checkpoint = json!({"container": container});
        Ok(())
    }

    async fn poll(
        &self,
        post: &PostContext<'_>,
        checkpoint: &mut Value,
    ) -> Result<PollOutcome, PublishError> {
        let container = Self::container(checkpoint)?.to_owned();
        match self.status(post, &container).await?.as_str() {
            "FINISHED" | "PUBLISHED" => Ok(PollOutcome::Ready),
            "IN_PROGRESS" => Ok(PollOutcome::Wait(self.config.poll_interval)),
            other => Err(PublishError::rejected(
                format!("container_{}", other.to_ascii_lowercase()),
                format!("Instagram could not process the media (status {other})"),
            )),
        }
    }

    async fn finalize(
        &self,
        post: &PostContext<'_>,
        checkpoint: &mut Value,
    ) -> Result<Outcome, PublishError> {
        let container = Self::container(checkpoint)?.to_owned();
        let request = self
            .client
            .post(self.url(&format!("{}/media_publish", post.account)))
            .form(&[
                ("creation_id", container.as_str()),
                ("access_token", post.access_token),
            ]);
        let answer = self.call(request, "media_publish").await?;
        let id = answer
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| PublishError::Unavailable("media_publish answered no id".into()))?
            .to_owned();
        let url = self.permalink(post, &id).await;
        Ok(Outcome::Published(Published { remote_id: id, url }))
    }

    async fn find(
        &self,
        post: &PostContext<'_>,
        checkpoint: &Value,
    ) -> Result<Option<Outcome>, PublishError> {
        let container = Self::container(checkpoint)?.to_owned();
        match self.status(post, &container).await?.as_str() {
            "PUBLISHED" => {}
            "IN_PROGRESS" => return Ok(Some(Outcome::Pending(self.config.poll_interval))),
            _ => return Ok(None),
        }
        let request = self
            .client
            .get(self.url(&format!("{}/media", post.account)))
            .query(&[
                ("fields", "id,caption,permalink,timestamp"),
                ("limit", "25"),
                ("access_token", post.access_token),
            ]);
        let answer = self.call(request, "the account's media").await?;
        let caption = post.caption("caption");
        let media = answer
            .get("data")
            .and_then(Value::as_array)
            .and_then(|items| {
                items
                    .iter()
                    .find(|m| m.get("caption").and_then(Value::as_str).map(str::trim) == caption)
            })
            .ok_or_else(|| {
                PublishError::Unavailable(
                    "the container is published but its media is not among the account's \
                     recent media yet"
                        .into(),
                )
            })?;
        let id = media
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| PublishError::Unavailable("a media item has no id".into()))?;
        Ok(Some(Outcome::Published(Published {
            remote_id: id.to_owned(),
            url: media
                .get("permalink")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })))
    }

    /// The first comment: `POST /{ig-media-id}/comments` with the `message`; the comment's
    /// `id`. It needs the `instagram_manage_comments` permission, which channels connected
    /// before xf asked for it lack (the Graph API refuses: connect them again).
    async fn comment(&self, post: &PublishedPost<'_>, text: &str) -> Result<String, PublishError> {
        let request = self
            .client
            .post(self.url(&format!("{}/comments", post.remote_id)))
            .form(&[("message", text), ("access_token", post.access_token)]);
        let created = self.call(request, "creating the comment").await?;
        created["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| PublishError::Unavailable("the comment's answer has no id".into()))
    }
}

/// Connect links for Instagram, with Facebook Login (what the Graph API this client publishes
/// through takes): the code gives a short-lived user token, exchanged for a long-lived one;
/// the Pages it manages (`me/accounts`) carry their Instagram professional accounts, each
/// stored as a channel with its Page's token (which does not expire when it comes from a
/// long-lived user token).
impl Instagram {
    /// The authorization-code flow of connect links: Meta's token endpoint is a `GET`, and
    /// Facebook Login for the web documents no PKCE.
    fn flow(&self) -> oauth::CodeFlow<'_> {
        let (client_id, client_secret) = self
            .config
            .app
            .as_ref()
            .map(|app| (app.client_id.as_str(), app.client_secret.as_str()))
            .unwrap_or_default();
        oauth::CodeFlow {
            authorize_url: &self.config.authorize_url,
            token_url: format!("{}/oauth/access_token", self.base()).into(),
            client_param: "client_id",
            client_id,
            client_secret,
            basic_auth: false,
            token_in_query: true,
            scopes: CONNECT_SCOPES,
            pkce: false,
            extra: &[],
        }
    }

    fn base(&self) -> &str {
        self.config.graph_base_url.trim_end_matches('/')
    }

    /// The accounts a connect link's grant reaches.
    async fn connect_accounts(&self, grant: &Grant) -> Result<Vec<Account>, ConnectFailure> {
        let flow = self.flow();
        let exchange = self.client.get(flow.token_url.as_ref()).query(&[
            ("grant_type", "fb_exchange_token"),
            ("client_id", flow.client_id),
            ("client_secret", flow.client_secret),
            ("fb_exchange_token", grant.access_token.as_str()),
        ]);
        let long_lived = oauth::token_answer(&oauth::send(exchange).await?)?;
        let pages = self
            .client
            .get(format!("{}/me/accounts", self.base()))
            .query(&[
                (
                    "fields",
                    "id,name,access_token,instagram_business_account{id,username}",
                ),
                ("access_token", long_lived.access_token.as_str()),
            ]);
        let pages: Value =
            oauth::json_answer(&oauth::send(pages).await?, "Facebook's me/accounts")?;
        Ok(pages["data"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|page| {
                let account = &page["instagram_business_account"];
                let id = account["id"].as_str()?;
                Some(Account {
                    account_id: id.to_owned(),
                    name: account["username"]
                        .as_str()
                        .or(page["name"].as_str())
                        .unwrap_or(id)
                        .to_owned(),
                    thumbnail: None,
                    access_token: page["access_token"].as_str().map(str::to_owned),
                    default_board: None,
                })
            })
            .collect())
    }
}

oauth::code_flow_connector!(Instagram, Provider::Instagram);
