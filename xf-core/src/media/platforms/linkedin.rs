//! LinkedIn through the versioned REST API (`LinkedIn-Version`, Rest.li 2.0).
//!
//! - **start** (videos): `POST /rest/videos?action=initializeUpload` with the owner and the
//!   size; the answer's `uploadInstructions` say which bytes go to which URL. Each part is
//!   `PUT` exactly as instructed (`firstByte` to `lastByte`) and its `ETag` kept; then
//!   `POST /rest/videos?action=finalizeUpload` with the video, the upload token and the
//!   ETags in order. The instructions and the ETags so far are stored, so a restart sends
//!   only the parts still missing. (Images: `POST /rest/images?action=initializeUpload`
//!   and one `PUT`; a carousel does that for each image in turn, storing each image's URN and
//!   whether its bytes went.)
//! - **poll**: `GET /rest/videos/{urn}` (or `/rest/images/{urn}`, each image of a carousel)
//!   until `AVAILABLE`; `PROCESSING_FAILED` is a refusal.
//! - **finalize**: `POST /rest/posts` with the author, the commentary (in LinkedIn's
//!   "little" text format: see [`little_text`]), public visibility, the main feed, and the
//!   media (`content.media`, or for a carousel `content.multiImage.images`, the images'
//!   URNs in order: the MultiImage API); the post's URN comes back in `x-restli-id`.
//! - **find**: the author's recent posts (`GET /rest/posts?q=author`) with this media (a
//!   carousel's: its first image).
//! - **tokens**: `POST /oauth/v2/accessToken` with the refresh-token grant.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{by_status, json as parse, read, send, OAuthApp, DEFAULT_TIMEOUT};
use crate::connect::{oauth, Account, ConnectFailure, Grant, Provider};
use crate::media::publish::{
    Outcome, PollOutcome, PostContext, PublishError, Published, PublishedPost, Publisher,
    TokenGrant,
};
use crate::media::Platform;
use crate::net::Answer;

/// The REST API's base.
pub const API_BASE_URL: &str = "https://api.linkedin.com";
/// The OAuth token endpoint.
pub const TOKEN_URL: &str = "https://www.linkedin.com/oauth/v2/accessToken";
/// LinkedIn's authorization page.
pub const AUTHORIZE_URL: &str = "https://www.linkedin.com/oauth/v2/authorization";
/// What a connect link asks for, space-separated: the member's identity (OpenID Connect) and
/// posting as the member.
pub const CONNECT_SCOPES: &str = "openid profile w_member_social";
/// What it asks for besides when organizations are connected too (the Community Management
/// API's scopes): the organizations the member administers, and posting as them.
pub const ORGANIZATION_SCOPES: &str = "r_organization_admin w_organization_social";
/// Both.
const CONNECT_AND_ORGANIZATION_SCOPES: &str =
    "openid profile w_member_social r_organization_admin w_organization_social";
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
    /// The authorization page connect links send users to (default [`AUTHORIZE_URL`]).
    pub authorize_url: String,
    /// Whether connect links also connect the organizations the member administers (the app
    /// needs the Community Management API for [`ORGANIZATION_SCOPES`]); default `false`.
    pub connect_organizations: bool,
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
            authorize_url: AUTHORIZE_URL.to_owned(),
            connect_organizations: false,
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

    /// A carousel's images in the checkpoint: `{image, uploadUrl, uploaded}` each, in order.
    fn carousel_images(checkpoint: &Value) -> Vec<Value> {
        checkpoint["images"].as_array().cloned().unwrap_or_default()
    }

    /// `POST /rest/images?action=initializeUpload` for the account: the image's URN and where
    /// its bytes go.
    async fn initialize_image(&self, post: &PostContext<'_>) -> Result<Value, PublishError> {
        let body = json!({"initializeUploadRequest": {"owner": post.account}});
        let answer = self
            .json_call(
                reqwest::Method::POST,
                "/rest/images?action=initializeUpload",
                post.access_token,
                Some(body),
            )
            .await?;
        let value = parse::<Value>(&answer, "initializeUpload")?["value"].clone();
        match (value["image"].as_str(), value["uploadUrl"].as_str()) {
            (Some(image), Some(url)) => {
                Ok(json!({"image": image, "uploadUrl": url, "uploaded": false}))
            }
            _ => Err(PublishError::Unavailable(
                "initializeUpload answered no image URN or upload URL".into(),
            )),
        }
    }

    /// `PUT`s `bytes` to an upload URL LinkedIn gave; the answer's `ETag`.
    async fn put(&self, token: &str, url: &str, bytes: Vec<u8>) -> Result<String, PublishError> {
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
        Ok(answer.header("etag").unwrap_or("").to_owned())
    }

    /// A carousel's uploads: each image still without a URN is initialized, and each whose
    /// bytes did not go is uploaded, the checkpoint stored after every step.
    async fn start_carousel(
        &self,
        post: &PostContext<'_>,
        checkpoint: &mut Value,
    ) -> Result<(), PublishError> {
        let mut images = Self::carousel_images(checkpoint);
        for (n, image) in post.carousel.iter().enumerate() {
            if images.len() <= n {
                images.push(self.initialize_image(post).await?);
                *checkpoint = json!({"images": images});
                post.save(checkpoint).await?;
            }
            if images[n]["uploaded"] != json!(true) {
                let url = images[n]["uploadUrl"].as_str().unwrap_or("").to_owned();
                let bytes = read(image.bytes, 0, image.bytes.len()).await?;
                self.put(post.access_token, &url, bytes).await?;
                images[n]["uploaded"] = json!(true);
                *checkpoint = json!({"images": images});
                post.save(checkpoint).await?;
            }
        }
        Ok(())
    }

    /// The status of one uploaded image or video: ready, failed or still processing.
    async fn media_status(
        &self,
        post: &PostContext<'_>,
        resource: &str,
        media: &str,
    ) -> Result<PollOutcome, PublishError> {
        let path = format!("/rest/{resource}/{}", segment(media));
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
        if !post.carousel.is_empty() {
            return self.start_carousel(post, checkpoint).await;
        }
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
            let etag = self.put(token, url, bytes).await?;
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
        if !post.carousel.is_empty() {
            for image in Self::carousel_images(checkpoint) {
                let urn = image["image"].as_str().unwrap_or("");
                if let wait @ PollOutcome::Wait(_) = self.media_status(post, "images", urn).await? {
                    return Ok(wait);
                }
            }
            return Ok(PollOutcome::Ready);
        }
        let media = Self::media(checkpoint)?;
        self.media_status(post, Self::resource(post), media).await
    }

    async fn finalize(
        &self,
        post: &PostContext<'_>,
        checkpoint: &mut Value,
    ) -> Result<Outcome, PublishError> {
        let content = if post.carousel.is_empty() {
            json!({"media": {"id": Self::media(checkpoint)?, "title": post.title()}})
        } else {
            let images: Vec<Value> = Self::carousel_images(checkpoint)
                .iter()
                .map(|image| json!({"id": image["image"]}))
                .collect();
            if images.len() != post.carousel.len() {
                return Err(PublishError::rejected(
                    "no_media",
                    "the images are not uploaded",
                ));
            }
            json!({"multiImage": {"images": images}})
        };
        let body = json!({
            "author": post.account,
            "commentary": little_text(post.caption("comment").unwrap_or("")),
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
        let carousel = Self::carousel_images(checkpoint);
        let media = match carousel.first() {
            Some(first) => first["image"].as_str().unwrap_or(""),
            None => Self::media(checkpoint)?,
        };
        let path = format!(
            "/rest/posts?q=author&author={}&count=20&sortBy=LAST_MODIFIED",
            segment(post.account)
        );
        let answer = self
            .json_call(reqwest::Method::GET, &path, post.access_token, None)
            .await?;
        let posts: Value = parse(&answer, "the author's posts")?;
        let found = posts["elements"].as_array().and_then(|elements| {
            elements.iter().find(|p| {
                let content = &p["content"];
                let id = if carousel.is_empty() {
                    &content["media"]["id"]
                } else {
                    &content["multiImage"]["images"][0]["id"]
                };
                id.as_str() == Some(media)
            })
        });
        Ok(found
            .and_then(|p| p["id"].as_str())
            .map(|urn| Outcome::Published(published(urn))))
    }

    /// The first comment: `POST /rest/socialActions/{urn}/comments` (the URN encoded as one
    /// segment) with the account as `actor`, the post as `object` and the text, escaped for
    /// the "little" format, as `message.text`; the comment's id (the body's `id`, else
    /// `x-restli-id`).
    async fn comment(&self, post: &PublishedPost<'_>, text: &str) -> Result<String, PublishError> {
        let path = format!("/rest/socialActions/{}/comments", segment(post.remote_id));
        let body = json!({"actor": post.account, "object": post.remote_id,
            "message": {"text": little_text(text)}});
        let answer = self
            .json_call(reqwest::Method::POST, &path, post.access_token, Some(body))
            .await?;
        let created: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
        created["id"]
            .as_str()
            .or(answer.header("x-restli-id"))
            .map(str::to_owned)
            .ok_or_else(|| PublishError::Unavailable("the comment's answer has no id".into()))
    }

    /// Deletes the post: `DELETE /rest/posts/{urn}` (the URN encoded as one segment) with
    /// `X-RestLi-Method: DELETE`, answered `204`, as LinkedIn answers a post deleted already
    /// too; a `404` is one that is gone.
    async fn delete(&self, post: &PublishedPost<'_>) -> Result<(), PublishError> {
        let path = format!("/rest/posts/{}", segment(post.remote_id));
        let request = self
            .request(reqwest::Method::DELETE, &path, post.access_token)
            .header("x-restli-method", "DELETE");
        let answer = send(request).await?;
        match answer.status {
            200..=299 | 404 => Ok(()),
            _ => Err(api_error(&answer)),
        }
    }
}

/// The characters LinkedIn's "little" text format reserves for its elements and templates
/// (mentions, hashtags, formatting): as plain text each takes a backslash before it.
const LITTLE_RESERVED: &[char] = &[
    '\\', '|', '{', '}', '@', '[', ']', '(', ')', '<', '>', '#', '*', '_', '~',
];

/// `text` as plain text in LinkedIn's "little" format, which the Posts API reads commentary
/// (and comments) in: every reserved character is escaped, as LinkedIn otherwise cuts the
/// text at it or reads it as markup. One exception keeps what the writer meant: a `#` that
/// starts a word (`#launch`, a letter right after it) stays a hashtag, the format's
/// `HashtagElement`; a lone `#`, or one before a digit (`#1`), is escaped.
pub fn little_text(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len() + text.len() / 8);
    let mut chars = text.chars().peekable();
    let mut previous: Option<char> = None;
    while let Some(c) = chars.next() {
        let hashtag = c == '#'
            && !previous.is_some_and(char::is_alphanumeric)
            && chars.peek().is_some_and(|next| next.is_alphabetic());
        if LITTLE_RESERVED.contains(&c) && !hashtag {
            escaped.push('\\');
        }
        escaped.push(c);
        previous = Some(c);
    }
    escaped
}

fn published(urn: &str) -> Published {
    Published {
        remote_id: urn.to_owned(),
        url: Some(format!("https://www.linkedin.com/feed/update/{urn}/")),
    }
}

/// Connect links for LinkedIn (no PKCE for web apps, scopes space-separated): the member, from
/// OpenID Connect's `userinfo`, as `urn:li:person:{sub}`; and, when configured, the
/// organizations the member administers (`organizationAcls`), as `urn:li:organization:{id}`.
impl Linkedin {
    /// The authorization-code flow of connect links.
    fn flow(&self) -> oauth::CodeFlow<'_> {
        oauth::CodeFlow {
            authorize_url: &self.config.authorize_url,
            token_url: self.config.token_url.as_str().into(),
            client_param: "client_id",
            client_id: &self.config.app.client_id,
            client_secret: &self.config.app.client_secret,
            basic_auth: false,
            token_in_query: false,
            scopes: if self.config.connect_organizations {
                CONNECT_AND_ORGANIZATION_SCOPES
            } else {
                CONNECT_SCOPES
            },
            pkce: false,
            extra: &[],
        }
    }

    /// The accounts a connect link's grant reaches.
    async fn connect_accounts(&self, grant: &Grant) -> Result<Vec<Account>, ConnectFailure> {
        let base = self.config.api_base_url.trim_end_matches('/');
        let token = grant.access_token.as_str();
        let member: Value = oauth::get_json(
            &self.client,
            &format!("{base}/v2/userinfo"),
            token,
            "LinkedIn's userinfo",
        )
        .await?;
        let mut accounts = Vec::new();
        if let Some(sub) = member["sub"].as_str().filter(|s| !s.is_empty()) {
            accounts.push(Account {
                account_id: format!("urn:li:person:{sub}"),
                name: member["name"].as_str().unwrap_or(sub).to_owned(),
                thumbnail: member["picture"].as_str().map(str::to_owned),
                access_token: None,
                default_board: None,
            });
        }
        if !self.config.connect_organizations {
            return Ok(accounts);
        }
        let versioned = |url: String| {
            self.client
                .get(url)
                .header("linkedin-version", API_VERSION)
                .header("x-restli-protocol-version", "2.0.0")
        };
        let acls: Value = oauth::get_json_with(
            versioned(format!(
                "{base}/rest/organizationAcls?q=roleAssignee&role=ADMINISTRATOR&state=APPROVED"
            )),
            token,
            "LinkedIn's organizationAcls",
        )
        .await?;
        let organizations = acls["elements"].as_array().cloned().unwrap_or_default();
        for element in organizations {
            let Some(urn) = element["organization"].as_str() else {
                continue;
            };
            let Some(id) = urn.strip_prefix("urn:li:organization:") else {
                continue;
            };
            let organization: Value = oauth::get_json_with(
                versioned(format!("{base}/rest/organizations/{id}")),
                token,
                "LinkedIn's organizations",
            )
            .await?;
            accounts.push(Account {
                account_id: urn.to_owned(),
                name: organization["localizedName"]
                    .as_str()
                    .unwrap_or(urn)
                    .to_owned(),
                thumbnail: None,
                access_token: None,
                default_board: None,
            });
        }
        Ok(accounts)
    }
}

oauth::code_flow_connector!(Linkedin, Provider::Linkedin);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Reads little text back as LinkedIn shows it: a backslash makes the next character
    /// plain; an unescaped reserved character other than a hashtag's `#` is an error.
    fn shown(little: &str) -> Result<String, usize> {
        let mut text = String::new();
        let mut chars = little.char_indices().peekable();
        let mut previous: Option<char> = None;
        while let Some((at, c)) = chars.next() {
            if c == '\\' {
                let Some((_, next)) = chars.next() else {
                    return Err(at);
                };
                text.push(next);
                previous = Some(next);
                continue;
            }
            let hashtag = c == '#'
                && !previous.is_some_and(char::is_alphanumeric)
                && chars.peek().is_some_and(|(_, next)| next.is_alphabetic());
            if LITTLE_RESERVED.contains(&c) && !hashtag {
                return Err(at);
            }
            text.push(c);
            previous = Some(c);
        }
        Ok(text)
    }

    #[test]
    fn reserved_characters_are_escaped_and_hashtags_kept() {
        assert_eq!(little_text("Our talk (part 1)"), "Our talk \\(part 1\\)");
        assert_eq!(
            little_text("a_b *c* ~d~ <e> [f] {g} h|i @j \\k"),
            "a\\_b \\*c\\* \\~d\\~ \\<e\\> \\[f\\] \\{g\\} h\\|i \\@j \\\\k"
        );
        assert_eq!(
            little_text("#launch day, #1 pick, C# #"),
            "#launch day, \\#1 pick, C\\# \\#"
        );
        assert_eq!(little_text("plain text"), "plain text");
    }

    proptest! {
        #[test]
        fn any_text_reads_back_as_written(text in any::<String>()) {
            prop_assert_eq!(shown(&little_text(&text)), Ok(text));
        }

        #[test]
        fn reserved_heavy_text_reads_back_as_written(
            text in proptest::collection::vec(
                prop_oneof![
                    proptest::sample::select(LITTLE_RESERVED.to_vec()),
                    proptest::char::range('a', 'c'),
                    Just('1'),
                    Just(' '),
                ],
                0..40,
            ).prop_map(|chars| chars.into_iter().collect::<String>())
        ) {
            prop_assert_eq!(shown(&little_text(&text)), Ok(text));
        }
    }
}
