//! Request ids: echoed from `X-Request-Id` when it is 1 to 128 visible ASCII characters,
//! otherwise generated (`req_` + a time-ordered id). The id of the request being served is
//! kept in a task-local, so every response and log line of the request can name it without
//! threading it through each handler.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http::HeaderValue;
use tracing::Instrument;

/// The request and response header.
pub const HEADER: &str = "x-request-id";

tokio::task_local! {
    static REQUEST_ID: String;
}

/// The id of the request being served (a fresh one outside a request).
pub fn current() -> String {
    REQUEST_ID
        .try_with(Clone::clone)
        .unwrap_or_else(|_| xf_core::ids::new_id("req"))
}

fn accepted(value: &HeaderValue) -> Option<String> {
    let bytes = value.as_bytes();
    let visible = |b: &u8| (0x21..=0x7e).contains(b);
    (1..=128)
        .contains(&bytes.len())
        .then_some(())
        .filter(|()| bytes.iter().all(visible))
        .map(|()| String::from_utf8_lossy(bytes).into_owned())
}

/// Middleware: assigns the id, logs the request, and sets the response header.
pub async fn layer(request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get(HEADER)
        .and_then(accepted)
        .unwrap_or_else(|| xf_core::ids::new_id("req"));
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        method = %request.method(),
        path = %request.uri().path(),
    );
    let started = std::time::Instant::now();
    let mut response = REQUEST_ID
        .scope(id.clone(), next.run(request))
        .instrument(span.clone())
        .await;
    span.in_scope(|| {
        tracing::info!(
            status = response.status().as_u16(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "served"
        )
    });
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HEADER, value);
    }
    response
}
