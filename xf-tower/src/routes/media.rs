//! The media publishing API: uploads (multipart, streamed to the blob store), media items and
//! lists, and connected channels. Its envelopes are the media spec's: `{success: true, data}`
//! and `{success: false, error: {code, message, details?}}`, each with `meta.requestId`.
//! Keys come as `X-API-Key` or `Authorization: Bearer`; the plan needs `mediaApi`.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use http::{HeaderValue, StatusCode};
use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use xf_core::media::api::MediaListQuery;
use xf_core::media::MediaKind;
use xf_core::plans::Entitlement;
use xf_core::{BodyError, ChunkSource, Error, Fingerprint, IdempotencyStart, StagedFile, Xf};

use crate::envelope;
use crate::error::{error_object, status_of};
use crate::extract::{bearer, PathParam, Query};
use crate::middleware::Guard;
use crate::multipart::{FormError, FormReader, TextField};

/// The routes of this module, behind the media API's authentication and rate limits.
pub fn router(xf: Xf) -> Router<Xf> {
    Router::new()
        .route("/media/videos", post(upload_video).get(list_videos))
        .route("/media/images", post(upload_image).get(list_images))
        .route("/media/videos/{id}", get(get_video))
        .route("/media/images/{id}", get(get_image))
        .route("/video/upload", post(upload_video))
        .route("/channels", get(list_channels))
        .merge(super::uploads::router())
        // Uploads are streamed to the blob store under the media limits, not axum's 2 MB.
        .layer(axum::extract::DefaultBodyLimit::disable())
        .route_layer(axum::middleware::from_fn_with_state(xf, media_api))
}

/// Whether `path` (relative to the mount point) is the media API's, whose errors use its
/// envelope.
pub fn is_media_path(path: &str) -> bool {
    path == "/media"
        || path.starts_with("/media/")
        || path == "/channels"
        || path.starts_with("/channels/")
        || path == "/video/upload"
}

/// An error in the media envelope.
pub struct MediaError(pub Error);

impl From<Error> for MediaError {
    fn from(error: Error) -> Self {
        MediaError(error)
    }
}

impl IntoResponse for MediaError {
    fn into_response(self) -> Response {
        let error = self.0;
        match &error {
            Error::Internal(cause) => tracing::error!(%cause, "internal error"),
            Error::Unavailable { cause } => tracing::warn!(%cause, "storage unavailable"),
            _ => {}
        }
        let mut response = envelope::render(status_of(&error), &media_error_object(&error));
        if let Some(seconds) = error.retry_after_secs() {
            response
                .headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// `{"success": false, "error": …}`, without `meta` (what idempotency keeps).
fn media_error_object(error: &Error) -> String {
    let object = error_object(error);
    format!(r#"{{"success":false,{}}}"#, &object[1..object.len() - 1])
}

/// `{success: true, data}` (and any `extra` members, such as an upload's `message`), without
/// `meta`.
fn success_object<T: Serialize>(data: &T, extra: serde_json::Value) -> Result<String, Error> {
    let mut body = json!({"success": true});
    if let serde_json::Value::Object(extra) = extra {
        body.as_object_mut().expect("an object").extend(extra);
    }
    body["data"] = serde_json::to_value(data).map_err(|e| Error::Internal(e.to_string()))?;
    Ok(body.to_string())
}

/// `{success: true, data, meta}` (and any `extra` members).
fn success<T: Serialize>(status: StatusCode, data: &T, extra: serde_json::Value) -> Response {
    match success_object(data, extra) {
        Ok(object) => envelope::render(status, &object),
        Err(error) => MediaError(error).into_response(),
    }
}

type Handled = Result<Response, MediaError>;

/// The key of a media request: `X-API-Key`, else `Authorization: Bearer`.
fn api_key(headers: &http::HeaderMap) -> Option<&str> {
    headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .or_else(|| bearer(headers))
}

/// Authenticates (entitlement `mediaApi`, key in `X-API-Key` or bearer), counts the request
/// against the rate limits, and adds the remaining-request headers, as the developer API does.
async fn media_api(State(xf): State<Xf>, request: Request, next: Next) -> Response {
    // tus clients ask what the server supports without credentials.
    if request.method() == http::Method::OPTIONS {
        return next.run(request).await;
    }
    let guard = Guard {
        key: api_key,
        entitlement: Entitlement::MediaApi,
        render: |error| MediaError(error).into_response(),
    };
    crate::middleware::guard(&xf, request, |request| next.run(request), guard).await
}

/// The caller the middleware authenticated.
pub struct MediaCaller(pub xf_core::Caller);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for MediaCaller {
    type Rejection = MediaError;

    async fn from_request_parts(
        parts: &mut http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<xf_core::Caller>()
            .cloned()
            .map(MediaCaller)
            .ok_or_else(|| {
                MediaError(Error::Internal(
                    "a media route ran without its caller".into(),
                ))
            })
    }
}

/// A path parameter of a media route, refused in the media envelope.
pub struct MediaPath(pub String);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for MediaPath {
    type Rejection = MediaError;

    async fn from_request_parts(
        parts: &mut http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        PathParam::from_request_parts(parts, state)
            .await
            .map(|PathParam(value)| MediaPath(value))
            .map_err(|rejection| MediaError(rejection.0))
    }
}

/// A form's file part, chunk by chunk, hashed on the way when the request is idempotent (its
/// fingerprint covers the file's bytes).
struct FileChunks<'a, 'h>(&'a mut FormReader, Option<&'h mut Sha256>);

#[async_trait::async_trait]
impl ChunkSource for FileChunks<'_, '_> {
    async fn next_chunk(&mut self) -> Option<Result<bytes::Bytes, BodyError>> {
        let chunk = self
            .0
            .next_chunk()
            .await
            .map_err(FormError::into_body_error)
            .transpose();
        if let (Some(Ok(bytes)), Some(hasher)) = (&chunk, self.1.as_deref_mut()) {
            hasher.update(bytes);
        }
        chunk
    }
}

/// The fingerprint of an upload form: its path, its text fields (in order of name), and the
/// file's name, size and SHA-256.
fn form_fingerprint(
    path: &str,
    fields: &[(String, String)],
    file: Option<(&StagedFile, [u8; 32])>,
) -> Fingerprint {
    let mut sorted: Vec<&(String, String)> = fields.iter().collect();
    sorted.sort();
    let mut canonical = Vec::new();
    for (name, value) in sorted {
        for part in [name.as_bytes(), value.as_bytes()] {
            canonical.extend_from_slice(&(part.len() as u64).to_be_bytes());
            canonical.extend_from_slice(part);
        }
    }
    if let Some((staged, digest)) = file {
        canonical.extend_from_slice(staged.name().as_bytes());
        canonical.extend_from_slice(&staged.size().to_be_bytes());
        canonical.extend_from_slice(&digest);
    }
    Fingerprint::of("POST", path, &canonical)
}

/// Reads an upload form: the `file` part is streamed to the blob store as it arrives, the
/// other parts are text fields, each read only up to its limit. With an `Idempotency-Key`,
/// the form's fingerprint (its fields and the file's digest) is known once it is read: a
/// replay then drops the new copy of the file and answers as the first time.
async fn upload(xf: Xf, caller: xf_core::Caller, kind: MediaKind, request: Request) -> Handled {
    let path = request.uri().path().to_owned();
    let idempotency_key = crate::extract::idempotency_key(request.headers())?;
    let limits = xf.media_limits();
    let content_type = request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut form = FormReader::new(
        request.into_body(),
        content_type.as_deref(),
        limits.max_form_parts,
    )
    .map_err(|message| Error::invalid("body", message))?;
    let mut fields: Vec<(String, String)> = Vec::new();
    let mut text_bytes = 0usize;
    let mut staged: Option<StagedFile> = None;
    let mut hasher = idempotency_key.as_ref().map(|_| Sha256::new());
    let outcome: Result<(), Error> = async {
        while let Some(part) = form.next_part().await.map_err(FormError::into_error)? {
            if part.name == "file" {
                if staged.is_some() {
                    return Err(Error::invalid("file", "is given more than once"));
                }
                let file_name = part.file_name.ok_or_else(|| {
                    Error::invalid("file", "must be a file part with a file name")
                })?;
                let mut chunks = FileChunks(&mut form, hasher.as_mut());
                staged = Some(
                    xf.stage_media_file(&caller, kind, &file_name, &mut chunks)
                        .await?,
                );
                continue;
            }
            let room = limits
                .max_form_field_bytes
                .min(limits.max_form_text_bytes - text_bytes);
            let text = match form.text(room).await.map_err(FormError::into_error)? {
                TextField::Text(text) => text,
                TextField::NotUtf8 => return Err(Error::invalid(&part.name, "is not UTF-8 text")),
                TextField::TooLong if room < limits.max_form_field_bytes => {
                    return Err(Error::invalid(
                        "body",
                        format!(
                            "the form's text fields are longer than {} bytes in all",
                            limits.max_form_text_bytes
                        ),
                    ))
                }
                TextField::TooLong => {
                    return Err(Error::invalid(
                        &part.name,
                        format!("is longer than {} bytes", limits.max_form_field_bytes),
                    ))
                }
            };
            text_bytes += text.len();
            fields.push((part.name, text));
        }
        Ok(())
    }
    .await;
    if let Err(error) = outcome {
        // The form cannot be used: a file already stored goes too.
        xf.discard_staged(staged).await;
        return Err(error.into());
    }
    let ticket = match &idempotency_key {
        None => None,
        Some(key) => {
            let digest: [u8; 32] = hasher.map(|h| h.finalize().into()).unwrap_or_default();
            let fingerprint =
                form_fingerprint(&path, &fields, staged.as_ref().map(|s| (s, digest)));
            match xf.begin_idempotent(&caller, key, &fingerprint).await {
                Ok(IdempotencyStart::Proceed(ticket)) => Some(ticket),
                Ok(IdempotencyStart::Replay(stored)) => {
                    xf.discard_staged(staged).await;
                    return Ok(crate::idempotency::replay(&stored));
                }
                Err(error) => {
                    xf.discard_staged(staged).await;
                    return Err(error.into());
                }
            }
        }
    };
    let message = match kind {
        MediaKind::Video => "video uploaded",
        MediaKind::Image => "image uploaded",
    };
    let outcome = xf
        .create_media(&caller, kind, &fields, staged)
        .await
        .and_then(|items| success_object(&items, json!({"message": message})));
    if let Some(ticket) = ticket {
        crate::idempotency::record(
            &xf,
            &ticket,
            &outcome,
            StatusCode::CREATED,
            media_error_object,
        )
        .await;
    }
    Ok(envelope::render(StatusCode::CREATED, &outcome?))
}

async fn upload_video(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    request: Request,
) -> Handled {
    upload(xf, caller, MediaKind::Video, request).await
}

async fn upload_image(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    request: Request,
) -> Handled {
    upload(xf, caller, MediaKind::Image, request).await
}

async fn get_video(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    MediaPath(id): MediaPath,
) -> Handled {
    let item = xf.get_media(&caller, MediaKind::Video, &id).await?;
    Ok(success(StatusCode::OK, &item, json!(null)))
}

async fn get_image(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    MediaPath(id): MediaPath,
) -> Handled {
    let item = xf.get_media(&caller, MediaKind::Image, &id).await?;
    Ok(success(StatusCode::OK, &item, json!(null)))
}

async fn list(
    xf: Xf,
    caller: xf_core::Caller,
    kind: MediaKind,
    query: Result<Query<MediaListQuery>, crate::error::ApiError>,
) -> Handled {
    let Query(query) = query.map_err(|e| MediaError(e.0))?;
    let list = xf.list_media(&caller, kind, &query).await?;
    let key = match kind {
        MediaKind::Video => "videos",
        MediaKind::Image => "images",
    };
    Ok(success(
        StatusCode::OK,
        &json!({ key: list.items, "pagination": list.pagination }),
        json!(null),
    ))
}

async fn list_videos(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    query: Result<Query<MediaListQuery>, crate::error::ApiError>,
) -> Handled {
    list(xf, caller, MediaKind::Video, query).await
}

async fn list_images(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    query: Result<Query<MediaListQuery>, crate::error::ApiError>,
) -> Handled {
    list(xf, caller, MediaKind::Image, query).await
}

async fn list_channels(State(xf): State<Xf>, MediaCaller(caller): MediaCaller) -> Handled {
    let channels = xf.list_channels(&caller).await?;
    Ok(success(StatusCode::OK, &channels, json!(null)))
}
