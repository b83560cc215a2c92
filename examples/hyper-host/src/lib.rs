//! Run with: cargo run -p hyper-host
//!
//! A hyper 1 server without a framework. Its one service routes by path: `GET /` is the
//! host's own, and every other request goes to `xf_tower::Mounts`, all of xf as one tower
//! service (the API under `/api/v1`, the report pages under `/r`, the signed media files under
//! `/m`, the admin API under `/admin` when asked for, the probes `/livez` and `/readyz`, the
//! media API's unprefixed paths, and xf's JSON 404 for the rest). xf's background runtime runs
//! beside the server. `TowerToHyperService` turns the service into the one hyper's connection
//! builder wants. No axum in sight: `xf_tower::Body` is the response body.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use http::{Method, Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tower::ServiceExt;
use xf_core::runtime::WorkerOptions;
use xf_tower::{Body, Mounts};

/// Accepts connections on `listener`, serving each (HTTP/1 or HTTP/2) on a task of its own,
/// with xf's background runtime (scans, publishing, webhook deliveries, purges) running
/// beside it, until `shutdown` completes; then it stops accepting, waits up to 30 s for the
/// connections in flight to finish their requests, and gives the runtime 30 s to finish its
/// running jobs (the rest go back to the queue).
pub async fn serve(listener: TcpListener, xf: Mounts, shutdown: impl Future<Output = ()>) {
    let workers = xf.xf().spawn_workers(WorkerOptions::new());
    let service = tower::service_fn(move |request| route(xf.clone(), request));
    let builder = auto::Builder::new(TokioExecutor::new());
    let connections = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(error) => {
                // Out of file descriptors and the like: back off instead of spinning.
                eprintln!("hyper host: accept failed: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let service = TowerToHyperService::new(service.clone());
        let connection = builder
            .serve_connection(TokioIo::new(stream), service)
            .into_owned();
        let connection = connections.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                eprintln!("hyper host: connection error: {error}");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(Duration::from_secs(30), connections.shutdown())
        .await
        .is_err()
    {
        eprintln!("hyper host: connections still open after 30 s; closing them");
    }
    workers.shutdown(Duration::from_secs(30)).await;
}

/// The host's routing: `GET /` for itself, everything else to xf.
async fn route(xf: Mounts, request: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    if request.uri().path() == "/" && request.method() == Method::GET {
        return Ok(Response::new(Body::from("hello from the host")));
    }
    xf.oneshot(request).await
}
