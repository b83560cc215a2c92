//! Run with: cargo run -p warp-host
//!
//! A warp application that mounts all of xf next to a route of its own, and runs xf's
//! background runtime beside it. warp routes with filters, not tower services, so xf gets one
//! filter, [`xf_filter`], tried after the host's own routes: it rebuilds an `http::Request`
//! from the pieces warp extracts (method, the full path and query, the headers, the body),
//! calls `xf_tower::Mounts` (the API under `/api/v1`, the report pages under `/r`, the signed
//! media files under `/m`, the admin API under `/admin` when asked for, the probes `/livez` and
//! `/readyz`, and the media API's unprefixed paths) with `oneshot`, and hands the response
//! back to warp. No axum in sight: `xf_tower::Body` is the body type on both sides.
//!
//! Bodies are streamed both ways, never collected: xf's own size limits (413) apply before
//! anything large is buffered, and a media file goes out as it is read.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::{Buf, Bytes};
use futures::{Stream, TryStreamExt};
use http::{HeaderMap, Method, Request, StatusCode};
use sync_wrapper::SyncStream;
use tokio::net::TcpListener;
use tower::ServiceExt;
use warp::filters::path::FullPath;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};
use xf_core::runtime::WorkerOptions;
use xf_tower::{Body, Mounts};

/// The host's routes: its own `GET /`, and the rest xf's.
pub fn routes(xf: Mounts) -> impl Filter<Extract = (impl Reply,), Error = Rejection> + Clone {
    let home = warp::path::end()
        .and(warp::get())
        .map(|| "hello from the host");
    home.or(xf_filter(xf))
}

/// The filter that hands every request it sees to `xf`.
pub fn xf_filter(xf: Mounts) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    // `query::raw` rejects a request without a query string; this one yields "" instead.
    let query = warp::query::raw().or(warp::any().map(String::new)).unify();
    warp::path::full()
        .and(query)
        .and(warp::method())
        .and(warp::header::headers_cloned())
        .and(warp::body::stream())
        .then(move |path: FullPath, query: String, method: Method, headers: HeaderMap, body| {
            let xf = xf.clone();
            async move { call(xf, method, path.as_str(), &query, headers, streamed(body)).await }
        })
}

/// warp's body stream as a body xf accepts.
fn streamed<S, B>(stream: S) -> Body
where
    S: Stream<Item = Result<B, warp::Error>> + Send + 'static,
    B: Buf,
{
    Body::from_stream(stream.map_ok(|mut chunk| chunk.copy_to_bytes(chunk.remaining())))
}

/// Serves [`routes`] on `listener`, with xf's background runtime (scans, publishing, webhook
/// deliveries, purges) running beside it, until `shutdown` completes; then the server stops
/// accepting, finishes the requests in flight, and the runtime gets 30 s to finish its
/// running jobs (the rest go back to the queue).
pub async fn serve(
    listener: TcpListener,
    xf: Mounts,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let workers = xf.xf().spawn_workers(WorkerOptions::new());
    // Boxed: without it, rustc cannot prove this function's future `Send` (the lifetimes
    // inside warp's server future meet those of the runtime's shutdown; rust-lang/rust#110338).
    let server: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(
        warp::serve(routes(xf))
            .incoming(listener)
            .graceful(shutdown)
            .run(),
    );
    server.await;
    workers.shutdown(Duration::from_secs(30)).await;
}

/// Calls xf with the request rebuilt at `{path}?{query}`, and streams its response back.
async fn call(
    xf: Mounts,
    method: Method,
    path: &str,
    query: &str,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let uri = if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{query}")
    };
    let mut request = Request::new(body);
    *request.method_mut() = method;
    *request.headers_mut() = headers;
    match uri.parse() {
        Ok(uri) => *request.uri_mut() = uri,
        Err(_) => return status_only(StatusCode::BAD_REQUEST),
    }
    let response = match xf.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let (parts, body) = response.into_parts();
    // warp's reply body takes a `Sync` stream; xf's body is `Send` only, and is read by one
    // task at a time, which is what `SyncStream` relies on.
    let mut reply = warp::reply::stream(SyncStream::new(body.into_data_stream())).into_response();
    *reply.status_mut() = parts.status;
    *reply.headers_mut() = parts.headers;
    reply
}

fn status_only(status: StatusCode) -> Response {
    let mut response = Response::new(Bytes::new().into());
    *response.status_mut() = status;
    response
}
