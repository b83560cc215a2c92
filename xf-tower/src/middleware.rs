//! Authentication, plan check and rate limiting of the developer API, in front of every
//! authenticated route; and the envelope for axum's bare 405 responses.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::LazyLock;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::{HeaderName, HeaderValue, Method};
use tower::ServiceExt;
use xf_core::api::{READ_REMAINING_HEADER, WRITE_REMAINING_HEADER};
use xf_core::plans::Entitlement;
use xf_core::{Caller, Error, RateCheck, RequestKind, Xf};

use crate::error::ApiError;
use crate::extract::bearer;

/// Authenticates the key, checks the `developerApi` entitlement, counts the request against
/// the rate limits and puts the [`xf_core::Caller`] into the request for the handler. Every
/// response after the plan check carries the remaining-request headers, a 429 included.
pub fn developer_api(xf: Xf) -> GuardLayer {
    GuardLayer {
        xf,
        guard: Guard {
            key: bearer,
            entitlement: Entitlement::DeveloperApi,
            render: |error| ApiError(error).into_response(),
        },
    }
}

/// [`developer_api`] for `/webhooks`: the plan needs either API (a media-only organization
/// receives media events), and the key may also come in the media API's `X-API-Key`.
pub fn webhooks_api(xf: Xf) -> GuardLayer {
    GuardLayer {
        xf,
        guard: Guard {
            key: crate::extract::api_key,
            entitlement: Entitlement::EitherApi,
            render: |error| ApiError(error).into_response(),
        },
    }
}

/// [`guard`] as a route layer: a hand-written service, so a request boxes one future for it
/// and nothing else.
#[derive(Clone, Debug)]
pub struct GuardLayer {
    xf: Xf,
    guard: Guard,
}

impl<S> tower::Layer<S> for GuardLayer {
    type Service = Guarded<S>;

    fn layer(&self, inner: S) -> Guarded<S> {
        Guarded {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service of [`GuardLayer`].
#[derive(Clone, Debug)]
pub struct Guarded<S> {
    inner: S,
    layer: GuardLayer,
}

impl<S> tower::Service<Request> for Guarded<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let GuardLayer { xf, guard: checks } = self.layer.clone();
        // What the key cache answers is used here: a refused key is answered at once, without
        // a future of its own; a known key goes straight to the count.
        let key = match checks.key_of(request.headers()) {
            Ok(key) => key,
            Err(error) => return Box::pin(std::future::ready(Ok((checks.render)(error)))),
        };
        let cached = match xf.authenticate_cached(key, checks.entitlement) {
            Some(Err(error)) => return Box::pin(std::future::ready(Ok((checks.render)(error)))),
            Some(Ok(caller)) => Some(caller),
            None => None,
        };
        // The stack below is ready (`poll_ready`): it is the one to call, and a clone stays.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let run = |request| async move {
                match inner.oneshot(request).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                }
            };
            Ok(match cached {
                Some(caller) => counted(&xf, caller, request, run, checks).await,
                None => guard(&xf, request, run, checks).await,
            })
        })
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

impl Guard {
    /// The request's key, if it has one. A developer API request without a key of its own but
    /// with the media API's `X-API-Key` is told where this API reads the key, rather than
    /// that the key is invalid.
    fn key_of<'h>(&self, headers: &'h http::HeaderMap) -> Result<Option<&'h str>, Error> {
        let key = (self.key)(headers);
        let misplaced = self.entitlement == Entitlement::DeveloperApi
            && key.is_none()
            && headers.contains_key("x-api-key");
        if misplaced {
            return Err(Error::ApiKeyInWrongHeader);
        }
        Ok(key)
    }
}

/// The work of [`developer_api`] (and of the media API's middleware): authenticate, check the
/// plan, count the request, run it, add the remaining-request headers.
pub async fn guard<F>(
    xf: &Xf,
    request: Request,
    run: impl FnOnce(Request) -> F,
    guard: Guard,
) -> Response
where
    F: Future<Output = Response>,
{
    let key = match guard.key_of(request.headers()) {
        Ok(key) => key,
        Err(error) => return (guard.render)(error),
    };
    let caller = match xf.authenticate(key, guard.entitlement).await {
        Ok(caller) => caller,
        Err(error) => return (guard.render)(error),
    };
    counted(xf, caller, request, run, guard).await
}

/// The rest of [`guard`] once `caller` is known: count the request, run it, add the
/// remaining-request headers.
async fn counted<F>(
    xf: &Xf,
    caller: Caller,
    mut request: Request,
    run: impl FnOnce(Request) -> F,
    guard: Guard,
) -> Response
where
    F: Future<Output = Response>,
{
    // The count comes first, for reads as for writes: a request over its limit is refused
    // before its handler runs, so a flood of them reaches no store but the counters'.
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

fn kind_of(method: &Method) -> RequestKind {
    match *method {
        Method::GET | Method::HEAD => RequestKind::Read,
        _ => RequestKind::Write,
    }
}

/// `response` with the remaining-request headers of `check`.
fn with_remaining(mut response: Response, check: &RateCheck) -> Response {
    // The names are parsed once, not on every response.
    static READ_REMAINING: LazyLock<HeaderName> =
        LazyLock::new(|| header_name(READ_REMAINING_HEADER));
    static WRITE_REMAINING: LazyLock<HeaderName> =
        LazyLock::new(|| header_name(WRITE_REMAINING_HEADER));
    let headers = response.headers_mut();
    headers.insert(READ_REMAINING.clone(), count(check.read_remaining));
    headers.insert(WRITE_REMAINING.clone(), count(check.write_remaining));
    response
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
