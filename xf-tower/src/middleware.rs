//! Authentication, plan check and rate limiting: [`admit`], which the developer API's
//! [`Authed`](crate::extract::Authed) extractors run before anything else a handler reads, and
//! [`guard`], the media API's middleware; and the envelope for axum's bare 405 responses.

use std::future::Future;
use std::sync::LazyLock;

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::{HeaderName, HeaderValue, Method};
use xf_core::api::{READ_REMAINING_HEADER, WRITE_REMAINING_HEADER};
use xf_core::plans::Entitlement;
use xf_core::{Caller, Error, RateCheck, RequestKind, Xf};

use crate::error::ApiError;

/// Authenticates the request's key (found by `key`; its plan must include `entitlement`),
/// and counts the request against the rate limits before its handler runs: the
/// caller, or the error to answer (a `429` past a limit). The count is kept for the answer,
/// whatever it is, to carry the remaining-request headers ([`answer_with_rate`]).
///
/// [`answer_with_rate`]: crate::request_id::answer_with_rate
pub async fn admit(
    xf: &Xf,
    parts: &http::request::Parts,
    key: fn(&http::HeaderMap) -> Option<&str>,
    entitlement: Entitlement,
) -> Result<Caller, Error> {
    let key = key_of(key, entitlement, &parts.headers)?;
    let caller = authenticated(xf, key, entitlement).await?;
    // The count comes first, for reads as for writes: a request over its limit is refused
    // before its handler reads anything, so a flood of them reaches no store but the
    // counters'.
    let check = xf.check_rate_limit(&caller, kind_of(&parts.method)).await?;
    crate::request_id::answer_with_rate(check);
    match check.retry_after_secs {
        Some(retry_after_secs) => Err(Error::RateLimited { retry_after_secs }),
        None => Ok(caller),
    }
}

/// What [`guard`] checks and how it answers: where the key is, which entitlement the plan
/// needs, and the envelope of its errors.
#[derive(Debug, Clone, Copy)]
pub struct Guard {
    /// The key of a request, if it has one.
    pub key: fn(&http::HeaderMap) -> Option<&str>,
    /// What the plan must include.
    pub entitlement: Entitlement,
    /// An error response in the API's envelope.
    pub render: fn(Error) -> Response,
}

/// The request's key, found by `key`, if it has one. A developer API request without a key of
/// its own but with the media API's `X-API-Key` is told where this API reads the key, rather
/// than that the key is invalid.
fn key_of(
    key: fn(&http::HeaderMap) -> Option<&str>,
    entitlement: Entitlement,
    headers: &http::HeaderMap,
) -> Result<Option<&str>, Error> {
    let found = key(headers);
    let misplaced = entitlement == Entitlement::DeveloperApi
        && found.is_none()
        && headers.contains_key("x-api-key");
    if misplaced {
        return Err(Error::ApiKeyInWrongHeader);
    }
    Ok(found)
}

/// The media API's middleware: authenticate, check the plan, count the request, run it, add
/// the remaining-request headers.
pub async fn guard<F>(
    xf: &Xf,
    mut request: Request,
    run: impl FnOnce(Request) -> F,
    guard: Guard,
) -> Response
where
    F: Future<Output = Response>,
{
    let key = match key_of(guard.key, guard.entitlement, request.headers()) {
        Ok(key) => key,
        Err(error) => return (guard.render)(error),
    };
    let caller = match authenticated(xf, key, guard.entitlement).await {
        Ok(caller) => caller,
        Err(error) => return (guard.render)(error),
    };
    // Counted before the handler runs, as `admit` counts.
    let check = match xf
        .check_rate_limit(&caller, kind_of(request.method()))
        .await
    {
        Ok(check) => check,
        Err(error) => return (guard.render)(error),
    };
    let response = match check.retry_after_secs {
        Some(retry_after_secs) => (guard.render)(Error::RateLimited { retry_after_secs }),
        None => {
            request.extensions_mut().insert(caller);
            run(request).await
        }
    };
    with_remaining(response, &check)
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

fn kind_of(method: &Method) -> RequestKind {
    match *method {
        Method::GET | Method::HEAD => RequestKind::Read,
        _ => RequestKind::Write,
    }
}

/// `response` with the remaining-request headers of `check`.
fn with_remaining(mut response: Response, check: &RateCheck) -> Response {
    add_remaining(response.headers_mut(), check);
    response
}

/// Adds the remaining-request headers of `check` to `headers`.
pub(crate) fn add_remaining(headers: &mut http::HeaderMap, check: &RateCheck) {
    // The names are parsed once, not on every response.
    static READ_REMAINING: LazyLock<HeaderName> =
        LazyLock::new(|| header_name(READ_REMAINING_HEADER));
    static WRITE_REMAINING: LazyLock<HeaderName> =
        LazyLock::new(|| header_name(WRITE_REMAINING_HEADER));
    headers.insert(READ_REMAINING.clone(), count(check.read_remaining));
    headers.insert(WRITE_REMAINING.clone(), count(check.write_remaining));
}

/// A count as a header value: digits copied once (`HeaderValue::from(u64)` allocates twice).
fn count(n: u64) -> HeaderValue {
    let digits = itoa::Buffer::new().format(n).as_bytes().to_vec();
    // Digits are always a valid value; the fallback is the same value, made the slower way.
    HeaderValue::try_from(digits).unwrap_or_else(|_| HeaderValue::from(n))
}

fn header_name(name: &'static str) -> HeaderName {
    HeaderName::from_bytes(name.as_bytes()).expect("the API's header names are valid")
}

/// `405` in the developer envelope (axum adds `Allow`).
pub async fn method_not_allowed() -> Response {
    ApiError(Error::MethodNotAllowed).into_response()
}

/// The fallback of unknown paths.
pub async fn not_found() -> Response {
    ApiError(Error::NotFound("route")).into_response()
}

/// The response to a panic in a handler: logged, and a `500 internal_error` without detail.
pub fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("non-string panic payload");
    ApiError(Error::Internal(format!("handler panicked: {detail}"))).into_response()
}
