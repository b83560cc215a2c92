//! Run with: cargo run -p axum-host
//!
//! An axum application that mounts the xf developer API under `/api/v1`, next to a route of
//! its own. `XfService` is a tower service, so `nest_service` is all it takes: axum strips the
//! prefix, and every path below it (including unknown ones, which get xf's JSON 404) is xf's.

use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use xf_core::Xf;
use xf_tower::XfService;

/// The host's router: its own `GET /` and the xf API under `/api/v1`.
pub fn app(xf: Xf) -> Router {
    Router::new()
        .route("/", get(home))
        .nest_service("/api/v1", XfService::new(xf))
}

/// Serves [`app`] on `listener` until the task is dropped or aborted.
pub async fn serve(listener: TcpListener, xf: Xf) -> std::io::Result<()> {
    axum::serve(listener, app(xf)).await
}

async fn home() -> &'static str {
    "hello from the host"
}
