//! `GET /health`.

use axum::extract::State;
use axum::response::Response;
use http::StatusCode;
use utoipa_axum::routes;
use xf_core::api::Health;
use xf_core::Xf;

use super::{Envelope, Routes};
use crate::envelope;

/// The routes of this module.
pub fn router(routes: Routes) -> Routes {
    routes.routes(routes!(health))
}

/// Service health; no authentication, not rate limited.
#[utoipa::path(get, path = "/health", tag = "health", security(()),
    responses((status = 200, description = "Service health", body = Envelope<Health>)))]
async fn health(State(xf): State<Xf>) -> Response {
    envelope::data(StatusCode::OK, &xf.health().await)
}
