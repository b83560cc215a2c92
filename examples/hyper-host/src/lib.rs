//! Run with: cargo run -p hyper-host
//!
//! A hyper 1 server without a framework. Its one service routes by path: `/api/v1` and below
//! go to xf with the prefix stripped (what axum's `nest_service` does for the axum host), the
//! rest is the host's own. `TowerToHyperService` turns that tower service into the service
//! hyper's connection builder wants.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use http::uri::PathAndQuery;
use http::{Method, Request, Response, StatusCode, Uri};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tower::ServiceExt;
use xf_core::Xf;
use xf_tower::XfService;

/// Where the xf API is mounted.
pub const API_PREFIX: &str = "/api/v1";

/// Accepts connections on `listener` until the task is dropped or aborted, serving each (HTTP/1
/// or HTTP/2) on a task of its own.
pub async fn serve(listener: TcpListener, xf: Xf) {
    let api = XfService::new(xf);
    let service = tower::service_fn(move |request| route(api.clone(), request));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _peer)) => stream,
            Err(error) => {
                // Out of file descriptors and the like: back off instead of spinning.
                eprintln!("hyper host: accept failed: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let service = TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let connection = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(error) = connection {
                eprintln!("hyper host: connection error: {error}");
            }
        });
    }
}

/// The host's routing: xf below [`API_PREFIX`], `GET /` for itself, 404 otherwise.
async fn route(
    api: XfService,
    mut request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    if strip_prefix(&mut request, API_PREFIX) {
        return api.oneshot(request).await;
    }
    if request.uri().path() == "/" && request.method() == Method::GET {
        return Ok(Response::new(Body::from("hello from the host")));
    }
    let mut response = Response::new(Body::from("not found"));
    *response.status_mut() = StatusCode::NOT_FOUND;
    Ok(response)
}

/// When the path is `prefix` (which becomes `/`) or lies below it, takes `prefix` off the
/// path, keeps the query string, and returns true. Otherwise leaves the request untouched
/// and returns false.
pub fn strip_prefix<B>(request: &mut Request<B>, prefix: &str) -> bool {
    let rest = match request.uri().path().strip_prefix(prefix) {
        Some("") => "/",
        Some(rest) if rest.starts_with('/') => rest,
        _ => return false,
    };
    let path_and_query = match request.uri().query() {
        Some(query) => format!("{rest}?{query}"),
        None => rest.to_owned(),
    };
    let mut parts = request.uri().clone().into_parts();
    parts.path_and_query = PathAndQuery::try_from(path_and_query).ok();
    match Uri::from_parts(parts) {
        Ok(uri) if uri.path_and_query().is_some() => {
            *request.uri_mut() = uri;
            true
        }
        _ => false,
    }
}
