//! The one place where core errors become HTTP responses.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};
use serde::Serialize;
use xf_core::error::FieldError;
use xf_core::Error;

use crate::envelope;

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

/// `error` of the error envelope.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody<'a> {
    /// Machine-readable code, e.g. `validation_error`.
    pub code: &'a str,
    /// For people.
    pub message: String,
    /// Per-field problems of a validation error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<&'a [FieldError]>,
}

/// The error envelope without `meta`: `{"error": {...}}`.
pub fn error_object(error: &Error) -> String {
    #[derive(Serialize)]
    struct Wrapper<'a> {
        error: ErrorBody<'a>,
    }
    let body = Wrapper {
        error: ErrorBody {
            code: error.code(),
            message: error.to_string(),
            details: error.details(),
        },
    };
    serde_json::to_string(&body).unwrap_or_else(|cause| {
        // Strings and a slice of them always serialize; if that ever changes, say so.
        tracing::error!(%cause, code = error.code(), "an error envelope does not serialize");
        r#"{"error":{"code":"internal_error","message":"internal error"}}"#.to_owned()
    })
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let error = self.0;
        match &error {
            Error::Internal(cause) => tracing::error!(%cause, "internal error"),
            Error::Unavailable { cause } => tracing::warn!(%cause, "storage unavailable"),
            Error::Upstream { message, .. } => tracing::warn!(%message, "a third party failed"),
            _ => {}
        }
        let mut response = envelope::render(status_of(&error), &error_object(&error));
        if let Some(seconds) = error.retry_after_secs() {
            response
                .headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}
