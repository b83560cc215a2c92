//! Request ids and the request log.
//!
//! A request id is echoed from `X-Request-Id` when it is 1 to 128 visible ASCII characters,
//! and generated otherwise (`req_` + a time-ordered id): a malformed id is replaced, never a
//! reason to refuse the request. The id of the request being served is kept in a task-local,
//! so every response and log line of the request can name it without threading it through
//! each handler.
//!
//! Each request is logged once, when its response is ready, with the service that answered
//! (`api`, `admin`, or `none` for paths outside both), the method, the path as the client
//! sent it (mount prefix included), the route template it matched, the status and the
//! latency.
//!
//! Whatever else a request logs runs inside a `request` span carrying `request_id` and
//! `service`; [`current_request`] gives the same two values to a log layer that leaves the
//! span out.

use std::any::Any;
use std::cell::Cell;
use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::LazyLock;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::{MatchedPath, OriginalUri, Request};
use axum::response::Response;
use http::{HeaderName, HeaderValue};
use tokio::task::futures::TaskLocalFuture;
use tracing::instrument::Instrumented;
use tracing::Instrument;
use xf_core::api::{READ_REMAINING_HEADER, WRITE_REMAINING_HEADER};
use xf_core::RateCheck;

/// The request and response header.
pub const HEADER: &str = "x-request-id";
const HEADER_NAME: http::HeaderName = http::HeaderName::from_static(HEADER);

tokio::task_local! {
    /// The request being served: its id kept as the header value it is answered with (an
    /// echoed id is the request's own bytes, a generated one is moved into it, and neither is
    /// copied again for the response), and the service answering it.
    static REQUEST: Current;
}

struct Current {
    id: HeaderValue,
    service: Service,
    /// The prefix the answering service's routes carry (see [`Layer::prefix`]).
    prefix: &'static str,
    /// The rate check of the request's key, once the extractor that authenticates it has
    /// made it: the answer then carries the remaining-request headers.
    rate: Cell<Option<RateCheck>>,
}

/// Keeps `check` for the answer of the request being served, which then carries its
/// remaining-request headers (a `429` and a handler's error included). Outside a request (no
/// layer of this crate around it) there is no answer of ours to carry them.
pub(crate) fn answer_with_rate(check: RateCheck) {
    let _ = REQUEST.try_with(|current| current.rate.set(Some(check)));
}

/// `path` without the prefix the answering service's routes carry ([`Layer::prefix`]): the
/// path as the service documents it, the same however a host mounted the service, for what
/// must not depend on that (an idempotent write's fingerprint). Outside a request, `path`.
pub(crate) fn service_path(path: &str) -> &str {
    let prefix = REQUEST.try_with(|current| current.prefix).unwrap_or("");
    below(path, prefix).unwrap_or(path)
}

/// The rest of `path` when it is `prefix` (`/`) or lies below it: how a mount prefix is
/// taken off (here rather than in `mount`, which imports this module).
pub(crate) fn below<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    match path.strip_prefix(prefix) {
        Some("") => Some("/"),
        Some(rest) if rest.starts_with('/') => Some(rest),
        _ => None,
    }
}

/// Which service answered, for the request log.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Service {
    /// The developer API.
    Api,
    /// The host's admin API.
    Admin,
    /// The public report pages.
    Report,
    /// The signed media URLs platforms pull from.
    MediaFile,
    /// The connect links and the OAuth callback.
    Connect,
    /// Neither: the 404 of paths outside the mounted services.
    None,
}

impl Service {
    fn as_str(self) -> &'static str {
        match self {
            Service::Api => "api",
            Service::Admin => "admin",
            Service::Report => "report",
            Service::MediaFile => "media-file",
            Service::Connect => "connect",
            Service::None => "none",
        }
    }
}

/// Calls `f` with the id of the request being served (a fresh one outside a request).
pub fn with_current<R>(f: impl FnOnce(&str) -> R) -> R {
    match REQUEST.try_with(|_| ()) {
        Ok(()) => REQUEST.with(|current| f(current.id_str())),
        Err(_) => f(&xf_core::ids::new_unordered_id("req")),
    }
}

/// Calls `f` with the id of the request this task is serving and the name of the service
/// answering it (`api`, `admin`, …): the two fields of the `request` span, for a log layer
/// that renders them without it. `None` outside a request.
///
/// Whatever a request logs runs inside a `request` span with `request_id` and `service`. A
/// log layer that would rather not pay for a span a request (the span is the costliest part
/// of logging one) can filter it out with [`is_request_span`] and read the same two values
/// here; xf-server's does.
pub fn current_request<R>(f: impl FnOnce(&str, &'static str) -> R) -> Option<R> {
    REQUEST
        .try_with(|current| f(current.id_str(), current.service.as_str()))
        .ok()
}

/// Whether `metadata` is that of the `request` span, for a filter that leaves it out.
pub fn is_request_span(metadata: &tracing::Metadata<'_>) -> bool {
    metadata.is_span() && metadata.name() == "request" && metadata.target() == module_path!()
}

impl Current {
    fn id_str(&self) -> &str {
        id_str(&self.id)
    }
}

/// An id as text: ids are visible ASCII (`accepted`, `generated`), so `to_str` always
/// succeeds.
fn id_str(id: &HeaderValue) -> &str {
    id.to_str().unwrap_or_default()
}

fn accepted(value: &HeaderValue) -> Option<HeaderValue> {
    let bytes = value.as_bytes();
    let visible = |b: &u8| (0x21..=0x7e).contains(b);
    ((1..=128).contains(&bytes.len()) && bytes.iter().all(visible)).then(|| value.clone())
}

/// A fresh id, moved into the header value without a copy; `new_unordered_id` yields
/// visible ASCII only, so the fallback is never taken.
fn generated() -> HeaderValue {
    HeaderValue::try_from(xf_core::ids::new_unordered_id("req"))
        .unwrap_or_else(|_| HeaderValue::from_static("req_"))
}

/// The URI the client sent: before any mount prefix was stripped. A clone shares the
/// request's bytes.
fn sent_uri(request: &Request) -> http::Uri {
    request
        .extensions()
        .get::<OriginalUri>()
        .map_or(request.uri(), |original| &original.0)
        .clone()
}

/// The layer around every route of this crate's services: request ids, the request log, the
/// remaining-request headers of an authenticated request (see [`answer_with_rate`]), and (as
/// each service needs) the answer to a panic.
///
/// One hand-written service rather than a stack of `from_fn` layers: each of those boxes the
/// rest of the stack and its own future again on every request. Applied with
/// [`Router::layer`](axum::Router::layer) it runs after routing, so the request already
/// carries the route template it matched.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layer {
    /// Which service answers, for the log.
    pub service: Service,
    /// The prefix the service's routes carry (`""` for none): left out of the route label of
    /// the metrics (a host's own mount prefix is not, under axum's `nest_service`) and of the
    /// path an idempotent write is fingerprinted with ([`service_path`]).
    pub prefix: &'static str,
    /// The answer to a handler's panic (logged, `500`); `None` leaves panics to a layer
    /// inside.
    pub panic: Option<PanicAnswer>,
    /// Where each request is counted and timed (`xf_http_request_duration_seconds`).
    pub metrics: Option<xf_core::metrics::RequestRecorder>,
    /// The slowest request bodies read (see [`MinRate`](crate::body_rate::MinRate)); `None`
    /// for a service that reads none worth bounding. Here rather than in a layer of its own,
    /// which would box each route and its future once more on every request.
    pub body_limits: Option<xf_core::RequestLimits>,
}

impl<S> tower::Layer<S> for Layer {
    type Service = Common<S>;

    fn layer(&self, inner: S) -> Common<S> {
        Common {
            inner,
            layer: *self,
        }
    }
}

/// The service of [`Layer`].
#[derive(Debug, Clone)]
pub(crate) struct Common<S> {
    inner: S,
    layer: Layer,
}

impl<S> tower::Service<Request> for Common<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Answer<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Answer<S::Future> {
        let Layer {
            service,
            prefix,
            panic,
            metrics,
            body_limits,
        } = self.layer;
        if let Some(limits) = body_limits {
            request = request.map(|body| crate::body_rate::MinRate::wrap(body, limits));
        }
        let id = request
            .headers()
            .get(HEADER_NAME)
            .and_then(accepted)
            .unwrap_or_else(generated);
        let method = request.method().clone();
        let sent = sent_uri(&request);
        // The prefix a host mounted us under: what the sent path has before ours.
        let mount = sent
            .path()
            .strip_suffix(request.uri().path())
            .map_or(0, str::len);
        // Taken rather than copied: nothing inside reads it.
        let matched = request.extensions_mut().remove::<MatchedPath>();
        let span = tracing::info_span!(
            "request",
            request_id = %id_str(&id),
            service = service.as_str()
        );
        let started = Instant::now();
        // The inner service's call runs now (under `Router::layer`, an axum route, which
        // defers its own service's call to the first poll); a panic there is answered like
        // one in the handler's future, on the first poll, inside the request's scope and
        // span, so its envelope and log line name the request.
        let called = {
            let _entered = span.enter();
            std::panic::catch_unwind(AssertUnwindSafe(|| self.inner.call(request)))
        };
        let guarded = match (called, panic) {
            (Ok(future), panic) => Guarded::Running { future, panic },
            // Answered when first polled, inside the request's scope: the answer's envelope
            // and log line name the request.
            (Err(payload), Some(answer)) => Guarded::Panicked {
                panicked: Some((payload, answer)),
            },
            (Err(payload), None) => std::panic::resume_unwind(payload),
        };
        let current = Current {
            id,
            service,
            prefix,
            rate: Cell::new(None),
        };
        Answer {
            scoped: REQUEST.scope(current, guarded.instrument(span)),
            done: Some(Done {
                service,
                prefix,
                metrics,
                method,
                sent,
                mount,
                matched,
                started,
            }),
        }
    }
}

/// A service's answer to a handler's panic.
type PanicAnswer = fn(Box<dyn Any + Send + 'static>) -> Response;

pin_project_lite::pin_project! {
    /// The future of [`Common`]: the handler's, run with the request's task-local record and
    /// inside its span, then finished by [`Done`].
    ///
    /// Written out rather than as `async` blocks, which moved the handler's future and the
    /// answer through a state of their own each, into a box of its own.
    pub(crate) struct Answer<F> {
        #[pin]
        scoped: TaskLocalFuture<Current, Instrumented<Guarded<F>>>,
        done: Option<Done>,
    }
}

impl<F> Future for Answer<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let response = std::task::ready!(this.scoped.as_mut().poll(cx));
        // Both are there when the answer is ready: this is the one poll that gives it (tokio's
        // `TaskLocalFuture` refuses a poll after that).
        match (this.done.take(), this.scoped.take_value()) {
            (Some(done), Some(current)) => Poll::Ready(Ok(done.finish(response, current))),
            _ => Poll::Ready(Ok(response)),
        }
    }
}

pin_project_lite::pin_project! {
    /// The handler's future, whose panic is answered by the service's [`PanicAnswer`] if it
    /// has one; or a panic of the handler's call, to answer when first polled.
    #[project = GuardedProjection]
    pub(crate) enum Guarded<F> {
        Running {
            #[pin]
            future: F,
            panic: Option<PanicAnswer>,
        },
        Panicked {
            panicked: Option<(Box<dyn Any + Send + 'static>, PanicAnswer)>,
        },
    }
}

impl<F> Future for Guarded<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Response;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        let answered = |result: Result<Response, Infallible>| match result {
            Ok(response) => response,
            Err(never) => match never {},
        };
        match self.project() {
            GuardedProjection::Running {
                future,
                panic: None,
            } => future.poll(cx).map(answered),
            GuardedProjection::Running {
                future,
                panic: Some(answer),
            } => match std::panic::catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
                Ok(poll) => poll.map(answered),
                Err(payload) => Poll::Ready(answer(payload)),
            },
            GuardedProjection::Panicked { panicked } => match panicked.take() {
                Some((payload, answer)) => Poll::Ready(answer(payload)),
                // Polled once only: `TaskLocalFuture` drops it when it is ready.
                None => panic!("a request's answer was polled after it was given"),
            },
        }
    }
}

/// What the request layer does once the answer is ready: the remaining-request headers, the
/// metrics, the log line and the request id header.
struct Done {
    service: Service,
    prefix: &'static str,
    metrics: Option<xf_core::metrics::RequestRecorder>,
    method: http::Method,
    /// The URI the client sent, for the path in the log.
    sent: http::Uri,
    /// The length of the mount prefix before the path our routes saw.
    mount: usize,
    matched: Option<MatchedPath>,
    started: Instant,
}

impl Done {
    fn finish(self, mut response: Response, current: Current) -> Response {
        let Current { id, rate, .. } = current;
        if let Some(check) = rate.get() {
            add_remaining(response.headers_mut(), &check);
        }
        let path = self.sent.path();
        let route = RouteTemplate {
            mount: &path[..self.mount],
            matched: self.matched.as_ref().map(MatchedPath::as_str),
        };
        let latency = self.started.elapsed();
        let service = self.service.as_str();
        if let Some(requests) = self.metrics {
            // The template as axum matched it (a nested router's includes its prefix),
            // without the prefix our own routes carry: one label value per route,
            // whatever the path held.
            let template = route.matched.map_or("-", |matched| {
                matched.strip_prefix(self.prefix).unwrap_or(matched)
            });
            let status = response.status().as_u16();
            requests.record(service, template, self.method.as_str(), status, latency);
        }
        // The line carries every field itself, so it reads alone in any log format; the span
        // gives the request id to whatever else the request logs.
        tracing::info!(
            request_id = %id_str(&id),
            service = %service,
            method = %self.method,
            %path,
            %route,
            status = response.status().as_u16(),
            // Whole microseconds, in milliseconds: `0.264`, not float noise.
            latency_ms = latency.as_micros() as f64 / 1000.0,
            "request"
        );
        response.headers_mut().insert(HEADER_NAME, id);
        response
    }
}

/// The route template a request matched, with the mount prefix (`-` when none matched).
struct RouteTemplate<'a> {
    mount: &'a str,
    matched: Option<&'a str>,
}

impl std::fmt::Display for RouteTemplate<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.matched {
            None => f.write_str("-"),
            // A router nested with axum's `nest` already shows the mount prefix.
            Some(matched) if matched.starts_with(self.mount) => f.write_str(matched),
            Some(matched) => write!(f, "{}{matched}", self.mount),
        }
    }
}

/// Adds the remaining-request headers of `check` to `headers`.
fn add_remaining(headers: &mut http::HeaderMap, check: &RateCheck) {
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
