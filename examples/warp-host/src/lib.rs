//! Run with: cargo run -p warp-host
//!
//! A warp application. warp routes with filters, not tower services, so the xf API gets a
//! filter of its own: it matches `/api/v1` and below, rebuilds an `http::Request` from the
//! pieces warp extracts (method, the full path and query, the headers, the body), and calls
//! `xf_tower::StripPrefix` over `XfService` with `oneshot`, which takes the prefix off (the
//! request log keeps the path as sent); the response goes back to warp. No axum in sight:
//! `xf_tower::Body` is the body type on both sides.
//!
//! The request body is passed on as a stream rather than collected first, so xf's own size
//! limit (413 over 1 MiB) applies before anything large is buffered.

use bytes::{Buf, Bytes};
use futures::{Stream, TryStreamExt};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use tokio::net::TcpListener;
use tower::ServiceExt;
use warp::filters::path::FullPath;
use warp::{Filter, Rejection, Reply};
use xf_core::Xf;
use xf_tower::{Body, StripPrefix, XfService};

/// The host's routes: its own `GET /` and the xf API under `/api/v1`.
pub fn routes(xf: Xf) -> impl Filter<Extract = (impl Reply,), Error = Rejection> + Clone {
    let home = warp::path::end()
        .and(warp::get())
        .map(|| "hello from the host");
    home.or(xf_api(XfService::new(xf)))
}

/// Where the xf API is mounted.
pub const API_PREFIX: &str = "/api/v1";

/// The filter that mounts `api` under [`API_PREFIX`].
pub fn xf_api(api: XfService) -> impl Filter<Extract = (impl Reply,), Error = Rejection> + Clone {
    let api = StripPrefix::new(API_PREFIX, api);
    // `query::raw` rejects a request without a query string; this one yields "" instead.
    let query = warp::query::raw().or(warp::any().map(String::new)).unify();
    warp::path!("api" / "v1" / ..)
        .and(warp::path::full())
        .and(query)
        .and(warp::method())
        .and(warp::header::headers_cloned())
        .and(warp::body::stream())
        .then(move |path: FullPath, query: String, method: Method, headers: HeaderMap, body| {
            let api = api.clone();
            async move { call(api, method, path.as_str(), &query, headers, streamed(body)).await }
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

/// Serves [`routes`] on `listener` until the task is dropped or aborted.
pub async fn serve(listener: TcpListener, xf: Xf) {
    warp::serve(routes(xf)).incoming(listener).run().await;
}

/// Calls xf with the request rebuilt at `{path}?{query}`, and collects its (small, JSON)
/// response: warp 0.4 builds reply bodies from bytes, not from another body type.
async fn call(
    api: StripPrefix<XfService>,
    method: Method,
    path: &str,
    query: &str,
    headers: HeaderMap,
    body: Body,
) -> Response<Bytes> {
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
    let response = match api.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let (parts, body) = response.into_parts();
    match body.collect().await {
        Ok(collected) => Response::from_parts(parts, collected.to_bytes()),
        Err(_) => status_only(StatusCode::INTERNAL_SERVER_ERROR),
    }
}

fn status_only(status: StatusCode) -> Response<Bytes> {
    let mut response = Response::new(Bytes::new());
    *response.status_mut() = status;
    response
}
