//! Run with: cargo run -p hyper-host
//!
//! A hyper 1 server without a framework. Its one service routes by path:
//! `xf_tower::strip_prefix` takes `/api/v1` off the requests below it (what axum's
//! `nest_service` does for the axum host) and they go to xf; the rest is the host's own.
//! `TowerToHyperService` turns that tower service into the service hyper's connection builder
//! wants. No axum in sight: `xf_tower::Body` is the response body.

use std::convert::Infallible;
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tower::ServiceExt;
use xf_core::Xf;
use xf_tower::{Body, XfService};

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
    if xf_tower::strip_prefix(&mut request, API_PREFIX) {
        return api.oneshot(request).await;
    }
    if request.uri().path() == "/" && request.method() == Method::GET {
        return Ok(Response::new(Body::from("hello from the host")));
    }
    let mut response = Response::new(Body::from("not found"));
    *response.status_mut() = StatusCode::NOT_FOUND;
    Ok(response)
}
