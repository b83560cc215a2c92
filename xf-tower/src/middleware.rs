//! Authentication, plan check and rate limiting: [`admit`], which the APIs' caller extractors
//! ([`Authed`](crate::extract::Authed), `WebhooksAuthed`, `MediaCaller`) run before anything
//! else a handler reads; and the envelope for axum's bare 405 responses.

use axum::response::{IntoResponse, Response};
use http::Method;
use xf_core::plans::Entitlement;
use xf_core::{Caller, Error, RequestKind, Xf};

use crate::error::{ApiError, Failure, Refusal};

/// Authenticates the request's key (found by `key`; its plan must include `entitlement`),
/// and counts the request against the rate limits before its handler runs: the caller, or
/// the error to answer (a `429` past a limit). The count is kept for the answer,
/// whatever it is, to carry the remaining-request headers ([`answer_with_rate`]).
///
/// [`answer_with_rate`]: crate::request_id::answer_with_rate
pub async fn admit(
    xf: &Xf,
    parts: &http::request::Parts,
    key: fn(&http::HeaderMap) -> Option<&str>,
    entitlement: Entitlement,
) -> Result<Caller, Failure> {
    let key = key_of(key, entitlement, &parts.headers)?;
    let caller = authenticated(xf, key, entitlement).await?;
    // The count comes first, for reads as for writes: a request over its limit is refused
    // before its handler reads anything, so a flood of them reaches no store but the
    // counters'.
    let check = xf.check_rate_limit(&caller, kind_of(&parts.method)).await?;
    crate::request_id::answer_with_rate(check);
    match check.retry_after_secs {
        Some(retry_after_secs) => Err(Error::RateLimited { retry_after_secs }.into()),
        None => Ok(caller),
    }
}

/// The request's key, found by `key`, if it has one. A developer API request without a key of
/// its own but with the media API's `X-API-Key` is told where this API reads the key, rather
/// than that the key is invalid.
fn key_of(
    key: fn(&http::HeaderMap) -> Option<&str>,
    entitlement: Entitlement,
    headers: &http::HeaderMap,
) -> Result<Option<&str>, Refusal> {
    let found = key(headers);
    let misplaced = entitlement == Entitlement::DeveloperApi
        && found.is_none()
        && headers.contains_key("x-api-key");
    if misplaced {
        return Err(Refusal::ApiKeyInWrongHeader);
    }
    Ok(found)
}

/// The caller of `key` with `entitlement`: from the key cache when it knows the key (without
/// a future of the store's), or from the store.
async fn authenticated(
    xf: &Xf,
    key: Option<&str>,
    entitlement: Entitlement,
) -> Result<Caller, Error> {
    match xf.authenticate_cached(key, entitlement) {
        Some(known) => known,
        None => xf.authenticate(key, entitlement).await,
    }
}

/// A `GET` or `HEAD` counts as a read; every other method as a write.
fn kind_of(method: &Method) -> RequestKind {
    match *method {
        Method::GET | Method::HEAD => RequestKind::Read,
        _ => RequestKind::Write,
    }
}

/// `405` in the developer envelope (axum adds `Allow`).
pub async fn method_not_allowed() -> Response {
    ApiError::from(Refusal::MethodNotAllowed).into_response()
}

/// The fallback of unknown paths.
pub async fn not_found() -> Response {
    ApiError::from(Error::NotFound("route")).into_response()
}

/// The response to a panic in a handler: logged, and a `500 internal_error` without detail.
pub fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("non-string panic payload");
    ApiError::from(Error::internal(format!("handler panicked: {detail}"))).into_response()
}
