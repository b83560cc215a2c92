//! The signed media URLs platforms pull media from: [`MediaFileService`], which hosts mount
//! at `/m` (as `xf-server` does) so that `{public base URL}/m/{token}` serves the file.
//!
//! - `GET` and `HEAD /{token}` answer the file with its MIME type, `Accept-Ranges: bytes`
//!   and its length; a single `Range` (`bytes=a-b`, `bytes=a-`, `bytes=-n`) is a `206` with
//!   `Content-Range`, an unsatisfiable one a `416` with `Content-Range: bytes */{size}`, and
//!   several ranges are answered with the whole file (RFC 9110 lets a server ignore them).
//! - A token whose signature is wrong, or whose time ran out, is a `404`, as is any other
//!   path: nothing tells a guessed token from a missing file. Other methods are `405`.
//! - The bytes are streamed from the blob store a megabyte at a time, never held whole.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http::{header, HeaderValue, Method, StatusCode};
use xf_core::{Error, Xf};

use crate::request_id;

/// How much is read from the blob store per chunk of the answer.
const CHUNK: u64 = 1 << 20;

/// The signed media URL service. Mount it at `/m`.
#[derive(Debug, Clone)]
pub struct MediaFileService {
    router: Router,
}

impl MediaFileService {
    /// The service over `xf`.
    pub fn new(xf: Xf) -> Self {
        let metrics = Some(xf.metrics().requests());
        let router = Router::new()
            .route("/{token}", get(file).fallback(method_not_allowed))
            .fallback(not_found)
            .with_state(xf)
            .layer(request_id::Layer {
                service: request_id::Service::MediaFile,
                prefix: "",
                panic: Some(crate::middleware::panic_response),
                metrics,
                body_limits: None,
            });
        Self { router }
    }

    /// The axum `Router` inside.
    pub fn into_router(self) -> Router {
        self.router
    }
}

crate::router_service!(MediaFileService);

/// The byte range a `Range` header asks of a file of `size` bytes: `None` for the whole
/// file (no header, one that is not a single byte range, or several ranges), `Some(Err)`
/// when it cannot be satisfied.
fn requested_range(headers: &HeaderMap, size: u64) -> Option<Result<(u64, u64), ()>> {
    let value = headers.get(header::RANGE)?.to_str().ok()?.trim();
    let spec = value.strip_prefix("bytes=")?.trim();
    if spec.contains(',') {
        return None;
    }
    let (first, last) = spec.split_once('-')?;
    let (first, last) = (first.trim(), last.trim());
    let range = match (first.is_empty(), last.is_empty()) {
        // `-n`: the last n bytes.
        (true, false) => {
            let n: u64 = last.parse().ok()?;
            if n == 0 || size == 0 {
                return Some(Err(()));
            }
            (size.saturating_sub(n), size - 1)
        }
        (false, _) => {
            let start: u64 = first.parse().ok()?;
            let end = if last.is_empty() {
                size.saturating_sub(1)
            } else {
                let end: u64 = last.parse().ok()?;
                if end < start {
                    return None;
                }
                end.min(size.saturating_sub(1))
            };
            if start >= size {
                return Some(Err(()));
            }
            (start, end)
        }
        (true, true) => return None,
    };
    Some(Ok(range))
}

/// `GET` and `HEAD /{token}`.
async fn file(
    State(xf): State<Xf>,
    method: Method,
    Path(token): Path<String>,
    headers: HeaderMap,
) -> Response {
    let media = match xf.open_media_file(&token).await {
        Ok(media) => media,
        Err(Error::NotFound(_)) => return not_found().await,
        Err(error) => {
            tracing::warn!(%error, "media file: cannot be served now");
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
            )
                .into_response();
        }
    };
    let size = media.reader.len();
    let (status, start, end) = match requested_range(&headers, size) {
        None => (StatusCode::OK, 0, size),
        Some(Ok((first, last))) => (StatusCode::PARTIAL_CONTENT, first, last + 1),
        Some(Err(())) => {
            return (
                StatusCode::RANGE_NOT_SATISFIABLE,
                [(header::CONTENT_RANGE, format!("bytes */{size}"))],
            )
                .into_response()
        }
    };
    let mut response = if method == Method::HEAD {
        Response::new(Body::empty())
    } else {
        let reader: std::sync::Arc<dyn xf_core::media::inspect::RangeRead> =
            std::sync::Arc::from(media.reader);
        let chunks = futures::stream::try_unfold(start, move |offset| {
            let reader = std::sync::Arc::clone(&reader);
            async move {
                if offset >= end {
                    return Ok(None);
                }
                let want = (end - offset).min(CHUNK) as usize;
                let bytes = reader.read_at(offset, want).await?;
                if bytes.is_empty() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the media file ended early",
                    ));
                }
                let next = offset + bytes.len() as u64;
                Ok::<_, std::io::Error>(Some((Bytes::from(bytes), next)))
            }
        });
        Response::new(Body::from_stream(chunks))
    };
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(media.content_type),
    );
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(end - start));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if status == StatusCode::PARTIAL_CONTENT {
        if let Ok(value) = HeaderValue::from_str(&format!("bytes {start}-{}/{size}", end - 1)) {
            headers.insert(header::CONTENT_RANGE, value);
        }
    }
    response
}

async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found\n").into_response()
}

async fn method_not_allowed() -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, "GET, HEAD")],
        "only GET and HEAD\n",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(value: &str, size: u64) -> Option<Result<(u64, u64), ()>> {
        let mut headers = HeaderMap::new();
        headers.insert(header::RANGE, HeaderValue::from_str(value).unwrap());
        requested_range(&headers, size)
    }

    #[test]
    fn ranges_are_read_as_rfc_9110_says() {
        assert_eq!(range("bytes=0-99", 1000), Some(Ok((0, 99))));
        assert_eq!(range("bytes=500-", 1000), Some(Ok((500, 999))));
        assert_eq!(range("bytes=-100", 1000), Some(Ok((900, 999))));
        assert_eq!(range("bytes=-5000", 1000), Some(Ok((0, 999))));
        assert_eq!(range("bytes=900-5000", 1000), Some(Ok((900, 999))));
        assert_eq!(range("bytes=1000-", 1000), Some(Err(())));
        assert_eq!(range("bytes=-0", 1000), Some(Err(())));
        assert_eq!(range("bytes=0-1,5-9", 1000), None);
        assert_eq!(range("bytes=9-5", 1000), None);
        assert_eq!(range("items=0-1", 1000), None);
        assert_eq!(range("bytes=x-1", 1000), None);
        assert_eq!(requested_range(&HeaderMap::new(), 1000), None);
    }
}
