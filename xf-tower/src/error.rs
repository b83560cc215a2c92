//! The one place where core errors become HTTP responses.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};
use xf_core::error::Chain;
use xf_core::Error;

use crate::envelope::{self, Api, ErrorBody};

/// What a request fails with: a use case's [`Error`], or a rule of HTTP or of tus that the
/// request broke before one ran ([`Refusal`]), which xf-core knows nothing of.
#[derive(Debug)]
#[non_exhaustive]
pub enum Failure {
    /// A use case's error.
    Core(Error),
    /// The edge's own.
    Refused(Refusal),
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure::Core(error)
    }
}

impl From<Refusal> for Failure {
    fn from(refusal: Refusal) -> Self {
        Failure::Refused(refusal)
    }
}

/// The failures of the HTTP edge: what a request can break of HTTP or of tus before any use
/// case sees it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// 401 `api_key_invalid`: a developer API request that sends its key as `X-API-Key` (the
    /// media API's header) and no `Authorization: Bearer`.
    #[error(
        "the developer API reads the key from `Authorization: Bearer <key>`; `X-API-Key` is \
         the media API's header"
    )]
    ApiKeyInWrongHeader,
    /// 405 `method_not_allowed`: the path exists, the method does not.
    #[error("this path does not accept the method; the Allow header lists the ones it does")]
    MethodNotAllowed,
    /// 412 `tus_version_unsupported`: a resumable-upload request without
    /// `Tus-Resumable: 1.0.0`.
    #[error("this server speaks tus 1.0.0: send Tus-Resumable: 1.0.0")]
    TusVersionUnsupported,
    /// 415 `unsupported_media_type`: the body's `Content-Type` is not the one required.
    #[error("{0}")]
    UnsupportedMediaType(String),
}

/// The codes of [`Refusal`] that xf-core's [`ERROR_CODES`](xf_core::error::ERROR_CODES) has
/// not: the served documents list both.
pub const REFUSAL_CODES: [&str; 3] = [
    "method_not_allowed",
    "tus_version_unsupported",
    "unsupported_media_type",
];

impl Refusal {
    fn code(&self) -> &'static str {
        match self {
            Refusal::ApiKeyInWrongHeader => "api_key_invalid",
            Refusal::MethodNotAllowed => "method_not_allowed",
            Refusal::TusVersionUnsupported => "tus_version_unsupported",
            Refusal::UnsupportedMediaType(_) => "unsupported_media_type",
        }
    }
}

/// A failure on its way to becoming a response in the developer API's envelope.
#[derive(Debug)]
pub struct ApiError(pub Failure);

impl<E: Into<Failure>> From<E> for ApiError {
    fn from(error: E) -> Self {
        Self(error.into())
    }
}

/// The HTTP status of each error: the mapping the variants of [`Error`] document.
///
/// It goes by [`Error::code`], so that a variant added to xf-core (which a match here could
/// only meet with a wildcard) cannot go unmapped: every code of
/// [`ERROR_CODES`](xf_core::error::ERROR_CODES) has its status, a unit test says so.
pub fn status_of(error: &Error) -> StatusCode {
    status_of_code(error.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn status_of_code(code: &str) -> Option<StatusCode> {
    Some(match code {
        "validation_error"
        | "job_not_cancellable"
        | "gsc_not_configured"
        | "gsc_not_linked"
        | "gsc_token_revoked"
        | "gsc_site_inaccessible" => StatusCode::BAD_REQUEST,
        "api_key_invalid" | "admin_token_invalid" => StatusCode::UNAUTHORIZED,
        "plan_required" => StatusCode::FORBIDDEN,
        "not_found" => StatusCode::NOT_FOUND,
        "method_not_allowed" => StatusCode::METHOD_NOT_ALLOWED,
        "conflict" | "idempotency_key_in_use" | "upload_offset_mismatch" => StatusCode::CONFLICT,
        "tus_version_unsupported" => StatusCode::PRECONDITION_FAILED,
        "unsupported_media_type" => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        // tus's checksum extension: 460 Checksum Mismatch.
        "checksum_mismatch" => StatusCode::from_u16(460).unwrap_or(StatusCode::BAD_REQUEST),
        "payload_too_large" => StatusCode::PAYLOAD_TOO_LARGE,
        "idempotency_key_reused" => StatusCode::UNPROCESSABLE_ENTITY,
        "request_timeout" => StatusCode::REQUEST_TIMEOUT,
        "rate_limit" | "quota_exceeded" | "too_many_uploads" => StatusCode::TOO_MANY_REQUESTS,
        "unavailable" => StatusCode::SERVICE_UNAVAILABLE,
        "internal_error" => StatusCode::INTERNAL_SERVER_ERROR,
        _ => return None,
    })
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

/// `failure` as a response in `api`'s envelope, with `Retry-After` when it says when to
/// retry. Internal errors, outages and third parties' failures are logged here, each with its
/// chain of causes (the driver's error, for a store's).
pub fn respond_failure(api: Api, failure: &Failure) -> Response {
    match failure {
        Failure::Core(error) => respond(api, error),
        Failure::Refused(refusal) => {
            let body = ErrorBody {
                code: refusal.code(),
                message: refusal.to_string().into(),
                details: None,
            };
            let status = status_of_code(refusal.code()).unwrap_or(StatusCode::BAD_REQUEST);
            envelope::error(api, status, &body)
        }
    }
}

/// A use case's `error` as a response ([`respond_failure`]).
pub fn respond(api: Api, error: &Error) -> Response {
    match error {
        Error::Internal { source } => {
            tracing::error!(cause = %Chain(source.as_ref()), "internal error");
        }
        Error::Unavailable { source } => {
            tracing::warn!(cause = %Chain(source.as_ref()), "storage unavailable");
        }
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
        respond_failure(Api::Developer, &self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code an error can have, xf-core's and the edge's, has its status: none falls to
    /// the 500 of an unknown code but `internal_error`'s own.
    #[test]
    fn every_code_has_its_status() {
        for code in REFUSAL_CODES {
            assert!(!xf_core::error::ERROR_CODES.contains(&code), "{code} twice");
        }
        for code in xf_core::error::ERROR_CODES.iter().chain(&REFUSAL_CODES) {
            let status = status_of_code(code);
            assert!(status.is_some(), "{code} has no status");
            assert_eq!(
                status == Some(StatusCode::INTERNAL_SERVER_ERROR),
                *code == "internal_error",
                "{code}"
            );
        }
        for refusal in [
            Refusal::ApiKeyInWrongHeader,
            Refusal::MethodNotAllowed,
            Refusal::TusVersionUnsupported,
            Refusal::UnsupportedMediaType(String::new()),
        ] {
            let code = refusal.code();
            assert!(REFUSAL_CODES.contains(&code) || xf_core::error::ERROR_CODES.contains(&code));
        }
    }
}
