//! The one place where core errors become HTTP responses.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};
use xf_core::Error;

use crate::envelope::{self, Api, ErrorBody};

/// A core [`Error`] on its way to becoming a response.
#[derive(Debug)]
pub struct ApiError(pub Error);

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        Self(error)
    }
}

/// The HTTP status of each error: the mapping the variants of [`Error`] document.
pub fn status_of(error: &Error) -> StatusCode {
    match error {
        Error::Validation { .. }
        | Error::JobNotCancellable { .. }
        | Error::GscNotConfigured(_)
        | Error::GscNotLinked(_)
        | Error::GscTokenRevoked
        | Error::GscSiteInaccessible(_) => StatusCode::BAD_REQUEST,
        Error::ApiKeyInvalid | Error::ApiKeyInWrongHeader | Error::AdminTokenInvalid => {
            StatusCode::UNAUTHORIZED
        }
        Error::PlanRequired { .. } => StatusCode::FORBIDDEN,
        Error::NotFound(_) => StatusCode::NOT_FOUND,
        Error::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        Error::Conflict(_) | Error::IdempotencyKeyInUse | Error::UploadOffsetMismatch { .. } => {
            StatusCode::CONFLICT
        }
        Error::TusVersionUnsupported => StatusCode::PRECONDITION_FAILED,
        Error::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        // tus's checksum extension: 460 Checksum Mismatch.
        Error::ChecksumMismatch => StatusCode::from_u16(460).unwrap_or(StatusCode::BAD_REQUEST),
        Error::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        Error::IdempotencyKeyReused => StatusCode::UNPROCESSABLE_ENTITY,
        Error::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
        Error::RateLimited { .. } | Error::QuotaExceeded { .. } | Error::TooManyUploads { .. } => {
            StatusCode::TOO_MANY_REQUESTS
        }
        Error::Upstream {
            rate_limited: true, ..
        } => StatusCode::TOO_MANY_REQUESTS,
        Error::Unavailable { .. } | Error::Upstream { .. } => StatusCode::SERVICE_UNAVAILABLE,
        Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The error envelope's `error` of `error`.
fn body_of(error: &Error) -> ErrorBody<'_> {
    ErrorBody {
        code: error.code(),
        message: error.to_string().into(),
        details: error.details(),
    }
}

/// `error` in `api`'s envelope without `meta`: what idempotency keeps.
pub fn error_object(api: Api, error: &Error) -> String {
    envelope::error_object(api, &body_of(error))
}

/// `error` as a response in `api`'s envelope, with `Retry-After` when it says when to retry.
/// Internal errors, outages and third parties' failures are logged here.
pub fn respond(api: Api, error: &Error) -> Response {
    match error {
        Error::Internal(cause) => tracing::error!(%cause, "internal error"),
        Error::Unavailable { cause } => tracing::warn!(%cause, "storage unavailable"),
        Error::Upstream { message, .. } => tracing::warn!(%message, "a third party failed"),
        _ => {}
    }
    let mut response = envelope::error(api, status_of(error), &body_of(error));
    if let Some(seconds) = error.retry_after_secs() {
        response
            .headers_mut()
            .insert(http::header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        respond(Api::Developer, &self.0)
    }
}
