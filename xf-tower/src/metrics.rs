//! `GET /metrics`: every metric family of xf in the Prometheus text format
//! ([`MetricsService`]).
//!
//! The answer reads the store's gauges first (at most once every
//! [`STORE_READ_INTERVAL`](xf_core::metrics::STORE_READ_INTERVAL), however many scrapers ask),
//! then renders [`Xf::metrics`]. Like the probes it needs no key and is not logged per
//! request: serve it where only the scraper reaches it (xf-server's `--metrics-listen`), or
//! mount it with [`Mounts::metrics`](crate::Mounts::metrics) behind the host's own rules.
//!
//! A host with a Prometheus registry of its own registers xf's families into it instead
//! ([`xf_core::metrics::Metrics::register`]) and calls [`Xf::refresh_metrics`] before it
//! encodes its registry.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::{header, HeaderValue};
use xf_core::Xf;

/// The path [`MetricsService`] answers on.
pub const METRICS_PATH: &str = "/metrics";

/// `GET /metrics` (and `HEAD`) over one [`Xf`]; `404` elsewhere.
#[derive(Debug, Clone)]
pub struct MetricsService {
    router: Router,
}

impl MetricsService {
    /// The metrics of `xf`.
    pub fn new(xf: Xf) -> Self {
        let router = Router::new()
            .route(METRICS_PATH, get(metrics))
            .with_state(xf);
        Self { router }
    }

    /// The axum `Router` inside.
    pub fn into_router(self) -> Router {
        self.router
    }
}

crate::router_service!(MetricsService);

async fn metrics(State(xf): State<Xf>) -> Response {
    let text = xf.metrics_text().await;
    let mut response = text.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(xf_core::metrics::CONTENT_TYPE),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
