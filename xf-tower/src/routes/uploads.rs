//! Resumable uploads by the tus 1.0.0 protocol at `/media/uploads` (core, creation,
//! creation-with-upload, expiration, termination, checksum with sha1). The last segment of an
//! upload's `Location` is its id, the `fileId` the upload forms accept.

use axum::extract::{OriginalUri, Request, State};
use axum::response::{IntoResponse, Response};
use http::{header, HeaderMap, HeaderValue, StatusCode};
use utoipa::openapi::Required;
use utoipa_axum::routes;
use xf_core::ids::UploadId;
use xf_core::media::Upload;
use xf_core::{BodyError, ChunkSource, Error, Xf};

use super::media::{MediaCaller, MediaError, MediaPath, TOO_MANY_UPLOADS};
use super::Routes;
use crate::error::{Failure, Refusal};
use crate::openapi_media::{
    Chunk, Digits, Integer, Sha1Checksum, TusVersion, UploadIdText, UploadMetadataText,
};

/// The protocol version spoken.
const TUS_VERSION: &str = "1.0.0";
/// The extensions offered.
const TUS_EXTENSIONS: &str = "creation,creation-with-upload,expiration,termination,checksum";
/// The content type of chunks.
const OFFSET_OCTET_STREAM: &str = "application/offset+octet-stream";

/// The routes of this module, mounted inside the media API's router: every handler takes the
/// caller ([`MediaCaller`]) but `OPTIONS`, which tus clients send without credentials.
pub fn router(routes: Routes) -> Routes {
    let (schemas, mut paths, handlers) = routes!(create, options);
    // A creation may carry the first chunk or not. utoipa makes a body optional only as an
    // `Option`, which would also make its schema nullable: the chunk's is stated as it is,
    // and the body then said to be optional.
    let creation = paths.paths.get_mut("/media/uploads");
    if let Some(body) = creation.and_then(|item| item.post.as_mut()?.request_body.as_mut()) {
        body.required = Some(Required::False);
    }
    routes
        .routes((schemas, paths, handlers))
        .routes(routes!(status, append, terminate))
}

/// What the `Tus-Resumable` and `Upload-Checksum` request headers say, on each operation
/// that takes them.
const TUS_RESUMABLE: &str = "The protocol version: 1.0.0 (else 412 with Tus-Version)";
const UPLOAD_CHECKSUM: &str =
    "sha1 and the base64 of the chunk's SHA-1 (460 when it does not match)";

/// The answer to an upload id that names nothing.
const NO_UPLOAD: &str = "`not_found`: no such upload, or it expired";

type Handled = Result<Response, Tus>;

/// An error of a tus route: the media error envelope (no body for `HEAD`), with
/// `Tus-Resumable` and, for a version mismatch, `Tus-Version`.
struct Tus(Failure);

impl<E: Into<Failure>> From<E> for Tus {
    fn from(error: E) -> Self {
        Tus(error.into())
    }
}

impl From<MediaError> for Tus {
    fn from(error: MediaError) -> Self {
        Tus(error.0)
    }
}

impl IntoResponse for Tus {
    fn into_response(self) -> Response {
        let version = matches!(self.0, Failure::Refused(Refusal::TusVersionUnsupported));
        let offset = match self.0 {
            Failure::Core(Error::UploadOffsetMismatch { offset }) => Some(offset),
            _ => None,
        };
        let mut response = MediaError(self.0).into_response();
        let headers = response.headers_mut();
        headers.insert("tus-resumable", HeaderValue::from_static(TUS_VERSION));
        if version {
            headers.insert("tus-version", HeaderValue::from_static(TUS_VERSION));
        }
        if let Some(offset) = offset {
            headers.insert("upload-offset", HeaderValue::from(offset));
        }
        response
    }
}

fn text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// Every request but `OPTIONS` must say it speaks 1.0.0.
fn check_version(headers: &HeaderMap) -> Result<(), Refusal> {
    match text(headers, "tus-resumable") {
        Some(TUS_VERSION) => Ok(()),
        _ => Err(Refusal::TusVersionUnsupported),
    }
}

/// A header holding a byte count (`name` as the protocol spells it).
fn count(headers: &HeaderMap, name: &str) -> Result<Option<u64>, Error> {
    text(headers, name)
        .map(|value| {
            value
                .parse::<u64>()
                .map_err(|_| Error::invalid(name, "must be a whole number of bytes"))
        })
        .transpose()
}

/// `Upload-Expires` is an HTTP date.
fn http_date(upload: &Upload) -> HeaderValue {
    let text = upload
        .expires_at
        .as_datetime()
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// A tus response: `status`, no body, `Tus-Resumable`.
fn tus_status(status: StatusCode) -> Response {
    let mut response = status.into_response();
    response
        .headers_mut()
        .insert("tus-resumable", HeaderValue::from_static(TUS_VERSION));
    response
}

/// A tus response with the upload's headers.
fn answer(status: StatusCode, upload: &Upload) -> Response {
    let mut response = tus_status(status);
    let headers = response.headers_mut();
    headers.insert("upload-offset", HeaderValue::from(upload.offset));
    headers.insert("upload-expires", http_date(upload));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A request body's chunks.
struct BodyChunks(axum::body::Body);

#[async_trait::async_trait]
impl ChunkSource for BodyChunks {
    async fn next_chunk(&mut self) -> Option<Result<bytes::Bytes, BodyError>> {
        use http_body_util::BodyExt;
        loop {
            match self.0.frame().await? {
                Err(error) => return Some(Err(crate::body_rate::body_error(&error))),
                // Trailers carry no bytes of the upload.
                Ok(frame) => {
                    if let Ok(data) = frame.into_data() {
                        return Some(Ok(data));
                    }
                }
            }
        }
    }
}

fn chunks(request: Request) -> BodyChunks {
    BodyChunks(request.into_body())
}

/// What the server supports.
#[utoipa::path(options, path = "/media/uploads", operation_id = "tus_options", tag = "media",
    summary = "What the server supports (no key needed)",
    responses((status = 204,
        description = "Tus-Version, Tus-Extension, Tus-Max-Size and Tus-Checksum-Algorithm",
        headers(
            ("Tus-Resumable" = String, description = "1.0.0"),
            ("Tus-Version" = String, description = "1.0.0"),
            ("Tus-Extension" = String, description = "creation,creation-with-upload,expiration,termination,checksum"),
            ("Tus-Max-Size" = inline(Integer), description = "The largest upload, in bytes"),
            ("Tus-Checksum-Algorithm" = String, description = "sha1"),
        ))))]
async fn options(State(xf): State<Xf>) -> Response {
    let mut response = tus_status(StatusCode::NO_CONTENT);
    let headers = response.headers_mut();
    headers.insert("tus-version", HeaderValue::from_static(TUS_VERSION));
    headers.insert("tus-extension", HeaderValue::from_static(TUS_EXTENSIONS));
    headers.insert("tus-max-size", HeaderValue::from(xf.max_upload_bytes()));
    headers.insert("tus-checksum-algorithm", HeaderValue::from_static("sha1"));
    response
}

/// Creates an upload (`Upload-Length` required), with a first chunk when the body carries
/// one as `application/offset+octet-stream`.
#[utoipa::path(post, path = "/media/uploads", operation_id = "tus_create", tag = "media",
    summary = "Create a resumable upload (tus creation, creation-with-upload)",
    params(
        ("Tus-Resumable" = inline(TusVersion), Header, description = TUS_RESUMABLE),
        ("Upload-Length" = inline(Digits), Header, description = "The upload's size in bytes"),
        ("Upload-Metadata" = inline(Option<UploadMetadataText>), Header, nullable = false, description = "Comma-separated `key base64value` pairs; `filename` names the file"),
        ("Upload-Checksum" = inline(Option<Sha1Checksum>), Header, nullable = false, description = UPLOAD_CHECKSUM),
    ),
    request_body(content((inline(Chunk) = "application/offset+octet-stream"))),
    responses(
        (status = 201, description = "Created", headers(
            ("Tus-Resumable" = String, description = "1.0.0"),
            ("Upload-Offset" = inline(Integer), description = "Bytes received so far"),
            ("Upload-Expires" = String, description = "When the upload is purged if unused (HTTP date)"),
            ("Location" = String, description = "The upload's address; its last segment is the fileId of the upload forms"),
        )),
        (status = 400, description = "`validation_error`: a header"),
        (status = 412, description = "`tus_version_unsupported`"),
        (status = 413, description = "`payload_too_large`: Upload-Length over the limit"),
        (status = 429, description = TOO_MANY_UPLOADS),
        (status = 460, description = "`checksum_mismatch`: the first chunk was dropped"),
    ))]
async fn create(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    OriginalUri(uri): OriginalUri,
    request: Request,
) -> Handled {
    let headers = request.headers().clone();
    check_version(&headers)?;
    if text(&headers, "upload-defer-length").is_some() {
        return Err(Error::invalid(
            "Upload-Defer-Length",
            "is not supported: send Upload-Length",
        )
        .into());
    }
    let length = count(&headers, "Upload-Length")?
        .ok_or_else(|| Error::invalid("Upload-Length", "is required"))?;
    let with_body = text(&headers, "content-type") == Some(OFFSET_OCTET_STREAM);
    let metadata = text(&headers, "upload-metadata");
    let checksum = text(&headers, "upload-checksum");
    let mut body = chunks(request);
    let first = with_body.then_some((checksum, &mut body as &mut dyn ChunkSource));
    let upload = xf
        .media()
        .create_upload(&caller, length, metadata, first)
        .await?;
    let mut response = answer(StatusCode::CREATED, &upload);
    let location = format!("{}/{}", uri.path().trim_end_matches('/'), upload.id);
    if let Ok(location) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// The upload's offset and length.
#[utoipa::path(head, path = "/media/uploads/{uploadId}", operation_id = "tus_status", tag = "media",
    summary = "The upload's offset (where to resume)",
    params(("uploadId" = inline(UploadIdText), Path), ("Tus-Resumable" = inline(TusVersion), Header, description = TUS_RESUMABLE)),
    responses(
        (status = 200, description = "The upload, with Upload-Length and Upload-Metadata", headers(
            ("Tus-Resumable" = String, description = "1.0.0"),
            ("Upload-Offset" = inline(Integer), description = "Bytes received so far"),
            ("Upload-Expires" = String, description = "When the upload is purged if unused (HTTP date)"),
        )),
        (status = 404, description = NO_UPLOAD),
        (status = 412, description = "`tus_version_unsupported`"),
    ))]
async fn status(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    MediaPath(id): MediaPath<UploadId>,
    headers: HeaderMap,
) -> Handled {
    check_version(&headers)?;
    let upload = xf.media().get_upload(&caller, &id).await?;
    let mut response = answer(StatusCode::OK, &upload);
    response
        .headers_mut()
        .insert("upload-length", HeaderValue::from(upload.length));
    let metadata: Vec<String> = upload
        .metadata
        .iter()
        .map(|(key, value)| {
            if value.is_empty() {
                key.clone()
            } else {
                format!("{key} {value}")
            }
        })
        .collect();
    if let Ok(metadata) = HeaderValue::from_str(&metadata.join(",")) {
        if !metadata.is_empty() {
            response.headers_mut().insert("upload-metadata", metadata);
        }
    }
    Ok(response)
}

/// Appends a chunk at `Upload-Offset`.
#[utoipa::path(patch, path = "/media/uploads/{uploadId}", operation_id = "tus_append", tag = "media",
    summary = "Append a chunk at Upload-Offset",
    params(
        ("uploadId" = inline(UploadIdText), Path),
        ("Tus-Resumable" = inline(TusVersion), Header, description = TUS_RESUMABLE),
        ("Upload-Offset" = inline(Digits), Header, description = "The upload's offset"),
        ("Upload-Checksum" = inline(Option<Sha1Checksum>), Header, nullable = false, description = UPLOAD_CHECKSUM),
    ),
    request_body(content((inline(Chunk) = "application/offset+octet-stream"))),
    responses(
        (status = 204, description = "Appended", headers(
            ("Tus-Resumable" = String, description = "1.0.0"),
            ("Upload-Offset" = inline(Integer), description = "Bytes received so far"),
            ("Upload-Expires" = String, description = "When the upload is purged if unused (HTTP date)"),
        )),
        (status = 404, description = NO_UPLOAD),
        (status = 409, description = "`upload_offset_mismatch`: resume from the offset HEAD gives"),
        (status = 412, description = "`tus_version_unsupported`"),
        (status = 413, description = "`payload_too_large`: more bytes than Upload-Length"),
        (status = 415, description = "`unsupported_media_type`: chunks are application/offset+octet-stream"),
        (status = 429, description = TOO_MANY_UPLOADS),
        (status = 460, description = "`checksum_mismatch`: the chunk was dropped"),
    ))]
async fn append(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    MediaPath(id): MediaPath<UploadId>,
    request: Request,
) -> Handled {
    let headers = request.headers().clone();
    check_version(&headers)?;
    if text(&headers, "content-type") != Some(OFFSET_OCTET_STREAM) {
        return Err(Refusal::UnsupportedMediaType(format!(
            "a chunk's Content-Type must be {OFFSET_OCTET_STREAM}"
        ))
        .into());
    }
    let offset = count(&headers, "Upload-Offset")?
        .ok_or_else(|| Error::invalid("Upload-Offset", "is required"))?;
    let checksum = text(&headers, "upload-checksum");
    let mut body = chunks(request);
    let upload = xf
        .media()
        .append_upload(&caller, &id, offset, checksum, &mut body)
        .await?;
    Ok(answer(StatusCode::NO_CONTENT, &upload))
}

/// Drops the upload and its bytes.
#[utoipa::path(delete, path = "/media/uploads/{uploadId}", operation_id = "tus_terminate", tag = "media",
    summary = "Drop the upload (tus termination)",
    params(("uploadId" = inline(UploadIdText), Path), ("Tus-Resumable" = inline(TusVersion), Header, description = TUS_RESUMABLE)),
    responses(
        (status = 204, description = "Dropped", headers(("Tus-Resumable" = String, description = "1.0.0"))),
        (status = 404, description = NO_UPLOAD),
        (status = 412, description = "`tus_version_unsupported`"),
    ))]
async fn terminate(
    State(xf): State<Xf>,
    MediaCaller(caller): MediaCaller,
    MediaPath(id): MediaPath<UploadId>,
    headers: HeaderMap,
) -> Handled {
    check_version(&headers)?;
    xf.media().terminate_upload(&caller, &id).await?;
    Ok(tus_status(StatusCode::NO_CONTENT))
}
