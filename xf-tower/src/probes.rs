//! Probes for orchestrators: [`ProbeService`], `GET /livez` and `GET /readyz`.
//!
//! - `/livez` answers `200 {"status":"alive"}` while the process serves requests at all: a
//!   failing liveness probe means "restart me".
//! - `/readyz` answers `200 {"status":"ready","checks":{…}}` when the store answers within two
//!   seconds, its schema is current (every migration applied) and the background runtime this
//!   process started, if any, runs; otherwise `503 {"status":"not_ready","checks":{…}}`, so
//!   that the orchestrator sends no traffic here until it passes again. The checks are those
//!   of [`xf_core::api::Readiness`].
//!
//! Neither is logged per request (an orchestrator asks every few seconds) nor needs a key.
//! [`crate::Mounts`] serves both; a process that only runs workers serves a `ProbeService`
//! on a port of its own (`xf-server --role workers --health-listen …`).

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use http::{header, HeaderValue, StatusCode};
use serde_json::json;
use xf_core::Xf;

/// The liveness probe's path.
pub const LIVENESS_PATH: &str = "/livez";
/// The readiness probe's path.
pub const READINESS_PATH: &str = "/readyz";

/// `GET /livez` and `GET /readyz` (and `HEAD`) over one [`Xf`]; `404` elsewhere.
#[derive(Debug, Clone)]
pub struct ProbeService {
    router: Router,
}

impl ProbeService {
    /// The probes of `xf`.
    pub fn new(xf: Xf) -> Self {
        let router = Router::new()
            .route(LIVENESS_PATH, get(live))
            .route(READINESS_PATH, get(ready))
            .with_state(xf);
        Self { router }
    }

    /// The axum `Router` inside.
    pub fn into_router(self) -> Router {
        self.router
    }

    /// Whether `path` is one of the probes' paths.
    pub fn serves(path: &str) -> bool {
        path == LIVENESS_PATH || path == READINESS_PATH
    }
}

crate::router_service!(ProbeService);

async fn live() -> Response {
    uncached(StatusCode::OK, json!({"status": "alive"}))
}

async fn ready(State(xf): State<Xf>) -> Response {
    let readiness = xf.readiness().await;
    let (status, word) = if readiness.is_ready() {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not_ready")
    };
    uncached(status, json!({"status": word, "checks": readiness}))
}

fn uncached(status: StatusCode, body: serde_json::Value) -> Response {
    let mut response = (status, Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
