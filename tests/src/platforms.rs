//! A local stand-in of the social platforms' endpoints the publishing clients call, for
//! tests. It is a real HTTP server on a loopback port that checks each request against the
//! shapes the platforms document, answers with their documented shapes, and records what it
//! got, so tests can check what the clients sent.
//!
//! **YouTube** (under `/youtube`):
//! - `POST /token`: Google's refresh-token grant (form `client_id`, `client_secret`,
//!   `refresh_token`, `grant_type=refresh_token`); `invalid_grant` for an unknown or revoked
//!   refresh token.
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
//! - `GET /{container-id}?fields=status_code`, `POST /{ig-user-id}/media_publish`
//!   (`creation_id`), `GET /{media-id}?fields=permalink`, `GET /{ig-user-id}/media`.
//! - An unknown token is `400` with `{"error": {"code": 190, "type": "OAuthException"}}`.
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

/// The OAuth client id the YouTube stand-in accepts.
pub const YOUTUBE_CLIENT_ID: &str = "xf-publisher.apps.googleusercontent.com";
/// The OAuth client secret the YouTube stand-in accepts.
pub const YOUTUBE_CLIENT_SECRET: &str = "GOCSPX-xf-publisher";
/// The largest request body read.
const BODY_LIMIT: usize = 64 << 20;

/// A route of the stand-in, for scripted failures and holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// YouTube's token endpoint.
    YoutubeToken,
    /// Opening a YouTube upload session.
    YoutubeSession,
    /// A chunk that does not finish a YouTube upload.
    YoutubeChunk,
    /// The chunk that finishes a YouTube upload.
    YoutubeLastChunk,
    /// Creating an Instagram container.
    InstagramContainer,
    /// Reading a container's status.
    InstagramStatus,
    /// `media_publish`.
    InstagramPublish,
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
    fetched: Result<usize, String>,
    reads: u32,
    media_id: Option<String>,
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
}

#[derive(Debug)]
struct Inner {
    state: Mutex<StandInState>,
    base_url: String,
    client: reqwest::Client,
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, StandInState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Stops the server task when the last handle is dropped.
#[derive(Debug)]
struct ServerTask(tokio::task::JoinHandle<()>);

impl Drop for ServerTask {
    fn drop(&mut self) {
        self.0.abort();
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
            state: Mutex::new(StandInState::default()),
            base_url: format!("http://{addr}"),
            client: reqwest::Client::new(),
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
            poll_interval: Duration::from_millis(20),
            timeout: Duration::from_secs(2),
        }
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

    /// What the stand-in fetched of each container's media URL: its length, or why not.
    pub fn fetched(&self) -> Vec<Result<usize, String>> {
        self.inner
            .state()
            .containers
            .values()
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
        Route::YoutubeToken => youtube_token(&inner, &text),
        Route::YoutubeSession => youtube_session(&inner, &parts.headers, &query, &text),
        Route::YoutubeChunk | Route::YoutubeLastChunk => {
            youtube_chunk(&inner, &parts.headers, &query, &body)
        }
        Route::InstagramContainer => instagram_container(&inner, &path, &text).await,
        Route::InstagramStatus => instagram_get(&inner, &path, &query),
        Route::InstagramPublish => instagram_publish(&inner, &path, &text),
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
            ("POST", "/token") => Some(Route::YoutubeToken),
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
    let rest = path.strip_prefix("/graph/v21.0/")?;
    let segments: Vec<&str> = rest.split('/').collect();
    match (method.as_str(), segments.as_slice()) {
        ("POST", [_, "media"]) => Some(Route::InstagramContainer),
        ("POST", [_, "media_publish"]) => Some(Route::InstagramPublish),
        ("GET", [_]) | ("GET", [_, "media"]) => Some(Route::InstagramStatus),
        _ => None,
    }
}

/// `bytes a-b/N` as `(Some((a, b)), N)`, `bytes */N` as `(None, N)`.
fn parse_content_range(value: &str) -> Option<(Option<(u64, u64)>, u64)> {
    let spec = value.strip_prefix("bytes ")?;
    let (span, total) = spec.split_once('/')?;
    let total: u64 = total.parse().ok()?;
    if span == "*" {
        return Some((None, total));
    }
    let (a, b) = span.split_once('-')?;
    Some((Some((a.parse().ok()?, b.parse().ok()?)), total))
}

fn youtube_token(inner: &Inner, text: &str) -> Response {
    let fields = form(text);
    if fields.get("client_id").map(String::as_str) != Some(YOUTUBE_CLIENT_ID)
        || fields.get("client_secret").map(String::as_str) != Some(YOUTUBE_CLIENT_SECRET)
    {
        return answer(
            401,
            json!({"error": "invalid_client", "error_description": "The OAuth client was not found."}),
            None,
        );
    }
    if fields.get("grant_type").map(String::as_str) != Some("refresh_token") {
        return answer(
            400,
            json!({"error": "unsupported_grant_type", "error_description": "Invalid grant_type"}),
            None,
        );
    }
    let mut state = inner.state();
    let refreshed = fields
        .get("refresh_token")
        .and_then(|t| state.refresh_tokens.get(t))
        .cloned();
    match refreshed {
        Some(access) => {
            state.access_tokens.insert(access.clone());
            answer(
                200,
                json!({"access_token": access, "expires_in": 3599, "scope": "https://www.googleapis.com/auth/youtube.upload", "token_type": "Bearer"}),
                None,
            )
        }
        None => answer(
            400,
            json!({"error": "invalid_grant", "error_description": "Token has been expired or revoked."}),
            None,
        ),
    }
}

fn youtube_session(
    inner: &Inner,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    text: &str,
) -> Response {
    let mut state = inner.state();
    if !bearer(headers).is_some_and(|t| state.access_tokens.contains(&t)) {
        return google_error(401, "authError", "Invalid Credentials");
    }
    let parts: HashSet<&str> = query
        .get("part")
        .map(|p| p.split(',').collect())
        .unwrap_or_default();
    if query.get("uploadType").map(String::as_str) != Some("resumable")
        || !parts.contains("snippet")
        || !parts.contains("status")
    {
        return google_error(
            400,
            "invalidParameter",
            "uploadType=resumable and part=snippet,status are required",
        );
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let size = headers
        .get("x-upload-content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let media_type = headers
        .get("x-upload-content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let metadata: Option<Value> = serde_json::from_str(text).ok();
    let (Some(size), Some(metadata)) = (size, metadata) else {
        return google_error(
            400,
            "badRequest",
            "X-Upload-Content-Length and a JSON body are required",
        );
    };
    if !content_type.starts_with("application/json") || !media_type.starts_with("video/") {
        return google_error(
            400,
            "badContent",
            "the metadata must be JSON and the media a video",
        );
    }
    let title = metadata["snippet"]["title"].as_str().unwrap_or("");
    let privacy = metadata["status"]["privacyStatus"].as_str().unwrap_or("");
    if title.is_empty() || title.chars().count() > 100 {
        return google_error(
            400,
            "invalidTitle",
            "The request metadata specifies an invalid video title.",
        );
    }
    if !["public", "private", "unlisted"].contains(&privacy) {
        return google_error(
            400,
            "invalidVideoMetadata",
            "The request metadata specifies an invalid privacy status.",
        );
    }
    state.next_id += 1;
    let id = format!("upload-{}", state.next_id);
    state.sessions.insert(
        id.clone(),
        Session {
            size,
            received: Vec::new(),
            metadata,
            video: None,
        },
    );
    let location = format!(
        "{}/youtube/upload/youtube/v3/videos?uploadType=resumable&upload_id={id}",
        inner.base_url
    );
    let mut response = answer(200, json!({}), None);
    response
        .headers_mut()
        .insert(header::LOCATION, location.parse().expect("a header value"));
    response
}

fn youtube_chunk(
    inner: &Inner,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    body: &[u8],
) -> Response {
    let mut state = inner.state();
    if !bearer(headers).is_some_and(|t| state.access_tokens.contains(&t)) {
        return google_error(401, "authError", "Invalid Credentials");
    }
    let range = headers
        .get(header::CONTENT_RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_content_range);
    let next_id = state.next_id + 1;
    let Some(session) = query
        .get("upload_id")
        .and_then(|id| state.sessions.get_mut(id))
    else {
        return google_error(404, "notFound", "The upload session does not exist.");
    };
    let Some((span, total)) = range.filter(|(_, total)| *total == session.size) else {
        return google_error(
            400,
            "badContentRange",
            "Content-Range must be bytes a-b/N or bytes */N with the session's N",
        );
    };
    let made = match span {
        None if body.is_empty() => false,
        None => return google_error(400, "badContentRange", "a status probe has no body"),
        Some((first, last)) => {
            let have = session.received.len() as u64;
            let len = last.checked_sub(first).map(|d| d + 1);
            if session.video.is_some() {
                return google_error(400, "uploadComplete", "The upload is already complete.");
            }
            if first != have || len != Some(body.len() as u64) || last >= total {
                return google_error(
                    400,
                    "badContentRange",
                    "the chunk does not continue the upload",
                );
            }
            if last + 1 != total && (last + 1) % CHUNK_UNIT != 0 {
                return google_error(
                    400,
                    "badChunkSize",
                    "chunks but the last must be multiples of 256 KiB",
                );
            }
            session.received.extend_from_slice(body);
            if last + 1 == total {
                let video = json!({
                    "kind": "youtube#video",
                    "id": format!("vid{next_id:08}"),
                    "snippet": session.metadata["snippet"],
                    "status": {"uploadStatus": "uploaded",
                               "privacyStatus": session.metadata["status"]["privacyStatus"]},
                });
                session.video = Some(video);
                true
            } else {
                false
            }
        }
    };
    if let Some(video) = session.video.clone() {
        if made {
            state.next_id = next_id;
            state.videos.push(video.clone());
            return answer(201, video, None);
        }
        return answer(200, video, None);
    }
    let have = session.received.len();
    let mut response = (StatusCode::PERMANENT_REDIRECT, "").into_response();
    if have > 0 {
        response.headers_mut().insert(
            header::RANGE,
            format!("bytes=0-{}", have - 1)
                .parse()
                .expect("a header value"),
        );
    }
    response
}

async fn instagram_container(inner: &Inner, path: &str, text: &str) -> Response {
    let account = path
        .trim_start_matches("/graph/v21.0/")
        .trim_end_matches("/media")
        .to_owned();
    let fields = form(text);
    if !fields
        .get("access_token")
        .is_some_and(|t| inner.state().access_tokens.contains(t))
    {
        return graph_error(
            400,
            190,
            "Error validating access token: Session has expired",
        );
    }
    let (url, video) = match (
        fields.get("media_type").map(String::as_str),
        fields.get("video_url"),
        fields.get("image_url"),
    ) {
        (Some("REELS"), Some(url), None) => (url.clone(), true),
        (None, None, Some(url)) => (url.clone(), false),
        _ => {
            return graph_error(
                400,
                100,
                "(#100) media_type=REELS with video_url, or image_url",
            )
        }
    };
    if fields
        .get("caption")
        .is_some_and(|c| c.chars().count() > 2200)
    {
        return graph_error(400, 100, "(#100) The caption is too long");
    }
    let fetched = fetch_media(&inner.client, &url, video).await;
    let mut state = inner.state();
    state.next_id += 1;
    let id = format!("1790{:08}", state.next_id);
    state.containers.insert(
        id.clone(),
        Container {
            account,
            caption: fields.get("caption").cloned(),
            fetched,
            reads: 0,
            media_id: None,
        },
    );
    answer(200, json!({"id": id}), None)
}

/// Fetches a media URL as Instagram does: a first `Range` request, then the whole.
async fn fetch_media(client: &reqwest::Client, url: &str, video: bool) -> Result<usize, String> {
    let head = client
        .get(url)
        .header("range", "bytes=0-1023")
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if head.status().as_u16() != 206 {
        return Err(format!("the range request answered {}", head.status()));
    }
    let first = head.bytes().await.map_err(|e| e.to_string())?;
    let looks_right = if video {
        first.len() >= 8 && &first[4..8] == b"ftyp"
    } else {
        first.starts_with(&[0xFF, 0xD8, 0xFF])
    };
    if !looks_right || first.len() > 1024 {
        return Err("the first kilobyte is not the media".into());
    }
    let whole = client.get(url).send().await.map_err(|e| e.to_string())?;
    if !whole.status().is_success() {
        return Err(format!("the download answered {}", whole.status()));
    }
    let bytes = whole.bytes().await.map_err(|e| e.to_string())?;
    if !bytes.starts_with(&first) {
        return Err("the download differs from its first range".into());
    }
    Ok(bytes.len())
}

fn instagram_get(inner: &Inner, path: &str, query: &HashMap<String, String>) -> Response {
    let mut state = inner.state();
    if !query
        .get("access_token")
        .is_some_and(|t| state.access_tokens.contains(t))
    {
        return graph_error(
            400,
            190,
            "Error validating access token: Session has expired",
        );
    }
    let rest = path.trim_start_matches("/graph/v21.0/");
    if let Some(account) = rest.strip_suffix("/media") {
        let data: Vec<Value> = state
            .media
            .iter()
            .rev()
            .filter(|(_, owner, _)| owner == account)
            .map(|(id, _, caption)| {
                json!({"id": id, "caption": caption,
                       "permalink": format!("https://www.instagram.com/reel/{id}/"),
                       "timestamp": "2026-11-16T10:20:30+0000"})
            })
            .collect();
        return answer(200, json!({"data": data}), None);
    }
    if let Some(container) = state.containers.get_mut(rest) {
        container.reads += 1;
        let status = match (&container.fetched, &container.media_id, container.reads) {
            (Err(_), _, _) => "ERROR",
            (_, Some(_), _) => "PUBLISHED",
            (_, None, reads) if reads <= 2 => "IN_PROGRESS",
            _ => "FINISHED",
        };
        return answer(
            200,
            json!({"status_code": status, "status": status, "id": rest}),
            None,
        );
    }
    if state.media.iter().any(|(id, _, _)| id == rest) {
        return answer(
            200,
            json!({"permalink": format!("https://www.instagram.com/reel/{rest}/"), "id": rest}),
            None,
        );
    }
    graph_error(400, 100, "(#100) Unsupported get request")
}

fn instagram_publish(inner: &Inner, path: &str, text: &str) -> Response {
    let account = path
        .trim_start_matches("/graph/v21.0/")
        .trim_end_matches("/media_publish")
        .to_owned();
    let fields = form(text);
    let mut state = inner.state();
    if !fields
        .get("access_token")
        .is_some_and(|t| state.access_tokens.contains(t))
    {
        return graph_error(
            400,
            190,
            "Error validating access token: Session has expired",
        );
    }
    let next = state.next_id + 1;
    let Some(container) = fields
        .get("creation_id")
        .and_then(|id| state.containers.get_mut(id))
        .filter(|c| c.account == account)
    else {
        return graph_error(
            400,
            100,
            "(#100) creation_id is not a container of this user",
        );
    };
    if container.media_id.is_some() || container.fetched.is_err() || container.reads <= 2 {
        return graph_error(400, 9007, "(#9007) The media is not ready for publishing");
    }
    let id = format!("1800{next:08}");
    container.media_id = Some(id.clone());
    let caption = container.caption.clone();
    state.next_id = next;
    state.media.push((id.clone(), account, caption));
    answer(200, json!({"id": id}), None)
}
