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

use axum::extract::{MatchedPath, OriginalUri, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::HeaderValue;
use tracing::Instrument;

/// The request and response header.
pub const HEADER: &str = "x-request-id";

tokio::task_local! {
    static REQUEST_ID: String;
}

/// Which service answered, for the request log.
#[derive(Debug, Clone, Copy)]
pub enum Service {
    /// The developer API.
    Api,
    /// The host's admin API.
    Admin,
    /// The public report pages.
    Report,
    /// The signed media URLs platforms pull from.
    MediaFile,
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
            Service::None => "none",
        }
    }
}

/// The route template a request matched, with the mount prefix, handed from the routing
/// layer (which knows it) to the log (which runs outside the router).
#[derive(Debug, Clone)]
struct RouteTemplate(String);

/// The id of the request being served (a fresh one outside a request).
pub fn current() -> String {
    REQUEST_ID
        .try_with(Clone::clone)
        .unwrap_or_else(|_| xf_core::ids::new_id("req"))
}

fn accepted(value: &HeaderValue) -> Option<String> {
    let bytes = value.as_bytes();
    let visible = |b: &u8| (0x21..=0x7e).contains(b);
    ((1..=128).contains(&bytes.len()) && bytes.iter().all(visible))
        .then(|| String::from_utf8_lossy(bytes).into_owned())
}

/// The path the client sent: before any mount prefix was stripped.
fn sent_path(request: &Request) -> &str {
    request
        .extensions()
        .get::<OriginalUri>()
        .map_or(request.uri().path(), |original| original.0.path())
}

/// Route layer: records the matched route template, with the mount prefix, for the log.
pub async fn record_route(request: Request, next: Next) -> Response {
    let template = request.extensions().get::<MatchedPath>().map(|matched| {
        let matched = matched.as_str();
        // The prefix a host mounted us under: what the sent path has before ours.
        let mount = sent_path(&request)
            .strip_suffix(request.uri().path())
            .unwrap_or("");
        if matched.starts_with(mount) {
            matched.to_owned()
        } else {
            format!("{mount}{matched}")
        }
    });
    let mut response = next.run(request).await;
    if let Some(template) = template {
        response.extensions_mut().insert(RouteTemplate(template));
    }
    response
}

/// Middleware: assigns the id, sets the response header, and writes the request's log line.
pub async fn layer(State(service): State<Service>, request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get(HEADER)
        .and_then(accepted)
        .unwrap_or_else(|| xf_core::ids::new_id("req"));
    let method = request.method().clone();
    let path = sent_path(&request).to_owned();
    let span = tracing::info_span!("request", request_id = %id, service = service.as_str());
    let started = std::time::Instant::now();
    let mut response = REQUEST_ID
        .scope(id.clone(), next.run(request))
        .instrument(span.clone())
        .await;
    let route = response
        .extensions()
        .get::<RouteTemplate>()
        .map_or("-", |template| template.0.as_str());
    // The line carries every field itself, so it reads alone in any log format; the span
    // gives the request id to whatever else the request logs.
    tracing::info!(
        request_id = %id,
        service = %service.as_str(),
        %method,
        %path,
        %route,
        status = response.status().as_u16(),
        // Whole microseconds, in milliseconds: `0.264`, not float noise.
        latency_ms = started.elapsed().as_micros() as f64 / 1000.0,
        "request"
    );
    // `accepted` and `new_id` only yield visible ASCII, which is always a valid header value.
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HEADER, value);
    }
    response
}
