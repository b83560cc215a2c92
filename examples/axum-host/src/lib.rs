//! Run with: cargo run -p axum-host
//!
//! An axum application that mounts all of xf next to a route of its own, and runs xf's
//! background runtime beside it. `xf_tower::Mounts` is every HTTP surface of xf as one tower
//! service (the API under `/api/v1`, the report pages under `/r`, the signed media files under
//! `/m`, the admin API under `/admin` when asked for, the probes `/livez` and `/readyz`, and
//! the media API's unprefixed paths), so `fallback_service` is all it takes: every path the
//! host does not route is xf's (unknown ones get xf's JSON 404).

use std::future::Future;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use xf_core::runtime::WorkerOptions;
use xf_tower::Mounts;

/// The host's router: its own `GET /`, and the rest xf's.
pub fn app(xf: Mounts) -> Router {
    Router::new().route("/", get(home)).fallback_service(xf)
}

/// Serves [`app`] on `listener`, with xf's background runtime (scans, publishing, webhook
/// deliveries, purges) running beside it, until `shutdown` completes; then the server stops
/// accepting, finishes the requests in flight, and the runtime gets 30 s to finish its
/// running jobs (the rest go back to the queue).
pub async fn serve(
    listener: TcpListener,
    xf: Mounts,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let workers = xf.xf().spawn_workers(WorkerOptions::new());
    // With the client's address, which the admin API throttles wrong tokens by.
    let app = app(xf).into_make_service_with_connect_info::<std::net::SocketAddr>();
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await;
    workers.shutdown(Duration::from_secs(30)).await;
    served
}

async fn home() -> &'static str {
    "hello from the host"
}
